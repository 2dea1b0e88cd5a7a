"""The report's "Is it the same construct?" section, end to end and in its parts.

End to end: 120 sampled personas answer the IRI over real HTTP (the stub server, answering as a
simulated respondent with one latent trait per IRI subscale), then `psyq report --human
iri=<shipped Briganti file>:keyed` (run in this process, tests/cli_helper.py) against the 1,973 people. The section's numbers must be those
of the analysis functions called here directly on the exported answers and the CSV (an
independent path through the data: export table + pandas, not the report's own readers). The
statistics themselves are checked against lavaan's published figures and by parameter recovery
in tests/test_invariance.py, tests/test_irt.py and tests/test_dif.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from psyq import administer, export_table, load_study
from psyq.analysis.statistics.invariance import measurement_invariance
from psyq.analysis.report.sections.same_construct import construct_section
from psyq.analysis.statistics.invariance.against_people import factor_structure
from psyq.engine.design.instrument import load_instrument
from psyq.engine.trials.scoring import keyed_answers
from cli_helper import psyq_in_process
from stub_server import StubServer

ROOT = Path(__file__).resolve().parents[1]
IRI = load_instrument(ROOT / "instruments" / "iri.yaml")
BRIGANTI = ROOT / "instruments" / "data" / "iri_briganti2018_keyed.csv"
N_PERSONAS = 120


def _unit(*parts: str) -> float:
    """A number in (0, 1) fixed by the text of `parts` (the stub's answers are reproducible)."""
    digest = hashlib.sha256("|".join(parts).encode()).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2 ** 64


def simulated_respondent(body: dict) -> str:
    """Answer an IRI item as a respondent with one normal trait per subscale (drawn from the persona
    text in the system prompt): keyed answer = round(2 + θ + noise) within 0–4, reversed back for
    reverse-keyed items, given as the option's letter (the options are listed A–E, as written)."""
    messages = body["messages"]
    persona = " ".join(m["content"] for m in messages if m["role"] == "system")
    prompt = messages[-1]["content"]
    item = next(i for i in IRI.rating_items if f"Statement: {i.text}" in prompt)
    normal = lambda *parts: math.sqrt(2) * _erfinv(2 * _unit(*parts) - 1)   # noqa: E731
    theta = normal(persona, item.subscales[0])
    keyed = min(4, max(0, round(2 + theta + 0.8 * normal(persona, item.id))))
    return "ABCDE"[4 - keyed if item.reverse else keyed]


def _erfinv(y: float) -> float:
    from scipy.special import erfinv
    return float(erfinv(y))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("construct")
    # The stub answers by the persona's text: attributes with many values keep the 120 personas (and
    # so their answers) distinct; 2 genders × 8 ages would give 16 distinct respondents and a
    # singular covariance.
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({
        "psyq": "cohort/1", "id": "sampled", "include_baseline": False,
        "sample": {"size": N_PERSONAS, "seed": 7, "id_prefix": "p",
                   "attributes": {"gender": {"categories": {"female": 1, "male": 1}}, "age": {"range": [18, 80]},
                                  "height_cm": {"range": [150, 200]}}}}))
    with StubServer(answer=simulated_respondent) as stub:
        (tmp / "study.yaml").write_text(yaml.safe_dump({
            "psyq": "study/1", "id": "construct_test", "instruments": [str(ROOT / "instruments" / "iri.yaml")],
            "cohort": "cohort.yaml",
            "backends": [{"id": "stub", "kind": "openai", "base_url": stub.url, "model": "stub-model",
                          "concurrency": 16}],
            "protocol": {"answer": "text", "option_order": "as_written", "repeats": 1, "seed": 5}}))
        result = asyncio.run(administer(load_study(tmp / "study.yaml"), tmp / "runs", log=lambda m: None))
    assert result.counts.get("answered") == N_PERSONAS * 28
    return result.run_dir.path


