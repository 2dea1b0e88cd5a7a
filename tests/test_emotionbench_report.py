"""EmotionBench's published model results imported as a run, and `psyq report` on it with the crowd.

`psyq import emotionbench-results` turns a model's PANAS result file into an imported run
directory; `psyq report DIR --human-change CROWD.csv` then shows the humans' overall PA and NA
before/after means and their paired t beside the model's. The made-up crowd sheet and result
file are written here, in the layout of EmotionBench's files (crowd.xlsx sheet Raw;
results/PANAS Test/<model>-PANAS-testing.csv), with item words replaced by ids; expected values
are worked by hand in the comments. The last test runs on a user's real copy when
PSYQ_EMOTIONBENCH_DIR is set (EmotionBench is GPL-3: never shipped).
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
PA = {1, 3, 5, 9, 10, 12, 14, 16, 17, 19}     # Watson et al. (1988) key, as in instruments/panas.yaml
MINUS = "\u2212"


def psyq(*args: str) -> subprocess.CompletedProcess:
    """`psyq ARGS` run in this process (tests/cli_helper.py)."""
    return psyq_in_process(*args)


def block(pa: int, na: int) -> list[int]:
    """The 20 answers (published order) of someone answering `pa` to every PA item, `na` to every NA item."""
    return [pa if k in PA else na for k in range(1, 21)]


# Made-up crowd: (code, before PA/NA answer, after PA/NA answer). Sums are 10 x the answer.
#   R1 Angry_F1S1: before PA 30, NA 10; after PA 20, NA 20  -> change PA -10, NA +10
#   R2 Angry_F1S2: before PA 40, NA 10; after PA 30, NA 30  -> change PA -10, NA +20
#   R3 Fear_F1S1:  before PA 30, NA 20; after PA 10, NA 40  -> change PA -20, NA +20
#   R4 Fear_F1S2:  before PA 20, NA 10; after PA 20, NA 20  -> change PA   0, NA +10
CROWD = [("Angry_F1S1", (3, 1), (2, 2)), ("Angry_F1S2", (4, 1), (3, 3)),
         ("Fear_F1S1", (3, 2), (1, 4)), ("Fear_F1S2", (2, 1), (2, 2))]
# By hand, overall (n = 4, df = 3):
#   PA before (30+40+30+20)/4 = 30, after (20+30+10+20)/4 = 20; changes -10,-10,-20,0: mean -10,
#      SD sqrt(((0)^2+(0)^2+(-10)^2+(10)^2)/3) = sqrt(200/3), t = -10 / (sqrt(200/3)/2) = -sqrt(6) = -2.449490
#   NA before (10+10+20+10)/4 = 12.5, after (20+30+40+20)/4 = 27.5; changes 10,20,20,10: mean 15,
#      SD sqrt(4*25/3) = sqrt(100/3), t = 15 / (sqrt(100/3)/2) = 3*sqrt(3) = 5.196152
# Per emotion: anger PA changes -10,-10 (SD 0: t not estimable); anger NA 10,20: t = 15/(sqrt(50)/sqrt(2)) = 3;
#   fear PA -20,0: t = -10/(sqrt(200)/sqrt(2)) = -1; fear NA 20,10: t = 3.
HUMANS = {"PA": (30.0, 20.0, -math.sqrt(6)), "NA": (12.5, 27.5, 3 * math.sqrt(3))}
HUMANS_BY_EMOTION = {("PA", "anger"): None, ("NA", "anger"): 3.0, ("PA", "fear"): -1.0, ("NA", "fear"): 3.0}


def write_crowd(path: Path) -> Path:
    """The crowd sheet Raw as CSV: codes in row 1 from column C, labels in column B."""
    rows = [["", "Info", *[code for code, _, _ in CROWD]],
            ["0", "Gender:", *["Female"] * len(CROWD)]]
    before = [block(*b) for _, b, _ in CROWD]
    after = [block(*a) for _, _, a in CROWD]
    for k in range(20):
        rows.append([str(k + 1), "Please indicate the extent of your current feeling in the following emotions: "
                     f"- item{k + 1:02d}", *[str(b[k]) for b in before]])
    for k in range(20):
        rows.append([str(k + 21), f"Please indicate the extent of your feeling in the following emotions: - item{k + 1:02d}",
                     *[str(a[k]) for a in after]])
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


# Made-up model result file "toy": items presented in reverse order (row r shows item 21 - r, as
# column order-0 says), two default tests and one anger situation tested twice.
#   General_test-0: PA 5, NA 1 -> 50, 10     General_test-1: PA 4, NA 2 -> 40, 20
#   Anger-0_scenario-0_test-0: PA 1, NA 4 -> 10, 40     ..._test-1: PA 2, NA 3 -> 20, 30
# Paired by test number: PA changes -40, -20: mean -30, SD sqrt(200), t = -30/(sqrt(200)/sqrt(2)) = -3;
#   NA changes +30, +10: mean 20, t = 20/10 = 2. Before means PA 45, NA 15; after PA 15, NA 35.
MODEL_COLUMNS = {"General_test-0_order-0": (5, 1), "General_test-1_order-0": (4, 2),
                 "Anger-0_scenario-0_test-0_order-0": (1, 4), "Anger-0_scenario-0_test-1_order-0": (2, 3)}


def write_model(path: Path, blank: str | None = None, columns: dict | None = None) -> Path:
    columns = columns or MODEL_COLUMNS
    rows = [["question-0", "order-0", *columns],
            ["Prompt: SCENARIO rate each emotion 1-5", "", *[" "] * len(columns)]]
    for r in range(1, 21):
        item = 21 - r
        cells = [str(block(*answers)[item - 1]) for answers in columns.values()]
        if blank is not None and r == 1:
            cells[list(columns).index(blank)] = ""
        rows.append([f"{item}. item{item:02d}", str(item), *cells])
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


def import_and_report(tmp_path: Path, model: Path, crowd: Path) -> tuple[Path, str]:
    humans = tmp_path / "humans.csv"
    result = psyq("import", "emotionbench-humans", str(crowd), "--out", str(humans))
    assert result.returncode == 0, result.stderr
    run = tmp_path / "imported"
    result = psyq("import", "emotionbench-results", str(model), "--out", str(run))
    assert result.returncode == 0, result.stderr
    assert "no request made" in result.stderr and "pairs them by test number" in result.stderr
    report = tmp_path / "report"
    result = psyq("report", str(run), "--human-change", str(humans), "--out", str(report))
    assert result.returncode == 0, result.stderr
    return report, (report / "report.md").read_text()


def table(report: Path, name: str) -> list[dict]:
    [path] = (report / "report_tables").glob(f"table[0-9][0-9]_{name}.csv")   # name may end with * (long captions)
    with path.open() as handle:
        return list(csv.DictReader(handle))


def test_report_of_imported_model_results_shows_humans_and_model_before_after(tmp_path):
    model = write_model(tmp_path / "toy-PANAS-testing.csv")
    report, text = import_and_report(tmp_path, model, write_crowd(tmp_path / "crowd.csv"))
    manifest = json.loads((tmp_path / "imported" / "imported.json").read_text())
    assert manifest["requests_made"] == 0 and manifest["imported_from"] == ["toy-PANAS-testing.csv"]
    assert "psyq made no request" in text
    # The readings, to the report's two decimals (values from the comments above).
    assert f"Humans, all situations pooled, PA (n = 4): before 30.00, after 20.00, paired t(3) = {MINUS}2.45" in text
    assert "Humans, all situations pooled, NA (n = 4): before 12.50, after 27.50, paired t(3) = 5.20" in text
    assert f"toy, all situations pooled (panas), PA (n = 2): before 45.00, after 15.00, paired t(1) = {MINUS}3.00" in text
    assert "toy, all situations pooled (panas), NA (n = 2): before 15.00, after 35.00, paired t(1) = 2.00" in text
    # The full-precision table of humans' paired change.
    rows = {(r["subscale"], r["emotion"]): r for r in table(report, "humans__paired_change")}
    for subscale, (before, after, t) in HUMANS.items():
        row = rows[(subscale, "overall")]
        assert int(row["n"]) == 4 and float(row["df"]) == 3
        assert float(row["mean_before"]) == pytest.approx(before, abs=1e-9)
        assert float(row["mean_after"]) == pytest.approx(after, abs=1e-9)
        assert float(row["t"]) == pytest.approx(t, abs=1e-9)
    for key, t in HUMANS_BY_EMOTION.items():
        if t is None:
            assert rows[key]["t"] == "" and "SD of change 0" in rows[key]["note"]
        else:
            assert float(rows[key]["t"]) == pytest.approx(t, abs=1e-9)
    model_rows = {(r["subscale"], r["emotion"]): r for r in table(report, "paired_change")}
    assert float(model_rows[("PA", "overall")]["t"]) == pytest.approx(-3.0, abs=1e-9)
    assert float(model_rows[("NA", "anger")]["t"]) == pytest.approx(2.0, abs=1e-9)


def test_an_empty_answer_leaves_the_sum_empty_and_the_report_says_so(tmp_path):
    # Row 1 shows item 20 (NA); blanking it in the after column of test 1 leaves that NA sum empty,
    # so one change score (test-1, anger, NA) has no after score and is listed as left out.
    model = write_model(tmp_path / "toy-PANAS-testing.csv", blank="Anger-0_scenario-0_test-1_order-0")
    report, text = import_and_report(tmp_path, model, write_crowd(tmp_path / "crowd.csv"))
    assert "1 change score (respondent × repeat × situation × subscale) could not be computed" in text
    assert "1 PA/NA sums have an empty answer" in text
    [left_out] = table(report, "scores_left_out_of_the_change_analysis")
    assert (left_out["respondent_id"], left_out["subscale"], left_out["reason"]) == ("test-1", "NA", "no after score")


# The same model with a third default test that no situation test shares a number with:
#   General_test-2: PA 3, NA 3 -> 30, 30. psyq's pairing ignores it (before PA 45, NA 15, as above);
#   EmotionBench's Default takes all three: PA 50, 40, 30 -> mean 40, SD 10; NA 10, 20, 30 -> mean 20, SD 10.
#   Situation tests: PA 10, 20 -> mean 15, SD sqrt(50); NA 40, 30 -> mean 35, SD sqrt(50).
#   F = 100 / 50 = 2 on (2, 1) df: p_F = 2 * P(F(2,1) > 2) = 2 / sqrt(5) = .894 > .01, so Student's t:
#   pooled variance (2 * 100 + 1 * 50) / 3 = 250/3; SE = sqrt(250/3 * (1/3 + 1/2)) = 25/3;
#   PA: difference -25, t(3) = -25 / (25/3) = -3; NA: +15, t(3) = 15 / (25/3) = 1.8.
WITH_UNPAIRED_DEFAULT = {**MODEL_COLUMNS, "General_test-2_order-0": (3, 3)}


def test_report_shows_emotionbench_own_comparison_beside_psyqs_pairing(tmp_path):
    model = write_model(tmp_path / "toy-PANAS-testing.csv", columns=WITH_UNPAIRED_DEFAULT)
    report, text = import_and_report(tmp_path, model, write_crowd(tmp_path / "crowd.csv"))
    # psyq's pairing is unchanged: the unpaired General test is not a before score.
    assert f"toy, all situations pooled (panas), PA (n = 2): before 45.00, after 15.00, paired t(1) = {MINUS}3.00" in text
    # EmotionBench's own comparison, labelled as such, with the Default of all three General tests.
    assert "EmotionBench's own comparison, as its analysis code computes it" in text
    assert (f"EmotionBench's comparison, toy PA, all situations: Default 40.00 (SD 10.00, n = 3 General tests), after "
            f"the situations 15.00 (n = 2 tests): {MINUS} ({MINUS}25.0), Student t(3) = {MINUS}3.00") in text
    rows = {(r["subscale"], r["level"]): r for r in table(report, "emotionbench_s_own_comparison*")}
    pa, na = rows[("PA", "overall")], rows[("NA", "overall")]
    assert float(pa["mean_default"]) == pytest.approx(40) and int(pa["n_default"]) == 3
    assert float(pa["t"]) == pytest.approx(-3.0, abs=1e-6) and float(pa["df"]) == 3 and pa["test"] == "Student"
    assert float(na["difference"]) == pytest.approx(15) and float(na["t"]) == pytest.approx(1.8, abs=1e-6)
    assert float(pa["f"]) == pytest.approx(2.0, abs=1e-6) and pa["direction"] == MINUS   # p = .058 > .01: no arrow
    assert rows[("PA", "factor")]["factor"] == "f1" and rows[("PA", "emotion")]["emotion"] == "anger"


def test_emotionbench_comparison_switches_to_welch_when_variances_differ():
    import numpy as np
    import pandas as pd
    from scipy import stats

    from psyq.analysis.statistics.change import emotionbench_comparison

    default = [30.0] * 20 + [31.0] * 20                       # SD ~0.5
    situation = [10.0, 40, 15, 35, 20, 30, 25, 45]            # SD ~12: F test p far below .01
    defaults = pd.DataFrame({"backend_id": "m", "column": range(40), "PA": default, "NA": default})
    after = pd.DataFrame({"backend_id": "m", "situation_id": "fear_f2_s1", "emotion": "fear", "phase": "after",
                          "subscale": "PA", "score": situation})
    row = emotionbench_comparison(defaults, after).iloc[0]
    welch = stats.ttest_ind(situation, default, equal_var=False)
    assert row["test"] == "Welch" and row["factor"] == "f2"
    assert row["t"] == pytest.approx(welch.statistic, rel=1e-6) and row["df"] == pytest.approx(welch.df, rel=1e-6)
    assert row["direction"] == MINUS and np.isclose(row["difference"], 27.5 - 30.5)


@pytest.mark.parametrize("edit, where", [
    (lambda rows: rows[0].__setitem__(2, "Generic_test-0"), "toy-PANAS-testing.csv:1:3: header:"),
    (lambda rows: rows[5].__setitem__(3, "7"), "toy-PANAS-testing.csv:6:4: answer:"),
    (lambda rows: rows[4].__setitem__(1, "1"), "toy-PANAS-testing.csv:1:2: order-0:"),
])
def test_malformed_result_file_names_file_line_column_and_exits_2(tmp_path, edit, where):
    path = write_model(tmp_path / "toy-PANAS-testing.csv")
    rows = list(csv.reader(path.open()))
    edit(rows)
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    result = psyq("import", "emotionbench-results", str(path), "--out", str(tmp_path / "run"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert where in result.stderr, result.stderr


def test_results_import_needs_an_output_directory(tmp_path):
    result = psyq("import", "emotionbench-results", str(write_model(tmp_path / "toy-PANAS-testing.csv")))
    assert result.returncode == 2 and "--out DIR" in result.stderr


EB_DIR = os.environ.get("PSYQ_EMOTIONBENCH_DIR")   # a checkout of github.com/CUHK-ARISE/EmotionBench


def significant(x: float, digits: int = 10) -> float:
    """`x` to `digits` significant digits: the precision the crowd workbook's Summary sheet stores."""
    return float(f"{x:.{digits - 1}e}")


