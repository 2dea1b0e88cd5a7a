"""What made the report fast at scale (issue 42, bench/report_scale.py) computes what it computed before:
the analytic derivatives of the invariance fits against differences, a fit heading for infinity stopped
early and said so, DIF's regressions on counted rows against the rows themselves, the answer table
read column by column against SQLite's own row-by-row join, norm groups matched once per combination,
the cohort file's outline against the file read whole, and the figures drawn in a second process
byte for byte as they are drawn here."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from psyq.analysis.statistics import dif, irt
from psyq.analysis.statistics.invariance import continuous, measurement_invariance, normal_theory
from psyq.analysis.statistics.invariance.layout import Layout
from psyq.analysis.statistics.invariance.ordinal import OrdinalModel

from runs_helper import make_mini_run

STRUCTURE = continuous.Structure(np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2]),
                                 np.array([1, 0, 0, 1, 0, 0, 1, 0, 0, 0], dtype=bool))
ITEMS = [f"i{k}" for k in range(10)]


def three_factor_samples(rng: np.random.Generator, groups: int = 3, n: int = 300) -> list[continuous.Sample]:
    latent = rng.normal(size=(groups * n, 3))
    x = np.repeat(latent, [3, 3, 4], axis=1) * 0.8 + rng.normal(size=(groups * n, 10)) + 2
    return [continuous.Sample(f"g{g}", x[g * n:(g + 1) * n]) for g in range(groups)]


def layouts():
    free = lambda equal: continuous.free_parameters(STRUCTURE, 3, equal)   # noqa: E731
    return [Layout.build(free(()), ()),
            Layout.build(free(("loadings",)), ("loadings",)),
            Layout.build(free(("loadings", "intercepts")), ("loadings", "intercepts"), released={("intercepts", 2)}),
            Layout.build(free(("loadings", "intercepts")), ("loadings", "intercepts"), released={("loadings", 4)})]


@pytest.mark.parametrize("which", range(4))
def test_ml_hessian_is_the_derivative_of_the_gradient(which):
    """The analytic Hessian of the ML discrepancy equals central differences of its analytic gradient
    (how it was computed before, at 2 × parameters evaluations), near a fit and in every layout."""
    rng = np.random.default_rng(3)
    samples, layout = three_factor_samples(rng), layouts()[which]
    fit = continuous.fit(layout, samples, STRUCTURE, ITEMS, ["a", "b", "c"])
    theta = fit.theta + rng.normal(scale=0.01, size=layout.n_reduced)
    step, columns = 1e-6, []
    for k in range(len(theta)):
        shift = np.zeros(len(theta))
        shift[k] = step
        columns.append((continuous.discrepancy(theta + shift, layout, samples, STRUCTURE)[1]
                        - continuous.discrepancy(theta - shift, layout, samples, STRUCTURE)[1]) / (2 * step))
    numeric = (np.array(columns) + np.array(columns).T) / 2
    assert np.abs(continuous.hessian(theta, layout, samples, STRUCTURE) - numeric).max() < 1e-7


@pytest.mark.parametrize("which", range(4))
def test_moment_jacobian_is_the_derivative_of_the_moments(which):
    rng = np.random.default_rng(4)
    layout = layouts()[which]
    theta_split = layout.expand(rng.normal(size=layout.n_reduced))
    for g in range(3):
        step, columns = 1e-5, []
        for k in range(layout.n_split):
            shift = np.zeros(layout.n_split)
            shift[k] = step
            columns.append((continuous.moments(theta_split + shift, layout, STRUCTURE, g)
                            - continuous.moments(theta_split - shift, layout, STRUCTURE, g)) / (2 * step))
        assert np.abs(continuous.jacobian(theta_split, layout, STRUCTURE, g) - np.array(columns).T).max() < 1e-8


def test_expected_information_without_the_weight_matrix():
    rng = np.random.default_rng(1)
    p = 6
    m = rng.normal(size=(p, p))
    sigma = m @ m.T + p * np.eye(p)
    delta = rng.normal(size=(p + p * (p + 1) // 2, 9))
    dense = delta.T @ normal_theory.normal_weight(sigma) @ delta
    assert np.abs(normal_theory.weighted_cross(delta, sigma) - dense).max() < 1e-12


def ordinal_model(rng: np.random.Generator) -> tuple[OrdinalModel, Layout, np.ndarray]:
    latent = rng.normal(size=(800, 2))
    x = np.repeat(latent, [3, 3], axis=1) + rng.normal(size=(800, 6))
    codes = np.digitize(x, [-1.0, 0.0, 1.0]).astype(float)
    structure = continuous.Structure(np.array([0, 0, 0, 1, 1, 1]), np.array([1, 0, 0, 1, 0, 0], dtype=bool))
    model = OrdinalModel([continuous.Sample("a", codes[:400]), continuous.Sample("b", codes[400:])], structure,
                         [f"o{k}" for k in range(6)], ["F", "G"])
    layout = Layout.build(model.free(("thresholds", "loadings")), ("thresholds", "loadings"))
    theta = model._start(layout) + rng.normal(scale=0.02, size=layout.n_reduced)
    return model, layout, theta


def test_ordinal_gradient_and_information_without_the_split_jacobian():
    """The DWLS gradient summed entry by entry, and the residuals' Jacobian summed straight onto the
    reduced places, equal what the dense split Jacobian folded by columns gave."""
    model, layout, theta = ordinal_model(np.random.default_rng(5))
    residuals = model._residuals(theta, layout)
    split = layout.expand(theta)
    dense = np.vstack([-np.sqrt(w * weight)[:, None] * layout.fold_columns(model._jacobian(split, layout, g))
                       for g, (weight, w) in enumerate(zip(model.weight_diag, model.fit_weights))])
    assert np.abs(model._residual_jacobian(theta, layout) - dense).max() < 1e-12
    assert np.abs(model._gradient(theta, layout, residuals) - 2.0 * dense.T @ residuals).max() < 1e-10


def test_ordinal_robust_statistics_without_the_dense_weight_matrices():
    """The mean- and variance-adjusted statistic's traces, taken with V diagonal and Ω by blocks, equal
    the dense U = V − VΔE⁻¹Δ'V formula."""
    from scipy import linalg
    model, layout, theta = ordinal_model(np.random.default_rng(6))
    fit = model.fit(layout)
    delta, v, omega = model._stacked(fit)
    dense_v, dense_omega = np.diag(v), linalg.block_diag(*omega)
    information = delta.T @ dense_v @ delta
    u_omega = (dense_v - dense_v @ delta @ np.linalg.solve(information, delta.T @ dense_v)) @ dense_omega
    df = 10
    a = np.sqrt(df / float(np.sum(u_omega * u_omega.T)))
    scaling, shift = OrdinalModel._adjust(delta, v, omega, df)
    assert scaling == pytest.approx(1.0 / a, rel=1e-10) and shift == pytest.approx(df - a * np.trace(u_omega), rel=1e-10)


