"""The house a newcomer walks (issue 26): rooms that read as the flow, one import name, no shims."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_engine_is_rooms_not_a_flat_listing():
    flat = sorted(p.name for p in (ROOT / "engine").glob("*.py"))
    assert len(flat) <= 12, flat
    modules = [p for top in ("engine", "analysis") for p in (ROOT / top).rglob("*.py")]
    assert not [p for p in modules if re.search(r"\d$", p.stem)]            # no rubric2.py
    cli = {p.name: len(p.read_text().splitlines()) for p in (ROOT / "cli").glob("*.py")}
    assert max(cli.values()) <= 400, cli
    for package in [p.parent for top in ("engine", "analysis") for p in (ROOT / top).rglob("__init__.py")]:
        init = (package / "__init__.py").read_text()
        assert init.lstrip().startswith('"""'), f"{package}: its __init__ says what lives there"


def test_no_module_is_kept_for_an_old_import_path():
    said = [str(p.relative_to(ROOT)) for top in ("engine", "analysis") for p in (ROOT / top).rglob("*.py")
            if re.search(r"old (import )?(path|name)", p.read_text())]
    assert said == []


def test_pyproject_lists_every_package_folder():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {"psyq": "."}
    folders = {"psyq." + ".".join(p.parent.relative_to(ROOT).parts)
               for top in ("engine", "analysis", "cli") for p in (ROOT / top).rglob("__init__.py")}
    assert set(config["packages"]) == folders | {"psyq"}


def test_psyq_imports_from_a_notebook_folder_with_its_own_analysis_py(tmp_path):
    # A psychologist's folder: its own analysis.py and engine.py must not shadow psyq's API.
    (tmp_path / "analysis.py").write_text("compare_with_norms = 'mine'\n")
    (tmp_path / "engine.py").write_text("administer = 'mine'\n")
    code = ("import psyq, analysis, engine\n"
            "from psyq.analysis import compare_with_norms\n"
            "assert callable(psyq.compare_with_norms) and psyq.compare_with_norms is compare_with_norms\n"
            "assert callable(psyq.administer) and callable(psyq.load_study)\n"
            "assert analysis.compare_with_norms == 'mine' and engine.administer == 'mine'\n"
            "print(psyq.__version__)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0.1.0"


def test_the_generic_names_are_not_installed(tmp_path):
    # Outside the checkout `engine` and `analysis` are not psyq's: installing psyq claims only `psyq`.
    for name in ("engine", "analysis"):
        done = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr, name


def test_python_m_psyq_runs_the_command(tmp_path):
    # `python -m psyq` is the psyq command (the root __main__.py), from any folder.
    from psyq.engine import __version__

    done = subprocess.run([sys.executable, "-m", "psyq", "--version"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"psyq {__version__}"


def test_import_psyq_shows_the_whole_method_each_with_an_example():
    import inspect
    import sys

    import psyq

    method = ["load_study", "administer", "load_run_scores", "human_data", "compare_with_norms",
              "compare_with_humans", "measurement_invariance", "graded_response_model",
              "differential_item_functioning", "twin_agreement", "twin_weights", "build_sections", "write_report"]
    assert set(method) <= set(psyq.__all__), sorted(set(method) - set(psyq.__all__))
    for name in method:
        function = getattr(psyq, name)
        # The example is in the function's docstring, or in its module's (where one example shows
        # several functions at work, e.g. the invariance sequence).
        docs = (inspect.getdoc(function) or "") + (sys.modules[function.__module__].__doc__ or "")
        assert ">>>" in docs, name


def test_every_path_contributing_names_exists():
    import re

    text = (ROOT / "CONTRIBUTING.md").read_text()
    tops = ("engine/", "analysis/", "cli/", "tests/", "docs/", "instruments/", "personas/", "studies/", "bench/",
            "notebooks/", ".ci/")
    named = {m for m in re.findall(r"`([^`\s]+)`", text) + re.findall(r"\]\(([^)\s#]+)", text)
             if m.startswith(tops) and not re.search(r"[<>*{}]", m)}
    # Paths relative to a room, as the recipes write them after naming it (`anthropic.py` of engine/backends/)
    # are not checked; every path from the root is.
    assert len(named) > 40, sorted(named)          # the recipes do name files: the search finds them
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, missing
    # and the map names every room: each package folder of the engine and the analysis, and the command line
    rooms = {f"{p.parent.relative_to(ROOT).as_posix()}/" for top in ("engine", "analysis") for p in (ROOT / top).glob("*/__init__.py")}
    rooms |= {"cli/", "analysis/statistics/standin/"}
    assert len(rooms) > 15 and not sorted(r for r in rooms if f"`{r}`" not in text), sorted(r for r in rooms if f"`{r}`" not in text)


def _private_imports(root: Path) -> list[str]:
    """Every `from psyq.x import _name` and `module._name` (module imported from psyq) in psyq's own
    modules: a name with a leading underscore belongs to its module."""
    import ast
    found = []
    package = [p for p in root.rglob("*.py")
               if p.relative_to(root).parts[0] not in (".venv", "tests", "bench", "notebooks", "build", ".git")]
    for path in package:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("psyq"):
                for alias in node.names:
                    modules.add(alias.asname or alias.name)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(root)}:{node.lineno}: {node.module}.{alias.name}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_reaches_into_another_modules_private_names(tmp_path):
    assert _private_imports(ROOT) == []
    # The check sees both forms (a planted module, so that it cannot pass by finding nothing).
    (tmp_path / "a.py").write_text("from psyq.analysis.statistics.validity import _hidden\n"
                                   "from psyq.analysis.statistics import validity\nvalidity._other()\n")
    assert len(_private_imports(tmp_path)) == 2
