"""`psyq view` at scale (issue 36): page times and memory on a 10⁵-trial run, and what the
viewer costs a run being written while it polls that run.

**1. A run of 100,000 trials.** Built in two steps, about half a minute:

- a real study run once by ``psyq run`` (its own process) against four fast stubs
  (bench/fast_stub.py, one process each), one per backend, each with its own fixed reply:
  ``gpt`` "D", ``claude`` a refusal ("As an AI, I don't have feelings ..."), ``llama`` "I would
  say 4", ``mistral`` "9"; the IRI (28 items, A-E) and tests/data/mini_1to7.yaml (4 items, 1-7)
  one item per request, text answers, one re-ask, 25 personas with five attributes (gender, age,
  country, education, serial). The parser decides every status, so the store holds what psyq
  writes: answered, missing by refusal / unparseable / out_of_range, re-asks in the reply texts,
  requests and raw responses as sent and received (3,200 trials);
- those rows multiplied with SQL in the same schema (engine/store/run_store.py) until the store
  holds ``--trials`` (default 100,000): copy k of a trial gets a new trial id (a hash of the old
  id and k), a new respondent (serial + 25·k, so new attributes: age, country, education vary
  with the serial) and its answers; in every 7th copy the refusal reads "emotions" instead of
  "feelings", so a search term does not match every refusal. The manifest's planned and counted
  trials are set to the store's. The store is then as a finished run leaves it (no WAL).

Then ``psyq view RUNS`` (the real command, its own process) serves it, and the benchmark GETs
(stdlib ``urllib``, one connection per request, time to the last byte) the runs page, the run
page, the trials pages (first, a middle page, filtered by status and reason, filtered and
searched, searched for a term no reply holds: a full scan), a trial page and a respondent page,
each ``--reps`` times; reports median and max per page. Targets: the trials page with a filter
< 300 ms; the viewer's peak resident set (VmHWM in /proc/PID/status) after all of them < 300 MB.

**2. A run writing at full speed, alone and watched.** ``psyq run`` (bench/psyq_driver.py: timed
after its imports) of the IRI to ``--write-personas`` personas (one item per request, text
answers, concurrency 64) against one fast stub, into a fresh runs folder each time. *Alone*: no
viewer. *Watched*: ``psyq view`` on that folder (started and ready before the run); once the run's
store appears, the benchmark opens the run page and then GETs ``/run/<study>/<id>/progress.json``
every second (as the page's script does) until the run ends. Runs go in ``--order`` (default A B
B A, A alone, B watched) so a change of load on the shared machine falls on both; every figure is
from this one invocation. Reports each duration, the viewer's CPU time while the run went (a figure
the load from elsewhere does not move much), the ratio of the mean watched to the mean alone
duration (target: < 1.05), and whether every planned trial was stored (answered + missing =
planned, none failed) in every run.

Prints the figures and writes bench/results/view_scale.json.

    python bench/view_scale.py [--trials 100000] [--reps 7] [--write-personas 4000] [--order ABBA]
                               [--part store|write|both]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (BENCH, IRI, PYTHON, ROOT, fast_stub, median, run_json, save_results, stop_process,  # noqa: E402
                    table)

MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"
REPLIES = {"gpt": "D", "claude": "As an AI, I don't have feelings or personal experiences, so I can't rate this.",
           "llama": "I would say 4", "mistral": "9"}
MODELS = {"gpt": "gpt-4o-mini", "claude": "claude-3-haiku", "llama": "llama-3-8b", "mistral": "mistral-7b"}
COUNTRIES = ("DE", "FR", "US", "JP", "BR", "IN", "NG")
EDUCATION = ("primary", "secondary", "bachelor", "master", "doctorate")
SEED_PERSONAS = 25
TARGET_MS, TARGET_MB, TARGET_RATIO = 300, 300, 1.05


# --- the viewer process ----------------------------------------------------------------------------
@contextmanager
def viewer(runs: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """`psyq view RUNS` in its own process; yield (its URL, the process); stop it."""
    process = subprocess.Popen([PYTHON, "-m", "psyq.cli", "view", str(runs)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = process.stdout.readline() if process.stdout else ""
        found = re.search(r"http://\S+/", line)
        if not found:
            raise RuntimeError(f"psyq view did not start: {line!r} {process.stderr.read() if process.stderr else ''}")
        yield found.group(0), process
    finally:
        stop_process(process)


def get(url: str) -> tuple[float, int, int]:
    """GET `url`; (milliseconds to the last byte, status, body bytes)."""
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        body = response.read()
        status = response.status
    return (time.perf_counter() - began) * 1000, status, len(body)


def cpu_s(pid: int) -> float:
    """A process's CPU time so far (user + system, /proc/PID/stat), seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    """A process's peak resident set so far (VmHWM), MB (10⁶ bytes)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e6
    return float("nan")


