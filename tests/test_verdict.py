"""The report's verdict, "Can the personas stand in for people?", on a study with three stub
backends that differ by design.

One real run over HTTP (tests/stub_server.py): the shipped IRI, N hand-written personas (a gender
each, female/male as the people's codebook labels them), text answers, one item per request, and
three backends on the same stub told apart by their model name:

* ``people-like`` draws each answer from the 1,973 Briganti et al. (2018) people's distribution of
  that item's RAW answers, independently item by item: the item means are the people's, but the
  items do not go together (no subscale covariance, no relations);
* ``style`` draws the same way and answers one option higher (at most the top option): a response
  style, every raw answer up whatever the item's keying;
* ``random`` answers uniformly over the five options.

The report is written once (``psyq.write_report`` against the people, ``--human
iri=iri_briganti2018_keyed``); its sections are those :func:`build_sections` gives (caught on the
way, one build: a build fits the invariance sequence of every backend and takes most of the time).

Every check compares the scorecard with what was built into the stub: each figure with its value
expected by design, computed here with numpy from the people's answers alone (the independent
computation), within four standard errors; each mark with its figure and the cut-off the
scorecard states (:data:`psyq.analysis.statistics.standin.scorecard.CUTOFFS`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
import time

import numpy as np
import pandas as pd
import pytest
import yaml

from psyq import administer, human_data, load_instrument, load_study, write_report
from psyq.analysis.report import build
from psyq.analysis.report.render import table_files
from psyq.analysis.report.section import Section
from psyq.analysis.statistics.standin import scorecard as sc
from psyq.engine.trials.scoring import keyed_answers
from stub_server import StubServer

N_PERSONAS = 300
BACKENDS = ("people-like", "style", "random")
TITLE = "Can the personas stand in for people?"
COLUMNS = ["group", "instrument", "criterion", "subscale", "value", "low", "high", "people", "mark", "level", "note"]
IRI = load_instrument("iri")
PEOPLE_DATA = {"iri": "iri_briganti2018_keyed"}
PEOPLE = human_data(PEOPLE_DATA)["iri"].answers(IRI)          # raw answers, '1'..'28', gender
ITEMS = [i.id for i in IRI.rating_items]
SUBSCALES = [s.id for s in IRI.rating_subscales]
VALUES = [int(o.value) for o in IRI.scale]
CODES = {int(o.value): o.code for o in IRI.scale}             # A–E, as the prompt lists them
COUNTS = {i: [int((PEOPLE[i] == v).sum()) for v in VALUES] for i in ITEMS}
TOP = max(VALUES)


def answer(body: dict) -> str:
    """The stub's reply: the item is found by its text in the prompt; the draw is seeded by the model
    name and the whole conversation (the persona's backstory names the persona), so a run's answers
    are the same every time."""
    messages = body["messages"]
    prompt = messages[-1]["content"]
    asked = [i for i in IRI.rating_items if f"Statement: {i.text}\n" in prompt]
    assert len(asked) == 1, prompt
    digest = hashlib.sha256(json.dumps([body["model"], messages]).encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    if body["model"] == "random":
        value = rng.choice(VALUES)
    else:
        value = rng.choices(VALUES, weights=COUNTS[asked[0].id])[0]
        if body["model"] == "style":
            value = min(TOP, value + 1)
    return CODES[value]


@pytest.fixture(scope="module")
def verdict_run(tmp_path_factory):
    """The run, the report written from it, and the sections it rendered."""
    tmp = tmp_path_factory.mktemp("verdict")
    personas = [{"id": f"p{k:03d}", "attributes": {"gender": "female" if k % 2 else "male"},
                 "backstory": f"You are respondent number {k}."} for k in range(N_PERSONAS)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "hand", "include_baseline": True,
                                                     "personas": personas}))
    started = time.perf_counter()
    with StubServer(answer=answer) as stub:
        (tmp / "study.yaml").write_text(yaml.safe_dump({
            "psyq": "study/1", "id": "verdict_test", "instruments": ["iri"], "cohort": "cohort.yaml",
            "backends": [{"id": b, "kind": "openai", "base_url": stub.url, "model": b, "concurrency": 16}
                         for b in BACKENDS],
            "protocol": {"answer": "text", "option_order": "as_written", "repeats": 1, "seed": 3}}))
        result = asyncio.run(administer(load_study(tmp / "study.yaml"), tmp / "runs", log=lambda m: None))
    assert result.counts.get("answered") == len(BACKENDS) * (N_PERSONAS + 1) * len(ITEMS)     # + the baseline
    administered = time.perf_counter() - started
    built = []
    real_build = build._build

    def spy(*args, **kwargs):
        built.append(real_build(*args, **kwargs))
        return built[-1]

    started = time.perf_counter()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(build, "_build", spy)
        # WLSMV chosen (--estimator): an ordinal fit that fails — the style backend never answers A,
        # people-like's items do not covary — is then not refitted with the items continuous (ML),
        # which fails too and would more than double the report's time; no mark depends on it.
        html_path, md_path = write_report(result.run_dir.path, out_dir=tmp / "report",
                                          people=human_data(PEOPLE_DATA), estimator="WLSMV")
    print(f"\nadministered {administered:.1f} s, report {time.perf_counter() - started:.1f} s")
    (only,) = built                          # the report built its sections once
    sections = only.sections
    return {"sections": sections, "html": html_path.read_text(), "md": md_path.read_text(),
            "out": tmp / "report"}


def verdict_of(verdict_run) -> Section:
    """The verdict section, wherever it is (its place is checked on its own)."""
    verdict, = [s for s in verdict_run["sections"] if s.title == TITLE]
    return verdict


@pytest.fixture(scope="module")
def card(verdict_run) -> pd.DataFrame:
    verdict = verdict_of(verdict_run)
    (caption, frame), = verdict.tables
    assert caption.startswith("Scorecard: iri") and "1,973 young adults" in caption
    print("\n" + frame.drop(columns=["instrument"]).to_string(max_colwidth=50))
    print("\n".join(verdict.readings))
    return frame


def rows(card: pd.DataFrame, group: str, criterion: str) -> pd.DataFrame:
    return card[(card["group"] == group) & (card["criterion"] == criterion)].set_index("subscale")


# --- what each backend should give, computed from the people's answers alone ---------------------

def _people_keyed() -> pd.DataFrame:
    return keyed_answers(IRI, PEOPLE[ITEMS])


def _sum_sd(keyed: pd.DataFrame, sub: str) -> float:
    return float(keyed[[i.id for i in IRI.subscale_items(sub)]].sum(axis=1).std(ddof=1))


def expected_sd_ratio(model: str) -> dict[str, float]:
    """SD of a subscale sum of independent items (√ of the sum of the item variances) over the
    people's SD of that sum: people-like items have the people's variances, random ones the
    uniform's, (5² − 1)/12 = 2 (a reversed item's variance is its raw one)."""
    keyed = _people_keyed()
    out = {}
    for sub in SUBSCALES:
        ids = [i.id for i in IRI.subscale_items(sub)]
        variance = len(ids) * np.var(VALUES) if model == "random" else float(keyed[ids].var(ddof=0).sum())
        out[sub] = math.sqrt(variance) / _sum_sd(keyed, sub)
    return out


def expected_style(shift: int) -> dict[str, float]:
    """The style of raw answers moved up by `shift` (clipped at the top): per item the mean change
    of the people's raw answers, averaged over the forward and over the reversed items, the two
    averages averaged (style_and_trait's definition, computed on item means here)."""
    out = {}
    for sub in SUBSCALES:
        change = {i.id: float(np.minimum(PEOPLE[i.id] + shift, TOP).mean() - PEOPLE[i.id].mean())
                  for i in IRI.subscale_items(sub)}
        forward = np.mean([change[i.id] for i in IRI.subscale_items(sub) if not i.reverse])
        reversed_ = np.mean([change[i.id] for i in IRI.subscale_items(sub) if i.reverse])
        out[sub] = (forward + reversed_) / 2
    return out


def expected_g(model: str) -> dict[str, float]:
    """Personas' mean subscale sum minus the people's over the pooled SD, from item means alone:
    people-like keeps each item's mean (0), style moves each raw answer up (a reversed item's
    keyed answer down), random answers the middle value 2 on average."""
    keyed = _people_keyed()
    out = {}
    for sub in SUBSCALES:
        members = IRI.subscale_items(sub)
        if model == "people-like":
            gap = 0.0
        elif model == "style":
            gap = sum((-1 if i.reverse else 1) * float(np.minimum(PEOPLE[i.id] + 1, TOP).mean() - PEOPLE[i.id].mean())
                      for i in members)
        else:
            gap = sum(2.0 - float(keyed[i.id].mean()) for i in members)
        cohort_sd = _sum_sd(keyed, sub) * expected_sd_ratio("random" if model == "random" else "people-like")[sub]
        n_c, n_p = N_PERSONAS, len(PEOPLE)          # Hedges' pooled SD (the J correction is < 0.1 %)
        pooled = ((n_c - 1) * cohort_sd ** 2 + (n_p - 1) * _sum_sd(keyed, sub) ** 2) / (n_c + n_p - 2)
        out[sub] = gap / math.sqrt(pooled)
    return out


def se_log_sd_ratio(n_cohort: int, n_people: int = len(PEOPLE)) -> float:
    """Large-sample SE of log(SD ratio) of two independent normal samples."""
    return math.sqrt(1 / (2 * (n_cohort - 1)) + 1 / (2 * (n_people - 1)))


# --- the section and its table -----------------------------------------------------------------

def test_the_verdict_comes_first_with_a_scorecard_of_every_backend(verdict_run, card):
    # Built last from what the other sections computed, shown first (Section.lead).
    sections = verdict_run["sections"]
    assert sections[0].title == TITLE and sections[0].lead
    assert [s.title for s in sections].count(TITLE) == 1 and not any(s.lead for s in sections[1:])
    # The tidy frame of the scorecard, one group per backend of the study.
    assert list(card.columns) == COLUMNS
    assert sorted(set(card["group"])) == sorted(BACKENDS) and card["group"].notna().all()
    assert set(card["instrument"]) == {"iri"}
    for group in BACKENDS:          # the subscale criteria have a row per IRI subscale
        for criterion in ("level", "spread", "reliability", "style"):
            assert list(rows(card, group, criterion).index) == SUBSCALES, (group, criterion)
    # Structure was fitted for every backend (the same-construct section's fit reused, the others
    # fitted by the verdict): a figure, or the reason the fit failed, never "not fitted".
    for group in BACKENDS:
        assert (rows(card, group, "structure")["note"] != "not fitted").all(), group
    # No persona is a twin of a person (ids p000…, not r0001…): no individuals, no worth.
    assert not card["criterion"].isin(["individuals", "worth"]).any()
    assert any("No persona is a twin" in r for r in sections[0].readings)
    assert set(card["mark"]) <= {sc.MEETS, sc.FALLS_SHORT, sc.INCONCLUSIVE, sc.NOT_ESTIMABLE}


def test_the_model_answering_as_itself_is_left_out_of_the_verdict_and_shown_beside_it(verdict_run, card):
    # The cohort includes the baseline (no persona) on every backend: one respondent, not a cohort.
    # The distinguishability row counts the personas it compared: N_PERSONAS, not N_PERSONAS + 1.
    readings = verdict_of(verdict_run).readings
    said = [r for r in readings if r.startswith("The model answering as itself (no persona)")]
    assert len(said) == 1 and all(f"{b}: PT " in said[0] for b in BACKENDS), readings
    assert "percentile" in said[0]


def test_the_scorecard_lists_the_backends_in_the_order_of_the_study(card):
    # The study lists people-like, style, random (backend_items: "in the order the run lists them").
    assert list(dict.fromkeys(card["group"])) == list(BACKENDS)


def test_each_mark_follows_from_its_interval_and_the_stated_region(card):
    # The regions of scorecard.py's table, applied here to the intervals the table shows: inside meets,
    # wholly outside falls short (or inconclusive, said so, when Bonferroni over the criterion's rows
    # widens it), astride inconclusive.
    for _, row in card.iterrows():
        if pd.isna(row["value"]):
            assert row["mark"] == sc.NOT_ESTIMABLE and row["note"], row.to_dict()
            continue
        if row["criterion"] in ("structure", "latent_mean"):
            continue
        lower, upper = {"level": (-0.3, 0.3), "spread": sc.SD_RATIO, "reliability": (-sc.ALPHA_GAP, sc.ALPHA_GAP),
                        "distinguishable": (-np.inf, sc.AUC_MAX), "style": (-sc.STYLE_MAX, sc.STYLE_MAX),
                        "relations": (-0.3, 0.3) if row["note"].startswith("g:") else (-sc.RELATION_R, sc.RELATION_R)
                        }[row["criterion"]]
        if lower < row["low"] and row["high"] < upper:
            assert row["mark"] == sc.MEETS, row.to_dict()
        elif row["high"] < lower or row["low"] > upper:
            assert row["mark"] == sc.FALLS_SHORT or (row["mark"] == sc.INCONCLUSIVE and "Bonferroni" in row["note"]), \
                row.to_dict()
        else:
            assert row["mark"] == sc.INCONCLUSIVE, row.to_dict()


# --- people-like: the people's item distributions, items independent ------------------------------

def test_people_like_meets_level_and_style_but_not_spread_reliability_or_structure(card):
    # Built in: every item drawn from the people's own distribution of that item, so every subscale
    # mean is the people's (g near 0, within ±0.3 SD: level meets) and no raw answer is shifted
    # (style near 0: meets).
    level = rows(card, "people-like", "level")
    assert (level["mark"] == sc.MEETS).all(), level
    se = (level["high"] - level["low"]) / (2 * 1.6448536269514722)     # the 90 % interval
    assert ((level["value"] - pd.Series(expected_g("people-like"))).abs() < 4 * se).all()
    style = rows(card, "people-like", "style")
    assert (style["mark"] == sc.MEETS).all(), style
    # Built in: items drawn independently, so a subscale sum's SD is √(Σ item variances), about
    # 0.6–0.67 of the people's (who answer the items of a subscale alike): spread falls short
    # everywhere, the SD ratio being the one expected within 4 SE.
    spread = rows(card, "people-like", "spread")
    expected = pd.Series(expected_sd_ratio("people-like"))
    assert (np.log(spread["value"] / expected).abs() < 4 * se_log_sd_ratio(N_PERSONAS)).all(), (spread, expected)
    assert (spread["mark"] == sc.FALLS_SHORT).all()
    # Built in: independent items, so Cronbach's α near 0 against the people's .65–.75.
    alpha = rows(card, "people-like", "reliability")
    assert ((alpha["value"] + alpha["people"]).abs() < 0.4).all() and (alpha["people"] > 0.6).all()   # value: α − α
    assert (alpha["mark"] == sc.FALLS_SHORT).all()
    # Built in: no covariance among the items, so no factor structure: the invariance sequence does
    # not reach scalar invariance (or the model cannot be fitted), and no latent mean is compared.
    for criterion in ("structure", "latent_mean"):
        assert (rows(card, "people-like", criterion)["mark"] != sc.MEETS).all(), criterion


def test_people_like_is_told_apart_by_its_missing_covariance(card):
    # Built in: the marginals are the people's, only the way items go together is missing; the
    # non-linear classifier picks that up a little: AUC above the .60 allowed — but 150 tested per side
    # cannot place it above .60 with 90 % confidence, so the verdict says it cannot tell yet (falls
    # short only once the whole interval lies above .60).
    auc = rows(card, "people-like", "distinguishable").iloc[0]
    assert auc["value"] > sc.AUC_MAX and auc["mark"] != sc.MEETS
    assert auc["mark"] == (sc.FALLS_SHORT if auc["low"] > sc.AUC_MAX else sc.INCONCLUSIVE)
    assert auc["value"] < 0.85        # … far less than a shift of the answers (style, random) gives


# --- style: the same draws, every raw answer one option up ----------------------------------------

def test_style_gap_is_a_response_style_of_about_one_option_on_every_subscale(card):
    # Built in: raw answers up one option (clipped at E): +0.85 points per item on average on
    # forward and reversed items alike, so the style is positive, 0.7–1.0, on every subscale, the
    # value computed from the people's item means within 4 SE, and it falls short.
    style = rows(card, "style", "style")
    expected = pd.Series(expected_style(1))
    se = (style["high"] - style["low"]) / (2 * 1.6448536269514722)     # the 90 % interval
    assert style["value"].between(0.7, 1.0).all() and (style["low"] > 0).all(), style
    assert ((style["value"] - expected).abs() < 4 * se).all(), (style, expected)
    assert (style["mark"] == sc.FALLS_SHORT).all()
    # …and almost all of the items' displacement is style, little is keyed (trait-like):
    # style_and_trait's |style| / (|style| + |trait|), which the scorecard shows beside the style.
    assert (style["people"] > 0.75).all()


def test_style_misses_the_level_where_forward_items_outnumber_reversed_ones(card):
    # Built in: a raw shift raises forward items and lowers the (keyed) reversed ones: PT, FS and PD
    # (5 forward, 2 reversed) score higher (g about +0.4 to +0.6: level falls short); EC (4 forward,
    # 3 reversed) nearly cancels out, so level meets there though every answer moved — which is
    # why the style criterion is there.
    level = rows(card, "style", "level")
    se = (level["high"] - level["low"]) / (2 * 1.6448536269514722)     # the 90 % interval
    assert ((level["value"] - pd.Series(expected_g("style"))).abs() < 4 * se).all(), level
    for sub in ("PT", "FS", "PD"):           # FS's g (about .37) is too near the bound to say more than "not meets"
        assert level.loc[sub, "value"] > 0 and level.loc[sub, "mark"] != sc.MEETS, sub
    assert level.loc["PT", "mark"] == level.loc["PD", "mark"] == sc.FALLS_SHORT
    assert level.loc["EC", "mark"] == sc.MEETS
    # The same independent draws as people-like: spread and reliability fall short too, and a
    # classifier tells these answers from people's almost perfectly (nobody answers A).
    assert (rows(card, "style", "spread")["mark"] == sc.FALLS_SHORT).all()
    assert (rows(card, "style", "reliability")["mark"] == sc.FALLS_SHORT).all()
    auc = rows(card, "style", "distinguishable").iloc[0]
    assert auc["value"] > 0.95 and auc["mark"] == sc.FALLS_SHORT
    for criterion in ("structure", "latent_mean"):
        assert (rows(card, "style", criterion)["mark"] != sc.MEETS).all(), criterion


def test_the_verdict_says_the_style_backends_gap_is_a_response_style(verdict_run):
    # Built in: the style backend's level gap is the raw shift, so its reading names response style.
    readings = verdict_of(verdict_run).readings
    said = [r for r in readings if r.startswith("style: the gap is largely a response style")]
    assert len(said) == 1, readings
    assert re.search(r"style shift = 0\.[789]\d on (PT|FS|EC|PD)", said[0]), said[0]
    # Built in: people-like has no gap and no style: no such sentence for it.
    assert not any(r.startswith("people-like: the gap") for r in readings)


def test_the_verdict_does_not_call_random_answers_a_response_style(verdict_run, card):
    # Built in: uniform answers (mean 2 on every item) move the forward and the reversed items of a
    # subscale in opposite raw directions (trait-like): the style part of the displacement,
    # |style| / (|style| + |trait|) from the people's item means, is 0.00, 0.21, 0.10 and 0.37 on
    # PT, FS, EC and PD, though |style| passes 0.10 on FS and PD (its mark falls short there).
    assert rows(card, "random", "style")["people"].mean() < 0.5
    readings = verdict_of(verdict_run).readings
    assert not any(r.startswith("random: the gap is largely a response style") for r in readings), readings


def test_the_uses_sentences_name_who_can_stand_in_for_the_means(verdict_run):
    # Built in: only people-like has the people's item means.
    readings = verdict_of(verdict_run).readings
    means = [r for r in readings if r.startswith("Estimating people's subscale means")]
    # Each sentence names the people, from the human data's codebook.
    who = "(against 1,973 young adults in Belgium, answering in French (Briganti et al., 2018))"
    assert len(means) == 1 and means[0].startswith(f"Estimating people's subscale means {who}"), means
    assert ": people-like can stand in;" in means[0]
    assert "style: g = " in means[0] and "random: g = " in means[0]
    # Built in: no backend has the people's covariance: none stands in for spread, reliability and
    # structure. A classifier tells style and random apart; people-like it cannot place above .60 yet,
    # and the sentence says how many personas would decide it.
    said = [r for r in readings if r.startswith("Reproducing people's spread, reliability and factor structure")]
    assert len(said) == 1 and ": no model can stand in (" in said[0], said
    said = [r for r in readings if r.startswith("Answering indistinguishably from people")]
    assert len(said) == 1 and ": cannot (style: AUC = " in said[0] and "random: AUC = " in said[0], said
    assert re.search(r"cannot tell yet \(people-like: about [\d,]+ personas would decide it", said[0]), said


# --- random: uniform over the five options ---------------------------------------------------------

def test_random_answers_fall_short_of_the_people(card):
    # Built in: every option equally often, item mean 2: subscale means 1.7 to 5.3 points from the
    # people's (g from −1.2 to +0.4): level falls short on PT, FS and EC; PD's +0.4 lies too near the
    # bound to fall short with the four subscales allowed for.
    level = rows(card, "random", "level")
    se = (level["high"] - level["low"]) / (2 * 1.6448536269514722)     # the 90 % interval
    assert ((level["value"] - pd.Series(expected_g("random"))).abs() < 4 * se).all(), level
    assert (level.loc[["PT", "FS", "EC"], "mark"] == sc.FALLS_SHORT).all() and level.loc["PD", "mark"] != sc.MEETS
    # Built in: independent items: α near 0, no structure, and a classifier tells them apart.
    assert (rows(card, "random", "reliability")["mark"] == sc.FALLS_SHORT).all()
    for criterion in ("structure", "latent_mean"):
        assert (rows(card, "random", criterion)["mark"] != sc.MEETS).all(), criterion
    auc = rows(card, "random", "distinguishable").iloc[0]
    assert auc["value"] > 0.85 and auc["mark"] == sc.FALLS_SHORT
    # Built in: uniform items have variance 2, more than the people's (≈ 1–1.3), which makes up for
    # the missing covariance: the SD ratio is √(7 · 2) / the people's SD, 0.70–0.82, astride the
    # 0.80 cut-off, so the spread mark is not asserted, only the figure (within 4 SE).
    spread = rows(card, "random", "spread")
    expected = pd.Series(expected_sd_ratio("random"))
    assert (np.log(spread["value"] / expected).abs() < 4 * se_log_sd_ratio(N_PERSONAS)).all(), (spread, expected)
    # Relations: the personas' subscale intercorrelations are 0 by design; the people's FS–EC and
    # EC–PD (about .3) are not: those differences lie beyond ±.15, so relations fall short.
    relations = rows(card, "random", "relations")
    assert sc.FALLS_SHORT in set(relations["mark"]), relations


# --- the written report ------------------------------------------------------------------------------

def test_the_written_report_puts_the_verdict_before_the_methods(verdict_run, card):
    html, md = verdict_run["html"], verdict_run["md"]
    heading = html.index(f">{TITLE}</h2>")
    assert heading < html.index("<section class='methods' id='methods'>") < html.index(">Study</h2>")
    nav = html[html.index("<nav>"):html.index("</nav>")]
    assert nav.index(TITLE) < nav.index("Methods</a>")
    assert md.index(f"## {TITLE}") < md.index("## Methods (generated: paste and edit)") < md.index("## Study")
    verdict_md = md[md.index(f"## {TITLE}"):md.index("## Methods")]
    assert "*Scorecard: iri, each model against people (1,973 young adults in Belgium" in verdict_md
    assert "Marks: meets (the 90 % interval inside the region)" in verdict_md
    # The scorecard's full table is Table 1, written as CSV beside the report, every row of it.
    name = table_files(verdict_run["sections"])[0]
    assert f"Full table: [{name}]({name})" in verdict_md
    written = pd.read_csv(verdict_run["out"] / name)
    assert sorted(set(written["group"])) == sorted(BACKENDS) and len(written) == len(card)
