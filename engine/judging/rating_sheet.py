"""A blind rating sheet: every rating target of a run, for people to rate on a rubric's dimensions.

``psyq rating-sheet RUN OUT.csv --rubric empathy_ceb [--seed N] [--with-perturbed]`` writes one
row per target (persona and reference replies; perturbed texts only with ``--with-perturbed``:
people's time is dear, and robustness is usually asked of judges), in an order shuffled with the seed,
with columns ``rater_id`` (for the rater to fill in), ``response_id``, ``message`` (the
help-seeker's message, with its context in brackets when the item has one), ``reply`` (the text
to rate) and one empty column per dimension of the rubric. Nothing says where a text came from.
The filled-in sheet imports as it is: ``psyq import ratings SHEET.csv --run RUN --rubric ID``.

Example:
    >>> sheet_rows(pd.DataFrame(columns=["response_id", "instrument", "item_id", "text"]), {}, ["a"], 0)
    []
"""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path
from typing import Mapping

import pandas as pd

from psyq.engine.files.atomic import write_text_atomic
from psyq.engine.design.instrument import Instrument
from psyq.engine.kinds.response import response_items
from psyq.engine.kinds.response.rubrics import MultiRubric

FIXED_COLUMNS = ["rater_id", "response_id", "message", "reply"]


def sheet_rows(targets: pd.DataFrame, instruments: Mapping[str, Instrument], dimensions: list[str],
               seed: int) -> list[dict[str, str]]:
    """The sheet's rows: targets whose message is a response item of the run, shuffled with `seed`
    (sorted by response_id first, so the order depends on the seed and the targets only)."""
    messages = {(inst_id, item.id): item.message.strip() + (f" [{item.context.strip()}]" if item.context else "")
                for inst_id, inst in instruments.items() for item in response_items(inst)}
    rows = [{"rater_id": "", "response_id": t.response_id, "message": messages[(t.instrument, t.item_id)],
             "reply": t.text, **{d: "" for d in dimensions}}
            for t in targets.sort_values("response_id").itertuples(index=False)
            if (t.instrument, t.item_id) in messages]
    random.Random(seed).shuffle(rows)
    return rows


def write_rating_sheet(run_path: str | Path, out: str | Path, rubric: MultiRubric, seed: int = 0,
                       with_perturbed: bool = False) -> int:
    """Add the run's persona replies to its targets, then write the blind sheet (perturbed texts
    left out unless `with_perturbed`); returns its rows."""
    from psyq.engine.results.export import run_instruments
    from psyq.engine.store.ratings import read_targets
    from psyq.engine.store.run_dir import open_run_dir
    from psyq.engine.store.runlock import RunLock
    from psyq.engine.store.run_store import RunStore
    from psyq.engine.judging.reply_judge import sync_persona_targets

    run = open_run_dir(run_path)
    instruments = run_instruments(run)
    with RunLock(run.path), RunStore(run.database) as store:
        sync_persona_targets(store, instruments)
        targets = read_targets(store)
    if not with_perturbed:
        targets = targets[targets["perturbation"].isna()]
    rows = sheet_rows(targets, instruments, rubric.dimension_ids, seed)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIXED_COLUMNS + rubric.dimension_ids, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(out, buffer.getvalue())
    return len(rows)
