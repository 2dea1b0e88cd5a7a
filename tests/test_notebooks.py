"""The notebooks run top to bottom on runs of the shipped studies.

A module-scoped fixture administers studies/iri_adults.yaml and studies/iri_hand_written.yaml into
a temporary runs folder, each with its instrument, cohort and protocol unchanged (answers read
from the answer token's probabilities) but its local backend replaced by the stub server
(tests/stub_server.py), which answers as OpenAI documents logprobs: a next-token distribution over
the option letters, drawn per persona and item and the same for both repeats. The notebooks
analyse a run; what the real local model answers, and that it answers the same twice, is tested
in tests/test_local_backend.py and tests/test_local_determinism.py, and the shipped notebooks
carry the outputs of full runs of these studies on the local model (notebooks/save_outputs.py;
a test checks that every code cell has one). The stub keeps these tests off the local model's
server, which runs alone (tests/conftest.py), and makes their answers the same on every machine.

Each notebook is executed in memory with nbclient on a python3 kernel of this interpreter, the
run folders given through PSYQ_RUN / PSYQ_RUN_A / PSYQ_RUN_B, their shipped outputs cleared
first. The executed copies are never written back.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from psyq import administer, load_study  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
STUDIES = {"adults": ROOT / "studies" / "iri_adults.yaml",
           "hand_written": ROOT / "studies" / "iri_hand_written.yaml"}
CELL_TIMEOUT_S = 600
LETTERS = ("A", "B", "C", "D", "E")       # the IRI's option codes, as the prompt lists them


def next_token(body: dict) -> list[tuple[str, float]]:
    """The stub's next-token distribution for a request: weights over the option letters drawn
    from the whole conversation (persona and item: both repeats get the same), and a little mass
    on a token that is no option, as a small model leaves. Most probable first."""
    import hashlib
    import random

    digest = hashlib.sha256(json.dumps(body["messages"]).encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    weights = [rng.gammavariate(1.0, 1.0) for _ in LETTERS]
    total = sum(weights) / 0.95
    pairs = [(letter, w / total) for letter, w in zip(LETTERS, weights)] + [(" The", 0.05)]
    return sorted(pairs, key=lambda pair: -pair[1])


def on_stub(study_file: Path, folder: Path, url: str) -> Path:
    """A copy of the shipped study whose one local backend is the stub server; its instrument
    and cohort stay shipped names (found from any folder), its protocol unchanged."""
    import yaml

    data = yaml.safe_load(study_file.read_text(encoding="utf-8"))
    local, = data["backends"]
    assert local["kind"] == "local"
    data["backends"] = [{"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model",
                         "temperature": local["temperature"], "concurrency": 16}]
    copy = folder / study_file.name
    copy.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return copy


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Both studies administered through the stub server; run folders by key."""
    from stub_server import StubServer

    tmp_runs = tmp_path_factory.mktemp("runs")
    out = {}
    with StubServer(distribution=next_token) as stub:
        for key, study_file in STUDIES.items():
            shipped = load_study(study_file)
            study = load_study(on_stub(study_file, tmp_path_factory.mktemp(key), stub.url))
            assert (study.instruments, study.cohort, study.protocol) == (shipped.instruments, shipped.cohort,
                                                                         shipped.protocol)
            result = asyncio.run(administer(study, tmp_runs, log=lambda m: None))
            assert not result.interrupted
            assert result.counts.get("answered", 0) > 0.9 * result.planned
            out[key] = result.run_dir.path
    return out


def execute(name: str, env: dict[str, str], monkeypatch, probe: str | None = None):
    """Run notebook `name` top to bottom in a fresh kernel (environment `env`), in an empty folder
    outside the clone: the notebooks name psyq's shipped files by name, never by a path into it.

    Returns the executed notebook (in memory only) and, when `probe` is given, the stdout of that
    code run afterwards in the same kernel.
    """
    for key, value in env.items():
        monkeypatch.setenv(key, value)   # the kernel inherits this process's environment
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None    # run from scratch, not on the saved outputs
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT_S,
                                     resources={"metadata": {"path": tempfile.mkdtemp(prefix="notebook-")}})
    probed = None
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)       # raises CellExecutionError on any error
        if probe is not None:
            nb.cells.append(nbformat.v4.new_code_cell(probe))   # nbclient writes the cell back by index
            cell = client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
            probed = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
            nb.cells.pop()
    return nb, probed


