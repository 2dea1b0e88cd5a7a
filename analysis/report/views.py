"""The views of the report's own tables (APA 7th edition style): each picks the columns a paper
shows of one statistic's wide frame (norm comparison, missing answers by status, reliability,
test–retest ICC, regression, SD ratios, norm group matching, change, invariance, GRM, DIF, the
comparison with people, twins) and formats every number; the verdict's (the scorecard, the conditions
compared head to head) are in :mod:`psyq.analysis.report.verdict_views`. A section names the view of
each table it adds (:data:`VIEWS`); :func:`apa_table` prints a table by that name, or by the plain
view of :mod:`psyq.analysis.report.tables` when it names none. The full table is kept by the report
(behind a collapsible section and as CSV); nothing here computes.

Example
-------
>>> apa_table(pd.DataFrame({"subscale": ["EC"], "p": [0.0004]})).frame.iloc[0].str.replace(NBSP, " ").tolist()
['EC', '< .001']
"""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from psyq.analysis.report.apa import (DASH, MINUS, fmt_ci, fmt_int, fmt_num, fmt_p, fmt_pct, fmt_r, is_missing,
                                      sentence_case)
from psyq.analysis.report.tables import NBSP, ApaTable, assemble, generic   # NBSP: read by the examples
from psyq.analysis.report.verdict_views import condition_distances, condition_pairs, condition_ranks, scorecard_view


def _truthy(x: Any) -> bool:
    return False if is_missing(x) else bool(x)


def _m_sd(m: Any, sd: Any) -> str:
    return f"{fmt_num(m)} ({fmt_num(sd)})" if not is_missing(m) else DASH


def norm_comparison(comp: pd.DataFrame) -> ApaTable:
    """The norm comparison (:func:`psyq.analysis.statistics.norms.compare_with_norms`): subscale, norm group,
    n, M (SD) of the cohort and of the norm, Welch t(df), adjusted p, Hedges' g [95 % CI] and
    the TOST verdict.

    Not run: needs a norm comparison of a run; tests/test_apa_report.py renders this view.

    Example
    -------
    >>> norm_comparison(comp).frame.columns.tolist()        # doctest: +SKIP
    ['Subscale', 'Norm group', 'n', 'M (SD)', 'Norm M (SD)', 't (df)', 'p (adj.)', 'g [95 % CI]', 'Equivalence']
    """
    def group(r: pd.Series) -> str:
        flag = {"unverified": " (unverified)", "secondary-source": " (secondary source)"}.get(
            str(r.get("norm_verified")), "")
        derived = "\u2020" if _truthy(r.get("norm_derived")) else ""
        return f"{r['norm_sample']}: {r['norm_group']}{derived}{flag}"

    def t_df(r: pd.Series) -> str:
        return DASH if is_missing(r["t"]) else f"{fmt_num(r['t'])} ({fmt_num(r['df'], 1)})"

    def verdict(r: pd.Series) -> str:
        if is_missing(r["equivalent"]):
            return DASH
        return "equivalent" if bool(r["equivalent"]) else f"not shown (p {fmt_p(r['tost_p'])})"

    columns = {"Norm group": group, "n": lambda r: fmt_int(r["n"]),
               "M (SD)": lambda r: _m_sd(r["mean"], r["sd"]),
               "Norm M (SD)": lambda r: _m_sd(r["norm_mean"], r["norm_sd"]),
               "Norm n": lambda r: fmt_int(r["norm_n"]),
               "t (df)": t_df, "p (adj.)": lambda r: fmt_p(r["p_adj"]),
               "g [95 % CI]": lambda r: DASH if is_missing(r["g"]) else f"{fmt_num(r['g'])} {fmt_ci(r['g_low'], r['g_high'])}",
               "Equivalence": verdict}
    notes = ["n = respondents (each respondent's score averaged over repeats). M (SD): cohort; Norm M (SD): "
             "the human norm on the same metric. t: Welch's test with Welch–Satterthwaite df; p adjusted for "
             "multiplicity over all rows; g: Hedges' g, positive = cohort above the norm. Equivalence: TOST "
             f"within the equivalence bound given in the caption. {DASH} = not estimable (fewer than two respondents)."]
    if "norm_derived" in comp.columns and comp["norm_derived"].map(_truthy).any():
        notes.append("\u2020 Whole-sample norm pooled by psyq from the published groups.")
    return assemble(comp, {"Subscale": lambda r: str(r["subscale"])} | columns,
                     {"backend_id": "Backend", "instrument": "Instrument"}, notes)