def test_a_fit_heading_for_infinity_stops_early_and_says_so():
    """The shipped people against 3,000 personas answering A–E at random: the personas' loadings run
    off relative to their marker, and the ordinal fit, which crawled to the 1,000-step limit before
    (7–9 s), ends within a few dozen steps, not estimable, saying which item ran off; the people's own
    halves are fitted as before."""
    import warnings
    from psyq import human_data, load_instrument
    from psyq.analysis.statistics.invariance.against_people import factor_structure, keyed_samples
    iri = load_instrument("iri")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # the notice that the codebook beside the file was read
        people = human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri)
    factors, _ = factor_structure(iri)
    items = [i.id for i in iri.rating_items]
    noise = pd.DataFrame(np.random.default_rng(1).integers(0, 5, size=(3000, 28)).astype(float), columns=items)
    data = keyed_samples(iri, noise, people)
    fit = measurement_invariance(data, factors, "sample", estimator="WLSMV", steps=("configural",))
    note = fit.loc[0, "note"]
    assert not fit.loc[0, "estimable"] and "the estimate ran off" in note and "times that of its marker" in note
    assert int(note.split(" after ")[-1].split()[0]) < 100
    halves = data[data["sample"] == "people"].assign(half=lambda d: np.arange(len(d)) % 2)
    assert measurement_invariance(halves, factors, "half", estimator="WLSMV", steps=("configural",))["estimable"].all()


