"""The first two sections of every report: the study (what was run, on whom) and the missing
answers and refusals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from psyq.analysis.report.apa import say_pct
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.section import ReportSection, Section
from psyq.analysis.statistics.standin import fidelity


def protocol_text(manifest: Mapping[str, Any]) -> str:
    """The protocol as recorded; a staged run's stages replace `presentation` (each measure stage
    asks its instrument whole, whatever `presentation` says).

    Example:
        >>> protocol_text({"protocol": {"presentation": "per_item", "repeats": 2}})
        'presentation=per_item, repeats=2'
    """
    protocol = dict(manifest["protocol"])
    if manifest.get("stages"):
        protocol.pop("presentation", None)
        steps = [f"measure {s['measure']}" if "measure" in s else "evoke (situation)" for s in manifest["stages"]]
        protocol = {"stages": " → ".join(steps), **protocol}
    return ", ".join(f"{k}={v}" for k, v in protocol.items())


class StudySection(ReportSection):
    """"Study": respondents, instruments, backends, the share of answers read, the run's facts and
    the cohort's attributes."""

    name = "study"

    def applies(self, report: ReportContext) -> bool:
        return True

    def sections(self, report: ReportContext) -> list[Section]:
        table, manifest, instruments = report.table, report.manifest, report.instruments
        study = Section("Study")
        answered = (table["status"] == "answered").mean()
        groups = report.condition_groups
        asked = (f"on {table['backend_id'].nunique()} backend(s)" if not groups else   # a group: a backend × condition
                 f"on {len({g.backend for g in groups.values()})} backend(s) under "
                 f"{len({g.condition for g in groups.values()})} condition(s), {len(groups)} groups of answers")
        study.readings.append(
            f"{table['respondent_id'].nunique()} respondents answered {len(instruments)} instrument(s) "
            f"({', '.join(sorted(instruments))}) {asked}; {say_pct(answered)} of {len(table)} item answers were read.")
        facts = pd.DataFrame({"": [
            manifest["study"], manifest["run_id"], manifest.get("psyq_version"), manifest.get("git_commit") or "-",
            ", ".join(f"{b}: {v['identity'].get('model')}" for b, v in manifest["backends"].items()),
            f"{manifest['cohort']['id']} ({manifest['cohort']['respondents']} respondents)",
            protocol_text(manifest),
            manifest.get("started_at"), manifest.get("finished_at") or "not finished",
        ]}, index=["study", "run", "psyq", "git commit", "backends", "cohort", "protocol", "started", "finished"])
        study.add_table("Run", facts)
        if report.attributes:
            people = table.drop_duplicates("respondent_id")[report.attributes]
            summary = []
            for col in report.attributes:
                values = people[col].dropna()
                if pd.api.types.is_numeric_dtype(values):
                    summary.append((col, f"mean {values.mean():.1f}, range {values.min()}–{values.max()}"))
                else:
                    counts = values.astype(str).value_counts()
                    summary.append((col, ", ".join(f"{k} {v}" for k, v in counts.items())))
            study.add_table("Cohort", pd.DataFrame(summary, columns=["attribute", "distribution"]))
        return [study]


class MissingSection(ReportSection):
    """"Missing answers and refusals": answers by status; missing answers are never imputed."""

    name = "missing"

    def applies(self, report: ReportContext) -> bool:
        return True

    def sections(self, report: ReportContext) -> list[Section]:
        table = report.table
        miss = Section("Missing answers and refusals")
        miss.add_table("Answers by status", fidelity.missingness(table), view="answers_by_status")
        refused = (table["status"] == "refusal").mean()
        unread = (table["status"] != "answered").mean()
        miss.readings.append(f"{say_pct(unread)} of answers are missing ({say_pct(refused)} refusals); missing "
                             "answers are never imputed — subscales follow each instrument's min_answered rule.")
        return [miss]
