"""The shared intervals (psyq.analysis.statistics.intervals): the t quantile against R's ``qt`` and
``qnorm``, the t interval of a mean against R's ``t.test``, the cases without an interval, and the
quantile taken in that one place only."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from psyq.analysis.statistics.intervals import mean_interval, t_quantile

ROOT = Path(__file__).resolve().parents[1]
T_QUANTILE = re.compile(r"\bt\.ppf\(")


@pytest.mark.parametrize(("confidence", "df", "r_value"), [
    (0.95, 10, 2.228139),            # qt(0.975, 10)
    (0.95, 4, 2.776445),             # qt(0.975, 4)
    (0.90, 5, 2.015048),             # qt(0.95, 5)
    (0.99, 30, 2.749996),            # qt(0.995, 30)
    (0.95, math.inf, 1.959964),      # qnorm(0.975)
    (0.90, math.inf, 1.644854),      # qnorm(0.95)
])
def test_t_quantile_is_rs_qt(confidence, df, r_value):
    """R 4.x, printed to 7 significant digits."""
    assert t_quantile(confidence, df) == pytest.approx(r_value, abs=5e-7)


def test_mean_interval_is_rs_t_test():
    # t.test(1:5)$conf.int: 1.036757 4.963243
    assert mean_interval(3.0, math.sqrt(2.5), 5) == pytest.approx((1.036757, 4.963243), abs=5e-7)
    # x = c(2, 4, 4, 5, 7, 8): mean 5, SD √4.8; t.test(x, conf.level = 0.90)$conf.int, by hand from
    # qt(0.95, 5) = 2.015048: 5 ∓ 2.015048 · √4.8 / √6 = 3.197686 6.802314
    assert mean_interval(5.0, math.sqrt(4.8), 6, 0.90) == pytest.approx((3.197686, 6.802314), abs=2e-6)


@pytest.mark.parametrize(("mean", "sd", "n"), [
    (3.0, 1.0, 1), (3.0, 1.0, 0), (3.0, math.nan, 5), (math.nan, 1.0, 5), (3.0, None, 5), (3.0, 1.0, math.inf)])
def test_no_interval_without_two_respondents_and_numbers(mean, sd, n):
    low, high = mean_interval(mean, sd, n)
    assert math.isnan(low) and math.isnan(high)


def test_no_spread_gives_an_interval_of_zero_width():
    assert mean_interval(2.5, 0.0, 4) == (2.5, 2.5)


def t_quantile_copies(root: Path) -> list[str]:
    """The modules of analysis/, engine/ and cli/ under `root` that take a t quantile themselves
    rather than through psyq.analysis.statistics.intervals."""
    found = []
    for folder in ("analysis", "engine", "cli"):
        for path in sorted((root / folder).rglob("*.py")):
            if path.name != "intervals.py" and T_QUANTILE.search(path.read_text(encoding="utf-8")):
                found.append(str(path.relative_to(root)))
    return found


def test_the_t_quantile_is_taken_in_one_place(tmp_path):
    planted = tmp_path / "analysis" / "statistics"
    planted.mkdir(parents=True)
    (planted / "intervals.py").write_text("half = stats.t.ppf(0.975, n - 1)\n")
    (planted / "copy.py").write_text("half = float(stats.t.ppf(0.5 + level / 2, df)) * se\n")
    assert t_quantile_copies(tmp_path) == ["analysis/statistics/copy.py"]
    assert t_quantile_copies(ROOT) == []
