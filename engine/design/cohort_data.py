"""A cohort drawn from a human data file: the `from_data:` source of a cohort file (format `cohort/1`).

A user's human data CSV (the files ``--human`` reads, through their codebook) gives the personas:
the columns named under `attributes` become persona attributes, and either

- ``twins``: one persona per row (a digital twin), whose id is the row's ``respondent_id``
  exactly, for all rows or a seeded subset of them; or
- ``draw``: `size` personas drawn from the rows, ∝ a weight column (survey weights) or with equal
  weights, with or without replacement, optionally stratified, ids ``<id_prefix><number>``.

What was drawn (rows, weights, mode, seed, the file's sha256, rows skipped and why) is the
cohort's :attr:`~psyq.engine.design.persona.Cohort.provenance`, which the run's manifest records
under ``cohort.from_data``. The algorithms are documented in docs/cohorts.md; every problem is
reported at the cohort file's line (the `from_data:` field) or the CSV's line (a bad cell).

The file is read through its codebook (:mod:`psyq.engine.files.codebook`, the same reading as
``--human``: column renames and value labels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from psyq.engine.design.cohort_csv import parse_cell
from psyq.engine.design.persona import check_attribute_name, check_persona_id
from psyq.engine.files.codebook import read_table_through_codebook
from psyq.engine.files.hashing import file_sha256
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.files.notices import notify
from psyq.engine.files.shipped import locate
from psyq.engine.files.validation import raise_problems
from psyq.engine.files.yamlfile import FieldPath, YamlDocument

if TYPE_CHECKING:   # numpy is imported by the draws: a cohort of every row, or of hand-written personas, needs none
    import numpy as np

ID_COLUMN = "respondent_id"
# As many personas as a `sample:` may have (engine/design/persona.py): all drawn in memory.
MAX_PERSONAS = 100_000

def _twins_value(value: Any) -> Any:
    # `twins: all` is short for {rows: all}; one plain message for `twins: 200` or `twins: yes`.
    if value == "all":
        return {"rows": "all"}
    if isinstance(value, dict):
        return value
    raise ValueError(f"must be `all` (every row) or {{rows: N, seed: S}} (a seeded subset of N rows), "
                     f"not {value!r}")


def _rows_value(value: Any) -> Any:
    # One plain message instead of pydantic's two (one per member of `all` | a number).
    if value == "all" or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_PERSONAS):
        return value
    raise ValueError(f"must be `all` or a whole number of rows from 1 to {MAX_PERSONAS:,}, not {value!r}")


class TwinsSpec(StrictModel):
    """Every row (`rows: all`, or `twins: all`), or a subset of `rows` rows drawn with `seed`, each at most once."""

    rows: Annotated[Literal["all"] | Annotated[int, Field(ge=1, le=MAX_PERSONAS)], BeforeValidator(_rows_value)]
    seed: Annotated[int, Field(strict=True, ge=0)] | None = None


class DrawSpec(StrictModel):
    """`size` personas drawn with `seed` ∝ `weight` (equal weights without it), ids `id_prefix` + number."""

    size: Annotated[int, Field(strict=True, ge=1, le=MAX_PERSONAS)]
    seed: Annotated[int, Field(strict=True, ge=0)]
    id_prefix: Id
    weight: Text | None = None
    replace: bool = True
    strata: Text | None = None


class FromDataSpec(StrictModel):
    """`from_data:` of a cohort file: a human data CSV, the columns that become attributes, twins or a draw."""

    file: Text
    codebook: Text | None = None
    attributes: list[Text] = Field(min_length=1)
    twins: Annotated[TwinsSpec, BeforeValidator(_twins_value, json_schema_input_type=Literal["all"] | TwinsSpec)] \
        | None = None
    draw: DrawSpec | None = None


def check_from_data(spec: FromDataSpec, doc: YamlDocument) -> list[Problem]:
    """Meaning checks that need no file: twins or draw (one of them), attribute names usable as
    placeholders (the cohort format's rule, :func:`~psyq.engine.design.persona.check_attribute_name`)
    and not repeated."""
    at: FieldPath = ("from_data",)
    problems = []
    given = [k for k in ("twins", "draw") if getattr(spec, k) is not None]
    if not given:
        problems.append(doc.problem(at, "give `twins` (one persona per row: `all` or {rows: N, seed: S}) or "
                                        "`draw` (N personas drawn from the rows: {size, seed, id_prefix, ...})"))
    elif len(given) == 2:
        later = max(given, key=lambda k: doc.where(at + (k,)))
        problems.append(doc.problem(at + (later,), "`twins` and `draw` cannot be combined: give one of them",
                                    at_key=True))
    if spec.twins is not None:
        if spec.twins.rows == "all" and spec.twins.seed is not None:
            problems.append(doc.problem(at + ("twins", "seed"), "`rows: all` takes every row; a seed chooses a "
                                        "subset: give {rows: N, seed: S}, or leave the seed out", at_key=True))
        elif spec.twins.rows != "all" and spec.twins.seed is None:
            problems.append(doc.problem(at + ("twins",), f"a subset of {spec.twins.rows} rows needs a `seed` "
                                        "(a whole number ≥ 0; the same seed and file give the same twins)"))
    seen: dict[str, int] = {}
    for i, name in enumerate(spec.attributes):
        if name == ID_COLUMN:
            problems.append(doc.problem(at + ("attributes", i), f"'{ID_COLUMN}' is the persona's id (twins) or "
                                        "recorded in the run's manifest (draw), never an attribute shown to the model"))
        elif message := check_attribute_name(name):
            problems.append(doc.problem(at + ("attributes", i), message + " (rename the column in a codebook: "
                                        "columns.attributes, docs/comparing.md#codebooks)"))
        if name in seen:
            problems.append(doc.problem(at + ("attributes", i), f"'{name}' is already listed (entry {seen[name] + 1})"))
        seen.setdefault(name, i)
    return problems


@dataclass
class DataPersonas:
    """The personas a `from_data:` source gives: (id, attributes) in order, the record of the draw
    for the manifest, and the files read (for the run id)."""

    personas: list[tuple[str, dict[str, Any]]]
    provenance: dict[str, Any]
    files: tuple[Path, ...] = field(default_factory=tuple)


def _file_problem(doc: YamlDocument, where: FieldPath, what: str, path: Path) -> Problem | None:
    if path.is_file():
        return None
    why = "is not a file (a directory or a device)" if path.exists() else "not found"
    return doc.problem(where, f"{what} {why}: {path}")


def _columns_hint(header: list[str]) -> str:
    return ", ".join(header) if len(header) <= 20 else ", ".join(header[:10]) + ", …, " + ", ".join(header[-5:])


def _close(name: str, header: list[str]) -> str:
    import difflib
    close = difflib.get_close_matches(name, header, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def read_from_data(spec: FromDataSpec, doc: YamlDocument, cohort_path: str | Path) -> DataPersonas:
    """The personas of a `from_data:` source (already shape- and meaning-checked by the caller).

    Raises :class:`InputError` for every problem: at the cohort file's line for the fields
    (a missing file, a column not in the data, more rows asked for than there are), at the CSV's
    line for a bad cell (a twin's id that cannot be a persona id, a weight that is not a number
    ≥ 0). Rows with an empty attribute, weight or stratum cell, and rows of weight 0, are skipped:
    counted with their reason in a notice and in the provenance, never silently. The cohort
    format's rules for persona ids and CSV cells come from cohort_file.py (which imports this module).
    """
    at: FieldPath = ("from_data",)
    folder = Path(cohort_path).parent
    try:   # relative to the cohort file, not the working directory; or a shipped data file's name
        csv_path = locate(spec.file, "human data", folder).resolve()
    except InputError as exc:
        raise InputError([doc.problem(at + ("file",), exc.problems[0].message)]) from None
    book_path = (folder / spec.codebook).resolve() if spec.codebook is not None else None
    raise_problems([p for p in (_file_problem(doc, at + ("file",), "data file", csv_path),
                                book_path and _file_problem(doc, at + ("codebook",), "codebook", book_path))
                    if p is not None])
    table, used_book = read_table_through_codebook(csv_path, book_path)
    header, file = table.header, table.file

    # Every column the spec names must be in the table (after the codebook's renaming).
    problems = []
    if ID_COLUMN not in header:
        problems.append(Problem(file, 1, None, "", f"missing column '{ID_COLUMN}' (the respondent ids; if the file "
                                "names it otherwise, say so in a codebook: columns.respondent_id, "
                                "docs/comparing.md#codebooks)"))
    named = [(at + ("attributes", i), name, "attribute") for i, name in enumerate(spec.attributes)]
    if spec.draw is not None:
        named += [(at + ("draw", k), getattr(spec.draw, k), k) for k in ("weight", "strata")
                  if getattr(spec.draw, k) is not None]
    for path, name, what in named:
        if name not in header:
            problems.append(doc.problem(path, f"{what} column '{name}' is not in {file}{_close(name, header)} "
                                        f"(its columns{', after the codebook' if used_book else ''}: "
                                        f"{_columns_hint(header)})"))
    raise_problems(problems)

    # Row by row: the respondent id (unique, not empty; a twin's must be a persona id), the weight
    # (a number ≥ 0), and what makes the row unusable.
    col = {name: header.index(name) for name in header}
    weight_col = spec.draw.weight if spec.draw is not None else None
    strata_col = spec.draw.strata if spec.draw is not None else None
    id_field = f"column '{ID_COLUMN}'"
    first_line: dict[str, int] = {}
    usable: list[dict[str, Any]] = []
    skipped: dict[str, list[str]] = {}
    for cells, line in zip(table.rows, table.lines):
        rid = cells[col[ID_COLUMN]]
        if rid == "":
            problems.append(Problem(file, line, None, id_field, "the respondent id is empty"))
            continue
        if rid in first_line:
            problems.append(Problem(file, line, None, id_field, f"respondent id {rid!r} is already used on line "
                                                                f"{first_line[rid]}"))
            continue
        first_line[rid] = line
        if spec.twins is not None and (why := _twin_id_problem(rid)):
            problems.append(Problem(file, line, None, id_field, why))
            continue
        weight = 1.0
        if weight_col is not None and (text := cells[col[weight_col]]) != "":
            try:
                weight = float(text)
            except ValueError:
                weight = math.nan
            if not (math.isfinite(weight) and weight >= 0):
                problems.append(Problem(file, line, None, f"column '{weight_col}'", f"the weight {text!r} is not a "
                                        "number ≥ 0 (an empty cell skips the row; a weight of 0 never draws it)"))
                continue
        empty = [name for name in (*spec.attributes, *(c for c in (weight_col, strata_col) if c is not None))
                 if cells[col[name]] == ""]
        if empty:
            reason = "empty " + ", ".join(dict.fromkeys(empty))
        elif weight == 0:
            reason = f"weight 0 in {weight_col}"
        else:
            usable.append({"respondent_id": rid, "line": line, "weight": weight,
                           "attributes": {name: parse_cell(cells[col[name]]) for name in spec.attributes},
                           "stratum": parse_cell(cells[col[strata_col]]) if strata_col is not None else None})
            continue
        skipped.setdefault(reason, []).append(rid)
    raise_problems(problems)

    n_rows = len(table.rows)
    if skipped:
        said = "; ".join(f"{len(ids)} with {reason}" for reason, ids in skipped.items())
        notify(Problem(file, None, None, "", f"{sum(map(len, skipped.values()))} of {n_rows} rows skipped for the "
                                             f"cohort {doc.file}: {said}"))
    if not usable:
        raise InputError([doc.problem(at, f"no usable rows in {file}: all {n_rows} rows are skipped "
                                          f"({'; '.join(f'{len(v)} with {k}' for k, v in skipped.items()) or 'none'})")])

    provenance: dict[str, Any] = {
        "file": str(csv_path), "sha256": file_sha256(csv_path),
        "codebook": used_book, "codebook_sha256": file_sha256(Path(used_book)) if used_book else None,
        "attributes": list(spec.attributes), "rows_in_file": n_rows, "rows_usable": len(usable),
        "skipped": [{"reason": reason, "rows": len(ids), "respondent_ids": ids} for reason, ids in skipped.items()],
    }
    if spec.twins is not None:
        chosen = _twins(spec.twins, usable, doc, at + ("twins",))
        provenance.update(mode="twins", rows=spec.twins.rows, seed=spec.twins.seed)
        personas = [(row["respondent_id"], row["attributes"]) for row in chosen]
        provenance["personas"] = [{"id": row["respondent_id"], "respondent_id": row["respondent_id"]} for row in chosen]
    else:
        assert spec.draw is not None
        draw = spec.draw
        chosen, allocation = _drawn(draw, usable, doc, at + ("draw",))
        width = len(str(draw.size))
        ids = [f"{draw.id_prefix}{k + 1:0{width}d}" for k in range(len(chosen))]
        personas = [(pid, row["attributes"]) for pid, row in zip(ids, chosen)]
        provenance.update(mode="draw", seed=draw.seed, size=draw.size, weight=draw.weight, replace=draw.replace,
                          strata=draw.strata, allocation=allocation)
        provenance["personas"] = [{"id": pid, "respondent_id": row["respondent_id"],
                                   **({"weight": row["weight"]} if draw.weight is not None else {}),
                                   **({"stratum": row["stratum"]} if draw.strata is not None else {})}
                                  for pid, row in zip(ids, chosen)]
    files = (csv_path, *((Path(used_book).resolve(),) if used_book else ()))
    return DataPersonas(personas, provenance, files)


def _twin_id_problem(rid: str) -> str | None:
    import re
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", rid):   # the pattern of psyq.engine.files.fields.Id
        return (f"respondent id {rid!r} cannot be a twin's persona id (the twin's id is the respondent id "
                "exactly): use letters, digits, '_', '-' or '.', starting with a letter or digit")
    return check_persona_id(rid)


def _twins(twins: TwinsSpec, usable: list[dict[str, Any]], doc: YamlDocument,
           at: FieldPath) -> list[dict[str, Any]]:
    """Every usable row, or a seeded subset (each row at most once), in the file's order.

    A subset: one ``Generator(PCG64(seed))`` gives one uniform number per usable row, in the
    file's order; the `rows` rows with the smallest numbers are the twins (a simple random sample
    without replacement), listed in the file's order.
    """
    if twins.rows == "all":
        if len(usable) > MAX_PERSONAS:
            raise InputError([doc.problem(at, f"{len(usable):,} usable rows: more than {MAX_PERSONAS:,} twins; "
                                              "take a seeded subset ({rows: N, seed: S})")])
        return usable
    assert isinstance(twins.rows, int) and twins.seed is not None
    if twins.rows > len(usable):
        raise InputError([doc.problem(at + ("rows",), f"{twins.rows} twins asked for, but the file has "
                                                      f"{len(usable)} usable rows")])
    import numpy as np

    u = np.random.Generator(np.random.PCG64(twins.seed)).random(len(usable))
    picked = np.sort(np.argsort(u, kind="stable")[:twins.rows])
    return [usable[k] for k in picked]


def allocate(size: int, shares: list[float]) -> list[int]:
    """Proportional allocation of `size` to strata with weighted `shares`, by largest remainders.

    Each stratum gets the whole part of ``size × share / Σ shares``; the units left over go one
    each to the strata with the largest fractional parts (ties: the stratum listed first). So the
    allocations sum to `size` and each is within one of its exact share.

    Example:
        >>> allocate(10, [0.6, 0.3, 0.1]), allocate(10, [1, 1, 1])
        ([6, 3, 1], [4, 3, 3])
    """
    total = float(sum(shares))
    exact = [size * s / total for s in shares]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(len(shares)), key=lambda h: (-(exact[h] - counts[h]), h))
    for h in order[:size - sum(counts)]:
        counts[h] += 1
    return counts


def _pick(rng: np.random.Generator, weights: np.ndarray, n: int, replace: bool) -> np.ndarray:
    """`n` indices drawn ∝ `weights` (all > 0), in the order drawn.

    With replacement: one uniform u per draw; the index is where u falls among the cumulative
    normalised weights. Without: one uniform u per row; each row's key is log(u) / weight, and the
    `n` largest keys, largest first, are the draw (Efraimidis and Spirakis, 2006): the same
    distribution as drawing one row at a time ∝ weight among the rows not drawn yet.
    """
    import numpy as np

    if replace:
        cdf = np.cumsum(weights)
        cdf /= cdf[-1]
        cdf[-1] = 1.0   # rounding must not leave a sliver above the last row
        return np.searchsorted(cdf, rng.random(n), side="right")
    keys = np.log(rng.random(len(weights))) / weights
    return np.argsort(-keys, kind="stable")[:n]


def _drawn(draw: DrawSpec, usable: list[dict[str, Any]], doc: YamlDocument,
           at: FieldPath) -> tuple[list[dict[str, Any]], dict[str, int] | None]:
    """The rows drawn (in draw order; a row may come more than once with replacement) and, for a
    stratified draw, the allocation of `size` to the strata (stratum as text -> personas)."""
    import numpy as np

    rng = np.random.Generator(np.random.PCG64(draw.seed))
    if draw.strata is None:
        if not draw.replace and draw.size > len(usable):
            raise InputError([doc.problem(at + ("size",), f"{draw.size} personas drawn without replacement, but the "
                                                          f"file has {len(usable)} usable rows (replace: true draws a "
                                                          "row more than once)")])
        weights = np.array([row["weight"] for row in usable], dtype=float)
        return [usable[k] for k in _pick(rng, weights, draw.size, draw.replace)], None
    strata: dict[Any, list[dict[str, Any]]] = {}
    for row in usable:   # strata in the order they first appear in the file
        strata.setdefault(row["stratum"], []).append(row)
    counts = allocate(draw.size, [sum(row["weight"] for row in rows) for rows in strata.values()])
    problems = [doc.problem(at + ("size",), f"stratum {stratum!r} is allocated {n} personas, but it has "
                                            f"{len(rows)} usable rows and the draw is without replacement")
                for (stratum, rows), n in zip(strata.items(), counts) if not draw.replace and n > len(rows)]
    raise_problems(problems)
    out: list[dict[str, Any]] = []
    for rows, n in zip(strata.values(), counts):
        weights = np.array([row["weight"] for row in rows], dtype=float)
        out.extend(rows[k] for k in _pick(rng, weights, n, draw.replace))
    return out, {str(stratum): n for stratum, n in zip(strata, counts)}

