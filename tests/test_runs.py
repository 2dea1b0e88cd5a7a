"""`psyq runs`, `psyq status` per instrument × backend, and `psyq validate` skipping runs/ and
hidden folders.

Runs are made with `administer` against two stub servers (tests/stub_server.py: real HTTP over
loopback, a real SQLite store), one per backend, so that what each backend was sent is known
from its own stub. Expected counts are worked out by hand from the study written here (see
``HAND``); tokens are summed independently from the requests each stub received (the stub
reports ``prompt_chars // 4`` prompt tokens and ``len(reply) // 4 + 1`` completion tokens).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path

import pytest
import yaml

from psyq import administer, load_study
from psyq.cli import main
from psyq.engine.store.runlock import RunLock
from psyq.engine.results.runs import list_runs, run_breakdown, summarise_run
from stub_server import StubServer, default_answer, prompt_chars

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"   # items a-d ("Item a" ...), scale 1-7
DUO = """\
psyq: instrument/1
id: duo
name: Duo
version: 1
content_source: psyq
citations: {psyq: "psyq authors (2026). Toy instrument for tests."}
terms: Test data only.
instructions: Rate each statement.
scale:
  - {value: 1, label: Never}
  - {value: 2}
  - {value: 3}
  - {value: 4, label: Always}
items:
  - {id: x, text: Thing x, subscales: [S]}
  - {id: y, text: Thing y, subscales: [S]}
subscales:
  - {id: S, name: S, score: sum, min_answered: 1}
"""
NAMES = ["Alpha", "Beta", "Gamma"]


def answer(body: dict) -> str:
    """Beta refuses item d (a missing answer, not re-asked); Gamma first answers item b
    unreadably ("banana"), then, asked again, with the stub's digit (one re-ask)."""
    text = json.dumps(body.get("messages"))
    users = [m for m in body["messages"] if m.get("role") == "user"]
    if "Item d" in text and "Persona Beta" in text:
        return "I would rather not answer that."
    if "Item b" in text and "Persona Gamma" in text and len(users) == 1:
        return "banana"
    return default_answer(body)


# Worked out by hand. Each backend: 3 personas x 2 repeats; mini has 4 items and duo 2, one
# trial per item (per_item), so 24 mini and 12 duo trials planned per backend.
# Both backends: Beta refuses item d in each repeat -> 2 missing mini trials (refusal 2);
# Gamma's item b is re-asked once in each repeat -> 2 re-asks on mini (answered in the end).
# Backend A (concurrency 1, its stub answers the first two requests 500): the first trial sent,
# mini item a of Alpha in repeat 0, is tried 3 times -> 2 retries, then answered.
# Backend B (max_retries 0, its stub answers the first request 500): that same first trial
# fails -> 1 failed, so 24 - 2 - 1 = 21 answered.
HAND = {  # (instrument, backend): planned, answered, missing, failed, retries, reasks, refusals
    ("duo", "A"): (12, 12, 0, 0, 0, 0, 0),
    ("duo", "B"): (12, 12, 0, 0, 0, 0, 0),
    ("mini", "A"): (24, 22, 2, 0, 2, 2, 2),
    ("mini", "B"): (24, 21, 2, 1, 0, 2, 2),
}


def write_study(tmp: Path, urls: dict[str, str], repeats: int, names: list[str]) -> Path:
    (tmp / "duo.yaml").write_text(DUO)
    personas = [{"id": n.lower(), "attributes": {"name": f"Persona {n}"}} for n in names]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": personas}))
    backends = [{"id": b, "kind": "openai", "base_url": url, "model": f"model-{b.lower()}", "concurrency": 1,
                 "max_retries": 2 if b == "A" else 0, "backoff_s": 0.01} for b, url in urls.items()]
    study = {"psyq": "study/1", "id": "s", "instruments": [str(MINI), "duo.yaml"], "cohort": "cohort.yaml",
             "backends": backends, "protocol": {"repeats": repeats, "seed": 3}}
    path = tmp / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


def stub_tokens(stub: StubServer) -> dict[str, tuple[int, int]]:
    """Prompt and completion tokens the stub reported, per instrument (told by the item text)."""
    out = {"mini": [0, 0], "duo": [0, 0]}
    for request in stub.requests:
        if request.outcome != "ok" or not isinstance(request.body, dict):
            continue
        instrument = "duo" if "Thing " in json.dumps(request.body["messages"]) else "mini"
        out[instrument][0] += prompt_chars(request.body) // 4
        out[instrument][1] += len(answer(request.body)) // 4 + 1
    return {k: (v[0], v[1]) for k, v in out.items()}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("runs")
    with StubServer(answer=answer, faults=["500", "500"]) as a, StubServer(answer=answer, faults=["500"]) as b:
        first = asyncio.run(administer(load_study(write_study(tmp, {"A": a.url, "B": b.url}, 2, NAMES)),
                                       tmp / "runs", log=lambda m: None))
        tokens = {"A": stub_tokens(a), "B": stub_tokens(b)}
    # A later run of the same study id (1 repeat, 1 persona, backend A only): a run of its own.
    with StubServer(answer=answer) as a:
        second = asyncio.run(administer(load_study(write_study(tmp, {"A": a.url}, 1, ["Alpha"])),
                                        tmp / "runs", log=lambda m: None))
    return {"root": tmp / "runs", "first": first.run_dir.path, "second": second.run_dir.path, "tokens": tokens}


