"""The documentation runs as written: README.md, CONTRIBUTING.md and every page of docs/ (issue 26).

Both kinds of example run in a scratch folder that links only the repository's tests/ and docs/,
never its instruments/, personas/ or studies/: psyq's own files are read by name (`iri`,
`quickstart`, `iri_briganti2018_keyed`), as they are by a user of an installed psyq in a folder
of their own, and a page that names one by a path into the clone fails here. The files a reader
brings are played by the repository's test files (tests/data/, tests/fixtures/), by path.

(a) Python examples: every ``>>>`` example in docs/*.md, README.md and CONTRIBUTING.md runs with
    doctest in such a scratch folder. The pages that show a run's directory get `run_dir`: a
    small run of tests/data/mini_1to7.yaml (4 personas) made over the stub server, as
    tests/test_doctests.py makes it.

(b) Command lines: every ```bash block preceded by ``<!-- run -->`` runs, line by line (``\\``
    continues a line, ``&&`` chains, ``> FILE`` writes standard output to FILE, ``# ...`` is a
    comment), through the psyq command's own entry point (in-process, ``psyq.cli.main``,
    which `psyq` and `python -m psyq.cli` call) in such a scratch folder, so that `--out`
    files land there and never in the checkout. Each command must exit 0, or N when its comment
    starts with ``exit N``. A marked block may hold only psyq commands. Marked are the commands
    that need no network, no model and little time: `psyq list`, `init`, `validate`, `schema`,
    `score`, `plan ... --tokenizer approximate` (counts tokens as characters / 4, asks no
    server), `import` of the files in tests/fixtures/import/, `--help`. Not marked, so not run:
    `psyq run`, `judge`, `perturb` and `plan` without `--tokenizer approximate` (they need a
    model or a server); `status`, `export`, `scores`, `report`, `sensitivity`, `rating-sheet`
    and `import replies / ratings / emotionbench-results` on a run (`runs/quickstart`) or on
    files the reader downloads or writes (EmotionBench, answers.csv: they are not in the
    repository); shell lines such as `export MY_API_KEY=...` or `cd`; bench/run_all (20
    minutes) and the test command itself. The same commands are run on real runs by the
    suite's own tests (test_runs, test_report, test_importers ...).

(c) Links: every relative link in README.md, CONTRIBUTING.md, docs/*.md and the READMEs of
    instruments/, studies/ and personas/ (pointers to docs/ now) names a file or folder
    that exists, and a ``#anchor`` into a Markdown file names one of its headings (GitHub's
    slugs). docs/local-models.md, written on another branch, may be missing until it is merged.

(d) The exit codes in docs/files.md are the ones `psyq --help` prints, and the README keeps the
    test command that .ci/run calls.
"""

from __future__ import annotations

import doctest
import io
import re
import shlex
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from psyq.cli import main as psyq_main
from psyq.cli.common import EXIT_CODES_HELP
from runs_helper import make_mini_run

