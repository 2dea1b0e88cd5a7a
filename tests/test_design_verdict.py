"""The verdict of the designs other than questionnaires (analysis/statistics/standin/design_verdict.py): change
after an evoked situation, LEAS levels against norms, empathic accuracy, rated replies.

Each figure is checked against Hedges' g and its normal interval written out here with numpy, or, for
the rated replies, against a least-squares fit solved here with numpy (two messages: the message a
fixed effect) and statsmodels' MixedLM called directly; the marks against cases built to meet, fall
short and be inconclusive; and the report's sections hand their card to the verdict: an EmotionBench
result file imported and reported with people's change, a staged run, a LEAS-format run, a run of
empathic-accuracy stories and a run of rated replies, each over the stub server.
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from psyq.analysis.report import build_sections
from psyq.analysis.report.sections import report_section
from psyq.analysis.statistics.standin.design_verdict import (COLUMNS, DESIGN_CUTOFFS, DESIGN_USES, PSYQ_CONTENT,
                                                     accuracy_scorecard, change_scorecard, leas_scorecard,
                                                     pooled_sd, ratings_scorecard)
from psyq.analysis.statistics.norms import compare_with_norms
from psyq.engine.design.instrument import NormGroup, NormSample, NormScore, load_instrument

ROOT = Path(__file__).resolve().parents[1]
Z90 = stats.norm.ppf(0.95)          # the 90 % interval's normal quantile, 1.645


def g_from_summary(m1, s1, n1, m2, s2, n2):
    """Hedges' g of m1 − m2 with its 90 % normal interval (Borenstein et al. 2009, ch. 4), by hand."""
    s = math.sqrt(((n1 - 1) * s1 ** 2 + (n2 - 1) * s2 ** 2) / (n1 + n2 - 2))
    d = (m1 - m2) / s
    j = 1 - 3 / (4 * (n1 + n2 - 2) - 1)
    se = j * math.sqrt((n1 + n2) / (n1 * n2) + d ** 2 / (2 * (n1 + n2)))
    return j * d, j * d - Z90 * se, j * d + Z90 * se


def g_by_hand(x, y):
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return g_from_summary(x.mean(), x.std(ddof=1), len(x), y.mean(), y.std(ddof=1), len(y))


def figure(row) -> tuple[float, float, float]:
    return row["value"], row["low"], row["high"]


def test_every_criterion_has_a_use_and_a_cutoff():
    criteria = [c for _, cs in DESIGN_USES for c in cs]
    assert criteria == ["change", "leas_level", "accuracy", "ratings"] == list(DESIGN_CUTOFFS)
    assert all("{bound}" in text and "90 % CI" in text for text in DESIGN_CUTOFFS.values())


# --- change after an evoked situation ---------------------------------------------------------------

def change_frame(backend: str, emotion: str, subscale: str, per_person: dict[str, list[float]]) -> pd.DataFrame:
    """Change scores, one row per repeat of each persona."""
    rows = [{"backend_id": backend, "respondent_id": who, "repeat": k, "situation_id": f"{emotion}_1",
             "emotion": emotion, "instrument": "panas", "subscale": subscale, "change": c}
            for who, changes in per_person.items() for k, c in enumerate(changes)]
    return pd.DataFrame(rows)