def answers_by_status(missing: pd.DataFrame) -> ApaTable:
    """Missing answers (:func:`psyq.analysis.statistics.standin.fidelity.missingness`) in long format: one row per backend ×
    instrument × status that occurs, with the number and share of answers.

    Not run: needs a run's answer table with missing answers; tests/test_apa_report.py renders this view.

    Example
    -------
    >>> answers_by_status(missingness(table)).frame.columns.tolist()    # doctest: +SKIP
    ['Status', 'Answers', '%']
    """
    # disclaimer_n counts answered answers with disclaimer language: not a status of its own.
    statuses = [c[:-2] for c in missing.columns if c.endswith("_n") and c not in ("n_answers", "disclaimer_n")]
    rows = []
    for _, r in missing.iterrows():
        for status in statuses:
            if int(r[f"{status}_n"]) > 0:
                rows.append({"backend_id": r["backend_id"], "instrument": r["instrument"],
                             "status": status.replace("_", " "), "n": int(r[f"{status}_n"]),
                             "share": r[f"{status}_rate"], "of": int(r["n_answers"])})
    long = pd.DataFrame(rows, columns=["backend_id", "instrument", "status", "n", "share", "of"])
    never = [s.replace("_", " ") for s in statuses if not long["status"].eq(s.replace("_", " ")).any()]
    notes = ["Answers are item answers (a respondent gives one per item and repeat), not respondents. "
             "Only the statuses that occur are listed."]
    if never:
        notes.append("No answer had the status " + ", ".join(never) + ".")
    if "disclaimer_n" in missing.columns and missing["disclaimer_n"].sum() > 0:
        notes.append("Answered, but with refusal or AI-disclaimer language: " + "; ".join(
            f"{r['backend_id']} {r['instrument']} {fmt_int(r['disclaimer_n'])} ({fmt_pct(r['disclaimer_rate'])} %)"
            for _, r in missing.iterrows()) + ".")
    if "mean_reasks" in missing.columns:
        notes.append("Mean re-asks per answer: " + "; ".join(
            f"{r['backend_id']} {r['instrument']} {fmt_num(r['mean_reasks'])}" for _, r in missing.iterrows()) + ".")
    return assemble(long, {"Status": lambda r: r["status"], "Answers": lambda r: f"{fmt_int(r['n'])} of {fmt_int(r['of'])}",
                            "%": lambda r: fmt_pct(r["share"])},
                     {"backend_id": "Backend", "instrument": "Instrument"}, notes)


NEGATIVE_ALPHA = ("the items covary negatively on average, so the subscale does not hang together and its score "
                  "is not interpretable for this cohort")
"""What a negative Cronbach's α means, said wherever α is shown (α < 0 exactly when the sum of the
inter-item covariances is negative)."""


def alpha_remark(alpha: Any) -> str:
    """The remark a value of α calls for ("" for none).

    Example
    -------
    >>> alpha_remark(-0.2)[:40], alpha_remark(0.7), alpha_remark(float("nan"))
    ('α is negative: the items covary negative', '', '')
    """
    return "" if is_missing(alpha) or float(alpha) >= 0 else f"α is negative: {NEGATIVE_ALPHA}"


def internal_consistency(rel: pd.DataFrame) -> ApaTable:
    """Cronbach's α with its 95 % CI and McDonald's ω per subscale; the remark says why a value is
    not estimable and what a negative α means."""
    notes = ["n = respondents (first repeat); k = items. " + DASH + " = not estimable (see the remark)."]

    def remark(r: pd.Series) -> str:
        parts = [alpha_remark(r["alpha"]), "" if is_missing(r["note"]) else str(r["note"])]
        return "; ".join(p for p in parts if p)
    return assemble(rel, {"Subscale": lambda r: str(r["subscale"]), "n": lambda r: fmt_int(r["n"]),
                           "k": lambda r: fmt_int(r["k"]),
                           "α [95 % CI]": lambda r: DASH if is_missing(r["alpha"]) else
                           f"{fmt_r(r['alpha'])} {fmt_ci(r['alpha_low'], r['alpha_high'], fmt_r)}",
                           "ω": lambda r: fmt_r(r["omega"]), "Remark": remark},
                     {"instrument": "Instrument"}, notes)


