"""What every questionnaire format is: :class:`QuestionnaireFormat`, and the codebooks they write.

A format's module subclasses :class:`QuestionnaireFormat` (its `name`, `help` and :meth:`write`);
``engine/questionnaire/__init__.py`` registers an instance of each. :meth:`write` puts the
platform's files in a folder and, beside them, one codebook (format ``codebook/1``,
:mod:`psyq.engine.files.codebook`) per instrument and per kind of data export the platform gives,
written by :func:`codebook_yaml`, so that ``psyq score`` and ``psyq report --human`` read the
platform's own export with no codebook written by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from psyq.engine.files.atomic import write_text_atomic
from psyq.engine.files.codebook import FORMAT, PLACEHOLDER, SUFFIX
from psyq.engine.questionnaire.form import Part, Questionnaire


@dataclass(frozen=True)
class Written:
    """What a format wrote: the files (the page or the platform's file first, then the codebooks)
    and notes on what it could not do as the study does."""

    files: tuple[Path, ...]
    notes: tuple[str, ...] = ()


class QuestionnaireFormat:
    """One survey platform psyq can write a questionnaire for."""

    name: str = ""
    help: str = ""

    def write(self, asked: Questionnaire, out: Path) -> Written:
        """Write the questionnaire into the folder `out` (created if missing); return what was written."""
        raise NotImplementedError


def item_columns(part: Part) -> str | dict[str, str]:
    """The codebook's ``columns.items``: a pattern when every column is a prefix and the item id,
    else a map item id -> column.

    Example:
        >>> from psyq.engine.questionnaire.form import questionnaire_from
        >>> item_columns(questionnaire_from("iri").parts[0])
        'iri_{id}'
    """
    prefix = part.items[0].column[: len(part.items[0].column) - len(part.items[0].id)]
    if all(item.column == prefix + item.id for item in part.items):
        return prefix + PLACEHOLDER
    return {item.id: item.column for item in part.items}


def codebook_yaml(part: Part, *, describes: str, respondent_column: str, attributes: dict[str, str],
                  values: dict[str, dict[str, str]] | None = None, item_values: dict[str, int] | None = None,
                  keyed: bool = False, skip_rows: int = 0, items: dict[str, str] | None = None,
                  option_orders: tuple[str, tuple[str, ...]] | None = None, comment: str = "") -> str:
    """The codebook of the data a platform exports for one instrument, as YAML text.

    `attributes` maps each cohort attribute to its column; `values` maps an attribute's codes in the
    export to the cohort's categories; `item_values` the export's answer codes to the scale's values;
    `items` names each item's column when they are not the items' answer columns (a labels export);
    `option_orders` the column recording the order of the options each person saw and the orders
    the questionnaire shows (a person with another order is refused when the data are read).

    Example:
        >>> from psyq.engine.questionnaire.form import questionnaire_from
        >>> text = codebook_yaml(questionnaire_from("iri").parts[0], describes="x.csv", respondent_column="id",
        ...                      attributes={})
        >>> text.splitlines()[1:4]
        ['instrument: iri', 'describes: x.csv', 'keyed: false']
    """
    data: dict[str, Any] = {"psyq": FORMAT, "instrument": part.instrument.id, "describes": describes,
                            "keyed": keyed}
    columns: dict[str, Any] = {"respondent_id": respondent_column, "items": items or item_columns(part)}
    if attributes:
        columns["attributes"] = dict(attributes)
    data["columns"] = columns
    if values:
        data["values"] = values
    if item_values is not None:
        data["item_values"] = item_values
    if skip_rows:
        data["skip_rows"] = skip_rows
    if option_orders is not None:
        column, orders = option_orders
        data["option_orders"] = {"column": column, "orders": list(orders)}
    head = "".join(f"# {line}\n" if line else "#\n" for line in comment.splitlines())
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def write_codebook(out: Path, name: str, text: str) -> Path:
    """Write a codebook as ``out/<name>.codebook.yaml``; returns its path."""
    path = out / f"{name}{SUFFIX}"
    write_text_atomic(path, text)
    return path
