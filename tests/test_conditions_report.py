"""The report of a run with conditions (issue 54, items 4 and 5): a study of 2 backends × 3 ways of
asking (logprobs, verbalized, ssr) × 2 persona templates against the stub server
(tests/stub_server.py: chat completions with log probabilities and embeddings in the shapes OpenAI
documents), killed midway and resumed with nothing resent, reported against the shipped Briganti
people: 12 groups of answers on the scorecard with their factors as columns, every pair head to
head, the ranks, the item distances, the figure and the verdict's most people-like condition.

Known answers at the report level (the statistics' own are in tests/test_conditions_compare.py):
the stub answers by the persona template and the backend, whatever the way of asking — backend a
with the plain template as people do (persona k gives the answers of one of 60 people drawn from the
shipped 1,973, a different one per way of asking), backend a with the eager template the same a
point up (clipped at E), backend b uniform answers (a hash of persona, item, template and way of
asking). Each way of asking conveys the same answer: the answer token's probability (logprobs), a
stated distribution (verbalized) or free text whose embedding is the anchor statements' of that
option (ssr). The people's population distances order them drawn < shifted < uniform on level
(tests/test_conditions_compare.py); here the three kinds of group must come out in that order on
level, and the drawn ones distinguishably closer than the shifted on TVD.
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from psyq import human_data, load_instrument
from psyq.analysis.report.context import ConditionGroup, as_condition_groups, condition_groups
from psyq.analysis.report.readings import most_people_like
from psyq.analysis.report.sections.verdict import CONDITION_USES, NOT_COMPARED, with_condition_columns
from psyq.analysis.report.verdict_views import scorecard_view
from psyq.analysis.statistics.standin.scorecard import COLUMNS as SCORECARD_COLUMNS
from psyq.engine.design.anchors import load_anchors
from cli_helper import psyq_in_process
from stub_server import StubServer, hashed_embedding

ROOT = Path(__file__).resolve().parents[1]
IRI = load_instrument("iri")
ITEMS = {i.text: i.id for i in IRI.rating_items}
LETTERS = "ABCDE"
ASKINGS = ("logprobs", "verbalized", "ssr")
TEMPLATES = {"plain": "You are {id}. Answer as yourself.", "eager": "You are {id}, eager to agree. Answer as yourself."}
N = 20                                   # personas: 12 groups × 20 × 28 items = 6,720 trials
PAIRS = 12 * 11 // 2


def people() -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(IRI)


class Script:
    """What the stub answers (module docstring): the option each request is to convey, and that
    option in the form of each way of asking."""

    def __init__(self):
        drawn = people().sample(n=3 * N, random_state=54)
        self.rows = drawn[[i.id for i in IRI.rating_items]].to_numpy(dtype=int)
        self.vectors = {f"answer {v}": np.eye(5)[v].tolist() for v in range(5)}
        for anchor_set in load_anchors("iri_describes_me").sets:        # each statement: its option's axis
            self.vectors.update({text: np.eye(5)[int(v)].tolist() for v, text in anchor_set.statements.items()})

    def option(self, body: dict) -> int:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        persona = int(re.match(r"You are p(\d+)", system).group(1))
        item = ITEMS[user.split("Statement: ")[1].split("\n")[0]]
        asking = "logprobs" if body.get("logprobs") else "ssr" if "own words" in user else "verbalized"
        if body["model"] == "model-b":
            return hashlib.sha256(f"{persona} {item} {asking} {system}".encode()).digest()[0] % 5
        value = int(self.rows[ASKINGS.index(asking) * N + persona][[i.id for i in IRI.rating_items].index(item)])
        return min(value + 1, 4) if "eager to agree" in system else value

    def answer(self, body: dict) -> str:
        v = self.option(body)
        if body.get("logprobs"):
            return LETTERS[v]
        if "own words" in body["messages"][1]["content"]:
            return f"answer {v}"
        return json.dumps({letter: 0.6 if k == v else 0.1 for k, letter in enumerate(LETTERS)})

    def distribution(self, body: dict) -> list[tuple[str, float]]:
        v = self.option(body)
        return [(LETTERS[v], 0.9)] + [(letter, 0.025) for k, letter in enumerate(LETTERS) if k != v]

    def embedding(self, text: str) -> list[float]:
        return self.vectors.get(text) or hashed_embedding(text, 5)


def write_study(folder: Path, url: str) -> Path:
    (folder / "cohort.yaml").write_text(yaml.safe_dump({
        "psyq": "cohort/1", "id": "twenty", "template": "You are {id}.", "include_baseline": False,
        "personas": [{"id": f"p{k:02d}"} for k in range(N)]}))
    backend = {"kind": "openai", "base_url": url, "concurrency": 4, "max_retries": 2, "backoff_s": 0.01, "timeout_s": 10}
    study = {"psyq": "study/1", "id": "conditions_report", "instruments": ["iri"], "cohort": "cohort.yaml",
             "backends": [{"id": "stub_a", "model": "model-a", **backend}, {"id": "stub_b", "model": "model-b", **backend}],
             "protocol": {"presentation": "per_item", "option_order": "as_written", "logprob_answer": "most_likely",
                          "seed": 3, "ssr": {"anchors": ["iri_describes_me"],
                                             "embeddings": {"base_url": url, "model": "embed-small"}}},
             "conditions": {"cross": {"asking": {a: {"protocol": {"answer": a}} for a in ASKINGS},
                                      "persona": {name: {"template": t} for name, t in TEMPLATES.items()}}}}
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def _stored(db: Path) -> dict[str, tuple[str, str]]:
    """trial id -> (its status, its model and the messages it sent), of every trial stored (an ssr
    trial's free text waits, its trial 'missing', until the run's replies are all in and mapped)."""
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT trial_id, status, model, request FROM trials").fetchall()
    return {t: (status, sent(model, json.loads(req)["messages"])) for t, status, model, req in rows}


def sent(model: str, messages: list) -> str:
    """A request as the stub's record and the store both say it: the model asked, and the messages
    (the same messages go to both backends)."""
    return json.dumps([model, messages])


def _count(db: Path | None) -> int:
    try:
        with sqlite3.connect(db) as c:
            return c.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    except (sqlite3.Error, TypeError):
        return 0


@pytest.fixture(scope="module")
def reported(tmp_path_factory) -> dict:
    """The study run by `psyq run` in its own process, SIGKILLed midway, run again to the end, then
    reported with the shipped people; what the stub received before and after the kill."""
    tmp = tmp_path_factory.mktemp("conditions_report")
    script = Script()
    with StubServer(answer=script.answer, distribution=script.distribution, embedding=script.embedding) as stub:
        study = write_study(tmp, stub.url)
        cmd = [sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir", str(tmp / "runs")]
        runner = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        db, deadline = None, time.monotonic() + 60
        while time.monotonic() < deadline and runner.poll() is None:   # until some, not all, trials are stored
            db = next((tmp / "runs").rglob("run.sqlite"), None) if (tmp / "runs").exists() else None
            if _count(db) >= 600:
                break
            time.sleep(0.02)
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        before, sent_before = _stored(db), len(stub.requests)
        done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        requests = list(stub.requests)
    run = db.parent
    report = psyq_in_process("report", run, "--human", "iri=iri_briganti2018_keyed:keyed")
    assert report.returncode == 0, report.stderr
    return {"run": run, "before": before, "after": _stored(db), "requests": requests, "sent_before": sent_before}


def table(reported: dict, caption_start: str) -> pd.DataFrame:
    """The CSV of the report's table whose file name starts with `caption_start` (its caption, slugged)."""
    found = sorted((reported["run"] / "report_tables").glob(f"table*_{caption_start}*.csv"))
    assert len(found) == 1, found
    return pd.read_csv(found[0], keep_default_na=False, na_values=[""])


