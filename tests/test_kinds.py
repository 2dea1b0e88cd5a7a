"""Item kinds as plug-ins (engine/kinds/): the instrument format is built from the registry, and
the engine and analysis packages import each other without cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from psyq.engine.design.instrument import ITEM_KINDS, SCORE_KINDS, AnyItem, Instrument
from psyq.engine.kinds.rating import Item
from psyq.engine.kinds.scene import SceneItem
from psyq.engine.kinds.response import ResponseItem
from psyq.engine.kinds.vignette import VignetteItem
from psyq.engine.kinds import get_kind, item_kinds, register, score_kinds

ROOT = Path(__file__).resolve().parents[1]


def _module_name(path: Path) -> str:
    """The import name of a file under engine/ or analysis/ (the package psyq is the repository's root)."""
    parts = ["psyq", *path.relative_to(ROOT).with_suffix("").parts]
    if parts[1:] == ["__init__"]:
        return "psyq"
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
    # Every package of psyq: the top-level namespace, the engine, the analysis and the command line.
    files = [ROOT / "__init__.py"] + [f for top in ("engine", "analysis", "cli") for f in sorted(ROOT.glob(f"{top}/**/*.py"))]
    names = {_module_name(f) for f in files}
    # A module's own packages are not counted: Python imports them before the module, always
    # (e.g. `from . import __version__` in engine/administer/record.py reads the half-imported engine package).
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
    assert "psyq.engine.design.instrument" in graph and "psyq.engine.files.validation" in graph["psyq.engine.design.instrument"]
    # The report's sections (analysis/report/sections/) are part of the graph searched.
    assert "psyq.analysis.report.sections" in graph["psyq.analysis.report.build"]
    assert "psyq.analysis.report.sections.scene" in graph["psyq.analysis.report.sections"]
    assert _cycle(graph) is None, _cycle(graph)
    # The command line (cli/) is the floor above both packages; engine imports nothing from either.
    assert any(d.startswith("psyq.analysis") for m, deps in graph.items() if m.startswith("psyq.cli") for d in deps)
    assert not [(m, d) for m, deps in graph.items() if m.startswith("psyq.engine")
                for d in deps if d.startswith(("psyq.analysis", "psyq.cli"))]
    # Score, then compare, then report: a statistic never imports the report, scoring neither.
    assert "psyq.analysis.statistics.norms" in graph and "psyq.analysis.scoring.scores" in graph
    for room, never in (("psyq.analysis.scoring", ("psyq.analysis.statistics", "psyq.analysis.report")),
                        ("psyq.analysis.statistics", ("psyq.analysis.report",))):
        assert not [(m, d) for m, deps in graph.items() if m.startswith(room) for d in deps if d.startswith(never)]


def test_the_cycle_finder_finds_a_cycle():
    # A cycle drawn by hand, so that the test above cannot pass by a broken finder.
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]


def test_imports_for_annotations_only_are_not_edges_but_imports_in_functions_are():
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .instrument import X\n"
              "def f():\n    from .validation import Y\n")
    names = {n.module for n in _runtime_nodes(ast.parse(source)) if isinstance(n, ast.ImportFrom)}
    assert names == {"typing", "validation"}


def test_item_union_and_score_rules_come_from_the_registry():
    assert ITEM_KINDS == item_kinds() == ("rating", "scene", "vignette", "response")
    assert [get_kind(k).model for k in ITEM_KINDS] == [Item, SceneItem, VignetteItem, ResponseItem]
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


