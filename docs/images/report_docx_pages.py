"""Two pages of a report written for Word (``psyq report RUN --format docx``), for
docs/reading-report.md: the first page (the verdict first) and the page of a table in APA layout.

Run from the repository root, in its venv, with LibreOffice and poppler on the machine (Debian:
``apt-get install libreoffice-writer poppler-utils``)::

    . .venv/bin/activate
    python docs/images/report_docx_pages.py      # a few minutes; writes the two PNGs below

The run and report are docs/images/verdict_screenshots.py's (``iri_report``: three stub models,
300 personas, the shipped IRI, against the 1,973 Briganti et al. (2018) people), with the Word
report written too. ``report.docx`` is converted to PDF by LibreOffice headless (``soffice
--headless --convert-to pdf``), as a reader without Word would open it, and pages are drawn by
``pdftoppm`` at 70 dpi:

* ``report_docx_page1.png``: page 1;
* ``report_docx_table.png``: the page whose text has the caption named in ``TABLE`` (found with
  ``pdftotext``).

Nothing is left in the repository but the PNGs.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import verdict_screenshots  # noqa: E402   (puts tests/ on sys.path: the stub server)

IMAGES = HERE
TABLE = "Cohort against norms"       # the norm comparison: a long APA table with its note
DPI = "70"


def _tool(*args: str) -> str:
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{args[0]} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def _page(pdf: Path, number: int, png: Path) -> None:
    stem = png.with_suffix("")
    _tool("pdftoppm", "-png", "-r", DPI, "-f", str(number), "-l", str(number), "-singlefile", str(pdf), str(stem))


def main() -> None:
    for tool in ("soffice", "pdftoppm", "pdftotext"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed (Debian: apt-get install libreoffice-writer poppler-utils)")
    tmp = Path(tempfile.mkdtemp(prefix="psyq-docx-"))
    try:
        psyq = verdict_screenshots.psyq
        psyq.write_report = functools.partial(psyq.write_report, docx=True)    # the report as iri_report writes it, and for Word
        html = verdict_screenshots.iri_report(tmp)
        docx = html.parent / "report.docx"
        _tool("soffice", "--headless", "--convert-to", "pdf", "--outdir", str(tmp), str(docx))
        pdf = tmp / "report.pdf"
        pages = int(next(line.split()[-1] for line in _tool("pdfinfo", str(pdf)).splitlines()
                         if line.startswith("Pages:")))
        table = next(n for n in range(1, pages + 1)
                     if TABLE in _tool("pdftotext", "-f", str(n), "-l", str(n), str(pdf), "-"))
        _page(pdf, 1, IMAGES / "report_docx_page1.png")
        _page(pdf, table, IMAGES / "report_docx_table.png")
        print(f"{pages} pages; page 1 and page {table} ({TABLE}) -> {IMAGES}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