def retest_icc(icc: pd.DataFrame) -> ApaTable:
    """Test–retest ICCs: type, ICC [95 % CI], F(df1, df2), p."""
    def f_test(r: pd.Series) -> str:
        return DASH if is_missing(r["f"]) else f"F({fmt_num(r['df1'], 0)}, {fmt_num(r['df2'], 0)}) = {fmt_num(r['f'])}"
    return assemble(icc, {"Type": lambda r: str(r["type"]),
                           "ICC [95 % CI]": lambda r: DASH if is_missing(r["icc"]) else
                           f"{fmt_r(r['icc'])} {fmt_ci(r['ci_low'], r['ci_high'], fmt_r)}",
                           "F test": f_test, "p": lambda r: fmt_p(r["p"]), "n": lambda r: fmt_int(r["n"]),
                           "Repeats": lambda r: fmt_int(r["k"])},
                     {"instrument": "Instrument", "subscale": "Subscale"},
                     ["n = respondents; Repeats = administrations per respondent. " + DASH + " = not estimable."])


def regression(fx: pd.DataFrame) -> ApaTable:
    """Regression coefficients: term, b [95 % CI], SE, p."""
    return assemble(fx, {"Subscale": lambda r: str(r["subscale"]), "Term": lambda r: str(r["term"]),
                          "b [95 % CI]": lambda r: DASH if is_missing(r["estimate"]) else
                          f"{fmt_num(r['estimate'])} {fmt_ci(r['ci_low'], r['ci_high'])}",
                          "SE": lambda r: fmt_num(r["se"]), "p": lambda r: fmt_p(r["p"]),
                          "n": lambda r: fmt_int(r["n"])},
                     {"instrument": "Instrument", "model": "Model"},
                     ["b: difference in subscale points (categorical terms against their reference level). "
                      f"n = respondents. {DASH} = not estimable."])


def sd_ratio(ratios: pd.DataFrame) -> ApaTable:
    """Cohort SD relative to the norm SD with its 95 % CI."""
    return assemble(ratios, {"Subscale": lambda r: str(r["subscale"]),
                              "Norm group": lambda r: f"{r['norm_sample']}: {r['norm_group']}",
                              "n": lambda r: fmt_int(r["n"]), "SD": lambda r: fmt_num(r["sd"]),
                              "Norm SD": lambda r: fmt_num(r["norm_sd"]),
                              "Ratio [95 % CI]": lambda r: (DASH if is_missing(r["sd_ratio"]) else
                                                            f"{fmt_num(r['sd_ratio'])} {fmt_ci(r['ci_low'], r['ci_high'])}"),
                              # no ratio, no verdict: "no" would claim a spread that was not estimated
                              "Collapsed": lambda r: (DASH if is_missing(r["sd_ratio"]) else
                                                      "yes" if _truthy(r["collapsed"]) else "no")},
                     {"backend_id": "Backend", "instrument": "Instrument"},
                     ["n = respondents. Collapsed: the cohort SD is below half the norm SD (CI excludes 0.5)."])


def group_matching(matching: pd.DataFrame) -> ApaTable:
    """Respondents per norm group: sample, group (as the instrument file names it), condition, n."""
    notes = []
    if "matches_on" in matching.columns and len(matching):
        notes.append("Norm groups match on: " + "; ".join(
            f"{s} {on or 'nothing'}" for s, on in dict(zip(matching["norm_sample"], matching["matches_on"])).items())
            + ". Cohort attributes: " + str(matching["cohort_attributes"].iloc[0]) + ".")
    notes.append("n = respondents. Respondents matching no group are compared with the sample's whole-sample "
                 "group (named as in the instrument file) or, when it publishes none, with a norm pooled by psyq "
                 "from its groups (\"pooled\").")
    return assemble(matching, {"Norm sample": lambda r: str(r["norm_sample"]), "Group": lambda r: str(r["norm_group"]),
                                "Condition": lambda r: str(r["where"]),
                                "n": lambda r: f"{fmt_int(r['n_respondents'])} of {fmt_int(r['of_respondents'])}"},
                     {"instrument": "Instrument", "norm_verified": "Verified"}, notes)


def _by_columns(frame: pd.DataFrame, first_stat: str) -> dict[str, str]:
    """The grouping columns of a change table: those between ``subscale`` and `first_stat`."""
    cols = [str(c) for c in frame.columns]
    return {c: c.replace("_", " ").capitalize() for c in cols[cols.index("subscale") + 1: cols.index(first_stat)]}


