"""The report's very first section with ``psyq report RUN --preregistration DIR``: "Deviations from
the pre-registration", every row of :func:`psyq.analysis.preregistration.deviations.deviations` said
in a plain sentence (the frame is computed once, in :mod:`psyq.analysis.report.build`, and carried
by the report's context). Without ``--preregistration`` there is no such section.

A row's ``field`` names what differs: ``backends[ID].setting`` for a backend's setting,
``files[NAME]`` for a file, ``personas[GROUP]``, ``people[INSTRUMENT]``, ``estimator[INSTRUMENT]``
and dotted paths for the rest (``protocol.repeats``, ``cutoffs.sd_ratio``).

Example:
    >>> row = {"kind": "backend", "field": "backends[local].temperature", "planned": 1.0, "run": 0.7}
    >>> deviation_sentence(row)
    'The temperature of backend local was 1.0 in the pre-registration and 0.7 in the run.'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.section import ReportSection, Section

TITLE = "Deviations from the pre-registration"
_INDEXED = re.compile(r"^(?P<what>[a-z_]+)\[(?P<id>[^\]]+)\](?:\.(?P<rest>.+))?$")


def _said(value: Any) -> str:
    """A planned or run value in a sentence."""
    if value is None:
        return "not set"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _sha(value: Any) -> str:
    return f"{value[:12]}…" if isinstance(value, str) else "none"


def _both(planned: Any, run: Any, where: str = "the run") -> str:
    return f"was {_said(planned)} in the pre-registration and {_said(run)} in {where}"


def deviation_sentence(row: Mapping[str, Any]) -> str:
    """One deviation in words (the kinds of :mod:`psyq.analysis.preregistration.deviations`).

    Example: see the module's.
    """
    kind, field, planned, run = row["kind"], str(row["field"]), row["planned"], row["run"]
    parts = _INDEXED.match(field)
    name, rest = (parts["id"], parts["rest"]) if parts else (field, None)
    if kind == "file":
        if planned is None:
            return f"The run read a file the pre-registration does not name: {name} (SHA-256 {_sha(run)})."
        if run is None:
            return f"The run did not read {name}, which the pre-registration names."
        return (f"The file {name} changed since the pre-registration: its SHA-256 was {_sha(planned)} in the "
                f"pre-registration and {_sha(run)} in the run.")
    if kind == "backend" and rest is None:
        return (f"The run asked backend {name} ({_said(run)}), which the pre-registration does not plan."
                if planned is None else f"Backend {name} ({_said(planned)}) was planned but not asked in the run.")
    if kind == "backend":
        return f"The {rest} of backend {name} {_both(planned, run)}."
    if kind == "served model":
        return (f"Backend {name} was served another model than it asked for: its replies named {_said(run)}, and "
                f"the pre-registration planned {_said(planned)}.")
    if kind == "personas":
        return f"Fewer personas answered than planned on {name}: {run} of {planned}."
    if kind == "conditions":
        if planned is None:
            return f"The run added condition {name} (changing {_said(run)}), which the pre-registration does not plan."
        if run is None:
            return f"Condition {name} was planned (changing {_said(planned)}) but not asked in the run."
        return f"Condition {name} changes {_said(run)} in the run; the pre-registration planned {_said(planned)}."
    if kind == "protocol":
        return f"The protocol's {field.removeprefix('protocol.')} {_both(planned, run)}."
    if kind == "study":
        return f"The study file's {field.removeprefix('study.')} {_both(planned, run)}."
    if kind == "people":
        if planned is None:
            return (f"The report compares {name} with people's answers (SHA-256 {_sha(run)}) the pre-registration "
                    "does not name.")
        if run is None:
            return f"The pre-registration names people's answers for {name}; this report was made without them."
        return (f"The people's answers for {name} are another file than planned: its SHA-256 was {_sha(planned)} in "
                f"the pre-registration and {_sha(run)} in this report.")
    if kind == "analysis":
        if field.startswith("cutoffs."):
            return (f"The verdict's cut-off {field.removeprefix('cutoffs.').replace('_', ' ')} was {_said(planned)} "
                    f"in the pre-registration and is {_said(run)} in the psyq that made this report.")
        named = {"bound": "equivalence bound (psyq report --bound)", "correction": "multiplicity correction "
                 "(psyq report --correction)", "estimator": f"invariance estimator for {name} (psyq report --estimator)",
                 "norm_samples": f"norm samples compared for {name} (psyq report --norms)"}
        return f"The {named.get(parts['what'] if parts else field, field)} {_both(planned, run, 'this report')}."
    if kind == "software":
        return f"psyq {_said(planned)} wrote the pre-registration; psyq {_said(run)} made the run."
    return f"The run's {field} {_both(planned, run)}."


class DeviationsSection(ReportSection):
    """"Deviations from the pre-registration": built first and shown first, before the verdict, when
    the report was given a pre-registration."""

    name = "deviations"

    def applies(self, report: ReportContext) -> bool:
        """Every run reported with ``--preregistration`` (staged ones too)."""
        return report.deviations is not None

    def sections(self, report: ReportContext) -> list[Section]:
        rows = report.deviations
        plan = report.preregistration
        where = (f"the pre-registration {plan.path} (written {plan.plan.date} by psyq {plan.plan.psyq_version})"
                 if plan is not None else "the pre-registration")
        if rows is None or rows.empty:
            readings = [f"The run followed {where}: no difference was found in its files, the models served, the "
                        "personas who answered, the backends' and the protocol's settings, the conditions, or the "
                        "report's analysis."]
        else:
            readings = [f"{len(rows)} difference(s) between the run (with this report) and {where}:",
                        *(deviation_sentence(row) for row in rows.to_dict("records"))]
        return [Section(TITLE, readings=readings, lead=True)]
