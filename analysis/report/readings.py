"""Sentences from the statistics' frames: what the report says about a table in plain words.

The statistics (:mod:`psyq.analysis.statistics`) return numbers and categories; this module turns
them into sentences, in the report's one number vocabulary (:mod:`psyq.analysis.report.apa`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from psyq.engine import __version__
from psyq.engine.design.instrument import Instrument
from psyq.engine.files.codebook import WEIGHT_COLUMN, codebook_beside
from psyq.engine.files.shipped import shipped_name

from psyq.analysis.report.apa import fmt_num, fmt_r, p_clause
from psyq.analysis.statistics.human_comparison import kish_n_eff
from psyq.analysis.statistics.norms import CORRECTIONS, POOLED, verification_flag
from psyq.analysis.statistics.standin.twins import TwinMatch
from psyq.analysis.statistics.invariance import (ACCEPTABLE_CFI, ACCEPTABLE_RMSEA, CHEN_DELTA_CFI, CHEN_DELTA_RMSEA,
                                                  CHEN_DELTA_SRMR)


def invariance_verdicts(frame: pd.DataFrame) -> list[str]:
    """One plain-language sentence per row of :func:`measurement_invariance`.

    The configural row is judged on its own fit (acceptable: CFI ≥ .90 and RMSEA ≤ .10); a later
    row by Chen's (2007) rule: equality is rejected when ΔCFI ≤ −.010 together with ΔRMSEA ≥ .015
    or ΔSRMR ≥ .030 (loadings) / .010 (thresholds, intercepts), kept when ΔCFI > −.010 and neither of
    the others crosses its cut-off, and called doubtful when the indices disagree. The CFI and RMSEA
    are the estimator's own (``attrs["deciding"]``: robust for MLR, scaled for WLSMV). A partial step
    names what it released and whether the rest holds.

    Example (rows as :func:`psyq.analysis.statistics.invariance.measurement_invariance` returns them):
        >>> nan = float("nan")
        >>> fit = pd.DataFrame({"step": ["configural", "metric", "scalar", "partial scalar"], "estimable": True,
        ...                     "note": ["", "", "", "partial invariance holds"], "groups": 2,
        ...                     "released": ["", "", "", "a2~1"], "cfi": [.995, .994, .952, .990],
        ...                     "rmsea": [.031, .028, .071, .030], "delta_cfi": [nan, -.001, -.042, -.004],
        ...                     "delta_rmsea": [nan, -.003, .043, .002], "delta_srmr": [nan, .004, .021, .003],
        ...                     "delta_df": pd.array([None, 4, 4, 3], dtype="Int64"),
        ...                     "delta_chi2": [nan, 3.1, 61.7, 9.0], "delta_p": [nan, .54, 1e-12, .03]})
        >>> for sentence in invariance_verdicts(fit):
        ...     print(sentence)
        configural: the same items load on the same factors in both groups (CFI .995, RMSEA .031)
        metric: the loadings are equal in the groups (ΔCFI −.001, ΔRMSEA −.003, ΔSRMR .004; Δχ²(4) = 3.10, p = .540)
        scalar: the intercepts are not equal in the groups (ΔCFI −.042, ΔRMSEA .043, ΔSRMR .021; Δχ²(4) = 61.70, p < .001)
        partial scalar: with a2~1 free in each group, the other intercepts are equal in the groups (ΔCFI −.004, ΔRMSEA .002, ΔSRMR .003; Δχ²(3) = 9.00, p = .030): latent means compare on the same scale
    """
    n_groups = int(frame["groups"].iloc[0]) if len(frame) else 0
    in_groups = "both groups" if n_groups == 2 else f"all {n_groups} groups"
    cfi_column, rmsea_column = frame.attrs.get("deciding", ("cfi", "rmsea"))
    what = {"thresholds": "thresholds", "metric": "loadings", "scalar": "intercepts"}
    tails = {"scalar": ": compare means with care", "metric": ": compare relations with care",
             "thresholds": ": compare answers with care"}
    steps = list(frame["step"])
    sentences = []
    for k, row in enumerate(frame.to_dict("records")):
        step = row["step"]
        base = step.removeprefix("partial ")
        if not row["estimable"]:
            reason = row["note"].split("; ")[0].removeprefix("not estimable: ")
            sentences.append(f"{step}: not estimable: {reason}")
            continue
        fit = f"CFI {fmt_r(row[cfi_column], 3)}, RMSEA {fmt_r(row[rmsea_column], 3)}"
        if step == "configural":
            if row[cfi_column] >= ACCEPTABLE_CFI and row[rmsea_column] <= ACCEPTABLE_RMSEA:
                sentences.append(f"configural: the same items load on the same factors in {in_groups} ({fit})")
            else:
                sentences.append(f"configural: the factor model fits poorly ({fit}, {in_groups} together), "
                                 "so the later steps have no sound base")
            continue
        if pd.isna(row["delta_cfi"]):
            sentences.append(f"{step}: no comparison with the step before, which is not estimable or does not "
                             f"hold ({fit})")
            continue
        delta_chi2 = "not estimable" if pd.isna(row["delta_chi2"]) else f"{row['delta_chi2']:.2f}"
        deltas = (f"ΔCFI {fmt_r(row['delta_cfi'], 3)}, ΔRMSEA {fmt_r(row['delta_rmsea'], 3)}, "
                  f"ΔSRMR {fmt_r(row['delta_srmr'], 3)}; Δχ²({row['delta_df']}) = {delta_chi2}"
                  + ("" if pd.isna(row["delta_p"]) else f", p {p_clause(row['delta_p'])}"))
        outcome = next((part for part in row["note"].split("; ") if part.startswith("not invariant")), "")
        cfi_drop = row["delta_cfi"] <= CHEN_DELTA_CFI
        other_rise = row["delta_rmsea"] >= CHEN_DELTA_RMSEA or row["delta_srmr"] >= CHEN_DELTA_SRMR[base]
        if step.startswith("partial "):
            freed = f"with {row['released']} free in each group"
            if "partial invariance holds" in row["note"]:
                later = {"scalar": "latent means compare on the same scale", "metric": "relations compare",
                         "thresholds": "the loadings can be tested next"}[base]
                equal = (f"equality of the other {what[base]} is doubtful, the fit indices disagree" if cfi_drop
                         else f"the other {what[base]} are equal in the groups")
                sentences.append(f"{step}: {freed}, {equal} ({deltas}): {later}"
                                 + (" with care" if cfi_drop else ""))
            else:
                sentences.append(f"{step}: {freed}, the {what[base]} are still not equal ({deltas}); "
                                 f"{outcome or 'no further release is supported'}")
            continue
        followed = k + 1 < len(steps) and steps[k + 1] == f"partial {step}"
        if cfi_drop and other_rise:
            tail = "" if followed else (f"; {outcome}" if outcome else "") + tails[base]
            sentences.append(f"{step}: the {what[base]} are not equal in the groups ({deltas}){tail}")
        elif not cfi_drop and not other_rise:
            sentences.append(f"{step}: the {what[base]} are equal in the groups ({deltas})")
        else:
            sentences.append(f"{step}: equality of the {what[base]} is doubtful, the fit indices "
                             f"disagree ({deltas})")
    return sentences


def norm_reading(subscale: str, group: str, n: int, g: float, g_low: float, g_high: float,
            p_adj: float, tost_p: float, equivalent: bool | None, *, bound: float,
            correction: str = "holm", confidence: float = 0.95, sample: str | None = None,
            verified: str = "source-table") -> str:
    """One plain-language sentence for one comparison with a norm group.

    The size of the difference is |g|, in pooled-SD units (close to the norm SD when the norm
    sample is large); the p value is the multiplicity-adjusted one.
    A TOST p at or above alpha does not reject equivalence: it only fails to show it, and the
    sentence says "not shown". `sample` names the norm sample in the sentence; a `verified`
    status other than ``source-table`` or ``raw-data`` ends it with its flag
    (:func:`verification_flag`), e.g. "— norms unverified".

    Example
    -------
    >>> norm_reading("EC", "women", 40, -1.2, -1.62, -0.78, 0.00001, 0.999, False, bound=0.3)
    'EC is 1.2 SD below the norm for women (g = −1.20, 95 % CI −1.62 to −0.78, Holm p < .001); equivalence within ±0.3 SD not shown (TOST p = .999).'

    References
    ----------
    American Psychological Association (2020). *Publication Manual of the American Psychological
    Association* (7th ed.): p values without a leading zero, ``p < .001`` below .001.
    """
    named = f"{sample} " if sample else ""
    norm = f"the pooled {named}norm" if group == POOLED else f"the {named}norm for {group}"
    flag = verification_flag(verified)
    tail = f" — {flag}" if flag else ""
    if n < 2 or not np.isfinite(g):
        who = "respondent" if n == 1 else "respondents"
        return f"{subscale}: {n} {who} compared with {norm}; too few for a test{tail}."
    size = f"{abs(g):.1f}"
    if float(size) == 0:
        head = f"{subscale} is within 0.05 SD of {norm}"
    else:
        head = f"{subscale} is {size} SD {'above' if g > 0 else 'below'} {norm}"
    level = f"{confidence * 100:g} %"
    stats_text = (f"g = {fmt_num(g)}, {level} CI {fmt_num(g_low)} to {fmt_num(g_high)}, "
                  f"{CORRECTIONS[correction]} p {p_clause(p_adj)}")
    verdict = "equivalent" if equivalent else "equivalence"
    outcome = "" if equivalent else " not shown"
    return (f"{head} ({stats_text}); {verdict} within ±{bound:g} SD{outcome} "
            f"(TOST p {p_clause(tost_p)}){tail}.")


def norm_readings(comparison: pd.DataFrame, *, bound: float, correction: str = "holm") -> list[str]:
    """One sentence per row of :func:`psyq.analysis.statistics.norms.compare_with_norms` (called
    with the same `bound` and `correction`), by :func:`norm_reading`.

    Example
    -------
    >>> norm_readings(compare_with_norms(scores, {"iri": iri}), bound=0.3)     # needs a run's scores  # doctest: +SKIP
    ['PT is 0.4 SD below the norm for women (g = −0.41, ...']
    """
    return [norm_reading(r.subscale, r.norm_group, r.n, r.g, r.g_low, r.g_high, r.p_adj, r.tost_p,
                         None if pd.isna(r.equivalent) else bool(r.equivalent), bound=bound,
                         correction=correction, sample=r.norm_sample, verified=r.norm_verified)
            for r in comparison.itertuples(index=False)]


def matching_warnings(matching: pd.DataFrame, *, unmatched_ids: Mapping[tuple[str, str], list[str]] | None = None
                      ) -> list[str]:
    """One sentence per norm sample where some respondents matched no group (from
    :func:`group_matching`), naming the attributes the norms use and those the cohort has.

    Example
    -------
    >>> matching_warnings(group_matching(scores, {"iri": iri}))      # needs a run's scores  # doctest: +SKIP
    ['iri norm sample davis1980 matches on gender; the cohort has sex, age: 0 of 12 respondents matched a group and were compared with the pooled norm.']
    """
    out = []
    unmatched = matching["where"].str.startswith("matched no group")
    for row in matching[unmatched].itertuples(index=False):
        if row.n_respondents == 0:
            continue
        matched = row.of_respondents - row.n_respondents
        names = (unmatched_ids or {}).get((row.instrument, row.norm_sample), [])
        who = f" (unmatched: {', '.join(names[:5])}{', ...' if len(names) > 5 else ''})" if names else ""
        on = f"matches on {row.matches_on}" if row.matches_on else "has no groups by attribute"
        out.append(f"{row.instrument} norm sample {row.norm_sample} {on}; the cohort has "
                   f"{row.cohort_attributes or 'no attributes'}: {matched} of {row.of_respondents} respondents "
                   f"matched a group and {row.n_respondents} {'was' if row.n_respondents == 1 else 'were'} compared "
                   f"with {'the pooled norm' if row.norm_group == POOLED else f'the whole-sample norm ({row.norm_group})'}{who}.")
    return out


def value_mismatch_warnings(mismatches: pd.DataFrame) -> list[str]:
    """One warning per row of :func:`psyq.analysis.statistics.norms.value_mismatches`: the labels
    differ, and how a codebook maps them.

    Example
    -------
    >>> frame = pd.DataFrame([{"instrument": "iri", "norm_sample": "davis1980", "attribute": "gender",
    ...                        "norm_values": ["female", "male"], "data_values": ["F", "M"]}])
    >>> value_mismatch_warnings(frame)[0][:97]
    "iri norm sample davis1980 matches gender on female, male; the data's gender values are F, M: none"
    """
    return [f"{r.instrument} norm sample {r.norm_sample} matches {r.attribute} on {', '.join(map(str, r.norm_values))}; "
            f"the data's {r.attribute} values are {', '.join(r.data_values)}: none of them matches, so no "
            f"respondent falls in a {r.attribute} group. The labels differ: map them with a codebook's "
            f"`values:` (e.g. {r.attribute}: {{{r.data_values[0]}: {r.norm_values[0]}}}; docs/comparing.md#codebooks)"
            for r in mismatches.itertuples(index=False)]


WEIGHTED_CAPTION = ("weighted: means, SDs with the reliability-weights correction, Welch t and Hedges g with Kish's "
                    "n_eff, variance ratio, Wasserstein distance; Mann–Whitney, KS and Brown–Forsythe not computed; "
                    "α and φ unweighted")


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


def shown_file(file: str | Path) -> str:
    """A people's file as a report meant to be shared names it: a file psyq ships by its name and
    psyq's version (never its place inside this machine's installation), any other file as the user
    gave it (a relative path stays relative).

    Example:
        >>> from psyq.engine.files.shipped import locate
        >>> shown_file(locate("iri_briganti2018_keyed", "human data")).startswith(
        ...     "iri_briganti2018_keyed (shipped with psyq ")
        True
        >>> shown_file("mine/people.csv")
        'mine/people.csv'
    """
    named = shipped_name(file)
    return f"{named[1]} (shipped with psyq {__version__})" if named is not None else str(file)


def _shown_codebook(codebook: str, file: str) -> str:
    """The codebook a people's file was read with, as :func:`shown_file` names files: the one psyq
    ships beside a shipped file is said to be that."""
    beside = codebook_beside(Path(file)) if shipped_name(file) is not None else None
    if beside is not None and Path(codebook).resolve() == beside.resolve():
        return "the codebook shipped with it"
    return f"the codebook {shown_file(codebook)}"


def reading_notes(instrument: Instrument, answers: pd.DataFrame, file: str) -> tuple[list[str], list[str]]:
    """What the report says about how one human data file was read: (readings, warnings).

    Readings: the codebook used (``answers.attrs``, as
    :func:`psyq.analysis.scoring.human_answers.read_answers_csv` sets them), a declared keying and
    the column of survey weights (with Kish's n_eff of the file).
    Warnings (also readings, and on stderr): reverse-keyed items that look keyed the wrong way
    (:func:`psyq.analysis.scoring.human_answers.keying_warning`).

    Example
    -------
    >>> from psyq.engine.design.instrument import load_instrument
    >>> from psyq.analysis.scoring.human_answers import read_answers_csv
    >>> iri = load_instrument("iri")
    >>> file = "instruments/data/iri_briganti2018_keyed.csv"
    >>> readings, warnings = reading_notes(iri, read_answers_csv(file, iri), file)   # reads 1,973 rows: tests/test_codebook.py  # doctest: +SKIP
    >>> warnings                                                                     # reads 1,973 rows: tests/test_codebook.py  # doctest: +SKIP
    []
    """
    from psyq.analysis.scoring.human_answers import keying_check, keying_warning

    readings, warnings_ = [], []
    shown = shown_file(file)        # a shipped file by its name, never its path inside the installation
    if answers.attrs.get("codebook"):
        readings.append(f"{instrument.id}: the human data {shown} were read with "
                        f"{_shown_codebook(str(answers.attrs['codebook']), file)} "
                        f"({answers.attrs.get('codebook_summary')}).")
    if answers.attrs.get("keyed"):
        readings.append(f"{instrument.id}: the human answers were declared already keyed; their reverse-keyed "
                        "items were taken as reversed and not reversed again.")
    if WEIGHT_COLUMN in answers.columns:
        column = answers.attrs.get("weight") or WEIGHT_COLUMN
        readings.append(f"{instrument.id}: the human data carry survey weights in column '{column}' (Kish n_eff = "
                        f"{kish_n_eff(answers[WEIGHT_COLUMN]):,.1f} of {len(answers):,} respondents).")
    message = keying_warning(keying_check(instrument, answers), shown, bool(answers.attrs.get("keyed")))
    if message:
        warnings_.append(message)
    return readings, warnings_


def twin_match_reading(match: TwinMatch, label: str = "") -> str:
    """One sentence: how many matched, and (when only some did) how many did not on each side.

    Example:
        >>> from psyq.analysis.statistics.standin.twins import match_twins
        >>> twin_match_reading(match_twins(["a", "b", "x"], ["a", "b", "c", "d"]), "iri")
        'iri: 2 of the 3 personas are twins of respondents of the human data (persona id = respondent_id); 1 persona(s) match no person, 2 person(s) have no twin.'
    """
    lead = f"{label}: " if label else ""
    n_personas = len(match.matched) + len(match.personas_only)
    text = (f"{lead}{len(match.matched):,} of the {n_personas:,} personas are twins of respondents of the human data "
            "(persona id = respondent_id)")
    if match.personas_only or match.persons_only:
        text += (f"; {len(match.personas_only):,} persona(s) match no person, {len(match.persons_only):,} person(s) "
                 "have no twin")
    return text + "."


NAME_MAX = 60
"""The most characters of a condition's name a verdict sentence prints: a longer one is cut, ending
in "…" (the section "Conditions compared" names every condition in full). With at most two names
said, a sentence of :func:`most_people_like` stays under 380 characters whatever the conditions are
called (the rest is psyq's own words: the use, the criterion and its measure; and the instrument's
id before it in a run of several)."""


def _said_name(label: str) -> str:
    """A condition's name as a verdict sentence prints it (at most :data:`NAME_MAX` characters)."""
    return label if len(label) <= NAME_MAX else label[:NAME_MAX - 1] + "…"


def most_people_like(ranks: pd.DataFrame, comparison: pd.DataFrame,
                     uses: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    """A sentence per use and criterion compared: the condition closest to people
    (:func:`psyq.rank_conditions`' first) when it is distinguishably better than the next in the order
    (``ahead_of_next``), naming the next; otherwise that it cannot tell yet, naming the closest and the
    next not distinguishable from it at this size, and how many share rank 1 when more than two do
    (the others are left to the ranks of the section "Conditions compared"). A sentence names at most
    two conditions, each cut at :data:`NAME_MAX` characters, so its length is bounded however many
    conditions there are. `uses` gives each use's criteria (the verdict's); a criterion the
    comparison does not hold, or holds for no condition, says nothing. The measure of each distance
    is the comparison's own (``measure``); several instruments are named.

    Example:
        >>> ranks = pd.DataFrame({"instrument": "iri", "criterion": "level", "condition": ["a", "b", "c"],
        ...     "distance": [0.1, 0.2, 0.6], "rank": [1, 1, 3], "ahead_of_next": [False, True, False], "note": ""})
        >>> comparison = pd.DataFrame({"instrument": ["iri"], "criterion": ["level"],
        ...                            "measure": ["mean |g| over 4 subscales"]})
        >>> print(most_people_like(ranks, comparison, [("Estimating people's subscale means", ("level",))])[0])
        a is the most people-like for estimating people's subscale means (level: mean |g| over 4 subscales); not distinguishable from b at this size: cannot tell yet.
    """
    measures = {(r.instrument, r.criterion): r.measure for r in comparison.itertuples()}
    several = ranks["instrument"].nunique() > 1
    sentences = []
    for use, criteria in uses:
        for criterion in criteria:
            for instrument, part in ranks[ranks["criterion"] == criterion].groupby("instrument", sort=False):
                ranked = part[part["rank"].notna()]
                if ranked.empty:
                    continue
                best = _said_name(str(ranked.iloc[0]["condition"]))
                lead = f"{instrument}: " if several else ""
                what = f"{use[0].lower()}{use[1:]} ({criterion}: {measures.get((instrument, criterion), criterion)})"
                text = f"{lead}{best} is the most people-like for {what}"
                if len(ranked) > 1:
                    following = _said_name(str(ranked.iloc[1]["condition"]))
                    shared = int((ranked["rank"] == 1).sum())
                    text += (f"; distinguishably better than {following}" if ranked.iloc[0]["ahead_of_next"] else
                             f"; not distinguishable from {following} at this size: cannot tell yet"
                             + (f", {shared} share rank 1 (ranked below)" if shared > 2 else ""))
                sentences.append(text + ".")
    return sentences


def sensitivity_text(table: pd.DataFrame) -> str:
    """The table of :func:`psyq.analysis.statistics.prompt_sensitivity.sensitivity_of_runs` as plain
    text, one line per row (numbers to 3 decimals; 'not estimable' where NaN), as `psyq sensitivity`
    prints it.

    Example:
        >>> row = {"variant": "typos", "backend_id": "a", "instrument": "iri", "subscale": "PT", "n_pairs": 1,
        ...        "mean_original": 14.0, "mean_perturbed": 15.0, "mean_change": 1.0, "ci_low": float("nan"),
        ...        "ci_high": float("nan"), "share_changed": 1.0, "reason": "one pair"}
        >>> print(sensitivity_text(pd.DataFrame([row])).splitlines()[1])
        typos  a  iri  PT  1  14.000  15.000  1.000 [no CI]  100.000 %  (one pair)
    """
    def num(x: float) -> str:
        return "not estimable" if pd.isna(x) else f"{x:.3f}"

    lines = ["variant  backend  instrument  subscale  n  original  perturbed  change [95% CI]  changed"]
    for r in table.itertuples():
        ci = f"[{num(r.ci_low)}, {num(r.ci_high)}]" if not pd.isna(r.ci_low) else "[no CI]"
        lines.append(f"{r.variant}  {r.backend_id}  {r.instrument}  {r.subscale}  {r.n_pairs}  {num(r.mean_original)}"
                     f"  {num(r.mean_perturbed)}  {num(r.mean_change)} {ci}  "
                     f"{num(r.share_changed * 100) if not pd.isna(r.share_changed) else 'n/a'} %"
                     + (f"  ({r.reason})" if r.reason else ""))
    return "\n".join(lines)
