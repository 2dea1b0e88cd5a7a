"""`answer: ssr`: free-text answers mapped onto the options by the similarity of their embeddings
to anchor statements (Maier et al. 2025, arXiv 2510.08338, appendix A.4.3, eq. 8).

The mapping (engine/trials/ssr.py) is checked against a hand computation on five answers: small
vectors along the axes, whose cosines are read off (|a| = 5 or 3, so every cosine is a fraction),
then γ = (1 + cos)/2, the least γ subtracted, ε added to the first least, normalised, the sets
averaged, the temperature applied — each step written out below in fractions. Then whole runs over
real HTTP against the stub server (tests/stub_server.py), which answers chat completions and
embeddings in the shapes OpenAI documents, with the embeddings of the anchor statements and
answers scripted to those same vectors: what the store keeps, that a resumed run asks no reply and
no embedding twice, what `psyq validate` refuses and what `psyq plan` counts.
"""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
from pathlib import Path

import pytest
import yaml

from psyq.engine.administer.run import administer
from psyq.engine.design.anchors import load_anchors
from psyq.engine.design.study import load_study
from psyq.engine.files.errors import InputError
from psyq.engine.trials.logprobs import chosen_value
from psyq.engine.trials.ssr import cosine_similarities, similarity_distribution, similarity_rating, with_temperature
from cli_helper import psyq_in_process
from stub_server import StubServer, hashed_embedding

ROOT = Path(__file__).resolve().parents[1]
E = [[1.0 if i == j else 0.0 for j in range(5)] for i in range(5)]   # e1 … e5: option r's statement is e_r
REVERSED = E[::-1]                                                     # a second set: option r at e_(6-r)

# Five answers, their cosines to e1 … e5 (a_r / |a|), and the distribution by hand.
ANSWERS = {
    # |a| = 5: cos 3/5, 4/5, 0, 0, 0; γ = 4/5, 9/10, 1/2, 1/2, 1/2; minus 1/2: 3/10, 4/10, 0, 0, 0 over 7/10.
    "one": ([3, 4, 0, 0, 0], [3 / 5, 4 / 5, 0, 0, 0], [3 / 7, 4 / 7, 0, 0, 0]),
    # |a| = 3: cos 0, 0, 1/3, 2/3, 2/3; γ = 1/2, 1/2, 2/3, 5/6, 5/6; minus 1/2: 0, 0, 1/6, 1/3, 1/3 over 5/6.
    "two": ([0, 0, 1, 2, 2], [0, 0, 1 / 3, 2 / 3, 2 / 3], [0, 0, 1 / 5, 2 / 5, 2 / 5]),
    # |a| = 3: cos 2/3, -1/3, 0, 0, 2/3; γ = 5/6, 1/3, 1/2, 1/2, 5/6; minus 1/3 (option 2):
    # 1/2, 0, 1/6, 1/6, 1/2 over 4/3.
    "three": ([2, -1, 0, 0, 2], [2 / 3, -1 / 3, 0, 0, 2 / 3], [3 / 8, 0, 1 / 8, 1 / 8, 3 / 8]),
    # |a| = 3: cos 0, 0, 0, 3/3, 0 — all on option 4: γ = 1/2, 1/2, 1/2, 1, 1/2; 0, 0, 0, 1/2, 0 over 1/2.
    "four": ([0, 0, 0, 3, 0], [0, 0, 0, 1, 0], [0, 0, 0, 1, 0]),
    # |a| = 3: cos 1/3, 2/3, 2/3, 0, 0; γ = 2/3, 5/6, 5/6, 1/2, 1/2; minus 1/2: 1/6, 1/3, 1/3, 0, 0 over 5/6.
    "five": ([1, 2, 2, 0, 0], [1 / 3, 2 / 3, 2 / 3, 0, 0], [1 / 5, 2 / 5, 2 / 5, 0, 0]),
}