def errors(nb) -> list[str]:
    return [f"cell {i}: {o.get('ename')}: {o.get('evalue')}" for i, c in enumerate(nb.cells)
            if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]


def n_images(nb) -> int:
    return sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", []))


@pytest.mark.slow
def test_01_analyse_a_run(runs, monkeypatch):
    run = runs["adults"]
    for stale in ("report.html", "report.md"):
        (run / stale).unlink(missing_ok=True)
    probe = ("import json; print(json.dumps({'run': str(RUN), 'norm_rows': len(comparison), "
             "'readings': sum(bool(r) for r in norm_readings(comparison, bound=0.3)), "
             "'groups': sorted(comparison['norm_group'].unique()), "
             "'icc_types': sorted(icc['type'].unique()), 'icc_rows': len(icc), "
             "'reliability_subscales': sorted(reliability_table(items, instruments)['subscale']), "
             "'diagnostics': sorted(diagnostics), 'report': str(html_path)}))")
    nb, out = execute("01_analyse_a_run.ipynb", {"PSYQ_RUN": str(run)}, monkeypatch, probe)
    assert not errors(nb)
    facts = json.loads(out)
    assert Path(facts["run"]) == run
    assert facts["norm_rows"] >= 4 and facts["readings"] == facts["norm_rows"]
    assert {"women", "men"} & set(facts["groups"])
    assert facts["icc_types"] == ["ICC2", "ICC3"] and facts["icc_rows"] == 8   # 4 subscales × 2
    assert facts["reliability_subscales"] == ["EC", "FS", "PD", "PT"]
    assert {"sd_ratio", "missingness", "option_order_effect", "answer_entropy"} <= set(facts["diagnostics"])
    report = Path(facts["report"])
    assert report == run / "report.html" and report.stat().st_size > 10_000
    assert "<img" in report.read_text(encoding="utf-8") and (run / "report.md").exists()
    assert n_images(nb) >= 6   # profile, four distributions, SD ratios


@pytest.mark.slow
def test_02_compare_models(runs, monkeypatch):
    probe = ("import json; print(json.dumps({'scores': sorted(combined['source'].unique()), "
             "'norms': sorted(norm_table['source'].unique()), 'ratios': sorted(ratios['source'].unique()), "
             "'test_subscales': cohort_test['subscale'].tolist(), "
             "'n_A': cohort_test['n_A'].tolist(), 'n_B': cohort_test['n_B'].tolist(), "
             "'g_finite': int(cohort_test['g'].notna().sum())}))")
    env = {"PSYQ_RUN_A": str(runs["adults"]), "PSYQ_RUN_B": str(runs["hand_written"])}
    nb, out = execute("02_compare_models.ipynb", env, monkeypatch, probe)
    assert not errors(nb)
    facts = json.loads(out)
    both = ["iri_adults", "iri_hand_written"]
    assert facts["scores"] == both and facts["norms"] == both and facts["ratios"] == both
    assert facts["test_subscales"] == ["PT", "FS", "EC", "PD"]
    # one row per persona, repeats averaged: A's 12 adults (its baseline left out), B's 6 personas
    assert facts["n_A"] == [12] * 4 and facts["n_B"] == [6] * 4
    assert facts["g_finite"] >= 1
    assert n_images(nb) >= 3   # a profile per run, the SD-ratio chart


# Absolute paths a saved output must not show: a reader's machine has none of them.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:root|home|tmp|work|usr|opt|var|Users)/|site-packages|[A-Z]:\\")