# --- 1. the 10⁵-trial store ------------------------------------------------------------------------
def write_persons(path: Path, n: int) -> None:
    personas = [{"id": f"r{i:06d}", "attributes": attributes(i)} for i in range(n)]
    path.write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "bench", "include_baseline": False,
                                    "personas": personas}, sort_keys=False))


def attributes(serial: int) -> dict[str, Any]:
    return {"gender": ("female", "male", "nonbinary")[serial % 3], "age": 18 + serial % 63,
            "country": COUNTRIES[serial % len(COUNTRIES)], "education": EDUCATION[serial % len(EDUCATION)],
            "serial": serial}


def _block(serial: int) -> str:
    """The attribute lines of a persona's system prompt (engine/design/persona_prompt.py's default template)."""
    return "\n".join(f"- {k}: {v}" for k, v in attributes(serial).items())


def retarget(text: str | None, old: int, new: int) -> str | None:
    """`text` (a system prompt, or a request's JSON) with persona `old`'s attribute lines made `new`'s."""
    if text is None or old == new:
        return text
    before, after = _block(old), _block(new)
    if before in text:
        return text.replace(before, after)
    return text.replace(json.dumps(before)[1:-1], json.dumps(after)[1:-1])


def seed_run(folder: Path, runs: Path) -> Path:
    """The real study (module docstring) run once by `psyq run`; returns its run directory."""
    with ExitStack() as stack:
        backends = [{"id": b, "kind": "openai", "base_url": stack.enter_context(fast_stub(reply))[0],
                     "model": MODELS[b], "concurrency": 16, "timeout_s": 60} for b, reply in REPLIES.items()]
        folder.mkdir(parents=True, exist_ok=True)
        write_persons(folder / "cohort.yaml", SEED_PERSONAS)
        study = {"psyq": "study/1", "id": "view_scale", "instruments": [str(IRI), str(MINI)],
                 "cohort": "cohort.yaml", "backends": backends,
                 "protocol": {"seed": 1, "answer": "text", "presentation": "per_item", "reask_limit": 1}}
        (folder / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
        out = subprocess.run([PYTHON, "-m", "psyq.cli", "run", str(folder / "study.yaml"), "--runs-dir",
                              str(runs)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"seed run failed ({out.returncode}): {out.stderr[-2000:]}")
    return next(runs.rglob("run.sqlite")).parent


def multiply(run_dir: Path, trials: int) -> dict[str, Any]:
    """Copy the seed run's rows until the store holds `trials` trials (module docstring)."""
    db = sqlite3.connect(run_dir / "run.sqlite")
    db.create_function("new_id", 2, lambda tid, k: hashlib.sha256(f"{tid}/{k}".encode()).hexdigest()[:32],
                       deterministic=True)
    db.create_function("new_attributes", 1, lambda serial: json.dumps(attributes(serial)), deterministic=True)
    db.create_function("retarget", 3, retarget, deterministic=True)
    seed = db.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    copies = -(-trials // seed) - 1
    columns = [r[1] for r in db.execute("PRAGMA table_info(trials)")]
    respondent = "printf('r%06d', CAST(substr(respondent_id, 2) AS INTEGER) + {n} * c.k)".format(n=SEED_PERSONAS)
    old_serial = "CAST(substr(respondent_id, 2) AS INTEGER)"
    new_serial = f"{old_serial} + {SEED_PERSONAS} * c.k"
    exprs = {"trial_id": "new_id(trial_id, c.k)", "respondent_id": respondent,
             "request": f"retarget(request, {old_serial}, {new_serial})",
             "raw_text": "CASE WHEN c.k % 7 = 0 THEN replace(raw_text, 'feelings', 'emotions') ELSE raw_text END"}
    select = ", ".join(exprs.get(col, col) for col in columns)
    copies_cte = "WITH RECURSIVE c(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM c WHERE k < ?) "
    began = time.perf_counter()
    with db:
        db.execute("CREATE TEMP TABLE seed AS SELECT rowid AS r, * FROM trials")
        db.execute(f"INSERT INTO trials ({', '.join(columns)}) {copies_cte}SELECT {select} FROM c, seed "
                   "ORDER BY c.k, seed.r LIMIT ?", (copies, trials - seed))
        answer_columns = [r[1] for r in db.execute("PRAGMA table_info(answers)")]
        db.execute(f"INSERT INTO answers ({', '.join(answer_columns)}) {copies_cte}SELECT "
                   + ", ".join("new_id(a.trial_id, c.k)" if col == "trial_id" else f"a.{col}" for col in answer_columns)
                   + " FROM c, answers a WHERE a.trial_id IN (SELECT trial_id FROM seed) "
                   "AND new_id(a.trial_id, c.k) IN (SELECT trial_id FROM trials)", (copies,))
        respondent_columns = [r[1] for r in db.execute("PRAGMA table_info(respondents)")]
        n_respondents = SEED_PERSONAS * (copies + 1)
        serial = "CAST(substr(respondent_id, 2) AS INTEGER)"
        db.execute(f"INSERT INTO respondents ({', '.join(respondent_columns)}) {copies_cte}SELECT "
                   + ", ".join({"respondent_id": f"printf('r%06d', {serial} + {SEED_PERSONAS} * c.k)",
                                "attributes": f"new_attributes({serial} + {SEED_PERSONAS} * c.k)",
                                "system_prompt": f"retarget(system_prompt, {serial}, {serial} + {SEED_PERSONAS} * c.k)",
                                }.get(col, col) for col in respondent_columns)
                   + " FROM c, respondents WHERE respondent_id IN (SELECT DISTINCT respondent_id FROM seed)",
                   (copies,))
        db.execute("DROP TABLE seed")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    counts = dict(db.execute("SELECT status, COUNT(*) FROM trials GROUP BY status").fetchall())
    reasons = dict(db.execute("SELECT status, COUNT(*) FROM answers GROUP BY status").fetchall())
    by = {}
    for backend, instrument, n in db.execute("SELECT backend_id, instrument_id, COUNT(*) FROM trials GROUP BY 1, 2"):
        by.setdefault(backend, {})[instrument] = n
    n_resp = db.execute("SELECT COUNT(*) FROM respondents").fetchone()[0]
    db.close()
    manifest_path = run_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest.update(trials_planned=sum(counts.values()), trials_planned_by=by, trial_counts=counts,
                    answer_counts=reasons)
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return {"seed_trials": seed, "trials": sum(counts.values()), "trial_counts": counts, "answer_counts": reasons,
            "respondents": n_resp, "respondents_expected": n_respondents, "multiply_s": time.perf_counter() - began,
            "store_mb": (run_dir / "run.sqlite").stat().st_size / 1e6}


def store_part(trials: int, reps: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="view_scale_") as tmp_name:
        tmp = Path(tmp_name)
        began = time.perf_counter()
        run_dir = seed_run(tmp / "study", tmp / "runs")
        seed_s = time.perf_counter() - began
        built = multiply(run_dir, trials)
        built["seed_run_s"] = seed_s
        print(f"store: {built['trials']:,} trials ({built['trial_counts']}), answers {built['answer_counts']}, "
              f"{built['respondents']:,} respondents, {built['store_mb']:.0f} MB; seed run {seed_s:.1f} s, "
              f"multiplied in {built['multiply_s']:.1f} s", flush=True)
        rel = run_dir.relative_to(tmp / "runs").as_posix()
        db = sqlite3.connect(run_dir / "run.sqlite")
        # a trial half-way down the store with a re-ask, and a respondent half-way down the list
        trial_id = db.execute("SELECT trial_id FROM trials WHERE rowid >= ? AND reasks > 0 LIMIT 1",
                              (trials // 2,)).fetchone()[0]
        respondent = db.execute("SELECT respondent_id FROM respondents ORDER BY respondent_id LIMIT 1 OFFSET ?",
                                (built["respondents"] // 2,)).fetchone()[0]
        db.close()
        trials_url = f"run/{rel}/trials"
        pages = {
            "runs": "",
            "run": f"run/{rel}/",
            "trials, first page": trials_url,
            "trials, middle page": f"{trials_url}?page={trials // 100}",
            "trials, status=missing reason=unparseable": f"{trials_url}?status=missing&reason=unparseable",
            "trials, status=missing reason=refusal q=feelings": f"{trials_url}?status=missing&reason=refusal&q=feelings",
            "trials, reason=refusal attribute country=JP q=emotions, page 2":
                f"{trials_url}?reason=refusal&attribute=country%3DJP&q=emotions&page=2",
            "trials, q=xyzzy (no match: full scan)": f"{trials_url}?q=xyzzy",
            "trial": f"run/{rel}/trial/{trial_id}",
            "respondent": f"run/{rel}/respondent/{respondent}",
        }
        results: dict[str, Any] = {}
        with viewer(tmp / "runs") as (url, process):
            rss_start = peak_rss_mb(process.pid)
            for _ in range(reps):           # interleaved: a burst of load falls on every page
                for name, path in pages.items():
                    ms, status, size = get(url + path)
                    entry = results.setdefault(name, {"path": path, "ms": [], "status": status, "bytes": size})
                    entry["ms"].append(round(ms, 2))
                    if status != 200:
                        raise RuntimeError(f"{path}: HTTP {status}")
            rss_peak = peak_rss_mb(process.pid)
        for name, entry in results.items():
            entry["median_ms"], entry["max_ms"] = median(entry["ms"]), max(entry["ms"])
            # the first request of a page opens the store cold (page cache, SQLite's schema): shown apart
            entry["first_ms"] = entry["ms"][0]
        print(table([[name, f"{e['median_ms']:.1f}", f"{e['max_ms']:.1f}", f"{e['first_ms']:.1f}", f"{e['bytes']:,}"]
                     for name, e in results.items()], ["page", "median ms", "max ms", "first ms", "bytes"]))
        filtered = {k: v for k, v in results.items() if k.startswith("trials, ") and "=" in k}
        worst = max(v["max_ms"] for v in filtered.values())
        print(f"filtered trials pages: worst max {worst:.0f} ms (target < {TARGET_MS}) "
              f"{'MET' if worst < TARGET_MS else 'MISSED'}; viewer peak RSS {rss_peak:.0f} MB (at start {rss_start:.0f}; "
              f"target < {TARGET_MB}) {'MET' if rss_peak < TARGET_MB else 'MISSED'}", flush=True)
        return {"store": built, "reps": reps, "pages": results, "viewer_peak_rss_mb": rss_peak,
                "viewer_rss_at_start_mb": rss_start, "filtered_worst_max_ms": worst, "load_after": os.getloadavg()}


# --- 2. a run written while the viewer polls it ------------------------------------------------------
class Poller(threading.Thread):
    """Once the run's store appears under `runs`: the run page once, then progress.json every second."""

    def __init__(self, url: str, runs: Path):
        super().__init__(daemon=True)
        self.url, self.runs = url, runs
        self.stop = threading.Event()
        self.polls: list[float] = []
        self.run_page_ms: float | None = None
        self.errors: list[str] = []
        self.last: dict[str, Any] = {}

    def run(self) -> None:
        manifest = None   # a run is listed once its manifest is written (engine/results/runs.py)
        while manifest is None and not self.stop.wait(0.05):
            manifest = next(self.runs.rglob("manifest.json"), None)
        if manifest is None:
            return
        rel = manifest.parent.relative_to(self.runs).as_posix()
        try:
            self.run_page_ms = get(f"{self.url}run/{rel}/")[0]
        except OSError as exc:
            self.errors.append(f"run page: {exc}")
        while not self.stop.is_set():
            began = time.perf_counter()
            try:
                with urllib.request.urlopen(f"{self.url}run/{rel}/progress.json", timeout=30) as response:
                    self.last = json.load(response)
                self.polls.append((time.perf_counter() - began) * 1000)
            except OSError as exc:
                self.errors.append(f"progress: {exc}")
            self.stop.wait(max(0.0, 1.0 - (time.perf_counter() - began)))


def one_write(study: Path, watched: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="view_write_") as tmp_name:
        runs = Path(tmp_name) / "runs"
        runs.mkdir()
        with ExitStack() as stack:
            poller = None
            viewer_pid = None
            if watched:
                url, process = stack.enter_context(viewer(runs))
                viewer_pid = process.pid
                poller = Poller(url, runs)
                viewer_cpu_before = cpu_s(viewer_pid)
                poller.start()
            load_before = os.getloadavg()[0]
            result = run_json([PYTHON, str(BENCH / "psyq_driver.py"), str(study), str(runs)], timeout=1800)
            if poller is not None:
                poller.stop.set()
                poller.join(timeout=30)
                result.update(polls=len(poller.polls), poll_median_ms=median(poller.polls),
                              poll_max_ms=max(poller.polls, default=float("nan")), run_page_ms=poller.run_page_ms,
                              poll_errors=poller.errors[:5], viewer_peak_rss_mb=peak_rss_mb(viewer_pid),
                              viewer_cpu_s=cpu_s(viewer_pid) - viewer_cpu_before)
        db = sqlite3.connect(next(runs.rglob("run.sqlite")))
        counts = dict(db.execute("SELECT status, COUNT(*) FROM trials GROUP BY status").fetchall())
        answers = db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        db.close()
        manifest = json.loads(next(runs.rglob("manifest.json")).read_text())
    planned = manifest.get("trials_planned")
    stored = counts.get("answered", 0) + counts.get("missing", 0)
    result.update(watched=watched, planned=planned, stored=stored, failed=counts.get("failed", 0),
                  answers=answers, lost=(planned or 0) - stored, load_before=load_before)
    return result


def write_part(personas: int, order: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="view_study_") as tmp_name, fast_stub("D") as (url, _):
        folder = Path(tmp_name)
        write_persons(folder / "cohort.yaml", personas)
        study = {"psyq": "study/1", "id": "view_write", "instruments": [str(IRI)], "cohort": "cohort.yaml",
                 "backends": [{"id": "stub", "kind": "openai", "base_url": url, "model": "bench-model",
                               "concurrency": 64, "timeout_s": 60}],
                 "protocol": {"seed": 1, "answer": "text", "presentation": "per_item"}}
        (folder / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
        runs = []
        for letter in order:
            r = one_write(folder / "study.yaml", watched=letter == "B")
            runs.append(r)
            extra = (f"; {r['polls']} polls, median {r['poll_median_ms']:.0f} ms, max {r['poll_max_ms']:.0f} ms, "
                     f"run page {r['run_page_ms'] or float('nan'):.0f} ms, viewer CPU {r['viewer_cpu_s']:.2f} s, "
                     f"viewer peak RSS {r['viewer_peak_rss_mb']:.0f} MB"
                     + (f"; errors: {r['poll_errors']}" if r["poll_errors"] else "")
                     if r["watched"] else "")
            print(f"{letter} ({'watched' if r['watched'] else 'alone'}): {r['seconds']:.2f} s, {r['rate']:.0f} trials/s, "
                  f"stored {r['stored']:,}/{r['planned']:,}, failed {r['failed']}, load {r['load_before']:.1f}{extra}",
                  flush=True)
    alone = [r["seconds"] for r in runs if not r["watched"]]
    watched = [r["seconds"] for r in runs if r["watched"]]
    if not (alone and watched):
        return {"personas": personas, "order": order, "runs": runs}
    ratio = (sum(watched) / len(watched)) / (sum(alone) / len(alone))
    complete = all(r["lost"] == 0 and r["failed"] == 0 and r["exit"] == 0 for r in runs)
    print(f"watched / alone: {ratio:.3f} (mean {sum(watched) / len(watched):.2f} s / {sum(alone) / len(alone):.2f} s; "
          f"target < {TARGET_RATIO}) {'MET' if ratio < TARGET_RATIO else 'MISSED'}; every trial stored in every run: "
          f"{complete}", flush=True)
    return {"personas": personas, "order": order, "runs": runs, "ratio": ratio, "complete": complete}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--write-personas", type=int, default=4000)
    parser.add_argument("--order", default="ABBA", help="A: the run alone, B: with the viewer polling it")
    parser.add_argument("--part", choices=("store", "write", "both"), default="both")
    args = parser.parse_args(argv)
    out: dict[str, Any] = {}
    if args.part in ("store", "both"):
        out["store"] = store_part(args.trials, args.reps)
    if args.part in ("write", "both"):
        out["write"] = write_part(args.write_personas, args.order.upper())
    print(f"-> {save_results('view_scale', out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