@pytest.mark.parametrize("name", list(ANSWERS))
def test_similarities_and_distribution_equal_the_hand_computation(name):
    vector, cosines, distribution = ANSWERS[name]
    rating = similarity_rating(vector, [E])
    assert rating.similarities == (pytest.approx(tuple(cosines), abs=1e-9),)
    assert rating.distribution == pytest.approx(tuple(distribution), abs=1e-9)
    assert math.fsum(rating.distribution) == pytest.approx(1, abs=1e-12)


def test_epsilon_goes_to_the_first_least_similar_option():
    # "five" with ε = 0.05: γ − 1/2 = 10/60, 20/60, 20/60, 0, 0; ε to option 4 (the first least):
    # numerators 10/60, 20/60, 20/60, 3/60, 0 over Σγ − 5/2 + ε = 50/60 + 3/60 = 53/60.
    got = similarity_distribution(cosine_similarities(*[[1, 2, 2, 0, 0], E]), epsilon=0.05)
    assert got == pytest.approx((10 / 53, 20 / 53, 20 / 53, 3 / 53, 0), abs=1e-9)
    # Every option alike (|a| = √5, every cosine 1/√5): eq. 8 is 0/0 without ε; with ε the first takes all.
    with pytest.raises(ValueError, match="equally similar"):
        similarity_distribution(cosine_similarities([1, 1, 1, 1, 1], E))
    assert similarity_distribution(cosine_similarities([1, 1, 1, 1, 1], E), epsilon=0.1) == \
        pytest.approx((1, 0, 0, 0, 0), abs=1e-12)


def test_the_temperature_is_applied_after_the_sets_are_averaged():
    # "one" against e1 … e5 gives 3/7, 4/7, 0, 0, 0; against the reversed set (option r at e_(6-r))
    # its cosines are 0, 0, 0, 4/5, 3/5, so 0, 0, 0, 4/7, 3/7. The mean: 3/14, 4/14, 0, 4/14, 3/14.
    mean = similarity_rating([3, 4, 0, 0, 0], [E, REVERSED])
    assert mean.similarities[1] == pytest.approx((0, 0, 0, 4 / 5, 3 / 5), abs=1e-9)
    assert mean.distribution == pytest.approx((3 / 14, 4 / 14, 0, 4 / 14, 3 / 14), abs=1e-9)
    # "five" against e1 … e5: 1/5, 2/5, 2/5, 0, 0; against the reversed set its cosines are
    # 0, 0, 2/3, 2/3, 1/3, so γ − 1/2 = 0, 0, 1/3, 1/3, 1/6 over 5/6: 0, 0, 2/5, 2/5, 1/5.
    # The mean: 1/10, 1/5, 2/5, 1/5, 1/10. T = 1/2 squares the mean, then normalises:
    # 1, 4, 16, 4, 1 over 26 (squaring each set first would give the mean of 1, 4, 4, 0, 0 and
    # 0, 0, 4, 4, 1 over 9: 1, 4, 8, 4, 1 over 18, which is not the paper's order).
    assert similarity_rating([1, 2, 2, 0, 0], [E, REVERSED]).distribution == \
        pytest.approx((1 / 10, 1 / 5, 2 / 5, 1 / 5, 1 / 10), abs=1e-9)
    sharp = similarity_rating([1, 2, 2, 0, 0], [E, REVERSED], temperature=0.5)
    assert sharp.distribution == pytest.approx((1 / 26, 4 / 26, 16 / 26, 4 / 26, 1 / 26), abs=1e-9)
    # T = 2: square roots of the mean, normalised.
    roots = [math.sqrt(p) for p in (1 / 10, 1 / 5, 2 / 5, 1 / 5, 1 / 10)]
    flat = similarity_rating([1, 2, 2, 0, 0], [E, REVERSED], temperature=2.0).distribution
    assert flat == pytest.approx(tuple(r / sum(roots) for r in roots), abs=1e-9)
    assert with_temperature((0.2, 0.8), 1.0) == (0.2, 0.8)


# ------------------------------------------------------------------ anchors files

