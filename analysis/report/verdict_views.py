"""The views of the verdict's tables (APA 7th edition style): the scorecard, one row per model (or,
in a run with conditions, per model and condition, the condition's factor levels as columns), and
the conditions compared head to head — each pair's differences in distance from people, the
ranks, and the answer distributions' distances beside the people's own ceiling. Registered by name
in :data:`psyq.analysis.report.views.VIEWS`; nothing here computes.

Example
-------
>>> card = pd.DataFrame({"group": "m", "instrument": "iri", "criterion": "level", "subscale": ["PT", "EC"],
...                      "value": [0.1, -0.5], "low": [0.0, -0.6], "high": [0.2, -0.4], "people": float("nan"),
...                      "mark": ["meets", "falls short"], "level": "", "note": ""})
>>> scorecard_view(card).frame.to_dict("records")
[{'Model': 'm', 'Instrument': 'iri', 'Level (g)': '✗ −0.50 (EC), 1/2 meet'}]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from psyq.analysis.report.apa import DASH, fmt_ci, fmt_int, fmt_num, fmt_r, is_missing
from psyq.analysis.report.tables import NBSP, ApaTable, assemble

SCORECARD_HEADERS = {"level": "Level (g)", "spread": "Spread (SD ratio)", "reliability": "Reliability (Δα)",
                     "structure": "Structure", "latent_mean": "Latent means (d)",
                     "distinguishable": "Distinguishable (AUC)", "style": "Style (points)",
                     "relations": "Relations (difference)", "individuals": "Individuals (twin − others r)",
                     "worth": "Worth (people per person)", "change": "Change (g)", "leas_level": "LEAS level (g)",
                     "accuracy": "Accuracy (g)", "ratings": "Ratings (d)"}
MARK_SIGNS = {"meets": "✓", "falls short": "✗", "inconclusive": "?"}
FACTOR = "factor_"
"""The prefix of a scorecard's (and the answer table's) columns holding a condition's factor levels."""
DISTANCE_HEADERS = {"level": "Level (|g|)", "spread": "Spread (|ln SD ratio|)", "reliability": "Reliability (|Δα|)",
                    "distinguishable": "Distinguishable (AUC − .5)", "style": "Style (|shift|)",
                    "relations": "Relations (|Δr|)", "individuals": "Individuals (1 − gain)", "tvd": "TVD",
                    "w1": "W1"}
PAIRS_SHOWN = 15
"""Up to this many pairs of conditions (six groups) the head-to-head table prints them all; beyond, only
those distinguishable on some criterion (:func:`condition_pairs`)."""


def _worst(criterion: str, rows: pd.DataFrame) -> pd.Series:
    """The row of a subscale criterion furthest from what people show."""
    value = rows["value"].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):     # an SD ratio of 0: infinitely far
        log_ratio = np.log(value).abs()
    far = {"spread": log_ratio, "worth": -value, "distinguishable": value,
           "individuals": -value}.get(criterion, value.abs())
    return rows.loc[far.idxmax()]


def _scorecard_cell(criterion: str, rows: pd.DataFrame) -> str:
    """One criterion of one backend: its mark, the deciding figure and, for subscales, how many meet."""
    estimated = rows[rows["mark"] != "not estimable"]
    if estimated.empty:
        return "not estimable"
    # The rows' marks combined as the verdict combines them (equivalence.combine_marks).
    marks = set(rows["mark"])
    mark = ("falls short" if "falls short" in marks else "meets" if marks == {"meets"} else "inconclusive")
    decided = estimated[estimated["mark"] == mark] if mark != "inconclusive" else estimated
    worst = _worst(criterion, decided if len(decided) else estimated)
    figure = fmt_r(worst["value"]) if criterion == "distinguishable" else fmt_num(worst["value"])
    if criterion == "structure":
        figure = f"{worst['level'] or 'none'}, CFI {fmt_r(worst['value'], 3)}"
    if worst["subscale"]:
        figure += f" ({worst['subscale']})"
    meets = int((estimated["mark"] == "meets").sum())
    count = f", {meets}/{len(rows)} meet" if len(rows) > 1 else ""
    return f"{MARK_SIGNS[mark]} {figure}{count}"


def _condition_columns(frame: pd.DataFrame) -> tuple[dict[str, str], bool]:
    """A scorecard of a run with conditions (its ``condition`` and ``factor_<name>`` columns): the
    factor columns by their headers (the factor's name), and whether the condition's id is shown too
    (when some condition is not just its factor levels: a listed one)."""
    if "condition" not in frame.columns:
        return {}, False
    factors = {c: c[len(FACTOR):] for c in frame.columns if c.startswith(FACTOR)}
    spelled = frame[[*factors, "condition"]].drop_duplicates()
    named = any(str(r["condition"]) != ",".join(f"{name}={r[c]}" for c, name in factors.items() if not is_missing(r[c]))
                for _, r in spelled.iterrows())
    return factors, named or not factors


