"""A small run of the toy instrument tests/data/mini_1to7.yaml, administered over real HTTP to
the stub server (tests/stub_server.py); shared by the score-table, doctest and validity tests."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path

import yaml

from psyq import administer, load_study
from stub_server import StubServer, default_answer

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_1to7.yaml"


def refuse_some_d(body: dict) -> str:
    """The stub's hashed digit, except that item d is refused when that digit would be 1, so
    that some respondents miss an item (their Y and Z scores are then prorated)."""
    digit = default_answer(body)
    text = json.dumps(body.get("messages"))
    return "I would rather not answer that." if "Item d" in text and digit == "1" else digit


def make_mini_run(tmp: Path, n_personas: int = 8, repeats: int = 2) -> Path:
    """Administer the mini instrument to `n_personas` personas (gender, age); return the run dir."""
    personas = [{"id": f"p{i:02d}", "attributes": {"gender": "female" if i % 2 else "male", "age": 20 + 3 * i}}
                for i in range(n_personas)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "include_baseline": False,
                                                     "personas": personas}))
    study = {"psyq": "study/1", "id": "mini_run", "instruments": [str(MINI)], "cohort": "cohort.yaml",
             "backends": [{"id": "stub", "kind": "openai", "base_url": "", "model": "stub-model", "concurrency": 4}],
             "protocol": {"answer": "text", "option_order": "as_written", "repeats": repeats, "seed": 1}}
    with StubServer(answer=refuse_some_d) as stub:
        study["backends"][0]["base_url"] = stub.url
        (tmp / "study.yaml").write_text(yaml.safe_dump(study))
        result = asyncio.run(administer(load_study(tmp / "study.yaml"), tmp / "runs", log=lambda m: None))
    return result.run_dir.path


def stored_trials(db: Path) -> int:
    """Trials the run store at `db` holds (0 while it cannot be read yet)."""
    try:
        with sqlite3.connect(db) as c:
            return c.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    except sqlite3.Error:
        return 0


def wait_until_stored(runs: Path, n: int, timeout_s: float = 60) -> Path | None:
    """The run store under `runs` once it holds at least `n` trials (what a test kills a run after),
    or whatever was found when `timeout_s` ran out."""
    db, deadline = None, time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        db = next(runs.rglob("run.sqlite"), None) if runs.exists() else None
        if db and stored_trials(db) >= n:
            break
        time.sleep(0.02)
    return db


def recorded(path: Path) -> list[dict]:
    """The requests a stub server run as a script recorded (``--record FILE``: one JSON line each)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
