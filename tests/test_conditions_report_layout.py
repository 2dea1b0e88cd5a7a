"""The report of a run with conditions as a reader meets it (issue 54): in headless Chromium
(Debian's, through Playwright; those tests skip when it is missing) the section "Conditions
compared" of the 12-group run of tests/test_conditions_report.py (2 stub backends × 3 ways of asking
× 2 persona templates, 66 pairs) fits a 1280 px and a 1024 px window, its head-to-head table showing
the pairs that differ and the full table every pair; the verdict's sentences about conditions stay
short and say when the data cannot tell yet; and a condition's name, a persona template and a model
reply carrying markup are shown as text, never run, in the report and in `psyq view`.

The expected values are read from the report's own CSV files (the full tables), independently of
the printed views: which pairs differ on some criterion, and per criterion which groups share rank 1.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import pytest
import yaml

from psyq import rank_conditions
from psyq.analysis.report import methods_text
from psyq.analysis.report.figures import figure_to_data_uri
from psyq.analysis.report.readings import NAME_MAX, most_people_like
from psyq.analysis.report.render import render_html
from psyq.analysis.report.section import Section
from psyq.analysis.report.sections.conditions import conditions_chart
from psyq.analysis.report.sections.verdict import CONDITION_USES
from psyq.analysis.report.verdict_views import condition_pairs
from psyq.engine.view.server import ViewServer
from cli_helper import psyq_in_process
from stub_server import StubServer
from test_conditions_report import Script, write_study

PEOPLE = "iri=iri_briganti2018_keyed:keyed"
TITLE = "Conditions compared"
VERDICT = "Can the personas stand in for people?"
PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'
LEVEL = "img.src-x.onerror-window.__pwned_1"
"""A level's id as hostile as the study's schema lets an id be (letters, digits, '_', '-', '.')."""
FACTOR = "script_tag"


def run_and_report(folder: Path, study_of, script: Script, reply=None, embedding=None) -> Path:
    """`psyq run` of the study `study_of(folder, url)` writes against the stub answering as `script`
    (or `reply`, `embedding`), then `psyq report RUN --human` with the shipped people; the run."""
    with StubServer(answer=reply or script.answer, distribution=script.distribution,
                    embedding=embedding or script.embedding) as stub:
        study = study_of(folder, stub.url)
        done = subprocess.run([sys.executable, "-m", "psyq.cli", "run", str(study), "--runs-dir", str(folder / "runs")],
                              cwd=folder, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    run = next((folder / "runs").rglob("manifest.json")).parent
    report = psyq_in_process("report", run, "--human", PEOPLE)
    assert report.returncode == 0, report.stderr
    return run


@pytest.fixture(scope="module")
def twelve(tmp_path_factory) -> Path:
    """The 12-group run of tests/test_conditions_report.py (run to the end at once), reported."""
    return run_and_report(tmp_path_factory.mktemp("twelve"), write_study, Script())


def csv(run: Path, caption_start: str) -> pd.DataFrame:
    found = sorted((run / "report_tables").glob(f"table*_{caption_start}*.csv"))
    assert len(found) == 1, found
    return pd.read_csv(found[0], keep_default_na=False, na_values=[""])


# Whatever lies between the section's heading and the next one, every <details> opened: each box not
# inside a scrolling box must lie within the heading's width, and no box may hold content wider than
# itself (scrollWidth > clientWidth) without scrolling it. A box inside a scrolling one (the full
# table's, overflow-x: auto) is the scrolling box's to hold.
OVERFLOWING = """(title) => {
  const heading = [...document.querySelectorAll('h2')].find(h => h.textContent.trim() === title);
  const parts = [];
  for (let el = heading.nextElementSibling; el && el.tagName !== 'H2'; el = el.nextElementSibling) parts.push(el);
  parts.forEach(p => p.querySelectorAll('details').forEach(d => { d.open = true; }));
  const box = heading.getBoundingClientRect();
  const scrolled = e => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement)
                            if (getComputedStyle(p).overflowX !== 'visible') return true;
                          return false; };
  const out = [];
  for (const e of parts.flatMap(p => [p, ...p.querySelectorAll('*')])) {
    if (scrolled(e)) continue;
    const r = e.getBoundingClientRect(), name = `${e.tagName}.${e.className}`;
    if (r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1))
      out.push(`${name}: ${Math.round(r.left)} to ${Math.round(r.right)} px, `
               + `the section ${Math.round(box.left)} to ${Math.round(box.right)}`);
    if (getComputedStyle(e).overflowX === 'visible' && e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
      out.push(`${name}: content ${e.scrollWidth} px wide in ${e.clientWidth} px`);
  }
  return out;
}"""

TABLE_ROWS = """(caption) => {
  const table = [...document.querySelectorAll('div.apa-table')]
    .find(t => t.querySelector('.table-title').textContent.startsWith(caption));
  const cells = (rows, text) => [...rows].map(r => [...r.cells].map(c => c[text].trim()));
  return {shown: cells(table.querySelectorAll('table.apa tbody tr'), 'innerText'),
          note: table.querySelector('.table-note').innerText,
          full: cells(table.querySelectorAll('details.full tbody tr'), 'textContent'),    // folded: not rendered
          fullHead: [...table.querySelectorAll('details.full thead th')].map(c => c.textContent.trim())};
}"""


@pytest.mark.parametrize("width", [1280, 1024])
def test_the_conditions_section_fits_the_window(twelve, browser, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto((twelve / "report.html").as_uri())
    assert page.evaluate(OVERFLOWING, TITLE) == []
    page.close()


def test_the_head_to_head_table_shows_the_pairs_that_differ_and_the_full_table_every_pair(twelve, browser):
    full = csv(twelve, "head_to_head")
    pairs = full[["condition_a", "condition_b"]].drop_duplicates()
    apart = set(map(tuple, full.loc[full["distinguishable"], ["condition_a", "condition_b"]].values.tolist()))
    differ = [list(pair) for pair in pairs.values.tolist() if tuple(pair) in apart]
    assert len(pairs) == 66 and 0 < len(differ) < 66
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto((twelve / "report.html").as_uri())
    table = page.evaluate(TABLE_ROWS, "Head to head")
    page.close()
    assert [row[:2] for row in table["shown"]] == differ     # in the comparison's order
    assert (f"Shown: the {len(differ)} pairs distinguishable on at least one criterion; the other "
            f"{66 - len(differ)} of the 66 pairs") in table["note"]
    # Every pair's numbers one click away: the full table, every pair on every criterion.
    head = table["fullHead"]
    assert len(table["full"]) == len(full) == 66 * 8
    shown_pairs = {(r[head.index("condition_a")], r[head.index("condition_b")]) for r in table["full"]}
    assert shown_pairs == set(map(tuple, pairs.values.tolist()))


def pairs_of(groups: int, apart: set[int]) -> pd.DataFrame:
    """Every pair of `groups` conditions on one criterion, those numbered in `apart` distinguishable."""
    names = [f"g{k}" for k in range(groups)]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    return pd.DataFrame([{"criterion": "level", "condition_a": a, "condition_b": b, "difference": -0.1, "low": -0.2,
                          "high": 0.0, "distinguishable": k in apart, "closer": a if k in apart else ""}
                         for k, (a, b) in enumerate(pairs)])


def test_up_to_six_groups_or_with_none_apart_every_pair_is_printed():
    six = condition_pairs(pairs_of(6, {0}))                 # 15 pairs: printed whole, as before
    assert len(six.frame) == 15 and len(six.notes) == 1
    assert len(condition_pairs(pairs_of(7, set())).frame) == 21          # nothing differs: nothing to pick
    seven = condition_pairs(pairs_of(7, {2, 20}))
    assert seven.frame[["A", "B"]].values.tolist() == [["g0", "g3"], ["g5", "g6"]]
    assert seven.notes[1].startswith("Shown: the 2 pairs distinguishable on at least one criterion; the other 19 of "
                                     "the 21 pairs")


def test_a_long_condition_name_wraps_in_its_cell_and_reads_as_written(twelve, browser):
    # A label breaks after a comma joining two levels (<wbr>: no character added, so it is found,
    # searched and copied as the CSV and the verdict write it).
    page = browser.new_page(viewport={"width": 1024, "height": 900})
    page.goto((twelve / "report.html").as_uri())
    lines = page.evaluate("""(label) => [...document.querySelectorAll('div.apa-table')]
        .filter(t => t.querySelector('.table-title').textContent.startsWith('Head to head'))
        .flatMap(t => [...t.querySelectorAll('table.apa td')]).filter(td => td.innerText === label)
        .map(td => { const range = document.createRange(); range.selectNodeContents(td);
                     const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                     return [td.innerHTML, tops.size]; })""", "stub_a · asking=verbalized,persona=plain")
    page.close()
    assert len(lines) >= 5                             # as A or B of the pairs that differ
    assert all(html == "stub_a · asking=verbalized,<wbr>persona=plain" and count == 3 for html, count in lines), lines


def verdict_sentences(run: Path) -> list[str]:
    markdown = (run / "report.md").read_text(encoding="utf-8")
    verdict = markdown.split(f"## {VERDICT}")[1].split("\n## ")[0]
    # Read back as text: report.md writes "|g|" as "\|g\|" and "<" as "&lt;" (render.markdown_text).
    return [html.unescape(re.sub(r"\\([^\w\s])", r"\1", line[2:])) for line in verdict.splitlines()
            if line.startswith("- ") and "most people-like" in line]


def test_each_verdict_sentence_about_conditions_is_short_names_the_best_and_says_when_it_cannot_tell(twelve):
    sentences = verdict_sentences(twelve)
    ranks = csv(twelve, "ranks")
    criteria = ["level", "spread", "reliability", "relations", "distinguishable", "tvd", "w1"]
    assert len(sentences) == len(criteria)
    for criterion, sentence in zip(criteria, sentences):
        assert len(sentence) <= 300, sentence
        mine = ranks[ranks["criterion"] == criterion]          # closest first
        best, following = mine["condition"].iloc[0], mine["condition"].iloc[1]
        assert sentence.startswith(f"{best} is the most people-like for "), sentence
        assert f"({criterion}: " in sentence and following in sentence
        first = int((mine["rank"] == 1).sum())
        if mine["ahead_of_next"].iloc[0]:
            assert f"; distinguishably better than {following}." in sentence and "cannot tell" not in sentence
        else:          # conditions share rank 1: it cannot tell yet, and says how many when more than two
            assert f"; not distinguishable from {following} at this size: cannot tell yet" in sentence
            assert (f", {first} share rank 1 (ranked below)." in sentence) == (first > 2)
        assert sum(label in sentence for label in mine["condition"]) == 2      # two names, however many groups
    # This run holds both kinds of tie: many groups at rank 1 on spread, three on the answer distributions.
    assert ", 12 share rank 1" in sentences[1] and ", 3 share rank 1" in sentences[5]


def test_a_long_condition_name_is_cut_in_the_verdict_and_the_sentence_bounded():
    names = [f"backend_{k} · " + ",".join(f"factor_{f}=level_{k}_{f}" for f in range(6)) for k in range(12)]
    ranks = pd.DataFrame({"instrument": "iri", "criterion": "spread", "condition": names,
                          "distance": np.linspace(0.1, 0.2, 12), "rank": 1, "ahead_of_next": False, "note": ""})
    comparison = pd.DataFrame({"instrument": ["iri"], "criterion": ["spread"],
                               "measure": ["mean |ln SD ratio| over 4 subscales"]})
    (sentence,) = most_people_like(ranks, comparison, CONDITION_USES)
    assert len(names[0]) > NAME_MAX and len(sentence) < 380
    assert sentence.startswith(names[0][:NAME_MAX - 1] + "… is the most people-like for reproducing people's spread")
    assert (f"not distinguishable from {names[1][:NAME_MAX - 1]}… at this size: cannot tell yet, 12 share rank 1"
            in sentence)
    ahead = most_people_like(ranks.assign(rank=[1] + [2] * 11, ahead_of_next=[True] + [False] * 11), comparison,
                             CONDITION_USES)
    assert ahead == [f"{names[0][:NAME_MAX - 1]}… is the most people-like for reproducing people's spread, "
                     "reliability and factor structure (spread: mean |ln SD ratio| over 4 subscales); distinguishably "
                     f"better than {names[1][:NAME_MAX - 1]}…."]


# --- untrusted text stays text --------------------------------------------------------------------------------

def hostile_study(folder: Path, url: str) -> Path:
    """The 12-group study cut to one backend answering in its own words (ssr), its conditions a factor
    whose one level's id is as hostile as an id may be and whose template carries the markup."""
    path = write_study(folder, url)
    study = yaml.safe_load(path.read_text())
    study["backends"] = study["backends"][:1]
    study["protocol"]["answer"] = "ssr"
    study["conditions"] = {"cross": {FACTOR: {
        "plain": {"template": "You are {id}. Answer as yourself."},
        LEVEL: {"template": "You are {id}. " + PAYLOAD + " Answer as yourself."}}}}
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A run whose condition's level id, template and replies carry markup, reported with people."""
    script = Script()

    def reply(body: dict) -> str:         # the hostile condition's replies carry the markup too
        text = script.answer(body)
        return f"{text} {PAYLOAD}" if PAYLOAD in body["messages"][0]["content"] else text

    return run_and_report(tmp_path_factory.mktemp("hostile"), hostile_study, script, reply,
                          lambda text: script.embedding(text.replace(f" {PAYLOAD}", "")))