def test_shipped_anchors_are_labelled_as_ours_and_fit_the_shipped_scales():
    from psyq.engine.design.anchors import anchors_for
    from psyq.engine.design.instrument import load_instrument

    scales = {i: load_instrument(i).scale for i in ("iri", "bes", "panas", "affect_psyq")}
    found, missing = anchors_for(scales, None, ROOT)
    assert missing == [] and set(found) == set(scales)
    for match in found.values():
        assert (match.anchors.content_source, match.anchors.source) == ("psyq", "written for psyq; not validated")
    iri = load_anchors("iri_describes_me")
    assert [o.label for o in iri.scale][::4] == ["Does not describe me well", "Describes me very well"]


def test_an_anchors_file_with_a_statement_missing_is_refused_at_its_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("psyq: anchors/1\nid: bad\ncontent_source: user\nsource: mine\nscale:\n"
                    "  - {value: 1, label: Never}\n  - {value: 2, label: Always}\nsets:\n  - id: s\n    statements:\n"
                    "      1: Not at all.\n      3: Very much.\n")
    with pytest.raises(InputError) as caught:
        load_anchors(path)
    messages = [(p.line, p.message) for p in caught.value.problems]
    assert (11, "set 's' has no statement for option 2 (one statement per option of the scale: 1, 2)") in messages
    assert (12, "3 is not a value of the scale (1, 2)") in messages


# ------------------------------------------------------------------ runs against the stub

INSTRUMENT = {
    "psyq": "instrument/1", "id": "tiny", "name": "Tiny", "version": 1, "content_source": "psyq",
    "citations": {"psyq": "psyq authors (2026). Toy instrument for tests."}, "terms": "Test data only.",
    "instructions": "Say how well each statement describes you.",
    "scale": [{"value": v, "label": label} for v, label in
              [(1, "Not me"), (2, "Hardly me"), (3, "Partly me"), (4, "Mostly me"), (5, "Me")]],
    "items": [{"id": i, "text": f"Statement {i}.", "subscales": ["X"]} for i in "ab"],
    "subscales": [{"id": "X", "name": "X", "score": "sum", "min_answered": 1}],
}
ANCHORS = {"psyq": "anchors/1", "id": "tiny_anchors", "content_source": "user", "source": "written for this test",
           "scale": INSTRUMENT["scale"],
           "sets": [{"id": "only", "statements": {v: f"statement {v}" for v in range(1, 6)}}]}
# The persona p0 answers item a with "one", item b with "two"; p1: "three", "four" (texts = the names).
REPLIES = {("p0", "a"): "one", ("p0", "b"): "two", ("p1", "a"): "three", ("p1", "b"): "four"}
VECTORS = {f"statement {v}": E[v - 1] for v in range(1, 6)} | {name: [float(x) for x in ANSWERS[name][0]]
                                                               for name in ANSWERS}


def reply(body: dict) -> str:
    system = body["messages"][0]["content"]
    persona = "p0" if "p0" in system else "p1"
    item = body["messages"][-1]["content"].split("Statement ")[1][0]
    return REPLIES[(persona, item)]


def embedding(text: str) -> list[float]:
    return VECTORS.get(text) or hashed_embedding(text, 5)


