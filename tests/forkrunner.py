"""Run many short psyq commands quickly, each in its own forked process, with its peak memory.

The malformed-input corpus runs well over a hundred commands; starting a new Python for each
spends most of the suite's time importing pandas and pydantic again. This helper imports psyq
once and then forks a child per command, so every command still runs in a process of its own
(its exit code, output and peak resident memory are its own), started from the same state a
fresh ``python -m psyq.cli`` reaches after its imports.

Protocol (one JSON object per line): the test writes ``{"args": [...], "cwd": ..., "out": path,
"err": path}`` where ``args`` are what would follow ``python`` (``-m module ...`` or ``-c code
...``); this process answers ``{"returncode": int, "rss_kb": int, "seconds": float}`` once the
child has ended (or has been killed after ``HANG_GUARD_S`` seconds, returncode -9).

Usage: ``python tests/forkrunner.py MODULE ...`` (the modules to import before forking).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
import traceback

import importlib

HANG_GUARD_S = 600.0


def _child(args: list[str], cwd: str, out: str, err: str) -> None:
    """In the forked child: redirect output, run the command as ``python ARGS`` would, exit."""
    os.chdir(cwd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    code = 0
    try:
        if args[0] == "-m":
            sys.argv = [args[1], *args[2:]]
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        elif args[0] == "-c":
            sys.argv = ["-c", *args[2:]]
            exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
        else:
            raise ValueError(f"forkrunner takes -m or -c, not {args[0]!r}")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int) and exc.code is not None:
            print(exc.code, file=sys.stderr)
    except BaseException:   # as the interpreter would: the traceback on stderr, exit 1
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _wait(pid: int) -> tuple[int, int]:
    deadline = time.monotonic() + HANG_GUARD_S
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), usage.ru_maxrss
        if time.monotonic() > deadline:
            os.kill(pid, 9)
        time.sleep(0.005)


def main() -> None:
    # Imported once here, not in every child: the modules named on the command line (what the
    # commands to be run load before they read their input, and no more, so that each child's
    # peak memory is what the same command takes in a fresh process).
    for module in sys.argv[1:]:
        importlib.import_module(module)
    for line in sys.stdin:
        request = json.loads(line)
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            _child(request["args"], request["cwd"], request["out"], request["err"])
        returncode, rss_kb = _wait(pid)
        print(json.dumps({"returncode": returncode, "rss_kb": rss_kb,
                          "seconds": time.perf_counter() - start}), flush=True)


if __name__ == "__main__":
    main()
