"""Start-up of the command line (issue 42): wall time and peak memory of the commands people type
many times a day, each in a fresh process, as the shell runs them.

Measured, each ``--reps`` times (default 7), interleaved (one of each command per round, so that
load from elsewhere on the shared machine falls on all of them):

- ``python -c pass``: the interpreter's own start-up, the floor;
- ``python -c "import psyq"``: the public namespace (names imported on first use);
- ``psyq --version``, ``psyq --help``, ``psyq list``;
- ``psyq status RUN`` and ``psyq plan STUDY``: a tiny run (tests/runs_helper.py: the toy
  instrument tests/data/mini_1to7.yaml, 8 personas, 2 repeats, administered to the project's stub
  server) made once in a temporary folder;
- ``psyq view RUNS``: time until the viewer prints its URL, then one GET of the runs page and of
  the run page; its peak resident set is read then (VmHWM), and the viewer is stopped;
- ``psyq scores RUN``: a command that needs the statistics stack, for scale.

A first round, not kept, warms up (byte code compiled, files in the page cache). The byte code is
written to a private folder (``PYTHONPYCACHEPREFIX`` in the run's temporary folder, the working tree
untouched), also when the environment says ``PYTHONDONTWRITEBYTECODE=1`` (as the project's shared
machine does): without it every process compiles psyq's sources again (about 0.1 s for ``psyq
list``), which an installed package never does; ``--compile-every-time`` keeps the environment as
it is, to compare with figures measured that way. Wall time is the parent's clock from spawn to
exit; CPU time (user + system) and peak memory (``ru_maxrss``) are the command's own, as GNU
``/usr/bin/time`` reports them (a process forked from this benchmark, which has imported psyq,
would otherwise be charged the benchmark's memory as its peak). CPU time moves less than wall time
when others load the shared machine. ``--before-tree DIR`` runs the same
commands a second time against an older copy of the package (``DIR/psyq``: say, the tree copied
before a change) in the same rounds, for before/after figures from one invocation; that copy is
imported instead of the editable install (``python -c`` with the install's import hook removed,
otherwise the same code as the ``psyq`` script).

Prints a table of medians and writes bench/results/startup.json (every repetition, medians).

    python bench/startup.py [--reps 7] [--before-tree /tmp/psyq_before] [--compile-every-time]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from common import PYTHON, median, save_results, stop_process, table  # noqa: E402

PSYQ = str(Path(PYTHON).with_name("psyq"))
TIME = "/usr/bin/time" if Path("/usr/bin/time").exists() else None   # GNU time: the child's own peak RSS
# The psyq script's own code; with a tree, that tree's package is imported instead of the install.
SCRIPT = "import sys; from psyq.cli import main; sys.exit(main())"
TREE_PRELUDE = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
                "(getattr(f, '__module__', '') or '')]; sys.path.insert(0, {tree!r}); ")


def command(tree: str | None, args: list[str], *, code: str | None = None) -> list[str]:
    """The argv running `psyq ARGS` (or the Python `code`) with the installed package or `tree`'s."""
    if tree is None:
        return [PYTHON, "-c", code] if code else [PSYQ, *args]
    return [PYTHON, "-c", TREE_PRELUDE.format(tree=tree) + (code or SCRIPT), *([] if code else args)]


def child_environment(folder: Path, compile_every_time: bool) -> dict[str, str]:
    """The commands' environment: byte code kept in `folder`/pycache (see the module docstring), or
    the environment as it is with `compile_every_time`."""
    env = dict(os.environ)
    if not compile_every_time:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    return env


