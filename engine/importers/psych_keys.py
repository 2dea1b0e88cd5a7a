"""Importing R ``psych`` scoring keys: a key list, or a keys matrix written from R.

Two forms are read (chosen by the file's suffix):

- an R snippet (any suffix but ``.csv``): ``keys <- list(PT = c("q3", "-q8", "q11"), EC = c(2, -4, 9))``.
  Only this strict subset of R is read, by a small tokenizer (R is never run): one ``list(...)``,
  optionally assigned with ``<-`` or ``=``, of ``name = c(...)`` entries whose elements are
  quoted item names or whole numbers (positions), ``-`` (in or before the quotes) marking a
  reversed item, ``a:b`` a range of positions, ``#`` comments. Anything else, a function call
  above all, is an error at its line and column;
- a keys matrix CSV as ``write.csv(make.keys(...))`` writes it: items as rows (their names in
  the first, unnamed column), scales as columns, cells -1, 0 or 1.

A key list holds neither item texts nor the response scale: ``--items ITEMS.csv`` (columns
``id,text``; item positions refer to its rows) and ``--scale MIN-MAX`` (``--labels "LOW|HIGH"``
for the end labels) give them; what is not given becomes a placeholder listed as to finish.
Subscales are scored as means, psych's default (``scoreItems(totals = FALSE)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from psyq.engine.files.csvfile import read_csv_table
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.inputfile import read_input_text
from psyq.engine.importers.base import Importer
from psyq.engine.importers.draft import Draft, DraftItem, DraftSubscale, is_id, make_id

TOKEN = re.compile(r"""
    (?P<space>[ \t\r\n]+) | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>\d+(?:\.\d*)?L?)
  | (?P<name>`[^`\n]+`|[A-Za-z.][A-Za-z0-9._]*)
  | (?P<op><-|[=(),:-])
""", re.VERBOSE)
DEFAULT_SCALE = (1, 5)


@dataclass(frozen=True)
class Token:
    kind: str          # string, number, name, op, end
    text: str
    line: int
    column: int


@dataclass(frozen=True)
class Key:
    """One element of a scale's key: an item name or a 1-based position, and its direction."""

    item: str | int
    reverse: bool
    line: int
    column: int


def tokenize(file: str, text: str) -> list[Token]:
    """The tokens of an R key list; an unexpected character is an error at its line and column.

    Example:
        >>> [t.text for t in tokenize("k.R", 'list(PT = c("q3", -2))')]
        ['list', '(', 'PT', '=', 'c', '(', '"q3"', ',', '-', '2', ')', ')', '']
    """
    tokens, pos, line, start = [], 0, 1, 0
    while pos < len(text):
        match = TOKEN.match(text, pos)
        if not match:
            raise InputError.single(file, f"unexpected character {text[pos]!r}: psyq reads only "
                                          "list(name = c(...)) with quoted item names or numbers",
                                    line, pos - start + 1)
        kind = match.lastgroup or ""
        if kind not in ("space", "comment"):
            tokens.append(Token(kind, match.group(), line, pos - start + 1))
        for k in [i for i, ch in enumerate(match.group()) if ch == "\n"]:
            line, start = line + 1, pos + k + 1
        pos = match.end()
    tokens.append(Token("end", "", line, pos - start + 1))
    return tokens


class _Parser:
    """A recursive-descent reader of ``[name <-] list(name = c(elem, ...), ...)``."""

    def __init__(self, file: str, tokens: list[Token]):
        self.file, self.tokens, self.k = file, tokens, 0

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.k + ahead, len(self.tokens) - 1)]

    def error(self, token: Token, message: str) -> InputError:
        return InputError.single(self.file, message, token.line, token.column)

    def take(self, text: str, what: str) -> Token:
        token = self.peek()
        if token.text != text or token.kind not in ("op", "name"):
            raise self.error(token, f"expected {what}, found {_shown(token)}")
        self.k += 1
        return token

    def keys(self) -> dict[str, list[Key]]:
        if self.peek().kind == "name" and self.peek(1).text in ("<-", "="):
            self.k += 2                       # `keys <- list(...)`: the variable's name is not used
        head = self.peek()
        if head.kind == "name" and head.text != "list" and self.peek(1).text == "(":
            raise self.error(head, f"`{head.text}(` is a function call psyq does not run; give the key "
                                   "list itself: list(name = c(...))")
        self.take("list", "list(")
        self.take("(", "'(' after list")
        scales: dict[str, list[Key]] = {}
        while self.peek().text != ")":
            name_token = self.peek()
            name = self.scale_name()
            if name in scales:
                raise self.error(name_token, f"scale '{name}' is given twice")
            self.take("=", f"'=' after the scale name {name}")
            scales[name] = self.value()
            if self.peek().text == ",":
                self.k += 1
            elif self.peek().text != ")":
                raise self.error(self.peek(), f"expected ',' or ')', found {_shown(self.peek())}")
        self.take(")", "')'")
        if self.peek().kind != "end":
            raise self.error(self.peek(), f"unexpected {_shown(self.peek())} after the list; give one key list")
        if not scales:
            raise self.error(head, "the key list is empty")
        return scales

    def scale_name(self) -> str:
        token = self.peek()
        if token.kind == "string":
            name = _unquote(token.text)
        elif token.kind == "name":
            name = token.text.strip("`")
        else:
            raise self.error(token, f"expected a scale name, found {_shown(token)}")
        if not is_id(name):
            raise self.error(token, f"scale name {name!r} cannot be a psyq subscale id (letters, digits, "
                                    "'_', '.', '-', starting with a letter or digit)")
        self.k += 1
        return name

    def value(self) -> list[Key]:
        token = self.peek()
        if token.kind == "name" and token.text == "c" and self.peek(1).text == "(":
            self.k += 2
            out: list[Key] = []
            while self.peek().text != ")":
                out.extend(self.element())
                if self.peek().text == ",":
                    self.k += 1
                elif self.peek().text != ")":
                    raise self.error(self.peek(), f"expected ',' or ')', found {_shown(self.peek())}")
            self.take(")", "')'")
            if not out:
                raise self.error(token, "the scale has no items")
            return out
        return self.element()

    def element(self) -> list[Key]:
        token = self.peek()
        minus = token.text == "-" and token.kind == "op"
        if minus:
            self.k += 1
            token = self.peek()
        if token.kind == "string":
            self.k += 1
            text = _unquote(token.text)
            reverse = minus != text.startswith("-")
            name = text[1:] if text.startswith("-") else text
            if not is_id(name):
                raise self.error(token, f"item name {name!r} cannot be a psyq item id (letters, digits, "
                                        "'_', '.', '-'); rename the item")
            return [Key(name, reverse, token.line, token.column)]
        if token.kind == "number":
            self.k += 1
            first = _position(self, token)
            if self.peek().text == ":":
                if minus:
                    raise self.error(token, "a reversed range (-a:b) is ambiguous in R; list reversed items one by one")
                self.k += 1
                last_token = self.peek()
                if last_token.kind != "number":
                    raise self.error(last_token, f"expected a number after ':', found {_shown(last_token)}")
                self.k += 1
                last = _position(self, last_token)
                if last < first:
                    raise self.error(token, f"the range {first}:{last} runs backwards")
                return [Key(p, False, token.line, token.column) for p in range(first, last + 1)]
            return [Key(first, minus, token.line, token.column)]
        if token.kind == "name" and self.peek(1).text == "(":
            raise self.error(token, f"`{token.text}(` is a function call psyq does not run; list the items "
                                    "as quoted names or numbers")
        if token.kind == "name":
            raise self.error(token, f"unquoted name {token.text}: psyq does not look up R variables; write the "
                                    f"item name in quotes (\"{token.text}\")")
        raise self.error(token, f"expected an item (a quoted name or a number), found {_shown(token)}")


def _position(parser: _Parser, token: Token) -> int:
    if not re.fullmatch(r"\d+L?", token.text) or int(token.text.rstrip("L")) < 1:
        raise parser.error(token, f"{token.text} is not an item position (a whole number from 1)")
    return int(token.text.rstrip("L"))


def _shown(token: Token) -> str:
    return "the end of the file" if token.kind == "end" else f"'{token.text}'"


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def parse_key_list(file: str, text: str) -> dict[str, list[Key]]:
    """The scales of an R key list, each a list of :class:`Key` (R is never run).

    Example:
        >>> keys = parse_key_list("k.R", 'keys <- list(PT = c("q3", "-q8"), EC = c(1, -2, 4:5))')
        >>> [(k.item, k.reverse) for k in keys["PT"]], [k.item for k in keys["EC"]]
        ([('q3', False), ('q8', True)], [1, 2, 4, 5])
    """
    return _Parser(file, tokenize(file, text)).keys()


def read_keys_matrix(path: str) -> dict[str, list[Key]]:
    """Scales of a keys matrix CSV (items as rows named in the first column, scales as columns,
    cells -1, 0, 1), as :func:`parse_key_list` returns them."""
    table = read_csv_table(path, row_names=True)
    if len(table.header) < 2:
        raise InputError.single(path, "a keys matrix has the item names in the first column and one column per "
                                      "scale", line=1)
    scales: dict[str, list[Key]] = {name: [] for name in table.header[1:]}
    problems = []
    for k, name in enumerate(table.header[1:], start=2):
        if not is_id(name):
            problems.append(Problem(path, 1, None, f"column {k}", f"scale name {name!r} cannot be a psyq subscale id"))
    for cells, line in zip(table.rows, table.lines):
        item = cells[0]
        if not is_id(item):
            problems.append(Problem(path, line, 1, "", f"item name {item!r} cannot be a psyq item id"))
            continue
        for k, (name, cell) in enumerate(zip(table.header[1:], cells[1:]), start=2):
            try:
                weight = float(cell)
            except ValueError:
                weight = None
            if weight not in (-1.0, 0.0, 1.0):
                problems.append(Problem(path, line, None, f"column '{name}'", f"{cell!r} is not -1, 0 or 1"))
            elif weight:
                scales[name].append(Key(item, weight < 0, line, 1))
    if problems:
        raise InputError(problems)
    kept = {name: keys for name, keys in scales.items() if keys}
    if not kept:
        raise InputError.single(path, "every cell is 0: no scale has an item")
    return kept


def read_items_csv(path: str) -> list[tuple[str, str, int]]:
    """(id, text, line) of each row of an item file with the columns id (or item_id) and text."""
    table = read_csv_table(path)
    id_column = "id" if "id" in table.header else "item_id" if "item_id" in table.header else None
    if id_column is None or "text" not in table.header:
        raise InputError.single(path, "the item file needs the columns id and text", line=1)
    out, problems, seen = [], [], set()
    for item_id, text, line in zip(table.column(id_column), table.column("text"), table.lines):
        if not is_id(item_id):
            problems.append(Problem(path, line, None, id_column, f"{item_id!r} cannot be a psyq item id"))
        elif item_id in seen:
            problems.append(Problem(path, line, None, id_column, f"item '{item_id}' is given twice"))
        seen.add(item_id)
        out.append((item_id, text, line))
    if problems:
        raise InputError(problems)
    return out


def parse_scale_range(text: str) -> tuple[int, int]:
    """``"1-5"`` or ``"0-4"`` as (1, 5); a bad range is an InputError.

    Example:
        >>> parse_scale_range("0-4")
        (0, 4)
    """
    match = re.fullmatch(r"\s*(-?\d+)\s*-\s*(-?\d+)\s*", text or "")
    if not match or int(match.group(1)) >= int(match.group(2)):
        raise InputError.single("--scale", f"{text!r} is not a scale range MIN-MAX with MIN < MAX, e.g. 1-5")
    return int(match.group(1)), int(match.group(2))


class PsychKeysImporter(Importer):
    name = "psych-keys"
    help = "R psych scoring keys: a key list (list(PT = c(\"q3\", \"-q8\"))) or a make.keys matrix CSV"
    file_help = "an R snippet with the key list (.R/.txt), or a keys matrix CSV written by write.csv(make.keys(...))"

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--items", metavar="ITEMS.csv", help="item texts: a CSV with columns id,text "
                                                                 "(numbers in the key list are row positions)")
        parser.add_argument("--scale", metavar="MIN-MAX", help="the response scale's values, e.g. 1-5")
        parser.add_argument("--labels", metavar="LOW|HIGH", help="labels of the two end points, e.g. "
                                                                 "\"Strongly disagree|Strongly agree\"")

    def read(self, path: str, options: dict[str, Any]) -> list[Draft]:
        """One draft: the key list's scales as mean subscales over the items they name.

        Example:
            >>> [draft] = PsychKeysImporter().read("tests/fixtures/import/keys.R", {"scale": "1-5"})
            >>> [(s.id, s.score) for s in draft.subscales]
            [('PT', 'mean'), ('EC', 'mean')]
        """
        file = str(path)
        if file.lower().endswith(".csv"):
            scales = read_keys_matrix(file)
        else:
            scales = parse_key_list(file, read_input_text(file))
        rows = read_items_csv(options["items"]) if options.get("items") else None
        stem = Path(file).stem
        draft = Draft(id=make_id(stem, "keys"), name=stem, file=file, format_name="psych key list",
                      command="psyq import psych-keys", texts_file=f"{make_id(stem, 'keys')}_texts.csv")
        _scale(draft, options)
        texts = {item_id: text for item_id, text, _ in rows or []}
        order = [item_id for item_id, _, _ in rows or []]
        where = Path(file).name
        reverse: dict[str, bool] = {}
        members: dict[str, list[str]] = {}
        for name, keys in scales.items():
            members[name] = []
            for key in keys:
                item_id = _item_id(file, key, order, rows is not None)
                at = f"{where}:{key.line}"
                if item_id in reverse and reverse[item_id] != key.reverse:
                    draft.note(at, f"'{item_id}' is reversed in one scale and not in another; psyq keys an item "
                                   f"one way for all its subscales, so it was left out of '{name}'")
                    continue
                reverse[item_id] = key.reverse
                if item_id not in members[name]:
                    members[name].append(item_id)
                if item_id not in order:
                    order.append(item_id)
        for item_id in order:
            text = texts.get(item_id)
            draft.items.append(DraftItem(item_id, text or None, reverse=reverse.get(item_id, False),
                                         subscales=[n for n in scales if item_id in members[n]], source=where))
        if rows is not None:
            missing = [i for i in order if i not in texts]
            if missing:
                draft.note(options["items"], f"no text for item(s) {', '.join(missing)} named in the keys")
        for name in scales:
            if members[name]:
                draft.subscales.append(DraftSubscale(name, name, "mean", where))
            else:
                draft.note(where, f"scale '{name}' kept no item and was left out")
        if draft.subscales:
            draft.note(where, "subscales are means, as psych::scoreItems gives by default (totals = FALSE); "
                              "psych imputes missing answers with the item median by default, psyq never "
                              "imputes (a mean needs every item unless `min_answered` is set); set `score: sum` "
                              "if you used totals = TRUE", ("subscales",))
        return [draft]