@pytest.mark.skipif(not EB_DIR, reason="set PSYQ_EMOTIONBENCH_DIR to a copy of EmotionBench (not shipped: GPL-3)")
def test_real_crowd_and_model_file_reproduce_the_workbook_summary_through_psyq_report(tmp_path):
    import openpyxl

    panas = Path(EB_DIR) / "results" / "PANAS Test"
    report, text = import_and_report(tmp_path, panas / "gpt-4-PANAS-testing.csv", panas / "crowd.xlsx")
    summary = list(openpyxl.load_workbook(panas / "crowd.xlsx", read_only=True, data_only=True)["Summary"]
                   .iter_rows(values_only=True))
    # The Summary sheet: under each header row (s1_mean, s1_sd, s1_n, s2_mean, ...) one row of
    # numbers, PA first, then NA; s1 = after, s2 = before, t = paired t of s1 - s2.
    stats_rows = [summary[k + 1] for k, row in enumerate(summary) if len(row) > 1 and row[1] == "s1_mean"]
    rows = {(r["subscale"], r["emotion"]): r for r in table(report, "humans__paired_change")}
    for subscale, sheet in zip(("PA", "NA"), stats_rows, strict=True):
        row = rows[(subscale, "overall")]
        assert int(row["n"]) == sheet[3] == sheet[6] and float(row["df"]) == sheet[10]
        assert significant(float(row["mean_after"])) == sheet[1]
        assert significant(float(row["mean_before"])) == sheet[4]
        assert significant(float(row["t"])) == sheet[11]
        # and the reading, to the report's two decimals
        t = f"{sheet[11]:.2f}".replace("-", MINUS)
        assert (f"Humans, all situations pooled, {subscale} (n = {sheet[3]}): before {sheet[4]:.2f}, "
                f"after {sheet[1]:.2f}, paired t({sheet[10]}) = {t}") in text


def test_not_a_regular_result_file_is_refused(tmp_path):
    from psyq.engine.files.errors import InputError
    from psyq.engine.importers.emotionbench import read_model_results

    with pytest.raises(InputError, match="a device"):
        read_model_results("/dev/zero")
    with pytest.raises(InputError):
        read_model_results(str(tmp_path / "absent-PANAS-testing.csv"))


def test_a_damaged_imported_run_is_an_input_error(tmp_path):
    run = tmp_path / "imported"
    assert psyq("import", "emotionbench-results", str(write_model(tmp_path / "toy-PANAS-testing.csv")),
                "--out", str(run)).returncode == 0
    (run / "imported.json").write_text('{"psyq": "imported-run/1",\n "oops"}\n')
    result = psyq("report", str(run))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "imported.json:2:" in result.stderr and "not valid JSON" in result.stderr