def write_study(tmp: Path, chat_url: str, embeddings_url: str, **ssr) -> Path:
    (tmp / "tiny.yaml").write_text(yaml.safe_dump(INSTRUMENT, sort_keys=False))
    (tmp / "tiny_anchors.yaml").write_text(yaml.safe_dump(ANCHORS, sort_keys=False))
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({
        "psyq": "cohort/1", "id": "c", "template": "You are {id}.",
        "personas": [{"id": "p0"}, {"id": "p1"}]}))
    study = {"psyq": "study/1", "id": "s", "instruments": ["tiny.yaml"], "cohort": "cohort.yaml",
             "backends": [{"id": "chat", "kind": "openai", "base_url": chat_url, "model": "stub-model",
                           "max_retries": 0, "timeout_s": 5}],
             "protocol": {"answer": "ssr", "seed": 5, "logprob_answer": "most_likely",
                          "ssr": {"anchors": ["tiny_anchors.yaml"],
                                  "embeddings": {"base_url": embeddings_url, "model": "embed-small", "batch_size": 3,
                                                 "concurrency": 1, "max_retries": 0, "timeout_s": 5}, **ssr}}}
    (tmp / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    return tmp / "study.yaml"


def run(path: Path):
    return asyncio.run(administer(load_study(path), path.parent / "runs", log=lambda m: None))


def stored(result) -> dict:
    with sqlite3.connect(result.run_dir.database) as db:
        rows = db.execute("SELECT t.respondent_id, a.item_id, a.value, a.status, a.distribution, a.expected, a.text, "
                          "t.status, t.raw_text, t.request FROM answers a JOIN trials t USING (trial_id)").fetchall()
    return {(r[0], r[1]): r[2:] for r in rows}


def embedded_inputs(stub: StubServer) -> list[str]:
    return [t for r in stub.requests if r.path == "/v1/embeddings" and r.outcome == "ok" for t in r.body["input"]]


def test_a_run_stores_the_free_text_and_its_distribution_by_the_hand_computation(tmp_path):
    with StubServer(answer=reply) as chat, StubServer(embedding=embedding) as embed:
        result = run(write_study(tmp_path, chat.url, embed.url))
        requests = [r.body for r in embed.requests]
        chat_body = chat.requests[0].body
    rows = stored(result)
    for (persona, item), name in REPLIES.items():
        value, status, dist, expected, text, trial_status, raw_text, _ = rows[(persona, item)]
        hand = ANSWERS[name][2]
        assert (status, trial_status, text, raw_text) == ("answered", "answered", name, name)
        assert [json.loads(dist)[str(v)] for v in range(1, 6)] == pytest.approx(hand, abs=1e-9)
        assert expected == pytest.approx(sum(v * p for v, p in zip(range(1, 6), hand)), abs=1e-9)
        assert value == max(range(1, 6), key=lambda v: (hand[v - 1], -v))   # most likely; a tie: the lower
    # The request as OpenAI documents it: model and input (the 5 statements and 4 answers, 3 a request).
    assert [sorted(b) for b in requests] == [["input", "model"]] * 3
    assert sorted(t for b in requests for t in b["input"]) == sorted([f"statement {v}" for v in range(1, 6)]
                                                                      + list(REPLIES.values()))
    # The chat request asked for free text, with no schema, within a free-text answer's tokens.
    assert "in your own words" in chat_body["messages"][-1]["content"] and "response_format" not in chat_body
    assert chat_body["max_tokens"] == 96


def test_a_sampled_value_is_drawn_with_the_trials_seed(tmp_path):
    with StubServer(answer=reply) as chat, StubServer(embedding=embedding) as embed:
        path = write_study(tmp_path, chat.url, embed.url)
        study = yaml.safe_load(path.read_text())
        study["protocol"]["logprob_answer"] = "sample"
        path.write_text(yaml.safe_dump(study))
        rows = stored(run(path))
    for key, (value, _, dist, _, _, _, _, request) in rows.items():
        dist = {int(k): p for k, p in json.loads(dist).items()}
        assert value == chosen_value(dist, "sample", json.loads(request)["seed"])


def test_a_run_stopped_in_the_embeddings_resumes_without_asking_anything_twice(tmp_path):
    """The first run gets its replies and one batch of embeddings, then the embeddings server fails:
    the answers wait (unrated, their trials finished); the second run sends no chat request and
    asks only for the texts it has no embedding of."""
    with StubServer(answer=reply) as chat, StubServer(embedding=embedding, faults=["ok", "500"]) as embed:
        path = write_study(tmp_path, chat.url, embed.url)
        first = run(path)
        waiting = stored(first)
        assert {r[1] for r in waiting.values()} == {"unrated"} and {r[5] for r in waiting.values()} == {"missing"}
        assert any("still wait to be mapped" in n for n in first.notes)
        chat_sent, first_inputs = len(chat.requests), embedded_inputs(embed)
        assert chat_sent == 4 and len(first_inputs) == 3
        second = run(path)
        assert len(chat.requests) == chat_sent   # no reply asked again
        second_inputs = embedded_inputs(embed)[len(first_inputs):]
        assert sorted(first_inputs + second_inputs) == sorted(set(first_inputs + second_inputs))   # none twice
        assert len(first_inputs) + len(second_inputs) == 9
        third = run(path)   # nothing left to do: nothing sent at all
        assert len(embedded_inputs(embed)) == 9 and len(chat.requests) == chat_sent and third.notes == []
    rows = stored(second)
    assert {r[1] for r in rows.values()} == {"answered"} and {r[5] for r in rows.values()} == {"answered"}
    assert [json.loads(rows[("p1", "a")][2])[str(v)] for v in range(1, 6)] == pytest.approx(ANSWERS["three"][2])


def test_an_answer_without_text_is_re_asked_and_a_refusal_kept(tmp_path):
    def replies(body: dict) -> str:
        user = [m for m in body["messages"] if m["role"] == "user"]
        if "Statement a." in user[0]["content"]:
            return "" if len(user) == 1 else "one"
        return "As an AI language model, I don't have feelings."

    with StubServer(answer=replies) as chat, StubServer(embedding=embedding) as embed:
        rows = stored(run(write_study(tmp_path, chat.url, embed.url)))
        reask = [r.body for r in chat.requests if len(r.body["messages"]) > 2][0]
    assert rows[("p0", "a")][1] == "answered" and rows[("p0", "b")][1] == "refusal"
    assert reask["messages"][-1]["content"].startswith("Your answer could not be read (no answer for this question). "
                                                       "Answer in your own words")


def test_the_anchors_statements_are_part_of_the_runs_identity(tmp_path):
    path = write_study(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    before = load_study(path).file_hashes()
    assert str((tmp_path / "tiny_anchors.yaml").resolve()) in before
    anchors = yaml.safe_load((tmp_path / "tiny_anchors.yaml").read_text())
    anchors["sets"][0]["statements"][3] = "statement three"
    (tmp_path / "tiny_anchors.yaml").write_text(yaml.safe_dump(anchors))
    assert load_study(path).file_hashes() != before


@pytest.mark.parametrize("change, says", [
    (lambda s: s["protocol"]["ssr"].pop("anchors"),
     "answer: ssr needs anchor statements for the scale of 'tiny' (1 = Not me, 2 = Hardly me, 3 = Partly me, "
     "4 = Mostly me, 5 = Me), and none of psyq's anchors (affect_intensity, bes_agreement, iri_describes_me, "
     "panas_extent) is written for it"),
    (lambda s: s["protocol"].pop("ssr"), "answer: ssr needs `ssr:` in the protocol, with `embeddings:`"),
    (lambda s: s["protocol"]["ssr"].update(anchors=["nowhere"]),
     "nowhere: no such file here, and psyq ships no anchors of this name"),
    (lambda s: s["protocol"].update(presentation="whole_instrument"),
     "answer: ssr asks for one distribution per item, so it needs presentation: per_item"),
])
def test_validate_refuses_a_study_ssr_cannot_read(tmp_path, change, says):
    path = write_study(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    study = yaml.safe_load(path.read_text())
    change(study)
    path.write_text(yaml.safe_dump(study))
    out = psyq_in_process("validate", str(path))
    assert out.returncode != 0 and says in out.stderr, out.stderr
    assert "study.yaml:" in out.stderr   # file:line:column


def test_plan_counts_the_embedding_requests(tmp_path):
    path = write_study(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    out = psyq_in_process("plan", str(path), "--json", "--runs-dir", str(tmp_path / "runs"), "--tokenizer",
                          "approximate")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    # 5 statements + 2 personas × 2 items = 9 texts, 3 a request.
    assert plan["requests"] == 4
    assert {k: plan["embeddings"][k] for k in ("requests", "anchor_statements", "answers", "batch_size", "model")} \
        == {"requests": 3, "anchor_statements": 5, "answers": 4, "batch_size": 3, "model": "embed-small"}
    text = psyq_in_process("plan", str(path), "--runs-dir", str(tmp_path / "runs"), "--tokenizer", "approximate")
    assert "embeddings (answer: ssr): at most 3 requests to http://127.0.0.1:9/v1/embeddings (model embed-small)" \
        in text.stdout