ROOT = Path(__file__).resolve().parents[1]
POINTERS = [ROOT / folder / "README.md" for folder in ("instruments", "studies", "personas")]   # now pointers to docs/
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *POINTERS, *sorted((ROOT / "docs").glob("*.md"))]
SHARED = ["tests", "docs"]      # linked into the scratch folder: never psyq's own instruments/, personas/, studies/
PENDING = {"docs/local-models.md"}       # linked before it exists: written on branch h-local
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)
RUN_BLOCK = re.compile(r"<!--\s*run\s*-->[ \t]*\n```bash\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"(?<!!)\[(?:[^\]`]|`[^`]*`)*\]\(([^)\s]+)\)")
EXPECT = re.compile(r"#\s*exit\s+(\d+)\b")


def scratch_folder(folder: Path) -> Path:
    """`folder` with only the repository's tests/ and docs/ linked in: where the examples run."""
    for name in SHARED:
        (folder / name).symlink_to(ROOT / name, target_is_directory=True)
    return folder


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def with_doctests() -> list[Path]:
    return [page for page in PAGES if ">>> " in page.read_text(encoding="utf-8")]


def run_blocks() -> list[tuple[str, int, str]]:
    """(page, line number of the block, the block's text) of every block marked to run."""
    blocks = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in RUN_BLOCK.finditer(text):
            blocks.append((rel(page), text.count("\n", 0, match.start()) + 1, match[1]))
    return blocks


def commands(block: str) -> list[tuple[list[str], str | None, int]]:
    """The commands of a block: (argv after `psyq`, file for `> FILE` or None, expected exit code)."""
    lines = re.sub(r"\\\n\s*", " ", block).splitlines()
    found = []
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        comment = line.split(" #", 1)[1] if " #" in line else ""
        expected = EXPECT.match("#" + comment.lstrip())
        words = shlex.split(line, comments=True)
        parts = [[]]
        for word in words:
            if word == "&&":
                parts.append([])
            else:
                parts[-1].append(word)
        for argv in parts:
            out = None
            if ">" in argv:
                k = argv.index(">")
                argv, out = argv[:k], argv[k + 1]
            assert argv[0] == "psyq", f"a block marked to run holds only psyq commands: {line!r}"
            found.append((argv[1:], out, int(expected[1]) if expected else 0))
    return found


def call_psyq(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = psyq_main(argv)
        except SystemExit as stop:             # argparse: --help, usage errors
            code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
    return code, out.getvalue(), err.getvalue()


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
            base = slug(m[1])
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    # Inline code that is not a link's text ([`a.md`](a.md) stays a link).
    text = re.sub(r"(?<!\[)`[^`\n]*`(?!\])", "", text)
    return [target for target in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", target)]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_mini_run(tmp_path_factory.mktemp("docs_run"), n_personas=4, repeats=1)


@pytest.mark.parametrize("page", with_doctests(), ids=rel)
def test_python_examples_run(page, run_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(scratch_folder(tmp_path))
    text = page.read_text(encoding="utf-8")
    test = doctest.DocTestParser().get_doctest(text, {"run_dir": run_dir}, rel(page), str(page), 0)
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    runner.run(test, out=report.write)
    assert runner.failures == 0, report.getvalue()
    assert runner.tries == len(test.examples) > 0


def test_there_are_examples_to_run():
    pages = {rel(p) for p in with_doctests()}
    assert {"docs/instruments.md", "docs/comparing.md", "docs/cohorts.md", "docs/studies.md"} <= pages
    assert len(run_blocks()) >= 10


@pytest.mark.parametrize("page, line, block", run_blocks(), ids=[f"{p}:{n}" for p, n, _ in run_blocks()])
def test_marked_command_lines_run(page, line, block, tmp_path, monkeypatch):
    monkeypatch.chdir(scratch_folder(tmp_path))
    steps = commands(block)
    assert steps, f"{page}:{line}: an empty block is marked to run"
    for argv, out, expected in steps:
        code, stdout, stderr = call_psyq(argv)
        said = f"{page}:{line}: psyq {shlex.join(argv)} exited {code}, expected {expected}\n{stderr[-3000:]}"
        assert code == expected, said
        if out:
            (tmp_path / out).write_text(stdout, encoding="utf-8")
        if expected == 0 and out is None:
            assert stdout or stderr, f"{page}:{line}: psyq {shlex.join(argv)} said nothing"


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_relative_links_point_at_files_that_exist(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if path and not file.exists():
            if rel(file) not in PENDING:
                broken.append(target)
            continue
        if anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    assert broken == [], f"{rel(page)}: broken links {broken}"


def test_links_are_found_and_checked():
    # The checker must see links, including those whose text is code ([`x`](x)), and not those in code.
    assert len([t for p in PAGES for t in links(p)]) >= 60
    sample = ROOT / "docs" / "instruments.md"
    assert "../instruments/instrument.schema.json" in links(sample)
    assert slug("Norm samples: verification, groups, which samples are compared") == \
        "norm-samples-verification-groups-which-samples-are-compared"
    assert slug("Licensed item texts supplied by the user (`item_texts`)") == \
        "licensed-item-texts-supplied-by-the-user-item_texts"


def test_exit_codes_page_is_what_psyq_help_prints():
    text = (ROOT / "docs" / "files.md").read_text(encoding="utf-8")
    shown = text.split("<!-- exit-codes: begin -->\n```text\n")[1].split("\n```\n<!-- exit-codes: end -->")[0]
    assert shown == EXIT_CODES_HELP
    code, stdout, _ = call_psyq(["--help"])
    assert code == 0 and EXIT_CODES_HELP in stdout
    assert [line.split()[0] for line in shown.splitlines()[1:] if line[:5].strip().isdigit()] == \
        ["0", "1", "2", "3", "4", "5", "6", "130"]


def test_readme_is_a_front_door_that_keeps_the_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert "```bash\npython -m pytest\n```" in readme       # .ci/run calls exactly this line
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]'" in readme
