"""Sentences from the statistics' frames: what the report says about a table in plain words.

The statistics (:mod:`psyq.analysis.statistics`) return numbers and categories; this module turns
them into sentences, in the report's one number vocabulary (:mod:`psyq.analysis.report.apa`).
"""

from __future__ import annotations

import pandas as pd

from psyq.analysis.report.apa import fmt_r, p_clause
from psyq.analysis.statistics.invariance import (ACCEPTABLE_CFI, ACCEPTABLE_RMSEA, CHEN_DELTA_CFI, CHEN_DELTA_RMSEA,
                                                  CHEN_DELTA_SRMR)


def invariance_verdicts(frame: pd.DataFrame) -> list[str]:
    """One plain-language sentence per row of :func:`measurement_invariance`.

    The configural row is judged on its own fit (acceptable: CFI ≥ .90 and RMSEA ≤ .10); a later
    row by Chen's (2007) rule: equality is rejected when ΔCFI ≤ −.010 together with ΔRMSEA ≥ .015
    or ΔSRMR ≥ .030 (loadings) / .010 (intercepts), kept when ΔCFI > −.010 and neither of the
    others crosses its cut-off, and called doubtful when the indices disagree.
    """
    n_groups = int(frame["groups"].iloc[0]) if len(frame) else 0
    in_groups = "both groups" if n_groups == 2 else f"all {n_groups} groups"
    what = {"metric": "loadings", "scalar": "intercepts"}
    sentences = []
    for row in frame.itertuples(index=False):
        if not row.estimable:
            reason = row.note.split("; ")[0].removeprefix("not estimable: ")
            sentences.append(f"{row.step}: not estimable: {reason}")
            continue
        fit = f"CFI {fmt_r(row.cfi, 3)}, RMSEA {fmt_r(row.rmsea, 3)}"
        if row.step == "configural":
            if row.cfi >= ACCEPTABLE_CFI and row.rmsea <= ACCEPTABLE_RMSEA:
                sentences.append(f"configural: the same items load on the same factors in {in_groups} ({fit})")
            else:
                sentences.append(f"configural: the factor model fits poorly ({fit}, {in_groups} together), "
                                 "so the later steps have no sound base")
            continue
        if pd.isna(row.delta_cfi):
            sentences.append(f"{row.step}: no comparison with the step before, which is not estimable ({fit})")
            continue
        deltas = (f"ΔCFI {fmt_r(row.delta_cfi, 3)}, ΔRMSEA {fmt_r(row.delta_rmsea, 3)}, "
                  f"ΔSRMR {fmt_r(row.delta_srmr, 3)}; Δχ²({row.delta_df}) = {row.delta_chi2:.2f}, p {p_clause(row.delta_p)}")
        cfi_drop = row.delta_cfi <= CHEN_DELTA_CFI
        other_rise = row.delta_rmsea >= CHEN_DELTA_RMSEA or row.delta_srmr >= CHEN_DELTA_SRMR[row.step]
        if cfi_drop and other_rise:
            tail = ": compare means with care" if row.step == "scalar" else ": compare relations with care"
            sentences.append(f"{row.step}: the {what[row.step]} are not equal in the groups ({deltas}){tail}")
        elif not cfi_drop and not other_rise:
            sentences.append(f"{row.step}: the {what[row.step]} are equal in the groups ({deltas})")
        else:
            sentences.append(f"{row.step}: equality of the {what[row.step]} is doubtful, the fit indices "
                             f"disagree ({deltas})")
    return sentences
