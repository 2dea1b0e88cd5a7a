"""Empathic accuracy from a run to the report: cohort scores per vignette and overall, human
perceivers scored the same way, targets' self-reports replacing design-intended profiles, and
judge similarity of the free-text inferences. The run is real (stub server on 127.0.0.1, SQLite);
the expected accuracies are computed by hand below from the scripted ratings.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from psyq.analysis.report import build_sections
from psyq.analysis.scoring.human_data import human_data
from psyq.engine.backends import BackendConfig
from psyq.cli import main
from psyq.engine.judging.answer_judge import judge_run, load_rubric
from stub_server import StubServer
from test_administer import run, write_study
from test_vignettes import MINI, json_reply

ROOT = Path(__file__).resolve().parents[1]

# The scripted replies (test_vignettes.json_reply) and the toy targets (mini_vignettes.yaml):
#   v1 stop 1: perceiver (joy, sadness, anger, fear) = 1, 0, 0, 2   target 1, 0, 0, 3
#   v1 stop 2: perceiver 4, 0, 0, 1                                 target 4, 0, 0, 0
#   v2 stop 1: perceiver 0, 1, 4, 0                                 target 0, 2, 4, 1
# v2 by hand: means 1.25 and 1.75; deviations (-1.25, -.25, 2.75, -1.25) and (-1.75, .25, 2.25, -.75);
# Σxy = 9.25, Σx² = 10.75, Σy² = 8.75 -> r = 9.25 / √(10.75 × 8.75). MAE = (0 + 1 + 0 + 1) / 4.
# Lin's CCC with population moments: 2 × 9.25/4 / (10.75/4 + 8.75/4 + (1.25 − 1.75)²) = 4.625 / 5.125.
R_V2 = 9.25 / np.sqrt(10.75 * 8.75)
CCC_V2 = 4.625 / 5.125
# v1 stop 1: means .75 and 1; dev (.25, -.75, -.75, 1.25), (0, -1, -1, 2): Σxy = 0 + .75 + .75 + 2.5 = 4,
# Σx² = .0625 + .5625 + .5625 + 1.5625 = 2.75, Σy² = 6 -> r = 4 / √16.5.
# v1 stop 2: means 1.25 and 1; dev (2.75, -1.25, -1.25, -.25), (3, -1, -1, -1): Σxy = 8.25 + 1.25 + 1.25 + .25 = 11,
# Σx² = 7.5625 + 1.5625 + 1.5625 + .0625 = 10.75, Σy² = 12 -> r = 11 / √129.
R_V1 = np.tanh((np.arctanh(4 / np.sqrt(16.5)) + np.arctanh(11 / np.sqrt(129))) / 2)
OVERALL = np.tanh((np.arctanh(R_V1) + np.arctanh(R_V2)) / 2)     # vignettes weighted equally


@pytest.fixture(scope="module")
def run_path(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ea")
    with StubServer(answer=json_reply) as stub:
        result = run(write_study(tmp, stub.url, personas=[{"id": "p1"}, {"id": "p2"}], instrument=MINI,
                                 protocol={"answer": "json"}), tmp / "runs")
    assert result.counts == {"answered": 6}
    return result.run_dir.path


def ea_section(run_path, **kw):
    _, sections = build_sections(run_path, **kw)
    return next(s for s in sections if s.title.startswith("Empathic accuracy"))


def table(section, title):
    return next(frame for t, frame in section.tables if t.startswith(title))


def test_cohort_accuracy_per_vignette_and_overall(run_path):
    section = ea_section(run_path)
    per_vignette = table(section, "Per vignette").set_index("vignette")
    assert per_vignette.loc["v2", "r"] == pytest.approx(R_V2)
    assert per_vignette.loc["v2", "mae"] == pytest.approx(0.5)
    assert per_vignette.loc["v2", "ccc"] == pytest.approx(CCC_V2)
    assert per_vignette.loc["v1", "r"] == pytest.approx(R_V1)
    overall = table(section, "Overall").iloc[0]
    assert overall["perceivers"] == 2 and overall["r"] == pytest.approx(OVERALL)
    assert any("design-intended" in r for r in section.readings)
    assert any("agreement with design-intended profiles r = " + f"{OVERALL:.2f}" in r for r in section.readings)


def write_perceivers(path: Path) -> Path:
    # Human h1 rates v2 stop 1 exactly as the target (r = 1 -> z clipped at arctanh(.9999));
    # h2 rates it reversed against the target's order (4, 2, 0, 1 vs 0, 2, 4, 1): r by hand below.
    rows = ["respondent_id,vignette_id,segment,emotion,rating"]
    for who, values in (("h1", [0, 2, 4, 1]), ("h2", [4, 2, 0, 1])):
        rows += [f"{who},v2,1,{e},{v}" for e, v in zip(["joy", "sadness", "anger", "fear"], values)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_human_perceivers_scored_the_same_way(run_path, tmp_path):
    section = ea_section(run_path, people=human_data({"mini_vignettes": write_perceivers(tmp_path / "p.csv")}))
    overall = table(section, "Overall").set_index("group")
    # h2: x = (4, 2, 0, 1), y = (0, 2, 4, 1), both mean 1.75: dev (2.25, .25, -1.75, -.75) and
    # (-1.75, .25, 2.25, -.75): Σxy = -3.9375 + .0625 - 3.9375 + .5625 = -7.25, Σx² = Σy² = 8.75.
    z_h1, z_h2 = np.arctanh(0.9999), np.arctanh(-7.25 / 8.75)
    assert overall.loc["human perceivers", "z"] == pytest.approx((z_h1 + z_h2) / 2)
    assert overall.loc["human perceivers", "perceivers"] == 2
    assert any(r.startswith("stub against human perceivers") for r in section.readings)


def test_targets_self_reports_replace_the_design(run_path, tmp_path):
    rows = ["vignette_id,segment,emotion,intensity,thoughts"]
    for vignette, stop, values in (("v1", 1, [1, 0, 0, 2]), ("v1", 2, [4, 0, 0, 1]), ("v2", 1, [0, 1, 4, 0])):
        rows += [f"{vignette},{stop},{e},{v}," for e, v in zip(["joy", "sadness", "anger", "fear"], values)]
    targets = tmp_path / "t.csv"
    targets.write_text("\n".join(rows) + "\n")
    section = ea_section(run_path, targets={"mini_vignettes": targets})
    # Every stop now has a self-report equal to the perceivers' ratings: r = 1 (z clipped) everywhere.
    overall = table(section, "Overall").iloc[0]
    assert overall["z"] == pytest.approx(np.arctanh(0.9999)) and overall["mae"] == 0
    assert not any("design-intended" in r for r in section.readings)
    assert any("empathic accuracy r = " in r for r in section.readings)


def test_judge_similarity_of_inferences(run_path):
    # The toy targets' thoughts: v1/1 "What if they said no?", v1/2 "I did it, ...", v2/1 "Who would do this?".
    # The scripted judge gives 2 for "He is furious." (v2), 1 for "Thrilled.", 0 for "nervous ...":
    # 3 points of 2 × 3 possible per perceiver = 50 %.
    levels = {"He is furious.": 2, "Thrilled.": 1, "nervous about the answer": 0}

    def judge(body):
        answer = body["messages"][-1]["content"].split('inference: "', 1)[1].split('"', 1)[0]
        return json.dumps({"level": levels[answer]})

    rubric = load_rubric(ROOT / "instruments" / "rubrics" / "ea_similarity.yaml")
    with StubServer(answer=judge) as stub:
        config = BackendConfig(id="judge", kind="openai", base_url=stub.url, model="stub-model")
        result = asyncio.run(judge_run(run_path, config, rubric, "json", log=lambda m: None))
    assert result.tasks == 6 and result.counts == {"answered": 6}
    section = ea_section(run_path)
    judged = table(section, "Free-text inferences").iloc[0]
    assert judged["percent"] == pytest.approx(50.0) and judged["perceivers"] == 2


def test_report_cli_with_human_data_and_bad_csv(run_path, tmp_path, capsys):
    good = write_perceivers(tmp_path / "p.csv")
    assert main(["report", str(run_path), "--out", str(tmp_path / "r"), "--human", f"mini_vignettes={good}"]) == 0
    html = (tmp_path / "r" / "report.html").read_text()
    assert "Empathic accuracy (vignettes: mini_vignettes)" in html and "human perceivers" in html
    bad = tmp_path / "bad.csv"
    bad.write_text(good.read_text().replace("h2,v2,1,anger,0", "h2,v2,1,anger,7"))
    assert main(["report", str(run_path), "--out", str(tmp_path / "r"), "--human", f"mini_vignettes={bad}"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:8" in err and "rating" in err
    assert main(["report", str(run_path), "--targets", f"nope={bad}"]) == 2
