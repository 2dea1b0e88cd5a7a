"""Publishing a study: psyq preregister (the plan, before the run; ``psyq report --preregistration``
checks a run against it)."""

from __future__ import annotations

import argparse
import sys

from psyq.cli.administering import (add_backend_override_args, add_people_power_args, backend_overrides,
                                    people_for_power, price_table, study_verdict_power)
from psyq.cli.common import EXIT_OK


def report_defaults() -> dict:
    """The bound and correction ``psyq report RUN`` applies when not told otherwise: its own
    parser's defaults, so that the plan records what the report will do.

    Example:
        >>> report_defaults()
        {'bound': 0.3, 'correction': 'holm'}
    """
    from psyq.cli.results import COMMANDS

    parser = argparse.ArgumentParser()
    COMMANDS["report"][2](parser)
    given = parser.parse_args(["RUN"])
    return {"bound": given.bound, "correction": given.correction}


def cmd_preregister(args: argparse.Namespace) -> int:
    from psyq.engine import __version__
    from psyq.engine.administer.plan import plan_run
    from psyq.engine.administer.record import run_id_for, run_manifest
    from psyq.engine.administer.run import run_folder
    from psyq.engine.administer.send_trial import NOT_REASKED
    from psyq.engine.backends import make_backend
    from psyq.engine.design.study import load_study, require_item_texts
    from psyq.engine.store.clock import utc_now
    from psyq.engine.results.usage import read_finished_trials

    study = load_study(args.study)
    require_item_texts(study)
    people = people_for_power(args, study)          # a bad --human is said before anything is planned
    prices = price_table(args, study)
    overridden = backend_overrides(args, study)
    # The backends, the run id and the manifest exactly as `psyq run` would make them (nothing is sent).
    backends = {c.id: make_backend(c, log=lambda m: print(m, file=sys.stderr)) for c in overridden.configs}
    run_id = run_id_for(study, backends)
    run = run_folder(study, args.runs_dir, run_id)
    planned = plan_run(study, backends)
    manifest = run_manifest(study, backends, run, run_id, planned.trials,
                            {"overrides": [o.to_json() for o in overridden.overrides],
                             "prices": prices.to_json() if prices else None})
    finished, _ = read_finished_trials(run.database)
    power = study_verdict_power(args, study, people) if people else None
    from psyq.analysis.preregistration.contents import preregistration_record
    from psyq.analysis.preregistration.document import write_preregistration

    plan = preregistration_record(study, manifest=manifest, run_id=run_id, created_at=utc_now(),
                                  psyq_version=__version__, report_defaults=report_defaults(), people=people,
                                  power=power, not_reasked=NOT_REASKED,
                                  trials_finished=sum(t.trial_id in finished for t in planned.trials))
    paths = write_preregistration(plan, args.out)
    for kind, path in paths.items():
        print(f"{kind} -> {path}")
    return EXIT_OK


def _arguments_preregister(p: argparse.ArgumentParser) -> None:
    p.add_argument("study", help="study YAML file")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="folder for preregistration.md, .docx and .json (and the tables as CSV)")
    add_people_power_args(p, "people's answers the run will be compared with (as for psyq report): the plan names "
                             "them with their SHA-256 and gives the verdict's power at the study's cohort size (as "
                             "psyq plan --human)")
    p.add_argument("--prices", metavar="FILE", help="price table YAML, recorded in the planned manifest (as psyq run "
                                                    "--prices)")
    p.add_argument("--runs-dir", default="runs", help="where the run will go, to say whether any of its trials are "
                                                       "already finished (default: runs/; read only)")
    add_backend_override_args(p)


# name -> (handler, help, arguments): read by cli/__init__.py
COMMANDS = {
    "preregister": (cmd_preregister, "write a pre-registration of a study (OSF / AsPredicted sections, Markdown and "
                                     "JSON): question, instruments, cohort, models and every setting, the analysis "
                                     "plan, the planned size and power, every file's SHA-256", _arguments_preregister),
}
