"""Figures: right panels and artists, values read back from the artists, files and data URIs.

The comparison and SD-ratio tables are small hand-made frames following the column contracts of
psyq.analysis.statistics.norms.compare_with_norms and psyq.analysis.statistics.standin.fidelity.sd_ratio (those modules are not imported).
"""

import base64
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle
from scipy import stats

from psyq.analysis.report import figures, plots
from psyq.analysis.report.sections.vignette import vignette_accuracy_chart
from psyq import load_instrument

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

COMPARISON_COLUMNS = ["backend_id", "instrument", "subscale", "norm_sample", "norm_group", "norm_derived", "n",
                      "mean", "sd", "norm_n", "norm_mean", "norm_sd", "diff", "t", "df", "p", "p_adj", "g",
                      "g_low", "g_high", "tost_p", "equivalent", "sd_ratio"]
NORMS = {  # (group, subscale) -> (norm_mean, norm_sd, norm_n)
    ("men", "PT"): (16.78, 4.72, 579), ("women", "PT"): (17.96, 4.85, 582),
    ("men", "FS"): (15.73, 5.60, 579), ("women", "FS"): (18.75, 5.17, 582),
    ("men", "EC"): (19.04, 4.21, 579), ("women", "EC"): (21.67, 3.83, 582),
}


def make_comparison(backends=("gpt", "llama")) -> pd.DataFrame:
    rows = []
    for b, backend in enumerate(backends):
        for (group, sub), (m, sd, nn) in NORMS.items():
            mean, csd, n = 10.0 + b + len(sub), 2.0 + 0.5 * b, 6 + b
            rows.append({"backend_id": backend, "instrument": "iri", "subscale": sub, "norm_sample": "davis1980",
                         "norm_group": group, "norm_derived": False, "n": n, "mean": mean, "sd": csd,
                         "norm_n": nn, "norm_mean": m, "norm_sd": sd, "diff": mean - m, "t": -5.0, "df": 5.0,
                         "p": 0.001, "p_adj": 0.004, "g": -1.2, "g_low": -2.0, "g_high": -0.4, "tost_p": 0.9,
                         "equivalent": False, "sd_ratio": csd / sd})
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def all_text(fig: Figure) -> str:
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    # Titles are wrapped to the figure's width: compare text with line breaks read as spaces.
    return " ".join(" ".join(texts).split())


def errorbars(fig: Figure) -> list[ErrorbarContainer]:
    return [c for ax in fig.axes for c in ax.containers if isinstance(c, ErrorbarContainer)]


# --------------------------------------------------------------------------------------------
# profile_plot


def test_profile_plot_panels_errorbars_and_bands():
    comp = make_comparison()
    fig = plots.profile_plot(comp, "iri")
    assert isinstance(fig, Figure) and isinstance(fig.canvas, FigureCanvasAgg)
    assert len(fig.axes) == 2                                   # one panel per norm group
    assert len(errorbars(fig)) == 3 * 2 * 2                     # subscales × groups × backends
    bands = [p for ax in fig.axes for p in ax.patches
             if isinstance(p, Rectangle) and (p.get_gid() or "").startswith("norm-band:")]
    assert len(bands) == 3 * 2                                  # one band per subscale × group
    for band in bands:
        _, sample, group, sub = band.get_gid().split(":")
        m, sd, _ = NORMS[(group, sub)]
        assert band.get_y() == pytest.approx(m - sd)
        assert band.get_y() + band.get_height() == pytest.approx(m + sd)
    assert "no norms" not in all_text(fig)


def test_profile_plot_ci_is_t_interval():
    comp = make_comparison(backends=("gpt",))
    fig = plots.profile_plot(comp, "iri")
    bars = {c.lines[0].get_gid(): c for c in errorbars(fig)}
    row = comp[(comp["subscale"] == "FS") & (comp["norm_group"] == "women")].iloc[0]
    bar = bars["cohort:gpt:davis1980:women:FS"]
    segment = bar.lines[2][0].get_segments()[0]                 # the vertical error line
    half = stats.t.ppf(0.975, row["n"] - 1) * row["sd"] / math.sqrt(row["n"])   # n = 6: t = 2.5706
    assert sorted(y for _, y in segment) == pytest.approx([row["mean"] - half, row["mean"] + half])
    assert bar.lines[0].get_ydata()[0] == pytest.approx(row["mean"])


