"""The sections with people's own data (``--human``): the cohort against the people's scores, and
the construct's validity against their item answers (distributions, intercorrelations, factor
congruence)."""

from __future__ import annotations

import pandas as pd

from psyq.analysis.report import plots
from psyq.analysis.report.apa import say_num, say_p, sentence_case
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.readings import (WEIGHTED_CAPTION, matching_warnings, norm_readings, reading_notes,
                                           shares_text, value_mismatch_warnings, weighted_by, weighting_methods,
                                           weighting_text)
from psyq.analysis.report.section import ReportSection, Section
from psyq.analysis.statistics import human_comparison as human, norms, validity


class PeopleSection(ReportSection):
    """"Comparison with human data": how each file was read, the cohort against the people per
    subscale (weighted where the file has survey weights), and the people against the same norms."""

    name = "people"

    def applies(self, report: ReportContext) -> bool:
        return not report.staged and bool(report.people)

    def sections(self, report: ReportContext) -> list[Section]:
        instruments, human_items, items = report.instruments, report.human_items, report.items
        hum = Section("Comparison with human data")
        for inst_id in sorted(human_items):   # codebook used, keying declared, keying that looks wrong
            data = report.people[inst_id]
            said, warned = reading_notes(instruments[inst_id], human_items[inst_id], str(data.file))
            hum.readings.extend(said + [f"Warning (human data): {w}." for w in warned])
            for message in warned:
                report.say("human data: " + message)
        # Survey weights: the human side when its file has them; the cohort side too when its personas are
        # respondents of that file (twins), never for a cohort drawn from it in proportion to the weights.
        cohort_weights = report.cohort_weights
        weighting = {i: weighting_text(i, human_items[i], cohort_weights.get(i), items.get(i)) for i in human_items}
        hum.readings.extend(text for text in weighting.values() if text)
        # Every model against the people (each backend's first repeat: one administration per persona).
        frames = []
        for i in cohort_weights:
            answers = report.backend_answers.get(i)
            groups = (answers.groupby("backend_id", sort=False) if answers is not None
                      else [(report.first_backend, items[i])])
            for backend, part in groups:
                frame = human.compare_with_humans({i: part.drop(columns="backend_id", errors="ignore")},
                                                  {i: human_items[i]}, instruments, cohort_weights=cohort_weights[i])
                frames.append(frame.assign(model=str(backend)))
        cmp = pd.concat(frames or [pd.DataFrame(columns=[*human.COMPARISON_COLUMNS, "model"])], ignore_index=True)
        several = cmp["model"].nunique() > 1
        cmp = cmp[["model", *human.COMPARISON_COLUMNS]] if several else cmp.drop(columns="model")
        weighted_any = bool((cmp["weighted"] != "").any())
        hum.add_table("Cohort against human respondents" + (
            f" ({WEIGHTED_CAPTION})" if weighted_any else ""), cmp if weighted_any else cmp.drop(
                columns=human.WEIGHTED_ONLY), view="human_comparison")
        for row in cmp.itertuples():   # the table's rows in words: folded away, the table says them
            hum.details.append(
                (f"{row.model}: " if several else "") + f"{row.instrument} {row.subscale}: cohort mean {say_num(row.mean_cohort)} vs human "
                f"{say_num(row.mean_human)} (g = {say_num(row.g)}, 95 % CI {say_num(row.g_low)} to "
                f"{say_num(row.g_high)}; Welch p {say_p(row.p)}); variance ratio {say_num(row.variance_ratio)}"
                + (f" (Brown–Forsythe p {say_p(row.p_bf)})." if not row.weighted else
                   f"; {weighted_by(row, human_items[row.instrument])}.")
                + (f" {sentence_case(row.note)}." if row.note else ""))
        if weighted_any:
            hum.methods = weighting_methods(human_items, cohort_weights)
        human_long = report.human_long
        human_norms = norms.compare_with_norms(human_long, instruments, bound=report.bound,
                                               correction=report.correction, samples=report.choice)
        human_matching = norms.group_matching(human_long, instruments, samples=report.choice)
        mismatches = norms.value_mismatches(human_long, instruments, samples=report.choice)
        for message in matching_warnings(human_matching) + value_mismatch_warnings(mismatches):
            hum.readings.append("Warning (human data): " + message)
            report.say("human data: " + message)
        if not human_norms.empty:
            hum.add_table("Human respondents against the same norms (scored and matched to norm groups "
                          "like the cohort" + ("; unweighted: each respondent counts once" if weighted_any else "")
                          + ")", human_norms, view="norm_comparison")
            # The people against norms: a check of the people's file, not of the personas; the table holds it.
            hum.details.extend(f"Human data: {r}" for r in
                               norm_readings(human_norms, bound=report.bound, correction=report.correction))
        return [hum]