def paired_change(paired: pd.DataFrame) -> ApaTable:
    """Paired change (:func:`psyq.analysis.statistics.change.paired_change`): group, n, M before, M after, M change
    (SD), t (df), p (Holm), Wilcoxon W and p (Holm), dz [95 % CI].

    Not run: needs a staged run's paired change; tests/test_change.py renders this view.

    Example
    -------
    >>> paired_change(paired).frame.columns.tolist()       # doctest: +SKIP
    ['Subscale', 'Emotion', 'n', 'M before', 'M after', 'Change M (SD)', 't (df)', 'p (Holm)', 'W', 'p W (Holm)', 'dz [95 % CI]', 'Remark']
    """
    def t_df(r: pd.Series) -> str:
        return DASH if is_missing(r["t"]) else f"{fmt_num(r['t'])} ({fmt_num(r['df'], 0)})"
    groups = {label: (lambda r, c=col: str(r[c])) for col, label in _by_columns(paired, "n").items()}
    columns = {"Subscale": lambda r: str(r["subscale"])} | groups | {
        "n": lambda r: fmt_int(r["n"]), "M before": lambda r: fmt_num(r["mean_before"]),
        "M after": lambda r: fmt_num(r["mean_after"]),
        "Change M (SD)": lambda r: _m_sd(r["mean_change"], r["sd_change"]),
        "t (df)": t_df, "p (Holm)": lambda r: fmt_p(r["p_holm"]),
        "W": lambda r: fmt_num(r["w"], 1), "p W (Holm)": lambda r: fmt_p(r["p_wilcoxon_holm"]),
        "dz [95 % CI]": lambda r: DASH if is_missing(r["dz"]) else f"{fmt_num(r['dz'])} {fmt_ci(r['dz_low'], r['dz_high'])}",
        "Remark": lambda r: "" if is_missing(r["note"]) else str(r["note"])}
    notes = ["n = respondents (each respondent's change averaged over repeats and the group's situations). "
             "Change = after − before. t: paired t test; W: Wilcoxon signed-rank statistic (zero changes "
             "dropped); p adjusted by Holm over all rows; dz = mean change / SD of change, 95 % CI by the "
             f"noncentral t. {DASH} = not estimable (see the remark)."]
    return assemble(paired, columns, {"backend_id": "Backend", "instrument": "Instrument"}, notes)


def change_vs_humans(comp: pd.DataFrame) -> ApaTable:
    """The cohort's change against humans' (:func:`psyq.analysis.statistics.change.compare_change_with_humans`):
    group, n and mean change (SD) of each, difference [95 % CI], Welch t (df), p (Holm), Hedges' g
    [95 % CI], Wasserstein distance and the flag.

    Not run: needs a staged run's change compared with people's; tests/test_change.py renders this view.

    Example
    -------
    >>> change_vs_humans(comp).frame.columns.tolist()       # doctest: +SKIP
    ['Subscale', 'Emotion', 'n', 'Change M (SD)', 'Human n', 'Human change M (SD)', 'Difference [95 % CI]', 't (df)', 'p (Holm)', 'g [95 % CI]', 'W1', 'Flag']
    """
    def t_df(r: pd.Series) -> str:
        return DASH if is_missing(r["t"]) else f"{fmt_num(r['t'])} ({fmt_num(r['df'], 1)})"
    groups = {label: (lambda r, c=col: str(r[c])) for col, label in _by_columns(comp, "n_cohort").items()}
    columns = {"Subscale": lambda r: str(r["subscale"])} | groups | {
        "n": lambda r: fmt_int(r["n_cohort"]), "Change M (SD)": lambda r: _m_sd(r["change_cohort"], r["sd_cohort"]),
        "Human n": lambda r: fmt_int(r["n_human"]),
        "Human change M (SD)": lambda r: _m_sd(r["change_human"], r["sd_human"]),
        "Difference [95 % CI]": lambda r: DASH if is_missing(r["diff"]) else
        f"{fmt_num(r['diff'])} {fmt_ci(r['diff_low'], r['diff_high'])}",
        "t (df)": t_df, "p (Holm)": lambda r: fmt_p(r["p_holm"]),
        "g [95 % CI]": lambda r: DASH if is_missing(r["g"]) else f"{fmt_num(r['g'])} {fmt_ci(r['g_low'], r['g_high'])}",
        "W1": lambda r: fmt_num(r["wasserstein"]), "Flag": lambda r: "" if is_missing(r["flag"]) else str(r["flag"])}
    notes = ["n = respondents (each respondent's change averaged over repeats and the group's situations). "
             "Difference = cohort − human mean change, 95 % CI on Welch–Satterthwaite df; t: Welch's test; "
             "p adjusted by Holm over all rows; g: Hedges' g; W1: Wasserstein-1 distance between the two "
             "distributions of change, in score points. Flag (only where the unadjusted 95 % CI of the difference excludes 0): "
             "numb = the cohort's change is closer to zero than humans'; over-reacting = larger in the same "
             f"direction; opposite direction = the signs differ. {DASH} = not estimable."]
    return assemble(comp, columns, {"backend_id": "Backend", "instrument": "Instrument"}, notes)


def _fit3(x: Any) -> str:
    return fmt_r(x, 3)


