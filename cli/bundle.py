"""Sharing a run: psyq bundle (one zip: the run, the files it read, its environment) and psyq
verify (does a bundle hold what it says, and do its instruments still give its scores).

The scores a bundle carries and the ones `psyq verify` computes again are psyq.analysis's (the
command line is the one place that may import both it and the engine's bundle room).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from psyq.cli.common import EXIT_BAD_INPUT, EXIT_OK

if TYPE_CHECKING:
    from psyq.engine.results.run import Run

SCORE_COLUMNS_ROUNDED = 10   # digits the scores are compared to: a CSV round trip, not a change of method


def scores_csv(run: Run) -> bytes:
    """The run's subscale scores as a bundle carries them (scores.csv): long, one row per backend x
    respondent x repeat x subscale (x stage and situation for a run with stages).

    Example (`run_dir`: a finished stub run of the mini instrument):
        >>> from psyq.engine.results.run import open_run
        >>> scores_csv(open_run(run_dir)).decode().splitlines()[0].split(",")[:4]
        ['backend_id', 'model', 'respondent_id', 'repeat']
    """
    if run.stages:
        from psyq.analysis.scoring.stage_scores import load_stage_scores

        frame = load_stage_scores(run)
    else:
        from psyq.analysis.scoring.scores import load_run_scores

        frame = load_run_scores(run)
    return frame.to_csv(index=False, lineterminator="\n").encode("utf-8")


def score_differences(recorded: bytes, computed: bytes) -> list[str]:
    """Rows where the scores recorded in a bundle and those computed again differ, said one per line
    (at most 20, then how many more).

    Example:
        >>> score_differences(b"respondent_id,score\\np1,2.0\\n", b"respondent_id,score\\np1,2.5\\n")
        ['scores.csv row 1 (p1): score recorded 2.0, computed again 2.5']
    """
    import io

    import pandas as pd

    old, new = (pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False) for data in (recorded, computed))
    if list(old.columns) != list(new.columns):
        return [f"scores.csv: columns {list(old.columns)} recorded, {list(new.columns)} computed again"]
    if len(old) != len(new):
        return [f"scores.csv: {len(old)} rows recorded, {len(new)} computed again"]
    out = []
    for i in range(len(old)):
        for column in old.columns:
            a, b = old.iat[i, old.columns.get_loc(column)], new.iat[i, new.columns.get_loc(column)]
            if a != b and not _same_number(a, b):
                who = old.iat[i, old.columns.get_loc("respondent_id")] if "respondent_id" in old.columns else ""
                out.append(f"scores.csv row {i + 1} ({who}): {column} recorded {a}, computed again {b}")
    return out[:20] + ([f"... and {len(out) - 20} more differences"] if len(out) > 20 else [])


def _same_number(a: str, b: str) -> bool:
    try:
        return round(float(a), SCORE_COLUMNS_ROUNDED) == round(float(b), SCORE_COLUMNS_ROUNDED)
    except ValueError:
        return False


def cmd_bundle(args: argparse.Namespace) -> int:
    from psyq.engine.bundle.layout import RUN, SCORES, SITE, member_path
    from psyq.engine.bundle.write import write_bundle
    from psyq.cli.common import chosen_run
    from psyq.engine.results.run import open_run

    run = open_run(chosen_run(args.run))
    manifest = run.manifest
    out = Path(args.out) if args.out else Path(f"{manifest.get('study', 'run')}_{manifest.get('run_id', run.path.name)}.zip")

    notes = []
    if args.site:
        from psyq.engine.view.site import count_trials, site_size_note

        note = site_size_note(count_trials(run.path))
        if note:
            print(f"note: {note}", file=sys.stderr)
            notes.append(note)

    def derived(bundled_run: Path) -> Iterator[tuple[str, bytes]]:
        # The scores of the run as the bundle holds it (twins' ids replaced): what verify computes again.
        bundled = open_run(bundled_run)
        yield SCORES, scores_csv(bundled)
        if args.site:
            # Rendered from the bundle's copy of the store, so that its redactions hold in the pages too.
            from psyq.engine.view.site import site_pages

            for name, data in site_pages(bundled, report_at=f"../{RUN}/report.html"):
                yield member_path(SITE, name), data

    bundled = write_bundle(run, out, with_human=args.with_human, with_texts=args.with_texts, derived=derived,
                           notes=notes)
    for item in bundled.left_out:
        print(f"left out: {item['what']}: {item['why']}", file=sys.stderr)
    for item in bundled.changed:
        print(f"changed: {item['what']}: {item['why']}", file=sys.stderr)
    print(f"{len(bundled.members)} files -> {bundled.path}  (psyq verify {bundled.path}; psyq report {bundled.path})"
          + (f"; unzip it and open {SITE}/index.html in a browser" if args.site else ""))
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    from psyq.engine.bundle.layout import SCORES
    from psyq.engine.bundle.read import is_bundle
    from psyq.engine.bundle.verify import verify_bundle
    from psyq.engine.files.errors import InputError
    from psyq.engine.results.run import open_run

    if not is_bundle(args.bundle):
        raise InputError.single(args.bundle, "not a psyq bundle (a .zip file made by psyq bundle)")
    with open_run(args.bundle) as run:
        bundle = run.bundle
        differences = verify_bundle(run)
        checked = "hashes, the store's integrity and counts"
        if (bundle.folder / SCORES).is_file():
            differences += score_differences((bundle.folder / SCORES).read_bytes(), scores_csv(run))
            checked += ", the scores computed again from the stored answers"
        else:
            differences.append(f"{SCORES}: not in the bundle, so the scores could not be checked")
    for line in differences:
        print(f"error: {args.bundle}: {line}", file=sys.stderr)
    if differences:
        return EXIT_BAD_INPUT
    print(f"ok  {args.bundle}: {checked}")
    return EXIT_OK


def _arguments_bundle(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="a run's folder (runs/STUDY/RUN_ID), or a study's runs folder (runs/STUDY) for its "
                               "latest run")
    p.add_argument("--out", metavar="FILE.zip", help="the bundle to write (default: STUDY_RUNID.zip in this folder)")
    p.add_argument("--with-human", action="store_true",
                   help="add people's data: the human data a cohort was drawn from, twins' own respondent ids")
    p.add_argument("--with-texts", action="store_true",
                   help="keep licensed item texts you supplied (BES, PANAS): their file, and the prompts as sent")
    p.add_argument("--site", action="store_true",
                   help="add site/: the viewer's pages as a static site that opens from disk or any static host "
                        "(site/index.html: the run, its trials, each transcript)")


def _arguments_verify(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", metavar="FILE.zip", help="a bundle made by psyq bundle")


COMMANDS = {
    "bundle": (cmd_bundle, "one zip of a run to share: the run, the files it read, its environment, a README",
               _arguments_bundle),
    "verify": (cmd_verify, "check a bundle: hashes, the store's integrity and counts, the scores computed again",
               _arguments_verify),
}
