"""psyq analysis: statistics, plots and reports on scored runs (see issue: norm comparison)."""