def invariance_steps(fit: pd.DataFrame) -> ApaTable:
    """Measurement invariance (:func:`psyq.analysis.statistics.invariance.measurement_invariance`) as lavaan and
    semTools print it: per step χ², df, p, CFI, TLI, RMSEA [90 % CI], SRMR, then the changes.

    Example
    -------
    >>> row = {"step": "configural", "chi2": 115.85, "df": 48, "p": 1e-7, "cfi": .923, "tli": .885,
    ...        "rmsea": .097, "rmsea_low": .075, "rmsea_high": .120, "srmr": .068, "delta_chi2": float("nan"),
    ...        "delta_df": float("nan"), "delta_p": float("nan"), "delta_cfi": float("nan"),
    ...        "delta_rmsea": float("nan"), "delta_srmr": float("nan"), "estimable": True, "note": ""}
    >>> invariance_steps(pd.DataFrame([row])).frame.iloc[0, :6].str.replace(NBSP, " ").tolist()
    ['configural', '115.85', '48', '< .001', '.923', '.885']
    """
    def delta(col: str, digits: int = 3) -> Callable[[pd.Series], str]:
        return lambda r: "" if is_missing(r[col]) else f"{MINUS if r[col] < 0 else '+'}{fmt_r(abs(r[col]), digits)}"

    def ok(fn: Callable[[pd.Series], str]) -> Callable[[pd.Series], str]:
        return lambda r: fn(r) if _truthy(r["estimable"]) else DASH

    notes = [f"{DASH} = not estimable: " + "; ".join(f"{r['step']}: {r['note']}" for _, r in fit.iterrows()
                                                     if not _truthy(r["estimable"])) + "."] \
        if not fit["estimable"].map(_truthy).all() else []
    method = fit.attrs.get("method")
    baseline = fit.attrs.get("baseline")
    estimator = fit.attrs.get("estimator", "ML")
    # The estimator's own statistic and indices (lavaan's chisq.scaled, cfi.robust …), named in the note.
    chi2, cfi, tli, rmsea = {"ML": ("chi2", "cfi", "tli", "rmsea"),
                             "MLR": ("chi2_scaled", "cfi_robust", "tli_robust", "rmsea_robust"),
                             "WLSMV": ("chi2_scaled", "cfi_scaled", "tli_scaled", "rmsea_scaled")}[estimator]
    if baseline and estimator == "ML":
        notes.append(f"CFI and TLI against the independence model (χ² = {fmt_num(baseline['chi2'])}, "
                     f"df = {fmt_int(baseline['df'])}).")
    if estimator != "ML":
        notes.append(f"Estimator {estimator}: χ² is the {'mean- and variance-adjusted' if estimator == 'WLSMV' else 'Yuan–Bentler scaled'} "
                     f"statistic, CFI, TLI and RMSEA are the {'scaled' if estimator == 'WLSMV' else 'robust'} ones, and "
                     f"Δχ² is {'Satorra’s (2000)' if estimator == 'WLSMV' else 'the Satorra–Bentler (2001)'} scaled difference.")
    if "released" in fit.columns and fit["released"].fillna("").astype(bool).any():
        notes.append("Released: parameters freed in each group by partial invariance (largest univariate score "
                     "test first), in lavaan's syntax (item~1 an intercept, item|t2 a threshold, factor=~item a loading).")
    if method:
        notes.append(sentence_case(str(method).rstrip(".")) + ".")
    rmsea_header = "RMSEA [90 % CI]" if estimator == "ML" else "RMSEA"   # the interval is the ML statistic's
    columns = {
        "Step": lambda r: str(r["step"]),
        "Released": lambda r: str(r.get("released") or ""),
        "χ²": ok(lambda r: fmt_num(r[chi2])), "df": ok(lambda r: fmt_int(r["df"])),
        "p": ok(lambda r: fmt_p(r["p_scaled"] if chi2 == "chi2_scaled" else r["p"])),
        "CFI": ok(lambda r: _fit3(r[cfi])), "TLI": ok(lambda r: _fit3(r[tli])),
        rmsea_header: ok(lambda r: f"{_fit3(r[rmsea])} {fmt_ci(r['rmsea_low'], r['rmsea_high'], _fit3)}"
                         if estimator == "ML" else _fit3(r[rmsea])),
        "SRMR": ok(lambda r: _fit3(r["srmr"])),
        "Δχ² (Δdf)": lambda r: "" if is_missing(r["delta_chi2"]) else f"{fmt_num(r['delta_chi2'])} ({fmt_int(r['delta_df'])})",
        "p (Δχ²)": lambda r: "" if is_missing(r["delta_p"]) else fmt_p(r["delta_p"]),
        "ΔCFI": delta("delta_cfi"), "ΔRMSEA": delta("delta_rmsea"), "ΔSRMR": delta("delta_srmr"),
    }
    if "released" not in fit.columns or not fit["released"].fillna("").astype(bool).any():
        del columns["Released"]
    return assemble(fit, columns, {}, notes)


