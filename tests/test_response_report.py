"""The report sections of rated replies: a run over real HTTP (stub server, the mini instrument),
rating targets and ratings written into its real SQLite store (engine/store/run_store/ratings.py), then the
report built and rendered.

The statistics are tested against hand computations in tests/test_rater_agreement.py; here the
numbers shown are checked against independent computations on the same ratings: the ICC from
the two-way ANOVA by hand (hand_icc2 there), and the persona − reference coefficient against the
difference of means, which the mixed model's estimate equals in this balanced design (every
message has the same number of persona and reference replies, so the message intercepts cancel).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from psyq.analysis.report import apa, tables
from psyq.analysis.report import ReportContext, build_sections, render_html, render_markdown
from psyq.analysis.report.sections.response import ResponseSection
from psyq.analysis.statistics.response_comparison import compare_sources, target_scores, with_combined
from psyq.engine.store.ratings import Rating, RatingTarget, put_ratings, put_targets
from psyq.engine.store.run_store import RunStore
from runs_helper import make_mini_run
from test_rater_agreement import hand_icc2

DIMENSIONS = ["cognitive", "emotional", "behavioural"]
RATERS = [("judge", "j1"), ("judge", "j2"), ("human", "h1"), ("human", "h2")]
MESSAGES = [f"m{i}" for i in range(5)]


def level(t: int, d: int, r: int, reference: bool) -> float:
    """A level 1-3 that varies with target, dimension and rater (a fixed rule written here);
    reference replies one level higher where room is left."""
    base = 1 + (t * (d + 2) + r * (t + d)) % 3 // 2 + (t % 3 == 0)
    return float(min(3, base + (1 if reference else 0)))


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory) -> Path:
    return make_mini_run(tmp_path_factory.mktemp("response_report"), n_personas=4, repeats=1)


@pytest.fixture(scope="module")
def rated_run(plain_run, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("rated") / plain_run.name
    shutil.copytree(plain_run, run)
    with sqlite3.connect(run / "run.sqlite") as db:
        trials = [r[0] for r in db.execute("SELECT trial_id FROM trials ORDER BY trial_id")]
    targets, ratings, t = [], [], 0
    for m in MESSAGES:
        batch = [RatingTarget.persona(trials[(2 * k + i) % len(trials)], m, instrument="help", text=f"reply {i} to {m}")
                 for k, i in ((MESSAGES.index(m), 0), (MESSAGES.index(m), 1))]
        batch += [RatingTarget.reference(f"{m}_c{i}", item_id=m, instrument="help", text=f"clinician {i}") for i in range(2)]
        for target in batch:
            for d, dim in enumerate(DIMENSIONS):
                for r, (kind, rid) in enumerate(RATERS):
                    if t == 0 and dim == "cognitive" and rid == "h2":   # a rating without a level
                        ratings.append(Rating(target.response_id, "empathy_ceb", dim, kind, rid, None,
                                              "unparseable", "2026-11-23", reason="no level given"))
                        continue
                    ratings.append(Rating(target.response_id, "empathy_ceb", dim, kind, rid,
                                          level(t, d, r, target.source == "reference"), "answered", "2026-11-23"))
            # a rubric only one judge used: its agreement is not estimable
            ratings.append(Rating(target.response_id, "solo", "level", "judge", "j1", float(1 + t % 3), "answered",
                                  "2026-11-23"))
            t += 1
        targets += batch
    with RunStore(run / "run.sqlite") as store:
        put_targets(store, targets)
        put_ratings(store, ratings)
    return run


def stored_ratings(run: Path) -> pd.DataFrame:
    from psyq.engine.store.ratings import read_ratings
    with RunStore(run / "run.sqlite") as store:
        return read_ratings(store)


def section(sections: list, title: str):
    return next(s for s in sections if s.title == title)


def test_report_shows_rated_replies_and_agreement_with_the_right_numbers(rated_run):
    manifest, sections = build_sections(rated_run)
    titles = [s.title for s in sections]
    assert "Rated replies" in titles and "Agreement between raters" in titles
    md = render_markdown(manifest, sections)
    html = render_html(manifest, sections)
    assert html.count("<img") >= 2                      # the two figures are embedded

    ratings = stored_ratings(rated_run)
    # ICC(2,1) over all four raters, cognitive: the targets × raters matrix by hand
    cog = ratings[(ratings["rubric_id"] == "empathy_ceb") & (ratings["dimension"] == "cognitive")]
    matrix = cog.pivot_table(index="response_id", columns=["rater_kind", "rater_id"], values="level")
    single, _ = hand_icc2(matrix.dropna().to_numpy())            # the reply h2 gave no level is left out
    agreement = section(sections, "Agreement between raters")
    all_raters = next(r for r in agreement.readings if r.startswith("empathy_ceb, all (4 raters)"))
    assert f"cognitive ICC(2,1) {apa.fmt_r(single)}" in all_raters.replace(tables.NBSP, " ")
    assert "(n = 19 replies; 1 reply left out: not rated by every rater), α" in all_raters.replace(tables.NBSP, " ")
    assert "1 target(s) left out: not rated by every one of the 4 raters" in md     # the table's note column
    # the one-judge rubric: not estimable, said, never a number
    assert "solo, all (1 rater): level ICC(2,1) not estimable: fewer than 2 raters (n = 20 replies), α not estimable" in md

    # persona − reference, judges, cognitive: equals the difference of the judges' mean scores
    judged = cog[cog["rater_kind"] == "judge"].groupby(["response_id", "source"])["level"].mean().reset_index()
    diff = judged[judged["source"] == "persona"]["level"].mean() - judged[judged["source"] == "reference"]["level"].mean()
    replies = section(sections, "Rated replies")
    reading = next(r for r in replies.readings if r.startswith("empathy_ceb, scored by judges"))
    assert f"cognitive {apa.fmt_num(diff)} [" in reading
    assert "mixed model (random intercept per message)" in reading or "OLS" in reading
    # the shipped rubric's combine rule (psyq ships empathy_ceb wherever it is installed)
    how = "'overall' is the mean of cognitive and emotional and behavioural (the rubric's combine rule)"
    assert any(how in r for r in replies.readings)
    assert "20 replies (10 by personas, 10 reference replies) to 5 messages" in replies.readings[0]
    assert "1 rating(s) have no level and are left out, never imputed (unparseable 1)." in replies.readings
    assert "Why, most frequent first: unparseable 1: 'no level given'." in replies.readings
    # the solo rubric has no reference/persona problem but one dimension: no 'overall' is made for it
    assert not any("overall" in r for r in replies.readings if r.startswith("solo"))


def test_judge_whose_every_rating_failed_is_reported_with_its_reasons_not_as_not_rated(plain_run, tmp_path):
    # Issue 24: a judge that gave no readable level anywhere made the report say "not rated yet".
    run = tmp_path / plain_run.name
    shutil.copytree(plain_run, run)
    targets = [RatingTarget.reference(f"c{i}", item_id="m0", instrument="help", text=f"clinician {i}")
               for i in range(3)]
    why = (["no level digit among the most likely first tokens"] * 4 + ["the reply is not JSON"] * 3
           + ["HTTP 500 after 3 attempts"] * 2)
    statuses = ["unparseable"] * 7 + ["failed"] * 2
    ratings = [Rating(targets[k % 3].response_id, "empathy_ceb", DIMENSIONS[k // 3], "judge", "j1", None, status,
                      "2026-11-23", reason=reason) for k, (status, reason) in enumerate(zip(statuses, why))]
    with RunStore(run / "run.sqlite") as store:
        put_targets(store, targets)
        put_ratings(store, ratings)
    _, sections = build_sections(run)
    replies = section(sections, "Rated replies")
    [reading] = replies.readings
    assert "not rated yet" not in reading
    assert "9 ratings were tried (9 by judge 'j1') and none gave a readable level" in reading
    assert ("Why, most frequent first: unparseable 4: 'no level digit among the most likely first tokens'; "
            "unparseable 3: 'the reply is not JSON'; failed 2: 'HTTP 500 after 3 attempts'.") in reading
    assert "another --judge-id" in reading
    assert "Agreement between raters" not in [s.title for s in sections]


def test_comparison_equals_difference_of_means_in_a_balanced_design(rated_run):
    combined, _ = with_combined(stored_ratings(rated_run))
    scores = target_scores(combined, "human")
    comp = compare_sources(scores).set_index(["rubric_id", "dimension"])
    for dim in DIMENSIONS + ["overall"]:
        rows = scores[(scores["rubric_id"] == "empathy_ceb") & (scores["dimension"] == dim)]
        by = rows.groupby("source")["score"].mean()
        assert comp.loc[("empathy_ceb", dim), "b"] == pytest.approx(by["persona"] - by["reference"], abs=1e-6)
    assert set(comp.index.get_level_values("rubric_id")) == {"empathy_ceb"}   # 'solo': judges only, no human row
    persona_only = compare_sources(scores[scores["source"] == "persona"])
    assert persona_only["b"].isna().all()
    assert persona_only["note"].eq("not estimable: no reference replies were rated").all()


def test_run_with_reply_items_but_no_ratings_says_how_to_rate(plain_run):
    fake = {"help": SimpleNamespace(items=[SimpleNamespace(kind="response", id="m0")])}
    report = ReportContext(plain_run, {}, pd.DataFrame(), fake, pd.DataFrame())
    sections = ResponseSection().sections(report)
    assert [s.title for s in sections] == ["Rated replies"]
    assert "not rated yet: run `psyq judge RUN --rubric empathy_ceb`" in sections[0].readings[0]
    # a questionnaire-only run without ratings: no section, and the store is not given rating tables
    assert ResponseSection().sections(ReportContext(plain_run, {}, pd.DataFrame(), {}, pd.DataFrame())) == []
    with sqlite3.connect(plain_run / "run.sqlite") as db:
        assert db.execute("SELECT 1 FROM sqlite_master WHERE name = 'ratings'").fetchone() is None