def people_frame(emotion: str, subscale: str, per_person: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([{"respondent_id": who, "emotion": emotion, "situation_id": "", "subscale": subscale,
                          "change": c} for who, changes in per_person.items() for c in changes])


def test_change_figure_is_hedges_g_of_per_person_change_with_its_90_interval():
    personas = pd.concat([
        change_frame("m", "anger", "PA", {"a": [-4, -6], "b": [-3], "c": [-7], "d": [-2]}),   # a: mean −5
        change_frame("m", "fear", "PA", {"a": [1], "b": [0], "c": [2]})], ignore_index=True)
    people = pd.concat([
        people_frame("anger", "PA", {"x": [-1], "y": [-2], "z": [-4], "w": [-2, -4]}),       # w: mean −3
        people_frame("fear", "PA", {"x": [-1], "y": [-3], "z": [-2], "v": [0]})], ignore_index=True)
    card = change_scorecard(personas, people)
    assert list(card.columns) == COLUMNS
    card = card.set_index("subscale")
    assert list(card.index) == ["PA, anger", "PA, fear"]          # the pooled "overall" row is not judged
    anger, fear = card.loc["PA, anger"], card.loc["PA, fear"]
    assert figure(anger) == pytest.approx(g_by_hand([-5, -3, -7, -2], [-1, -2, -4, -3]), abs=1e-12)
    assert figure(fear) == pytest.approx(g_by_hand([1, 0, 2], [-1, -3, -2, 0]), abs=1e-12)
    assert (anger["people"], fear["people"]) == (4, 4)
    assert (anger["level"], fear["level"]) == ("same direction", "opposite direction")
    assert anger["note"] == "mean change: personas -4.25, people -2.50 scale points; same direction"
    assert (anger["group"], anger["instrument"], anger["criterion"]) == ("m", "panas", "change")


def marks_of(card: pd.DataFrame) -> list[str]:
    return card["mark"].tolist()


EVEN = np.linspace(-2, 2, 400)         # 400 changes, SD 1.16: g's 90 % interval is about ±0.12


@pytest.mark.parametrize("personas, people, mark", [
    (EVEN, EVEN, "meets"),                                    # g = 0 ± 0.12: inside ±0.3
    (EVEN, EVEN + 1.5, "falls short"),                        # g ≈ −1.3: wholly below −0.3
    (EVEN[::80], EVEN[::80], "inconclusive"),                 # g = 0 from 5 a side: ±1.0 straddles ±0.3
])
def test_change_marks(personas, people, mark):
    card = change_scorecard(change_frame("m", "anger", "NA", {f"p{k}": [c] for k, c in enumerate(personas)}),
                            people_frame("anger", "NA", {f"h{k}": [c] for k, c in enumerate(people)}))
    assert marks_of(card) == [mark]
    assert figure(card.iloc[0]) == pytest.approx(g_by_hand(personas, people), abs=1e-12)


def test_a_row_falling_short_stands_only_at_the_bonferroni_level_of_its_criterion():
    # A shift whose g lies beyond 0.3 by its 90 % interval but not by its 95 % one (Bonferroni for 2 rows):
    # alone it falls short; beside a second emotion it is inconclusive, and says why.
    def shifted(shift):
        return g_by_hand(EVEN[::4] + shift, EVEN[::4])

    def low_at(shift, confidence):
        g, low, _ = shifted(shift)
        return g - (g - low) / Z90 * stats.norm.ppf(0.5 + confidence / 2)
    shift = next(s for s in np.arange(0.5, 1.5, 0.01) if low_at(s, 0.90) > 0.3 > low_at(s, 0.95))
    personas = {f"p{k}": [c + shift] for k, c in enumerate(EVEN[::4])}
    people = {f"h{k}": [c] for k, c in enumerate(EVEN[::4])}
    alone = change_scorecard(change_frame("m", "anger", "NA", personas), people_frame("anger", "NA", people))
    assert marks_of(alone) == ["falls short"]
    both = change_scorecard(pd.concat([change_frame("m", "anger", "NA", personas),
                                       change_frame("m", "fear", "NA", people)], ignore_index=True),
                            pd.concat([people_frame("anger", "NA", people), people_frame("fear", "NA", people)]))
    anger = both.set_index("subscale").loc["NA, anger"]
    assert anger["mark"] == "inconclusive" and figure(anger) == pytest.approx(shifted(shift), abs=1e-12)
    assert anger["note"].startswith("outside the region at 90 %, not at 95.0 % (Bonferroni for the 2 rows of this "
                                    "criterion); mean change: personas")
    far = change_scorecard(pd.concat([change_frame("m", "anger", "NA", {k: [v[0] + 3] for k, v in personas.items()}),
                                      change_frame("m", "fear", "NA", people)], ignore_index=True),
                           pd.concat([people_frame("anger", "NA", people), people_frame("fear", "NA", people)]))
    assert marks_of(far) == ["falls short", "meets"]


def test_change_not_estimable_without_people_or_with_too_few():
    personas = change_frame("m", "anger", "PA", {"a": [-4], "b": [-3]})
    alone = change_scorecard(personas, None).iloc[0]
    assert (alone["mark"], alone["people"]) == ("not estimable", 0)
    assert alone["note"] == "no people's change to compare with"
    one = change_scorecard(personas, people_frame("anger", "PA", {"x": [-1]})).iloc[0]
    assert one["mark"] == "not estimable" and math.isnan(one["value"])
    assert one["note"] == "fewer than 2 respondents (humans)" and one["level"] == "same direction"
    still = change_scorecard(change_frame("m", "anger", "PA", {"a": [-4], "b": [-4]}),
                             people_frame("anger", "PA", {"x": [-1], "y": [-1]})).iloc[0]
    assert still["mark"] == "not estimable" and still["note"] == "no variance of change in either group"


# --- LEAS levels against norms -------------------------------------------------------------------------

def sample(sample_id: str, mean: float, sd: float, n: int, verified: str = "source-table") -> NormSample:
    return NormSample(id=sample_id, citation="lane1990", table="Table 1", population="students", n=n, metric="sum",
                      verified=verified, verification="made up for the test",
                      groups=[NormGroup(id="all", n=n, scores={"total": NormScore(mean=mean, sd=sd)})])


def official(*samples: NormSample):
    """The shipped LEAS-format instrument as if it were the official LEAS with norms (for the test only)."""
    return load_instrument("leas_psyq").model_copy(update={"content_source": "published", "norms": list(samples)})


def leas_scores(values, backend: str = "m") -> pd.DataFrame:
    return pd.DataFrame({"backend_id": backend, "model": "stub",
                         "respondent_id": [f"p{k}" for k in range(len(values))], "repeat": 0,
                         "instrument": "leas_psyq", "subscale": "total", "score": values})


def test_leas_scenes_psyq_wrote_are_never_compared_with_norms():
    made_up = pd.DataFrame([{"backend_id": "m", "instrument": "leas_psyq", "subscale": "total", "norm_sample": "x",
                             "norm_group": "all", "norm_verified": "source-table", "n": 50, "mean": 60.0, "sd": 10.0,
                             "norm_n": 200, "norm_mean": 60.0, "norm_sd": 10.0}])
    card = leas_scorecard(made_up, {"leas_psyq": load_instrument("leas_psyq")}, ["m", "n"])
    assert card["group"].tolist() == ["m", "n"] and (card["criterion"] == "leas_level").all()
    assert (card["mark"] == "not estimable").all() and card["value"].isna().all()
    assert (card["note"] == PSYQ_CONTENT).all() and "never compared with norms" in PSYQ_CONTENT


def test_leas_figure_against_each_norm_group_and_its_marks():
    values = np.linspace(40, 80, 400)                          # mean 60, SD 11.6
    instrument = official(sample("level", 60.0, 11.0, 300), sample("far", 40.0, 10.0, 300, verified="unverified"))
    comparison = compare_with_norms(leas_scores(values), {"leas_psyq": instrument})
    card = leas_scorecard(comparison, {"leas_psyq": instrument}, ["m"]).set_index("level")
    near, far = card.loc["level, all"], card.loc["far, all"]
    sd = values.std(ddof=1)
    assert figure(near) == pytest.approx(g_from_summary(60.0, sd, 400, 60.0, 11.0, 300), abs=1e-9)
    assert figure(far) == pytest.approx(g_from_summary(60.0, sd, 400, 40.0, 10.0, 300), abs=1e-9)
    assert (near["mark"], far["mark"]) == ("meets", "falls short")
    assert (near["subscale"], near["people"], near["note"]) == ("total", 300, "")
    assert far["note"] == "norm sample far: unverified"
    few = leas_scorecard(compare_with_norms(leas_scores(values[::80]), {"leas_psyq": instrument}),
                         {"leas_psyq": instrument}, ["m"])
    assert few.loc[few["level"] == "level, all", "mark"].tolist() == ["inconclusive"]


@pytest.mark.parametrize("metric, mean, sd", [("sum", 60.0, 11.0), ("mean", 3.0, 0.55)])
def test_a_leas_norm_is_compared_on_the_sum_of_the_scenes(metric, mean, sd):
    # A LEAS total is a sum of 20 scene totals: a summed norm is taken as it is, a per-scene mean times 20.
    norm = sample("level", mean, sd, 300).model_copy(update={"metric": metric})
    instrument = official(norm)
    row = compare_with_norms(leas_scores([55.0, 65.0]), {"leas_psyq": instrument}).iloc[0]
    assert (row["norm_mean"], row["norm_sd"]) == pytest.approx((60.0, 11.0))


def test_leas_without_norms_or_with_none_chosen_is_not_estimable():
    bare = official()
    card = leas_scorecard(pd.DataFrame(), {"leas_psyq": bare}, ["m"])
    assert card[["mark", "note"]].values.tolist() == [["not estimable", "the instrument carries no norm sample"]]
    normed = official(sample("level", 60.0, 11.0, 300))
    card = leas_scorecard(pd.DataFrame(columns=["instrument"]), {"leas_psyq": normed}, ["m"])
    assert card["note"].tolist() == ["none of the instrument's norm samples was chosen (--norms)"]


# --- empathic accuracy -------------------------------------------------------------------------------

def perceivers(z_by_person: dict[str, list[float]], backend: str | None = "m") -> pd.DataFrame:
    rows = [{"respondent_id": who, "repeat": k, "z": z} for who, zs in z_by_person.items() for k, z in enumerate(zs)]
    frame = pd.DataFrame(rows)
    return frame.assign(backend_id=backend) if backend else frame


def test_accuracy_figure_is_hedges_g_of_per_perceiver_z_repeats_averaged():
    cohort = pd.concat([perceivers({"a": [0.4, 0.6], "b": [0.7], "c": [0.3]}),          # a: mean 0.5
                        perceivers({"a": [0.9], "b": [1.0]}, backend="n")], ignore_index=True)
    people = perceivers({"h1": [0.2], "h2": [0.6], "h3": [0.5], "h4": [np.nan]}, backend=None)
    card = accuracy_scorecard(cohort, people, instrument="ea", design_intended=True).set_index("group")
    assert figure(card.loc["m"]) == pytest.approx(g_by_hand([0.5, 0.7, 0.3], [0.2, 0.6, 0.5]), abs=1e-12)
    assert figure(card.loc["n"]) == pytest.approx(g_by_hand([0.9, 1.0], [0.2, 0.6, 0.5]), abs=1e-12)
    assert card.loc["m", "people"] == 3 and card.loc["m", "instrument"] == "ea"
    assert card.loc["m", "level"] == "agreement with design-intended profiles"
    assert card.loc["m", "note"] == f"mean r: personas {np.tanh(0.5):.2f}, human perceivers {np.tanh(1.3 / 3):.2f}"


@pytest.mark.parametrize("personas, people, mark", [
    (EVEN / 4 + 0.5, EVEN / 4 + 0.5, "meets"),
    (EVEN / 4 + 0.5, EVEN / 4 + 0.9, "falls short"),        # 0.4 in z is 1.4 SD
    (EVEN[::80] / 4, EVEN[::80] / 4, "inconclusive"),
])
def test_accuracy_marks(personas, people, mark):
    card = accuracy_scorecard(perceivers({f"p{k}": [z] for k, z in enumerate(personas)}),
                              perceivers({f"h{k}": [z] for k, z in enumerate(people)}, backend=None), instrument="ea")
    assert marks_of(card) == [mark] and card["level"].tolist() == ["empathic accuracy"]


def test_accuracy_without_human_perceivers_is_not_judged():
    card = accuracy_scorecard(perceivers({"a": [0.5], "b": [0.7]}), None, instrument="ea")
    row = card.iloc[0]
    assert row["mark"] == "not estimable" and math.isnan(row["value"])
    assert row["note"] == f"no human perceivers of these items to compare with (the personas' mean r against the " \
                          f"targets: {np.tanh(0.6):.2f})"


# --- rated replies -----------------------------------------------------------------------------------

def reply_scores(persona: dict[str, list[float]], reference: dict[str, list[float]], backend: str = "a",
                 dimension: str = "warmth", rater_kind: str = "judge") -> pd.DataFrame:
    rows = [{"source": "persona", "backend_id": backend, "item_id": m, "score": s, "trial_id": f"{backend}{m}{k}"}
            for m, scores in persona.items() for k, s in enumerate(scores)]
    rows += [{"source": "reference", "backend_id": None, "item_id": m, "score": s, "trial_id": None}
             for m, scores in reference.items() for s in scores]
    frame = pd.DataFrame(rows).assign(instrument="help", rubric_id="empathy", dimension=dimension,
                                      rater_kind=rater_kind, n_raters=1.0)
    return frame.assign(response_id=[f"r{k}" for k in range(len(frame))])


def test_ratings_figure_with_two_messages_is_the_fixed_effects_coefficient_over_the_pooled_sd():
    persona = {"m1": [3.0, 4.0, 3.5], "m2": [2.0, 2.5, 3.0]}
    reference = {"m1": [2.0, 3.0], "m2": [1.0, 2.0]}
    card = ratings_scorecard(reply_scores(persona, reference))
    row = card.iloc[0]
    # By hand: score = b0 + b·persona + c·[message m2], OLS; 10 replies, 3 parameters, 7 residual df.
    y = np.array(persona["m1"] + persona["m2"] + reference["m1"] + reference["m2"])
    is_persona = np.array([1] * 6 + [0] * 4, dtype=float)
    is_m2 = np.array([0, 0, 0, 1, 1, 1, 0, 0, 1, 1], dtype=float)
    x = np.column_stack([np.ones(10), is_persona, is_m2])
    beta, rss, _, _ = np.linalg.lstsq(x, y, rcond=None)
    se = math.sqrt(rss[0] / 7 * np.linalg.inv(x.T @ x)[1, 1])
    half = stats.t.ppf(0.95, 7) * se
    ours, theirs = y[:6], y[6:]
    sd = math.sqrt((5 * ours.var(ddof=1) + 3 * theirs.var(ddof=1)) / 8)
    assert pooled_sd(ours, theirs) == pytest.approx(sd, abs=1e-12)
    assert figure(row) == pytest.approx(((beta[1]) / sd, (beta[1] - half) / sd, (beta[1] + half) / sd), abs=1e-9)
    assert row["note"].startswith("OLS with the message as a fixed effect; ")
    assert (row["subscale"], row["level"], row["people"], row["instrument"]) == ("warmth", "empathy, judge raters", 4,
                                                                                 "help")


def test_ratings_figure_with_a_random_intercept_per_message_against_mixedlm():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(7)
    messages = [f"m{k}" for k in range(6)]
    effect = dict(zip(messages, [-1.0, -0.5, 0.0, 0.4, 0.9, 1.3]))
    persona = {m: list(np.round(2.5 + effect[m] + rng.normal(0, 0.5, 5), 2)) for m in messages}
    reference = {m: list(np.round(2.2 + effect[m] + rng.normal(0, 0.5, 3), 2)) for m in messages}
    scores = reply_scores(persona, reference)
    row = ratings_scorecard(scores).iloc[0]
    data = scores.assign(persona=(scores["source"] == "persona").astype(float))
    fit = smf.mixedlm("score ~ persona", data, groups=data["item_id"]).fit(reml=True)
    low, high = fit.conf_int(alpha=0.10).loc["persona"]
    ours, theirs = (data.loc[data["persona"] == k, "score"].to_numpy() for k in (1.0, 0.0))
    sd = math.sqrt((29 * ours.var(ddof=1) + 17 * theirs.var(ddof=1)) / 46)
    assert figure(row) == pytest.approx((fit.params["persona"] / sd, low / sd, high / sd), abs=1e-6)
    assert row["note"].startswith("mixed model (random intercept per message)")


def test_ratings_bonferroni_uses_the_t_quantile_of_an_ols_fallback():
    # Two messages: OLS with the message a fixed effect, 10 replies, 7 residual df. Two dimensions, so a
    # "falls short" must hold at 95 % with t(7) (by hand below), not with the normal quantile.
    reference = {"m1": [2.0, 3.0], "m2": [1.0, 2.0]}
    seen = set()
    for delta in np.arange(0.8, 2.6, 0.05):
        persona = {"m1": [2.5 + delta, 3.0 + delta, 2.0 + delta], "m2": [1.5 + delta, 2.0 + delta, 1.0 + delta]}
        scores = pd.concat([reply_scores(persona, reference),
                            reply_scores(persona, reference, dimension="clarity")], ignore_index=True)
        row = ratings_scorecard(scores).iloc[0]
        value, low, high = figure(row)
        se = (high - low) / 2 / stats.t.ppf(0.95, 7)
        t_low, z_low = value - stats.t.ppf(0.975, 7) * se, value - stats.norm.ppf(0.975) * se
        expected = "falls short" if t_low > 0.3 else "inconclusive" if low > 0.3 else row["mark"]
        assert row["mark"] == expected
        seen.add((low > 0.3, t_low > 0.3, z_low > 0.3))
    assert (True, False, True) in seen          # a case the normal quantile would have let fall short


def test_ratings_per_backend_and_rater_kind_each_against_every_reference_reply():
    messages = [f"m{k}" for k in range(8)]
    base = {m: [1.0 + (k + j) % 3 for j in range(50)] for k, m in enumerate(messages)}    # 400 replies, levels 1–3
    reference = {m: [1.0 + (k + j) % 3 for j in range(50)] for k, m in enumerate(messages)}
    scores = pd.concat([reply_scores(base, reference, backend="a"),
                        reply_scores({m: [v + 2 for v in s] for m, s in base.items()}, {}, backend="b"),
                        reply_scores(base, reference, backend="a", rater_kind="human")], ignore_index=True)
    card = ratings_scorecard(scores)
    marks = {(r.group, r.level): r.mark for r in card.itertuples()}
    assert marks == {("a", "empathy, judge raters"): "meets", ("a", "empathy, human raters"): "meets",
                     ("b", "empathy, judge raters"): "falls short", ("b", "empathy, human raters"): "not estimable"}
    assert card.loc[card["mark"] == "not estimable", "note"].tolist() == ["no persona replies were rated"]
    assert (card["people"] == 400).all()


def test_ratings_without_reference_replies_are_not_estimable():
    card = ratings_scorecard(reply_scores({"m1": [3.0, 2.0], "m2": [2.0, 1.0]}, {}))
    assert card[["mark", "note"]].values.tolist() == [["not estimable", "no reference replies were rated"]]
    assert card["people"].tolist() == [0]


# --- the report's sections hand their card to the verdict --------------------------------------------

@pytest.fixture
def verdict_cards(monkeypatch) -> list[pd.DataFrame]:
    """The design cards the verdict section is given (it is made to apply and to show nothing)."""
    seen: list[pd.DataFrame] = []
    verdict = type(report_section("verdict"))

    def sections(self, report):
        seen.extend(report.design_cards)
        return []
    monkeypatch.setattr(verdict, "applies", lambda self, report: True)
    monkeypatch.setattr(verdict, "sections", sections)
    return seen


def test_the_sections_leave_the_model_answering_as_itself_out_of_the_cards():
    from types import SimpleNamespace

    from psyq.analysis.report.sections.change import add_change_card
    from psyq.analysis.report.sections.scene import add_leas_card

    # LEAS sums of three personas and of the baseline respondent (far off), against a norm of 60 (SD 11).
    instrument = official(sample("level", 60.0, 11.0, 300))
    scores = leas_scores([55.0, 60.0, 65.0, 200.0]).assign(
        respondent_id=["p0", "p1", "p2", "baseline"], backend_id="stub")
    report = SimpleNamespace(instruments={"leas_psyq": instrument}, scores=scores, bound=0.3, correction="holm",
                             choice=None, design_cards=[])
    add_leas_card(report, pd.DataFrame({"instrument": ["leas_psyq"], "backend_id": ["stub"]}))
    [card] = report.design_cards
    assert figure(card.iloc[0]) == pytest.approx(g_from_summary(60.0, 5.0, 3, 60.0, 11.0, 300), abs=1e-9)
    # Change: the baseline's change (−30) would move the personas' mean; without it −4, −6 against people's
    # −4, −5, −6.
    stages = pd.DataFrame([{"backend_id": "m", "respondent_id": who, "repeat": 0, "situation_id": "s",
                            "emotion": "anger", "stage": stage, "phase": phase, "instrument": "panas",
                            "subscale": "PA", "score": score}
                           for who, change in (("a", -4.0), ("b", -6.0), ("baseline", -30.0))
                           for stage, phase, score in ((0, "before", 30.0), (2, "after", 30.0 + change))])
    report = SimpleNamespace(bound=0.3, design_cards=[])
    add_change_card(report, stages, people_frame("anger", "PA", {"x": [-4], "y": [-5], "z": [-6]}))
    [card] = report.design_cards
    assert figure(card.iloc[0]) == pytest.approx(g_by_hand([-4, -6], [-4, -5, -6]), abs=1e-12)


def test_an_imported_emotionbench_run_reported_with_people_gets_a_change_card(tmp_path, verdict_cards):
    from test_emotionbench_report import psyq, write_crowd, write_model

    humans, run = tmp_path / "humans.csv", tmp_path / "imported"
    assert psyq("import", "emotionbench-humans", str(write_crowd(tmp_path / "crowd.csv")), "--out",
                str(humans)).returncode == 0
    assert psyq("import", "emotionbench-results", str(write_model(tmp_path / "toy-PANAS-testing.csv")), "--out",
                str(run)).returncode == 0
    build_sections(run, human_change=humans)
    [card] = verdict_cards
    card = card.set_index("subscale")
    # The model "toy" saw anger only (test_emotionbench_report): PA changes −40, −20, NA +30, +10; the crowd's
    # anger PA changes −10, −10 and NA +10, +20. PA: pooled SD √(200/2) = 10, d = −2, J = 4/7, g = −8/7.
    assert list(card.index) == ["NA, anger", "PA, anger"]
    assert card.loc["PA, anger", "value"] == pytest.approx(-8 / 7, abs=1e-12)
    assert figure(card.loc["PA, anger"]) == pytest.approx(g_by_hand([-40, -20], [-10, -10]), abs=1e-12)
    assert figure(card.loc["NA, anger"]) == pytest.approx(g_by_hand([30, 10], [10, 20]), abs=1e-12)
    assert (card["group"] == "toy").all() and (card["instrument"] == "panas").all() and (card["people"] == 2).all()
    assert (card["level"] == "same direction").all() and (card["mark"] == "inconclusive").all()
    verdict_cards.clear()
    build_sections(run)                                      # without people's change: said, not judged
    [alone] = verdict_cards
    assert (alone["mark"] == "not estimable").all() and (alone["note"] == "no people's change to compare with").all()


def test_a_staged_run_gets_a_change_card(tmp_path, verdict_cards):
    from psyq import administer, load_study
    from stub_server import StubServer
    from test_stages import reply, write_study

    with StubServer(answer=reply) as stub:
        run_dir = asyncio.run(administer(load_study(write_study(tmp_path, stub.url)), tmp_path / "runs",
                                         log=lambda m: None)).run_dir.path
    humans = tmp_path / "humans.csv"
    humans.write_text("respondent_id,emotion,situation_id,subscale,before,after\n"
                      "h1,anger,,Z,20,18\nh2,anger,,Z,20,17\nh3,anger,,Z,20,16\n")
    build_sections(run_dir, human_change=humans)
    [card] = verdict_cards
    z = card.set_index("subscale").loc["Z, anger"]
    # test_stages: each of 2 personas' Z changes by −7 (SD 0); people −2, −3, −4.
    assert figure(z) == pytest.approx(g_by_hand([-7, -7], [-2, -3, -4]), abs=1e-12) and z["mark"] == "falls short"
    assert card.loc[card["subscale"] == "Z, joy", "note"].tolist() == ["fewer than 2 respondents (humans)"]


def test_a_leas_run_gets_a_card_refusing_the_norms(tmp_path, verdict_cards):
    from stub_server import StubServer
    from test_administer import run, write_study

    leas = ROOT / "instruments" / "leas_psyq.yaml"
    with StubServer(answer=lambda body: "You: I would feel happy and relieved.\nOther: grateful and glad.") as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}], instrument=leas), tmp_path / "runs")
    build_sections(result.run_dir.path)
    [card] = verdict_cards
    assert card[["group", "instrument", "criterion", "mark", "note"]].values.tolist() == [
        ["stub", "leas_psyq", "leas_level", "not estimable", PSYQ_CONTENT]]


