"""The same study twice on the real local model gives the same stored answers and distributions
(the local backend's default `serving: reproducible`, engine/backends/local.py).

Slow: llama-server and the model are built and fetched once (minutes on a new machine).
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
import yaml

from psyq.engine.administer.run import administer
from psyq.engine.backends.local_build import ensure_llama_server
from psyq.engine.design.study import load_study

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.local_model]


N_PERSONAS, N_ITEMS = 3, 4


def _instrument(tmp: Path) -> Path:
    """The 4-item test instrument with the IRI's instructions and first item texts: prompts of
    the quick start's length, whose shared prefix (persona, instructions) is most of each prompt,
    as where the prompt cache changes the numbers."""
    mini = yaml.safe_load((ROOT / "tests" / "data" / "mini_1to7.yaml").read_text())
    iri = yaml.safe_load((ROOT / "instruments" / "iri.yaml").read_text())
    mini["instructions"] = iri["instructions"]
    for item, source in zip(mini["items"], iri["items"]):
        item["text"] = source["text"]
    (tmp / "mini.yaml").write_text(yaml.safe_dump(mini, sort_keys=False))
    return tmp / "mini.yaml"


def _study(tmp: Path) -> Path:
    # 3 personas + the baseline × 4 items, sent 4 at a time: with several requests in flight
    # and prompts sharing a persona's prefix, batching and the prompt cache would each change
    # the numbers from run to run if the server used them (both undone once: the test failed).
    jobs = ("nurse", "plumber", "teacher")
    personas = [{"id": f"p{i}", "attributes": {"age": 22 + 9 * i, "gender": ("female", "male")[i % 2],
                                               "occupation": jobs[i]}} for i in range(N_PERSONAS)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump(
        {"psyq": "cohort/1", "id": "c", "include_baseline": True, "personas": personas}))
    (tmp / "study.yaml").write_text(yaml.safe_dump({
        "psyq": "study/1", "id": "twice", "instruments": [str(_instrument(tmp))],
        "cohort": "cohort.yaml", "backends": [{"id": "local", "kind": "local", "concurrency": 4}],
        "protocol": {"answer": "logprobs", "logprob_answer": "sample", "option_order": "counterbalanced",
                     "seed": 3, "reask_limit": 0}}))
    return tmp / "study.yaml"


def _answers(database: Path) -> dict[tuple[str, str], tuple]:
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT t.respondent_id, a.item_id, a.status, a.value, a.distribution "
                          "FROM answers a JOIN trials t USING (trial_id)").fetchall()
    return {(r[0], r[1]): r[2:] for r in rows}


def test_the_same_study_twice_stores_the_same_distributions(tmp_path):
    ensure_llama_server(print)
    study = load_study(_study(tmp_path))
    first = asyncio.run(administer(study, tmp_path / "first", log=print))
    second = asyncio.run(administer(study, tmp_path / "second", log=print))
    assert first.run_dir.path.name == second.run_dir.path.name      # one run id: the same study
    a, b = _answers(first.run_dir.database), _answers(second.run_dir.database)
    assert len(a) == (N_PERSONAS + 1) * N_ITEMS
    assert sum(row[2] is not None for row in a.values()) >= 0.8 * len(a)     # distributions stored
    # Exactly equal: the distribution JSON as stored, the sampled answer, the status.
    differing = sorted(key for key in a if a[key] != b[key])
    assert differing == [], f"{len(differing)} of {len(a)} answers differ between two runs: {differing}"
