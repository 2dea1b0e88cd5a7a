"""Shared helpers of the benchmarks: machine facts, stub processes, study files, result files.

Every benchmark is a script run from the repository root with the project's venv active
(``python bench/NAME.py``); each writes its figures to ``bench/results/NAME.json`` and prints a
short table. Nothing here is imported by psyq itself.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

import yaml

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
IRI = ROOT / "instruments" / "iri.yaml"
PYTHON = sys.executable


def machine() -> dict[str, Any]:
    """CPU model, core count, memory, Python and key package versions, load, date (UTC)."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cpu": model,
            "cores": os.cpu_count(), "memory_gib": mem_gib, "python": platform.python_version(),
            "packages": package_versions(), "loadavg_at_start": os.getloadavg()}


def package_versions() -> dict[str, str]:
    """Installed versions of the HTTP, data and test packages the benchmarks touch."""
    from importlib import metadata
    out = {}
    for name in ("httpx", "httpx-aiohttp", "aiohttp", "numpy", "pandas", "scipy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def median(values: Sequence[float]) -> float:
    """The median (NaN for no values)."""
    return statistics.median(values) if values else float("nan")


def save_results(name: str, data: dict[str, Any]) -> Path:
    """Write `data` (with the machine facts) to bench/results/<name>.json; return the path."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **data}, indent=2, default=str))
    return path


@contextmanager
def server_process(command: list[str], *, env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """Start a stub server script that prints ``READY <url>``; yield (url, process); stop it."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               cwd=ROOT, env=env)
    try:
        line = process.stdout.readline() if process.stdout else ""
        if not line.startswith("READY "):
            raise RuntimeError(f"{command[1]} did not start: {line!r}")
        yield line.split()[1], process
    finally:
        stop_process(process)


def stop_process(process: subprocess.Popen) -> None:
    """SIGTERM `process`, SIGKILL it if it has not ended within 10 s; wait for it."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def fast_stub(content: str = "D") -> Any:
    """The fast fixed-answer stub (bench/fast_stub.py) in its own process."""
    return server_process([PYTHON, str(BENCH / "fast_stub.py"), "--port", "0", "--content", content])


def random_stub(choices: str = "A,B,C,D,E", seed: int = 1) -> Any:
    """The fast stub answering one of `choices` at random per request (noise-like answers)."""
    return server_process([PYTHON, str(BENCH / "fast_stub.py"), "--port", "0", "--choices", choices,
                           "--seed", str(seed)])


def fault_stub(*args: str) -> Any:
    """The project's fault-injecting stub (tests/stub_server.py) in its own process."""
    return server_process([PYTHON, str(ROOT / "tests" / "stub_server.py"), "--port", "0", *args])


def write_cohort(path: Path, n: int, *, include_baseline: bool = False) -> Path:
    """A cohort of `n` hand-listed personas, every one with distinct attributes (so every
    request's messages differ and a stub's record can tell trials apart)."""
    genders = ("female", "male")
    personas = [{"id": f"r{i:06d}", "attributes": {"gender": genders[i % 2], "age": 18 + i % 63,
                                                   "serial": i}} for i in range(n)]
    path.write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "bench", "include_baseline": include_baseline,
                                    "personas": personas}, sort_keys=False))
    return path


def write_study(folder: Path, *, n_personas: int, backend: dict[str, Any], protocol: dict[str, Any] | None = None,
                instruments: Sequence[Path] = (IRI,), study_id: str = "bench") -> Path:
    """A study file (and its cohort) in `folder`; returns the study path."""
    folder.mkdir(parents=True, exist_ok=True)
    write_cohort(folder / "cohort.yaml", n_personas)
    study = {"psyq": "study/1", "id": study_id, "instruments": [str(p) for p in instruments],
             "cohort": "cohort.yaml", "backends": [backend], "protocol": {"seed": 1, **(protocol or {})}}
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def run_json(command: list[str], *, timeout: float = 900, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a helper script that prints one JSON object as its last line; return it."""
    out = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])} failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(rows: list[list[Any]], header: list[str]) -> str:
    """A Markdown table of `rows` under `header`."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)



def pattern_stub(pattern: str = "small-model", seed: int = 1, style: float = 0.15) -> Any:
    """bench/pattern_stub.py in its own process: answers per persona and item in `pattern`
    ("random" or "small-model"), the same whichever way an item is asked."""
    return server_process([PYTHON, str(BENCH / "pattern_stub.py"), "--port", "0", "--pattern", pattern,
                           "--seed", str(seed), "--style", str(style)])


TIME = "/usr/bin/time" if Path("/usr/bin/time").exists() else None   # GNU time: the child's own peak RSS


def child_usage(command: list[str], *, cwd: Path = ROOT) -> tuple[dict[str, Any], str, str]:
    """Run `command` as a child process; return its own figures (exit code, wall and CPU seconds,
    peak RSS in MiB), its stdout and its stderr. Under GNU time when there is one: a child forked
    from this process and exec'd is charged this process's resident set as its peak (Linux keeps
    the larger high-water mark at exec), so ``RUSAGE_CHILDREN`` or ``wait4`` here would give at
    least this process's size; GNU time's own child is forked from a small process. Without it,
    ``os.wait4`` (with that floor: ``peak_from`` says which)."""
    import tempfile
    import time

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        timed = [TIME, "-f", "%M %U %S", "-o", report.name, *command] if TIME else command
        start = time.perf_counter()
        process = subprocess.Popen(timed, stdout=out, stderr=err, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        texts = out.read(), err.read()
        fields = report.read().split() if TIME else []
    code = os.waitstatus_to_exitcode(status)
    if len(fields) >= 3 and fields[-3].isdigit():
        peak_kib, cpu, source = int(fields[-3]), float(fields[-2]) + float(fields[-1]), "GNU time"
    else:
        peak_kib, cpu, source = usage.ru_maxrss, usage.ru_utime + usage.ru_stime, "wait4"
    return {"exit": code, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mib": round(peak_kib / 1024),
            "peak_from": source}, *texts