def test_killed_midway_and_resumed_nothing_is_sent_twice(reported):
    before, after = reported["before"], reported["after"]
    assert 600 <= len(before) < 12 * N * 28 and len(after) == 12 * N * 28 and set(before) <= set(after)
    assert {status for status, _ in after.values()} == {"answered"}
    chats = [r for r in reported["requests"] if r.path.endswith("/chat/completions")]
    later = [sent(r.body["model"], r.body["messages"]) for r in reported["requests"][reported["sent_before"]:]
             if r.path.endswith("/chat/completions")]
    assert not set(later) & {messages for _, messages in before.values()}   # nothing stored before the kill asked again
    assert len(later) == len(set(later)) == len(after) - len(before)   # each unanswered trial once
    assert len(chats) <= 12 * N * 28 + 40                  # at most the requests in flight at the kill, twice
    # The embeddings: every text once over both runs (the store keeps each one it was given).
    texts = [t for r in reported["requests"] if r.path.endswith("/embeddings") and r.outcome == "ok"
             for t in r.body["input"]]
    assert len(texts) == len(set(texts)) == 15 + 5         # 15 anchor statements and the 5 answers' texts


def test_the_scorecard_has_a_row_per_backend_and_condition_with_the_factors_as_columns(reported):
    card = table(reported, "scorecard")
    assert list(card.columns[:6]) == ["group", "backend_id", "condition", "factor_asking", "factor_persona",
                                      "instrument"]
    groups = card[["group", "backend_id", "condition", "factor_asking", "factor_persona"]].drop_duplicates()
    assert len(groups) == 12
    assert set(zip(groups["backend_id"], groups["factor_asking"], groups["factor_persona"])) == {
        (b, a, p) for b in ("stub_a", "stub_b") for a in ASKINGS for p in TEMPLATES}
    assert (groups["group"] == groups["backend_id"] + " · " + groups["condition"]).all()
    assert (groups["condition"] == "asking=" + groups["factor_asking"] + ",persona=" + groups["factor_persona"]).all()
    # As printed: the model and the levels of each factor, one row per group.
    markdown = (reported["run"] / "report.md").read_text(encoding="utf-8")
    assert "| Model | asking | persona | Instrument | Level (g) |" in markdown
    assert markdown.count("| stub_a | ssr | eager | iri |") == 1


