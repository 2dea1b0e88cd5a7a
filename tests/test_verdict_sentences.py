"""Every rule that picks a verdict sentence, on hand-made scorecards (analysis/report/sections/verdict.py).

Each test changes one thing a rule reads and checks the sentence follows: which mark makes "can",
"cannot" and "cannot tell yet"; which figure decides a "cannot"; when "no model can stand in" is said;
how many personas would decide it; when a gap is called a response style; who the people are.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from psyq.analysis.report.sections.verdict import personas_to_decide, use_sentences

NAN = float("nan")


def row(group, criterion, mark, subscale="", value=0.0, low=-0.1, high=0.1, people=NAN, note="", instrument="iri"):
    return dict(group=group, instrument=instrument, criterion=criterion, subscale=subscale, value=value, low=low,
                high=high, people=people, mark=mark, level="", note=note)


def sentence(rows, use="Estimating people's subscale means", **kwargs) -> str:
    said = [s for s in use_sentences(pd.DataFrame(rows), **kwargs) if s.startswith(use)]
    assert len(said) == 1, said
    return said[0]


def test_can_stand_in_only_when_every_row_meets():
    meets = [row("a", "level", "meets", s) for s in ("PT", "FS")]
    assert sentence(meets).endswith(": a can stand in.")
    one_unsure = [meets[0], row("a", "level", "inconclusive", "FS", 0.1, -0.1, 0.35)]
    assert "can stand in" not in sentence(one_unsure) and "cannot tell yet" in sentence(one_unsure)
    one_unknown = [meets[0], row("a", "level", "not estimable", "FS", NAN, NAN, NAN, note="no FS answers")]
    said = sentence(one_unknown)
    assert "can stand in" not in said and "not estimable in part: no FS answers" in said


def test_a_use_of_several_criteria_needs_every_one():
    use = "Reproducing people's spread, reliability and factor structure"
    rows = [row("a", "spread", "meets", "PT", 1.0, 0.9, 1.1), row("a", "reliability", "meets", "PT"),
            row("a", "structure", "meets", value=0.95)]
    assert sentence(rows, use).endswith("a can stand in.")
    rows[2] = row("a", "structure", "not estimable", value=NAN, note="the configural model fits poorly")
    assert "can stand in" not in sentence(rows, use)


def test_cannot_names_the_first_criterion_and_its_row_furthest_outside():
    use = "Reproducing people's spread, reliability and factor structure"
    rows = [row("a", "spread", "falls short", "PT", 0.70, 0.60, 0.78),
            row("a", "spread", "falls short", "FS", 1.60, 1.40, 1.80),      # log 1.6/1.25 > log 0.8/0.7
            row("a", "reliability", "falls short", "PT", -0.5, -0.6, -0.4)]
    said = sentence(rows, use)
    assert "no model can stand in (a: SD ratio = 1.60 on FS, 90 % CI 1.40 to 1.80, outside 0.80–1.25)" in said
    level = [row("a", "level", "falls short", "PT", 0.5, 0.35, 0.65), row("a", "level", "falls short", "FS",
                                                                         -0.9, -1.1, -0.7)]
    assert "g = −0.90 on FS" in sentence(level) or "g = -0.90 on FS" in sentence(level)


def test_no_model_can_stand_in_only_when_every_model_falls_short():
    short = row("a", "level", "falls short", "PT", 0.6, 0.5, 0.7)
    assert "no model can stand in" in sentence([short, row("b", "level", "falls short", "PT", 0.5, 0.4, 0.6)])
    # b unknown: a cannot, but "no model" would claim b too.
    said = sentence([short, row("b", "level", "not estimable", "PT", NAN, NAN, NAN, note="no answers")])
    assert "no model can stand in" not in said and "cannot (a: g = 0.60" in said and "not estimable for b" in said
    said = sentence([short, row("b", "level", "inconclusive", "PT", 0.1, -0.1, 0.35)])
    assert "no model can stand in" not in said and "cannot tell yet (b:" in said


def test_cannot_tell_yet_says_how_many_personas_would_decide_it():
    # g = 0.10, 90 % CI −0.12 to 0.32 from 50 personas: 50 · (0.22 / 0.20)² = 60.5 → "about 70" (to 10).
    rows = [row("a", "level", "inconclusive", "PT", 0.10, -0.12, 0.32)]
    said = sentence(rows, sizes={"a": 50}, people_sizes={"iri": 1973})
    assert "cannot tell yet (a: about 70 personas would decide it" in said
    # Of two undecided rows the slower one decides: 0.0 ± 0.4 at 50 needs 50 · (0.4/0.3)² = 88.9 → 90.
    rows.append(row("a", "level", "inconclusive", "FS", 0.0, -0.4, 0.4))
    assert "about 90 personas" in sentence(rows, sizes={"a": 50}, people_sizes={"iri": 1973})
    # Without the cohort's size no number is made up.
    assert "the data cannot decide it yet" in sentence(rows)


def test_a_classifier_too_small_to_decide_asks_for_its_minimum_and_the_people_to_match():
    rows = [row("a", "distinguishable", "inconclusive", "", 0.55, 0.40, 0.70, note="13 per side")]
    personas, people = personas_to_decide(pd.DataFrame(rows), 13, 30, 0.3)
    assert personas >= 50 and people == personas           # balanced: the people are subsampled to match
    said = sentence(rows, "Answering indistinguishably from people", sizes={"a": 13}, people_sizes={"iri": 30})
    assert "personas (and" in said and "people) would decide it" in said
    assert math.isnan(personas_to_decide(pd.DataFrame(rows), 13, 5000, 0.3)[1])


def test_each_sentence_names_the_people():
    rows = [row("a", "level", "meets", "PT")]
    said = sentence(rows, people={"iri": "1,973 healthy young adults in Belgium"})
    assert said.startswith("Estimating people's subscale means (against 1,973 healthy young adults in Belgium): ")


def style_rows(mark_level="falls short", marks=("falls short",) * 2, shares=(0.9, 0.8)):
    rows = [row("a", "level", mark_level, "PT", 0.6, 0.5, 0.7)]
    for sub, mark, share in zip(("PT", "FS"), marks, shares):
        rows.append(row("a", "style", mark, sub, 0.5 if mark == "falls short" else 0.1, 0.4, 0.6, people=share))
    return pd.DataFrame(rows)


def style_said(card: pd.DataFrame) -> bool:
    return any("largely a response style" in s for s in use_sentences(card))


def test_a_gap_is_called_a_response_style_only_when_style_itself_falls_short():
    assert style_said(style_rows())
    assert not style_said(style_rows(mark_level="meets"))                     # no gap to explain
    assert not style_said(style_rows(marks=("inconclusive", "inconclusive")))  # style's interval may hold 0
    assert not style_said(style_rows(shares=(0.9, 0.3)))                      # the keyed shift outweighs it on FS
    # Style meets on FS and falls short on PT with style outweighing there: still style (PT decides).
    assert style_said(style_rows(marks=("falls short", "meets"), shares=(0.9, 0.1)))


def test_one_row_outside_its_region_decides_sooner_than_the_rows_inside():
    # A use falls short as soon as one row does: an estimate outside its region (g = 0.5, 90 % CI
    # 0.2 to 0.8 from 50: 50 · (0.3/0.2)² = 112.5 at 90 %, times (z.975/z.95)² = (1.960/1.645)² for the
    # Bonferroni level of two rows: 159.7) decides before one inside near its bound would meet
    # (0.25 ± 0.1 needs 50 · (0.1/0.05)² = 200): about 200 (to 50), from 159.7.
    rows = [row("a", "level", "inconclusive", "PT", 0.5, 0.2, 0.8), row("a", "level", "inconclusive", "FS",
                                                                         0.25, 0.15, 0.35)]
    personas, _ = personas_to_decide(pd.DataFrame(rows), 50, 1973, 0.3)
    assert personas == pytest.approx(112.5 * (1.959963984540054 / 1.6448536269514722) ** 2)
    rows[1] = row("a", "level", "inconclusive", "FS", 0.25, 0.05, 0.45)          # 50 · (0.2/0.05)² = 800
    assert "about 200 personas would decide it" in sentence(rows, sizes={"a": 50})
    rows[1] = row("a", "level", "inconclusive", "FS", 0.25, 0.15, 0.35)
    # Every estimate inside: the slowest to meet decides.
    assert personas_to_decide(pd.DataFrame(rows[1:]), 50, 1973, 0.3)[0] == pytest.approx(200)
