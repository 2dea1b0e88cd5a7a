"""Screenshots of a report's verdict, "Can the personas stand in for people?", for the docs.

Run from the repository root, in its venv (Playwright is a dev dependency; Chromium from Debian's
``chromium`` package at /usr/bin/chromium, or give another with ``--chromium PATH``)::

    . .venv/bin/activate
    python docs/images/verdict_screenshots.py            # all three, a few minutes
    python docs/images/verdict_screenshots.py leas       # only some: iri, emotionbench, leas
    python docs/images/verdict_screenshots.py --keep DIR # keep the runs and reports in DIR

Three runs, each made in a temporary folder (nothing is left in the repository but the PNGs):

* ``verdict.png``: the study of tests/test_verdict.py. Three stub models on one stub server
  (tests/stub_server.py, imported by putting the tests folder on ``sys.path``) told apart by their
  model name: ``people-like`` draws each answer from the 1,973 Briganti et al. (2018) people's
  distribution of that item's raw answers, item by item; ``style`` draws the same way and answers
  one option higher (at most the top option); ``random`` answers uniformly. 300 hand-written
  personas with a gender each, ``include_baseline: true``, the shipped IRI, one item per request;
  the report is ``psyq.write_report(run, people=psyq.human_data({"iri": "iri_briganti2018_keyed"}),
  estimator="WLSMV")``.
* ``verdict_emotionbench.png``: an EmotionBench model result file and crowd sheet, made up in
  EmotionBench's layout as tests/test_emotionbench_report.py makes them (its toy model and four
  crowd respondents), imported with ``psyq import emotionbench-humans`` and ``psyq import
  emotionbench-results`` and reported with ``psyq report RUN --human-change HUMANS.csv``.
* ``verdict_leas.png``: the shipped LEAS-format scenes (``leas_psyq``) answered by two stub models
  in free text naming feelings (``terse``: one feeling or a global "bad"/"fine" per answer;
  ``nuanced``: two feelings of different kinds for oneself, one or two for the other person),
  20 personas; reported with ``psyq report RUN``.

Each report.html is opened from disk in headless Chromium (Playwright) in a 1,280 x 900 viewport,
and the verdict section is screenshot alone, at its full height: the ``<section>`` holding the
verdict's ``<h2>`` when there is one, else (the report's HTML is flat) the ``<h2>`` and every
element after it up to the next ``<h2>`` or ``<section>``, with 16 px of page around it. The
script says if the page is wider than the viewport or anything in the section reaches out of it.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import hashlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
sys.path.insert(0, str(ROOT / "tests"))          # tests/stub_server.py
from stub_server import StubServer  # noqa: E402

import psyq  # noqa: E402

TITLE = "Can the personas stand in for people?"
WIDTH, HEIGHT, MARGIN = 1280, 900, 16
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def cli(*args: str) -> None:
    """`psyq ARGS` in its own process, as a user types it; stops the script if it fails."""
    done = subprocess.run([sys.executable, "-m", "psyq", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"psyq {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")


def administer(study: Path, runs: Path) -> Path:
    result = asyncio.run(psyq.administer(psyq.load_study(study), runs, log=lambda m: None))
    bad = {k: v for k, v in result.counts.items() if k != "answered"}
    if bad:
        print(f"  note: not every trial answered: {result.counts}")
    return result.run_dir.path


# --- 1. three stub models on the IRI against the 1,973 people (tests/test_verdict.py) -----------

def iri_report(tmp: Path) -> Path:
    iri = psyq.load_instrument("iri")
    people_data = {"iri": "iri_briganti2018_keyed"}
    people = psyq.human_data(people_data)["iri"].answers(iri)       # raw answers of the people
    values = [int(o.value) for o in iri.scale]
    codes = {int(o.value): o.code for o in iri.scale}               # A–E, as the prompt lists them
    counts = {i.id: [int((people[i.id] == v).sum()) for v in values] for i in iri.rating_items}
    top = max(values)

    def answer(body: dict) -> str:
        """The item is found by its text in the prompt; the draw is seeded by the model name and the
        whole conversation (the backstory names the persona), so the answers are the same every run."""
        messages = body["messages"]
        [asked] = [i for i in iri.rating_items if f"Statement: {i.text}\n" in messages[-1]["content"]]
        rng = random.Random(int.from_bytes(hashlib.sha256(json.dumps([body["model"], messages]).encode()).digest()[:8],
                                           "big"))
        if body["model"] == "random":
            return codes[rng.choice(values)]
        value = rng.choices(values, weights=counts[asked.id])[0]
        return codes[min(top, value + 1) if body["model"] == "style" else value]

    personas = [{"id": f"p{k:03d}", "attributes": {"gender": "female" if k % 2 else "male"},
                 "backstory": f"You are respondent number {k}."} for k in range(300)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "hand", "include_baseline": True,
                                                     "personas": personas}))
    with StubServer(answer=answer) as stub:
        (tmp / "study.yaml").write_text(yaml.safe_dump({
            "psyq": "study/1", "id": "three_models", "instruments": ["iri"], "cohort": "cohort.yaml",
            "backends": [{"id": b, "kind": "openai", "base_url": stub.url, "model": b, "concurrency": 16}
                         for b in ("people-like", "style", "random")],
            "protocol": {"answer": "text", "option_order": "as_written", "repeats": 1, "seed": 3}}))
        run = administer(tmp / "study.yaml", tmp / "runs")
    # WLSMV, as tests/test_verdict.py: a failed ordinal fit is not refitted with the items continuous.
    html, _ = psyq.write_report(run, out_dir=tmp / "report", people=psyq.human_data(people_data), estimator="WLSMV")
    return html


# --- 2. EmotionBench results and crowd, imported (tests/test_emotionbench_report.py) -------------

PA = {1, 3, 5, 9, 10, 12, 14, 16, 17, 19}     # Watson et al. (1988) key, as in instruments/panas.yaml
# Made-up crowd: (code, before PA/NA answer, after PA/NA answer); every PA item gets the PA answer.
CROWD = [("Angry_F1S1", (3, 1), (2, 2)), ("Angry_F1S2", (4, 1), (3, 3)),
         ("Fear_F1S1", (3, 2), (1, 4)), ("Fear_F1S2", (2, 1), (2, 2))]
# Made-up model result file "toy": two default tests and one anger situation tested twice.
MODEL_COLUMNS = {"General_test-0_order-0": (5, 1), "General_test-1_order-0": (4, 2),
                 "Anger-0_scenario-0_test-0_order-0": (1, 4), "Anger-0_scenario-0_test-1_order-0": (2, 3)}


def block(pa: int, na: int) -> list[int]:
    """The 20 PANAS answers (published order) of someone answering `pa` to every PA item, `na` to every NA item."""
    return [pa if k in PA else na for k in range(1, 21)]


def write_crowd(path: Path) -> Path:
    """EmotionBench's crowd.xlsx sheet Raw as CSV: codes in row 1 from column C, labels in column B."""
    rows = [["", "Info", *[code for code, _, _ in CROWD]], ["0", "Gender:", *["Female"] * len(CROWD)]]
    for phase, question, pick in (("before", "your current feeling", 1), ("after", "your feeling", 2)):
        answers = [block(*person[pick]) for person in CROWD]
        offset = 1 if phase == "before" else 21
        for k in range(20):
            rows.append([str(k + offset), f"Please indicate the extent of {question} in the following emotions: "
                         f"- item{k + 1:02d}", *[str(a[k]) for a in answers]])
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