def test_dif_regressions_on_counted_rows_equal_the_rows():
    """A proportional-odds fit of distinct rows weighted by their count is the fit of the rows."""
    rng = np.random.default_rng(7)
    y = rng.integers(0, 4, size=2000)
    score = rng.integers(0, 12, size=2000).astype(float) - 5.5
    focal = rng.integers(0, 2, size=2000).astype(float)
    exog = np.column_stack([score, focal, score * focal])
    ll, params = dif._cumulative_logit(y, exog)
    rows, counts = np.unique(np.column_stack([y, exog]), axis=0, return_counts=True)
    ll_w, params_w = dif._cumulative_logit(rows[:, 0].astype(int), rows[:, 1:], weight=counts.astype(float))
    assert ll_w == pytest.approx(ll, rel=1e-12) and np.abs(params_w - params).max() < 1e-8
    assert dif._cumulative_logit(y, None)[0] == pytest.approx(
        dif._cumulative_logit(rows[:, 0].astype(int), None, weight=counts.astype(float))[0], rel=1e-12)


def test_distinct_answer_patterns_as_numpy_finds_them():
    rng = np.random.default_rng(0)
    for shape, high in [((1000, 7), 5), ((5000, 3), 2), ((200, 30), 4)]:
        codes = rng.integers(-1, high, size=shape)
        expected = np.unique(codes, axis=0, return_counts=True)
        found = irt._distinct_rows(codes)
        assert np.array_equal(found[0], expected[0]) and np.array_equal(found[1], expected[1])


def test_norm_groups_matched_once_per_combination_as_one_by_one():
    from psyq import load_instrument
    from psyq.analysis.statistics.norms.groups import match_group, match_groups
    records = [{"gender": g, "age": a, "serial": k} for k, (g, a) in
               enumerate([("female", 20), ("Male", 30.0), (None, 40), ("x", 50), (True, 1), (1, 1), ("female", 20)])]
    samples = load_instrument("iri").norms
    first = samples[0]
    flagged = first.model_copy(update={"groups": [first.groups[0].model_copy(update={"where": {"flag": "1"}})]})
    records += [{"flag": True}, {"flag": 1}, {"flag": 1.0}, {"flag": "1 "}]   # True reads "true", not "1"
    for sample in [*samples, flagged]:
        assert match_groups(sample, records) == [match_group(sample, r) for r in records]
    assert match_groups(flagged, records)[-4:] == [None, first.groups[0].id, first.groups[0].id, first.groups[0].id]


ROW_BY_ROW = """
SELECT t.backend_id, t.model, t.respondent_id, t.instrument_id AS instrument, a.item_id, a.position,
       t.repeat, t.option_order, a.status, a.reason, a.disclaimer, t.raw_text, a.value, a.expected,
       a.option_mass, a.distribution, a.text, t.status AS trial_status, t.attempts, t.reasks
FROM answers a JOIN trials t USING (trial_id)
ORDER BY t.backend_id, t.repeat, t.respondent_id, t.instrument_id, a.position, a.rowid
"""


