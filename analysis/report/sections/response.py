"""The report sections of rated replies (`kind: response` items): "Rated replies" (persona replies
against reference replies, per rubric dimension) and "Agreement between raters" (ICCs,
Krippendorff's α, each judge against the people).

The ratings come from the run's store (:func:`psyq.engine.store.ratings.read_ratings`); the statistics from
:mod:`psyq.analysis.statistics.response_comparison` and :mod:`psyq.analysis.statistics.rater_agreement`. A run with replies that
nobody has rated yet gets a section saying how to rate them.

Example:
    >>> from psyq.analysis.report.sections import report_sections
    >>> "response" in [part.name for part in report_sections()]
    True
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from psyq.engine.design.persona import BASELINE
from psyq.engine.kinds import instruments_with
from psyq.engine.judging.perturbed_replies import read_log
from psyq.engine.store.ratings import read_ratings
from psyq.engine.store.run_dir import DATABASE
from psyq.engine.store.run_store import RunStore
from psyq.engine.files.yamlfile import load_yaml

from psyq.analysis.report import apa
from psyq.analysis.report.figures import new_figure, message_figure, series_style
from psyq.analysis.report.sections.robustness import robustness_sections
from psyq.analysis.statistics.standin.design_verdict import ratings_scorecard
from psyq.analysis.statistics.rater_agreement import alpha_table, icc_table, judge_vs_human
from psyq.analysis.statistics.response_comparison import (attribute_effects, compare_sources, descriptives,
    target_scores, with_combined)
from psyq.analysis.report.apa import say_p
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.section import ReportSection, Section
from psyq.engine.files.shipped import shipped_files

NOT_RATED = ("not rated yet: run `psyq judge RUN --rubric empathy_ceb` (judge models) or import people's "
             "ratings with `psyq import ratings`, then make the report again.")


def run_ratings(run_path: Path) -> pd.DataFrame:
    """The run's ratings (:func:`psyq.engine.store.ratings.read_ratings`); empty when the run has none. A
    run stored before ratings existed is only read, never given the tables."""
    database = Path(run_path) / DATABASE
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'ratings'").fetchone():
            return pd.DataFrame()
    with RunStore(database) as store:
        return read_ratings(store)


def run_perturbation_log(run_path: Path) -> pd.DataFrame | None:
    """What `psyq perturb` did to each (original, perturbation) pair (:func:`psyq.engine.judging.perturbed_replies.read_log`);
    None when the run was never perturbed (the table is only read, never created here)."""
    database = Path(run_path) / DATABASE
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'perturbation_log'").fetchone():
            return None
    with RunStore(database) as store:
        return read_log(store)


def trial_respondents(run_path: Path) -> pd.DataFrame:
    """The backend and respondent of every trial (index ``trial_id``), from the run's store."""
    database = Path(run_path) / DATABASE
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT trial_id, backend_id, respondent_id FROM trials").fetchall()
    return pd.DataFrame(rows, columns=["trial_id", "backend_id", "respondent_id"]).set_index("trial_id")


def persona_attributes(run_path: Path) -> pd.DataFrame:
    """Persona attributes of every trial (index ``trial_id``), from the run's store."""
    database = Path(run_path) / DATABASE
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT t.trial_id, r.attributes FROM trials t LEFT JOIN respondents r "
                          "USING (respondent_id)").fetchall()
    frame = pd.DataFrame([json.loads(a) if a else {} for _, a in rows], index=[t for t, _ in rows])
    return frame.rename_axis("trial_id").convert_dtypes()


