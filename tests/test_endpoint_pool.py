"""Endpoint pools (engine/backends/pool.py): replicas of one model behind one backend.

The bookkeeping is tested with a fake clock; the runs go over real loopback HTTP to two stub
replicas (tests/stub_server.py) and store in real SQLite. No wall-clock limit is asserted.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from pathlib import Path

import pytest
import yaml

from psyq.engine.backends import make_backend
from psyq.engine.backends.pool import FAIL_AFTER, EndpointPool
from psyq.engine.files.errors import InputError
from psyq.engine.administer.record import run_id_for
from psyq.engine.administer.plan import plan_trials
from psyq.engine.design.study import load_study
from stub_server import StubServer
from test_administer import run, write_study


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def quiet_pool(urls: list[str], concurrency: int = 2, cooldown_s: float = 10.0) -> tuple[EndpointPool, Clock, list]:
    clock, said = Clock(), []
    return EndpointPool(urls, concurrency=concurrency, cooldown_s=cooldown_s, backend_id="b", clock=clock,
                        log=said.append), clock, said


A, B = "http://127.0.0.1:9001/v1", "http://127.0.0.1:9002/v1"


def test_least_loaded_endpoint_is_chosen_and_slots_are_per_endpoint():
    pool, _, _ = quiet_pool([A, B], concurrency=2)
    first, second = pool.try_acquire(), pool.try_acquire()
    assert {first.name, second.name} == {A, B}           # one each: the other had fewer in flight
    third, fourth = pool.try_acquire(), pool.try_acquire()
    assert {third.name, fourth.name} == {A, B}
    assert pool.try_acquire() is None                     # 2 per endpoint × 2 endpoints are in flight
    pool.release(first, healthy=True)
    assert pool.try_acquire().name == first.name          # the only one with a free slot


def test_failing_endpoint_is_taken_out_then_probed_once_and_brought_back():
    pool, clock, said = quiet_pool([A, B], concurrency=4, cooldown_s=10.0)
    a = pool.endpoints[0]
    for _ in range(FAIL_AFTER):
        pool.release(_acquire_on(pool, a), healthy=False, why="connection error (ClientConnectorError)")
    assert a.down_until == clock.t + 10.0 and "taken out for 10 s" in said[-1]
    assert {pool.try_acquire().name for _ in range(4)} == {B}   # while out, only B is used
    clock.t += 10.0                                         # the cool-down ends: one probe goes to A
    probe = pool.try_acquire()
    assert probe is a and a.probing
    assert pool.try_acquire() is None                       # B is full, A takes a single probe only
    pool.release(probe, healthy=False, why="HTTP 503")      # the probe fails: out for twice as long
    assert a.down_until == clock.t + 20.0
    clock.t += 20.0
    probe = pool.try_acquire()
    pool.release(probe, healthy=True)                       # the probe answers: back in service
    assert a.down_until == 0.0 and "back in service" in said[-1]
    assert pool.summary()[A]["times_taken_out"] == 2


def _acquire_on(pool: EndpointPool, endpoint):
    """Acquire until `endpoint` is the one chosen (releasing the others healthy)."""
    while True:
        chosen = pool.try_acquire()
        if chosen is endpoint:
            return chosen
        pool.release(chosen, healthy=True)


def _pool_study(tmp: Path, urls: list[str], **backend) -> Path:
    path = write_study(tmp, urls[0], backend={"base_url": None, "base_urls": urls, **backend},
                       personas=[{"id": f"p{i}", "attributes": {"age": 20 + i, "gender": "female"}}
                                 for i in range(6)],
                       protocol={"repeats": 2})
    data = yaml.safe_load(path.read_text())
    del data["backends"][0]["base_url"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _request_key(body: dict) -> str:
    # The messages and the seed: the two repeats of an item have the same messages, not the same seed.
    return json.dumps([body["messages"], body.get("seed")], sort_keys=True)


def test_a_replica_killed_mid_run_the_run_completes_on_the_other(tmp_path, capsys):
    with StubServer(latency_s=0.02) as a, StubServer(latency_s=0.02) as b:
        study = _pool_study(tmp_path, [a.url, b.url], endpoint_cooldown_s=60)

        def kill_a_after_8_requests() -> None:
            while len(a.requests) < 8:
                time.sleep(0.002)
            a.stop()          # refuses connections from now on; requests in flight are dropped

        killer = threading.Thread(target=kill_a_after_8_requests)
        killer.start()
        result = run(study, tmp_path / "runs")
        killer.join()
        b_requests = [r for r in b.requests if r.path.endswith("/chat/completions")]

        # 6 personas × 4 items × 2 repeats, every one answered
        assert result.counts == {"answered": 48}
        with sqlite3.connect(result.run_dir.database) as db:
            rows = db.execute("SELECT endpoint, request FROM trials").fetchall()
        by_endpoint = {e: sum(1 for r in rows if r[0] == e) for e in {r[0] for r in rows}}
        assert set(by_endpoint) <= {a.url, b.url} and by_endpoint.get(b.url, 0) > 0
        assert by_endpoint.get(a.url, 0) <= 8         # A answered at most what it received
        # Nothing sent twice once answered: a trial that A answered never went to B, and B got
        # each trial it answered exactly once (no re-asks: every stub answer is a valid digit).
        sent_to_b: dict[str, int] = {}
        for r in b_requests:
            key = _request_key(r.body)
            sent_to_b[key] = sent_to_b.get(key, 0) + 1
        for endpoint, request in rows:
            n = sent_to_b.get(_request_key(json.loads(request)), 0)
            assert n == (1 if endpoint == b.url else 0)
        # The run said so, and the manifest counts per endpoint.
        assert f"endpoint {a.url} taken out" in capsys.readouterr().err
        stats = json.loads(result.run_dir.manifest.read_text())["backend_stats"]["stub"]["endpoints"]
        assert stats[a.url]["times_taken_out"] >= 1 and stats[b.url]["failures"] == 0

        # A rerun sends nothing (B is still up; A is not).
        before = len(b.requests)
        again = run(study, tmp_path / "runs")
        assert again.already_finished == 48 and len(b.requests) == before


def test_the_faster_replica_gets_more_requests(tmp_path):
    with StubServer(latency_s=0.25) as slow, StubServer(latency_s=0.005) as fast:
        study = _pool_study(tmp_path, [slow.url, fast.url], concurrency=1)
        result = run(study, tmp_path / "runs")
        assert result.counts == {"answered": 48}
        with sqlite3.connect(result.run_dir.database) as db:
            counts = dict(db.execute("SELECT endpoint, COUNT(*) FROM trials GROUP BY endpoint").fetchall())
    # One slot each: while the slow one holds its slot for 0.25 s the fast one frees its slot
    # every few milliseconds, and a free slot is where the next request goes.
    assert counts[fast.url] > counts[slow.url] >= 1


def test_status_shows_counts_per_endpoint(tmp_path):
    from psyq.engine.results.usage import endpoint_lines, read_endpoint_usage
    with StubServer() as a, StubServer() as b:
        result = run(_pool_study(tmp_path, [a.url, b.url]), tmp_path / "runs")
    lines = endpoint_lines(read_endpoint_usage(result.run_dir.database))
    with sqlite3.connect(result.run_dir.database) as db:   # the same counts, straight from SQL
        counts = dict(db.execute("SELECT endpoint, COUNT(*) FROM trials GROUP BY endpoint").fetchall())
    for url, n in counts.items():
        assert any(line.startswith(f"endpoint   stub {url}: {n} trials ({n} answered)") for line in lines)


def _as_pool(path: Path, urls: list[str]) -> Path:
    """The study at `path` with its backend's base_url replaced by base_urls (same everything else)."""
    data = yaml.safe_load(path.read_text())
    del data["backends"][0]["base_url"]
    data["backends"][0]["base_urls"] = urls
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_replicas_do_not_change_trial_ids_or_the_run_id(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "pool").mkdir()
    single = load_study(write_study(tmp_path / "one", A))
    pooled = load_study(_as_pool(write_study(tmp_path / "pool", A), [A, B]))
    b1 = {c.id: make_backend(c) for c in single.spec.backends}
    b2 = {c.id: make_backend(c) for c in pooled.spec.backends}
    ids1 = [t.trial_id for t in plan_trials(single, b1)]
    assert len(ids1) == 8 and ids1 == [t.trial_id for t in plan_trials(pooled, b2)]
    assert run_id_for(single, b1) == run_id_for(pooled, b2)
    # Another first replica is another server: other ids.
    other = load_study(_as_pool(write_study(tmp_path / "pool", B), [B, A]))
    b3 = {c.id: make_backend(c) for c in other.spec.backends}
    assert [t.trial_id for t in plan_trials(other, b3)] != ids1


@pytest.mark.parametrize("urls, also_base_url, where, message", [
    ([A, B], True, "base_urls", "not both"),
    ([A, "not a url"], False, "base_urls[1]", "must be an http"),
    ([A, "http://localhost:9001/v1/"], False, "base_urls[1]", "the same endpoint as entry 1"),
    ([], False, "base_urls", "at least 1"),
])
def test_bad_base_urls_are_refused_with_file_line_column(tmp_path, urls, also_base_url, where, message):
    path = _as_pool(write_study(tmp_path, A), urls)
    if also_base_url:
        data = yaml.safe_load(path.read_text())
        data["backends"][0]["base_url"] = A
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError) as caught:
        load_study(path)
    assert re.search(rf"study\.yaml:\d+:\d+: backends\[0\]\.{re.escape(where)}: .*{message}", str(caught.value)), \
        str(caught.value)
