"""Time one `psyq run` exactly as the command line does it, without the interpreter's start-up.

Imports ``psyq.cli`` and the modules ``psyq run`` imports when it starts (the command line
imports a command's modules inside the command, so that light commands start at once) first, so
that Python start-up and imports are not counted; then times
``psyq.cli.main(["run", STUDY, "--runs-dir", DIR])``: loading the study, planning and rendering
every trial, starting the backend, sending, parsing, storing, the progress display and the
manifest. Prints one JSON line: seconds, trials planned, trial status counts, rate (trials/s),
and the run directory. ``--profile FILE`` writes a pyinstrument HTML profile of the run.
``--payload-extra JSON`` adds fields to every request body of OpenAI-compatible backends (the
local-model benchmark sends ``{"cache_prompt": false}`` to llama-server this way).
This is the only change this driver makes to psyq, and only in its own process. ``--engine-tree DIR`` runs
an older copy of ``engine`` instead (for before/after figures).

    python bench/psyq_driver.py STUDY RUNS_DIR [--profile profile.html] [--payload-extra '{...}']
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sqlite3
import sys
import time
from pathlib import Path


def use_engine_tree(tree: str) -> None:
    """Import ``engine`` from the source tree `tree` (say, a copy of an older commit made with
    ``git archive COMMIT engine | tar -x -C DIR``) instead of the editable install, whose import
    hook would otherwise win. Call before anything imports ``engine``."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in (getattr(f, "__module__", "") or "")]
    sys.path.insert(0, tree)


def preimport_run_command() -> None:
    """Import what ``psyq run`` imports inside its command (cli/administering.py: the runner,
    the progress display, the study, overrides and prices), every backend's module (imported
    on first use) and aiohttp (imported when a backend opens its session), so that the timing starts
    after the imports, as it did when the command line imported them at its top."""
    import importlib
    for name in ("psyq.engine.administer.progress", "psyq.engine.administer.run", "psyq.engine.store.runlock",
                 "psyq.engine.design.study", "psyq.engine.administer.overrides", "psyq.engine.design.prices",
                 "aiohttp"):
        importlib.import_module(name)
    from psyq.engine.backends.registry import BACKENDS
    BACKENDS.values()   # the classes (a registry of modules imports each here)


def add_payload_fields(extra: dict) -> None:
    """Make every OpenAI-compatible request body carry `extra` too (this process only)."""
    from psyq.engine.backends.openai import OpenAIBackend
    original = OpenAIBackend.payload

    def payload(self, request):  # type: ignore[no-untyped-def]
        return {**original(self, request), **extra}

    OpenAIBackend.payload = payload  # type: ignore[method-assign]


def run(study: str, runs_dir: str, profile: str | None = None, payload_extra: dict | None = None) -> dict:
    """Run the study through the CLI entry point; return timing and counts."""
    from psyq.cli import main as cli_main
    preimport_run_command()

    if payload_extra:
        add_payload_fields(payload_extra)

    profiler = None
    if profile:
        from pyinstrument import Profiler
        profiler = Profiler(interval=0.0005, async_mode="disabled")
        profiler.start()
    out = io.StringIO()
    began = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = cli_main(["run", study, "--runs-dir", runs_dir])
    seconds = time.perf_counter() - began
    if profiler is not None:
        profiler.stop()
        Path(profile).write_text(profiler.output_html())
        Path(profile).with_suffix(".txt").write_text(profiler.output_text(unicode=False, color=False))
    database = next(Path(runs_dir).rglob("run.sqlite"))
    with sqlite3.connect(database) as db:
        counts = dict(db.execute("SELECT status, COUNT(*) FROM trials GROUP BY status").fetchall())
    trials = sum(counts.values())
    return {"exit": code, "seconds": seconds, "trials": trials, "counts": counts, "rate": trials / seconds,
            "run_dir": str(database.parent)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="time one psyq run")
    parser.add_argument("study")
    parser.add_argument("runs_dir")
    parser.add_argument("--profile", help="write a pyinstrument profile (HTML, and .txt beside it)")
    parser.add_argument("--payload-extra", type=json.loads, help="JSON object added to every request body")
    parser.add_argument("--engine-tree", help="import psyq.engine from this source tree (an older commit's copy)")
    args = parser.parse_args(argv)
    if args.engine_tree:
        use_engine_tree(args.engine_tree)
    print(json.dumps(run(args.study, args.runs_dir, args.profile, args.payload_extra)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