INJECTED = """() => ({pwned: typeof window.__pwned, scripts: document.querySelectorAll('script').length,
  planted: [...document.querySelectorAll('img')].filter(i => i.getAttribute('src') === 'x').length})"""


def section_text(page, title: str) -> str:
    return page.evaluate("""(title) => {
      const heading = [...document.querySelectorAll('h2')].find(h => h.textContent.trim() === title);
      let text = '';
      for (let el = heading.nextElementSibling; el && el.tagName !== 'H2'; el = el.nextElementSibling)
        text += el.innerText + '\\n';
      return text; }""", title)


def test_hostile_names_templates_and_replies_are_text_in_the_report(hostile, browser):
    condition = f"{FACTOR}={LEVEL}"
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((hostile / "report.html").as_uri())
    page.wait_for_timeout(300)
    assert page.evaluate(INJECTED) == {"pwned": "undefined", "scripts": 0, "planted": 0}
    section = section_text(page, TITLE)
    assert f"template: You are {{id}}. {PAYLOAD} Answer as yourself." in section     # the plan's table, as written
    assert f"stub_a · {condition}" in section and "2 groups of answers" in section
    assert condition in section_text(page, VERDICT)
    assert page.locator("figure img").first.get_attribute("alt").startswith("Each group's distance from people")
    assert errors == []
    page.close()