def test_notebooks_ship_with_outputs():
    """Every code cell of every shipped notebook carries the output of one top-to-bottom run
    (notebooks/save_outputs.py): none is empty, none is an error, counts run 1, 2, 3, … and no output
    names a folder of the machine that made it."""
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert [p.name for p in paths] == ["01_analyse_a_run.ipynb", "02_compare_models.ipynb",
                                       "03_same_construct.ipynb", "04_compare_conditions.ipynb"]
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert not [i for i, c in enumerate(code) if not c.get("outputs")], f"{path.name}: code cells without output"
        assert not errors(nb), f"{path.name}: {errors(nb)}"
        assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), f"{path.name}: not run top to bottom"
        text = "\n".join(str(o.get("text", "")) + "".join(str(v) for k, v in o.get("data", {}).items()
                                                         if not k.startswith("image/"))
                         for c in code for o in c.outputs)
        assert not MACHINE_PATH.findall(text), f"{path.name}: outputs name {set(MACHINE_PATH.findall(text))}"
        assert os.path.getsize(path) < 1_500_000


@pytest.fixture(scope="module")
def construct_run(tmp_path_factory) -> Path:
    """60 sampled personas answering the IRI through the stub server as simulated respondents
    (tests/test_same_construct.py): enough for both parts of notebook 03, in seconds."""
    import yaml
    from stub_server import StubServer
    from test_same_construct import simulated_respondent

    tmp = tmp_path_factory.mktemp("construct_nb")
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({
        "psyq": "cohort/1", "id": "sampled", "include_baseline": False,
        "sample": {"size": 60, "seed": 3, "id_prefix": "p", "attributes": {"age": {"range": [18, 80]},
                                                         "height_cm": {"range": [150, 200]}}}}))
    with StubServer(answer=simulated_respondent) as stub:
        (tmp / "study.yaml").write_text(yaml.safe_dump({
            "psyq": "study/1", "id": "construct_nb", "instruments": [str(ROOT / "instruments" / "iri.yaml")],
            "cohort": "cohort.yaml",
            "backends": [{"id": "stub", "kind": "openai", "base_url": stub.url, "model": "stub-model", "concurrency": 16}],
            "protocol": {"answer": "text", "option_order": "as_written", "seed": 2}}))
        result = asyncio.run(administer(load_study(tmp / "study.yaml"), tmp / "runs", log=lambda m: None))
    return result.run_dir.path


@pytest.mark.slow
def test_03_same_construct(construct_run, monkeypatch):
    probe = ("import json; print(json.dumps({'gender_steps': by_gender['step'].tolist(), "
             "'ordinal_steps': ordinal['step'].tolist(), 'ordinal_means': len(ordinal.attrs['latent_means']), "
             "'gender_estimable': bool(by_gender['estimable'].all()), 'grm_rows': len(grm), "
             "'dif_items': len(dif), 'dif_estimable': int(dif['estimable'].sum()), 'section_tables': [c.split(':')[0].split(',')[0] for c, _ in section.tables], "
             "'readings': len(section.readings), 'card_groups': sorted(set(card['group'])), "
             "'card_criteria': sorted(set(card['criterion'])), 'card_marks': sorted(set(card['mark']))}))")
    nb, out = execute("03_same_construct.ipynb", {"PSYQ_RUN": str(construct_run)}, monkeypatch, probe)
    assert not errors(nb)
    facts = json.loads(out)
    # Part 1: women and men of the Briganti file, every step fitted; 28 items × 2 genders; 28 DIF rows.
    assert facts["gender_steps"] == ["configural", "metric", "scalar"] and facts["gender_estimable"]
    assert facts["grm_rows"] == 56 and facts["dif_items"] == facts["dif_estimable"] == 28
    # The same people as ordinal answers (WLSMV): Wu & Estabrook's four steps, the men's four latent means.
    assert facts["ordinal_steps"] == ["configural", "thresholds", "metric", "scalar"] and facts["ordinal_means"] == 4
    # Part 2: the report's section on the run against the people: invariance (and the latent means when
    # scalar invariance holds at least partly), GRM and DIF tables.
    tables = facts["section_tables"]
    assert tables in (["Measurement invariance", "Latent means", "Graded response model per subscale",
                       "Differential item functioning"],
                      ["Measurement invariance", "Graded response model per subscale", "Differential item functioning"])
    assert n_images(nb) >= 2     # information curves: women and men; personas and people
    # Part 3: the scorecard, the report's opening table, for the run's one backend (no twins: no
    # individuals or worth rows); every mark one of the four.
    assert facts["card_groups"] == ["stub"]
    assert facts["card_criteria"] == sorted(["level", "spread", "reliability", "structure", "latent_mean",
                                             "distinguishable", "style", "relations"])
    assert set(facts["card_marks"]) <= {"meets", "falls short", "inconclusive", "not estimable"}


