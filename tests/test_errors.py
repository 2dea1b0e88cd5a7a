"""One exception tree (issue 53): every exception psyq raises on purpose is a PsyqError defined in
engine/files/errors.py, and psyq.errors (and the psyq namespace) names every one of them."""

from __future__ import annotations

import ast
from pathlib import Path

import psyq
import psyq.errors
from psyq.engine.files import errors as tree

ROOT = Path(__file__).resolve().parents[1]
TREE = "engine/files/errors.py"


def psyq_error_classes(sources: dict[str, str]) -> dict[str, str]:
    """class name -> file of every class in `sources` deriving, directly or through another class of
    them, from PsyqError."""
    bases: dict[str, tuple[str, list[str]]] = {}
    for file, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                names = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
                bases[node.name] = (file, names)
    found, grew = {"PsyqError": bases.get("PsyqError", ("", []))[0]}, True
    while grew:
        grew = False
        for name, (file, parents) in bases.items():
            if name not in found and any(p in found for p in parents):
                found[name], grew = file, True
    return found


def test_the_finder_sees_an_error_class_planted_elsewhere():
    planted = {TREE: "class PsyqError(Exception): ...\nclass BackendError(PsyqError): ...\n",
               "engine/x.py": "class Mine(BackendError): ...\nclass Other(ValueError): ...\n"}
    assert psyq_error_classes(planted) == {"PsyqError": TREE, "BackendError": TREE, "Mine": "engine/x.py"}


def test_every_psyq_error_is_defined_in_the_one_tree():
    sources = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
               for top in ("engine", "analysis", "cli") for p in (ROOT / top).rglob("*.py")}
    classes = psyq_error_classes(sources)
    assert {"PsyqError", "InputError", "RunLocked", "BackendError", "ProviderRefused"} <= set(classes)
    assert {name: file for name, file in classes.items() if file != TREE} == {}


def test_psyq_errors_names_the_whole_tree():
    defined = {name for name, value in vars(tree).items()
               if isinstance(value, type) and value.__module__ == tree.__name__}
    assert set(psyq.errors.__all__) == defined
    for name in defined:
        assert getattr(psyq.errors, name) is getattr(tree, name) is getattr(psyq, name)
    assert issubclass(psyq.errors.BatchApiError, psyq.errors.BackendError)
    assert issubclass(psyq.errors.RunLocked, psyq.errors.PsyqError)
