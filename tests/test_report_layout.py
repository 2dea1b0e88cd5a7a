"""The report fits the window (issue 54): a realistic report (three models answering the IRI,
compared with the 1,973 people of Briganti et al., 2018, shipped with psyq) opened in headless
Chromium (Debian's, through Playwright; skipped when it is missing) at 1,280 and 1,024 px, every
<details> opened: the page does not scroll sideways, and no table is wider than the box holding it.

Before, the tables of "Comparison with human norms" and "Comparison with human data" (a value
with its interval, a t with its df, kept on one line each) stuck out of the 1,100 px page by about
50 px at a 1,280 px window and made a 1,024 px window scroll sideways; now a cell may break before
an interval or a parenthesis (render.break_between_parts).

The one exception, and the only place the report scrolls sideways: the full table under each
numbered table ("Full table: N rows x M columns", folded) holds every column of its CSV file (up to
28, the answers by status), more than any page holds; it scrolls in its own box (details.full
.wide, overflow-x: auto). The printed table above it fits.
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest
import yaml

from psyq import administer, human_data, load_study, write_report
from stub_server import StubServer
from test_verdict import BACKENDS, PEOPLE_DATA, answer

N_PERSONAS = 30

# Every table (every <details> opened) with its place: the page's own box (the body's content), the
# box holding it, and whether it is inside a box that scrolls sideways (and that box a full table's).
TABLES = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const style = getComputedStyle(document.body), page = document.body.getBoundingClientRect();
  const left = page.left + parseFloat(style.paddingLeft), right = page.right - parseFloat(style.paddingRight);
  const scroller = t => { for (let p = t.parentElement; p && p !== document.body; p = p.parentElement)
                            if (getComputedStyle(p).overflowX !== 'visible') return p;
                          return null; };
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
          tables: [...document.querySelectorAll('table')].map(t => {
            const r = t.getBoundingClientRect(), box = t.parentElement.getBoundingClientRect(), s = scroller(t);
            const holder = t.closest('.apa-table');
            return {title: holder ? holder.querySelector('.table-title').textContent : '(no title)',
                    section: (() => { let h = t.closest('.apa-table') || t;
                                      while (h && h.tagName !== 'H2') h = h.previousElementSibling;
                                      return h ? h.textContent : ''; })(),
                    left: r.left, right: r.right, boxLeft: box.left, boxRight: box.right,
                    pageLeft: left, pageRight: right,
                    scrolled: s !== null, fullTable: s !== null && s.matches('details.full .wide')};
          })};
}"""


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """Three stub models (people-like, style, random: tests/test_verdict.py) answering the IRI as 30
    personas and as themselves, reported against the Briganti people; its report.html."""
    tmp = tmp_path_factory.mktemp("layout")
    personas = [{"id": f"p{k:03d}", "attributes": {"gender": "female" if k % 2 else "male"},
                 "backstory": f"You are respondent number {k}."} for k in range(N_PERSONAS)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "hand", "include_baseline": True,
                                                     "personas": personas}))
    with StubServer(answer=answer) as stub:
        (tmp / "study.yaml").write_text(yaml.safe_dump({
            "psyq": "study/1", "id": "layout_test", "instruments": ["iri"], "cohort": "cohort.yaml",
            "backends": [{"id": b, "kind": "openai", "base_url": stub.url, "model": b, "concurrency": 16}
                         for b in BACKENDS],
            "protocol": {"answer": "text", "option_order": "as_written", "seed": 3}}))
        result = asyncio.run(administer(load_study(tmp / "study.yaml"), tmp / "runs", log=lambda m: None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # the notice that the people's codebook was read
        people = human_data(PEOPLE_DATA)
    html_path, _ = write_report(result.run_dir.path, out_dir=tmp / "report", people=people, estimator="WLSMV")
    return html_path


@pytest.mark.parametrize("width", [1280, 1024])
def test_every_table_of_the_report_fits_the_window(report, browser, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(report.as_uri())
    laid = page.evaluate(TABLES)
    page.close()
    assert laid["scrollWidth"] <= laid["innerWidth"], f"the page scrolls sideways: {laid['scrollWidth']} px"
    tables = laid["tables"]
    sections = {t["section"] for t in tables}
    assert {"Comparison with human norms", "Comparison with human data"} <= sections      # those that overflowed
    printed = [t for t in tables if not t["scrolled"]]
    assert len(printed) >= 20
    for t in printed:
        assert t["boxLeft"] - 1 <= t["left"] and t["right"] <= t["boxRight"] + 1, \
            f"{t['section']}: {t['title'][:60]}: {t['right'] - t['left']:.0f} px in {t['boxRight'] - t['boxLeft']:.0f}"
        assert t["pageLeft"] - 1 <= t["left"] and t["right"] <= t["pageRight"] + 1, t["title"][:60]
    # Only the full tables (every column of the CSV, folded) may be wider than the page: they scroll in their own box.
    assert all(t["fullTable"] for t in tables if t["scrolled"])
    assert len([t for t in tables if t["scrolled"]]) == len(printed)        # one full table per printed one