def test_hostile_names_templates_and_replies_are_text_in_the_viewer(hostile, browser):
    condition = f"{FACTOR}={LEVEL}"
    runs = hostile.parents[1]
    with ViewServer(runs, methods=methods_text) as viewer:
        rel = hostile.relative_to(runs).as_posix()
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{viewer.url}run/{rel}/trials?{urlencode({'condition': condition})}")
        chosen = page.locator("select[name=condition] option:checked")
        assert chosen.inner_text() == condition and chosen.get_attribute("value") is None
        trials = page.locator("#trials").inner_text()
        assert trials.count(PAYLOAD) >= 20 and f"\t{condition}\t" in trials
        assert "\tplain\t" not in trials and f"{FACTOR}=plain" not in trials        # the filter holds
        page.locator("#trials a[href*='/trial/']").first.click()
        page.wait_for_load_state()
        transcript = page.locator("#transcript").inner_text()
        assert "You are p" in transcript and f". {PAYLOAD} Answer as yourself." in transcript   # the template
        assert re.search(r"answer \d " + re.escape(PAYLOAD), transcript)                            # the reply
        page.wait_for_timeout(300)
        assert page.evaluate(INJECTED) == {"pwned": "undefined", "scripts": page.locator("script[src]").count(),
                                           "planted": 0}
        assert errors == []
        page.close()