def scorecard_view(frame: pd.DataFrame) -> ApaTable:
    """The scorecard (:func:`psyq.analysis.statistics.standin.scorecard.scorecard`) as one row per backend and
    instrument, one column per criterion: ✓ when every row meets (its 90 % interval inside the region),
    ✗ when one falls short (wholly outside), ? when the data cannot decide yet, with the figure
    furthest from people's among the rows that decide the mark (and its subscale or effect) and how
    many rows meet. A scorecard of a run with conditions has a row per backend and condition: the
    backend under "Model", then one column per factor holding the condition's level of it (and
    the condition's id, when a condition is listed rather than crossed).

    Example
    -------
    >>> card = pd.DataFrame({"group": ["a · x", "a · y"], "backend_id": "a", "condition": ["x", "y"],
    ...     "factor_asking": ["logprobs", "ssr"], "instrument": "iri", "criterion": "level", "subscale": "PT",
    ...     "value": [0.1, 0.5], "low": [0.0, 0.4], "high": [0.2, 0.6], "people": float("nan"),
    ...     "mark": ["meets", "falls short"], "level": "", "note": ""})
    >>> scorecard_view(card).frame.to_dict("records")
    [{'Model': 'a', 'asking': 'logprobs', 'Condition': 'x', 'Instrument': 'iri', 'Level (g)': '✓ 0.10 (PT)'}, {'Model': 'a', 'asking': 'ssr', 'Condition': 'y', 'Instrument': 'iri', 'Level (g)': '✗ 0.50 (PT)'}]
    """
    factors, named = _condition_columns(frame)
    cells = []
    for (group, inst), part in frame.groupby(["group", "instrument"], sort=False):
        row = {"Model": str(group)}
        if factors or named:
            first = part.iloc[0]
            row["Model"] = str(first["backend_id"])
            row.update({name: "" if is_missing(first[c]) else str(first[c]) for c, name in factors.items()})
            if named:
                row["Condition"] = str(first["condition"])
        row["Instrument"] = str(inst)
        for criterion, rows in part.groupby("criterion", sort=False):
            row[SCORECARD_HEADERS.get(criterion, criterion)] = _scorecard_cell(criterion, rows)
        cells.append(row)
    notes = ["✓ every row meets (its 90 % interval inside the region); ✗ at least one falls short (wholly "
             "outside); ? the data cannot decide yet (an interval astride a bound); the figure is the one furthest "
             "from people's among the rows deciding the mark, with its subscale or effect; not estimable: see the "
             "full table's note column."]
    return ApaTable(pd.DataFrame(cells).fillna(""), notes)


def condition_pairs(comparison: pd.DataFrame) -> ApaTable:
    """The conditions head to head (:func:`psyq.compare_conditions`) as one row per pair, one column
    per criterion: the difference in distance from people, A − B (negative: A closer), the condition
    distinguishably closer (Holm-adjusted p < .05) named after it, then its 95 % interval. Beyond
    :data:`PAIRS_SHOWN` pairs (seven groups and more) only the pairs distinguishable on some criterion are
    printed, so that the table is read for what differs; the note says how many are left out, and the
    full table (behind the printed one, and its CSV file) holds every pair.

    Example
    -------
    >>> pairs = pd.DataFrame({"criterion": ["level", "tvd"], "condition_a": "a", "condition_b": "b",
    ...     "difference": [-0.3, -0.01], "low": [-0.5, -0.03], "high": [-0.1, 0.01], "p_holm": [0.01, 0.4],
    ...     "distinguishable": [True, False], "closer": ["a", ""]})
    >>> condition_pairs(pairs).frame.to_dict("records")[0]["Level (|g|)"].replace("\\xa0", " ")
    '−0.30 A [−0.50, −0.10]'
    """
    cells = {}
    apart = set()
    for r in comparison.itertuples():
        row = cells.setdefault((r.condition_a, r.condition_b), {"A": str(r.condition_a), "B": str(r.condition_b)})
        closer = ("A" if r.closer == r.condition_a else "B") if r.distinguishable else ""
        # The closer one's letter beside the difference, the interval after: a narrow cell breaks between them.
        row[DISTANCE_HEADERS.get(r.criterion, r.criterion)] = DASH if is_missing(r.difference) else (
            fmt_num(r.difference) + (f"{NBSP}{closer}" if closer else "")
            + ("" if is_missing(r.low) else f" {fmt_ci(r.low, r.high)}"))
        if r.distinguishable:
            apart.add((r.condition_a, r.condition_b))
    notes = ["Each cell: the difference of the two conditions' distances from people, A − B (negative: A is "
             "closer to people), with its 95 % interval (bootstrap: people resampled once and shared, the same "
             "personas resampled together); A or B after the difference: that condition is distinguishably closer "
             "(Holm-adjusted p < .05 over every pair and criterion). The full table gives each distance, p and "
             "Holm's p."]
    shown = list(cells)
    if len(cells) > PAIRS_SHOWN and apart:
        shown = [pair for pair in cells if pair in apart]
        notes.append(f"Shown: the {len(shown)} pairs distinguishable on at least one criterion; the other "
                     f"{len(cells) - len(shown)} of the {len(cells)} pairs, distinguishable on none, are in the full "
                     "table with every pair (below it, and in its CSV file).")
    return ApaTable(pd.DataFrame([cells[pair] for pair in shown]).fillna(DASH), notes)