def test_a_run_of_accuracy_stories_gets_a_card_against_human_perceivers(tmp_path, verdict_cards):
    from psyq.analysis.scoring.human_data import human_data
    from stub_server import StubServer
    from test_administer import run, write_study
    from test_ea_report import write_perceivers
    from test_vignettes import MINI, json_reply

    with StubServer(answer=json_reply) as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}, {"id": "p2"}], instrument=MINI,
                                 protocol={"answer": "json"}), tmp_path / "runs")
    build_sections(result.run_dir.path)
    [alone] = verdict_cards
    assert alone[["instrument", "criterion", "mark", "level"]].values.tolist() == [
        ["mini_vignettes", "accuracy", "not estimable", "agreement with design-intended profiles"]]
    verdict_cards.clear()
    build_sections(result.run_dir.path,
                   people=human_data({"mini_vignettes": write_perceivers(tmp_path / "p.csv")}))
    [card] = verdict_cards
    # test_ea_report: both personas answer alike (no spread), the two human perceivers' z are
    # arctanh(.9999) and arctanh(−7.25/8.75); g's pooled SD is theirs alone.
    from test_ea_report import OVERALL
    z_personas = np.arctanh(OVERALL)
    z_people = [np.arctanh(0.9999), np.arctanh(-7.25 / 8.75)]
    assert figure(card.iloc[0]) == pytest.approx(g_by_hand([z_personas, z_personas], z_people), abs=1e-9)
    assert card["people"].tolist() == [2]