def written(body: dict) -> str:
    """The option a written answer (answer: text) gives: the stub's most probable letter for the request."""
    return next(token for token, _ in next_token(body) if token in LETTERS)


@pytest.fixture(scope="module")
def conditions_nb_run(tmp_path_factory) -> Path:
    """The shipped study notebook 04 reads (6 sampled personas × the IRI × asking {logprobs, ssr} × two
    persona templates), its local backend replaced by the stub server, which answers log
    probabilities as OpenAI documents them and a letter in text, and its answers in their own words
    embedded by the stub's /v1/embeddings, in OpenAI's shapes (the local embedding model the study
    names is checked against sentence-transformers in tests/test_local_embeddings.py)."""
    import yaml

    from stub_server import StubServer

    folder = tmp_path_factory.mktemp("conditions_nb")
    with StubServer(answer=written, distribution=next_token) as stub:
        copy = on_stub(load_study("compare_conditions").path, folder, stub.url)
        data = yaml.safe_load(copy.read_text(encoding="utf-8"))
        assert data["protocol"]["ssr"]["embeddings"] == {"kind": "local"}
        data["protocol"]["ssr"]["embeddings"] = {"kind": "openai", "base_url": stub.url, "model": "stub-embedding"}
        copy.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        study = load_study(copy)
        assert [c.id for c in study.conditions] == ["asking=logprobs,persona=profile",
                                                    "asking=logprobs,persona=first_person",
                                                    "asking=ssr,persona=profile",
                                                    "asking=ssr,persona=first_person"]
        result = asyncio.run(administer(study, folder / "runs", log=lambda m: None))
    assert result.counts == {"answered": 4 * 6 * 28}
    return result.run_dir.path


@pytest.mark.slow
def test_04_compare_conditions(conditions_nb_run, monkeypatch):
    probe = ("import json; print(json.dumps({'conditions': sorted(personas['condition'].unique()), "
             "'per_condition': personas.groupby('condition').size().tolist(), "
             "'pairs': len(comparison[['condition_a', 'condition_b']].drop_duplicates()), "
             "'criteria': comparison['criterion'].unique().tolist(), 'ranked': len(ranks), "
             "'distances': len(distances), 'verdict': [r for r in verdict.readings if 'most people-like' in r]}))")
    nb, out = execute("04_compare_conditions.ipynb", {"PSYQ_RUN": str(conditions_nb_run)}, monkeypatch, probe)
    assert not errors(nb)
    facts = json.loads(out)
    assert facts["conditions"] == sorted(["asking=logprobs,persona=profile", "asking=logprobs,persona=first_person",
                                          "asking=ssr,persona=profile", "asking=ssr,persona=first_person"])
    assert facts["per_condition"] == [6] * 4 and facts["pairs"] == 6
    assert facts["criteria"][:2] == ["level", "spread"] and {"tvd", "w1"} <= set(facts["criteria"])
    assert facts["ranked"] == 4 * len(facts["criteria"]) and facts["distances"] == 4 * 28
    # the verdict as the report gives it: a sentence per use and criterion, each naming a group of the run
    assert facts["verdict"] and all(r.startswith("stub · asking=") for r in facts["verdict"])
    assert n_images(nb) >= 1