# A kind added exactly as the developer's note in engine/kinds/__init__.py describes (one module,
# one `register` line) must validate, be administered and be stored. Done in a copy of the engine
# package, run in its own interpreter, so that the repository is not touched.
NOTE_MODULE = '''
from typing import Literal
from pydantic import Field
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.trials.free_text import parse_free_text
from psyq.engine.trials.trial import make_trial
from psyq.engine.kinds.base import ItemKind

class NoteItem(StrictModel):
    id: Id
    kind: Literal["note"]
    text: Text
    subscales: list[Id] = Field(default_factory=list)

class Note(ItemKind):
    name = "note"
    model = NoteItem
    scores = ()

    def plan_trials(self, ctx, instrument):
        for item in (i for i in instrument.items if isinstance(i, NoteItem)):
            messages = [{"role": "user", "content": item.text}]
            yield make_trial(ctx, instrument, (item.id,), messages,
                             ctx.backend.config.max_tokens or 200, None, None, "note", self.name)

    def parse(self, trial, text, protocol):
        return {trial.item_ids[0]: parse_free_text(text)}
'''

def note_section_module() -> str:
    """The report section of the same kind exactly as the docstring of analysis/report/sections/
    writes it (its recipe is what is tested)."""
    from psyq.analysis.report import sections

    recipe = sections.__doc__.split("``analysis/report/sections/note.py``::", 1)[1]
    lines = []
    for line in recipe.splitlines()[1:]:
        if line and not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines).strip() + "\n"


RUN_SCRIPT = '''
import asyncio, json, sys
from psyq import administer, load_study
from psyq.engine.results.export import export_table
from stub_server import StubServer

study_path, runs = sys.argv[1], sys.argv[2]
def answer(body):
    prompt = body["messages"][-1]["content"]
    return "Written: " + prompt if prompt.startswith("Write") else "2"
with StubServer(answer=answer) as stub:
    text = open(study_path).read().replace("STUB_URL", stub.url)
    open(study_path, "w").write(text)
    result = asyncio.run(administer(load_study(study_path), runs, log=lambda m: None))
table = export_table(result.run_dir.path)
from psyq.analysis.report import build_sections
_, sections = build_sections(result.run_dir.path)
notes = [s.readings for s in sections if s.title == "Notes"]
print(json.dumps({"planned": result.planned, "counts": result.counts, "notes": notes,
                  "rows": sorted(zip(table["item_id"], table["text"].fillna(""), table["value"].fillna(-1)))}))
'''

INSTRUMENT_WITH_NOTES = """
psyq: instrument/1
id: notes
name: Rating and note items (test)
version: 1
content_source: psyq
citations: {psyq: "psyq authors (2026). Toy instrument for tests."}
terms: Test data only.
instructions: Rate each statement.
scale: [{value: 1, label: Disagree}, {value: 2, label: Agree}]
items:
  - {id: a, text: Item a, subscales: [X]}
  - {id: n1, kind: note, text: Write about your day.}
  - {id: n2, kind: note, text: Write about your week.}
subscales:
  - {id: X, name: Item a alone}
"""


