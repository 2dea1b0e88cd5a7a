"""The report section "Personas and their persons (twins)": each persona against the person it twins.

When the personas of a run are twins of the people in a ``--human`` file (persona id = that
file's ``respondent_id``, :func:`psyq.analysis.statistics.standin.twins.match_twins`), this section says, per rating
instrument, how many matched, and how closely each twin answers like its own person
(:func:`psyq.analysis.statistics.standin.twins.twin_agreement`): exact and within-one agreement, Pearson r across
items, absolute subscale-score errors, each beside the two baselines (other persons' twins, the
cohort mean answer) and, with ``--retest``, the persons' own retest agreement and the normalised
accuracy (twin ÷ retest per person; Park et al., 2024). Means over persons with percentile-bootstrap
95 % CIs (persons resampled 2,000 times, seeded; :func:`psyq.analysis.statistics.standin.twins.twin_summary`); a statistic that cannot be estimated is a reading
"not estimable: reason", never a number.

Example:
    >>> section = twins_section({"iri": (iri, cohort_items, human_items, None)})   # needs twins of people  # doctest: +SKIP
    >>> section.title                                                            # needs twins of people  # doctest: +SKIP
    'Personas and their persons (twins)'
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from psyq.engine.design.instrument import Instrument

from psyq.analysis.report import apa
from psyq.analysis.report.readings import twin_match_reading
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.section import ReportSection, Section
from psyq.analysis.statistics.standin.twins import (AGREEMENT, COHORT_MEAN, DIFFERENCE, ERROR_PREFIX, NORMALISED, OTHERS, RETEST,
                                 TWIN, twin_agreement, twin_summary)

TITLE = "Personas and their persons (twins)"
NO_RETEST = "no retest data: the ceiling is unknown, agreement is not normalised."
PER_PERSON_MAX = 50
"""Up to this many matched persons the section shows the per-person table; beyond, only the summary."""

METHODS = ("Each persona built as the twin of a person (persona id = respondent id) was compared with that "
           "person item by item on keyed answers: exact agreement, agreement within one scale point, Pearson r "
           "across items and the absolute difference of subscale scores, against two baselines (the mean agreement "
           "of the person with every other person's twin, and the cohort's mean answer per item), averaged over "
           "persons with percentile-bootstrap 95 % CIs (2,000 resamples of persons); normalised accuracy was the "
           "twin's agreement divided by the person's own retest agreement, per person, then averaged (Park et al., 2024).")

LABEL = {"exact": "exact agreement (share of items with the same answer)",
         "within_one": "agreement within one scale point", "r": "Pearson r across items"}


def twins_section(pairs: Mapping[str, tuple[Instrument, pd.DataFrame, pd.DataFrame, pd.DataFrame | None]],
                  *, always: bool = False) -> Section | None:
    """The section for instrument id -> (instrument, cohort's raw answers, humans' raw answers, the
    humans' retest answers or None). None when no persona of any instrument is a twin of a person,
    unless `always` (a retest was given: then the section says that nothing matched).
    """
    results = {i: (inst, twin_agreement(cohort, humans, inst, retest), retest is not None)
               for i, (inst, cohort, humans, retest) in pairs.items()}
    if not always and not any(len(a.attrs["match"].matched) for _, a, _ in results.values()):
        return None
    section = Section(TITLE, methods=METHODS)
    section.readings.append(
        "Does each twin answer like its own person, more than like anyone else? Answers are compared keyed "
        "(reverse items reversed; exact and within-one agreement are the same raw), the cohort's first repeat of its "
        "first backend. Baselines: the person against every other person's twin (averaged; what a twin of someone "
        "else would give), and against the cohort's mean answer per item (rounded to the nearest scale point for "
        "exact and within-one agreement). Means over persons with percentile-bootstrap 95 % CIs (persons "
        "resampled 2,000 times, seeded).")
    section.note = ("Other persons' twins: for each person the mean over all other matched twins (the person's own "
                    "twin left out), the expected value of pairing each person with a random other twin, without the "
                    "noise of one random draw. Cohort mean: the mean of all matched twins' keyed answers per item "
                    "(the person's own twin counts once among them), halves rounded up. twin_minus_others: own twin − "
                    "other twins per person (paired); its CI excluding 0 is the twin-specific signal. Normalised "
                    "accuracy (Park et al., 2024, arXiv:2411.10109): twin agreement ÷ the person's own retest "
                    "agreement, per person, then averaged; a person whose retest agreement is 0 (or r ≤ 0) has no "
                    "ratio and is counted as not estimable.")
    for inst_id, (instrument, agreement, has_retest) in results.items():
        match = agreement.attrs["match"]
        section.readings.append(twin_match_reading(match, inst_id))
        if not match.matched:
            section.readings.append(f"{inst_id}: not estimable: no persona id is a respondent id of the human data.")
            continue
        summary = twin_summary(agreement)
        for metric in AGREEMENT:
            section.readings.append(_agreement_reading(inst_id, metric, summary))
        for metric in (c for c in agreement.columns if str(c).startswith(ERROR_PREFIX)):
            section.readings.append(_error_reading(inst_id, metric, summary))
        if has_retest:
            section.readings.extend(_retest_readings(inst_id, summary, agreement.attrs["retest_n"],
                                                     len(match.matched)))
        else:
            section.readings.append(f"{inst_id}: {NO_RETEST}")
        section.add_table(f"Twins against their persons and the baselines: {inst_id} (means over persons, "
                          "bootstrap 95 % CI)", summary, view="twin_agreement")
        if len(match.matched) <= PER_PERSON_MAX:
            section.add_table(f"Agreement per person: {inst_id}", _per_person(agreement))
        else:
            section.readings.append(f"{inst_id}: the {len(match.matched)} persons' own values are not tabled here; "
                                    "psyq.twin_agreement gives them.")
    return section


def _value(x: float, metric: str) -> str:
    if metric in ("exact", "within_one"):
        return f"{100 * x:.0f} %"
    return apa.fmt_r(x) if metric == "r" else apa.fmt_num(x)


def _ci(row: pd.Series, metric: str, signed: bool = False) -> str:
    """`value (95 % CI low to high)`, or "not estimable: reason"."""
    if _missing(row["mean"]):
        return str(row["note"]) or "not estimable"
    if metric in ("exact", "within_one") and signed:
        fmt = lambda x: _signed(round(100 * x))   # noqa: E731  percentage points
        unit = " percentage points"
    else:
        fmt = (lambda x: _value(x, metric)) if not signed else (
            lambda x: ("+" if x >= 0 else "") + _value(x, metric))
        unit = ""
    low = "" if _missing(row["ci_low"]) else f" (95 % CI {fmt(row['ci_low'])} to {fmt(row['ci_high'])})"
    return f"{fmt(row['mean'])}{unit}{low}"


def _signed(points: int) -> str:
    """Whole percentage points with a sign, a real minus, and 0 as "0" (never "-0" or "+0").

    Example:
        >>> _signed(3), _signed(0), _signed(-2)
        ('+3', '0', '−2')
    """
    return "0" if points == 0 else f"+{points}" if points > 0 else f"\u2212{-points}"


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _get(summary: pd.DataFrame, metric: str, comparison: str) -> pd.Series | None:
    rows = summary[(summary["metric"] == metric) & (summary["comparison"] == comparison)]
    return rows.iloc[0] if len(rows) else None


def _verdict(diff: pd.Series | None, closer_is_lower: bool = False) -> str:
    """What the own − others difference says."""
    if diff is None or _missing(diff["mean"]):
        return "whether twins match their own person better than others is not estimable" + (
            f" ({diff['note']})" if diff is not None and diff["note"] else "")
    if _missing(diff["ci_low"]):
        return "no CI for the difference"
    better = diff["ci_high"] < 0 if closer_is_lower else diff["ci_low"] > 0
    worse = diff["ci_low"] > 0 if closer_is_lower else diff["ci_high"] < 0
    if better:
        return "twins are closer to their own person than to others (twin-specific signal)"
    if worse:
        return "twins are further from their own person than from others"
    return "the CI includes 0: no twin-specific signal shown"


def _not_estimable(row: pd.Series | None) -> str:
    """" (not estimable for k person(s): reason)" for the own twin's row, when some persons have no value."""
    if row is None or not row["not_estimable"] or _missing(row["mean"]):
        return ""
    reason = str(row["note"] or "missing answers").replace("r not estimable: ", "")
    return f" (not estimable for {int(row['not_estimable'])} person(s): {reason})"


def _comparison_reading(inst_id: str, metric: str, summary: pd.DataFrame, heading: str, mean_label: str,
                        closer_is_lower: bool = False) -> str:
    """One sentence for a metric: own twin, other persons' twins, the cohort mean, own − others."""
    own, others, mean, diff = (_get(summary, metric, c) for c in (TWIN, OTHERS, COHORT_MEAN, DIFFERENCE))
    parts = [f"own twin {_ci(own, metric)}"]
    if others is not None:
        parts.append(f"other persons' twins {_ci(others, metric)}")
    if mean is not None:
        parts.append(f"{mean_label} {_ci(mean, metric)}")
    text = f"{inst_id} {heading}: " + ", ".join(parts)
    if diff is not None:
        text += f"; own − others {_ci(diff, metric, signed=True)}: {_verdict(diff, closer_is_lower=closer_is_lower)}"
    return text + _not_estimable(own) + "."


def _agreement_reading(inst_id: str, metric: str, summary: pd.DataFrame) -> str:
    return _comparison_reading(inst_id, metric, summary, LABEL[metric], "cohort mean answer")


def _error_reading(inst_id: str, metric: str, summary: pd.DataFrame) -> str:
    return _comparison_reading(inst_id, metric, summary,
                               f"{metric.removeprefix(ERROR_PREFIX)}, absolute score error (points)",
                               "cohort mean answers", closer_is_lower=True)


def _retest_readings(inst_id: str, summary: pd.DataFrame, retest_n: int, matched: int) -> list[str]:
    out = [f"{inst_id}: {retest_n} of the {matched} matched persons have retest answers."]
    retest = [f"{LABEL[m].split(' (')[0]} {_ci(r, m)}" for m in AGREEMENT if (r := _get(summary, m, RETEST)) is not None]
    out.append(f"{inst_id} retest (each person against their own second administration): " + ", ".join(retest) + ".")
    parts = []
    for metric in AGREEMENT:
        row = _get(summary, metric, NORMALISED)
        if row is None:
            continue
        text = f"{LABEL[metric].split(' (')[0]} {_ci(row, 'ratio')}, n = {int(row['n'])} persons"
        if row["not_estimable"] and not _missing(row["mean"]):
            text += f" ({int(row['not_estimable'])} not estimable: {row['note']})"
        parts.append(text)
    out.append(f"{inst_id} normalised accuracy (twin ÷ retest per person, then averaged; Park et al., 2024; 1 = as "
               "close as the person to themselves): " + "; ".join(parts) + ".")
    return out


def _per_person(agreement: pd.DataFrame) -> pd.DataFrame:
    """One row per person: items compared, then each agreement metric per comparison."""
    wide = agreement.pivot(index="respondent_id", columns="comparison", values=list(AGREEMENT))
    order = [c for c in (TWIN, OTHERS, COHORT_MEAN, RETEST, NORMALISED) if c in set(agreement["comparison"])]
    wide = wide.reindex(columns=[(m, c) for m in AGREEMENT for c in order])
    wide.columns = [f"{m}_{c}" for m, c in wide.columns]
    items = agreement[agreement["comparison"] == TWIN].set_index("respondent_id")["n_items"]
    return wide.reindex(items.index).reset_index().assign(n_items=items.to_numpy())[
        ["respondent_id", "n_items", *wide.columns]]


class TwinsSection(ReportSection):
    """"Personas and their persons (twins)": each twin against its person, other persons and the
    cohort mean, normalised by the people's retest when given (shown when some persona is a twin,
    or whenever a retest was given)."""

    name = "twins"

    def applies(self, report: ReportContext) -> bool:
        return not report.staged and bool(report.cohort_answers)

    def sections(self, report: ReportContext) -> list[Section]:
        retests = report.retests
        section = twins_section({i: (report.rated[i], cohort, report.human_items[i], retests.get(i))
                                 for i, cohort in report.cohort_answers.items()}, always=bool(retests))
        return [] if section is None else [section]