def test_profile_plot_single_cohort_member_has_no_ci():
    comp = make_comparison(backends=("gpt",))
    comp["n"] = 1
    comp["sd"] = np.nan
    fig = plots.profile_plot(comp, "iri")
    assert len(errorbars(fig)) == 6
    assert not any(c.has_yerr for c in errorbars(fig))


@pytest.mark.parametrize("comp", [make_comparison(), pd.DataFrame(columns=COMPARISON_COLUMNS), pd.DataFrame()])
def test_profile_plot_without_norms_says_so(comp):
    fig = plots.profile_plot(comp, "bes")
    assert len(fig.axes) == 1
    assert "no norms for this instrument" in all_text(fig)
    assert errorbars(fig) == []


# --------------------------------------------------------------------------------------------
# distribution_plot


def make_scores() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for backend in ("gpt", "llama"):
        for r in range(20):
            for sub in ("PT", "FS"):
                rows.append({"backend_id": backend, "model": "m", "respondent_id": f"p{r}", "repeat": 0,
                             "gender": "male" if r % 2 else "female", "instrument": "iri", "subscale": sub,
                             "score": float(rng.integers(0, 29)) if r != 3 else np.nan,
                             "n_answered": 7, "n_items": 7})
    return pd.DataFrame(rows)


def test_distribution_plot_histograms_and_norm_curves():
    scores, comp = make_scores(), make_comparison()
    fig = plots.distribution_plot(scores, comp, "iri", "PT")
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    curves = [line for line in ax.lines if (line.get_gid() or "").startswith("norm-density:")]
    assert len(curves) == 2                                     # one per norm group
    for line in curves:
        group = line.get_gid().split(":")[2]
        m, sd, _ = NORMS[(group, "PT")]
        x, y = line.get_xdata(), line.get_ydata()
        assert y == pytest.approx(stats.norm.pdf(x, m, sd))
        assert x[np.argmax(y)] == pytest.approx(m, abs=(x[1] - x[0]))
    # one density histogram per backend; each integrates to 1 over its bars
    polys = [p for p in ax.patches]
    assert len(polys) == 2
    for backend in ("gpt", "llama"):
        values = scores[(scores["backend_id"] == backend) & (scores["subscale"] == "PT")]["score"].dropna()
        heights, edges = np.histogram(values, bins=np.arange(values.min() - 0.5, values.max() + 1.5), density=True)
        assert (heights * np.diff(edges)).sum() == pytest.approx(1.0)
    legend = " ".join(t.get_text() for t in fig.legends[0].get_texts())
    # Respondent p3 has no score: 19 of the 20 respondents (one repeat each) are drawn.
    assert "gpt cohort (n = 19 respondents; 1 score missing)" in legend
    assert "N(16.78, 4.72²), n = 579" in legend


def test_distribution_plot_draws_norm_curves_only_over_the_possible_scores():
    scores, comp = make_scores(), make_comparison()
    fig = plots.distribution_plot(scores, comp, "iri", "PT", score_range=(0, 28))
    ax = fig.axes[0]
    curves = [line for line in ax.lines if (line.get_gid() or "").startswith("norm-density:")]
    assert len(curves) == 2
    for line in curves:
        m, sd, _ = NORMS[(line.get_gid().split(":")[2], "PT")]
        x, y = line.get_xdata(), line.get_ydata()
        assert x.min() == 0 and x.max() == 28                  # cut at the ends, not beyond
        assert y == pytest.approx(stats.norm.pdf(x, m, sd))   # still the norm's own density, not rescaled
    # A histogram bar around a score of 0 or 28 reaches half a point beyond it, and no further.
    low, high = ax.get_xlim()
    assert -0.5 - 0.7 < low <= 0 and 28 <= high < 28.5 + 0.7
    assert "possible scores 0\u201328; normal curves cut at its ends" in ax.get_xlabel()