def test_markup_in_condition_names_beyond_the_schema_is_text_in_the_section_the_verdict_and_the_figure(browser,
                                                                                                      tmp_path):
    # Ids cannot hold markup today (the schema), but a section must not depend on it: the section's
    # views, the verdict's sentences and the figure given names carrying the whole payload.
    names = [f"stub · {PAYLOAD}{k}" for k in range(3)]
    pairs = pd.DataFrame([{"instrument": "iri", "criterion": c, "measure": "mean |g| over 4 subscales",
                           "condition_a": a, "condition_b": b, "distance_a": 0.1 + i, "distance_b": 0.2 + j,
                           "difference": i - j - 0.1, "low": i - j - 0.2, "high": i - j, "p": 0.01, "p_holm": 0.03,
                           "distinguishable": True, "closer": a, "note": ""}
                          for c in ("level", "tvd") for i, a in enumerate(names) for j, b in enumerate(names) if i < j])
    ranks = rank_conditions(pairs)
    distances = pd.DataFrame([{"criterion": c, "condition": name, "distance": 0.1 * (k + 1), "low": 0.05 * (k + 1),
                               "high": 0.15 * (k + 1)} for c in ("level", "tvd") for k, name in enumerate(names)])
    fig = conditions_chart(distances, {"tvd": 0.04}, "iri", {n: "stub" for n in names})
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == names        # drawn as the text it is
    assert figure_to_data_uri(fig).startswith("data:image/png;base64,")
    section = Section(TITLE, readings=most_people_like(ranks, pairs, CONDITION_USES))
    section.add_table("Head to head", pairs, view="condition_pairs")
    section.add_table("Ranks", ranks, view="condition_ranks")
    section.figures.append((f"Each group's distance: {PAYLOAD}", fig))
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html({"study": PAYLOAD, "run_id": "r"}, [section]), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(page_file.as_uri())
    page.wait_for_timeout(300)
    assert page.evaluate(INJECTED) == {"pwned": "undefined", "scripts": 0, "planted": 0}
    text = section_text(page, TITLE)
    assert f"{names[0][:NAME_MAX - 1]}… is the most people-like for estimating" in text    # cut at NAME_MAX
    assert text.count(names[1]) == 2 + 1 and f"Each group's distance: {PAYLOAD}" in text   # A or B twice, ranked once
    assert page.locator("figure img").get_attribute("alt") == f"Each group's distance: {PAYLOAD}"
    page.close()