class ConstructValiditySection(ReportSection):
    """"Construct validity against human data": item distributions (total variation, SimBench score,
    Wasserstein distance), subscale intercorrelations and factor congruence against the people's raw
    answers (:mod:`psyq.analysis.statistics.validity`), weighted where the people's file has weights."""

    name = "construct_validity"

    def applies(self, report: ReportContext) -> bool:
        return not report.staged and bool(report.cohort_answers)

    def sections(self, report: ReportContext) -> list[Section]:
        section = Section("Construct validity against human data")
        section.readings.append(
            "Cohort: first repeat of the first backend. Distributions are compared per item (total variation; "
            "SimBench score 100 × (1 − TV / mean TV of uniform guessing): 0 = no better than random answers, "
            "100 = the human distribution; Wasserstein distance in scale points), overall and within each "
            "attribute both samples share.")
        congruence_frames = []
        for inst_id, cohort in report.cohort_answers.items():
            instrument, humans = report.rated[inst_id], report.human_items[inst_id]
            weights_c = report.cohort_weights.get(inst_id)
            dist = validity.item_distributions(cohort, humans, instrument, cohort_weights=weights_c)
            if said := shares_text(inst_id, humans, weights_c, cohort):
                section.readings.append(said)
            corr = validity.subscale_correlations(cohort, humans, instrument)
            cong = validity.factor_congruence(cohort, humans, instrument)
            congruence_frames.append(cong)
            summary = (dist[dist["estimable"]].groupby(["group_by", "group"], sort=False)
                       .agg(items=("item_id", "count"), tv=("tv", "mean"), simbench=("simbench", "mean"),
                            wasserstein=("wasserstein", "mean")).reset_index())
            overall = summary[summary["group_by"] == validity.ALL]
            if len(overall):
                o = overall.iloc[0]
                section.readings.append(
                    f"{inst_id}: over {int(o['items'])} items the cohort's answer distributions are at a mean total "
                    f"variation of {say_num(o['tv'])} from the humans' (SimBench score {say_num(o['simbench'])}; "
                    f"mean Wasserstein {say_num(o['wasserstein'])} scale points).")
            missing = dist[~dist["estimable"]]
            if len(missing):
                groups = sorted({f"{r.group_by} = {r.group}" for r in missing.itertuples()})
                section.readings.append(f"{inst_id}: item distributions not estimable in {len(missing)} item × "
                                        f"group cell(s) ({'; '.join(groups)}): {missing['note'].iloc[0]}.")
            section.add_table(f"Item distributions per group: {inst_id} (means over items)", summary)
            section.add_table(f"Item distributions, whole sample: {inst_id}",
                              dist[dist["group_by"] == validity.ALL].drop(columns=["group_by", "group"]))
            section.add_table(f"Subscale intercorrelations, cohort and humans: {inst_id}", corr)
            for row in corr[~corr["estimable"]].itertuples():
                section.readings.append(f"{inst_id} r({row.subscale_a}, {row.subscale_b}) not estimable: {row.note}.")
            whole = corr[corr["part_whole"]]
            if len(whole):   # a composite (a total) and its parts: r high by construction, not evidence of anything
                section.readings.append(f"{inst_id}: " + ", ".join(f"r({r.subscale_a}, {r.subscale_b})"
                                                                   for r in whole.itertuples())
                                        + " are part–whole correlations (one subscale holds every item of the "
                                        "other): high by construction, and left out of the comparison below.")
            estimable = corr[corr["estimable"] & ~corr["part_whole"]]
            if len(estimable):
                worst = estimable.loc[estimable["difference"].abs().idxmax()]
                section.readings.append(
                    f"{inst_id}: the largest intercorrelation difference is r({worst['subscale_a']}, "
                    f"{worst['subscale_b']}) = {say_num(worst['r_cohort'])} in the cohort vs "
                    f"{say_num(worst['r_human'])} in humans.")
            if cong["estimable"].astype(bool).any():     # not a table of dashes: the reading below says why
                section.add_table(f"Factor congruence: {inst_id} (EFA, one factor per subscale, "
                                  "Procrustes-rotated to the item key; Tucker's φ)", cong)
            if cong["estimable"].all():
                section.readings.append(f"{inst_id}: factor congruence φ " + ", ".join(
                    f"{r.factor} {say_num(r.phi)}" for r in cong.itertuples()) + " (≥ .95 equal factors, .85–.94 fair).")
            else:
                section.readings.append(f"{inst_id}: factor congruence not estimable: {cong['note'].iloc[0]}.")
            section.figures.append((f"Total variation per item, cohort against humans: {inst_id}",
                                    plots.item_distance_chart(dist, inst_id)))
            section.figures.append((f"Subscale intercorrelations: {inst_id}", plots.correlation_heatmaps(corr, inst_id)))
        congruence = pd.concat(congruence_frames, ignore_index=True)
        if congruence["estimable"].astype(bool).any():   # an empty chart would only repeat the reading
            section.figures.append(("Factor congruence with human data", plots.congruence_chart(congruence)))
        return [section]