@pytest.mark.parametrize("window", [1_000_000, 7])
def test_answer_table_read_by_columns_is_sqlites_join(tmp_path, monkeypatch, window):
    """The answers read column by column (one scan, texts joined in SQLite, in windows of rowids: one
    window, and many of 7 rows) are the rows of the row-by-row join in its order, with every kind of
    value: NULL and non-NULL reasons, distributions, free texts and expected values, a value stored as
    a real number, disclaimers, tied positions, a text holding the record separator the texts are
    joined with."""
    from psyq.engine.results import answers
    from psyq.engine.results.export import export_table
    monkeypatch.setattr(answers, "ANSWER_WINDOW", window)
    (tmp_path / "made").mkdir()
    run = make_mini_run(tmp_path / "made", n_personas=6, repeats=2)
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    with sqlite3.connect(copy / "run.sqlite") as db:
        db.executescript("""
            UPDATE answers SET expected = value + 0.123456789012345678, option_mass = 0.987654321098765 WHERE rowid % 3 = 0;
            UPDATE answers SET reason = 'odd, "quoted" ' || rowid, status = 'unparseable', value = NULL WHERE rowid % 7 = 0;
            UPDATE answers SET distribution = '{"1": 0.5, "2": 0.5}' WHERE rowid % 5 = 0;
            UPDATE answers SET text = 'free, text ☃ ' || rowid WHERE rowid % 11 = 0;
            UPDATE answers SET value = 2.5 WHERE rowid % 13 = 0;
            UPDATE answers SET disclaimer = 1 WHERE rowid % 4 = 0;
            UPDATE answers SET position = rowid % 5 * (1 - 2 * (rowid % 2));
            UPDATE answers SET status = status || char(30) || 'x' WHERE rowid % 9 = 0;""")
    for path in (run, copy):
        table = export_table(path)
        with sqlite3.connect(path / "run.sqlite") as db:
            rows = pd.read_sql_query(ROW_BY_ROW, db)
        for column in rows.columns:
            mine, theirs = table[column].tolist(), rows[column].tolist()
            same = [a == b or (pd.isna(a) and pd.isna(b)) for a, b in zip(mine, theirs)]
            assert len(mine) == len(theirs) and all(same), column
        assert "raw_text" not in export_table(path, raw_text=False).columns


def test_cohort_outline_is_what_the_whole_file_says():
    from psyq.analysis.report.methods import cohort_outline
    from psyq.engine.files.shipped import locate
    from psyq.engine.files.yamlfile import load_yaml
    for name in ("adults_small", "hand_written", "young_adults_150", "briganti_twins"):
        path = locate(name, "cohort")
        data = load_yaml(path).data
        outline = cohort_outline(Path(path))
        assert outline["psyq"] == data["psyq"] and outline.get("id") == data.get("id")
        assert {k for k in ("personas", "sample", "csv", "from_data") if k in data} == \
               {k for k in ("personas", "sample", "csv", "from_data") if k in outline}
        if isinstance(data.get("sample"), dict):
            assert outline["sample"] == {k: data["sample"][k] for k in ("size", "seed") if k in data["sample"]}
        if "personas" in data:
            assert outline["personas"] == bool(data["personas"])
    assert cohort_outline(Path(locate("iri", "instrument"))) is None


def test_figures_drawn_in_the_second_process_are_the_same_bytes():
    from psyq.analysis.report.figures import figure_to_data_uri, message_figure
    from psyq.analysis.report.render import FigureImages
    figures = [message_figure("no norms for this instrument"), message_figure("another", "A title")]
    with FigureImages() as images:
        assert images.in_second_process == ((os.cpu_count() or 1) > 1)        # fork: Linux
        images.add([("a", f) for f in figures])
        drawn_there = [images.uri(f) for f in figures]
    assert drawn_there == [figure_to_data_uri(f) for f in figures]


def test_figures_are_drawn_here_while_another_thread_runs():
    """A fork copies the locks other threads hold (a notebook's kernel, the viewer): with a second
    thread running, the figures are drawn in this process, the same bytes."""
    import threading
    from psyq.analysis.report import figures
    from psyq.analysis.report.render import FigureImages
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        fig = figures.message_figure("drawn here")
        with FigureImages() as images:
            assert not images.in_second_process
            images.add([("a", fig)])
            assert images.uri(fig) == figures.figure_to_data_uri(fig)
    finally:
        release.set()
        other.join()


def test_item_shares_count_whole_values_and_missing_answers():
    from psyq import load_instrument
    from psyq.analysis.report.plots import item_shares
    iri = load_instrument("iri")
    table = pd.DataFrame({"instrument": "iri", "item_id": ["1", "1", "1", "2", "2", "2"],
                          "value": [0.0, 4.0, np.nan, 2.0, 2.7, 2.0]})
    shares = item_shares(table, iri)
    assert shares.loc["1"].tolist() == pytest.approx([1 / 3, 0, 0, 0, 1 / 3, 1 / 3])
    assert shares.loc["2"].tolist() == pytest.approx([0, 0, 1, 0, 0, 0])      # 2.7 counted as 2, as int() did
    assert shares.loc["3"].isna().all()
