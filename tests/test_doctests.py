"""Every docstring example in psyq runs as written: the modules are discovered (every module of the
package whose source holds ``>>>``), not listed, so an example added anywhere is run here.

Examples run from the repository root, on files shipped with psyq or in tests/data; ``run_dir`` is a
run made over the stub server (tests/runs_helper.py). An example that cannot run here (it needs a
live server, a model, a run of another kind, a path of the user's) is marked ``# doctest: +SKIP``
and says why: a line "Not run: <why>" in its docstring, or a comment before the directive on the
example's own line (``>>> administer(study)   # sends requests  # doctest: +SKIP``)."""

from __future__ import annotations

import doctest
import importlib
import re
import warnings
from pathlib import Path

import pytest

from runs_helper import make_mini_run

ROOT = Path(__file__).resolve().parents[1]
NOT_PACKAGE = {".venv", "tests", "bench", "notebooks", "build", ".git", ".ci", "docs"}
# A reason on the example's line: a comment, then the directive.
REASON_ON_LINE = re.compile(r"#\s*[^#\s][^#]*#\s*doctest:")
REASON_IN_DOCSTRING = re.compile(r"^\s*not run:\s*\S", re.IGNORECASE | re.MULTILINE)


def module_name(path: Path) -> str:
    """The import name of a file of the package (the repository root is the package ``psyq``)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(("psyq", *parts)).removesuffix(".__init__")


def modules_with_examples(root: Path = ROOT) -> list[str]:
    """Every module of the package whose source holds a ``>>>`` example."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in NOT_PACKAGE or rel.name == "__main__.py" or rel.parts[0].startswith("."):
            continue
        if ">>>" in path.read_text(encoding="utf-8"):
            found.append(module_name(path))
    return found


MODULES = modules_with_examples()
# Their examples name psyq's shipped files by name only, so they run from any folder (psyq installed,
# no clone in sight): run again from an empty one.
BY_NAME = ["psyq.engine.files.shipped", "psyq.cli.starting", "psyq.engine.design.study",
           "psyq.engine.design.cohort_file", "psyq.engine.judging.answer_judge", "psyq.engine.trials.prompts",
           "psyq.engine.trials.scoring", "psyq.engine.kinds.response.rubrics", "psyq.engine.administer.record",
           "psyq.engine.kinds.vignette.accuracy", "psyq.engine.kinds.vignette.accuracy_csv",
           "psyq.analysis.statistics.invariance.against_people"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_mini_run(tmp_path_factory.mktemp("doctest"), n_personas=4, repeats=1)


def own_doctests(module) -> list[doctest.DocTest]:
    """The module's docstring examples (not those of names it imports from elsewhere)."""
    tests = doctest.DocTestFinder().find(module)
    source = Path(module.__file__).resolve()
    return [t for t in tests if t.filename and Path(t.filename).resolve() == source and t.examples]


def unexplained_skips(module) -> list[str]:
    """The docstrings with a skipped example that say nowhere why it is not run."""
    return [f"{t.name}:{(t.lineno or 0) + e.lineno + 1}: {e.source.strip()}"
            for t in own_doctests(module) for e in t.examples
            if e.options.get(doctest.SKIP) and not REASON_IN_DOCSTRING.search(t.docstring or "")
            and not REASON_ON_LINE.search(e.source)]


def test_discovery_finds_the_modules_the_package_has():
    # The modules named in the package's own docs as having examples are among those found, and a
    # module without examples is not.
    assert {"psyq.analysis", "psyq.engine.registry", "psyq.analysis.statistics.norms",
            "psyq.analysis.statistics.invariance.sequence"} <= set(MODULES)
    assert len(MODULES) > 100
    assert "psyq.cli.__main__" not in MODULES and not any(m.startswith("psyq.tests") for m in MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, run_dir, monkeypatch):
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # notices such as "the codebook beside the CSV was read"
        result = doctest.testmod(module, extraglobs={"run_dir": run_dir}, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert unexplained_skips(module) == []


@pytest.mark.parametrize("name", BY_NAME)
def test_examples_by_name_run_from_an_empty_folder(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_an_unexplained_skip_is_found(tmp_path, monkeypatch):
    # The check itself: a planted module with one explained and one unexplained skip.
    (tmp_path / "planted_examples.py").write_text(
        'def a():\n    """Not run: needs a server.\n\n    >>> a()  # doctest: +SKIP\n    """\n\n\n'
        'def b():\n    """>>> b()   # doctest: +SKIP\n    """\n\n\n'
        'def c():\n    """>>> c()   # sends requests  # doctest: +SKIP\n    """\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("planted_examples")
    assert [s.split(":")[0] for s in unexplained_skips(module)] == ["planted_examples.b"]
