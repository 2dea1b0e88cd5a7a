"""Which norm samples are compared and which respondents fall into which norm group: the samples
chosen, the conditions of a group (``where``) against a respondent's attributes, and the tables
that say how respondents were matched, which values matched no group and who fell into none.

Checked in tests/test_norms.py (group matching and the published groups) and
tests/test_norm_samples.py (where lists and ranges, group matching counts and verification flags),
against matches and counts worked out by hand in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from psyq.engine.design.instrument import TRUSTED, Instrument, NormSample, Range
from psyq.engine.files.codebook import WEIGHT_COLUMN

from psyq.analysis.scoring.scores import RESPONDENT_KEYS

from psyq.analysis.statistics.norms.summary import POOLED

SCORE_COLUMNS = ["instrument", "subscale", "score", "n_answered", "n_items", "prorated"]
"""Columns of a scores table that are not persona attributes (with RESPONDENT_KEYS)."""

HUMAN = "human"
"""`backend_id` and `model` given to scores without them (human data scored with
:func:`psyq.engine.trials.scoring.score`)."""

FLAGS = {"secondary-source": "norms read only in a secondary source",
         "unverified": "norms unverified"}
"""What the report says next to every number from a norm sample, by its `verified` status
(nothing for ``source-table`` and ``raw-data``)."""


def _as_text(value: Any) -> str | None:
    """A value as the case-folded text compared by :func:`match_group` (None when missing)."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).casefold()
    if isinstance(value, Real):
        number = float(value)
        if math.isnan(number):
            return None
        return str(int(number)) if number.is_integer() else repr(number)
    return str(value).strip().casefold()


