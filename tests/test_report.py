"""`psyq report` end to end: a run produced over real HTTP (stub server), then the CLI report (run
by psyq's main() in this process, tests/cli_helper.py; one test starts the command as a process).

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

import numpy as np
import pandas as pd
import pytest
import yaml

from psyq.analysis.report import Section, build_sections, render_html
from psyq.analysis.report.readings import norm_readings
from psyq.analysis.report.render import markdown_text
from psyq.analysis.report.sections.instrument import fidelity_readings
from psyq.analysis.scoring.human_data import human_data
from psyq.analysis.scoring.scores import score_answers
from psyq.analysis.statistics.norms import compare_with_norms
from psyq import administer, export_table, load_study, open_run
from cli_helper import psyq_in_process
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
    out = psyq_in_process("report", run_dir, "--out", tmp_path, "--human", f"iri={tmp_path / 'humans.csv'}")
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "report.html").read_text()
    md = (tmp_path / "report.md").read_text()
    for title in SECTIONS:
        assert f">{title}</h2>" in html and f"## {title}" in md
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    # 1 profile + 4 distributions + 1 SD-ratio chart + 1 heatmap for the IRI; construct validity:
    # item TV chart, intercorrelation heatmaps (no congruence chart: 17 respondents are too few for it).
    assert len(images) == 9
    assert all(base64.b64decode(img)[:8] == b"\x89PNG\r\n\x1a\n" for img in images)
    assert "http://" not in html.replace("http://www.w3.org", "")   # self-contained

    # The readings are those of the norm comparison computed independently here.
    table = export_table(run_dir)
    comp = compare_with_norms(score_answers(table, open_run(run_dir).instruments),
                              open_run(run_dir).instruments)
    for reading in norm_readings(comp, bound=0.3):
        assert markdown_text(reading) in md          # "p < .001" written "p &lt; .001", shown as text
    assert "Davis, M. H. (1980)" in md     # the norm's source is named
    assert "Test–retest ICC" in html       # two repeats → test–retest reliability

    # The same human answers stored keyed (reverse items as 4 − x) and declared so with ':keyed'
    # must give the same comparison tables as the raw file.
    reversed_items = [i.id for i in open_run(run_dir).instruments["iri"].items if i.reverse]
    keyed = humans.copy()
    keyed[reversed_items] = 4 - keyed[reversed_items]
    keyed.to_csv(tmp_path / "keyed.csv", index=False)
    out = psyq_in_process("report", run_dir, "--out", tmp_path / "k", "--human", f"iri={tmp_path / 'keyed.csv'}:keyed")
    assert out.returncode == 0, out.stderr
    md_keyed = (tmp_path / "k" / "report.md").read_text()
    section = lambda text: text[text.index("*Cohort against human respondents*"):text.index("## Construct validity")]
    assert section(md_keyed) == section(md)
    assert "declared already keyed" in md_keyed and "declared already keyed" not in md


def _pattern_humans(path: Path) -> Path:
    """30 people answering the IRI (values 0–4) in a deterministic pattern, as a CSV file."""
    humans = pd.DataFrame({str(i): [(r * i + r // 3) % 5 for r in range(30)] for i in range(1, 29)})
    humans.insert(0, "respondent_id", [f"h{r}" for r in range(30)])
    humans.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def human_sections(run_dir, tmp_path_factory) -> list[Section]:
    """The report's sections of the run against the 30 pattern people, built once for the module."""
    humans = _pattern_humans(tmp_path_factory.mktemp("humans") / "humans.csv")
    return build_sections(run_dir, people=human_data({"iri": humans}))[1]


@pytest.fixture(scope="module")
def plain_sections(run_dir) -> list[Section]:
    """The report's sections of the run alone, built once for the module."""
    return build_sections(run_dir)[1]


def test_a_small_cohort_gets_sentences_not_tables_of_dashes(human_sections):
    """17 respondents and 30 people: what cannot be estimated is one sentence with its reason, never
    a table or a chart without a value."""
    sections = human_sections
    by_title = {s.title: s for s in sections}
    validity = by_title["Construct validity against human data"]
    assert [c for c, _ in validity.tables + validity.figures if "congruence" in c.lower()] == []
    assert ("iri: factor congruence not estimable: cohort: 17 respondent(s) with every item answered: fewer than "
            "items + 1 (29); human: the item correlation matrix is singular (some item is a linear combination of "
            "others).") in validity.readings
    construct = by_title["Is it the same construct?"]
    assert construct.tables == [] and construct.figures == [] and construct.note is None
    assert construct.readings[-4:] == [
        "iri: measurement invariance not estimable: group 'personas' has 17 respondents for 28 items.",
        "iri: graded response model of the personas not estimable in any subscale (PT, FS, EC, PD): 17 respondents "
        "(at least 50 needed).",
        "iri: graded response model of the people not estimable in any subscale (PT, FS, EC, PD): 30 respondents "
        "(at least 50 needed).",
        "iri: differential item functioning not estimable: 30 reference and 17 focal respondents with every answer "
        "(at least 30 per group needed)."]