def test_distribution_plot_without_norms():
    scores = make_scores()
    fig = plots.distribution_plot(scores, make_comparison(), "iri", "EC")   # no EC scores, EC norms exist
    assert len(fig.axes) == 1 and len(fig.axes[0].lines) == 2
    fig = plots.distribution_plot(scores, pd.DataFrame(columns=COMPARISON_COLUMNS), "iri", "PT")
    assert "no norms for this instrument" in all_text(fig)       # histogram drawn, title says so
    assert len(fig.axes[0].patches) == 2
    fig = plots.distribution_plot(scores.iloc[0:0], pd.DataFrame(), "bes", "total")
    assert len(fig.axes) == 1 and "no norms for this instrument" in all_text(fig)


# --------------------------------------------------------------------------------------------
# item_heatmap


@pytest.fixture
def mini():
    inst = load_instrument(MINI)
    # published order that is not alphabetical, to check rows follow it
    return inst.model_copy(update={"items": [inst.items[i] for i in (2, 0, 3, 1)]})


def make_answers(instrument) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for backend in ("gpt", "llama"):
        for r in range(15):
            for item in instrument.items:
                value = float(rng.integers(1, 8)) if rng.random() > 0.15 else np.nan
                rows.append({"backend_id": backend, "respondent_id": f"p{r}", "repeat": 0, "instrument": "mini",
                             "item_id": item.id, "value": value,
                             "status": "answered" if not np.isnan(value) else "unparsed"})
    rows.append({"backend_id": "gpt", "respondent_id": "x", "repeat": 0, "instrument": "other",
                 "item_id": "a", "value": 1.0, "status": "answered"})   # another instrument: ignored
    return pd.DataFrame(rows)


def test_item_heatmap_cells_equal_crosstab_shares(mini):
    table = make_answers(mini)
    fig = plots.item_heatmap(table, mini)
    images = {im.get_gid(): im for ax in fig.axes for im in ax.images if isinstance(im, AxesImage)}
    assert set(images) == {"heatmap:gpt", "heatmap:llama"}     # one panel per backend (+ colour bar axes)
    assert len(fig.axes) == 3
    for backend, image in images.items():
        rows = table[(table["backend_id"] == backend.split(":")[1]) & (table["instrument"] == "mini")]
        expected = pd.crosstab(rows["item_id"], rows["value"].fillna(-1), normalize="index")
        expected = expected.rename(columns={-1: "missing"}).reindex(
            index=["c", "a", "d", "b"], columns=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, "missing"], fill_value=0.0)
        got = np.asarray(image.get_array())
        assert got.shape == (4, 8)                               # 4 items × 7 options + missing
        assert got == pytest.approx(expected.to_numpy(dtype=float))
        assert got.sum(axis=1) == pytest.approx(np.ones(4))
        ax = image.axes
        if backend == "heatmap:gpt":                             # panels share the item labels of the first
            assert [t.get_text().split()[0] for t in ax.get_yticklabels()] == ["c", "a", "d", "b"]
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert labels[0] == "1\nStrongly\ndisagree" and labels[1] == "2" and labels[-1] == "missing"
        # every non-zero cell is annotated with its percentage
        annotations = [t.get_text() for t in ax.texts]
        assert annotations == [f"{100 * v:.0f}" for v in expected.to_numpy(dtype=float).ravel() if v > 0]


def test_item_heatmap_without_answers(mini):
    fig = plots.item_heatmap(make_answers(mini).iloc[0:0], mini)
    assert len(fig.axes) == 1 and "no answers for mini" in all_text(fig)


# --------------------------------------------------------------------------------------------
# sd_ratio_chart


def make_ratios() -> pd.DataFrame:
    rows = []
    for backend in ("gpt", "llama"):
        for (group, sub), (_, sd, _) in NORMS.items():
            ratio = 1.8 / sd
            rows.append({"backend_id": backend, "instrument": "iri", "subscale": sub, "norm_group": group,
                         "sd_ratio": ratio, "ci_low": ratio * 0.6, "ci_high": ratio * 1.9, "collapsed": ratio < 0.4})
    return pd.DataFrame(rows)


