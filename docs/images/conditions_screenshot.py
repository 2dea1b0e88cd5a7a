"""A screenshot of a report's "Conditions compared" section, for docs/comparing-conditions.md.

Run from the repository root, in its venv (Playwright is a dev dependency; Chromium from Debian's
``chromium`` package at /usr/bin/chromium)::

    . .venv/bin/activate
    python docs/images/conditions_screenshot.py          # about a minute; writes docs/images/conditions.png

The study is tests/test_conditions_report.py's (imported from the tests folder, with its stub
script): 2 stub backends × 3 ways of asking (logprobs, verbalized, ssr) × 2 persona templates, 20
personas, the shipped IRI, against tests/stub_server.py answering chat completions and embeddings
in the shapes OpenAI documents. Backend a with the plain template answers as 60 of the 1,973
Briganti et al. (2018) people did, with the eager template the same a point up, backend b uniformly.
It is run to the end (the test also kills and resumes it), reported with ``psyq report RUN --human
iri=iri_briganti2018_keyed:keyed``, and the section is screenshot as docs/images/verdict_screenshots.py
screenshots the verdict. Nothing is left in the repository but the PNG.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))
from test_conditions_report import Script, write_study  # noqa: E402
from stub_server import StubServer  # noqa: E402
from verdict_screenshots import CHROMIUM_ARGS, IMAGES, screenshot  # noqa: E402

TITLE = "Conditions compared"
TOP = 1600          # px of the section kept: its summary, the conditions and the first pairs head to head


def main() -> None:
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="psyq-conditions-"))
    try:
        with StubServer(answer=(script := Script()).answer, distribution=script.distribution,
                        embedding=script.embedding) as stub:
            study = write_study(tmp, stub.url)
            done = subprocess.run([sys.executable, "-m", "psyq", "run", str(study), "--runs-dir", str(tmp / "runs")],
                                  cwd=tmp, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"psyq run failed ({done.returncode}):\n{done.stderr}")
        run = next((tmp / "runs").rglob("manifest.json")).parent
        done = subprocess.run([sys.executable, "-m", "psyq", "report", str(run), "--human",
                               "iri=iri_briganti2018_keyed:keyed"], cwd=tmp, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"psyq report failed ({done.returncode}):\n{done.stderr}")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            try:
                screenshot(browser, run / "report.html", IMAGES / "conditions.png", TITLE)
            finally:
                browser.close()
        # The section is long (66 pairs in its head-to-head table): the docs show its first screen.
        from PIL import Image

        with Image.open(IMAGES / "conditions.png") as image:
            image.crop((0, 0, image.width, min(image.height, TOP))).save(IMAGES / "conditions.png")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