def latent_means(frame: pd.DataFrame) -> ApaTable:
    """Latent mean differences (``attrs["latent_means"]`` of
    :func:`psyq.analysis.statistics.invariance.measurement_invariance`): estimate (SE), 95 % CI, z, p and d [CI]."""
    notes = ["Each group's factor mean minus the reference group's, in the marker item's metric, under the "
             "(partial) scalar model named in Step; d divides it by the groups' N-weighted pooled latent SD "
             "(95 % CI by the delta method)."]
    return assemble(frame, {
        "Factor": lambda r: str(r["factor"]), "Group": lambda r: str(r["group"]),
        "Reference": lambda r: str(r["reference"]), "Step": lambda r: str(r["step"]),
        "Difference (SE)": lambda r: f"{fmt_num(r['estimate'])} ({fmt_num(r['se'])})",
        "95 % CI": lambda r: fmt_ci(r["ci_low"], r["ci_high"], fmt_num),
        "z": lambda r: fmt_num(r["z"]), "p": lambda r: fmt_p(r["p"]),
        "d [95 % CI]": lambda r: f"{fmt_num(r['d'])} {fmt_ci(r['d_ci_low'], r['d_ci_high'], fmt_num)}",
    }, {}, notes)


def graded_response(params: pd.DataFrame) -> ApaTable:
    """Graded response model parameters (:func:`psyq.analysis.statistics.irt.graded_response_model`) as mirt
    prints them with standard errors: discrimination a and thresholds b₁ … with (SE)."""
    thresholds = sorted((c for c in params.columns if str(c).startswith("threshold_")),
                        key=lambda c: int(str(c).rsplit("_", 1)[1]))

    def with_se(col: str) -> Callable[[pd.Series], str]:
        return lambda r: DASH if is_missing(r[col]) else (
            fmt_num(r[col]) + ("" if is_missing(r.get("se_" + col)) else f" ({fmt_num(r['se_' + col])})"))

    columns = {"Subscale": lambda r: str(r.get("subscale", "")), "Item": lambda r: str(r["item"]),
               "Sample": lambda r: str(r.get("sample", "")), "a (SE)": with_se("discrimination")}
    columns.update({f"b{c.rsplit('_', 1)[1]} (SE)": with_se(c) for c in thresholds})
    columns["n"] = lambda r: fmt_int(r["n"])
    if "subscale" not in params.columns:
        del columns["Subscale"]
    head = []
    if "sample" not in params.columns:
        del columns["Sample"]
    elif len(params) > 1 and params["sample"].nunique() == 1:     # one sample: said once, not per row
        del columns["Sample"]
        head.append(f"Sample: {params['sample'].iloc[0]}.")
    untested = params[~params["estimable"].map(_truthy)]
    notes = head + ["a = discrimination, b = thresholds on the latent trait (θ ~ N(0, 1) within each sample), "
             "P(X ≥ k | θ) = 1 / (1 + exp(−a(θ − b_k))); marginal maximum likelihood, SE from the observed information."]
    if len(untested):
        notes.append(f"{DASH} = not estimable: " + "; ".join(sorted({str(n) for n in untested["note"]})) + ".")
    return assemble(params, columns, {"instrument": "Instrument"}, notes)


def item_functioning(dif: pd.DataFrame) -> ApaTable:
    """Differential item functioning (:func:`psyq.analysis.statistics.dif.differential_item_functioning`): per
    item the 2-df likelihood-ratio χ², Holm p, Nagelkerke ΔR², its label and the flag."""
    ok = lambda fn: (lambda r: fn(r) if _truthy(r["estimable"]) else DASH)   # noqa: E731
    columns = {"Subscale": lambda r: str(r.get("subscale", "")), "Item": lambda r: str(r["item"]),
               "χ²(2)": ok(lambda r: fmt_num(r["chi2_dif"])), "p (Holm)": ok(lambda r: fmt_p(r["p_holm"])),
               "uniform p": ok(lambda r: fmt_p(r["p_uniform"])), "non-uniform p": ok(lambda r: fmt_p(r["p_nonuniform"])),
               "ΔR²": ok(lambda r: fmt_r(r["delta_r2"], 3)), "effect": ok(lambda r: str(r["effect"])),
               "works differently": ok(lambda r: "yes" if _truthy(r["flag"]) else "no")}
    if "subscale" not in dif.columns:
        del columns["Subscale"]
    notes = ["Ordinal logistic regression per item on the purified total score: score vs score + group + "
             "score × group (2 df); uniform = group term, non-uniform = interaction. ΔR²: Nagelkerke; negligible "
             "< .035 ≤ moderate < .070 ≤ large (Jodoin & Gierl, 2001). Works differently: Holm p < .05 and at "
             "least moderate."]
    untested = dif[~dif["estimable"].map(_truthy)]
    if len(untested):
        notes.append(f"{DASH} = not estimable: " + "; ".join(sorted({str(n) for n in untested["note"]})) + ".")
    return assemble(dif, columns, {"instrument": "Instrument"}, notes)


