"""A command line that answers at once (issue 42): the commands people type many times a day do not
import the statistics stack, and ``import psyq`` imports the API's names only when they are used.

Each command runs in a fresh interpreter (``python -c``, the psyq script's own code) that prints the
top-level packages it imported; nothing here times anything (bench/startup.py measures).

Which packages are heavy was measured (``python -X importtime``, bench/startup.py): the statistics
(scipy.stats, statsmodels, pingouin, matplotlib, scikit-learn: about 1.5 s and 200 MB together) are
needed by no light command. pandas and numpy (about 0.5 s) and the network stack (aiohttp, httpx and
the rich it imports: about 0.4 s) are not needed by ``--version``, ``--help``, ``status`` or
``runs``. ``list`` and ``plan`` load instruments: their item kinds import pandas only where they
score, and their trials import a backend only where a request is built, so neither command imports
pandas, and ``list`` none of the network stack; ``list`` imports numpy to draw the shipped sampled
cohorts (it shows how many personas each holds). ``plan`` builds its backends' requests: a backend
kind is registered by the module that defines it and imported when a study uses it (so a plan
loads only its own backends' modules; aiohttp is imported when a backend opens its session, which a
plan never does, nor a report), the token counter imports httpx
to ask a server for its tokenizer, and the runner numpy. The viewer computes latency quantiles
with numpy, so it may import numpy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runs_helper import make_mini_run

ROOT = Path(__file__).resolve().parents[1]

# The statistics' stack: no light command may import any of these.
STATISTICS = {"scipy", "statsmodels", "pingouin", "matplotlib", "sklearn", "seaborn", "semopy", "factor_analyzer",
              "krippendorff", "patsy", "xarray"}
# The data and network stack: not even imported by the lightest commands.
DATA = {"pandas", "numpy", "pyarrow", "aiohttp", "httpx", "rich"}
# What of it a light command may import, and why (the module docstring).
MAY_IMPORT = {"--version": set(), "--help": set(), "status": set(), "runs": set(),
              "list": {"numpy"},                                  # drawing the sampled cohorts it lists
              "plan": {"numpy", "httpx", "rich"}}      # the runner; the tokenizer's client (aiohttp: only to send)

# Runs the psyq command as its script does, standard output swallowed; prints the packages imported.
COMMAND = """
import contextlib, io, json, sys
from psyq.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as end:          # --version and --help end in argparse
        code = end.code
print(json.dumps({"code": code, "packages": sorted({m.split(".")[0] for m in sys.modules}),
                  "modules": sorted(m for m in sys.modules if m.startswith("psyq."))}))
"""

# psyq view: the server answers the runs page and a run's page, then the command returns.
VIEW = """
import contextlib, io, json, sys, threading, time, urllib.request
from psyq.engine.view.server import ViewServer
serve = ViewServer.run

def run_and_look(self):
    threading.Thread(target=serve, args=(self,), daemon=True).start()
    for page in ("/", "/run/" + sys.argv[2] + "/"):
        for _ in range(300):
            try:
                urllib.request.urlopen(self.url.rstrip("/") + page, timeout=60).read()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise SystemExit("the viewer did not answer " + page)