def test_report_captions_begin_with_a_capital_and_numbers_carry_a_true_minus(human_sections):
    sections = human_sections
    captions = [c for s in sections for c, _ in s.tables + s.figures]
    assert len(captions) > 20 and [c for c in captions if not c[:1].isupper()] == []
    readings = [r for s in sections for r in s.readings + s.details]      # shown, or folded under <details>
    assert [r for r in readings if re.search(r"(?<![\w.])-\d", r)] == []       # "−0.55", never "-0.55"
    assert any("\u2212" in r for r in readings)
    # A row's note is appended as a sentence; φ stays φ (capitalised it would be Φ, another symbol).
    assert ("iri FS: cohort mean 15.12 vs human 13.33 (g = 0.32, 95 % CI \u22120.29 to 0.94; Welch p .213); variance "
            "ratio 0.28 (Brown–Forsythe p .012). φ not estimable: no proper one-factor solution.") in readings


def test_norm_curves_of_the_report_stay_within_the_subscales_possible_scores(plain_sections):
    sections = plain_sections
    figures = [f for s in sections for c, f in s.figures if c.startswith("Cohort scores over the norm distribution")]
    assert len(figures) == 4                  # PT, FS, EC, PD: 7 items of 0–4 each
    for fig in figures:
        xs = np.concatenate([line.get_xdata() for line in fig.axes[0].lines
                             if (line.get_gid() or "").startswith("norm-density:")])
        assert xs.min() == 0 and xs.max() == 28


def test_fidelity_readings_write_signed_differences_with_a_true_minus():
    acquiescence = pd.DataFrame([{"backend_id": "b", "instrument": "iri", "balanced": -0.2512,
                                  "balanced_ci_low": -0.4, "balanced_ci_high": 0.0049}])
    (reading,) = fidelity_readings({"acquiescence": acquiescence})
    assert "raw answers sit \u22120.25 scale points from the midpoint (95 % CI \u22120.40 to 0.00)" in reading


def test_full_tables_print_negative_numbers_with_a_true_minus():
    html = render_html({"study": "s", "run_id": "r"}, [Section("S", tables=[("A table", pd.DataFrame({"x": [-0.25]}))])])
    full = html[html.index("<div class='wide'>"):]
    assert "\u22120.25" in full and "-0.25" not in full


def test_reliability_says_a_negative_alpha_means_the_subscale_does_not_hang_together(plain_sections):
    sections = plain_sections
    readings = next(s for s in sections if s.title == "Reliability").readings
    alphas = {r.split(":")[0]: r.split("Cronbach's α = ")[1].split(" ")[0] for r in readings if "Cronbach's α = " in r}
    # The stub's answers are hashed digits, unrelated across items: α scatters around 0.
    assert alphas == {"iri PT": "−.52", "iri FS": ".41", "iri EC": ".40", "iri PD": ".24"}
    remark = ("α is negative: the items covary negatively on average, so the subscale does not hang together and "
              "its score is not interpretable for this cohort.")
    assert [r.split(":")[0] for r in readings if r.endswith(remark)] == ["iri PT"]


def test_report_reads_human_data_through_a_codebook_and_warns_of_keying(run_dir, tmp_path):
    # The Briganti file as it comes (davi1 ... davi28, gender F/M, stored keyed), with a codebook that
    # names the columns and maps the labels but does not declare it keyed: read, and warned about.
    # Its first 300 people (the lines as written): what is checked is the reading and the warning,
    # and the report's models are fitted to 300 people rather than 1,973.
    lines = (ROOT / "instruments" / "data" / "iri_briganti2018_keyed.csv").read_text().splitlines(keepends=True)
    (tmp_path / "people.csv").write_text("".join(lines[:301]))
    (tmp_path / "book.yaml").write_text("psyq: codebook/1\ncolumns:\n  items: \"davi{id}\"\n"
                                        "values:\n  gender: {F: female, M: male}\n")
    out = psyq_in_process("report", run_dir, "--out", tmp_path / "r", "--human", f"iri={tmp_path / 'people.csv'}",
                          "--codebook", f"iri={tmp_path / 'book.yaml'}")
    assert out.returncode == 0, out.stderr
    assert "warning: human data: " in out.stderr and "look ALREADY KEYED" in out.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    assert f"read with the codebook {tmp_path / 'book.yaml'} (item columns davi{{id}}; values of gender mapped" in md
    assert "Warning (human data): " in md and "9 of 9 reverse-keyed items of iri" in md


def test_report_on_a_non_run_is_a_clean_error(tmp_path):
    # The command as a process of its own: exit code 2 and no traceback.
    out = subprocess.run([sys.executable, "-m", "psyq.cli", "report", str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "not a run directory" in out.stderr and "Traceback" not in out.stderr


def test_report_compares_every_norm_sample_and_says_who_matched(run_dir, tmp_path):
    out = psyq_in_process("report", run_dir, "--out", tmp_path)
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
    out = psyq_in_process("report", run_dir, "--out", tmp_path, "--norms", "briganti2018")
    assert out.returncode == 0, out.stderr
    md = (tmp_path / "report.md").read_text()
    assert "the briganti2018 norm for women" in md and "the davis1980 norm" not in md
    assert "NOT COMPARED: left out by the choice of norm samples" in md
    bad = psyq_in_process("report", run_dir, "--out", tmp_path, "--norms", "davis1981")
    assert bad.returncode == 2 and "no such norm sample: davis1981" in bad.stderr and "Traceback" not in bad.stderr


def test_study_norms_field_is_checked_and_read(tmp_path):
    from psyq.analysis.report.context import norm_choice
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
    assert norm_choice(tmp_path, None) == {"iri": ["davis1980"]}
    assert norm_choice(tmp_path, ["briganti2018"]) == ["briganti2018"]