def test_a_kind_added_in_one_module_and_registered_is_validated_administered_and_stored(tmp_path):
    import json
    import os
    import shutil
    import subprocess
    import sys

    import yaml

    # A copy of the package psyq (the repository's __init__.py, engine/ and analysis/), first on the path.
    src = tmp_path / "src" / "psyq"
    for package in ("engine", "analysis"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "__init__.py", src / "__init__.py")
    (src / "engine" / "kinds" / "note.py").write_text(NOTE_MODULE)
    with open(src / "engine" / "kinds" / "__init__.py", "a") as init:
        init.write("\nfrom . import note  # noqa: E402\nregister(note.Note())\n")
    (src / "analysis" / "report" / "sections" / "note.py").write_text(note_section_module())
    with open(src / "analysis" / "report" / "sections" / "__init__.py", "a") as init:
        # "register note.NoteSection() in SECTIONS", here after the last section
        init.write("\nfrom . import note  # noqa: E402\nSECTIONS.register(note.NoteSection())\n")
    (tmp_path / "notes.yaml").write_text(INSTRUMENT_WITH_NOTES)
    (tmp_path / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "include_baseline": False,
                                                          "personas": [{"id": "p1"}, {"id": "p2"}]}))
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({
        "psyq": "study/1", "id": "notes_run", "instruments": ["notes.yaml"], "cohort": "cohort.yaml",
        "backends": [{"id": "stub", "kind": "openai", "base_url": "STUB_URL", "model": "stub-model"}],
        "protocol": {"seed": 1}}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src.parent), str(ROOT / "tests")])}
    done = subprocess.run([sys.executable, "-c", RUN_SCRIPT, str(tmp_path / "study.yaml"), str(tmp_path / "runs")],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    # 2 respondents × (1 rating item + 2 notes) = 6 trials; every note's reply kept whole as its
    # text (the stub echoes the prompt), the rating item read as the stub's "2".
    assert out["planned"] == 6 and out["counts"] == {"answered": 6}
    # The report carries the kind's own section: 2 respondents × 2 notes, all answered.
    assert out["notes"] == [["4 notes were answered."]]
    assert out["rows"] == [["a", "", 2.0]] * 2 + [["n1", "Written: Write about your day.", -1]] * 2 \
        + [["n2", "Written: Write about your week.", -1]] * 2


def test_without_the_kind_registered_its_items_are_refused_naming_the_registered_kinds(tmp_path):
    from psyq.engine.files.errors import InputError
    from psyq.engine.design.instrument import load_instrument

    (tmp_path / "notes.yaml").write_text(INSTRUMENT_WITH_NOTES)
    with pytest.raises(InputError) as info:
        load_instrument(tmp_path / "notes.yaml")
    message = str(info.value)
    assert "notes.yaml:13" in message and "'rating', 'scene', 'vignette'" in message and "'note'" in message


def test_kind_names_appear_only_in_their_kinds_and_the_registries():
    # The point of the plug-ins: what is particular to scenes and vignettes lives in their own
    # modules (the kind, its statistics, its report section), so their names appear nowhere else
    # in engine/ and analysis/ but in the two registries that list the built-in kinds.
    registries = {"engine/kinds/__init__.py", "analysis/report/sections/__init__.py"}
    statistics = {"scene": "analysis/statistics/lexicon_agreement.py",
                  "vignette": "analysis/statistics/empathic_accuracy.py"}
    for name in ("scene", "vignette"):
        files = sorted(str(p.relative_to(ROOT)) for package in ("engine", "analysis")
                       for p in (ROOT / package).rglob("*.py") if name in p.read_text())
        own = [f for f in files if f.startswith((f"engine/kinds/{name}", f"analysis/report/sections/{name}",
                                                 statistics[name]))]
        assert own, name     # the search finds the kind's own modules, so it does look
        assert set(files) - set(own) <= registries, (name, sorted(set(files) - set(own) - registries))


# The rooms of engine/, lowest first (engine/__init__.py lists them in this order): a room imports
# only rooms before it; analysis reads some of them, never administer; the command line (psyq.cli,
# the floor above both) imports any of them.
ROOMS = ["files", "backends", "store", "trials", "kinds", "design", "bundle", "results", "administer", "judging",
         "importers", "questionnaire", "view"]
ANALYSIS_READS = {"files", "store", "trials", "kinds", "design", "results", "judging"}


def _room(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] in (["psyq", "analysis"], ["psyq", "cli"]):
        return parts[1]
    return parts[2] if parts[:2] == ["psyq", "engine"] and len(parts) > 2 and parts[2] in ROOMS else None


def _upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports against the direction: a room importing a later room, analysis importing what it may not."""
    wrong = []
    for module, deps in graph.items():
        here = _room(module)
        for dep in deps:
            there = _room(dep)
            if here is None or there is None or here == there:
                continue
            if here == "cli":
                ok = True
            elif here == "analysis":
                ok = there in ANALYSIS_READS
            elif there in ("analysis", "cli"):
                ok = False
            else:
                ok = ROOMS.index(there) < ROOMS.index(here)
            if not ok:
                wrong.append((module, dep))
    return sorted(wrong)


def test_imports_point_one_way_down_the_rooms():
    graph = _graph()
    assert {_room(m) for m in graph} >= set(ROOMS) | {"analysis", "cli"}   # every room is seen
    assert _upward(graph) == []
    # The order is the one engine/__init__.py gives a reader.
    doc = (ROOT / "engine" / "__init__.py").read_text()
    assert [room for room in ROOMS] == sorted(ROOMS, key=lambda r: doc.index(f"``{r}/``"))


def test_the_direction_check_sees_an_upward_import():
    graph = {"psyq.engine.files.errors": {"psyq.engine.design.study"}, "psyq.analysis.report":
             {"psyq.engine.administer.run"}, "psyq.engine.design.study": {"psyq.engine.files.errors"}}
    assert _upward(graph) == [("psyq.analysis.report", "psyq.engine.administer.run"),
                              ("psyq.engine.files.errors", "psyq.engine.design.study")]


# --- backends are plug-ins too (engine/backends/registry.py) ----------------------------------

def test_no_branch_on_a_backend_kind_outside_the_backends():
    # What differs by backend kind is said by the backend class (needs_model, starts_server,
    # batch_client ...): a test of a kind's name anywhere else would be a kind the registry
    # does not describe.
    import re

    from psyq.engine.backends import backend_kinds

    names = "|".join(backend_kinds())
    branch = re.compile(rf"""kind\s*(?:==|!=)\s*["'](?:{names})["']|kind\s+(?:not\s+)?in\s+\(["'](?:{names})["']""")
    found = [f"{p.relative_to(ROOT)}:{n}" for package in ("engine", "analysis") for p in (ROOT / package).rglob("*.py")
             if not p.is_relative_to(ROOT / "engine" / "backends")
             for n, line in enumerate(p.read_text().splitlines(), 1) if branch.search(line)]
    assert found == []
    assert branch.search('if backend.kind == "local":') and branch.search("kind in ('openai', 'anthropic')")


def test_a_run_asks_its_backends_what_they_declare_and_probes_none():
    # The run reads what HttpBackend declares with a default (log_dir, pool, starts_server), so a
    # plug-in backend says what differs by overriding it; hasattr/getattr would guess instead.
    from psyq.engine.backends import BackendConfig, HttpBackend, make_backend

    askers = [ROOT / "engine" / "administer" / name
              for name in ("run.py", "record.py", "send.py", "send_trial.py", "tokenizer.py")]
    askers.append(ROOT / "engine" / "judging" / "answer_judge.py")
    probes = [f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}" for path in askers
              for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr")]
    assert probes == []
    assert (HttpBackend.log_dir, HttpBackend.pool, HttpBackend.starts_server) == (None, None, False)
    one = make_backend(BackendConfig(id="a", kind="openai", model="m", base_url="http://127.0.0.1:1/v1"))
    two = make_backend(BackendConfig(id="b", kind="openai", model="m",
                                     base_urls=["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]))
    local = make_backend(BackendConfig(id="c", kind="local"))
    assert one.pool is None and len(two.pool.endpoints) == 2
    assert (one.log_dir, local.log_dir, local.starts_server) == (None, None, True)


def test_a_backend_kind_is_checked_against_the_registry_and_the_message_lists_it(monkeypatch):
    from pydantic import ValidationError

    from psyq.engine.backends import BACKENDS, BackendConfig, OpenAIBackend

    class Echo(OpenAIBackend):
        kind = "echo"

    with pytest.raises(ValidationError, match="'openai', 'anthropic' or 'local'"):
        BackendConfig(id="e", kind="echo")
    monkeypatch.setattr(BACKENDS, "_plugins", dict(BACKENDS._plugins))   # registered for this test only
    BACKENDS.register(Echo)
    assert BackendConfig(id="e", kind="echo").kind == "echo"
    assert BackendConfig.model_json_schema()["properties"]["kind"]["enum"] == ["openai", "anthropic", "local", "echo"]
    with pytest.raises(ValidationError, match="'openai', 'anthropic', 'local' or 'echo'"):
        BackendConfig(id="e", kind="ollama")
