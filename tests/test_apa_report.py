"""The report as a results section: APA number formatting, the columns of the printed tables,
the generated methods paragraph against a real stub run, n counting people, norm groups named as
written, CSV downloads and the print stylesheet.

Expected strings are worked out by hand from the inputs (each test says how); the methods
paragraph is checked against counts read directly from the run's SQLite store.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from psyq.analysis.report import apa, methods, plots, views
from psyq.analysis.statistics.norms import COLUMNS as NORM_COLUMNS, compare_with_norms
from psyq.analysis.report.readings import norm_readings
from psyq.analysis.report import TABLE_DIR, Section, render_html, render_markdown, table_files, write_report
from psyq import open_run
from psyq.engine.design.instrument import load_instrument
from psyq.engine.store.run_dir import manifest_file_paths
from runs_helper import make_mini_run

ROOT = Path(__file__).resolve().parents[1]
M = "\u2212"                      # the minus sign the report prints
NB = "\u00a0"                     # short cells are kept on one line with non-breaking spaces


def plain(text: str) -> str:
    return text.replace(NB, " ")


@pytest.fixture(scope="module")
def mini_run(tmp_path_factory) -> Path:
    # 8 personas (gender, age), 2 repeats; the stub refuses item d when its hashed digit is 1.
    return make_mini_run(tmp_path_factory.mktemp("apa"), n_personas=8, repeats=2)


def test_apa_number_formatting():
    # APA 7th ed.: p to three decimals without the leading zero, "< .001" below .001; bounded
    # quantities (r, α) without the leading zero; two decimals; a true minus sign.
    assert apa.fmt_p(0.0004) == "< .001"
    assert apa.fmt_p(0.001) == ".001"                 # .001 itself is not below .001
    assert apa.fmt_p(0.04951) == ".050"               # rounds up at the third decimal
    assert apa.fmt_p(0.5) == ".500" and apa.fmt_p(1.0) == "1.000"
    assert apa.fmt_p(float("nan")) == apa.DASH
    assert apa.fmt_r(0.847) == ".85" and apa.fmt_r(-0.456) == f"{M}.46" and apa.fmt_r(1.0) == "1.00"
    assert apa.fmt_num(2) == "2.00" and apa.fmt_num(-1.005001) == f"{M}1.01"
    assert apa.fmt_num(-0.004) == "0.00"              # no "−0.00"
    assert apa.fmt_ci(-0.4512, 1.1534) == f"[{M}0.45, 1.15]"
    assert apa.fmt_ci(0.1, None) == apa.DASH
    assert apa.fmt_int(1973) == "1,973"


def comparison_rows() -> pd.DataFrame:
    base = {"backend_id": "b", "instrument": "iri", "subscale": "EC", "norm_sample": "s", "norm_derived": False,
            "norm_verified": "raw-data", "norm_n": 1135, "norm_mean": 20.54, "norm_sd": 4.29, "diff": 0.0,
            "sd_ratio": 0.6}
    tested = base | {"norm_group": "women", "n": 6, "mean": 18.5, "sd": 2.6583, "t": 1.4523, "df": 5.234,
                     "p": 0.0001, "p_adj": 0.0004, "g": 0.3512, "g_low": -0.4512, "g_high": 1.1534,
                     "tost_p": 0.5751, "equivalent": False}
    single = base | {"norm_group": "all", "n": 1, "mean": 16.0, "sd": np.nan, "t": np.nan, "df": np.nan,
                     "p": np.nan, "p_adj": np.nan, "g": np.nan, "g_low": np.nan, "g_high": np.nan,
                     "tost_p": np.nan, "equivalent": pd.NA}
    return pd.DataFrame([tested, single])


def test_norm_table_columns_and_cells():
    view = views.apa_table(comparison_rows(), "norm_comparison")
    # What a results section prints; backend and instrument hold one value, so they go to the note.
    assert list(view.frame.columns) == ["Subscale", "Norm group", "n", "M (SD)", "Norm M (SD)", "Norm n",
                                        "t (df)", "p (adj.)", "g [95 % CI]", "Equivalence"]
    assert "Backend: b." in view.notes and "Instrument: iri." in view.notes
    first = [plain(x) for x in view.frame.iloc[0]]
    # By hand: 18.5 (2.6583) → "18.50 (2.66)"; t 1.4523 on 5.234 df → "1.45 (5.2)"; p_adj .0004 →
    # "< .001"; g .3512 [−.4512, 1.1534] → "0.35 [−0.45, 1.15]"; TOST p .5751, not equivalent.
    assert first == ["EC", "s: women", "6", "18.50 (2.66)", "20.54 (4.29)", "1,135", "1.45 (5.2)", "< .001",
                     f"0.35 [{M}0.45, 1.15]", "not shown (p .575)"]
    # One respondent: nothing estimable is printed as a number; the group keeps its written id.
    second = [plain(x) for x in view.frame.iloc[1]]
    assert second[1] == "s: all" and second[3] == f"16.00 ({apa.DASH})"
    assert second[6:] == [apa.DASH] * 4
    # With two backends the backend becomes a column again.
    two = pd.concat([comparison_rows(), comparison_rows().assign(backend_id="c")], ignore_index=True)
    assert views.apa_table(two, "norm_comparison").frame.columns[0] == "Backend"


def test_answers_by_status_is_long_and_lists_only_statuses_that_occur(mini_run):
    from psyq.analysis.statistics.standin.fidelity import missingness
    from psyq import export_table

    table = export_table(mini_run)
    wide = missingness(table)
    view = views.apa_table(wide, "answers_by_status")
    assert list(view.frame.columns) == ["Status", "Answers", "%"]
    # Counted here directly from the SQLite store, not from the export.
    with sqlite3.connect(mini_run / "run.sqlite") as db:
        counts = dict(db.execute("SELECT status, COUNT(*) FROM answers GROUP BY status").fetchall())
    total = sum(counts.values())
    assert counts.get("refusal", 0) > 0          # the stub refuses some answers to item d
    shown = {row["Status"]: plain(row["Answers"]) for _, row in view.frame.iterrows()}
    assert shown == {s.replace("_", " "): f"{n:,} of {total:,}" for s, n in counts.items()}
    refusal = view.frame[view.frame["Status"] == "refusal"].iloc[0]
    assert refusal["%"] == f"{100 * counts['refusal'] / total:.1f}"
    assert any("No answer had the status" in n and "out of range" in n for n in view.notes)


def test_methods_paragraph_states_the_runs_facts(mini_run):
    facts = methods.run_facts(open_run(mini_run))
    text = methods.methods_paragraph(facts)
    manifest = json.loads((mini_run / "manifest.json").read_text())
    with sqlite3.connect(mini_run / "run.sqlite") as db:
        counts = dict(db.execute("SELECT status, COUNT(*) FROM answers GROUP BY status").fetchall())
    total, read = sum(counts.values()), counts["answered"]
    # Model, backend and sampling parameters as the manifest records them (the study sets none:
    # temperature is psyq's default, top-p and max tokens are left to the server).
    temperature = manifest["backends"]["stub"]["config"]["temperature"]
    assert (f"stub-model (backend 'stub', openai interface; temperature {temperature}, top-p not set (the server's "
            "default), maximum tokens not set (the server's default))") in text
    assert f"psyq {manifest['psyq_version']}" in text and manifest["started_at"] in text
    # Cohort: 8 personas written in the cohort file 'c', no baseline.
    assert "8 simulated personas with the attributes age and gender, written one by one in the cohort file 'c'" in text
    assert "baseline" not in text
    # The instrument with the reference its file gives.
    assert ("Mini test instrument (mini, version 1; 4 items, 3 subscales; written for psyq, not a published "
            "instrument; references given in the instrument file: psyq authors (2026). Toy instrument for tests.)") in text
    # Protocol of runs_helper: text answers, options as written, 2 repeats, seed 1, re-ask limit 2 (default).
    assert "answers were read from the reply text" in text and "the response options were shown as written" in text
    assert "every instrument 2 times (repeats)" in text and "random seed was 1." in text
    assert "asked again up to 2 times" in text
    # Exclusions, against the store's own counts.
    assert f"Of {total:,} item answers, {read:,} ({100 * read / total:.1f} %) could be read" in text
    assert f"refusal {counts['refusal']}" in text
    # Scores: 8 personas × 2 repeats × 3 subscales = 48. Only item d is ever refused; a refused d
    # leaves Y (b, c, d; min 2) and Z (a–d; min 3) prorated and X (a, b) whole: 2 per refusal.
    assert f"{2 * counts['refusal']} of 48 subscale scores were prorated and 0 could not be computed" in text
    assert "[fill in" not in text                 # everything here is recorded by the run


def test_methods_paragraph_marks_what_the_run_does_not_record(mini_run, tmp_path):
    facts = methods.run_facts(open_run(mini_run))
    unfinished = dict(facts.manifest) | {"finished_at": None}
    cohort_path = next(p for p in manifest_file_paths(open_run(mini_run), facts.manifest)
                       if p.name == "cohort.yaml")
    # A cohort file changed after the run cannot say how the run's personas were made.
    stale = methods.RunFacts(**{**facts.__dict__, "manifest": unfinished, "cohort_file": None})
    text = methods.methods_paragraph(stale)
    assert "[fill in: end date (the run did not finish)]" in text
    assert "[fill in: how the personas were constructed]" in text
    original = cohort_path.read_text()
    try:
        cohort_path.write_text(original + "\n# edited after the run\n")
        assert methods.run_facts(open_run(mini_run)).cohort_file is None
    finally:
        cohort_path.write_text(original)
    assert methods.run_facts(open_run(mini_run)).cohort_file is not None


def test_histogram_and_heatmap_count_respondents_not_rows():
    # 3 respondents × 4 repeats = 12 scores: the legend must say 3 respondents, not n = 12.
    scores = pd.DataFrame({"backend_id": "b", "model": "m", "respondent_id": np.repeat(["a", "b", "c"], 4),
                           "repeat": np.tile([0, 1, 2, 3], 3), "instrument": "mini", "subscale": "X",
                           "score": np.arange(12, dtype=float), "n_answered": 2, "n_items": 2})
    fig = plots.distribution_plot(scores, pd.DataFrame(columns=NORM_COLUMNS), "mini", "X")
    legend = " ".join(t.get_text() for t in fig.legends[0].get_texts())
    assert "n = 3 respondents (4 repeats each)" in legend and "n = 12" not in legend
    inst = load_instrument(ROOT / "tests" / "data" / "mini_1to7.yaml")
    answers = pd.DataFrame([{"backend_id": "b", "respondent_id": r, "repeat": k, "instrument": "mini",
                             "item_id": i.id, "value": 1.0, "status": "answered"}
                            for r in "abc" for k in range(4) for i in inst.items])
    heat = plots.item_heatmap(answers, inst)
    label = " ".join(heat.axes[0].get_xlabel().split())
    assert "12 answers per item, from 3 respondents (4 repeats each)" in label
    assert plots.respondents_text(answers[answers["respondent_id"] == "a"].iloc[:1]) == "1 respondent"


def test_norm_group_keeps_the_id_the_file_writes():
    iri = load_instrument(ROOT / "instruments" / "iri.yaml")
    # Three women and one person without a gender: that one matches no group of briganti2018 and
    # is compared with its whole-sample group, written `id: all` in iri.yaml.
    scores = pd.DataFrame({"backend_id": "b", "model": "m", "respondent_id": ["w1", "w2", "w3", "x"], "repeat": 0,
                           "gender": ["female", "female", "female", None], "instrument": "iri", "subscale": "EC",
                           "score": [20.0, 22.0, 24.0, 18.0], "n_answered": 7, "n_items": 7})
    comp = compare_with_norms(scores, {"iri": iri}, samples=["briganti2018"])
    assert comp["norm_group"].tolist() == ["women", "all"]
    groups = [plain(g) for g in views.apa_table(comp, "norm_comparison").frame["Norm group"]]
    assert groups == ["briganti2018: women", "briganti2018: all"]
    assert "pooled" not in " ".join(norm_readings(comp, bound=0.3))


def test_tables_are_numbered_with_csv_downloads_and_print_css(mini_run, tmp_path):
    html_path, md_path = write_report(mini_run, tmp_path, warn=lambda m: None)
    html = html_path.read_text()
    md = md_path.read_text()
    # Print stylesheet: no nav, page breaks before sections, header rows repeated, figures scaled.
    css = html[html.index("<style>"):html.index("</style>")]
    print_css = css[css.index("@media print"):]
    assert "nav" in print_css and "display:none" in print_css
    assert "break-before:page" in print_css and "table-header-group" in print_css
    assert "img{max-width:100%" in print_css
    # No table may force sideways scrolling on screen: only the full tables (in <details>) may scroll.
    assert "display:block;overflow-x:auto" not in css
    # Tables numbered 1..N in order, each with its CSV written next to the report and linked.
    numbers = [int(n) for n in re.findall(r"<p class='table-number'>Table (\d+)</p>", html)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 5
    links = re.findall(rf"href='({TABLE_DIR}/[^']+\.csv)'", html)
    assert len(links) == len(numbers) and all((tmp_path / link).is_file() for link in links)
    assert html.count("<details class='full'>") == len(numbers)
    # The CSV keeps every column the APA view leaves out (answers by status: 28 columns, 1 row).
    status_csv = next(link for link in links if "answers_by_status" in link)
    full = pd.read_csv(tmp_path / status_csv)
    assert full.shape == (1, 28) and "token_budget_exhausted_rate" in full.columns
    # The methods paragraph: right after the verdict (the first section), in methods.md, in the Markdown summary.
    text = (tmp_path / "methods.md").read_text().strip()
    assert "Can the personas stand in for people?" in html[html.index("<h2 id='s0'"):html.index("id='methods'")]
    assert html.index("id='methods'") < html.index("<h2 id='s1'")
    assert md.index("## Can the personas stand in for people?") < md.index("## Methods") < md.index("## Study")
    assert text in md and "Responses were generated with stub-model" in text
    assert f"**Table {len(numbers)}**" in md


def test_table_files_are_stable_names():
    sections = [Section("A", tables=[("Run", pd.DataFrame()), ("Answers by status", pd.DataFrame())]),
                Section("B", tables=[("Cohort against norms (Welch t)", pd.DataFrame())])]
    assert table_files(sections) == [f"{TABLE_DIR}/table01_run.csv", f"{TABLE_DIR}/table02_answers_by_status.csv",
                                     f"{TABLE_DIR}/table03_cohort_against_norms.csv"]
    manifest = {"study": "s", "run_id": "r"}
    assert "Table 3" in render_html(manifest, sections) and "**Table 3**" in render_markdown(manifest, sections)


def test_a_table_is_printed_by_the_view_its_section_names_never_by_its_columns():
    # A new frame that happens to have the regression's columns (term, estimate, se) is no
    # regression table: added without a view, the plain view prints it; the regression view
    # prints only the table whose section names it.
    new = pd.DataFrame({"term": ["age"], "estimate": [0.25], "se": [0.1]})
    fx = pd.DataFrame({"instrument": "iri", "subscale": "EC", "model": "ols", "term": ["age"], "estimate": [0.25],
                       "se": [0.1], "ci_low": [0.05], "ci_high": [0.45], "p": [0.01], "n": [30]})
    section = Section("New")
    section.add_table("Coefficients of something new", new)
    section.add_table("Regression of subscale score", fx, view="regression")
    assert [(t.caption, t.view) for t in section.tables] == [("Coefficients of something new", views.PLAIN),
                                                              ("Regression of subscale score", "regression")]
    manifest = {"study": "s", "run_id": "r"}
    md, html = render_markdown(manifest, [section]), render_html(manifest, [section])
    new_md = md[md.index("**Table 1**"):md.index("**Table 2**")]
    assert "| term | estimate | se |" in new_md and "b [95 % CI]" not in new_md and "Term" not in new_md
    assert md.count("b [95 % CI]") == 1 and html.count("b [95 % CI]") == 1    # the regression's table only
    assert list(views.apa_table(new).frame.columns) == ["term", "estimate", "se"]
    assert {"Term", "b [95 % CI]", "SE"} <= set(views.apa_table(fx, "regression").frame.columns)
    # A (caption, frame) pair given to a Section is a table of the plain view; a view is a known name.
    assert Section("S", tables=[("Coefficients", new)]).tables[0].view == views.PLAIN
    with pytest.raises(KeyError, match="no view 'regresion'"):
        section.add_table("A typo", new, view="regresion")


def test_sd_ratio_chart_says_which_rows_are_not_estimable():
    # One respondent has no SD: the row is labelled, not left blank.
    ratios = pd.DataFrame({"backend_id": "b", "instrument": "iri", "subscale": ["EC", "EC"], "norm_sample": "s",
                           "norm_group": ["women", "all"], "n": [6, 1], "sd": [2.0, np.nan], "norm_n": 100,
                           "norm_sd": [4.0, 4.0], "sd_ratio": [0.5, np.nan], "ci_low": [0.3, np.nan],
                           "ci_high": [1.2, np.nan], "collapsed": [False, False]})
    fig = plots.sd_ratio_chart(ratios)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == ["b: not estimable (n = 1)"]


def test_sd_ratio_table_gives_no_verdict_where_no_ratio_was_estimated():
    # The second row (one respondent) has no SD, so neither a ratio nor "collapsed: no" may appear.
    ratios = pd.DataFrame({"backend_id": "b", "instrument": "iri", "subscale": ["EC", "EC"], "norm_sample": "s",
                           "norm_group": ["women", "all"], "n": [6, 1], "sd": [2.0, np.nan], "norm_n": 100,
                           "norm_sd": [4.0, 4.0], "sd_ratio": [0.5, np.nan], "ci_low": [0.3, np.nan],
                           "ci_high": [1.2, np.nan], "collapsed": [False, False]})
    table = views.apa_table(ratios, "sd_ratio")
    rows = table.frame.to_dict("records")
    assert rows[0]["Ratio [95 % CI]"] == f"0.50{NB}[0.30,{NB}1.20]" and rows[0]["Collapsed"] == "no"
    assert rows[1]["Ratio [95 % CI]"] == apa.DASH and rows[1]["Collapsed"] == apa.DASH


def human_comparison_rows() -> pd.DataFrame:
    """Two rows as compare_with_humans returns them (unweighted): PT with every value, PD whose φ
    is not estimable."""
    base = {"instrument": "iri", "n_cohort": 13, "n_human": 1973, "n_eff_cohort": 13.0, "n_eff_human": 1973.0,
            "u": 7338.0, "bf_stat": 0.87, "weighted": ""}
    return pd.DataFrame([
        base | {"subscale": "PT", "mean_cohort": 13.615, "mean_human": 16.7314, "sd_cohort": 3.9711,
                "sd_human": 4.5512, "t": -2.8213, "df": 12.214, "p": 0.01523, "g": -0.6874, "g_low": -1.2311,
                "g_high": -0.1423, "p_mwu": 0.00794, "ks": 0.3812, "p_ks": 0.0341, "wasserstein": 3.2912,
                "variance_ratio": 0.7613, "p_bf": 0.3511, "alpha_cohort": 0.1123, "alpha_human": 0.6524,
                "alpha_diff": -0.5401, "phi": 0.8012, "note": ""},
        base | {"subscale": "PD", "mean_cohort": 13.3846, "mean_human": 12.3401, "sd_cohort": 3.45,
                "sd_human": 4.78, "t": 1.0812, "df": 12.31, "p": 0.299, "g": 0.2191, "g_low": -0.3312,
                "g_high": 0.7634, "p_mwu": 0.3833, "ks": 0.1904, "p_ks": 0.6771, "wasserstein": 1.5123,
                "variance_ratio": 0.5212, "p_bf": 0.1702, "alpha_cohort": -0.2912, "alpha_human": 0.7211,
                "alpha_diff": -1.0123, "phi": float("nan"), "note": "φ not estimable: no proper one-factor solution"},
    ])


def test_human_comparison_table_has_apa_headers_and_few_columns():
    view = views.apa_table(human_comparison_rows(), "human_comparison")
    # Headers a reader knows (not the frame's `g low`, `p mwu`, `ks`); U, the BF statistic and α's
    # difference stay in the full table, so the printed table fits a page.
    assert list(view.frame.columns) == ["Subscale", "n (cohort, human)", "Cohort M (SD)", "Human M (SD)", "t (df)",
                                        "p", "Hedges' g [95 % CI]", "Mann–Whitney p", "KS D (p)", "W₁",
                                        "Variance ratio (BF p)", "α (cohort, human)", "φ"]
    # By hand: g −.6874 [−1.2311, −.1423] → "−0.69 [−1.23, −0.14]"; KS .3812, p .0341 → ".38 (.034)";
    # df 12.214 → 12.2; α .1123 and .6524 → ".11, .65".
    assert [plain(x) for x in view.frame.iloc[0]] == [
        "PT", "13, 1,973", "13.62 (3.97)", "16.73 (4.55)", f"{M}2.82 (12.2)", ".015", f"{M}0.69 [{M}1.23, {M}0.14]",
        ".008", ".38 (.034)", "3.29", "0.76 (.351)", ".11, .65", ".80"]
    assert [plain(x) for x in view.frame.iloc[1]][-2:] == [f"{M}.29, .72", apa.DASH]
    # The row notes go below the table, once, naming their subscales; the instrument too.
    assert "Instrument: iri." in view.notes
    assert view.notes[-1] == "PD: φ not estimable: no proper one-factor solution."


def test_internal_consistency_remarks_that_a_negative_alpha_does_not_hang_together():
    rel = pd.DataFrame([{"instrument": "iri", "subscale": s, "n": 13, "k": 7, "alpha": a, "alpha_low": a - .5,
                         "alpha_high": a + .3, "omega": float("nan"), "note": note}
                        for s, a, note in (("PT", 0.11, ""), ("FS", -0.2, "ω not estimable: no proper one-factor solution"))])
    remarks = views.apa_table(rel, "internal_consistency").frame["Remark"].tolist()
    assert remarks == ["", "α is negative: the items covary negatively on average, so the subscale does not hang "
                           "together and its score is not interpretable for this cohort; ω not estimable: no proper "
                           "one-factor solution"]


def test_human_comparison_table_shows_n_eff_and_what_weighting_leaves_out():
    rows = human_comparison_rows().assign(weighted="human", n_eff_human=812.34, p_mwu=float("nan"),
                                          p_ks=float("nan"), p_bf=float("nan"))
    view = views.apa_table(rows, "human_comparison")
    assert plain(view.frame.iloc[0]["n (cohort, human)"]) == "13, 1,973 (n_eff 13.0, 812.3)"
    assert [plain(view.frame.iloc[0][c]) for c in ("Mann–Whitney p", "KS D (p)", "Variance ratio (BF p)")] == [
        apa.DASH, f".38 ({apa.DASH})", f"0.76 ({apa.DASH})"]
    assert any(n.startswith("Weighted rows: ") and "not computed" in n for n in view.notes)
