"""No module of analysis/, engine/ or cli/ runs past 600 lines unless it says why (issue 53).

A long module is usually two concerns sharing a file, each with its own readers: split it. Where it
truly is one concern, its module docstring says so in a sentence starting "One concern:" and why
(e.g. analysis/statistics/standin/fidelity.py). The check is run on planted sources first, so it
cannot pass by finding nothing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("analysis", "engine", "cli")
LIMIT = 600
ONE_CONCERN = re.compile(r"(?:\A|[.!?]\s+|\n\s*)One concern:\s*\S")


def says_one_concern(source: str) -> bool:
    """Whether the module docstring of `source` has a sentence starting "One concern:"."""
    doc = ast.get_docstring(ast.parse(source))
    return bool(doc and ONE_CONCERN.search(doc))


def long_modules(root: Path = ROOT, limit: int = LIMIT) -> list[str]:
    """The modules of analysis/, engine/ and cli/ under `root` over `limit` lines that do not say in
    their docstring why they are one concern, as "path (N lines)"."""
    found = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            lines = len(source.splitlines())
            if lines > limit and not says_one_concern(source):
                found.append(f"{path.relative_to(root)} ({lines} lines)")
    return found


def planted(docstring: str, lines: int) -> str:
    return f'"""{docstring}"""\n' + "x = 1\n" * (lines - 1)


def test_the_check_finds_a_planted_long_module(tmp_path):
    folder = tmp_path / "analysis" / "statistics"
    folder.mkdir(parents=True)
    (folder / "long.py").write_text(planted("Two things in one file.", LIMIT + 1))
    (folder / "exactly.py").write_text(planted("Two things in one file.", LIMIT))
    (folder / "said.py").write_text(planted("A model and its fit.\n\nOne concern: every part reads the "
                                            "others' internals.", LIMIT + 1))
    (folder / "inline.py").write_text(planted("It quotes the memo One concern: fits, and does two things.",
                                               LIMIT + 1))
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "long.py").write_text(planted("No reason given.", LIMIT + 50))
    assert long_modules(tmp_path) == [f"analysis/statistics/inline.py ({LIMIT + 1} lines)",
                                      f"analysis/statistics/long.py ({LIMIT + 1} lines)",
                                      f"engine/long.py ({LIMIT + 50} lines)"]


def test_no_module_runs_past_600_lines_without_saying_why():
    offenders = long_modules()
    assert not offenders, (f"modules over {LIMIT} lines: split each by concern, or say in its module docstring, in a "
                           f"sentence starting \"One concern:\", why it is one: " + "; ".join(offenders))
