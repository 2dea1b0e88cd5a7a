"""Persona scores against published human norms: matched norm groups, Welch tests, Hedges' g,
and equivalence tests (the report's sentence on each row:
:func:`psyq.analysis.report.readings.norm_readings`).

The human side of every comparison is a published summary (mean, SD, n per group); the persona
side is the scores of the respondents matched to that group. Everything is computed from summary
statistics, so the same functions serve for re-checking published tables.

Every norm sample of an instrument is compared (each row names its `norm_sample`, and carries
its `norm_verified` status); :func:`group_matching` says which respondents fell in which group.
Human data scored with :func:`psyq.engine.trials.scoring.score` work as well (see :func:`as_norm_scores`).

Checked in tests/test_norms.py (the norm table's rows, pooled row, multiplicity correction and
respondent z against hand formulas, pingouin and scipy) and tests/test_norm_samples.py (every norm
sample and the comparison on scored human data against numbers computed there with numpy).

Example
-------
The IRI data psyq ships (Briganti et al., 2018: Belgian adults) against Davis' (1980) norms, from
the long table of :func:`psyq.engine.trials.scoring.score` with the attribute added, and from a wide
table (the same numbers):

>>> from psyq import human_data, load_instrument
>>> from psyq.engine.trials.scoring import score, score_wide
>>> iri = load_instrument("iri")
>>> humans = human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri)
>>> scores = score(iri, humans).join(humans["gender"], on="respondent_id")
>>> table = compare_with_norms(scores, {"iri": iri}, sample_id="davis1980")
>>> table[["subscale", "norm_group", "n", "g"]].round(2)
  subscale norm_group     n     g
0       PT        men   838 -0.06
1       PT      women  1135 -0.22
2       FS        men   838 -0.01
3       FS      women  1135 -0.09
4       EC        men   838 -0.31
5       EC      women  1135 -0.27
6       PD        men   838  0.28
7       PD      women  1135  0.27
>>> wide = score_wide(iri, humans).assign(gender=humans["gender"])
>>> compare_with_norms(wide, {"iri": iri}, sample_id="davis1980").equals(table)
True
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from psyq.engine.design.instrument import Instrument, NormSample

from psyq.analysis.statistics.multiple_testing import holm
from psyq.analysis.statistics.norms.groups import (HUMAN, SampleChoice, as_norm_scores, attribute_columns, match_group,
                                                   match_groups, named_attributes, sample_choice, samples_compared)
from psyq.analysis.statistics.norms.summary import (POOLED, NormStats, hedges_g, norm_stats, tost_from_summary,
                                                    welch_from_summary)

COLUMNS = ["backend_id", "instrument", "subscale", "norm_sample", "norm_group", "norm_derived",
           "norm_verified", "n", "mean", "sd", "norm_n", "norm_mean", "norm_sd", "diff", "t", "df", "p", "p_adj",
           "g", "g_low", "g_high", "tost_p", "equivalent", "sd_ratio"]

CORRECTIONS = {"holm": "Holm", "fdr_bh": "BH"}
"""Multiplicity corrections accepted by :func:`compare_with_norms` and their label in a sentence."""


def _assign(instrument: Instrument, sample: NormSample, subscale_id: str, group_id: str | None,
            cache: dict) -> tuple[str, NormStats] | None:
    """The row label and norm for a respondent matched to `group_id` (None: unmatched).

    A matched group without a norm for this subscale counts as no match (pooled group).
    """
    key = (instrument.id, sample.id, subscale_id, group_id)
    if key not in cache:
        norm = norm_stats(instrument, sample, subscale_id, group_id) if group_id else None
        if norm is not None:
            cache[key] = (group_id, norm)
        else:
            pooled = norm_stats(instrument, sample, subscale_id, None)
            # A whole-sample group the file writes (empty `where`) keeps its id; only a norm psyq
            # pooled from the groups itself is labelled "pooled".
            cache[key] = None if pooled is None else (pooled.group_id, pooled)
    return cache[key]


def _attribute_combinations(block: pd.DataFrame, attributes: list[str]) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Each row's code of its distinct combination of attribute values (numbered by first
    appearance, missing values a value of their own) and each combination's values (its first row).

    One hash pass per column on integer codes instead of a group-by over the string columns.
    """
    if not attributes:
        return np.zeros(len(block), dtype=np.int16), [{}]
    codes = None
    for name in attributes:
        column = block[name]
        # Object columns may mix types that hash alike (True and 1) but read differently: key on text.
        column_codes, uniques = pd.factorize(column.astype(str) if column.dtype == object else column,
                                             use_na_sentinel=False)
        codes = column_codes if codes is None else pd.factorize(codes * len(uniques) + column_codes)[0]
    n_combinations = int(codes.max()) + 1 if codes.size else 0
    if n_combinations <= 64:    # a handful: one scan each beats hashing a million codes
        first = np.array([np.argmax(codes == k) for k in range(n_combinations)], dtype=np.intp)
    else:
        first = pd.Series(codes).drop_duplicates().index.to_numpy()   # combination k first appears at first[k]
    return _small(codes), block[attributes].iloc[first].to_dict("records")