def write_model(path: Path) -> Path:
    """results/PANAS Test/<model>-PANAS-testing.csv: items in reverse order (column order-0 says which)."""
    rows = [["question-0", "order-0", *MODEL_COLUMNS],
            ["Prompt: SCENARIO rate each emotion 1-5", "", *[" "] * len(MODEL_COLUMNS)]]
    for r in range(1, 21):
        item = 21 - r
        rows.append([f"{item}. item{item:02d}", str(item), *[str(block(*a)[item - 1]) for a in MODEL_COLUMNS.values()]])
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


def emotionbench_report(tmp: Path) -> Path:
    cli("import", "emotionbench-humans", str(write_crowd(tmp / "crowd.csv")), "--out", str(tmp / "humans.csv"))
    cli("import", "emotionbench-results", str(write_model(tmp / "toy-PANAS-testing.csv")), "--out", str(tmp / "imported"))
    cli("report", str(tmp / "imported"), "--human-change", str(tmp / "humans.csv"), "--out", str(tmp / "report"))
    return tmp / "report" / "report.html"


# --- 3. LEAS-format scenes answered in free text ---------------------------------------------------

FEELINGS = {"happiness": ["happy", "relieved", "grateful", "glad", "delighted"],
            "anger": ["annoyed", "angry", "frustrated", "irritated"],
            "fear": ["nervous", "scared", "anxious", "worried"],
            "sadness": ["sad", "disappointed", "hurt", "lonely"]}
