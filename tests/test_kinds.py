"""Item kinds as plug-ins (engine/kinds/): the instrument format is built from the registry, and
the engine and analysis packages import each other without cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engine.instrument import ITEM_KINDS, SCORE_KINDS, AnyItem, Instrument, Item, SceneItem, VignetteItem
from engine.kinds import get_kind, item_kinds, register, score_kinds

ROOT = Path(__file__).resolve().parents[1]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST):
    """Every node of `tree` except those under ``if TYPE_CHECKING:`` (imports for annotations
    only, never run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _imports(path: Path) -> set[str]:
    """Modules of engine/ and analysis/ that `path` imports when run (also inside functions)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)   # `from . import rating`
    return found


def _graph() -> dict[str, set[str]]:
    files = sorted(ROOT.glob("engine/**/*.py")) + sorted(ROOT.glob("analysis/**/*.py"))
    names = {_module_name(f) for f in files}
    # A module's own packages are not counted: Python imports them before the module, always
    # (e.g. `from . import __version__` in engine/run.py reads the half-imported engine package).
    return {(me := _module_name(f)): {m for m in _imports(f) if m in names and m != me
                                      and not me.startswith(m + ".")} for f in files}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph`, found by depth-first search (None when there is none)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycles_and_engine_never_imports_analysis():
    graph = _graph()
    # The old cycle (instrument <-> validation) must stay broken, so the search must see both.
    assert "engine.instrument" in graph and "engine.validation" in graph["engine.instrument"]
    assert _cycle(graph) is None, _cycle(graph)
    # The command line (engine/cli.py) is the outer edge that drives both packages; no other
    # engine module may reach into analysis.
    assert not [(m, d) for m, deps in graph.items() if m.startswith("engine") and m != "engine.cli"
                for d in deps if d.startswith("analysis")]


def test_the_cycle_finder_finds_a_cycle():
    # A cycle drawn by hand, so that the test above cannot pass by a broken finder.
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]


def test_imports_for_annotations_only_are_not_edges_but_imports_in_functions_are():
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .instrument import X\n"
              "def f():\n    from .validation import Y\n")
    names = {n.module for n in _runtime_nodes(ast.parse(source)) if isinstance(n, ast.ImportFrom)}
    assert names == {"typing", "validation"}


def test_item_union_and_score_rules_come_from_the_registry():
    assert ITEM_KINDS == item_kinds() == ("rating", "scene", "vignette")
    assert [get_kind(k).model for k in ITEM_KINDS] == [Item, SceneItem, VignetteItem]
    assert SCORE_KINDS == score_kinds()
    assert set(SCORE_KINDS.values()) == set(ITEM_KINDS)
    # The subscale `score:` rules are exactly the rules the kinds own.
    assert set(Instrument.model_json_schema()["$defs"]["Subscale"]["properties"]["score"]["enum"]) == set(SCORE_KINDS)
    assert AnyItem is not None


def test_a_kind_cannot_be_registered_twice_under_one_name():
    class Other(type(get_kind("scene"))):
        pass

    with pytest.raises(ValueError, match="registered already"):
        register(Other())
