"""`psyq preregister STUDY --out DIR`: the pre-registration in the OSF / AsPredicted sections, as
Markdown and JSON (analysis/preregistration/). Its models and files are what `psyq run` then
records (the quick start run against the stub, as tests/test_plan.py runs it); its numbers come
from the code (the scorecard's cut-offs, psyq report's defaults) and are checked against a hand
computation here (the interval widths) or the files themselves (SHA-256 by hashlib)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import docx
from scipy.stats import norm

from cli_helper import psyq_in_process as psyq
from stub_server import StubServer

from psyq.analysis.report.render import markdown_text
from psyq.analysis.statistics.standin import scorecard
from psyq.engine.files.shipped import locate

ROOT = Path(__file__).resolve().parents[1]
# The OSF Preregistration's sections, in its order, with the models and files psyq adds.
SECTIONS = ["Study information", "Design plan", "Sampling plan", "Variables",
            "Models and every setting (data collection procedures)", "Analysis plan", "Files this plan rests on",
            "Other"]


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_the_quickstart_plan_is_what_the_run_then_records_in_the_templates_sections(tmp_path):
    study = tmp_path / "quickstart.yaml"
    study.write_text((ROOT / "studies" / "quickstart.yaml").read_text())
    with StubServer() as stub:
        flags = ["--base-url", stub.url, "--model", "stub-model", "--runs-dir", str(tmp_path / "runs")]
        done = psyq("preregister", study, *flags, "--out", tmp_path / "prereg")
        assert done.returncode == 0, done.stderr
        assert psyq("run", study, *flags).returncode == 0
    plan = json.loads((tmp_path / "prereg" / "preregistration.json").read_text())
    md = (tmp_path / "prereg" / "preregistration.md").read_text()
    [manifest_path] = (tmp_path / "runs").rglob("manifest.json")
    manifest = json.loads(manifest_path.read_text())
    assert plan["psyq"] == "preregistration/1" and plan["psyq_version"] == manifest["psyq_version"]
    assert plan["date"] == plan["created_at"][:10]
    assert [line[3:] for line in md.splitlines() if line.startswith("## ")] == SECTIONS
    # The same in Word (the report's renderer): the title, the sections in order, each table's cells
    # the Markdown's.
    word = docx.Document(tmp_path / "prereg" / "preregistration.docx")
    headings = [p.text for p in word.paragraphs if p.style.name.startswith(("Heading", "Title"))]
    assert headings[0] == md.splitlines()[0][2:] and headings[0].startswith("Pre-registration: quickstart (psyq ")
    assert headings[1:] == SECTIONS
    md_rows = [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines()
               if line.startswith("|") and not set(line) <= set("|-: ")]
    assert len(word.tables) >= 5 and len(md_rows) > 20
    assert [[markdown_text(c.text) for c in row.cells] for t in word.tables for row in t.rows] == md_rows
    # The models with every setting, the files and the run id: what `psyq run` then wrote.
    assert plan["study"]["run_id"] == manifest_path.parent.name == manifest["run_id"]
    assert plan["run"]["backends"] == manifest["backends"]
    assert plan["run"]["files"] == manifest["files"] and plan["run"]["protocol"] == manifest["protocol"]
    assert plan["sample_size"]["trials"] == manifest["trials_planned"] == 13 * 28
    # Every file it rests on, with its SHA-256 (hashlib here).
    files = {f["name"]: f for f in plan["files"]}
    assert files["quickstart.yaml"]["sha256"] == sha256(study)
    assert {f["role"] for f in plan["files"]} == {"study", "instrument", "cohort"}
    for name, f in files.items():
        assert f["sha256"] == sha256(study.parent / name), name
    # The cohort and how it is drawn: the sample block of personas/adults_small.yaml.
    cohort = plan["cohort"]
    assert (cohort["drawn"], cohort["personas"], cohort["baseline"]) == ("sample", 12, True)
    assert (cohort["sample"]["size"], cohort["sample"]["seed"]) == (12, 20240601)
    assert "12 personas drawn by psyq's seeded sampler with seed 20240601 (ids adult01 to adult12)" in md
    # The instruments with their sources (the instrument file's citations).
    [iri] = plan["instruments"]
    assert iri["citations"]["davis1980"].startswith("Davis, M. H. (1980)") and iri["content_source"] == "published"
    # The analysis plan from the code: psyq report's defaults, the scorecard's cut-offs.
    analysis = plan["analysis"]
    assert (analysis["bound"], analysis["correction"], analysis["confidence"]) == (0.3, "holm", 0.9)
    assert analysis["cutoffs"]["sd_ratio"] == list(scorecard.SD_RATIO)
    assert analysis["cutoffs"]["auc_max"] == scorecard.AUC_MAX and analysis["estimator"] == {"iri": "WLSMV"}
    assert [u["criteria"] for u in analysis["uses"]] == [["level"], ["spread", "reliability", "structure"],
                                                         ["relations"], ["distinguishable"]]
    assert analysis["seeds"]["protocol"] == 1 and analysis["missing"]["reask_limit"] == 2
    assert "refusal" in analysis["missing"]["not_reasked"]
    assert "H1. Estimating people's subscale means: decided by level." in md
    assert "equivalence bound ±0.30 SD" in md
    # No people given: no power, the level interval's widths against the norms instead, said so.
    size = plan["sample_size"]
    assert size["power"] is None and "Power was not computed" in size["note"]
    n1, widths = 12, {r["norm_sample"]: r for r in size["ci_widths"]}
    for sample, n2 in (("briganti2018", 1973), ("davis1980", 1161)):
        j = 1 - 3 / (4 * (n1 + n2 - 2) - 1)            # Hedges' small-sample correction, at g = 0
        assert math.isclose(widths[sample]["half_width"], j * norm.ppf(0.95) * math.sqrt(1 / n1 + 1 / n2))
        assert widths[sample]["n_people"] == n2 and widths[sample]["can_meet"] is False
    assert "power was not computed (no people's answers given)" in md
    assert "Interval widths at 12 personas" in md


def test_preregister_with_people_gives_the_verdicts_power_table_in_the_markdown_and_the_json(tmp_path):
    out = tmp_path / "prereg"
    done = psyq("preregister", "quickstart", "--human", "iri=iri_briganti2018_keyed", "--power-reps", "2",
                "--runs-dir", tmp_path / "runs", "--out", out)
    assert done.returncode == 0, done.stderr
    plan = json.loads((out / "preregistration.json").read_text())
    md = (out / "preregistration.md").read_text()
    power = plan["sample_size"]["power"]["iri"]
    assert (power["personas"], power["reps"]) == (12, 2) and power["people"].startswith("1,973 young adults")
    criteria = [r["criterion"] for r in power["at_study_size"]]
    assert criteria == ["level", "spread", "reliability", "distinguishable", "style", "relations"]
    assert plan["sample_size"]["ci_widths"] is None
    # The table: one row per criterion, the share of each mark and the size that meets in 80 % of draws.
    table = md.split("*Verdict power at 12 personas: iri*", 1)[1].split("Full table", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| criterion")]
    assert [r.split(" | ")[0][2:] for r in rows] == criteria
    for row, r in zip(rows, power["at_study_size"]):
        cells = row.replace("\xa0", " ").split(" | ")
        assert cells[1:5] == [f"{round(100 * r[m])} %" for m in ("meets", "falls_short", "inconclusive", "not_estimable")]
    # The people are named with their file's SHA-256.
    people = locate("iri_briganti2018_keyed", "human data")
    assert plan["people"]["iri"]["sha256"] == sha256(people)
    assert {"role": "people", "name": "psyq's human data iri_briganti2018_keyed", "sha256": sha256(people)} \
        in plan["files"]


def test_preregister_refuses_people_for_an_instrument_the_study_does_not_ask(tmp_path):
    done = psyq("preregister", "quickstart", "--human", "bes=iri_briganti2018_keyed", "--out", tmp_path / "p",
                "--runs-dir", tmp_path)
    assert done.returncode == 2 and "--human names no instrument of the study" in done.stderr
    assert not (tmp_path / "p").exists()


def test_a_conditions_study_without_the_model_as_itself_is_planned_as_it_is(tmp_path):
    # The shipped conditions study: no baseline in its cohort, and conditions that change the answer mode.
    done = psyq("preregister", "compare_conditions", "--runs-dir", tmp_path / "runs", "--out", tmp_path / "prereg")
    assert done.returncode == 0, done.stderr
    md = (tmp_path / "prereg" / "preregistration.md").read_text()
    assert "with the model as itself" not in md and "answering as itself" not in md
    assert "6 personas answering each of 1 model(s) in each of 4 conditions; 672 trials planned." in md
    assert "the answer read as each condition says (the table of conditions), else as text" in md