def _as_number(value: Any) -> float | None:
    """A value as a number for a range condition (None when missing or not a number)."""
    if value is None or value is pd.NA or isinstance(value, (bool, np.bool_)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def condition_holds(condition: Any, value: Any) -> bool:
    """Whether an attribute value meets one `where` condition: equal to a value (as text,
    ignoring case), equal to any value of a list, or a number within a range (ends included).

    Example
    -------
    >>> condition_holds(["female", "woman"], "Woman"), condition_holds(Range(min=18, max=25), 25.0)
    (True, True)
    """
    if isinstance(condition, Range):
        number = _as_number(value)
        return number is not None and (condition.min is None or number >= condition.min) and (
            condition.max is None or number <= condition.max)
    got = _as_text(value)
    if got is None:
        return False
    wanted = condition if isinstance(condition, list) else [condition]
    return any(got == _as_text(w) for w in wanted)


def describe_condition(key: str, condition: Any) -> str:
    """A `where` item in words, e.g. ``gender = female``, ``age 18–25``.

    Example
    -------
    >>> describe_condition("age", Range(min=18, max=25)), describe_condition("gender", ["f", "w"])
    ('age 18–25', 'gender = f or w')
    """
    if isinstance(condition, Range):
        if condition.min is not None and condition.max is not None:
            return f"{key} {condition.min:g}–{condition.max:g}"
        return f"{key} ≥ {condition.min:g}" if condition.min is not None else f"{key} ≤ {condition.max:g}"
    values = condition if isinstance(condition, list) else [condition]
    return f"{key} = " + " or ".join(str(v) for v in values)


def match_group(sample: NormSample, attributes: Mapping[str, Any]) -> str | None:
    """The norm group whose every `where` item the persona's attributes meet.

    A `where` item is a value, a list of values (any of them) or a numeric range
    ``{min, max}`` (ends included; see :func:`condition_holds`). Values are compared as text,
    ignoring case and surrounding spaces (``"Female"`` matches ``female``; ``30.0`` matches
    ``30``). A missing attribute matches nothing. Groups with an empty `where` (the whole sample)
    are not matched here: they are the pooled group. When several groups match, the most
    specific one (most `where` items) wins, then the first listed.

    Parameters
    ----------
    sample : NormSample
    attributes : mapping
        The persona's attributes (e.g. ``{"gender": "female", "age": 34}``).

    Returns
    -------
    str or None
        The group id, or None when no group matches (e.g. the baseline respondent, or a
        non-binary persona against norms published by sex).

    Example
    -------
    >>> from psyq import load_instrument
    >>> iri = load_instrument("iri")
    >>> match_group(iri.norms[0], {"gender": "Female", "age": 34}), match_group(iri.norms[0], {"age": 34})
    ('women', None)
    """
    best, best_size = None, 0
    for group in sample.groups:
        if len(group.where) > best_size and all(
                condition_holds(want, attributes.get(key)) for key, want in group.where.items()):
            best, best_size = group.id, len(group.where)
    return best


def named_attributes(attributes: Sequence[str], samples: Iterable[NormSample]) -> list[str]:
    """The `attributes` a group of one of `samples` is defined by (its ``where``): a respondent's group
    depends on no other (:func:`match_group`), not on an id or a serial that makes every persona a
    combination of its own.

    Example
    -------
    >>> from psyq import load_instrument
    >>> named_attributes(["serial", "gender", "age"], load_instrument("iri").norms)
    ['gender']
    """
    named = {key for sample in samples for group in sample.groups for key in group.where}
    return [a for a in attributes if a in named]


def match_groups(sample: NormSample, records: Sequence[Mapping[str, Any]]) -> list[str | None]:
    """:func:`match_group` of every record, each distinct combination of the attributes the sample's
    groups name matched once (a cohort of 10⁵ personas has a few dozen: a persona's other attributes,
    an id or a serial, do not decide its group). Values of different types stay apart (``True`` is not
    ``1``: they read as different texts).

    Example
    -------
    >>> from psyq import load_instrument
    >>> match_groups(load_instrument("iri").norms[0], [{"gender": "female", "serial": k} for k in range(3)])
    ['women', 'women', 'women']
    """
    keys = sorted({key for group in sample.groups for key in group.where})
    found: dict[tuple, str | None] = {}
    out: list[str | None] = []
    for record in records:
        values = tuple((type(v), v) for v in (record.get(k) for k in keys))
        try:
            group = found[values]
        except KeyError:
            group = found[values] = match_group(sample, {k: record.get(k) for k in keys if k in record})
        except TypeError:                       # an unhashable value (a list): matched on its own
            group = match_group(sample, record)
        out.append(group)
    return out


# --------------------------------------------------------------------------------------------
# Persona scores against the norms


SampleChoice = Iterable[str] | Mapping[str, Iterable[str]] | None
"""Which norm samples to compare: None (all of every instrument), sample ids (each instrument's
samples with these ids), or instrument id -> sample ids (other instruments keep all)."""


def attribute_columns(scores: pd.DataFrame, subscales: Iterable[str] = ()) -> list[str]:
    """Persona attributes of a scores table: not the keys, the scores, nor survey weights (human data).

    `subscales`: the score columns of a wide table (with their ``_n`` and ``_prorated`` columns
    when it has them, as :func:`psyq.analysis.scoring.score_table.wide_scores` writes them).
    """
    wide = {f"{s}{suffix}" for s in subscales for suffix in ("", "_n", "_prorated")}
    return [c for c in scores.columns if c not in RESPONDENT_KEYS and c not in SCORE_COLUMNS
            and c != WEIGHT_COLUMN and c not in wide]


def as_norm_scores(scores: pd.DataFrame, instruments: Mapping[str, Instrument]) -> pd.DataFrame:
    """`scores` with the key columns the norm functions need, filled in when absent.

    The table of :func:`psyq.engine.trials.scoring.score` (human data) has no ``instrument``,
    ``backend_id``, ``model`` or ``repeat``: the instrument is the only one given (ValueError if
    several were given), ``backend_id`` and ``model`` are ``"human"``, ``repeat`` is 0. Tables
    that have these columns are returned unchanged.

    Example
    -------
    >>> from psyq import load_instrument
    >>> scores = pd.DataFrame({"respondent_id": ["r1", "r2"], "subscale": "PT", "score": [14.0, 20.0]})
    >>> as_norm_scores(scores, {"iri": load_instrument("iri")})
      backend_id  model  repeat instrument respondent_id subscale  score
    0      human  human       0        iri            r1       PT   14.0
    1      human  human       0        iri            r2       PT   20.0
    """
    missing = [c for c in ("instrument", "backend_id", "model", "repeat") if c not in scores.columns]
    if not missing:
        return scores
    out = scores.copy()
    if "instrument" in missing:
        if len(instruments) != 1:
            raise ValueError("the scores have no `instrument` column, so give exactly one instrument "
                             f"(got {len(instruments)}: {', '.join(instruments) or 'none'})")
        out.insert(0, "instrument", next(iter(instruments)))
    defaults = {"backend_id": HUMAN, "model": HUMAN, "repeat": 0}
    for column in ("repeat", "model", "backend_id"):
        if column in missing:
            out.insert(0, column, defaults[column])
    return out


def _wanted(instrument: Instrument, choice: SampleChoice) -> list[NormSample]:
    if choice is None or (isinstance(choice, Mapping) and instrument.id not in choice):
        return list(instrument.norms)      # an instrument the mapping does not name keeps all
    ids = set(choice[instrument.id] if isinstance(choice, Mapping) else choice)
    return [s for s in instrument.norms if s.id in ids]


def chosen_samples(instruments: Mapping[str, Instrument], choice: SampleChoice = None
                   ) -> dict[str, list[NormSample]]:
    """The norm samples compared for each instrument, in the instrument's order.

    `choice` is None (every sample), a list of sample ids (each instrument's samples with those
    ids) or a mapping of instrument id to sample ids (instruments it does not name keep every
    sample). A named sample that no instrument has is a
    KeyError, so that a typing slip never silently compares nothing.

    Example
    -------
    >>> from psyq import load_instrument
    >>> iri = load_instrument("iri")
    >>> [s.id for s in chosen_samples({"iri": iri})["iri"]]
    ['briganti2018', 'davis1980']
    >>> [s.id for s in chosen_samples({"iri": iri}, ["davis1980"])["iri"]]
    ['davis1980']
    """
    if choice is not None:
        if isinstance(choice, Mapping):
            choice = {k: list(v) for k, v in choice.items()}
            unknown = [f"{i} {sid}" for i, ids in choice.items() for sid in ids
                       if i not in instruments or sid not in {s.id for s in instruments[i].norms}]
        else:
            choice = list(choice)
            have = {s.id for inst in instruments.values() for s in inst.norms}
            unknown = [sid for sid in choice if sid not in have]
        if unknown:
            raise KeyError(f"no such norm sample: {', '.join(unknown)}")
    return {inst_id: _wanted(inst, choice) for inst_id, inst in instruments.items()}


def samples_compared(scores: pd.DataFrame | None, instruments: Mapping[str, Instrument],
             choice: SampleChoice) -> dict[str, list[NormSample]]:
    """The norm samples used for each instrument in `scores` ([]: no norms, skipped); None for
    scores without an ``instrument`` column (a wide table of the one instrument given)."""
    # unique() first: millions of rows, few instruments
    named = set(instruments) if scores is None else set(scores["instrument"].unique())
    missing = sorted(named - set(instruments))
    if missing:
        raise KeyError(f"scores name instruments that were not given: {', '.join(missing)}")
    chosen = chosen_samples({i: instruments[i] for i in sorted(named)}, choice)
    if choice is not None and chosen and not any(chosen.values()):
        raise KeyError(f"no instrument in the scores has the norm samples asked for ({choice})")
    return chosen


def sample_choice(samples: SampleChoice, sample_id: str | None) -> SampleChoice:
    if sample_id is not None:
        if samples is not None:
            raise ValueError("give `samples` or `sample_id`, not both")
        return [sample_id]
    return samples


def verification_flag(verified: str) -> str:
    """The words a report puts next to numbers from a norm sample with this `verified` status
    ("" for ``source-table`` and ``raw-data``).

    Example
    -------
    >>> verification_flag("unverified"), verification_flag("raw-data")
    ('norms unverified', '')
    """
    return "" if verified in TRUSTED else FLAGS.get(verified, f"norms {verified}")


def group_matching(scores: pd.DataFrame, instruments: Mapping[str, Instrument], *,
                   samples: SampleChoice = None) -> pd.DataFrame:
    """How the respondents fell into the groups of every norm sample compared.

    One row per instrument × norm sample × group, plus a row ``norm_group = "pooled"`` for the
    respondents that matched no group (they are compared with the pooled norm). Respondents are
    counted once (distinct ``respondent_id``), from their attributes as in :func:`match_group`.

    Returns
    -------
    DataFrame
        ``instrument, norm_sample, norm_verified, norm_group, where, matches_on, n_respondents,
        of_respondents, cohort_attributes``: `where` is the group's condition in words,
        `matches_on` the attributes any group of the sample uses, `cohort_attributes` the
        attribute columns the scores have.

    Example
    -------
    The IRI data psyq ships (Briganti et al., 2018), scored with their ``gender`` added:

    >>> from psyq import human_data, load_instrument
    >>> from psyq.engine.trials.scoring import score
    >>> iri = load_instrument("iri")
    >>> humans = human_data({"iri": "iri_briganti2018_keyed:keyed"})["iri"].answers(iri)
    >>> scores = score(iri, humans).join(humans["gender"], on="respondent_id")
    >>> group_matching(scores, {"iri": iri})[["norm_sample", "norm_group", "n_respondents"]]
        norm_sample norm_group  n_respondents
    0  briganti2018      women           1135
    1  briganti2018        men            838
    2  briganti2018        all              0
    3     davis1980        men            838
    4     davis1980      women           1135
    5     davis1980     pooled              0
    """
    scores = as_norm_scores(scores, instruments)
    attributes = attribute_columns(scores)
    rows: list[dict[str, Any]] = []
    for inst_id, sample_list in samples_compared(scores, instruments, samples).items():
        people = scores.loc[scores["instrument"] == inst_id].drop_duplicates("respondent_id")
        named = named_attributes(attributes, sample_list)
        records = people[named].to_dict("records") if named else [{}] * len(people)
        for sample in sample_list:
            matched = pd.Series(match_groups(sample, records), dtype=object)
            keys = sorted({k for g in sample.groups for k in g.where})
            base = {"instrument": inst_id, "norm_sample": sample.id, "norm_verified": sample.verified,
                    "matches_on": ", ".join(keys), "of_respondents": len(people),
                    "cohort_attributes": ", ".join(attributes)}
            for group in sample.groups:
                if group.where:
                    rows.append(base | {"norm_group": group.id, "n_respondents": int((matched == group.id).sum()),
                                        "where": "; ".join(describe_condition(k, c) for k, c in group.where.items())})
            whole = whole_sample_group(sample)
            rows.append(base | {"norm_group": whole or POOLED, "n_respondents": int(matched.isna().sum()),
                                "where": "matched no group" + (" (the whole sample)" if whole else "")})
    columns = ["instrument", "norm_sample", "norm_verified", "norm_group", "where", "matches_on",
               "n_respondents", "of_respondents", "cohort_attributes"]
    return pd.DataFrame(rows, columns=columns).astype({"n_respondents": "int64", "of_respondents": "int64"})


MISMATCH_COLUMNS = ["instrument", "norm_sample", "attribute", "norm_values", "data_values"]


def value_mismatches(scores: pd.DataFrame, instruments: Mapping[str, Instrument], *,
                     samples: SampleChoice = None) -> pd.DataFrame:
    """Norm samples and attributes whose text values the data never match: the attribute is there,
    but written otherwise than the groups' `where` (``F`` for ``female``), so every respondent falls
    out of the groups. Ranges (numbers) are not checked. One row per sample and attribute, with the
    values the groups name and (at most ten of) those the data hold, as lists.

    Example
    -------
    >>> from psyq import load_instrument
    >>> scores = pd.DataFrame({"respondent_id": ["r1", "r2"], "subscale": "PT", "score": [14.0, 20.0],
    ...                        "gender": ["Frau", "Mann"]})
    >>> value_mismatches(scores, {"iri": load_instrument("iri")})[["norm_sample", "attribute", "data_values"]]
        norm_sample attribute   data_values
    0  briganti2018    gender  [Frau, Mann]
    1     davis1980    gender  [Frau, Mann]
    """
    scores = as_norm_scores(scores, instruments)
    attributes = set(attribute_columns(scores))
    rows = []
    for inst_id, sample_list in samples_compared(scores, instruments, samples).items():
        people = scores.loc[scores["instrument"] == inst_id].drop_duplicates("respondent_id")
        for sample in sample_list:
            wanted: dict[str, list[Any]] = {}
            for group in sample.groups:
                for key, condition in group.where.items():
                    if not isinstance(condition, Range):
                        wanted.setdefault(key, []).extend(condition if isinstance(condition, list) else [condition])
            for key, values in wanted.items():
                if key not in attributes:
                    continue
                present = sorted({str(v).strip() for v in people[key] if _as_text(v) is not None})
                if present and not any(condition_holds(values, v) for v in present):
                    rows.append({"instrument": inst_id, "norm_sample": sample.id, "attribute": key,
                                 "norm_values": list(values), "data_values": present[:10]})
    return pd.DataFrame(rows, columns=MISMATCH_COLUMNS)


def whole_sample_group(sample: NormSample) -> str | None:
    """The id of the sample's whole-sample group as the file writes it (the first group with an
    empty `where`), or None when the source publishes none (psyq then pools the groups).

    Example
    -------
    >>> from psyq import load_instrument
    >>> iri = load_instrument("iri")
    >>> whole_sample_group(iri.norms[0]), whole_sample_group(iri.norms[1])      # briganti2018, davis1980
    ('all', None)
    """
    return next((g.id for g in sample.groups if not g.where), None)


def unmatched_respondents(scores: pd.DataFrame, instruments: Mapping[str, Instrument], *,
                          samples: SampleChoice = None) -> dict[tuple[str, str], list[str]]:
    """(instrument, norm sample) -> ids of the respondents that match no group of the sample."""
    scores = as_norm_scores(scores, instruments)
    attributes = attribute_columns(scores)
    out = {}
    for inst_id, sample_list in samples_compared(scores, instruments, samples).items():
        people = scores.loc[scores["instrument"] == inst_id].drop_duplicates("respondent_id")
        named = named_attributes(attributes, sample_list)
        records = people[named].to_dict("records") if named else [{}] * len(people)
        for sample in sample_list:
            out[(inst_id, sample.id)] = [str(rid) for rid, group in zip(people["respondent_id"],
                                                                        match_groups(sample, records)) if group is None]
    return out