def human_comparison(comp: pd.DataFrame) -> ApaTable:
    """The cohort against human respondents (:func:`psyq.analysis.statistics.human_comparison.compare_with_humans`):
    per subscale n, M (SD) of both samples, Welch t (df) and p, Hedges' g [95 % CI], Mann–Whitney p,
    Kolmogorov–Smirnov D (p), Wasserstein distance, variance ratio (Brown–Forsythe p), α of both
    samples and Tucker's φ; U, the test statistics and α's difference stay in the full table, and the
    notes of the rows go below it.

    Not run: needs a comparison with people's answers; tests/test_apa_report.py renders this view.

    Example
    -------
    >>> human_comparison(comp).frame.columns.tolist()        # doctest: +SKIP
    ['Subscale', 'n (cohort, human)', 'Cohort M (SD)', 'Human M (SD)', 't (df)', 'p', "Hedges' g [95 % CI]", 'Mann–Whitney p', 'KS D (p)', 'W₁', 'Variance ratio (BF p)', 'α (cohort, human)', 'φ']
    """
    weighted = "n_eff_human" in comp.columns and comp.get("weighted", pd.Series(dtype=object)).map(_truthy).any()

    def n(r: pd.Series) -> str:
        text = f"{fmt_int(r['n_cohort'])}, {fmt_int(r['n_human'])}"
        if weighted and _truthy(r.get("weighted")):
            text += " (n_eff " + ", ".join(DASH if is_missing(r[c]) else f"{float(r[c]):,.1f}"
                                           for c in ("n_eff_cohort", "n_eff_human")) + ")"
        return text

    def with_p(stat: str, p: str, fmt: Callable[[Any], str] = fmt_num) -> Callable[[pd.Series], str]:
        return lambda r: DASH if is_missing(r[stat]) else f"{fmt(r[stat])} ({fmt_p(r[p])})"

    columns = {"Subscale": lambda r: str(r["subscale"]), "n (cohort, human)": n,
               "Cohort M (SD)": lambda r: _m_sd(r["mean_cohort"], r["sd_cohort"]),
               "Human M (SD)": lambda r: _m_sd(r["mean_human"], r["sd_human"]),
               "t (df)": lambda r: DASH if is_missing(r["t"]) else f"{fmt_num(r['t'])} ({fmt_num(r['df'], 1)})",
               "p": lambda r: fmt_p(r["p"]),
               "Hedges' g [95 % CI]": lambda r: DASH if is_missing(r["g"]) else
               f"{fmt_num(r['g'])} {fmt_ci(r['g_low'], r['g_high'])}",
               "Mann–Whitney p": lambda r: fmt_p(r["p_mwu"]),
               "KS D (p)": with_p("ks", "p_ks", fmt_r),
               "W₁": lambda r: fmt_num(r["wasserstein"]),
               "Variance ratio (BF p)": with_p("variance_ratio", "p_bf"),
               "α (cohort, human)": lambda r: f"{fmt_r(r['alpha_cohort'])}, {fmt_r(r['alpha_human'])}",
               "φ": lambda r: fmt_r(r["phi"])}
    notes = ["n = respondents" + (" (n_eff: Kish's effective sample size of a weighted side)" if weighted else "")
             + ". M (SD): subscale scores. t: Welch's test with Welch–Satterthwaite df; g: Hedges' g, positive = "
             "cohort above the humans. Mann–Whitney p: two-sided U test; KS D: Kolmogorov–Smirnov distance between "
             "the two distributions of scores; W₁: Wasserstein-1 distance in score points; variance ratio: cohort "
             "over human variance, BF p: Brown–Forsythe test. α: Cronbach's α of the keyed items; φ: Tucker's "
             f"congruence of the one-factor loadings. {DASH} = not estimable."]
    if weighted:
        notes.append("Weighted rows: means, SDs, the variance ratio, t, g and W₁ are weighted; Mann–Whitney, "
                     f"Kolmogorov–Smirnov and Brown–Forsythe tests have no simple weighted form and are not computed "
                     f"({DASH}); α and φ are unweighted.")
    by_note: dict[str, list[str]] = {}
    for _, r in comp.iterrows():
        if not is_missing(r["note"]) and str(r["note"]):
            by_note.setdefault(str(r["note"]), []).append(str(r["subscale"]))
    notes.extend(f"{', '.join(subs)}: {note}." for note, subs in by_note.items())
    return assemble(comp, columns, {"instrument": "Instrument"}, notes)