def test_sd_ratio_chart_points_cis_and_reference_lines():
    ratios = make_ratios()
    fig = plots.sd_ratio_chart(ratios)
    assert len(fig.axes) == 1
    bars = errorbars(fig)
    assert len(bars) == len(ratios)                             # subscales × groups × backends
    by_gid = {c.lines[0].get_gid(): c for c in bars}
    for r in ratios.itertuples():
        bar = by_gid[f"sd-ratio:{r.backend_id}:{r.instrument}:{r.subscale}:{r.norm_group}"]
        assert bar.lines[0].get_xdata()[0] == pytest.approx(r.sd_ratio)
        segment = bar.lines[2][0].get_segments()[0]
        assert sorted(x for x, _ in segment) == pytest.approx([r.ci_low, r.ci_high])
    ax = fig.axes[0]
    refs = {line.get_gid(): line.get_xdata()[0] for line in ax.lines if (line.get_gid() or "").startswith("ref:")}
    assert refs == {"ref:1": 1.0, "ref:0.5": 0.5}
    assert len(ax.get_yticks()) == len(NORMS)                   # one row per subscale × group
    assert all_text(fig).count("collapsed") >= int(ratios["collapsed"].sum())


def test_sd_ratio_chart_empty():
    for empty in (pd.DataFrame(), pd.DataFrame(columns=["backend_id", "instrument", "subscale", "norm_group",
                                                        "sd_ratio", "ci_low", "ci_high", "collapsed"])):
        fig = plots.sd_ratio_chart(empty)
        assert len(fig.axes) == 1 and "no norms" in all_text(fig)


# --------------------------------------------------------------------------------------------
# Output


def test_save_figure_writes_png_and_svg(tmp_path):
    fig = plots.profile_plot(make_comparison(), "iri")
    paths = figures.save_figure(fig, tmp_path / "sub" / "iri.profile")
    assert paths == [tmp_path / "sub" / "iri.profile.png", tmp_path / "sub" / "iri.profile.svg"]
    assert paths[0].read_bytes()[:8] == PNG_MAGIC
    svg = paths[1].read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and svg.rstrip().endswith("</svg>")


def test_save_figure_dpi_150(tmp_path):
    fig = plots.sd_ratio_chart(make_ratios())
    png = figures.save_figure(fig, tmp_path / "ratios")[0].read_bytes()
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    w_in, h_in = fig.get_size_inches()
    assert width == pytest.approx(w_in * 150, abs=1) and height == pytest.approx(h_in * 150, abs=1)


def test_figure_to_data_uri():
    fig = plots.item_heatmap(make_answers(load_instrument(MINI)), load_instrument(MINI))
    uri = figures.figure_to_data_uri(fig)
    assert uri.startswith("data:image/png;base64,")
    assert base64.b64decode(uri.split(",", 1)[1])[:8] == PNG_MAGIC
    svg = figures.figure_to_data_uri(fig, "svg")
    assert svg.startswith("data:image/svg+xml;base64,") and b"<svg" in base64.b64decode(svg.split(",", 1)[1])
    with pytest.raises(ValueError):
        figures.figure_to_data_uri(fig, "bmp")


def test_no_pyplot_state():
    import sys
    before = sys.modules.get("matplotlib.pyplot")
    plots.profile_plot(make_comparison(), "iri")
    if before is None:
        assert "matplotlib.pyplot" not in sys.modules
    else:
        assert before.get_fignums() == []


# --------------------------------------------------------------------------------------------
# vignette_accuracy_chart


def test_vignette_accuracy_chart_one_marker_set_per_group():
    summary = pd.DataFrame({"group": ["gpt", "gpt", "human perceivers", "human perceivers"],
                            "vignette": ["v1", "v2", "v1", "v2"], "r": [0.5, -0.2, 0.7, 0.1]})
    fig = vignette_accuracy_chart(summary)
    lines = {line.get_gid(): line for line in fig.axes[0].lines if (line.get_gid() or "").startswith("vignette-r:")}
    assert set(lines) == {"vignette-r:gpt", "vignette-r:human perceivers"}
    assert lines["vignette-r:gpt"].get_xdata().tolist() == [0.5, -0.2]
    # Rows in vignette order (0, 1), the second group drawn just below the first (offset +0.15).
    assert lines["vignette-r:human perceivers"].get_ydata().tolist() == pytest.approx([0.15, 1.15])
    assert "no vignette answers" in all_text(vignette_accuracy_chart(summary.iloc[:0]))