def condition_ranks(ranks: pd.DataFrame) -> ApaTable:
    """The conditions ranked per criterion (:func:`psyq.rank_conditions`): one row per condition (in
    the order of the first criterion), one column per criterion, its rank and distance from people;
    conditions share a rank unless one is distinguishably closer.

    Example
    -------
    >>> ranks = pd.DataFrame({"criterion": "level", "condition": ["a", "b"], "distance": [0.1, 0.4],
    ...                       "rank": [1, 2], "ahead_of_next": [True, False], "note": ""})
    >>> condition_ranks(ranks).frame.to_dict("records")
    [{'Condition': 'a', 'Level (|g|)': '1 (0.10)'}, {'Condition': 'b', 'Level (|g|)': '2 (0.40)'}]
    """
    cells: dict[str, dict[str, str]] = {}
    for r in ranks.itertuples():
        row = cells.setdefault(str(r.condition), {"Condition": str(r.condition)})
        row[DISTANCE_HEADERS.get(r.criterion, r.criterion)] = (
            "not estimable" if is_missing(r.rank) else f"{fmt_int(r.rank)} ({fmt_num(r.distance)})")
    notes = ["Each cell: the condition's rank on the criterion (1 = closest to people) and its distance from people; "
             "conditions share a rank unless one is distinguishably closer (Holm-adjusted p < .05), so a rank is "
             "1 + the number of conditions distinguishably closer."]
    return ApaTable(pd.DataFrame(list(cells.values())).fillna(DASH), notes)


def condition_distances(summary: pd.DataFrame) -> ApaTable:
    """Each condition's answer distributions against the people's, averaged over the items
    (:func:`psyq.distribution_distances`): TVD and Wasserstein-1 with their 95 % intervals, the
    people's own split-half value beside each (the ceiling: what two halves of the people differ by
    through sampling alone), and SimBench's score with its ceiling.

    Example
    -------
    >>> summary = pd.DataFrame({"condition": ["a"], "n": [20], "items": [28], "tvd": [0.21], "tvd_low": [0.18],
    ...     "tvd_high": [0.25], "ceiling_tvd": [0.04], "w1": [0.5], "w1_low": [0.4], "w1_high": [0.6],
    ...     "ceiling_w1": [0.08], "score": [31.0], "score_ceiling": [88.0]})
    >>> list(condition_distances(summary).frame.columns)
    ['Condition', 'n', 'TVD [95 % CI]', 'TVD ceiling', 'W1 [95 % CI]', 'W1 ceiling', 'SimBench score', 'score ceiling']
    """
    def with_ci(key: str):
        return lambda r: DASH if is_missing(r[key]) else f"{fmt_num(r[key])} {fmt_ci(r[f'{key}_low'], r[f'{key}_high'])}"

    notes = ["Means over the items of each item's total variation distance (½·Σ|p − q|, SimBench's) and "
             "Wasserstein-1 (scale points) between the condition's answers and the people's, with percentile "
             "bootstrap intervals (near 0 a distance is biased upwards, and its interval may lie above it); the ceiling is the people's own split-half value, the distance two random "
             "halves of the people show through sampling alone; SimBench's score is 100·(1 − TVD / TVD of uniform "
             "answers), 100 = the people's distribution, 0 = no closer than answering at random."]
    return assemble(summary, {
        "Condition": lambda r: str(r["condition"]), "n": lambda r: fmt_int(r["n"]),
        "TVD [95 % CI]": with_ci("tvd"), "TVD ceiling": lambda r: fmt_num(r["ceiling_tvd"]),
        "W1 [95 % CI]": with_ci("w1"), "W1 ceiling": lambda r: fmt_num(r["ceiling_w1"]),
        "SimBench score": lambda r: fmt_num(r["score"], 1), "score ceiling": lambda r: fmt_num(r["score_ceiling"], 1),
    }, {}, notes)


__all__ = ["MARK_SIGNS", "SCORECARD_HEADERS", "condition_distances", "condition_pairs", "condition_ranks",
           "scorecard_view"]