def twin_agreement(summary: pd.DataFrame) -> ApaTable:
    """Twins against their persons (:func:`psyq.analysis.statistics.standin.twins.twin_summary`): per metric and
    comparison the mean over persons with its 95 % CI and the persons counted; a share or r without
    the leading zero, a ratio or score error with two decimals.

    Example
    -------
    >>> row = {"instrument": "mini", "metric": "exact", "comparison": "twin", "mean": .6, "ci_low": .5,
    ...        "ci_high": .75, "n": 4, "not_estimable": 0, "note": ""}
    >>> twin_agreement(pd.DataFrame([row])).frame.iloc[0].str.replace(NBSP, " ").tolist()
    ['mini', 'exact', 'twin', '.60 [.50, .75]', '4', '0']
    """
    def fmt(r: pd.Series) -> Callable[[Any], str]:
        bounded = r["metric"] in ("exact", "within_one", "r") and r["comparison"] != "normalised"
        return fmt_r if bounded else fmt_num

    notes = ["Means over persons with percentile-bootstrap 95 % CIs (persons resampled 2,000 times, seeded). "
             "other_twins: each person against every other person's twin (own twin left out), averaged; "
             "twin_minus_others: own twin − other twins, per person; normalised: twin ÷ retest, per person "
             "(Park et al., 2024)."]
    missing = summary[summary["mean"].map(is_missing)]
    if len(missing):
        notes.append(f"{DASH} = " + "; ".join(sorted({str(n) for n in missing["note"] if str(n)})
                                              or {"not estimable"}) + ".")
    return assemble(summary, {
        "Metric": lambda r: str(r["metric"]).replace("abs_error_", "|error| "),
        "Comparison": lambda r: str(r["comparison"]),
        "M [95 % CI]": lambda r: DASH if is_missing(r["mean"]) else f"{fmt(r)(r['mean'])} {fmt_ci(r['ci_low'], r['ci_high'], fmt(r))}",
        "n": lambda r: fmt_int(r["n"]), "not estimable": lambda r: fmt_int(r["not_estimable"]),
    }, {"instrument": "Instrument"}, notes)


PLAIN = "plain"
"""The view of a table whose section names none: :func:`generic`, whatever the table's columns."""

VIEWS: dict[str, Callable[[pd.DataFrame], ApaTable]] = {
    "scorecard": scorecard_view,
    "norm_comparison": norm_comparison,
    "answers_by_status": answers_by_status,
    "internal_consistency": internal_consistency,
    "retest_icc": retest_icc,
    "regression": regression,
    "sd_ratio": sd_ratio,
    "group_matching": group_matching,
    "paired_change": paired_change,
    "change_vs_humans": change_vs_humans,
    "invariance_steps": invariance_steps,
    "latent_means": latent_means,
    "graded_response": graded_response,
    "item_functioning": item_functioning,
    "twin_agreement": twin_agreement,
    "human_comparison": human_comparison,
    "condition_pairs": condition_pairs,
    "condition_ranks": condition_ranks,
    "condition_distances": condition_distances,
    PLAIN: generic,
}
"""The views of report tables by name. A section names the view of each table it adds
(:meth:`psyq.analysis.report.section.Section.add_table`); a table's columns choose none, so a new
frame that happens to have a known table's columns is not printed as that table."""


def apa_table(frame: pd.DataFrame, view: str = PLAIN) -> ApaTable:
    """The printed form of a report table by the view its section named (a key of :data:`VIEWS`);
    without one, the plain view (:func:`generic`): never a view guessed from the table's columns.

    Example
    -------
    >>> apa_table(pd.DataFrame({"subscale": ["EC"], "p": [0.0004]})).frame.iloc[0].str.replace(NBSP, " ").tolist()
    ['EC', '< .001']
    >>> apa_table(pd.DataFrame({"term": ["age"], "estimate": [0.5], "se": [0.1]})).frame.columns.tolist()
    ['term', 'estimate', 'se']
    """
    return VIEWS[view](frame)
