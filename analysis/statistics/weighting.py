"""Survey weights in the report: which side of a comparison with human data is weighted, and what
the report and the methods paragraph say about it.

The weighted statistics themselves are in :mod:`psyq.analysis.statistics.human_comparison` (scores) and
:mod:`psyq.analysis.statistics.validity` (item option shares); human answers carry their weights in the
column :data:`psyq.engine.files.codebook.WEIGHT_COLUMN` (a codebook's ``columns.weight``).

Example:
    >>> humans = pd.DataFrame({"1": [1.0, 2.0], WEIGHT_COLUMN: [1.0, 3.0]}, index=["h1", "h2"])
    >>> twin_weights(pd.DataFrame({"1": [2.0, 2.0]}, index=["h2", "baseline"]), humans).tolist()
    [1.0, 3.0]
    >>> twin_weights(pd.DataFrame({"1": [2.0]}, index=["p00"]), humans) is None
    True
"""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from psyq.engine.files.codebook import WEIGHT_COLUMN

from psyq.analysis.statistics.human_comparison import kish_n_eff

WEIGHTED_CAPTION = ("weighted: means, SDs with the reliability-weights correction, Welch t and Hedges g with Kish's "
                    "n_eff, variance ratio, Wasserstein distance; Mann–Whitney, KS and Brown–Forsythe not computed; "
                    "α and φ unweighted")


def twin_weights(cohort: pd.DataFrame, humans: pd.DataFrame) -> pd.Series | None:
    """The weights of the cohort side: the humans' survey weights when every persona of the cohort
    (the baseline aside) is a respondent of the weighted human file, i.e. the cohort is made of their
    twins (persona id = respondent id); else None. A cohort drawn from the file in proportion to its
    weights is self-weighting: its persona ids must not be the respondents' ids, or it would be
    weighted twice."""
    if WEIGHT_COLUMN not in humans.columns:
        return None
    ids = {str(r) for r in cohort.index} - {"baseline"}
    weights = humans[WEIGHT_COLUMN]
    return weights if ids and ids <= {str(r) for r in weights.index} else None


def weight_name(humans: pd.DataFrame) -> str:
    return f"'{humans.attrs.get('weight') or WEIGHT_COLUMN}'"


def n_eff_text(humans: pd.DataFrame, weights_c: pd.Series | None, cohort: pd.DataFrame | None) -> str:
    text = f"Kish n_eff = {kish_n_eff(humans[WEIGHT_COLUMN]):,.1f} of {len(humans):,} people"
    if weights_c is not None and cohort is not None:
        used = weights_c.reindex([r for r in cohort.index if r in weights_c.index])
        text += f"; cohort Kish n_eff = {kish_n_eff(used):,.1f} of {len(used):,} personas"
    return text


def weighting_text(inst_id: str, humans: pd.DataFrame, weights_c: pd.Series | None,
                   cohort: pd.DataFrame | None) -> str:
    """What the human-data section says about weighting one instrument ("" when unweighted)."""
    if WEIGHT_COLUMN not in humans.columns:
        return ""
    twins = ("; the cohort's personas are twins of these people (their ids are the file's respondent ids), so "
             "the cohort side is weighted by the same weights" if weights_c is not None else
             "; the cohort side is unweighted (its personas are not respondents of this file; a cohort drawn from "
             "it in proportion to the weights needs none)")
    baseline = " The baseline respondent has no weight and is left out of the weighted comparison." if (
        weights_c is not None and cohort is not None and "baseline" in set(map(str, cohort.index))) else ""
    sides = "both sides" if weights_c is not None else "the human side"
    return (f"{inst_id}: the comparison is weighted by {weight_name(humans)} on {sides} "
            f"({n_eff_text(humans, weights_c, cohort)}){twins}. Weighted: means, SDs (reliability-weights "
            "correction), Welch t and Hedges g (with Kish's effective sample size n_eff = (Σw)²/Σw² in place of n), "
            "the variance ratio and the Wasserstein distance. Mann–Whitney, Kolmogorov–Smirnov and Brown–Forsythe "
            "have no simple weighted form and are not computed; α and φ are of the unweighted answers; the human "
            f"data's norm comparison is unweighted.{baseline}")


def shares_text(inst_id: str, humans: pd.DataFrame, weights_c: pd.Series | None, cohort: pd.DataFrame) -> str:
    """What the construct-validity section says about weighted item option shares ("" when unweighted)."""
    if WEIGHT_COLUMN not in humans.columns:
        return ""
    sides = "both sides" if weights_c is not None else "the human side"
    return (f"{inst_id}: answer shares weighted by {weight_name(humans)} on {sides} "
            f"({n_eff_text(humans, weights_c, cohort)}), so TV, the SimBench score and the Wasserstein distance are "
            "those of the weighted distributions; n counts answers. Subscale intercorrelations and factor congruence "
            "are unweighted.")


def weighted_by(row: Any, humans: pd.DataFrame) -> str:
    """'weighted by 'wt' (Kish n_eff = …)' for one row of the comparison table."""
    sides = {"human": f"human {row.n_eff_human:,.1f}", "cohort": f"cohort {row.n_eff_cohort:,.1f}",
             "both": f"human {row.n_eff_human:,.1f}, cohort {row.n_eff_cohort:,.1f}"}[row.weighted]
    return f"weighted by {weight_name(humans)} (Kish n_eff = {sides})"


def weighting_methods(human_items: Mapping[str, pd.DataFrame], cohort_weights: Mapping[str, pd.Series | None]) -> str:
    """The methods paragraph's sentence on survey weights (when any human file had them)."""
    weighted = [i for i in human_items if WEIGHT_COLUMN in human_items[i].columns]
    columns = ", ".join(f"{weight_name(human_items[i])} ({i})" for i in weighted)
    twins = [i for i in weighted if cohort_weights.get(i) is not None]
    cohort = (f" The cohort of {', '.join(twins)} consisted of twins of the weighted respondents and was weighted by "
              "their weights." if twins else "")
    return (f"Comparisons with the human data were weighted by the survey weights in column(s) {columns}: weighted "
            "means, variances with the reliability-weights correction, Welch's t and Hedges' g with Kish's (1965) "
            "effective sample size n_eff = (Σw)²/Σw² in place of n, and weighted shares of the answer options (total "
            "variation, SimBench score, Wasserstein distance); Mann–Whitney, Kolmogorov–Smirnov and Brown–Forsythe "
            "tests were not computed for weighted data, and reliability (α), factor congruence (φ), intercorrelations, "
            f"the norm comparison of the human data and the invariance, IRT and DIF analyses are unweighted.{cohort}")