def test_a_run_of_rated_replies_gets_a_card_per_backend_and_dimension(tmp_path, verdict_cards):
    from psyq.engine.store.ratings import Rating, RatingTarget, put_ratings, put_targets
    from psyq.engine.store.run_store import RunStore
    from runs_helper import make_mini_run

    run = make_mini_run(tmp_path, n_personas=4, repeats=1)
    with sqlite3.connect(run / "run.sqlite") as db:
        trials = [r[0] for r in db.execute("SELECT trial_id FROM trials ORDER BY trial_id")]
    levels = {}                              # target -> (warmth, clarity): made up, one judge
    targets = []
    for k, message in enumerate(["m1", "m2", "m3", "m4"]):
        persona = RatingTarget.persona(trials[k], message, instrument="help", text=f"reply to {message}")
        reference = RatingTarget.reference(f"c{k}", item_id=message, instrument="help", text="clinician")
        levels[persona.response_id] = (3.0 + k % 2, 2.0 + k % 3)
        levels[reference.response_id] = (2.0 + k % 3, 2.0 + k % 2)
        targets += [persona, reference]
    ratings = [Rating(t.response_id, "empathy", dim, "judge", "j1", levels[t.response_id][d], "answered", "2026-01-01")
               for t in targets for d, dim in enumerate(["warmth", "clarity"])]
    with RunStore(run / "run.sqlite") as store:
        put_targets(store, targets)
        put_ratings(store, ratings)
    build_sections(run)
    [card] = verdict_cards
    assert sorted(card["subscale"]) == ["clarity", "overall", "warmth"]
    assert (card["group"] == "stub").all() and (card["instrument"] == "help").all() and (card["people"] == 4).all()
    warmth = card.set_index("subscale").loc["warmth"]
    ours, theirs = np.array([3.0, 4, 3, 4]), np.array([2.0, 3, 4, 2])
    assert warmth["value"] * pooled_sd(ours, theirs) == pytest.approx(ours.mean() - theirs.mean(), abs=1e-6)
