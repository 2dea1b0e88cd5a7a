"""Scoring: reverse keying and subscale scores, vectorised over respondents.

Pure functions on a wide table of raw answers (one row per respondent, one column per item,
NaN for missing). Missing answers are never imputed into item values: a subscale score is either
computed under the instrument's missing-data rule or left missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:   # annotations only: the rating kind (imported by the instrument) scores with this module
    from psyq.engine.design.instrument import Instrument


def reverse_key(values: np.ndarray | pd.Series | float, scale_min: int, scale_max: int):
    """Reverse-key answers on a scale from `scale_min` to `scale_max`: min + max − x.

    Works on any range (0–4, 1–5, 1–7 …); NaN stays NaN.

    Example:
        >>> reverse_key(np.array([1, 2, 7]), 1, 7).tolist()
        [7, 6, 1]
    """
    return scale_min + scale_max - values


def keyed_answers(instrument: Instrument, answers: pd.DataFrame) -> pd.DataFrame:
    """Answers with reverse-keyed items reversed; columns in instrument item order.

    `answers` has one column per item id (extra columns are ignored, absent items count as
    missing) and one row per respondent.
    """
    ids = [item.id for item in instrument.rating_items]
    raw = answers.reindex(columns=ids).to_numpy(dtype=float)
    flip = np.array([item.reverse for item in instrument.rating_items])
    keyed = np.where(flip, reverse_key(raw, instrument.scale_min, instrument.scale_max), raw)
    return pd.DataFrame(keyed, index=answers.index, columns=ids)


def membership_matrix(instrument: Instrument) -> pd.DataFrame:
    """Items × subscales matrix of 0/1: which item counts towards which subscale."""
    ids = [item.id for item in instrument.rating_items]
    subs = [s.id for s in instrument.rating_subscales]
    m = np.array([[float(s in item.subscales) for s in subs] for item in instrument.rating_items])
    return pd.DataFrame(m, index=ids, columns=subs)


def score(instrument: Instrument, answers: pd.DataFrame) -> pd.DataFrame:
    """Subscale scores per respondent, tidy (long) format.

    Returns one row per respondent × subscale with columns ``respondent_id`` (the index of
    `answers`), ``subscale``, ``score``, ``n_answered``, ``n_items`` and ``prorated``. Sums are
    prorated over answered items (mean of answered × n_items); a subscale with fewer than its
    ``min_answered`` answers gets a missing score. ``prorated`` is True when some items of the
    subscale were missing and a score was still computed (for a mean subscale: the mean of the
    answered items), False for complete answers and for missing scores.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> iri = load_instrument("iri")
        >>> all_fours = pd.DataFrame([[4] * 28], columns=[i.id for i in iri.items], index=["r1"])
        >>> score_wide(iri, all_fours).loc["r1", ["PT", "FS", "EC", "PD"]].tolist()
        [20.0, 20.0, 16.0, 20.0]
    """
    wide, answered = _score_arrays(instrument, answers)
    subs = [s.id for s in instrument.rating_subscales]
    n_items = membership_matrix(instrument).sum(axis=0).to_numpy()
    n_resp = len(answers.index)
    return pd.DataFrame({
        "respondent_id": _repeat_each(answers.index, len(subs)),
        "subscale": _tile(subs, n_resp),
        "score": wide.ravel(),
        "n_answered": answered.ravel().astype(int),
        "n_items": np.tile(n_items, n_resp).astype(int),
        "prorated": (~np.isnan(wide) & (answered < n_items)).ravel(),
    }, copy=False)   # the arrays are new: no second copy of a million respondents' rows


def _repeat_each(index: pd.Index, times: int) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """Every label of `index` `times` times in a row (np.repeat), keeping a string index's dtype.

    A string index repeated through Python objects costs a second per million respondents (each
    object converted back to Arrow); taking positions from the Arrow array stays in C.
    """
    if isinstance(index.dtype, pd.StringDtype):
        return index.array.take(np.repeat(np.arange(len(index)), times))
    return np.repeat(index.to_numpy(), times)


def _tile(labels: list[str], times: int) -> pd.api.extensions.ExtensionArray:
    """`labels` repeated `times` times (np.tile), in the dtype pandas gives a column of strings."""
    return pd.Series(labels).array.take(np.tile(np.arange(len(labels)), times))


def score_wide(instrument: Instrument, answers: pd.DataFrame) -> pd.DataFrame:
    """Subscale scores per respondent, one column per subscale id (index: respondents).

    The same scores as :func:`score` (missing, prorated), without its long table's string
    columns: with attribute columns added, the input of
    :func:`psyq.analysis.statistics.norms.compare_with_norms` for a million respondents.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> iri = load_instrument("iri")
        >>> answers = pd.DataFrame([[4] * 28, [0] * 28], columns=[i.id for i in iri.items], index=["r1", "r2"])
        >>> score_wide(iri, answers)
              PT    FS    EC    PD
        r1  20.0  20.0  16.0  20.0
        r2   8.0   8.0  12.0   8.0
    """
    wide, _ = _score_arrays(instrument, answers)
    return pd.DataFrame(wide, index=answers.index, columns=[s.id for s in instrument.rating_subscales])


def _score_arrays(instrument: Instrument, answers: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    sums, answered = _keyed_sums(instrument, answers)
    member = membership_matrix(instrument).to_numpy()
    n_items = member.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / answered
    is_sum = np.array([s.score == "sum" for s in instrument.rating_subscales])
    # Complete answers give the plain sum exactly; prorating only when items are missing.
    scores = np.where(is_sum, np.where(answered == n_items, sums, means * n_items), means)
    minimum = np.array([instrument.min_answered(s) for s in instrument.rating_subscales])
    scores = np.where(answered >= minimum, scores, np.nan)
    return scores, answered


def _keyed_sums(instrument: Instrument, answers: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per respondent and subscale: the sum of the answered items after reverse keying, and how
    many were answered (both respondents × subscales, float).

    The same numbers as ``keyed_answers(...) @ membership`` with missing answers counted as 0,
    computed one subscale's columns at a time: at a million respondents the whole keyed table and
    its temporaries cost about a GiB, one subscale's columns a few tens of MB.
    """
    items = instrument.rating_items
    subscales = instrument.rating_subscales
    raw = answers.reindex(columns=[item.id for item in items]).to_numpy(dtype=float)   # a view when it can be
    flip = np.array([item.reverse for item in items], dtype=bool)
    sums = np.zeros((raw.shape[0], len(subscales)))
    answered = np.zeros((raw.shape[0], len(subscales)))
    for j, subscale in enumerate(subscales):
        columns = np.array([i for i, item in enumerate(items) if subscale.id in item.subscales], dtype=np.intp)
        if columns.size == 0:
            continue
        block = raw[:, columns]                      # a copy: reversed and zero-filled in place
        reversed_ = flip[columns]
        if reversed_.any():
            block[:, reversed_] = reverse_key(block[:, reversed_], instrument.scale_min, instrument.scale_max)
        missing = np.isnan(block)
        block[missing] = 0.0
        sums[:, j] = block.sum(axis=1)
        answered[:, j] = columns.size - missing.sum(axis=1)
    return sums, answered
