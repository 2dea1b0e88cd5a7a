"""Malformed input of every file kind: a plain error with its place, exit 2, bounded memory.

``tests/fixtures/malformed/<kind>/`` holds hostile or broken files of each kind psyq reads
(instrument, study, cohort, rubric, lexicon: through ``psyq validate``; human answers: through
``psyq score instruments/iri.yaml FILE``; perceivers' and targets' CSVs: through their readers
in ``psyq.engine.kinds.vignette.accuracy_csv``, as ``psyq report`` calls them, since the command needs a run).
``expected.json`` maps each file to where its (first relevant) error must point —
``kind/file:line[:column]``, or only the file when it has no line (empty files) — and a part of
the message. The expectations were written by reading each message and checking that it names
the real fault at the right place; cohort files may point into the CSV they name.

Each case runs in its own child process, whose peak memory is read with ``os.wait4``: a file
of a few hundred bytes must not take more than 100 MB above what ``psyq validate`` takes on a
valid ten-item instrument, measured once in the same run (the imports alone take 115-185 MB,
growing with psyq, which is not the point).
No wall-clock time is asserted; timings are printed (``pytest -s``).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "malformed"
EXPECTED = json.loads((CORPUS / "expected.json").read_text())
MAX_RSS_ABOVE_BASELINE_MB = 100
MAX_ITEMS_RSS_MB = 150   # 12,000 items above 10 items: twice what they cost today would exceed it

READER = """
import sys
from psyq.engine.kinds.vignette import accuracy_csv
from psyq.cli import report_input_error
from psyq.engine.files.errors import InputError
from psyq.engine.design.instrument import load_instrument
from psyq.engine.files.notices import print_notices_to_stderr
print_notices_to_stderr()
try:
    getattr(accuracy_csv, sys.argv[1])(sys.argv[3], load_instrument(sys.argv[2]))
except InputError as exc:
    report_input_error(exc)
    sys.exit(2)
"""


class Child:
    """A finished child process: exit code, output and peak resident memory.

    Children are forked by ``tests/forkrunner.py``, which has imported psyq once: each command
    still runs in a process of its own, from the state a fresh ``python -m psyq.cli`` reaches
    after its imports, and ``os.wait4`` gives that child's own peak memory.
    """

    _runners: dict[tuple[str, ...], subprocess.Popen] = {}

    @classmethod
    def runner(cls, args: list[str]) -> subprocess.Popen:
        """The fork runner for this command: `psyq score` loads the analysis package before it
        reads its CSV; validate and the CSV readers need the engine only."""
        preload = ("psyq.cli", "psyq.analysis.scoring.score_table", "psyq.analysis.scoring.scores") if "score" in args \
            else ("psyq.cli", "psyq.engine.kinds.vignette.accuracy_csv")
        runner = cls._runners.get(preload)
        if runner is None or runner.poll() is not None:
            runner = cls._runners[preload] = subprocess.Popen(
                [sys.executable, str(ROOT / "tests" / "forkrunner.py"), *preload], cwd=ROOT,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        return runner

    def __init__(self, args: list[str]):
        with tempfile.TemporaryDirectory() as tmp:
            out, err = Path(tmp) / "out", Path(tmp) / "err"
            runner = self.runner(args)
            runner.stdin.write(json.dumps({"args": args, "cwd": str(ROOT), "out": str(out), "err": str(err)}) + "\n")
            runner.stdin.flush()
            answer = runner.stdout.readline()
            if not answer:
                pytest.fail("the fork runner ended")
            result = json.loads(answer)
            if result["returncode"] == -9:
                pytest.fail("the child did not finish (hang)")
            self.returncode, self.seconds = result["returncode"], result["seconds"]
            self.rss_mb = result["rss_kb"] / 1024   # kilobytes on Linux
            self.stdout, self.stderr = out.read_text(), err.read_text()


@pytest.fixture(scope="module", autouse=True)
def _stop_runner():
    yield
    for runner in Child._runners.values():
        runner.stdin.close()
        runner.wait(timeout=60)
    Child._runners.clear()


def psyq(*args: str) -> Child:
    return Child(["-m", "psyq.cli", *args])


def command_for(kind: str, path: str) -> list[str]:
    if kind == "answers":
        return ["-m", "psyq.cli", "score", "instruments/iri.yaml", path]
    if kind in ("perceiver", "target"):
        reader = "read_perceiver_csv" if kind == "perceiver" else "read_target_reports_csv"
        return ["-c", READER, reader, "instruments/ea_vignettes_psyq.yaml", path]
    return ["-m", "psyq.cli", "validate", path]


def corpus_files() -> list[str]:
    return sorted(str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*") if p.is_file())


@functools.cache
def baseline_rss_mb() -> float:
    """Peak memory of `psyq validate` on a valid ten-item instrument: what the imports take."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "small.yaml"
        path.write_text(_big_instrument(10))
        child = psyq("validate", str(path))
    assert child.returncode == 0, child.stderr
    return child.rss_mb