def test_every_pair_of_groups_is_compared_on_every_criterion(reported):
    pairs = table(reported, "head_to_head")
    assert pairs.groupby("criterion").size().to_dict() == {c: PAIRS for c in (
        "level", "spread", "reliability", "distinguishable", "style", "relations", "tvd", "w1")}
    assert pairs["paired"].all()                                  # the same 20 personas in every group
    ranks = table(reported, "ranks")
    assert ranks.groupby("criterion")["condition"].nunique().eq(12).all()
    distances = table(reported, "answer_distributions")
    assert len(distances) == 12 and distances["items"].eq(28).all()
    assert distances["ceiling_tvd"].nunique() == 1 and (distances["ceiling_tvd"] < distances["tvd"]).all()
    markdown = (reported["run"] / "report.md").read_text(encoding="utf-8")
    assert "## Conditions compared" in markdown and "66 pairs of groups on 8 criteria" in markdown
    html = (reported["run"] / "report.html").read_text(encoding="utf-8")
    assert "Each group&#x27;s distance from people on the main criteria" in html or \
        "Each group's distance from people on the main criteria" in html


def test_known_answers_rank_drawn_shifted_uniform_on_level(reported):
    ranks = table(reported, "ranks").query("criterion == 'level'").set_index("condition")
    kind = {label: ("uniform" if label.startswith("stub_b") else "shifted" if "persona=eager" in label else "drawn")
            for label in ranks.index}
    order = ["drawn", "shifted", "uniform"]
    for nearer, further in zip(order, order[1:]):
        near = [c for c in ranks.index if kind[c] == nearer]
        far = [c for c in ranks.index if kind[c] == further]
        assert ranks.loc[near, "distance"].max() < ranks.loc[far, "distance"].min(), (nearer, further)
        assert ranks.loc[near, "rank"].max() <= ranks.loc[far, "rank"].min(), (nearer, further)
    # Drawn against shifted, item by item: every drawn group distinguishably closer (Holm).
    pairs = table(reported, "head_to_head").query("criterion == 'tvd'")
    apart = pairs[pairs.apply(lambda r: {kind[r.condition_a], kind[r.condition_b]} == {"drawn", "shifted"}, axis=1)]
    assert len(apart) == 9 and apart["distinguishable"].all()
    assert all(kind[c] == "drawn" for c in apart["closer"])


def test_the_verdict_names_the_most_people_like_condition_for_each_use(reported):
    markdown = (reported["run"] / "report.md").read_text(encoding="utf-8")
    verdict = markdown.split("## Can the personas stand in for people?")[1].split("\n## ")[0]
    level = re.search(r"^- (stub_\w) · (\S+) is the most people-like for estimating people's subscale means "
                      r"\(level: mean \\\|g\\\| over 4 subscales\); (not distinguishable from|distinguishably better than) "
                      r"(stub_\w) · (\S+?)( at this size|\.)", verdict, re.M)
    assert level, verdict[:2000]
    assert level.group(1) == "stub_a" and level.group(2).endswith("persona=plain")   # a group drawn from people
    ranks = table(reported, "ranks").query("criterion == 'level'")
    assert f"{level.group(1)} · {level.group(2)}" == ranks["condition"].iloc[0]
    assert f"{level.group(4)} · {level.group(5)}" == ranks["condition"].iloc[1]
    said = re.findall(r"^- \S+ · \S+ is the most people-like for (.+?) \((\w+):", verdict, re.M)
    assert [c for _, c in said] == ["level", "spread", "reliability", "relations", "distinguishable", "tvd", "w1"]


