"""The agreement of LEAS scores from the lexicon, a judge model and people (issue 56): Cohen's
weighted κ, exact agreement, r and ICC for every pair of sources, the report's table of them, and
the judge's rubric stating the rules the lexicon follows.

κ is checked against an independent computation, ``sklearn.metrics.cohen_kappa_score``, against the
values Cohen (1968) publishes for his Table 1 (κ = .492; κ_w = .348 with his disagreement weights
1, 3, 6; the same table and values are in the examples of R's psych::cohen.kappa), and against R
4.2.2 psych 2.2.9 ``cohen.kappa`` on LEAS levels (tests/data/weighted_kappa_psych.R, its output
tests/data/weighted_kappa_psych.txt; the suite does not need R). The run's pairs are counted by
hand from the scripted answers, the stub judge's levels and the people's sheets filled in below.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import numpy as np
import openpyxl
import pandas as pd
import pytest
import yaml
from sklearn.metrics import cohen_kappa_score

from psyq.analysis.report import build_sections
from psyq.analysis.statistics.agreement import KAPPA_WEIGHTS, kappa_from_table, weighted_kappa
from psyq.analysis.statistics.lexicon_agreement import SOURCE_AGREEMENT_COLUMNS, source_agreement
from psyq.cli import main
from psyq.engine.backends import BackendConfig
from psyq.engine.judging.answer_judge import judge_run, load_rubric
from psyq.engine.kinds.scene import scene_answer_levels
from psyq.engine.kinds.scene.leas import DEFAULT_LEXICON, load_lexicon, score_answer
from psyq.engine.results.run import open_run
from stub_server import StubServer
from test_leas_patterns import flaggy_run

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
LEVELS = [0, 1, 2, 3, 4]
SKLEARN_WEIGHTS = {"none": None, "linear": "linear", "quadratic": "quadratic"}


# --- weighted κ -----------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weights", KAPPA_WEIGHTS)
def test_weighted_kappa_is_sklearns_over_every_level(seed, weights):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 5, size=40)
    b = np.clip(a + rng.integers(-2, 3, size=40) * (rng.random(40) < 0.5), 0, 4)   # agreeing half the time
    expected = cohen_kappa_score(a, b, weights=SKLEARN_WEIGHTS[weights], labels=LEVELS)
    assert weighted_kappa(a, b, weights) == pytest.approx(expected, abs=1e-12)


def test_weights_are_the_levels_distance_even_with_a_level_unused():
    # No answer at level 1: 0 against 2 is still two levels apart. sklearn agrees when told every
    # level; without labels it counts the steps between the labels it sees, one here.
    a = [0, 2, 3, 4, 3, 0, 2, 4]
    b = [2, 2, 3, 3, 4, 0, 0, 4]
    ours = weighted_kappa(a, b, "linear")
    assert ours == pytest.approx(cohen_kappa_score(a, b, weights="linear", labels=LEVELS), abs=1e-12)
    assert ours != pytest.approx(cohen_kappa_score(a, b, weights="linear"), abs=1e-3)


def test_cohen_1968_table_1():
    # Cohen (1968), Table 1: proportions of 200 cases (judge B rows, judge A columns) and his
    # disagreement weights; he reports κ = .492 and κ_w = .348.
    table = [[.44, .07, .09], [.05, .20, .05], [.01, .03, .06]]
    weights = [[0, 1, 3], [1, 0, 6], [3, 6, 0]]
    assert round(kappa_from_table(table, weights), 3) == 0.348
    assert round(kappa_from_table(table, 1 - np.eye(3)), 3) == 0.492
    assert kappa_from_table(np.asarray(table) * 200, weights) == pytest.approx(kappa_from_table(table, weights))


def r_psych_values() -> dict[str, dict[str, float]]:
    """tests/data/weighted_kappa_psych.txt: name -> statistic -> value."""
    out = {}
    for line in (DATA / "weighted_kappa_psych.txt").read_text().splitlines()[1:]:
        name, *rest = line.split()
        out[name] = {k: float(v) for k, v in zip(rest[::2], rest[1::2])}
    return out


def test_against_r_psych_cohen_kappa():
    r = r_psych_values()
    # The same data as tests/data/weighted_kappa_psych.R.
    a = np.array([0, 1, 2, 3, 4, 3, 3, 4, 2, 1, 0, 3, 4, 4, 3, 2, 3, 1, 4, 3])
    b = np.array([0, 2, 2, 3, 3, 3, 4, 4, 1, 1, 0, 3, 4, 3, 3, 3, 2, 1, 4, 4])
    table = [[.44, .07, .09], [.05, .20, .05], [.01, .03, .06]]
    assert kappa_from_table(table, [[0, 1, 3], [1, 0, 6], [3, 6, 0]]) == pytest.approx(r["cohen1968"]["weighted"], abs=1e-6)
    assert kappa_from_table(table, 1 - np.eye(3)) == pytest.approx(r["cohen1968"]["kappa"], abs=1e-6)
    for name, (x, y) in {"leas20": (a, b), "leas20_no1": (np.where(a == 1, 0, a), np.where(b == 1, 0, b))}.items():
        got = {"unweighted": weighted_kappa(x, y, "none"), "linear": weighted_kappa(x, y, "linear"),
               "quadratic": weighted_kappa(x, y, "quadratic")}
        assert got == pytest.approx(r[name], abs=1e-6)


def test_kappa_is_not_estimable_when_a_scorer_gives_one_level():
    assert np.isnan(weighted_kappa([3, 3, 3, 3], [2, 3, 4, 3]))
    assert np.isnan(weighted_kappa([], []))
    assert np.isnan(weighted_kappa([1, np.nan], [np.nan, 2]))
    assert weighted_kappa([1, 2, np.nan, 3], [1, 2, 0, 3]) == 1.0         # a pair with a missing level dropped
    with pytest.raises(ValueError, match="weights must be one of"):
        weighted_kappa([1, 2], [1, 2], "cubic")


# --- the frame of every pair of sources -----------------------------------------------------------

KEYS = {"backend_id": "b", "respondent_id": "r", "repeat": 0, "instrument": "leas"}


def lexicon_frame(levels: dict[str, int]) -> pd.DataFrame:
    return pd.DataFrame({**KEYS, "item_id": list(levels), "lexicon_level": list(levels.values())})


def judged(source: str, levels: dict[str, int | None]) -> pd.DataFrame:
    people = source.startswith("people:")
    return pd.DataFrame({**KEYS, "item_id": list(levels), "judge_id": source if people else source.split(":", 1)[1],
                         "answer_mode": "people" if people else "json", "rubric_id": "leas_level",
                         "level": [np.nan if v is None else v for v in levels.values()],
                         "status": ["answered" if v is not None else "missing" for v in levels.values()]})


def test_every_pair_of_sources_with_people_pooled_and_what_is_not_estimable():
    lexicon = lexicon_frame({"s1:self": 1, "s1:other": 4, "s2:self": 3, "s2:other": 3, "s3:self": 2})
    judgements = pd.concat([
        judged("judge:m", {"s1:self": 1, "s1:other": 3, "s2:self": 3, "s2:other": 3, "s3:self": 0}),
        judged("people:h1", {"s1:self": 1, "s1:other": 4, "s2:self": 3}),
        judged("people:h2", {"s1:self": 2, "s1:other": 4, "s2:self": None}),   # one cell left empty
        judged("people:h3", {"s3:self": 3}),
    ], ignore_index=True)
    got = source_agreement(lexicon, judgements)
    assert list(got.columns) == SOURCE_AGREEMENT_COLUMNS
    pairs = {(a, b): row for a, b, row in zip(got["source_a"], got["source_b"], got.itertuples())}
    assert list(pairs) == [
        ("lexicon", "judge:m"), ("lexicon", "people:h1"), ("lexicon", "people:h2"), ("lexicon", "people:h3"),
        ("lexicon", "people:all"), ("judge:m", "people:h1"), ("judge:m", "people:h2"), ("judge:m", "people:h3"),
        ("judge:m", "people:all"), ("people:h1", "people:h2"), ("people:h1", "people:h3"), ("people:h2", "people:h3")]
    assert {k: v.n for k, v in pairs.items()} == {
        ("lexicon", "judge:m"): 5, ("lexicon", "people:h1"): 3, ("lexicon", "people:h2"): 2, ("lexicon", "people:h3"): 1,
        ("lexicon", "people:all"): 6, ("judge:m", "people:h1"): 3, ("judge:m", "people:h2"): 2,
        ("judge:m", "people:h3"): 1, ("judge:m", "people:all"): 6, ("people:h1", "people:h2"): 2,
        ("people:h1", "people:h3"): 0, ("people:h2", "people:h3"): 0}
    # lexicon against the judge: levels (1,1) (4,3) (3,3) (3,3) (2,0): 3 of 5 equal, 4 within one.
    lj = pairs[("lexicon", "judge:m")]
    assert (lj.exact, lj.within_one) == (pytest.approx(3 / 5), pytest.approx(4 / 5))
    for column, weights in (("kappa_linear", "linear"), ("kappa_quadratic", "quadratic")):
        assert getattr(lj, column) == pytest.approx(cohen_kappa_score([1, 4, 3, 3, 2], [1, 3, 3, 3, 0], weights=weights,
                                                                      labels=LEVELS))
    assert lj.r == pytest.approx(np.corrcoef([1, 4, 3, 3, 2], [1, 3, 3, 3, 0])[0, 1]) and lj.note == ""
    # Pooled: every person's level one pair with the lexicon's: h1 (1,1) (4,4) (3,3), h2 (1,2) (4,4),
    # h3 (2,3): 6 levels of 4 answers, 4 equal.
    pooled = pairs[("lexicon", "people:all")]
    assert pooled.exact == pytest.approx(4 / 6)
    assert pooled.kappa_linear == pytest.approx(cohen_kappa_score([1, 4, 3, 1, 4, 2], [1, 4, 3, 2, 4, 3],
                                                                  weights="linear", labels=LEVELS))
    assert "people:all: 6 levels of 4 answers" in pooled.note
    # Two pairs only: κ, but no r or ICC.
    two = pairs[("lexicon", "people:h2")]
    assert two.kappa_linear == pytest.approx(cohen_kappa_score([1, 4], [2, 4], weights="linear", labels=LEVELS))
    assert np.isnan(two.r) and np.isnan(two.icc) and two.note == "r and ICC not estimable: 2 answers scored by both, fewer than 3"
    # One pair: a source with one level, so κ, r and ICC are not estimable, and why.
    one = pairs[("lexicon", "people:h3")]
    assert one.exact == 0 and np.isnan(one.kappa_linear) and np.isnan(one.kappa_quadratic) and np.isnan(one.r)
    assert one.note == "κ, r and ICC not estimable: lexicon gives every answer level 2 and people:h3 gives every answer level 3"
    none = pairs[("people:h1", "people:h3")]
    assert np.isnan(none.exact) and np.isnan(none.kappa_linear) and none.note == "not estimable: no answer scored by both"


def test_one_person_is_not_pooled_and_no_judgement_gives_no_pair():
    lexicon = lexicon_frame({"s1:self": 1, "s1:other": 4})
    got = source_agreement(lexicon, judged("people:h1", {"s1:self": 1, "s1:other": 4}))
    assert got[["source_a", "source_b", "n"]].values.tolist() == [["lexicon", "people:h1", 2]]
    assert source_agreement(lexicon, judged("people:h1", {"s1:self": None})).empty


# --- a run: lexicon, a stub judge and people's sheets, in the report ------------------------------

# The stub judge's level of each answer of test_leas_patterns.FLAGGY: a judge that differs from the
# lexicon on some answers, so that κ is not 1.
JUDGE_LEVELS = {"Hurt? Not really. Just tired.": 1, "embarrassed, and sorry.": 3, "Furious, and she'd be smug.": 3,
                "smug.": 2, "Delighted and excited.": 4, "tired but happy.": 3}


def json_judge(body) -> str:
    answer = body["messages"][-1]["content"].split('Answer: "', 1)[1].split('"\n', 1)[0]
    return json.dumps({"level": JUDGE_LEVELS[answer]})


def fill_sheet(run_path: Path, path: Path, rater: str, levels: dict[str, int]) -> None:
    """The sheet of the flagged answers, written by psyq, filled in by `rater` and read back."""
    assert main(["rating-sheet", str(run_path), str(path), "--rubric", "leas_level", "--flagged"]) == 0
    book = openpyxl.load_workbook(path)
    page = book["ratings"]
    for k in range(2, page.max_row + 1):
        page[f"A{k}"].value, page[f"E{k}"].value = rater, str(levels[page[f"D{k}"].value])
    book.save(path)
    assert main(["import", "ratings", str(path), "--run", str(run_path), "--rubric", "leas_level"]) == 0


def agreement_table(run_path: Path) -> tuple[pd.DataFrame, list[str]]:
    _, sections = build_sections(run_path)
    leas = next(s for s in sections if s.title.startswith("Emotional awareness"))
    table = next(t.frame for t in leas.tables
                 if t.caption.startswith("Agreement of LEAS scores: lexicon, judge and people"))
    return table, leas.readings


def test_lexicon_judge_and_people_agreement_in_the_report(tmp_path):
    run_path = flaggy_run(tmp_path)
    with StubServer(answer=json_judge) as stub:
        config = BackendConfig(id="judge", kind="openai", base_url=stub.url, model="stub-model", max_retries=0,
                               timeout_s=2)
        result = asyncio.run(judge_run(run_path, config, load_rubric("leas_level"), "json", log=lambda m: None))
    assert result.counts == {"answered": 6}
    # The flagged answers (test_leas_patterns: s1:self taken back, s2:self the other's feeling).
    fill_sheet(run_path, tmp_path / "h1.xlsx", "h1", {"Hurt? Not really. Just tired.": 1,
                                                      "Furious, and she'd be smug.": 3})
    table, readings = agreement_table(run_path)
    assert table[["source_a", "source_b", "n"]].values.tolist() == [
        ["lexicon", "judge:judge", 6], ["lexicon", "people:h1", 2], ["judge:judge", "people:h1", 2]]
    # Every number from the sources themselves: the run's lexicon levels and the stored judgements.
    run = open_run(run_path)
    lexicon = scene_answer_levels(run.answers(), run.instruments).set_index("item_id")["leas_level"]
    judge = run.judgements[run.judgements["judge_id"] == "judge"].set_index("item_id")["level"]
    items = list(lexicon.index)
    x, y = lexicon[items].to_numpy(), judge[items].to_numpy()
    first = table.iloc[0]
    assert first["exact"] == pytest.approx(np.mean(x == y))
    assert first["kappa_linear"] == pytest.approx(cohen_kappa_score(x, y, weights="linear", labels=LEVELS))
    assert first["kappa_quadratic"] == pytest.approx(cohen_kappa_score(x, y, weights="quadratic", labels=LEVELS))
    # h1 gives the flagged two 1 and 3, as the lexicon and the judge do: exact 1, κ 1, r not estimable.
    assert table.iloc[1][["exact", "kappa_linear"]].tolist() == [1.0, 1.0] and np.isnan(table.iloc[1]["r"])
    assert any(re.search(r"^The lexicon and judge 'judge' give the same level to \d+ % of 6 answers .*"
                         r"weighted κ = \S+ \(linear weights; quadratic", r) for r in readings)
    assert any(r.startswith("The lexicon and person 'h1' give the same level to 100 % of 2 answers") for r in readings)
    # A second person: each person, the people pooled, and the two people against each other.
    fill_sheet(run_path, tmp_path / "h2.xlsx", "h2", {"Hurt? Not really. Just tired.": 2,
                                                      "Furious, and she'd be smug.": 3})
    table, readings = agreement_table(run_path)
    assert table[["source_a", "source_b", "n"]].values.tolist() == [
        ["lexicon", "judge:judge", 6], ["lexicon", "people:h1", 2], ["lexicon", "people:h2", 2],
        ["lexicon", "people:all", 4], ["judge:judge", "people:h1", 2], ["judge:judge", "people:h2", 2],
        ["judge:judge", "people:all", 4], ["people:h1", "people:h2", 2]]
    pooled = table.set_index(["source_a", "source_b"]).loc[("lexicon", "people:all")]
    # lexicon (1, 3) against h1 (1, 3) and h2 (2, 3): 3 of 4 pairs equal.
    assert pooled["exact"] == pytest.approx(3 / 4)
    assert pooled["kappa_linear"] == pytest.approx(cohen_kappa_score([1, 3, 1, 3], [1, 3, 2, 3], weights="linear",
                                                                     labels=LEVELS))
    assert any(r.startswith("The lexicon and all people pooled give the same level to 75 % of 4 pairs of levels")
               for r in readings)


# --- the judge's rubric states the lexicon's rules ------------------------------------------------

# Examples the rubric quotes with the level its rules give them (role: the question answered), each
# scored the same by the lexicon.
RUBRIC_EXAMPLES = [
    ("I'd think it was unfair", "self", 0),                        # a thought
    ("I wouldn't feel the slightest bit of guilt", "self", 0),     # negation
    ("not angry, sad or scared", "self", 0),
    ("I can't say I'd be thrilled", "self", 0),                    # understatement
    ("I have never been so scared", "self", 3),                    # emphatic, not negation
    ("I couldn't be happier", "self", 3),
    ("Angry? Not really.", "self", 0),                             # taken back
    ("Yeah right, like I'd be grateful", "self", 0),               # irony
    ("a mad rush", "self", 0),                                     # another sense
    ("happy to help", "self", 0),
    ("she'd be furious", "self", 0),                               # whose feeling
    ("She'd be hurt; I'd be livid", "other", 3),                   # hurt, hers; livid, the answerer's
    ("I'd be livid", "other", 0),                                  # "I" is the answerer, even alone
    ("I'm so proud of you", "other", 0),
    ("If I were her, I'd be hurt", "other", 3),                    # taking her place in words
    ("You would feel relieved", "self", 3),                        # "you" addressed to the answerer
    ("gutted... devastated", "self", 3),                           # near-synonyms: one emotion
    ("my stomach would drop", "self", 1),                          # bodily
    ("mouth bone dry", "self", 1),
    ("seeing red", "self", 3),                                     # an idiom naming an emotion
    ("embarassed", "self", 3),                                     # misspelt
    ("As an AI I don't have feelings of fear", "self", 0),         # an AI disowning feelings
    ("angry and hurt", "self", 4),
]


@pytest.mark.parametrize("text, role, level", RUBRIC_EXAMPLES)
def test_the_rubric_quotes_examples_the_lexicon_scores_alike(text, role, level):
    rubric = load_rubric("leas_level")
    said = " ".join((rubric.spec.system + " " + " ".join(rubric.spec.levels.values())).split())
    assert text in said
    assert score_answer(text, load_lexicon(DEFAULT_LEXICON), role).level == level


def test_the_rubric_states_each_rule_and_stays_one_dimension():
    spec = yaml.safe_load((ROOT / "instruments" / "rubrics" / "leas_level.yaml").read_text())
    assert spec["psyq"] == "rubric/1" and sorted(spec["levels"]) == LEVELS and spec["content_source"] == "psyq"
    system = " ".join(spec["system"].split())
    for rule in ["Whose feeling", "Negation", "taken back", "Irony", "another sense", "Near-synonyms",
                 "Bodily sensations and bodily idioms are level 1", "scores 0", "misspelled"]:
        assert rule in system, rule
    assert "Ours" in (ROOT / "instruments" / "rubrics" / "leas_level.yaml").read_text().splitlines()[1]