def _samples(chosen: Mapping[str, list[NormSample]]) -> list[NormSample]:
    """Every norm sample chosen, over the instruments."""
    return [sample for samples in chosen.values() for sample in samples]


def _small(codes: np.ndarray) -> np.ndarray:
    """`codes` (0 … k − 1, or −1) in 16 bits when k allows: a quarter of the memory per million rows."""
    return codes.astype(np.int16) if codes.size and int(codes.max()) < np.iinfo(np.int16).max else codes


def _blocks(backend_ids: pd.Series, instrument_ids: pd.Series) -> list[tuple[tuple[Any, Any], np.ndarray | slice]]:
    """(backend_id, instrument) -> its rows, in the order of ``groupby(..., sort=True)`` (rows with
    a missing key left out), found with integer codes: a group-by over millions of strings is slow.
    `backend_ids` and `instrument_ids` are the rows' two keys."""
    backends, insts = backend_ids.unique(), instrument_ids.unique()
    if len(backends) == 1 and len(insts) == 1 and not pd.isna(backends[0]) and not pd.isna(insts[0]):
        return [((backends[0], insts[0]), slice(None))]   # the usual case: no codes, no copy of the rows
    backend_codes, backends = pd.factorize(backend_ids)
    inst_codes, insts = pd.factorize(instrument_ids)
    keyed = (backend_codes >= 0) & (inst_codes >= 0)
    pair = backend_codes * len(insts) + inst_codes
    codes = pd.unique(pair[keyed])
    blocks = [((backends[code // len(insts)], insts[code % len(insts)]), np.flatnonzero(keyed & (pair == code)))
              for code in codes]
    return sorted(blocks, key=lambda block: block[0])


def _respondent_means(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per respondent × instrument × subscale: the score averaged over repeats.

    Rows whose score is missing stay in when there is one repeat (its score is then already the
    mean; the caller leaves missing scores out by position): filtering a million rows of string
    columns costs more than the whole comparison. With repeats they are left out of the mean.
    """
    attributes = attribute_columns(scores)
    keys = ["backend_id", "model", "respondent_id", "instrument", "subscale"]
    if "repeat" in scores.columns and (scores["repeat"].nunique() <= 1 or pd.Series(
            scores["repeat"].to_numpy()[scores["score"].notna().to_numpy()]).nunique() <= 1):
        return scores[keys + ["score"] + attributes]   # one row each already; selecting columns copies nothing
    answered = scores.dropna(subset=["score"])
    aggregations = {"score": ("score", "mean")} | {a: (a, "first") for a in attributes}
    return answered.groupby(keys, sort=False, dropna=False).agg(**aggregations).reset_index()


Columns = Iterator[tuple[str, np.ndarray, np.ndarray]]
"""Each subscale scored (in the instrument's order), its answered scores (averaged over repeats)
and each score's attribute-combination code; one subscale at a time, so that a million
respondents' selections are not all held at once."""
Blocks = Iterator[tuple[tuple[Any, str], Columns]]
"""(backend_id, instrument id) and its :data:`Columns`: what :func:`_block_rows` compares."""


def _long_columns(scores: pd.DataFrame, instruments: Mapping[str, Instrument], choice: SampleChoice
                  ) -> tuple[dict[str, list[NormSample]], list[dict[str, Any]], Blocks]:
    """The long table (one row per respondent × subscale) as the norm samples to compare, the
    distinct attribute combinations, and each block's scores by subscale (found with integer codes)."""
    scores = as_norm_scores(scores, instruments)
    chosen = samples_compared(scores, instruments, choice)
    people = _respondent_means(scores)
    named = named_attributes(attribute_columns(scores), _samples(chosen))
    combination_codes, combinations = _attribute_combinations(people, named)
    sub_codes, sub_ids = pd.factorize(people["subscale"])
    sub_codes = _small(sub_codes)
    sub_index = {sub_id: k for k, sub_id in enumerate(sub_ids)}
    values = people["score"].to_numpy(dtype=float)

    def columns(inst_id: str, rows_at: np.ndarray | slice) -> Columns:
        block_subs, block_values, block_codes = sub_codes[rows_at], values[rows_at], combination_codes[rows_at]
        answered = ~np.isnan(block_values)   # missing scores (one repeat) are left out
        for subscale in instruments[inst_id].subscales:
            if subscale.id in sub_index:
                keep = (block_subs == sub_index[subscale.id]) & answered
                yield subscale.id, block_values[keep], block_codes[keep]
    blocks = _blocks(people["backend_id"], people["instrument"])
    return chosen, combinations, ((key, columns(key[1], rows_at)) for key, rows_at in blocks)


def _wide_columns(scores: pd.DataFrame, instruments: Mapping[str, Instrument], choice: SampleChoice
                  ) -> tuple[dict[str, list[NormSample]], list[dict[str, Any]], Blocks]:
    """The same for a wide table of one instrument (one row per respondent, a column per subscale
    id, as :func:`psyq.engine.trials.scoring.score_wide` returns it, with attribute columns): no
    string keys to factorize, each subscale's scores are a column."""
    if len(instruments) != 1:
        raise ValueError("scores without a `subscale` column are a wide table (a column per subscale) of one "
                         f"instrument: give exactly one (got {len(instruments)}: {', '.join(instruments) or 'none'})")
    (inst_id, instrument), = instruments.items()
    subscales = [s.id for s in instrument.subscales if s.id in scores.columns]
    if not subscales:
        raise KeyError(f"the scores have neither a `subscale` column (a long table) nor a column named after a "
                       f"subscale of '{inst_id}' (a wide table)")
    chosen = samples_compared(None, instruments, choice)
    attributes = attribute_columns(scores, subscales)
    people = _wide_means(scores, subscales, attributes)
    combination_codes, combinations = _attribute_combinations(people, named_attributes(attributes, _samples(chosen)))
    if "backend_id" in people.columns:
        found = _blocks(people["backend_id"], pd.Series(inst_id, index=people.index, dtype=object))
    else:
        found = [((HUMAN, inst_id), slice(None))]

    def columns(rows_at: np.ndarray | slice) -> Columns:
        codes = combination_codes[rows_at]
        for sub in subscales:
            values = people[sub].to_numpy(dtype=float)[rows_at]
            answered = ~np.isnan(values)
            yield sub, values[answered], codes[answered]
    return chosen, combinations, ((key, columns(rows_at)) for key, rows_at in found)


def _wide_means(scores: pd.DataFrame, subscales: list[str], attributes: list[str]) -> pd.DataFrame:
    """A wide table with one row per respondent: each subscale's score averaged over repeats
    (missing scores left out), the respondent being ``backend_id``, ``model`` and ``respondent_id``
    (or the index) as far as the table has them. Without repeats, the table itself."""
    if "repeat" not in scores.columns or scores["repeat"].nunique() <= 1:
        return scores
    keys = [scores[k] for k in ("backend_id", "model") if k in scores.columns]
    keys.append(scores["respondent_id"] if "respondent_id" in scores.columns
                else scores.index.to_series().rename(scores.index.name or "respondent_id"))
    aggregations = {s: "mean" for s in subscales} | {a: "first" for a in attributes}
    return scores.groupby(keys, sort=False, dropna=False).agg(aggregations).reset_index()


def _block_rows(key: tuple[Any, str], instrument: Instrument, samples: list[NormSample], columns: Columns,
                combinations: list[dict[str, Any]], bound: float, alpha: float, cache: dict) -> list[dict[str, Any]]:
    """The comparison rows of one backend × instrument, sample by sample and subscale by subscale:
    each subscale's answered scores split by the norm group their attribute combination is matched
    to (the pooled norm when none, or when the group has no norm for the subscale), each part
    compared with its norm."""
    backend, inst_id = key
    # Integer codes for matched groups: comparing millions of strings is slow.
    group_ids = [match_groups(sample, combinations) for sample in samples]
    orders = [{g.id: i for i, g in enumerate(sample.groups)} | {POOLED: len(sample.groups)} for sample in samples]
    rows: list[tuple[int, int, dict[str, Any]]] = []    # (sample, subscale, row): sorted at the end
    for position, (subscale_id, sub_values, sub_groups) in enumerate(columns):
        present = np.flatnonzero(np.bincount(sub_groups, minlength=len(combinations)))
        for s, sample in enumerate(samples):
            # Each combination present -> its row label (None: no norm); rows keep their order.
            labels: list[str] = []
            norms: dict[str, NormStats] = {}
            label_of = np.full(len(combinations), -1, dtype=np.intp)
            for code in present:
                hit = _assign(instrument, sample, subscale_id, group_ids[s][code], cache)
                if hit is not None:
                    if hit[0] not in norms:
                        norms[hit[0]] = hit[1]
                        labels.append(hit[0])
                    label_of[code] = labels.index(hit[0])
            row_labels = label_of[sub_groups]
            for label in sorted(labels, key=orders[s].__getitem__):
                rows.append((s, position, {
                    "backend_id": backend, "instrument": inst_id, "subscale": subscale_id,
                    "norm_sample": sample.id, "norm_group": label, "norm_derived": norms[label].derived,
                    "norm_verified": sample.verified}
                    | _compare(sub_values[row_labels == labels.index(label)], norms[label], bound, alpha)))
    rows.sort(key=lambda row: row[:2])     # stable: sample by sample, subscales in order, groups in order
    return [row for _, _, row in rows]


def _compare(values: np.ndarray, norm: NormStats, bound: float, alpha: float) -> dict[str, Any]:
    n = int(values.size)
    mean = float(values.mean()) if n else math.nan
    sd = float(values.std(ddof=1)) if n >= 2 else math.nan
    row: dict[str, Any] = {
        "n": n, "mean": mean, "sd": sd, "norm_n": norm.n, "norm_mean": norm.mean,
        "norm_sd": norm.sd, "diff": mean - norm.mean, "sd_ratio": sd / norm.sd,
        "t": math.nan, "df": math.nan, "p": math.nan, "g": math.nan, "g_low": math.nan,
        "g_high": math.nan, "tost_p": math.nan, "equivalent": pd.NA}
    if n >= 2:
        summary = (mean, sd, n, norm.mean, norm.sd, norm.n)
        row["t"], row["df"], row["p"] = welch_from_summary(*summary)
        row["g"], row["g_low"], row["g_high"] = hedges_g(*summary)
        row["tost_p"], row["equivalent"] = tost_from_summary(*summary, bound=bound, alpha=alpha)
    return row


def compare_with_norms(scores: pd.DataFrame, instruments: Mapping[str, Instrument], *,
                       sample_id: str | None = None, bound: float = 0.3, correction: str = "holm",
                       alpha: float = 0.05, samples: SampleChoice = None) -> pd.DataFrame:
    """Compare persona (or human) scores with the published norms, sample by sample, group by group.

    Every norm sample of every instrument is compared (unless `samples` restricts them), each in
    its own rows named by `norm_sample`; `norm_verified` carries the sample's `verified` status
    (the report's sentence on a row from a sample not read in its source table nor recomputed
    from raw data ends with a flag, "— norms unverified": :func:`verification_flag`).

    Each respondent's score is first averaged over repeats (missing scores are left out, never
    imputed), so a respondent counts once however many repeats were run. Respondents are matched
    to a norm group with :func:`match_group` on their persona attributes; those matching no
    group (the baseline respondent, personas whose attributes the norms do not cover, or a
    matched group without a norm for this subscale) are compared with the pooled group
    (:func:`norm_stats` with ``group_id=None``) in a separate row whose `norm_group` is
    ``"pooled"``.

    For each backend × instrument × subscale × norm group with at least one respondent:
    Welch's t test (:func:`welch_from_summary`), Hedges' g with its 95 % CI
    (:func:`hedges_g`; positive g = personas above the norm), the TOST equivalence test within
    ±`bound` norm SDs (:func:`tost_from_summary`, at `alpha`, not adjusted for multiplicity), and
    ``sd_ratio`` = persona SD / norm SD (well below 1 flags personas that are too alike). `p_adj`
    adjusts the Welch p values of the whole table together with
    :func:`statsmodels.stats.multitest.multipletests` (``"holm"`` or ``"fdr_bh"``): the rows of
    all norm samples form one family, because comparing the same respondents with several
    samples is several tests of one question, and a family per sample would let the number of
    samples inflate the error rate. Groups with fewer than two respondents get NaN statistics.

    Parameters
    ----------
    scores : DataFrame
        The long table of :func:`psyq.analysis.scoring.scores.score_answers`, or the table of
        :func:`psyq.engine.trials.scoring.score` for human data with the attribute columns added (see
        :func:`as_norm_scores` for the columns filled in). Or, for one instrument, a wide table
        (no ``subscale`` column): the frame of :func:`psyq.engine.trials.scoring.score_wide`, one
        row per respondent and a column per subscale id, with the attribute columns added (the
        same numbers; the fast way for a million respondents: no string key columns). Its
        ``backend_id`` (``"human"`` when absent), ``model``, ``respondent_id`` (else the index)
        and ``repeat`` columns are keys as in the long table; ``<subscale>_n`` and
        ``<subscale>_prorated`` columns are ignored.
    instruments : mapping of instrument id to Instrument
        Every instrument named in `scores` (exactly one for a wide table); instruments without
        norms are skipped.
    sample_id : str, optional
        Compare only the norm sample with this id (the same as ``samples=[sample_id]``).
    samples : list of sample ids, or mapping of instrument id to sample ids, optional
        Compare only these samples (default: all). KeyError for an id no instrument has.
    bound : float
        Equivalence margin in SD units of the norm.
    correction : {"holm", "fdr_bh"}
        Multiplicity correction over all rows.
    alpha : float
        Level of the equivalence tests and of the multiplicity correction.

    Returns
    -------
    DataFrame
        Columns ``backend_id, instrument, subscale, norm_sample, norm_group, norm_derived, n,
        mean, sd, norm_n, norm_mean, norm_sd, diff, t, df, p, p_adj, g, g_low, g_high, tost_p,
        equivalent, sd_ratio``; norms are on each subscale's own scoring metric.

    Example
    -------
    The IRI data psyq ships (Briganti et al., 2018) against both its norm samples: its own
    (recomputed from these very answers, so g is 0) and Davis' (1980):

    >>> from psyq import human_data, load_instrument
    >>> from psyq.engine.trials.scoring import score
    >>> iri = load_instrument("iri")
    >>> humans = human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri)
    >>> scores = score(iri, humans).join(humans["gender"], on="respondent_id")
    >>> table = compare_with_norms(scores, {"iri": iri}, correction="fdr_bh")
    >>> table.loc[table["subscale"] == "EC", ["norm_sample", "norm_group", "n", "g", "p_adj"]].round(3)
         norm_sample norm_group     n      g  p_adj
    4   briganti2018      women  1135  0.001  0.993
    5   briganti2018        men   838  0.000  0.993
    12     davis1980        men   838 -0.307  0.000
    13     davis1980      women  1135 -0.272  0.000

    Human answers in a wide table (items and a ``gender`` column), scored wide:

    >>> from psyq.engine.design.instrument import load_instrument
    >>> from psyq.engine.trials.scoring import score_wide
    >>> iri = load_instrument("iri")
    >>> items = [item.id for item in iri.rating_items]
    >>> answers = pd.DataFrame([[k % 5] * 28 for k in range(6)], columns=items)
    >>> wide = score_wide(iri, answers).assign(gender=["female", "male", "female", "male", "F", "other"])
    >>> table = compare_with_norms(wide, {"iri": iri}, samples=["davis1980"])
    >>> table.loc[table["subscale"] == "PT", ["norm_group", "n", "mean"]]
      norm_group  n  mean
    0        men  2  14.0
    1      women  3  14.0
    2     pooled  1   8.0

    References
    ----------
    Welch (1947) and Satterthwaite (1946) for the test, Borenstein et al. (2009, ch. 4) for g,
    Schuirmann (1987) and Lakens (2017) for TOST (see the functions above).
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. *Scandinavian
    Journal of Statistics*, 6(2), 65–70.
    Benjamini, Y., & Hochberg, Y. (1995). Controlling the false discovery rate. *Journal of the
    Royal Statistical Society B*, 57(1), 289–300.
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, not {correction!r}")
    columns_of = _long_columns if "subscale" in scores.columns else _wide_columns
    chosen, combinations, blocks = columns_of(scores, instruments, sample_choice(samples, sample_id))
    rows: list[dict[str, Any]] = []
    cache: dict = {}
    for key, columns in blocks:
        rows += _block_rows(key, instruments[key[1]], chosen[key[1]], columns, combinations, bound, alpha, cache)
    table = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "p_adj"])
    p = table["p"].to_numpy(dtype=float)
    tested = np.isfinite(p)
    p_adj = np.full(p.shape, np.nan)
    if tested.any():
        p_adj[tested] = (holm(p[tested]) if correction == "holm"
                         else multipletests(p[tested], alpha=alpha, method=correction)[1])
    table.insert(COLUMNS.index("p_adj"), "p_adj", p_adj)
    table["equivalent"] = table["equivalent"].astype("boolean")
    table = table.astype({"n": "int64", "norm_n": "int64", "norm_derived": "bool"})
    return table[COLUMNS]


def respondent_z(scores: pd.DataFrame, instruments: Mapping[str, Instrument], *,
                 sample_id: str | None = None, samples: SampleChoice = None) -> pd.DataFrame:
    """Each score as a z score and normal percentile against the respondent's norm group.

    The group is the one :func:`match_group` finds for the respondent's attributes, else the
    pooled group (``norm_group = "pooled"``), exactly as in :func:`compare_with_norms`; rows are
    not averaged over repeats. ``z = (score - norm mean) / norm SD`` and ``percentile =
    100 Φ(z)``, which assumes normally distributed norm scores. With several norm samples each
    score gets one row per sample (`norm_sample`, `norm_verified` say which); instruments
    without norms get one row with missing values.

    Returns
    -------
    DataFrame
        `scores` (with the key columns of :func:`as_norm_scores`) and the columns
        ``norm_sample``, ``norm_verified``, ``norm_group``, ``z`` and ``percentile`` added.

    Example
    -------
    The first respondent of the IRI data psyq ships (Briganti et al., 2018), a woman:

    >>> from psyq import human_data, load_instrument
    >>> from psyq.engine.trials.scoring import score
    >>> iri = load_instrument("iri")
    >>> humans = human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri)
    >>> scores = score(iri, humans).join(humans["gender"], on="respondent_id")
    >>> z = respondent_z(scores, {"iri": iri}, sample_id="briganti2018")
    >>> z[["respondent_id", "subscale", "norm_group", "score", "z"]].head(4).round(2)
      respondent_id subscale norm_group  score     z
    0         r0001       PT      women   13.0 -0.86
    1         r0001       FS      women   25.0  1.25
    2         r0001       EC      women   25.0  1.04
    3         r0001       PD      women   11.0 -0.55

    References
    ----------
    The norm mean and SD are treated as population values. For small norm samples, Crawford, J.
    R., & Howell, D. C. (1998). Comparing an individual's test score against norms derived from
    small samples. *The Clinical Neuropsychologist*, 12(4), 482–486, give a t-based alternative
    that this function does not apply.
    """
    scores = as_norm_scores(scores, instruments)
    chosen = samples_compared(scores, instruments, sample_choice(samples, sample_id))
    attributes = attribute_columns(scores)
    cache: dict = {}
    rows: list[int] = []
    names: list[Any] = []
    status: list[Any] = []
    labels: list[Any] = []
    means: list[float] = []
    sds: list[float] = []
    records = scores[["instrument", "subscale"] + attributes].to_dict("records")
    for i, rec in enumerate(records):
        instrument = instruments[rec["instrument"]]
        for sample in chosen[rec["instrument"]] or [None]:
            hit = None
            if sample is not None:
                group_id = match_group(sample, {a: rec[a] for a in attributes})
                hit = _assign(instrument, sample, rec["subscale"], group_id, cache)
            rows.append(i)
            names.append(pd.NA if sample is None else sample.id)
            status.append(pd.NA if sample is None else sample.verified)
            labels.append(pd.NA if hit is None else hit[0])
            means.append(math.nan if hit is None else hit[1].mean)
            sds.append(math.nan if hit is None else hit[1].sd)
    out = scores.iloc[rows].reset_index(drop=True)
    out["norm_sample"] = pd.array(names, dtype="string")
    out["norm_verified"] = pd.array(status, dtype="string")
    out["norm_group"] = pd.array(labels, dtype="string")
    out["z"] = (out["score"].to_numpy(dtype=float) - np.asarray(means)) / np.asarray(sds)
    out["percentile"] = stats.norm.cdf(out["z"]) * 100
    return out