def test_without_people_the_conditions_are_not_compared(reported, tmp_path):
    out = psyq_in_process("report", reported["run"], "--out", tmp_path)
    assert out.returncode == 0, out.stderr
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    section = markdown.split("## Conditions compared")[1].split("\n## ")[0]
    assert "Conditions cannot be compared with people" in section and "Head to head" not in section
    plan = pd.read_csv(next((tmp_path / "report_tables").glob("table*_conditions__what_each_changes*.csv")))
    assert plan["condition"].tolist() == [f"asking={a},persona={p}" for a in ASKINGS for p in TEMPLATES]
    assert plan["trials_planned"].eq(2 * N * 28).all() and plan["backends"].eq("stub_a, stub_b").all()
    assert NOT_COMPARED in markdown.split("## Can the personas stand in for people?")[1].split("\n## ")[0]
    # the verdict against published norms: a row per group all the same, its factors as columns
    card = pd.read_csv(next((tmp_path / "report_tables").glob("table*_scorecard*.csv")))
    assert list(card.columns[:5]) == ["group", "backend_id", "condition", "factor_asking", "factor_persona"]
    assert card["group"].nunique() == 12


# --- the parts, on frames made here -------------------------------------------------------------------------

def test_groups_are_named_backend_then_condition_in_the_study_order():
    table_ = pd.DataFrame({"backend_id": ["b", "b", "a", "a"], "condition": ["y", "x", "y", "x"],
                           "factor_f": ["2", "1", "2", "1"], "respondent_id": ["p1", "p1", "p2", "p2"]})
    groups = condition_groups(table_, [{"id": "x", "factors": {"f": "1"}}, {"id": "y", "factors": {"f": "2"}}])
    assert list(groups) == ["b · x", "b · y", "a · x", "a · y"]         # backends as the table has them
    assert groups["a · y"] == ConditionGroup("a · y", "a", "y", {"f": "2"})
    out = as_condition_groups(table_, groups)
    assert out["backend_id"].tolist() == ["b · x", "b · y", "a · x", "a · y"]
    assert "condition" not in out.columns and "factor_f" not in out.columns
    assert condition_groups(table_.drop(columns="condition"), []) == {}


def test_a_scorecard_without_conditions_keeps_its_columns_and_view():
    card = pd.DataFrame({"group": ["m", "n"], "instrument": "iri", "criterion": "level", "subscale": "PT",
                         "value": [0.1, 0.5], "low": [0.0, 0.4], "high": [0.2, 0.6], "people": float("nan"),
                         "mark": ["meets", "falls short"], "level": "", "note": ""})
    assert list(card.columns) == SCORECARD_COLUMNS
    assert scorecard_view(card).frame.columns.tolist() == ["Model", "Instrument", "Level (g)"]
    listed = with_condition_columns(card.assign(group=["a · x", "a · only"]), {
        "a · x": ConditionGroup("a · x", "a", "x", {"asking": "x"}), "a · only": ConditionGroup("a · only", "a", "only", {})})
    view = scorecard_view(listed).frame
    # a listed condition that names no level: its id shown beside the factor columns
    assert view.columns.tolist() == ["Model", "asking", "Condition", "Instrument", "Level (g)"]
    assert view[["asking", "Condition"]].values.tolist() == [["x", "x"], ["", "only"]]


def ranks_of(distances: list[float], ranks: list[int], ahead: list[bool]) -> pd.DataFrame:
    return pd.DataFrame({"instrument": "iri", "criterion": "level", "condition": list("abcd")[:len(distances)],
                         "distance": distances, "rank": ranks, "ahead_of_next": ahead, "note": ""})


COMPARISON = pd.DataFrame({"instrument": ["iri"], "criterion": ["level"], "measure": ["mean |g| over 4 subscales"]})


def test_the_sentence_says_distinguishably_better_only_when_it_is():
    better = most_people_like(ranks_of([0.1, 0.5], [1, 2], [True, False]), COMPARISON, CONDITION_USES)
    assert better == ["a is the most people-like for estimating people's subscale means (level: mean |g| over 4 "
                      "subscales); distinguishably better than b."]
    shared = most_people_like(ranks_of([0.1, 0.2, 0.3, 0.9], [1, 1, 1, 4], [False, False, True, False]), COMPARISON,
                              CONDITION_USES)
    assert shared == ["a is the most people-like for estimating people's subscale means (level: mean |g| over 4 "
                      "subscales); not distinguishable from b at this size: cannot tell yet, 3 share rank 1 (ranked "
                      "below)."]
    alone = most_people_like(ranks_of([0.1], [1], [False]), COMPARISON, CONDITION_USES)
    assert alone == ["a is the most people-like for estimating people's subscale means (level: mean |g| over 4 "
                     "subscales)."]
    # A criterion the comparison does not hold, or holds for no condition, says nothing.
    unranked = ranks_of([float("nan"), float("nan")], [float("nan")] * 2, [False, False])
    assert most_people_like(unranked, COMPARISON, CONDITION_USES) == []
