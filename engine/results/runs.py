"""Runs on disk: find them, say how far each got, and break a run down by instrument and backend.

What `psyq runs [DIR]` and `psyq status` print, and which run a study's runs folder stands for
when a command is given one (:func:`resolve_run`). Everything is read, nothing is written: the run
store is opened read-only (a run in progress keeps writing while it is read; SQLite's WAL lets
both happen), and whether a process holds a run is asked of its lock (engine/store/run_store/runlock.py).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from psyq.engine.files.errors import InputError, PsyqError
from psyq.engine.results.run import open_run
from psyq.engine.store.readonly import connect_readonly
from psyq.engine.store.runlock import lock_holder

MANIFEST, DATABASE = "manifest.json", "run.sqlite"   # the names engine/administer/record.py gives them
TRIAL_STATUSES = ("answered", "missing", "failed")


@dataclass
class RunSummary:
    """One run as `psyq runs` lists it."""

    path: Path
    study: str
    run_id: str
    started_at: str | None
    last_activity: str | None
    backends: list[str]                    # "id (model)"
    planned: int | None
    counts: dict[str, int]                 # trials per status (answered, missing, failed)
    locked_by: str | None                  # PID of the process writing the run now, or None
    notes: list[str] = field(default_factory=list)
    prompt_perturbation: str | None = None  # the rule of --perturb-prompts the run was made with, if any

    @property
    def not_sent(self) -> int | None:
        """Trials planned and not yet stored (None when the plan is unknown)."""
        return None if self.planned is None else max(self.planned - sum(self.counts.values()), 0)

    @property
    def has_answers(self) -> bool:
        """Whether any trial got a reply (answered, or missing with its reason): a run whose backend was
        never reached has none, and nothing to export, score or report."""
        return bool(self.counts.get("answered") or self.counts.get("missing"))


def served_by_psyq(kind: Any) -> bool:
    """Whether a run's backend of `kind` (as its manifest says) was a model psyq served on its own
    llama-server, whose `serving:` decides whether its answers come out the same again; False for
    a kind psyq no longer knows.

    Example:
        >>> served_by_psyq("local"), served_by_psyq("openai"), served_by_psyq("gone"), served_by_psyq(None)
        (True, False, False, False)
    """
    from psyq.engine.backends.registry import BACKENDS

    return isinstance(kind, str) and kind in BACKENDS and BACKENDS.get(kind).starts_server


def is_run_dir(path: Path) -> bool:
    """A run directory holds a manifest and a store.

    Example (`run_dir`: a run; its parent, the study's runs folder, is not one):
        >>> is_run_dir(run_dir), is_run_dir(run_dir.parent)
        (True, False)
    """
    return (path / MANIFEST).is_file() and (path / DATABASE).is_file()


def find_run_dirs(root: str | Path) -> list[Path]:
    """Run directories at `root`, or one or two levels below it (runs/ or runs/STUDY/).

    Example (`run_dir` is in runs/mini_run/, the only run there):
        >>> find_run_dirs(run_dir.parent) == [run_dir], find_run_dirs(run_dir.parents[1]) == [run_dir]
        (True, True)
    """
    root = Path(root)
    if not root.is_dir():
        raise InputError.single(root, "no such folder: give the folder that holds the runs (`psyq run` writes "
                                      "them to runs/, or to its --runs-dir)")
    if is_run_dir(root):
        return [root]
    found = []
    for child in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if is_run_dir(child):
            found.append(child)
        else:
            found.extend(sorted(g for g in child.iterdir() if g.is_dir() and is_run_dir(g)))
    return found


def _connect(database: Path) -> sqlite3.Connection:
    """The run store, read-only (never creating or altering anything: engine/store/readonly.py)."""
    return connect_readonly(database)


def _read_manifest(path: Path, notes: list[str]) -> dict[str, Any]:
    """The run's manifest, or (damaged) a note: a listing shows a damaged run rather than refuse it."""
    try:
        return open_run(path).manifest
    except InputError:
        pass
    notes.append(f"{MANIFEST} is damaged (rerun the study to rebuild it); counts are from {DATABASE}")
    return {}


def _latest(*stamps: str | None) -> str | None:
    """The latest of ISO timestamps (ignoring None and unreadable ones)."""
    known = [s for s in stamps if s and _moment(s) != float("-inf")]
    return max(known, key=_moment) if known else None


def summarise_run(path: str | Path) -> RunSummary:
    """Study, times, backends, completion and lock of one run directory.

    Example (`run_dir`: 16 trials of the toy instrument tests/data/mini_1to7.yaml, one answer refused):
        >>> run = summarise_run(run_dir)
        >>> run.study, run.counts
        ('mini_run', {'answered': 15, 'missing': 1})
    """
    path = Path(path)
    notes: list[str] = []
    manifest = _read_manifest(path, notes)
    try:
        with closing(_connect(path / DATABASE)) as db:
            counts = dict(db.execute("SELECT status, COUNT(*) FROM trials GROUP BY status").fetchall())
            first, last = db.execute("SELECT MIN(started_at), MAX(finished_at) FROM trials").fetchone()
    except sqlite3.Error as exc:
        raise PsyqError(f"{path / DATABASE}: cannot read the run store ({exc})") from None
    backends = [f"{b} ({(v.get('identity') or {}).get('model') or '?'})"
                for b, v in (manifest.get("backends") or {}).items() if isinstance(v, dict)]
    return RunSummary(path=path, study=str(manifest.get("study") or path.parent.name),
                      run_id=str(manifest.get("run_id") or path.name),
                      started_at=manifest.get("started_at") or first,
                      last_activity=_latest(last, manifest.get("finished_at"), manifest.get("started_at"),
                                            manifest.get("resumed_at")),
                      backends=backends, planned=manifest.get("trials_planned"), counts=counts,
                      locked_by=lock_holder(path), notes=notes,
                      prompt_perturbation=_perturbation(manifest))


def _perturbation(manifest: dict[str, Any]) -> str | None:
    variant = manifest.get("prompt_perturbation")
    return str(variant.get("perturbation")) if isinstance(variant, dict) else None


def list_runs(root: str | Path) -> list[RunSummary]:
    """Every run under `root`, newest first (by last activity, then start).

    Example (`run_dir`: the only run in its study's folder):
        >>> [r.run_id for r in list_runs(run_dir.parent)] == [run_dir.name]
        True
    """
    runs = [summarise_run(p) for p in find_run_dirs(root)]
    return sorted(runs, key=lambda r: _moment(r.last_activity or r.started_at), reverse=True)


def _moment(stamp: str | None) -> float:
    """Seconds since the epoch of an ISO timestamp (naive ones taken as UTC); -inf if none."""
    try:
        moment = datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        moment = None
    if moment is None:
        return float("-inf")
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def _when(stamp: str | None) -> str:
    """An ISO timestamp as 'YYYY-MM-DD HH:MM' (UTC, as stored)."""
    if not stamp:
        return "-"
    try:
        return datetime.fromisoformat(stamp).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return stamp


def _completion(run: RunSummary) -> str:
    done = run.counts.get("answered", 0) + run.counts.get("missing", 0)
    planned = "?" if run.planned is None else str(run.planned)
    parts = [f"{s} {run.counts.get(s, 0)}" for s in TRIAL_STATUSES]
    if run.not_sent:
        parts.append(f"not sent {run.not_sent}")
    return f"{done}/{planned} done ({', '.join(parts)})"


def run_state(run: RunSummary) -> str:
    """What a run's STATE column says: running (process N), complete, incomplete (and what to do) ..."""
    if run.locked_by:
        return f"running (process {run.locked_by})"
    if run.not_sent == 0 and not run.counts.get("failed"):
        return "complete"
    if not run.has_answers:   # e.g. its server was never reached: nothing was paid, nothing to read
        return "nothing answered (passed over as its folder's latest run; rerun the study when its server answers)"
    if run.planned is None:
        return "unknown (manifest unreadable)"
    failed = run.counts.get("failed", 0)
    return f"incomplete ({failed} failed; rerun the study to retry them)" if failed and not run.not_sent \
        else "incomplete (rerun the study to resume)"


def format_runs(runs: list[RunSummary]) -> str:
    """The table `psyq runs` prints: one line per run, newest first.

    Example:
        >>> print(format_runs([]))
        no runs found
    """
    if not runs:
        return "no runs found"
    rows = [("RUN", "STUDY", "STARTED (UTC)", "LAST ACTIVITY", "BACKENDS", "TRIALS", "STATE")]
    for run in runs:
        rows.append((str(run.path), run.study, _when(run.started_at), _when(run.last_activity),
                     ", ".join(run.backends) or "?", _completion(run), run_state(run)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in rows]
    for run in runs:
        lines.extend(f"note: {run.path}: {note}" for note in run.notes)
    return "\n".join(line.rstrip() for line in lines)


# --- one run, by instrument and backend ---------------------------------------------------------


@dataclass
class Breakdown:
    """What one backend did with one instrument in a run."""

    instrument: str
    backend: str
    planned: int | None
    counts: dict[str, int]                 # trials per status
    retries: int                           # HTTP attempts repeated after a transient failure, summed
    reasks: int                            # corrective follow-ups, summed
    prompt_tokens: int
    completion_tokens: int
    no_tokens: int                         # trials whose backend reported no token counts
    missing_reasons: dict[str, int]        # item answers not given, by status (refusal, unparseable, ...)


def run_breakdown(path: str | Path) -> tuple[list[Breakdown], list[str]]:
    """Per instrument × backend: planned, answered, missing (and why), failed, retries, tokens;
    and notes on what could not be told.

    Planned counts come from the manifest's ``trials_planned_by`` (runs made before it was
    recorded show none, and say so). Tokens are summed from the store's per-trial counts
    (prompt and completion, re-asks included); trials whose backend reported none are counted
    apart rather than as 0.

    Example (`run_dir`: 16 trials of the toy instrument tests/data/mini_1to7.yaml, one answer refused):
        >>> rows, notes = run_breakdown(run_dir)
        >>> rows[0].instrument, rows[0].planned, rows[0].counts, rows[0].missing_reasons, notes
        ('mini', 16, {'answered': 15, 'missing': 1}, {'refusal': 1}, [])
    """
    path = Path(path)
    notes: list[str] = []
    manifest = _read_manifest(path, notes)
    planned_by = manifest.get("trials_planned_by")
    if not isinstance(planned_by, dict):
        planned_by = {}
        notes.append("this run's manifest does not record the trials planned per instrument and backend "
                     f"(made by an older psyq); planned is shown only in total ({manifest.get('trials_planned', '?')})")
    try:
        with closing(_connect(path / DATABASE)) as db:
            trials = db.execute(
                # `attempts` counts every HTTP attempt, re-asks included (engine/administer/send_trial.py): each request
                # sent (the first, then each re-ask) is one attempt plus its retries.
                "SELECT instrument_id, backend_id, status, COUNT(*), SUM(attempts - 1 - reasks), SUM(reasks), "
                "SUM(COALESCE(prompt_tokens, 0)), SUM(COALESCE(completion_tokens, 0)), "
                # A failed trial had no reply, so no tokens to report; others without counts are noted.
                "SUM(status != 'failed' AND prompt_tokens IS NULL AND completion_tokens IS NULL) "
                "FROM trials GROUP BY instrument_id, backend_id, status").fetchall()
            reasons = db.execute(
                "SELECT t.instrument_id, t.backend_id, a.status, COUNT(*) FROM answers a JOIN trials t "
                "USING (trial_id) WHERE t.status != 'failed' AND a.status != 'answered' "
                "GROUP BY t.instrument_id, t.backend_id, a.status").fetchall()
    except sqlite3.Error as exc:
        raise PsyqError(f"{path / DATABASE}: cannot read the run store ({exc})") from None
    rows: dict[tuple[str, str], Breakdown] = {}

    def row(instrument: str, backend: str) -> Breakdown:
        if (instrument, backend) not in rows:
            planned = (planned_by.get(backend) or {}).get(instrument) if planned_by else None
            rows[(instrument, backend)] = Breakdown(instrument, backend, planned, {}, 0, 0, 0, 0, 0, {})
        return rows[(instrument, backend)]

    for backend, per_instrument in planned_by.items():
        for instrument in per_instrument:
            row(instrument, backend)
    for instrument, backend, status, n, retries, reasks, prompt, completion, no_tokens in trials:
        r = row(instrument, backend)
        r.counts[status] = n
        r.retries += retries or 0
        r.reasks += reasks or 0
        r.prompt_tokens += prompt or 0
        r.completion_tokens += completion or 0
        r.no_tokens += no_tokens or 0
    for instrument, backend, status, n in reasons:
        row(instrument, backend).missing_reasons[status] = n
    silent = sum(r.no_tokens for r in rows.values())
    if silent:
        notes.append(f"{silent} answered trial{'s' if silent != 1 else ''} have no token counts (the backend "
                     "did not report usage); their tokens are not in the sums")
    return sorted(rows.values(), key=lambda r: (r.instrument, r.backend)), notes


def format_breakdown(rows: list[Breakdown], notes: list[str]) -> str:
    """The per instrument × backend table of `psyq status`.

    Example:
        >>> print(format_breakdown([Breakdown("iri", "stub", 4, {"answered": 3, "missing": 1}, 2, 1, 400, 8, 0,
        ...                                   {"refusal": 1})], []))
        INSTRUMENT  BACKEND  PLANNED  ANSWERED  MISSING  FAILED  NOT SENT  RETRIES  RE-ASKS  PROMPT TOK  COMPLETION TOK  MISSING ANSWERS BY REASON
        iri         stub     4        3         1        0       0         2        1        400         8               refusal 1
        (trials; missing: answered, but not every item readably; failed: no answer after the retries, retried by the next run; retries: requests sent again after a transient failure such as HTTP 429/500 or a timeout; re-asks: follow-ups after an unreadable answer)
    """
    header = ("INSTRUMENT", "BACKEND", "PLANNED", "ANSWERED", "MISSING", "FAILED", "NOT SENT", "RETRIES",
              "RE-ASKS", "PROMPT TOK", "COMPLETION TOK", "MISSING ANSWERS BY REASON")
    table = [header]
    for r in rows:
        stored = sum(r.counts.values())
        not_sent = "?" if r.planned is None else str(max(r.planned - stored, 0))
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(r.missing_reasons.items())) or "-"
        table.append((r.instrument, r.backend, "?" if r.planned is None else str(r.planned),
                      *(str(r.counts.get(s, 0)) for s in TRIAL_STATUSES), not_sent, str(r.retries),
                      str(r.reasks), str(r.prompt_tokens), str(r.completion_tokens), reasons))
    widths = [max(len(t[i]) for t in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(t, widths)).rstrip() for t in table]
    if rows:
        lines.append("(trials; missing: answered, but not every item readably; failed: no answer after the "
                     "retries, retried by the next run; retries: requests sent again after a transient failure such as "
                     "HTTP 429/500 or a timeout; re-asks: follow-ups after an unreadable answer)")
    lines.extend(f"note: {n}" for n in notes)
    return "\n".join(lines)


PROMPTS = ("as written", "perturbed")   # which runs of a folder `resolve_run(prompts=...)` may take


@dataclass(frozen=True)
class ChosenRun:
    """The run a command reads: the run directory it was given, or the latest run of a folder."""

    path: Path
    given: Path
    runs: list[RunSummary] = field(default_factory=list)          # a folder's runs, newest first
    passed_over: list[RunSummary] = field(default_factory=list)   # newer runs not taken: nothing answered
    prompts: str | None = None                                    # the runs a folder was narrowed to

    @property
    def from_folder(self) -> bool:
        return bool(self.runs)

    def line(self) -> str | None:
        """One line saying which run a folder stood for (None for a run directory given as such).

        Example (`run_dir`: the only run in its study's folder):
            >>> run = summarise_run(run_dir)
            >>> ChosenRun(run.path, run_dir.parent, [run]).line() == f"{run_dir.parent} -> its latest run, {run_dir}"
            True
            >>> ChosenRun(run.path, run.path).line() is None       # a run directory given as such
            True
        """
        if not self.from_folder:
            return None
        narrowed = {"as written": " made without --perturb-prompts", "perturbed": " made with --perturb-prompts",
                    None: ""}[self.prompts]
        taken = next(r for r in self.runs if r.path == self.path)
        if not taken.has_answers:
            return f"{self.given} -> its latest run{narrowed}, {self.path} (no run in it has an answer yet)"
        if not self.passed_over:
            return f"{self.given} -> its latest run{narrowed}, {self.path}"
        n = len(self.passed_over)
        skipped = ", ".join(str(r.path) for r in self.passed_over)
        return (f"{self.given} -> its latest run{narrowed} that has answers, {self.path} (passed over {n} newer "
                f"run{'s' if n > 1 else ''} with nothing answered: {skipped})")


def resolve_run(path: str | Path, prompts: str | None = None) -> ChosenRun:
    """The run that a command given PATH reads: PATH itself if it is a run directory (or an
    imported run); else the latest run under PATH (a study's runs folder, or runs/), by last
    activity, passing over runs with nothing answered (a run whose server was never reached)
    unless no run has an answer. `prompts` ("as written" or "perturbed") narrows a folder to the
    runs made without or with --perturb-prompts, which share their study's folder.

    Every command that reads a run resolves its argument here, so `psyq status`, `export`,
    `scores`, `report` ... agree on which run a folder means.

    Example (`run_dir`: the only run in its study's folder):
        >>> resolve_run(run_dir.parent).path == run_dir, resolve_run(run_dir).path == run_dir
        (True, True)
    """
    from psyq.engine.results.imported_run import is_imported_run

    path = Path(path)
    if is_run_dir(path) or is_imported_run(path):
        return ChosenRun(path, path)
    if not path.exists():
        raise InputError.single(path, "no such run directory or folder (give a run directory, runs/STUDY/RUN-ID, "
                                      "or a study's runs folder, runs/STUDY, for its latest run)")
    if not path.is_dir():
        raise InputError.single(path, f"not a run directory (no {MANIFEST} and {DATABASE} in it)")
    runs = list_runs(path)
    if not runs:
        raise InputError.single(path, f"not a run directory, and no runs in it (a run directory holds "
                                f"{MANIFEST} and {DATABASE}: runs/STUDY/RUN-ID)")
    if prompts is not None:
        runs = [r for r in runs if (r.prompt_perturbation is None) == (prompts == "as written")]
        if not runs:
            made = "without" if prompts == "as written" else "with"
            raise InputError.single(path, f"no run in it was made {made} --perturb-prompts; give the run "
                                          "directory (psyq runs lists them)")
    answered = [r for r in runs if r.has_answers]
    taken = answered[0] if answered else runs[0]
    return ChosenRun(taken.path, path, runs, runs[:runs.index(taken)], prompts)   # newer, none answered


def status_target(path: str | Path) -> tuple[Path, str | None]:
    """The run `psyq status PATH` shows (:func:`resolve_run`), with, for a folder, a listing of
    its runs and a note saying which one is shown.

    Example (`run_dir`: the only run in its study's folder):
        >>> path, listing = status_target(run_dir.parent)
        >>> path == run_dir, listing.splitlines()[0].split()[:3]
        (True, ['RUN', 'STUDY', 'STARTED'])
        >>> status_target(run_dir) == (run_dir, None)          # a run directory: no listing
        True
    """
    chosen = resolve_run(path)
    if not chosen.from_folder:
        return chosen.path, None
    runs = chosen.runs
    listing = format_runs(runs)
    others = f"; {len(runs) - 1} other run{'s' if len(runs) > 2 else ''} listed above" if len(runs) > 1 else ""
    which = "latest run (by last activity)"
    if chosen.passed_over:
        which = (f"latest run with answers (by last activity; {len(chosen.passed_over)} newer with nothing "
                 "answered passed over)")
    elif not runs[0].has_answers:
        which = "latest run (by last activity; no run in it has an answer yet)"
    note = (f"note: {chosen.given} is not a run directory; showing its {which}, "
            f"{chosen.path}{others} (give a run directory to see another)")
    return chosen.path, f"{listing}\n\n{note}"