def _answers_by_hand(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Cohort and human answers, keyed, read without the report's code."""
    table = export_table(run_dir)
    cohort = table.pivot(index="respondent_id", columns="item_id", values="value")
    people = pd.read_csv(BRIGANTI, index_col="respondent_id")
    people = people.rename(columns=lambda c: c.removeprefix("davi"))   # already keyed (instruments/data/README.md)
    return keyed_answers(IRI, cohort), people[[i.id for i in IRI.rating_items]].astype(float)


def test_report_shows_invariance_irt_and_dif_against_the_briganti_people(run_dir, tmp_path):
    out = psyq_in_process("report", run_dir, "--out", tmp_path, "--human", f"iri={BRIGANTI}:keyed")
    assert out.returncode == 0, out.stderr
    md = (tmp_path / "report.md").read_text()
    html = (tmp_path / "report.html").read_text()
    assert "## Is it the same construct?" in md and ">Is it the same construct?</h2>" in html
    section = md[md.index("## Is it the same construct?"):]

    # The invariance steps are those computed here from the exported answers and the raw CSV.
    cohort, people = _answers_by_hand(run_dir)
    data = pd.concat([cohort.assign(sample="personas"), people.assign(sample="people")], ignore_index=True)
    factors, problem = factor_structure(IRI)
    assert problem == "" and list(factors) == ["PT", "FS", "EC", "PD"]
    # Five-point Likert items: ordinal by default (WLSMV), the people the reference group.
    data["sample"] = pd.Categorical(data["sample"], categories=["people", "personas"])
    expected = measurement_invariance(data, factors, "sample", estimator="WLSMV")
    assert expected["estimable"].all()
    assert "estimator WLSMV" in section
    for row in expected.itertuples():
        released = f" {row.released} \\|" if row.released else ""
        assert re.search(rf"\| {row.step} \|{released}[^\n]*? {row.chi2_scaled:.2f} \| {int(row.df)} \|", section), row.step
        assert f"iri {row.step}:" in section       # one plain sentence per step
    # The latent means: one sentence per factor, and their table.
    means = expected.attrs["latent_means"]
    assert len(means) == 4 and set(means["group"]) == {"personas"} and set(means["reference"]) == {"people"}
    for row in means.itertuples():
        assert f"iri {row.factor}: the latent mean of the personas is d = " in section
    assert "Latent means, personas against people: iri (estimator WLSMV)" in section
    assert ("iri: no equality was released: no step failed by Chen's rule" in section) == \
        (not expected["step"].str.startswith("partial").any())
    # GRM rows for both samples of every item, DIF rows for every item, the information plot.
    assert section.count("| personas |") >= 28 and section.count("| people |") >= 28
    assert "items work differently for personas than for people" in section
    assert "Test information per subscale: iri, personas and people" in html
    # The methods paragraph names the estimator and the software.
    methods = (tmp_path / "methods.md").read_text()
    assert "two-group confirmatory factor analysis" in methods and "graded response model" in methods
    assert "WLSMV" in methods and "Wu and Estabrook (2016)" in methods and "lavTestScore" in methods


def test_too_few_personas_is_not_estimable_with_the_reason():
    people = pd.read_csv(BRIGANTI, index_col="respondent_id").rename(columns=lambda c: c.removeprefix("davi"))
    raw = people.copy()
    reverse = [i.id for i in IRI.rating_items if i.reverse]
    raw[reverse] = 4 - raw[reverse]
    section = construct_section({"iri": (IRI, raw.iloc[:20], raw)})
    # Nothing of the invariance steps, the personas' GRM or DIF is estimable: one sentence each with its
    # reason, no table of dashes (nor the note on reading the steps' fit); the people's GRM is tabled alone.
    assert section.readings[-3:] == [
        "iri: measurement invariance not estimable: group 'personas' has 20 respondents for 28 items.",
        "iri: graded response model of the personas not estimable in any subscale (PT, FS, EC, PD): 20 respondents "
        "(at least 50 needed).",
        "iri: differential item functioning not estimable: 1,973 reference and 20 focal respondents with every "
        "answer (at least 30 per group needed)."]
    (caption, grm), = section.tables
    assert caption.startswith("Graded response model per subscale: iri, people only")
    assert len(grm) == 28 and (grm["sample"] == "people").all() and grm["estimable"].all()
    assert section.note is None
    (caption, _), = section.figures
    assert caption == "Test information per subscale: iri, people only"


def test_an_item_on_two_first_order_subscales_is_said_not_fitted():
    mini = load_instrument(ROOT / "tests" / "data" / "mini_1to7.yaml")    # item b counts towards X and Y
    factors, problem = factor_structure(mini)
    assert "b count towards more than one first-order subscale" in problem
    answers = pd.DataFrame(np.arange(1, 81).reshape(20, 4) % 7 + 1, columns=list("abcd"))
    section = construct_section({"mini": (mini, answers, answers)})
    assert section.tables == [] and section.readings[-1].startswith("mini: measurement invariance and IRT not "
                                                                    "estimable: item(s)")


def test_people_against_people_are_invariant_and_both_curves_are_drawn():
    """200 of the 1,973 people as the 'personas': the same population, so every step holds and the
    information plot has one line per sample in every subscale panel."""
    people = pd.read_csv(BRIGANTI, index_col="respondent_id").rename(columns=lambda c: c.removeprefix("davi"))
    reverse = [i.id for i in IRI.rating_items if i.reverse]
    people[reverse] = 4 - people[reverse]          # raw answers, as the section expects
    section = construct_section({"iri": (IRI, people.sample(200, random_state=3), people)})
    steps = section.tables[0][1]
    assert steps["estimable"].all() and (steps["delta_cfi"].dropna() > -0.01).all()
    assert "iri metric: the loadings are equal in the groups" in " ".join(section.readings)
    # A curve per subscale and sample whose model was estimable in every item; the others are said.
    grm = next(table for caption, table in section.tables if caption.startswith("Graded response model"))
    fitted = grm.groupby(["subscale", "sample"])["estimable"].all()
    assert fitted.sum() >= 6
    (caption, figure), = section.figures
    gids = {line.get_gid() for ax in figure.axes for line in ax.get_lines() if line.get_gid()}
    assert gids == {f"information:{s}:{g}" for (s, g), ok in fitted.items() if ok}
    for (sub, sample), ok in fitted.items():
        said = f"iri {sub}: graded response model of the {sample} not estimable: "
        assert (said in " ".join(section.readings)) == (not ok)


def test_ordinal_fit_the_answers_do_not_allow_is_refitted_continuous_and_said():
    """The 'personas' never chose the top answer of item 1: no threshold there, so the default ordinal
    fit (WLSMV) is not estimable; the section says why and fits the items as continuous (ML)."""
    people = pd.read_csv(BRIGANTI, index_col="respondent_id").rename(columns=lambda c: c.removeprefix("davi"))
    reverse = [i.id for i in IRI.rating_items if i.reverse]
    people[reverse] = 4 - people[reverse]
    personas = people.sample(300, random_state=4)
    personas.loc[personas["1"] == 4, "1"] = 3
    section = construct_section({"iri": (IRI, personas, people)})
    said = [r for r in section.readings if "the ordinal fit (WLSMV) is not estimable" in r]
    assert len(said) == 1 and "item 1: nobody in group 'personas' answered 4, which others did" in said[0]
    assert said[0].endswith("the items were fitted as continuous (ML) instead, which a scale with few used "
                            "categories strains.")
    caption, steps = section.tables[0]
    assert caption.endswith("estimator ML)") and steps.attrs["estimator"] == "ML" and steps["estimable"].all()


def test_the_estimator_chosen_is_used_and_never_swapped():
    people = pd.read_csv(BRIGANTI, index_col="respondent_id").rename(columns=lambda c: c.removeprefix("davi"))
    reverse = [i.id for i in IRI.rating_items if i.reverse]
    people[reverse] = 4 - people[reverse]
    personas = people.sample(300, random_state=4)
    section = construct_section({"iri": (IRI, personas, people)}, estimator="MLR")
    caption, steps = section.tables[0]
    assert caption.endswith("estimator MLR)") and steps["chi2_scaled"].notna().all()
    personas.loc[personas["1"] == 4, "1"] = 3
    section = construct_section({"iri": (IRI, personas, people)}, estimator="WLSMV")
    assert not any("instead" in r for r in section.readings)
    assert "iri: measurement invariance not estimable: item 1: nobody in group 'personas' answered 4" in " ".join(section.readings)


def test_the_study_chooses_the_estimator_and_the_command_line_overrides(run_dir, tmp_path):
    """`report: {estimator: MLR}` in the study is what `psyq report` fits; `--estimator` wins over it."""
    from psyq.analysis.report.context import estimator_choice
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    study = yaml.safe_load((copy / "study.yaml").read_text())
    (copy / "study.yaml").write_text(yaml.safe_dump({**study, "report": {"estimator": "MLR"}}))
    assert estimator_choice(copy, None) == "MLR" and estimator_choice(copy, "ML") == "ML"
    assert estimator_choice(run_dir, None) is None
    out = psyq_in_process("report", copy, "--out", tmp_path / "out", "--human", f"iri={BRIGANTI}:keyed")
    assert out.returncode == 0, out.stderr
    md = (tmp_path / "out" / "report.md").read_text()
    assert "Measurement invariance, personas against people: iri (PT, FS, EC, PD; estimator MLR)" in md
    assert "Estimator MLR: χ² is the Yuan–Bentler scaled statistic" in md


def test_released_intercepts_are_tabled_and_the_latent_means_read_under_partial_invariance():
    """1,500 of the people as 'personas' with three items answered two points higher or lower: the
    scalar step fails, the score tests release exactly those three intercepts, and the latent means
    (the same people: d near 0) are read under partial scalar invariance. The shifted answers leave
    answer categories empty among the 'personas', so the fit is continuous (ML) and says why."""
    people = pd.read_csv(BRIGANTI, index_col="respondent_id").rename(columns=lambda c: c.removeprefix("davi"))
    reverse = [i.id for i in IRI.rating_items if i.reverse]
    people[reverse] = 4 - people[reverse]
    personas = people.sample(1500, random_state=5).copy()
    for item, by in (("5", 2), ("16", -2), ("20", 2)):
        personas[item] = np.clip(personas[item] + by, 0, 4)
    section = construct_section({"iri": (IRI, personas, people)})
    caption, steps = section.tables[0]
    assert steps.attrs["estimator"] == "ML"
    partial = steps.set_index("step").loc["partial scalar"]
    assert set(partial["released"].split(", ")) == {"5~1", "16~1", "20~1"}
    text = " ".join(section.readings)
    assert f"iri partial scalar: with {partial['released']} free in each group, the other intercepts are equal" in text
    means = next(table for caption, table in section.tables if caption.startswith("Latent means"))
    assert (means["step"] == "partial scalar").all() and (means["d"].abs() < 0.1).all()
    assert f"on the same scale (partial scalar invariance, {partial['released']} free)" in text
