"""`psyq report` end to end: a run produced over real HTTP (stub server), then the CLI report.

What the report says is computed by the analysis modules (tested against independent
computations in their own test files); here we check that every section is there, that the
figures are embedded, that the numbers shown are those of the analysis tables, and that human
data are compared when given.
"""

from __future__ import annotations

import asyncio
import base64
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from psyq.analysis.norms import compare_with_norms
from psyq.analysis.scores import score_answers
from psyq import administer, export_table, load_study, open_run_dir
from psyq.engine.results.export import run_instruments
from stub_server import StubServer

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ["Study", "Missing answers and refusals", "Comparison with human norms", "Reliability",
            "LLM-fidelity diagnostics", "Model and persona effects", "Item responses",
            "Comparison with human data", "Construct validity against human data"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    personas = [{"id": f"p{i:02d}", "attributes": {"gender": "female" if i % 2 else "male", "age": 20 + 3 * i}}
                for i in range(16)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "include_baseline": True,
                                                     "personas": personas}))
    (tmp / "study.yaml").write_text(yaml.safe_dump({
        "psyq": "study/1", "id": "report_test", "instruments": [str(ROOT / "instruments" / "iri.yaml")],
        "cohort": "cohort.yaml",
        "backends": [{"id": "stub", "kind": "openai", "base_url": "", "model": "stub-model", "concurrency": 8}],
        "protocol": {"answer": "text", "option_order": "counterbalanced", "repeats": 2, "seed": 3}}))
    with StubServer() as stub:
        text = (tmp / "study.yaml").read_text().replace("base_url: ''", f"base_url: {stub.url}")
        (tmp / "study.yaml").write_text(text)
        result = asyncio.run(administer(load_study(tmp / "study.yaml"), tmp / "runs", log=lambda m: None))
    return result.run_dir.path