def measure(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `argv` to its end; its wall time (s), CPU time (s), peak RSS (MB) and exit code.

    The command runs under /usr/bin/time, which reports its child's own peak: a process forked from
    this one (which has imported psyq to make the run) and then exec'd is charged this process's
    resident set as its peak (Linux keeps the larger of the old and new mm's high-water marks).
    Without /usr/bin/time, ``os.wait4`` (that floor included: see ``"peak_from"``)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        timed = [TIME, "-f", "%M %U %S", "-o", report.name, *argv] if TIME else argv
        began = time.perf_counter()
        process = subprocess.Popen(timed, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - began
        process.returncode = os.waitstatus_to_exitcode(status)
        err = process.stderr.read().decode(errors="replace") if process.stderr else ""
        if process.stderr:
            process.stderr.close()
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[-3:])} exited {process.returncode}: {err[-1500:]}")
        if TIME:
            kib, user, system = report.read().split()[-3:]
            return {"seconds": seconds, "cpu_seconds": float(user) + float(system), "maxrss_mb": int(kib) / 1024,
                    "peak_from": "time"}
    return {"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime, "maxrss_mb": usage.ru_maxrss / 1024,
            "peak_from": "wait4"}


def measure_view(argv: list[str], cwd: Path, run_rel: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Start the viewer; time to its URL line; GET the runs page and the run page; its VmHWM then."""
    began = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        ready = time.perf_counter() - began
        found = re.search(r"(http://\S+)", line)
        if not found:
            raise RuntimeError(f"psyq view did not start: {line!r}")
        url = found.group(1).rstrip("/")
        for page in ("/", f"/run/{run_rel}/"):
            with urllib.request.urlopen(url + page, timeout=60) as response:
                response.read()
        served = time.perf_counter() - began
        status = Path(f"/proc/{process.pid}/status").read_text()
        hwm = int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime + stime
    finally:
        stop_process(process)
    return {"seconds": ready, "pages_seconds": served, "cpu_seconds": cpu, "maxrss_mb": hwm}


def make_run(folder: Path) -> Path:
    """A tiny run of the toy instrument (tests/runs_helper.py); returns its run directory."""
    from runs_helper import make_mini_run
    return make_mini_run(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--before-tree", help="a folder holding an older copy of the package as psyq/")
    parser.add_argument("--compile-every-time", action="store_true",
                        help="keep the environment's PYTHONDONTWRITEBYTECODE: every process compiles psyq's sources")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run_dir = make_run(folder)
        runs = folder / "runs"
        run_rel = run_dir.relative_to(runs).as_posix()
        env = child_environment(folder, args.compile_every_time)
        cases: dict[str, dict[str, Any]] = {
            "python -c pass": {"code": "pass", "args": []},
            "import psyq": {"code": "import psyq", "args": []},
            "psyq --version": {"args": ["--version"]},
            "psyq --help": {"args": ["--help"]},
            "psyq list": {"args": ["list"]},
            "psyq status RUN": {"args": ["status", str(run_dir)]},
            "psyq plan STUDY": {"args": ["plan", str(folder / "study.yaml"), "--runs-dir", str(runs)]},
            "psyq view RUNS": {"args": ["view", str(runs)], "view": True},
            "psyq scores RUN": {"args": ["scores", str(run_dir), "--out", str(folder / "scores.csv")]},
        }
        trees = {"after": None, **({"before": args.before_tree} if args.before_tree else {})}
        samples: dict[str, dict[str, list[dict[str, Any]]]] = {t: {c: [] for c in cases} for t in trees}
        for rep in range(-1, args.reps):     # round -1 warms up (byte-code compiled, files cached): not kept
            for name, case in cases.items():
                for label, tree in trees.items():
                    argv = command(tree, case["args"], code=case.get("code"))
                    result = (measure_view(argv, folder, run_rel, env) if case.get("view")
                              else measure(argv, folder, env))
                    if rep >= 0:
                        samples[label][name].append(result)
            print(f"round {rep + 1}/{args.reps} done", file=sys.stderr)

    medians = {label: {name: {key: median([s[key] for s in runs_of]) for key in runs_of[0] if key != "peak_from"}
                       for name, runs_of in by_case.items()} for label, by_case in samples.items()}
    rows = []
    for name in cases:
        row: list[Any] = [name]
        for label in ("before", "after"):
            if label in medians:
                m = medians[label][name]
                row += [f"{m['seconds']:.2f}", f"{m['cpu_seconds']:.2f}", f"{m['maxrss_mb']:.0f}"]
        rows.append(row)
    header = ["command"]
    for label in ("before", "after"):
        if label in medians:
            header += [f"{label} s", f"{label} CPU s", f"{label} peak MB"]
    print(f"medians of {args.reps} runs each (wall time from spawn to exit, the child's CPU time; psyq view: "
          "wall time to its URL line, CPU time and peak memory after two pages); load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; byte code "
          f"{'compiled in every process' if args.compile_every_time else 'cached'}")
    print(table(rows, header))
    path = save_results("startup", {"reps": args.reps, "before_tree": args.before_tree,
                                    "compile_every_time": args.compile_every_time, "medians": medians,
                                    "samples": samples})
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