def assert_refused(child: Child, where: str, message: str,
                   max_above_baseline_mb: float = MAX_RSS_ABOVE_BASELINE_MB) -> None:
    """Exit 2, no traceback, bounded memory, and one error line at `where` with `message`."""
    print(f"{where}: {child.seconds:.2f} s, {child.rss_mb:.0f} MB")
    assert "Traceback" not in child.stderr, child.stderr
    assert child.returncode == 2, child.stderr
    lines = child.stderr.splitlines()
    assert any(line.startswith(f"error: {where}:") and message in line for line in lines), \
        f"expected 'error: {where}: ...{message}...' in:\n{child.stderr}"
    assert child.rss_mb - baseline_rss_mb() < max_above_baseline_mb


def test_corpus_is_complete() -> None:
    files = corpus_files()
    assert len(files) >= 80
    assert sorted(EXPECTED) == files
    kinds = {f.split("/")[0] for f in files}
    assert kinds == {"instrument", "study", "cohort", "rubric", "lexicon", "answers", "perceiver", "target"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_file_is_refused(name: str) -> None:
    rel = f"tests/fixtures/malformed/{name}"
    child = Child(command_for(name.split("/")[0], rel))
    expected = EXPECTED[name]
    where = expected["where"]
    where = where if where.startswith("/") else f"tests/fixtures/malformed/{where}"
    assert_refused(child, where, expected["message"])


# --- generated cases: too large to store, or not files at all ----------------------------


def _big_instrument(n_items: int, duplicate_last: bool = False) -> str:
    lines = ["psyq: instrument/1", "id: big", "name: Big", "version: 1", "content_source: psyq",
             "citations: {me: me}", "terms: none", "instructions: answer",
             "scale:", "  - {value: 1, label: never}", "  - {value: 2}", "  - {value: 3, label: always}",
             "subscales:", "  - {id: A, name: A}", "  - {id: B, name: B}", "items:"]
    for i in range(n_items):
        item_id = "i0" if duplicate_last and i == n_items - 1 else f"i{i}"
        lines.append(f"  - {{id: {item_id}, text: item number {i}, subscales: [{'AB'[i % 2]}], "
                     f"reverse: {'true' if i % 3 == 0 else 'false'}}}")
    return "\n".join(lines) + "\n"


def test_twelve_thousand_items_validate(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(_big_instrument(12_000))
    child = psyq("validate", str(path))
    print(f"12,000 items: {child.seconds:.2f} s, {child.rss_mb:.0f} MB (10 items: {baseline_rss_mb():.0f} MB)")
    assert child.returncode == 0, child.stderr
    # What the items cost, measured against the same command on 10 items in this run (about 115 MB
    # on 2026-11-27, ~10 kB an item): the imports' share grows with psyq and is not the point.
    assert child.rss_mb - baseline_rss_mb() < MAX_ITEMS_RSS_MB
    # The same with the last item reusing the first id: both items are named (item 0 is on
    # line 17, the header taking 16 lines; item 11,999 on line 12,016; the id value in column 10).
    path.write_text(_big_instrument(12_000, duplicate_last=True))
    child = psyq("validate", str(path))
    assert_refused(child, f"{path}:17:10", "item id 'i0' is used by more than one item",
                   max_above_baseline_mb=MAX_ITEMS_RSS_MB)
    assert f"error: {path}:12016:10: items[11999].id:" in child.stderr


def test_file_over_the_size_cap(tmp_path: Path) -> None:
    # A sparse file: 11 MB by its size, nothing on disk; refused by its size before reading.
    for name, args in (("big.yaml", ["validate"]), ("big.csv", ["score", "instruments/iri.yaml"])):
        path = tmp_path / name
        with open(path, "wb") as handle:
            handle.truncate(11 * 1024 * 1024)
        assert_refused(psyq(*args, str(path)), str(path), "the file is too large")


@pytest.mark.parametrize("args", [
    ["validate", "{x}"],
    ["score", "{x}", "tests/data/mini_answers.csv"],
    ["score", "tests/data/mini_1to7.yaml", "{x}"],
    ["run", "{x}"],
    ["judge", "runs", "--rubric", "{x}"],
    ["perturb", "runs", "--set", "{x}"],
], ids=["validate", "score-instrument", "score-csv", "run", "judge-rubric", "perturb-set"])
@pytest.mark.parametrize("what", ["/dev/zero", "directory", "fifo"])
def test_not_a_file(tmp_path: Path, args: list[str], what: str) -> None:
    if what == "directory":
        if args[0] == "validate":
            pytest.skip("validate takes directories on purpose")
        x, said = str(tmp_path), "this is a directory, not a file"
    elif what == "fifo":
        x, said = str(tmp_path / "pipe"), "this is a pipe (FIFO), not a file"
        os.mkfifo(x)
    else:
        x, said = "/dev/zero", "this is a device, not a file"
    assert_refused(psyq(*[a.replace("{x}", x) for a in args]), x, said)


# --- CSV files read otherwise than written: said, and scored right ------------------------

# mini_answers.csv scored by hand (mini_1to7.yaml: scale 1-7, items a and c reversed as 8 - x;
# X = a + b (2 answered), Y = mean of b, c, d (2 answered), Z = sum of a-d prorated (3 answered)):
# r1 a=2→6, b=5, c=7→1, d=4: X 11, Y 10/3, Z 16. r2 b=3, d=6: X none, Y 4.5, Z none.
# r4 a=1→7, b=2, c=3→5: X 9, Y 3.5, Z = 14/3 × 4 = 56/3. A shifted column gives other numbers.
HAND_SCORES = {"r1": (11, 10 / 3, 16), "r2": (None, 4.5, None), "r4": (9, 3.5, 56 / 3)}
MINI_LINES = (ROOT / "tests" / "data" / "mini_answers.csv").read_text().splitlines()


@pytest.mark.parametrize("name, lines, note", [
    ("every row ends with a comma",
     [MINI_LINES[0]] + [line + "," for line in MINI_LINES[1:]],
     ":2: every row ends with a comma but the header does not"),
    ("every line ends with a comma",
     [line + "," for line in MINI_LINES],
     ":1: every line ends with a comma (an empty last column)"),
    ("semicolons", [line.replace(",", ";") for line in MINI_LINES],
     ":1: the columns are separated by ';', not commas"),
    ("tabs", [line.replace(",", "\t") for line in MINI_LINES],
     ":1: the columns are separated by tabs, not commas"),
    ("windows line ends and a byte-order mark", ["\ufeff" + MINI_LINES[0]] + MINI_LINES[1:], None),
])
def test_csv_read_otherwise_is_said_and_scored_right(tmp_path: Path, name: str, lines: list[str],
                                                     note: str | None) -> None:
    path, out = tmp_path / "answers.csv", tmp_path / "scores.csv"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    child = psyq("score", "tests/data/mini_1to7.yaml", str(path), "--out", str(out))
    assert child.returncode == 0, child.stderr
    notes = [line for line in child.stderr.splitlines() if line.startswith("note:")]
    if note:
        assert len(notes) == 1 and notes[0].startswith(f"note: {path}{note}"), child.stderr
    else:
        assert notes == []
    scores = pd.read_csv(out, index_col="respondent_id")
    assert list(scores.index) == ["r1", "r2", "r4"] and {"X", "Y", "Z"} <= set(scores.columns)
    for respondent, expected in HAND_SCORES.items():
        for column, value in zip("XYZ", expected):
            got = scores.loc[respondent, column]
            assert pd.isna(got) if value is None else got == pytest.approx(value), (respondent, column)


def test_notices_reach_library_users_as_warnings(tmp_path: Path) -> None:
    from psyq.analysis.scoring.human_answers import read_answers_csv
    from psyq.engine.design.instrument import load_instrument
    from psyq.engine.files.notices import InputNotice

    path = tmp_path / "answers.csv"
    path.write_text("\n".join(line.replace(",", ";") for line in MINI_LINES) + "\n")
    with pytest.warns(InputNotice, match="separated by ';'"):
        answers = read_answers_csv(path, load_instrument(ROOT / "tests" / "data" / "mini_1to7.yaml"))
    assert answers.loc["r1", "b"] == 5 and answers.loc["r4", "gender"] == "female"