ViewServer.run = run_and_look
from psyq.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["view", sys.argv[1]])
print(json.dumps({"code": code, "packages": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def probe(code: str, *args: str, cwd: Path = ROOT) -> dict:
    """What a fresh interpreter printed after running `code` with `args` (its exit code checked)."""
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result.get("code", 0) == 0, done.stderr
    return result


def imported(code: str, *args: str, cwd: Path = ROOT) -> set[str]:
    """The top-level packages a fresh interpreter has imported after running `code` with `args`."""
    return set(probe(code, *args, cwd=cwd)["packages"])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_mini_run(tmp_path_factory.mktemp("startup"), n_personas=2, repeats=1)


def light_commands(run_dir: Path) -> dict[str, list[str]]:
    folder = run_dir.parents[2]     # make_mini_run: FOLDER/study.yaml, FOLDER/runs/STUDY/RUN_ID
    return {"--version": ["--version"], "--help": ["--help"], "status": ["status", str(run_dir)],
            "runs": ["runs", str(folder / "runs")], "list": ["list"],
            "plan": ["plan", str(folder / "study.yaml"), "--runs-dir", str(folder / "runs")]}


@pytest.mark.parametrize("name", ["--version", "--help", "status", "runs", "list", "plan"])
def test_a_light_command_does_not_import_the_statistics(name, run_dir):
    packages = imported(COMMAND, *light_commands(run_dir)[name])
    assert "psyq" in packages                               # the probe does see psyq's own imports
    assert sorted(packages & STATISTICS) == [], name
    assert sorted(packages & DATA - MAY_IMPORT[name]) == [], name


def test_a_plan_imports_only_the_backends_its_study_uses(run_dir):
    # The mini study has one OpenAI-compatible backend: the local and Anthropic backends' modules
    # (and the local one's httpx, which the token counter imports anyway) are not loaded.
    modules = set(probe(COMMAND, *light_commands(run_dir)["plan"])["modules"])
    assert "psyq.engine.backends.openai" in modules
    assert sorted(modules & {"psyq.engine.backends.local", "psyq.engine.backends.anthropic"}) == []


def test_a_report_sends_nothing_so_imports_no_http_client(run_dir, tmp_path):
    """A report reads a run (its judgements and perturbation log through the modules that wrote them):
    aiohttp is imported where a backend opens its session, not where the backends are defined."""
    result = probe(COMMAND, "report", str(run_dir), "--out", str(tmp_path))
    assert result["code"] == 0 and "psyq.engine.backends.base" in result["modules"]
    assert "aiohttp" not in result["packages"]


def test_the_viewer_serves_without_the_statistics(run_dir):
    runs = run_dir.parents[1]
    packages = imported(VIEW, str(runs), run_dir.relative_to(runs).as_posix())
    assert {"uvicorn", "starlette"} <= packages             # it did serve
    assert sorted(packages & (STATISTICS | {"pandas"})) == []


def test_import_psyq_imports_no_name_until_it_is_used():
    packages = imported("import json, sys, psyq; print(json.dumps({'packages': sorted(sys.modules)}))")
    assert sorted({p.split(".")[0] for p in packages} & (STATISTICS | DATA)) == []
    assert "psyq.analysis" not in packages and "psyq.engine.design.study" not in packages
    # A name imports its own module only: loading a study does not import the statistics.
    packages = imported("import json, sys, psyq; psyq.load_study\n"
                        "print(json.dumps({'packages': sorted({m.split('.')[0] for m in sys.modules})}))")
    assert sorted(packages & STATISTICS) == []


def test_the_probe_sees_the_statistics_when_they_are_imported():
    # The check itself: a command run after importing the statistics is seen to have them.
    packages = imported("import psyq.analysis.statistics.human_comparison\n" + COMMAND, "--version")
    assert {"scipy", "pingouin"} <= packages & STATISTICS


@pytest.mark.parametrize("package", ["psyq", "psyq.analysis", "psyq.analysis.report"])
def test_every_public_name_resolves_and_dir_lists_it(package):
    import importlib

    module = importlib.import_module(package)
    assert set(dir(module)) >= set(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    # Each name is the object its module defines (not a stand-in), and stays in the package once used.
    assert module.__all__ and all(name in vars(module) for name in module.__all__)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        getattr(module, "not_a_name")


def test_the_lazy_tables_are_the_public_names():
    import psyq
    import psyq.analysis
    import psyq.analysis.report

    for module in (psyq, psyq.analysis, psyq.analysis.report):
        names = {name for names in module._EXPORTS.values() for name in names}
        assert names == set(module.__all__) - {"__version__"}, module.__name__
    # from-imports and the names' identity are as before (the same function object everywhere).
    from psyq import compare_with_norms, load_study
    from psyq.analysis.statistics.norms import compare_with_norms as defined
    from psyq.engine.design.study import load_study as load_study_defined

    assert compare_with_norms is defined is psyq.analysis.compare_with_norms
    assert load_study is load_study_defined
    assert psyq.analysis.report.methods_text.__module__ == "psyq.analysis.report.methods"
