"""Scores of a staged run (engine/administer/plan.py) in the tidy "scores with stages" frame.

One row per backend_id, respondent_id, repeat, situation_id, emotion, stage, phase, instrument,
subscale, with the score and how it was reached (n_answered, n_items, prorated). `stage` is the
0-based index in the study's `stages:`; `phase` is "before" for a measure stage before the evoke
stage and "after" for one after it. Each measure stage of each situation is scored on its own
with the rating kind's rules (engine/kinds/rating.py: reverse keying, prorating, `min_answered`).

Not run: needs a run with stages (`run_dir` here has none); :func:`stage_scores` shows the frame on a
staged table made from one.

Example:
    >>> frame = load_stage_scores(run_dir)                                 # doctest: +SKIP
    >>> frame.groupby(["emotion", "phase", "subscale"])["score"].mean()    # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from psyq.engine.design.instrument import Instrument
from psyq.engine.kinds import get_kind
from psyq.engine.design.situations import SituationSet
from psyq.engine.results.run import Run

STAGE_SCORE_COLUMNS = ["backend_id", "respondent_id", "repeat", "situation_id", "emotion", "stage", "phase",
                       "instrument", "subscale", "score", "n_answered", "n_items", "prorated"]


def evoke_stage_of(stages: list) -> int:
    """The index of the one `evoke:` stage in a study's `stages:` (as written: dicts or models).

    Example:
        >>> evoke_stage_of([{"measure": "panas"}, {"evoke": "situations"}, {"measure": "panas"}])
        1
    """
    found = [k for k, s in enumerate(stages) if "evoke" in (s if isinstance(s, dict) else s.model_dump())]
    if len(found) != 1:
        raise ValueError(f"expected exactly one evoke stage, found {len(found)}")
    return found[0]


def stage_scores(table: pd.DataFrame, instruments: Mapping[str, Instrument], situations: SituationSet,
                 evoke_stage: int) -> pd.DataFrame:
    """The scores of a staged run's export `table` (columns :data:`STAGE_SCORE_COLUMNS`).

    `situations`: the run's situation set (for each situation's emotion); `evoke_stage`: the
    index of the evoke stage (:func:`evoke_stage_of`). A situation id not in the set is an error,
    never a guessed emotion.

    Example (`run_dir`'s answers as if measured twice, before and after the situation anger_01):
        >>> from psyq import export_table, load_instrument
        >>> from psyq.engine.design.situations import load_situations
        >>> answers = export_table(run_dir)
        >>> table = pd.concat([answers.assign(situation_id="anger_01", stage=stage) for stage in (0, 2)])
        >>> situations = load_situations("tests/fixtures/stages/situations_two.yaml")
        >>> frame = stage_scores(table, {"mini": load_instrument("tests/data/mini_1to7.yaml")}, situations, 1)
        >>> frame.loc[frame["subscale"] == "X", ["respondent_id", "emotion", "stage", "phase", "score"]].head(2)
          respondent_id emotion  stage   phase  score
        0           p00   anger      0  before    9.0
        3           p00   anger      2   after    9.0
    """
    if "stage" not in table.columns:
        raise ValueError("this table has no `stage` column: it is not the export of a run with stages")
    emotion = {s.id: s.emotion for s in situations.situations}
    unknown = sorted(set(table["situation_id"].dropna()) - set(emotion))
    if unknown:
        raise ValueError(f"situation(s) {', '.join(unknown)} are not in the situation set '{situations.id}'")
    rating = get_kind("rating")
    frames = []
    for (situation_id, stage), rows in table.groupby(["situation_id", "stage"], sort=True):
        scores = rating.score(rows, instruments)
        if scores.empty:
            continue
        scores = scores.assign(situation_id=situation_id, emotion=emotion[situation_id], stage=int(stage),
                               phase="before" if int(stage) < evoke_stage else "after")
        frames.append(scores)
    if not frames:
        return pd.DataFrame(columns=STAGE_SCORE_COLUMNS)
    out = pd.concat(frames, ignore_index=True)[STAGE_SCORE_COLUMNS]
    out["stage"] = out["stage"].astype(int)
    return out.sort_values(["backend_id", "respondent_id", "repeat", "situation_id", "stage", "instrument",
                            "subscale"], ignore_index=True)


def load_stage_scores(run: Run | str | Path) -> pd.DataFrame:
    """:func:`stage_scores` of a run (opened by :func:`psyq.open_run`, or its path), from its own
    copies of the study, instruments and situation set.

    Not run: needs a run with stages (`run_dir` here has none).

    Example:
        >>> load_stage_scores("runs/staged_mini/ab12cd34ef56").columns[:3].tolist()   # doctest: +SKIP
        ['backend_id', 'respondent_id', 'repeat']
    """
    from psyq.engine.design.situations import load_situations
    from psyq.engine.files.yamlfile import load_yaml
    from psyq.engine.results.run import as_run

    run = as_run(run)
    study = load_yaml(run.path / "study.yaml").data   # psyq's bounded reader, as for every file it reads
    return stage_scores(run.answers(), run.instruments, load_situations(run.situations),
                        evoke_stage_of(study.get("stages") or []))