def psyq(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_breakdown_per_instrument_and_backend(two_runs):
    rows, notes = run_breakdown(two_runs["first"])
    assert notes == []
    got = {(r.instrument, r.backend): (r.planned, r.counts.get("answered", 0), r.counts.get("missing", 0),
                                       r.counts.get("failed", 0), r.retries, r.reasks,
                                       r.missing_reasons.get("refusal", 0)) for r in rows}
    assert got == HAND
    assert all(set(r.missing_reasons) <= {"refusal"} for r in rows)
    for r in rows:
        assert (r.prompt_tokens, r.completion_tokens) == two_runs["tokens"][r.backend][r.instrument]
        assert r.prompt_tokens > 0


def test_status_of_a_run_prints_the_table(two_runs):
    code, out, err = psyq("status", str(two_runs["first"]))
    assert code == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("INSTRUMENT"))
    table = {tuple(line.split()[:2]): line.split()[2:11] for line in lines[header + 1:header + 5]}
    for (instrument, backend), (planned, answered, missing, failed, retries, reasks, refusals) in HAND.items():
        prompt, completion = two_runs["tokens"][backend][instrument]
        assert table[(instrument, backend)] == [str(planned), str(answered), str(missing), str(failed), "0",
                                                str(retries), str(reasks), str(prompt), str(completion)]
        reason = f"refusal {refusals}" if refusals else "-"
        assert next(line for line in lines if line.split()[:2] == [instrument, backend]).endswith(reason)
    assert "note:" not in out


def test_status_of_a_study_folder_lists_its_runs_and_shows_the_latest(two_runs):
    code, out, err = psyq("status", str(two_runs["root"] / "s"))
    assert code == 0, err
    assert f"showing its latest run (by last activity), {two_runs['second']}; 1 other run listed above" in out
    listed = [line.split()[0] for line in out.splitlines() if line.startswith(str(two_runs["root"]))]
    assert listed == [str(two_runs["second"]), str(two_runs["first"])]
    # The second run: 1 persona x 1 repeat x (4 + 2 items) on backend A, nothing refused or re-asked.
    rows = [line.split()[:8] for line in out.splitlines() if line.split()[:1] in (["mini"], ["duo"])]
    assert rows == [["duo", "A", "2", "2", "0", "0", "0", "0"], ["mini", "A", "4", "4", "0", "0", "0", "0"]]


def test_runs_lists_newest_first_with_completion(two_runs):
    code, out, err = psyq("runs", str(two_runs["root"]))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["RUN", "STUDY"]
    assert [line.split()[0] for line in lines[1:]] == [str(two_runs["second"]), str(two_runs["first"])]
    # First run: 72 planned (2 backends x 36); 67 + 4 finished (answered + missing), 1 failed.
    assert "71/72 done (answered 67, missing 4, failed 1)" in lines[2]
    assert "A (model-a), B (model-b)" in lines[2] and lines[2].endswith("incomplete (1 failed; rerun the study to retry them)")
    assert "6/6 done (answered 6, missing 0, failed 0)" in lines[1] and lines[1].endswith("complete")


def test_runs_says_which_run_is_in_progress(two_runs):
    with RunLock(two_runs["first"]):
        import os
        assert summarise_run(two_runs["first"]).locked_by == str(os.getpid())
        assert summarise_run(two_runs["second"]).locked_by is None
        code, out, _ = psyq("runs", str(two_runs["root"]))
        assert f"running (process {os.getpid()})" in out.splitlines()[2]
    assert summarise_run(two_runs["first"]).locked_by is None
    assert [r.path for r in list_runs(two_runs["root"] / "s")] == [two_runs["second"], two_runs["first"]]


def test_status_of_a_folder_without_runs_says_so(tmp_path):
    code, _, err = psyq("status", str(tmp_path))
    assert code == 2 and f"error: {tmp_path}: not a run directory, and no runs in it" in err
    code, out, _ = psyq("runs", str(tmp_path))
    assert code == 0 and out.strip() == "no runs found"


def test_validate_skips_runs_and_hidden_folders(tmp_path, two_runs):
    (tmp_path / "instruments").mkdir()
    (tmp_path / "instruments" / "duo.yaml").write_text(DUO)
    for broken in ("runs/s/abc/study.yaml", ".git/x.yaml", "instruments/.drafts/y.yml"):
        (tmp_path / broken).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / broken).write_text("id: [unclosed\n")
    # A run written with --runs-dir elsewhere: its folder holds manifest.json and run.sqlite.
    import shutil
    shutil.copytree(two_runs["first"], tmp_path / "results" / "s" / "r1")
    (tmp_path / "results" / "s" / "r1" / "study.yaml").write_text("id: [unclosed\n")
    code, out, err = psyq("validate", str(tmp_path))
    assert code == 0, err
    assert out.splitlines() == [f"ok  {tmp_path / 'instruments' / 'duo.yaml'}"]
    # 3 broken files above, and the run's study.yaml and 2 instrument copies (mini, duo)
    assert "note: skipped 6 YAML files inside runs/, run directories and hidden folders" in err
    # A file named on the command line is checked wherever it is.
    code, _, err = psyq("validate", str(tmp_path / ".git" / "x.yaml"))
    assert code == 2 and "its ']' is missing" in err


def test_a_run_without_planned_counts_per_instrument_says_so(tmp_path, two_runs):
    # A run made before the manifest recorded trials_planned_by: planned is unknown per row.
    import shutil
    run = tmp_path / "old"
    shutil.copytree(two_runs["first"], run)
    manifest = json.loads((run / "manifest.json").read_text())
    del manifest["trials_planned_by"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    rows, notes = run_breakdown(run)
    assert [r.planned for r in rows] == [None] * 4
    assert notes == ["this run's manifest does not record the trials planned per instrument and backend "
                     "(made by an older psyq); planned is shown only in total (72)"]
    code, out, _ = psyq("status", str(run))
    assert code == 0 and "note: this run's manifest does not record" in out
    assert all(line.split()[2] == "?" for line in out.splitlines() if line.split()[:1] in (["mini"], ["duo"]))
