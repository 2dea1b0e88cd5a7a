"""The statistics room keeps its docstring promise (analysis/statistics/__init__.py, issue 41).

Every module under analysis/statistics (found with pathlib, not listed) says in its module docstring
what it is checked against: a paragraph starting "Checked" (or, plainly, "Not checked") that names
at least one tests/test_*.py file that exists. And every docstring of the room is numpydoc: section
headers underlined with dashes, never "Example:" with an indented block. The checks are run on
planted module sources first, so they cannot pass by finding nothing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STATISTICS = ROOT / "analysis" / "statistics"
CHECK_PARAGRAPH = re.compile(r"^(Checked|Not checked)\b")
TEST_FILE = re.compile(r"tests/(test_\w+\.py)")
NON_NUMPYDOC = re.compile(r"^\s*(Example|Examples|Parameters|Returns):\s*$", re.MULTILINE)


def statistics_modules() -> list[Path]:
    return sorted(STATISTICS.rglob("*.py"))


def check_problems(source: str, tests: Path = ROOT / "tests") -> list[str]:
    """Why a module's docstring does not say what it is checked against ([] when it does)."""
    doc = ast.get_docstring(ast.parse(source))
    if not doc:
        return ["no module docstring"]
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", doc)]
    checked = [p for p in paragraphs if CHECK_PARAGRAPH.match(p)]
    if not checked:
        return ['no paragraph starting "Checked" or "Not checked"']
    named = {name for p in checked for name in TEST_FILE.findall(p)}
    if not named:
        return ["the check paragraph names no tests/test_*.py file"]
    missing = sorted(n for n in named if not (tests / n).is_file())
    existing = named - set(missing)
    return [f"names tests/{n}, which does not exist" for n in missing] + (
        [] if existing else ["no named test file exists"])


def style_problems(source: str) -> list[str]:
    """Every docstring (module, class, function) with a non-numpydoc section header."""
    tree = ast.parse(source)
    nodes = [tree, *(n for n in ast.walk(tree)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]
    found = []
    for node in nodes:
        doc = ast.get_docstring(node, clean=False)
        for match in NON_NUMPYDOC.finditer(doc or ""):
            found.append(f"{getattr(node, 'name', '<module>')}: {match.group(0).strip()!r}")
    return found


GOOD = '''"""A planted statistic.

Checked in tests/test_statistics_docs.py against a hand computation.

Example
-------
>>> 1 + 1
2
"""
'''


def test_the_checks_are_not_vacuous():
    assert len(statistics_modules()) > 30     # the room, subpackages included
    assert {"invariance", "norms"} <= {p.parent.name for p in statistics_modules()}
    assert check_problems(GOOD) == [] and style_problems(GOOD) == []
    # no paragraph at all; one that names no test; one that names a test that does not exist
    assert check_problems(GOOD.replace("Checked in", "Compared in"))
    assert check_problems(GOOD.replace("tests/test_statistics_docs.py", "a test"))
    assert check_problems(GOOD.replace("test_statistics_docs.py", "test_no_such_file.py"))
    assert check_problems('"""No check."""\n') and check_problems("x = 1\n")
    # "Checked" must start a paragraph, not sit in the middle of one
    assert check_problems(GOOD.replace("\n\nChecked in", " Checked in"))
    assert check_problems(GOOD.replace("Checked", "Not checked against an independent computation:")) == []
    # the old style, in a module docstring and in a function's, is found
    old = GOOD.replace("Example\n-------\n>>> 1 + 1\n2", "Example:\n    >>> 1 + 1\n    2")
    assert style_problems(old) == ["<module>: 'Example:'"]
    function = 'def f():\n    """Do.\n\n    Returns:\n        nothing\n    """\n'
    assert style_problems(function) == ["f: 'Returns:'"]


@pytest.mark.parametrize("path", statistics_modules(), ids=lambda p: str(p.relative_to(STATISTICS)))
def test_every_module_names_its_independent_check(path):
    assert check_problems(path.read_text(encoding="utf-8")) == [], path


@pytest.mark.parametrize("path", statistics_modules(), ids=lambda p: str(p.relative_to(STATISTICS)))
def test_docstrings_use_numpydoc_sections(path):
    assert style_problems(path.read_text(encoding="utf-8")) == [], path