def _item_id(file: str, key: Key, order: list[str], have_items: bool) -> str:
    if isinstance(key.item, str):
        return key.item
    if not have_items:
        return str(key.item)
    if key.item > len(order):
        raise InputError.single(file, f"item position {key.item} is beyond the {len(order)} items of the item "
                                      "file", key.line, key.column)
    return order[key.item - 1]


def _scale(draft: Draft, options: dict[str, Any]) -> None:
    low, high = parse_scale_range(options["scale"]) if options.get("scale") else DEFAULT_SCALE
    labels = (options.get("labels") or "").split("|")
    given = len(labels) == 2 and all(x.strip() for x in labels) and labels[0].strip() != labels[1].strip()
    if options.get("labels") and not given:
        raise InputError.single("--labels", f"{options['labels']!r} is not two different labels LOW|HIGH")
    low_label, high_label = (labels[0].strip(), labels[1].strip()) if given else ("lowest", "highest")
    draft.scale = [{"value": v} for v in range(low, high + 1)]
    draft.scale[0]["label"], draft.scale[-1]["label"] = low_label, high_label
    if not options.get("scale"):
        draft.note(draft.file, f"a key list has no response scale: psyq wrote {low}-{high} as a "
                               "placeholder (reverse keying depends on it); give --scale MIN-MAX", ("scale",))
    if not given:
        draft.note(draft.file, "the end labels 'lowest' and 'highest' are placeholders (respondents see them); "
                               "give --labels \"LOW|HIGH\"", ("scale",))