ALSO = ["embarrassed", "guilty", "surprised", "ashamed", "proud"]
GLOBAL = {"happiness": "good", "anger": "bad", "fear": "bad", "sadness": "bad"}


def leas_report(tmp: Path) -> Path:
    leas = psyq.load_instrument("leas_psyq")

    def answer(body: dict) -> str:
        """The scene is found by its text in the conversation; its design emotion picks the words."""
        messages = body["messages"]
        said = "\n".join(m["content"] for m in messages if isinstance(m.get("content"), str))
        [scene] = [i for i in leas.items if i.text in said]
        rng = random.Random(int.from_bytes(hashlib.sha256(json.dumps([body["model"], messages]).encode()).digest()[:8],
                                           "big"))
        words = FEELINGS[scene.emotion]
        if body["model"] == "terse":
            you = rng.choice(words + [GLOBAL[scene.emotion]])
            other = rng.choice(words + ["fine", "tired"])
            return f"You: I would feel {you}.\nOther: {other}."
        you = rng.sample(words, 1) + rng.sample(ALSO, 1)
        other = rng.sample(ALSO, 1) + (rng.sample(words, 1) if rng.random() < 0.6 else [])
        return f"You: I'd feel {you[0]} but also a bit {you[1]}.\nOther: probably {' and '.join(other)}."

    personas = [{"id": f"p{k:02d}", "attributes": {"gender": "female" if k % 2 else "male"}} for k in range(20)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": personas}))
    with StubServer(answer=answer) as stub:
        (tmp / "study.yaml").write_text(yaml.safe_dump({
            "psyq": "study/1", "id": "leas_scenes", "instruments": ["leas_psyq"], "cohort": "cohort.yaml",
            "backends": [{"id": b, "kind": "openai", "base_url": stub.url, "model": b, "concurrency": 8}
                         for b in ("terse", "nuanced")],
            "protocol": {"seed": 1}}))
        run = administer(tmp / "study.yaml", tmp / "runs")
    cli("report", str(run), "--out", str(tmp / "report"))
    return tmp / "report" / "report.html"


# --- the screenshot -----------------------------------------------------------------------------

# The verdict's box: its <section>, else its <h2> and the elements after it up to the next <h2> or
# <section>; every shown descendant's box counted (not what a closed <details> hides), so that
# anything reaching out of the section shows (and is reported). Coordinates are the viewport's,
# the scroll added when clipping.
BOX = """(title) => {
  const h2 = [...document.querySelectorAll('h2')].find(h => h.textContent.trim() === title);
  if (!h2) return null;
  const section = h2.closest('section');
  let parts = [];
  if (section && section.querySelector('h2') === h2) parts = [section];
  else {
    parts = [h2];
    for (let e = h2.nextElementSibling; e && !['H2', 'SECTION'].includes(e.tagName); e = e.nextElementSibling)
      parts.push(e);
  }
  const content = parts.map(p => p.getBoundingClientRect());
  const shown = parts.flatMap(p => [p, ...p.querySelectorAll('*')]).filter(e => e.checkVisibility());
  const inner = shown.map(e => e.getBoundingClientRect()).filter(r => r.width > 0 && r.height > 0);
  const box = rs => ({left: Math.min(...rs.map(r => r.left)), top: Math.min(...rs.map(r => r.top)),
                      right: Math.max(...rs.map(r => r.right)), bottom: Math.max(...rs.map(r => r.bottom))});
  const c = box(content), all = box(inner);
  const overflowing = shown.filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible')
    .map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : ''));
  return {section: !!(section && parts[0] === section), elements: parts.length,
          content: c, all: all, sx: window.scrollX, sy: window.scrollY, scrolled: overflowing,
          pageWidth: document.documentElement.scrollWidth};
}"""


def screenshot(browser, html: Path, png: Path, title: str = TITLE) -> None:
    """The section of `html` whose <h2> is `title`, alone, at its full height, into `png`."""
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    page.goto(html.resolve().as_uri(), wait_until="load")
    found = page.evaluate(BOX, title)
    if found is None:
        sys.exit(f"{html}: no <h2> '{title}'")
    content, everything = found["content"], found["all"]
    if found["pageWidth"] > WIDTH:
        print(f"  warning: the page is {found['pageWidth']} px wide, wider than the {WIDTH} px viewport")
    out = [side for side in ("left", "right", "bottom") if abs(everything[side] - content[side]) > 0.5]
    if out:
        print(f"  warning: something in the section reaches out of it ({', '.join(out)}): {everything} vs {content}")
    if found["scrolled"]:
        print(f"  warning: elements scrolling sideways in the section: {found['scrolled']}")
    left = max(0, min(content["left"], everything["left"]) - MARGIN)
    right = min(found["pageWidth"], max(content["right"], everything["right"]) + MARGIN)
    top = max(0, content["top"] - MARGIN)
    bottom = max(content["bottom"], everything["bottom"]) + MARGIN
    clip = {"x": left + found["sx"], "y": top + found["sy"], "width": right - left, "height": bottom - top}
    page.screenshot(path=str(png), clip=clip, full_page=True)
    page.close()
    what = "its <section>" if found["section"] else f"its <h2> and the {found['elements'] - 1} elements after it"
    print(f"  {png.relative_to(ROOT)}: {round(clip['width'])} x {round(clip['height'])} px ({what})")


RUNS = {"iri": (iri_report, "verdict.png"), "emotionbench": (emotionbench_report, "verdict_emotionbench.png"),
        "leas": (leas_report, "verdict_leas.png")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", metavar="RUN", help=f"which: {', '.join(RUNS)} (default: all three)")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the Chromium to drive")
    parser.add_argument("--keep", type=Path, help="keep the runs and reports in this folder")
    args = parser.parse_args(argv)
    if unknown := [r for r in args.runs if r not in RUNS]:
        parser.error(f"no run {', '.join(unknown)}: choose from {', '.join(RUNS)}")
    from playwright.sync_api import sync_playwright

    started = time.perf_counter()
    names = args.runs or list(RUNS)
    folders = {name: Path(tempfile.mkdtemp(prefix=f"psyq-{name}-")) for name in names}
    try:
        reports = {}
        for name in names:                   # the runs first: Playwright's sync API holds an event loop
            begun = time.perf_counter()
            print(f"{name}: run and report in {folders[name]}")
            reports[name] = RUNS[name][0](folders[name])
            print(f"  {time.perf_counter() - begun:.0f} s")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            try:
                for name in names:
                    print(f"{name}: screenshot of {reports[name]}")
                    screenshot(browser, reports[name], IMAGES / RUNS[name][1])
                    print("\n".join("    " + line for line in verdict_lines(reports[name].with_suffix(".md"))))
            finally:
                browser.close()
    finally:
        for name, folder in folders.items():
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copytree(folder, args.keep / name, dirs_exist_ok=True)
            shutil.rmtree(folder, ignore_errors=True)
    print(f"done in {time.perf_counter() - started:.0f} s")


def verdict_lines(md: Path) -> list[str]:
    """The verdict's readings in report.md (its bullet points)."""
    lines = md.read_text().splitlines()
    start = lines.index(f"## {TITLE}")
    out = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("- "):
            out.append(line)
    return out


if __name__ == "__main__":
    main()