def combine_rules(rubric_ids: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """The `combine:` rules (name -> dimensions averaged) of the shipped rubrics among
    `rubric_ids`; rubrics not shipped (or without a rule) are absent, and the comparison then
    says it averaged the dimensions rated."""
    rules: dict[str, dict[str, list[str]]] = {}
    shipped = shipped_files("rubric")
    for rubric in rubric_ids:
        if rubric not in shipped:
            continue
        path = shipped[rubric]
        spec = load_yaml(path).data
        combine = spec.get("combine") if isinstance(spec, dict) else None
        if isinstance(combine, dict):
            rules[rubric] = {name: list(rule["mean"]) for name, rule in combine.items()
                             if isinstance(rule, dict) and isinstance(rule.get("mean"), list)}
    return rules


def predictors_of(attributes: pd.DataFrame) -> list[str]:
    """Attributes usable as predictors on a small cohort (as the model-effects section: numeric,
    or categorical with at most 3 levels, and varying)."""
    return [c for c in attributes.columns if attributes[c].nunique() > 1
            and (pd.api.types.is_numeric_dtype(attributes[c]) or attributes[c].nunique() <= 3)]


def unrated_reasons(unread: pd.DataFrame, shown: int = 5) -> str:
    """The stored status and reason of ratings without a level (columns ``status``, ``reason``),
    most frequent first, the `shown` most frequent quoted and the rest counted.

    Example:
        >>> unread = pd.DataFrame({"status": ["unparseable", "failed", "unparseable"],
        ...                        "reason": ["no level digit", "HTTP 500", "no level digit"]})
        >>> unrated_reasons(unread)
        "unparseable 2: 'no level digit'; failed 1: 'HTTP 500'"
    """
    why = (unread.assign(reason=unread["reason"].fillna("(no reason stored)"))
           .value_counts(["status", "reason"], sort=False).reset_index(name="n")
           .sort_values(["n", "status", "reason"], ascending=[False, True, True], kind="stable"))
    parts = [f"{r.status} {r.n}: {_quoted(r.reason)}" for r in why.head(shown).itertuples()]
    if len(why) > shown:
        rest = why.iloc[shown:]
        parts.append(f"{len(rest)} other reason(s) for {rest['n'].sum()} rating(s) (table `ratings` of the run's "
                     "store has them all)")
    return "; ".join(parts)


def _quoted(reason: str, limit: int = 200) -> str:
    """A stored reason in quotes, cut at `limit` characters (a backend's error can be long)."""
    text = " ".join(str(reason).split())
    return repr(text if len(text) <= limit else text[:limit - 1] + "…")


def no_level_reading(ratings: pd.DataFrame) -> str:
    """What the report says when every stored rating lacks a level: how many were tried, by which
    raters, and why they failed (:func:`unrated_reasons`), instead of "not rated yet".

    Example:
        >>> ratings = pd.DataFrame({"rater_kind": ["judge"] * 2, "rater_id": ["judge"] * 2, "level": [None] * 2,
        ...                         "status": ["unparseable"] * 2, "reason": ["no level digit"] * 2})
        >>> first, why = no_level_reading(ratings).split(". ")[:2]
        >>> first.split(",")[0]
        "2 ratings were tried (2 by judge 'judge') and none gave a readable level"
        >>> why
        "Why, most frequent first: unparseable 2: 'no level digit'"
    """
    raters = ", ".join(f"{n} by {'person' if kind == 'human' else kind} {rater!r}" for (kind, rater), n
                       in ratings.value_counts(["rater_kind", "rater_id"], sort=False).items())
    judged = ratings["rater_kind"].eq("judge").any()
    advice = (" A judge's unparseable ratings are kept as they are (only `failed` ones are retried): to rate again, "
              "run `psyq judge RUN --rubric RUBRIC` with another --judge-id, and another --answer mode or model"
              if judged else "")
    tried = "1 rating was tried" if len(ratings) == 1 else f"{len(ratings)} ratings were tried"
    return (f"{tried} ({raters}) and none gave a readable level, so nothing can be compared (nothing is "
            f"imputed). Why, most frequent first: "
            f"{unrated_reasons(ratings)}.{advice}")


class ResponseSection(ReportSection):
    """"Rated replies" and "Agreement between raters", when the run has response items or ratings."""

    name = "response"
    kind = "response"

    def sections(self, report: ReportContext) -> list[Section]:
        ids = instruments_with(self.name, report.instruments)
        ratings = run_ratings(report.run_path)
        if not ids and ratings.empty:
            return []
        if ratings.empty:
            section = Section("Rated replies")
            section.readings.append(f"{', '.join(ids) or 'The replies'}: {NOT_RATED}")
            return [section]
        if ratings["level"].notna().sum() == 0:   # raters were asked, but none gave a readable level
            section = Section("Rated replies")
            section.readings.append(f"{', '.join(ids) or 'The replies'}: {no_level_reading(ratings)}")
            return [section]
        scores, how = reply_scores(ratings)
        sections = [rated_replies_section(ratings, scores, how, persona_attributes(report.run_path)),
                    agreement_section(ratings)]
        add_ratings_card(report, ratings, scores)
        # Perturbed texts (psyq perturb) are rated like the others; their section pairs each with its original.
        sections += robustness_sections(ratings, run_perturbation_log(report.run_path))
        return sections


def reply_scores(ratings: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Every unperturbed reply's score per rubric dimension and combined score, for each kind of rater
    (:func:`psyq.analysis.statistics.response_comparison.target_scores`), and sentences saying how the
    combined scores were formed."""
    combined, how = with_combined(ratings, combine_rules(sorted(ratings["rubric_id"].unique())))
    kinds = [k for k in ("judge", "human") if (ratings["rater_kind"] == k).any()]
    return pd.concat([target_scores(combined, k) for k in kinds], ignore_index=True), how


def add_ratings_card(report: ReportContext, ratings: pd.DataFrame, scores: pd.DataFrame) -> None:
    """Append the verdict's ``ratings`` card (:func:`psyq.analysis.statistics.standin.design_verdict.ratings_scorecard`)
    to ``report.design_cards``: each backend's persona replies against the reference replies, per rubric
    dimension and rater kind, when any persona reply was rated. The model answering as itself (the
    baseline respondent) is one respondent, not a cohort, and is left out, as in the questionnaires' verdict."""
    trials = trial_respondents(report.run_path)
    scores = scores.assign(instrument=scores["response_id"].map(
                               ratings.drop_duplicates("response_id").set_index("response_id")["instrument"]),
                           backend_id=scores["trial_id"].map(trials["backend_id"]))
    baseline = scores["trial_id"].map(trials["respondent_id"]).astype(str) == BASELINE.id
    scores = scores[~baseline]
    if (scores["source"] == "persona").any():
        report.design_cards.append(ratings_scorecard(scores, bound=report.bound))


def rated_replies_section(ratings: pd.DataFrame, scores: pd.DataFrame, how: list[str],
                          attributes: pd.DataFrame) -> Section:
    """Descriptives, persona − reference per dimension (mixed model), persona attributes, plot, from
    the replies' scores and how their combined scores were formed (:func:`reply_scores`)."""
    section = Section("Rated replies")
    kinds = [k for k in ("judge", "human") if (ratings["rater_kind"] == k).any()]
    original = ratings[ratings["perturbation"].isna()]
    section.readings.append(
        f"{original['response_id'].nunique()} replies ({(original.drop_duplicates('response_id')['source'] == 'persona').sum()} "
        f"by personas, {(original.drop_duplicates('response_id')['source'] == 'reference').sum()} reference replies) to "
        f"{original['item_id'].nunique()} messages, rated by "
        + " and ".join(f"{original[original['rater_kind'] == k]['rater_id'].nunique()} {k}(s)" for k in kinds)
        + ". A reply's score is the mean level of the raters of one kind (judges and people are never pooled); "
        "perturbed texts are left out here.")
    unread = ratings[ratings["level"].isna()]
    if not unread.empty:
        section.readings.append(f"{len(unread)} rating(s) have no level and are left out, never imputed ("
                                + ", ".join(f"{k} {v}" for k, v in unread["status"].value_counts().items()) + ").")
        section.readings.append(f"Why, most frequent first: {unrated_reasons(unread)}.")
    section.readings.extend(how)
    desc = descriptives(scores)
    section.add_table("Scores of persona and reference replies per dimension (mean of the raters of each kind)",
                      desc)
    comparison = compare_sources(scores)
    section.add_table("Persona − reference replies per dimension (linear mixed model, random intercept per "
                      "message)", comparison)
    section.readings.extend(comparison_readings(comparison, say_p))
    predictors = predictors_of(attributes.loc[attributes.index.isin(scores["trial_id"].dropna())])
    if predictors:
        effects = attribute_effects(scores, attributes, predictors)
        section.add_table("Persona attributes as predictors of persona replies' scores (random intercept per "
                          "message)", effects)
    section.figures.append(("Mean score per dimension, persona against reference replies (95 % CI of the mean)",
                            source_means_plot(desc)))
    return section


def agreement_section(ratings: pd.DataFrame) -> Section:
    """ICC(2,1), ICC(2,k), Krippendorff's α per dimension and rater set; each judge against people."""
    section = Section("Agreement between raters")
    original = ratings[ratings["perturbation"].isna()].reset_index(drop=True)
    combined, _ = with_combined(original, combine_rules(sorted(original["rubric_id"].unique())))
    scores_only = combined.iloc[len(original):]          # the combined scores (e.g. overall), not levels
    icc = icc_table(combined)
    alpha = (pd.concat([alpha_table(original), alpha_table(scores_only, level_of_measurement="interval")],
                       ignore_index=True).sort_values(["rubric_id", "dimension"], kind="stable", ignore_index=True))
    versus = judge_vs_human(combined)
    section.readings.append(
        "On the unperturbed replies, per rubric dimension: ICC(2,1) and ICC(2,k) (two-way random effects, absolute "
        "agreement; only replies rated by every rater of the set enter) and Krippendorff's α (replies with two or "
        "more levels; ordinal for a dimension's levels, interval for a combined score such as overall, a mean of "
        "levels), over every rater, the judges only and the people only.")
    section.add_table("Intraclass correlations between raters", icc)
    section.add_table("Krippendorff's alpha between raters (ordinal; interval for combined scores)", alpha)
    section.readings.extend(agreement_readings(icc, alpha))
    if versus.empty:
        section.readings.append("No person has rated these replies: no judge can be compared with people "
                                "(psyq import ratings adds human ratings).")
    else:
        section.add_table("Each judge against the people (mean of the people who rated a reply)", versus)
        section.readings.extend(judge_readings(versus))
    section.figures.append(("Agreement between raters per dimension (95 % CI for the ICCs; n.e.: not estimable, "
                            "see the tables)", agreement_plot(icc, alpha)))
    return section


# --- readings: one sentence per rubric and rater kind / set / judge, the dimensions listed ---

def _estimate(value: Any, low: Any, high: Any, fmt: Any = apa.fmt_num) -> str:
    return f"{fmt(value)} {apa.fmt_ci(low, high, fmt)}"


def comparison_readings(comparison: pd.DataFrame, fmt_p: Any) -> list[str]:
    """One sentence per rubric × rater kind: persona − reference per dimension, with the model
    used and any fallback or not-estimable reason."""
    out = []
    for (rubric, kind), rows in comparison.groupby(["rubric_id", "rater_kind"], sort=False):
        parts = [f"{r.dimension} {_estimate(r.b, r.b_ci_low, r.b_ci_high)} (p {fmt_p(r.p)})" if pd.notna(r.b)
                 else f"{r.dimension} {r.note}" for r in rows.itertuples()]
        fitted = rows[rows["model"] != "none"]
        models = "; ".join(f"{model} for {', '.join(g['dimension'])}" + (f" ({note})" if note else "")
                           for (model, note), g in fitted.groupby(["model", "note"], sort=False))
        out.append(f"{rubric}, scored by {kind}s: persona − reference replies, in levels [95 % CI]: "
                   + ", ".join(parts) + f"; {rows['n'].max()} replies to {rows['n_messages'].max()} messages"
                   + (f"; {models}" if models else "") + ".")
    return out


def _replies(n: int) -> str:
    return f"{n} repl{'y' if n == 1 else 'ies'}"


def agreement_readings(icc: pd.DataFrame, alpha: pd.DataFrame) -> list[str]:
    """One sentence per rubric × rater set: ICC(2,1) and α per dimension (or why not estimable)."""
    out = []
    single = icc[icc["type"] == "ICC(2,1)"]
    for (rubric, raters), rows in single.groupby(["rubric_id", "raters"], sort=False):
        a = alpha[(alpha["rubric_id"] == rubric) & (alpha["raters"] == raters)].set_index("dimension")
        parts = []
        for r in rows.itertuples():
            icc_text = (_estimate(r.icc, r.ci_low, r.ci_high, apa.fmt_r) if pd.notna(r.icc) else r.note)
            alpha_text = (f"{apa.fmt_r(a.loc[r.dimension, 'alpha'])} (n = {a.loc[r.dimension, 'n_targets']})"
                          if r.dimension in a.index and pd.notna(a.loc[r.dimension, "alpha"]) else "not estimable")
            dropped = (f"; {_replies(r.n_dropped)} left out: not rated by every rater" if r.n_dropped else "")
            parts.append(f"{r.dimension} ICC(2,1) {icc_text} (n = {_replies(r.n_targets)}{dropped}), α {alpha_text}")
        k = rows["n_raters"].max()
        out.append(f"{rubric}, {raters} ({k} rater{'' if k == 1 else 's'}): " + "; ".join(parts) + ".")
    return out


def judge_readings(versus: pd.DataFrame) -> list[str]:
    """One sentence per rubric × judge: bias against the people's mean and r, per dimension."""
    out = []
    for (rubric, judge), rows in versus.groupby(["rubric_id", "judge_id"], sort=False):
        parts = [f"{r.dimension} bias {_estimate(r.bias, r.bias_ci_low, r.bias_ci_high)}, r {apa.fmt_r(r.pearson_r)}"
                 f" (n = {r.n}{'; ' + r.note if r.note else ''})" if pd.notna(r.bias) else f"{r.dimension} {r.note}"
                 for r in rows.itertuples()]
        out.append(f"{rubric}, judge {judge} against the people's mean (judge − people, in levels): "
                   + "; ".join(parts) + ".")
    return out


# --- figures ----------------------------------------------------------------------------------

def source_means_plot(desc: pd.DataFrame) -> Figure:
    """Mean score per dimension of persona and reference replies with 95 % CIs, one panel per
    rubric × rater kind (:func:`psyq.analysis.statistics.response_comparison.descriptives` output)."""
    if desc.empty:
        return message_figure("no rated replies")
    panels = list(desc.groupby(["rubric_id", "rater_kind"], sort=True))
    fig = new_figure(min(4.2 * len(panels), 12.5), 3.8)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, ((rubric, kind), rows) in zip(axes, panels):
        dims = list(dict.fromkeys(rows["dimension"]))
        x = np.arange(len(dims))
        for i, source in enumerate(("persona", "reference")):
            part = rows[rows["source"] == source].set_index("dimension").reindex(dims)
            mean = part["mean"].to_numpy(dtype=float)
            err = np.vstack([mean - part["mean_ci_low"].to_numpy(dtype=float),
                             part["mean_ci_high"].to_numpy(dtype=float) - mean])
            ax.errorbar(x + (i - 0.5) * 0.22, mean, yerr=np.nan_to_num(err), linestyle="none", capsize=3,
                        label=source, **series_style(i))
        ax.set_xticks(x, dims, rotation=20)
        ax.set_xlim(-0.6, len(dims) - 0.4)
        # Levels are whole numbers, so every mean lies within [floor(min), ceil(max)] of the means:
        # an interval of a few replies reaching far beyond the scale is cut there (and said), so
        # that it does not flatten the means of the others.
        means = rows["mean"].to_numpy(dtype=float)
        if np.isfinite(means).any():
            lo, hi = np.floor(np.nanmin(means)) - 0.3, np.ceil(np.nanmax(means)) + 0.3
            if np.nanmin(rows["mean_ci_low"].to_numpy(dtype=float), initial=lo) < lo or \
                    np.nanmax(rows["mean_ci_high"].to_numpy(dtype=float), initial=hi) > hi:
                ax.set_ylim(lo, hi)
                ax.annotate("some intervals cut at the edge (full values in the table)", (0.01, 0.01),
                            xycoords="axes fraction", fontsize=7, color="0.35")
        ax.set_title(f"{rubric}, {kind}s", fontsize=10)
        ax.set_ylabel("mean level")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=2, frameon=False, title="replies")
    return fig


def agreement_plot(icc: pd.DataFrame, alpha: pd.DataFrame) -> Figure:
    """ICC(2,1), ICC(2,k) (with 95 % CIs) and ordinal α per dimension, one marker per rater set;
    not-estimable values are left out (the tables say why)."""
    if icc.empty and alpha.empty:
        return message_figure("no ratings to compare")
    stats_ = [("ICC(2,1)", icc[icc["type"] == "ICC(2,1)"], "icc"), ("ICC(2,k)", icc[icc["type"] == "ICC(2,k)"], "icc"),
              ("Krippendorff's α", alpha, "alpha")]
    fig = new_figure(11, 4.0)
    axes = fig.subplots(1, 3, sharey=True)
    sets = ["all", "judges", "humans"]
    several = pd.concat([icc["rubric_id"], alpha["rubric_id"]]).nunique() > 1
    for ax, (title, rows, col) in zip(axes, stats_):
        labels = list(dict.fromkeys(rows["rubric_id"] + " " + rows["dimension"])) if not rows.empty else []
        x = np.arange(len(labels))
        for i, name in enumerate(sets):
            part = rows[rows["raters"] == name]
            if part.empty:
                continue
            part = part.set_index(part["rubric_id"] + " " + part["dimension"])
            rated_here = np.isin(labels, part.index)          # a set with no raters there: nothing to say
            part = part.reindex(labels)
            value = part[col].to_numpy(dtype=float)
            kwargs: dict[str, Any] = {}
            if col == "icc":
                kwargs["yerr"] = np.nan_to_num(np.vstack([value - part["ci_low"].to_numpy(dtype=float),
                                                          part["ci_high"].to_numpy(dtype=float) - value]))
            ax.errorbar(x + (i - 1) * 0.2, value, linestyle="none", capsize=3, label=name, **series_style(i), **kwargs)
            for xi in x[np.isnan(value) & rated_here]:         # said on the figure too, not only by a missing point
                ax.text(xi + (i - 1) * 0.2, 0, "n.e.", rotation=90, ha="center", va="bottom", fontsize=7,
                        color=series_style(i)["color"])
        ax.axhline(0, color="#999999", linewidth=0.8)
        ax.set_xticks(x, [lab.replace(" ", "\n", 1) if several else lab.split(" ", 1)[-1] for lab in labels],
                      rotation=20, fontsize=8)
        ax.set_xlim(-0.6, max(len(labels), 1) - 0.4)
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("agreement")
    # Agreement of 1 is perfect and 0 chance; an ICC(2,k) interval from few replies can reach far
    # below −1, which would flatten every other point: shown from −1 to 1, cut there and said.
    bounds = pd.concat([icc.get("ci_low", pd.Series(dtype=float)), icc.get("icc", pd.Series(dtype=float)),
                        alpha.get("alpha", pd.Series(dtype=float))]).to_numpy(dtype=float)
    if np.isfinite(bounds).any() and np.nanmin(bounds) < -1.05:
        axes[0].set_ylim(-1.1, 1.1)
        axes[0].annotate("values and intervals below −1 cut at the edge (see the table)", (0.01, 0.01),
                         xycoords="axes fraction", fontsize=7, color="0.35")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside upper center", ncols=3, frameon=False, title="raters")
    return fig