def test_report_has_every_section_and_embedded_figures(run_dir, tmp_path):
    # Human data: 30 people answering the IRI (values 0–4), a deterministic pattern.
    humans = pd.DataFrame({str(i): [(r * i + r // 3) % 5 for r in range(30)] for i in range(1, 29)})
    humans.insert(0, "respondent_id", [f"h{r}" for r in range(30)])
    humans.to_csv(tmp_path / "humans.csv", index=False)
    out = subprocess.run([sys.executable, "-m", "psyq.engine.cli", "report", str(run_dir), "--out", str(tmp_path),
                          "--human", f"iri={tmp_path / 'humans.csv'}"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "report.html").read_text()
    md = (tmp_path / "report.md").read_text()
    for title in SECTIONS:
        assert f">{title}</h2>" in html and f"## {title}" in md
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    # 1 profile + 4 distributions + 1 SD-ratio chart + 1 heatmap for the IRI; construct validity:
    # item TV chart, intercorrelation heatmaps, congruence chart.
    assert len(images) == 10
    assert all(base64.b64decode(img)[:8] == b"\x89PNG\r\n\x1a\n" for img in images)
    assert "http://" not in html.replace("http://www.w3.org", "")   # self-contained

    # The readings are those of the norm comparison computed independently here.
    table = export_table(run_dir)
    comp = compare_with_norms(score_answers(table, run_instruments(open_run_dir(run_dir))),
                              run_instruments(open_run_dir(run_dir)))
    for reading in comp["reading"]:
        assert reading in md
    assert "Davis, M. H. (1980)" in md     # the norm's source is named
    assert "Test–retest ICC" in html       # two repeats → test–retest reliability

    # The same human answers stored keyed (reverse items as 4 − x) and declared so with ':keyed'
    # must give the same comparison tables as the raw file.
    reversed_items = [i.id for i in run_instruments(open_run_dir(run_dir))["iri"].items if i.reverse]
    keyed = humans.copy()
    keyed[reversed_items] = 4 - keyed[reversed_items]
    keyed.to_csv(tmp_path / "keyed.csv", index=False)
    out = subprocess.run([sys.executable, "-m", "psyq.engine.cli", "report", str(run_dir), "--out", str(tmp_path / "k"),
                          "--human", f"iri={tmp_path / 'keyed.csv'}:keyed"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    md_keyed = (tmp_path / "k" / "report.md").read_text()
    section = lambda text: text[text.index("*Cohort against human respondents*"):text.index("## Construct validity")]
    assert section(md_keyed) == section(md)
    assert "declared already keyed" in md_keyed and "declared already keyed" not in md


def test_report_reads_human_data_through_a_codebook_and_warns_of_keying(run_dir, tmp_path):
    # The Briganti file as it comes (davi1 ... davi28, gender F/M, stored keyed), with a codebook that
    # names the columns and maps the labels but does not declare it keyed: read, and warned about.
    import shutil

    shutil.copy(ROOT / "instruments" / "data" / "iri_briganti2018_keyed.csv", tmp_path / "people.csv")
    (tmp_path / "book.yaml").write_text("psyq: codebook/1\ncolumns:\n  items: \"davi{id}\"\n"
                                        "values:\n  gender: {F: female, M: male}\n")
    out = subprocess.run([sys.executable, "-m", "psyq.engine.cli", "report", str(run_dir), "--out", str(tmp_path / "r"),
                          "--human", f"iri={tmp_path / 'people.csv'}", "--codebook", f"iri={tmp_path / 'book.yaml'}"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "warning: human data: " in out.stderr and "look ALREADY KEYED" in out.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    assert f"read with the codebook {tmp_path / 'book.yaml'} (item columns davi{{id}}; values of gender mapped" in md
    assert "Warning (human data): " in md and "9 of 9 reverse-keyed items of iri" in md


def test_report_on_a_non_run_is_a_clean_error(tmp_path):
    out = subprocess.run([sys.executable, "-m", "psyq.engine.cli", "report", str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "not a run directory" in out.stderr and "Traceback" not in out.stderr


def test_report_compares_every_norm_sample_and_says_who_matched(run_dir, tmp_path):
    out = subprocess.run([sys.executable, "-m", "psyq.engine.cli", "report", str(run_dir), "--out", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    md = (tmp_path / "report.md").read_text()
    # 16 personas with a gender + the baseline without one: the baseline matches no group.
    # briganti2018 publishes a whole-sample group (`id: all` in iri.yaml), named as written;
    # davis1980 does not, so psyq pools its groups.
    for sample, norm in (("briganti2018", "the whole-sample norm (all)"), ("davis1980", "the pooled norm")):
        warning = (f"iri norm sample {sample} matches on gender; the cohort has age, gender: 16 of 17 "
                   f"respondents matched a group and 1 was compared with {norm} (unmatched: baseline).")
        assert f"warning: {warning}" in out.stderr.splitlines()
        assert warning in md
    assert "Norm group matching" in md and "NOT COMPARED" not in md
    assert "iri briganti2018 [verified: raw-data]" in md
    assert "iri davis1980 [verified: unverified — NORMS UNVERIFIED]" in md
    assert "the davis1980 norm for women" in md and "— norms unverified." in md


def test_report_norms_option_restricts_and_says_what_was_left_out(run_dir, tmp_path):
    out = subprocess.run([sys.executable, "-m", "psyq.engine.cli", "report", str(run_dir), "--out", str(tmp_path),
                          "--norms", "briganti2018"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    md = (tmp_path / "report.md").read_text()
    assert "the briganti2018 norm for women" in md and "the davis1980 norm" not in md
    assert "NOT COMPARED: left out by the choice of norm samples" in md
    bad = subprocess.run([sys.executable, "-m", "psyq.engine.cli", "report", str(run_dir), "--out", str(tmp_path),
                          "--norms", "davis1981"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "no such norm sample: davis1981" in bad.stderr and "Traceback" not in bad.stderr


def test_study_norms_field_is_checked_and_read(tmp_path):
    from psyq.analysis.report import _norm_choice
    from psyq.engine.files.errors import InputError

    (tmp_path / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": [{"id": "p"}]}))
    study = {"psyq": "study/1", "id": "s", "instruments": [str(ROOT / "instruments" / "iri.yaml")],
             "cohort": "cohort.yaml", "backends": [{"id": "b", "kind": "openai", "base_url": "http://127.0.0.1:9/v1",
                                                     "model": "m"}], "norms": {"iri": ["davis1980", "nope"]}}
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    with pytest.raises(InputError, match=r"norms\.iri\[1\]: 'iri' has no norm sample 'nope'"):
        load_study(tmp_path / "study.yaml")
    study["norms"] = {"iri": ["davis1980"]}
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    load_study(tmp_path / "study.yaml")
    # A run directory holds a copy of the study as study.yaml: the report reads its `norms`.
    assert _norm_choice(tmp_path, None) == {"iri": ["davis1980"]}
    assert _norm_choice(tmp_path, ["briganti2018"]) == ["briganti2018"]
