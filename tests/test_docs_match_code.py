"""The pages that list "every command" and "every field" list what the code defines (issue 41).

(a) README.md's command table ("## The commands a psychologist uses") against psyq's own
    argparse parser (``psyq.cli.build_parser``), built in-process:

    - every sub-command is named in a row as ```psyq COMMAND ...```, and the table names no
      ``psyq X`` that the parser lacks;
    - every long option of a command (``-h/--help`` aside), and of its own sub-commands (the
      formats of ``psyq import``), appears in a code span of a row that names the command; and
      every ``--option`` a row names is an option of one of the commands that row names;
    - every word a command takes from a fixed set (the choices of a positional argument, e.g.
      ``psyq schema instrument|codebook``, ``psyq list human-data``, and the names of its own
      sub-commands, e.g. ``psyq import qsf``) appears in a code span of such a row; and in a
      ```psyq COMMAND [a|b|c]``` span each of ``a``, ``b``, ``c`` is one of those words or a
      choice of one of the command's options (``--format csv|parquet|sav``).

(b) docs/studies.md's annotated format (the first ```yaml block after "The format, annotated")
    against the study JSON Schema (what ``psyq schema study`` prints, built from the same
    pydantic model the loader uses):

    - every property of the schema, recursively through the nested objects (``backends[]``,
      ``backends[].capabilities``, ``protocol``, ``report``, ``prices.*``, ``stages[]``,
      ``situations``, ``situations.per_respondent`` ...), is a key of the block at its place;
    - every key of the block is a property of the schema at its place (the keys of ``norms:``
      and ``prices:`` are instrument ids and model names: the schema's ``additionalProperties``);
    - the block as a whole satisfies the schema (jsonschema), and `psyq validate` accepts it as a
      study (in-process, in a scratch folder), so its example values are valid and go together.

    Fields are checked in the block, not in the prose: a field named only in a sentence is not
    "listed", and comments are not parsed.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from cli_helper import psyq_in_process
from psyq.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
STUDIES = ROOT / "docs" / "studies.md"
TABLE_HEADING = "## The commands a psychologist uses"
BLOCK_INTRO = "The format, annotated"

CODE_SPAN = re.compile(r"`([^`]+)`")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
WORD = re.compile(r"[A-Za-z0-9_][\w-]*")
ALTERNATIVES = re.compile(r"[\w-]+(?:\|[\w-]+)+")
CELL_BORDER = re.compile(r"(?<!\\)\|")          # a cell border: a pipe not escaped as \|


# --- (a) the command table against the parser -------------------------------------------------

@dataclass
class Surface:
    """What one command accepts: its long options and the words it takes from fixed sets."""

    options: set[str] = field(default_factory=set)
    words: set[str] = field(default_factory=set)            # must be in the table
    option_words: set[str] = field(default_factory=set)     # an option's choices: may be, need not

    @property
    def choices(self) -> set[str]:
        return self.words | self.option_words


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: sub for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def _surface(parser: argparse.ArgumentParser, into: Surface) -> Surface:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            into.words |= set(action.choices)
            for sub in action.choices.values():
                _surface(sub, into)
        elif action.option_strings:
            into.options |= {o for o in action.option_strings if o.startswith("--") and o != "--help"}
            into.option_words |= {str(choice) for choice in action.choices or ()}
        elif action.choices:
            into.words |= {str(choice) for choice in action.choices}
    return into


def parser_commands() -> dict[str, Surface]:
    """psyq's sub-commands, each with the options and words of its own parser and sub-parsers."""
    return {name: _surface(sub, Surface()) for name, sub in _subparsers(build_parser()).items()}


@dataclass
class Row:
    """One row of the table: the commands it names and what its code spans hold."""

    line: int
    spans: list[str]
    commands: list[str] = field(default_factory=list)

    @property
    def options(self) -> set[str]:
        return {o for span in self.spans for o in OPTION.findall(span)}

    @property
    def words(self) -> set[str]:
        return {w for span in self.spans for w in WORD.findall(span)}


def command_table(text: str) -> list[Row]:
    """The rows of the table under TABLE_HEADING (header and separator rows left out)."""
    lines = text.splitlines()
    start = lines.index(TABLE_HEADING)
    first = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    rows = []
    for number in range(first + 2, len(lines)):
        line = lines[number].strip()
        if not line.startswith("|"):
            break
        cells = CELL_BORDER.split(line[1:-1])
        spans = [span.replace("\\|", "|") for cell in cells for span in CODE_SPAN.findall(cell)]
        row = Row(number + 1, spans)
        row.commands = [span.split()[1] for span in spans if span.startswith("psyq ") and len(span.split()) > 1]
        rows.append(row)
    return rows


def listing(found: dict[str, list[str]]) -> str:
    """One line per command or row, for a failure message that pytest does not truncate."""
    return "".join(f"\n  {where}: {' '.join(what)}" for where, what in found.items())


@pytest.fixture(scope="module")
def table() -> list[Row]:
    rows = command_table(README.read_text(encoding="utf-8"))
    assert rows, f"README.md: no table under {TABLE_HEADING!r}"
    return rows


@pytest.fixture(scope="module")
def commands() -> dict[str, Surface]:
    return parser_commands()


def test_every_command_is_in_the_table_and_no_other(table, commands):
    named = {c for row in table for c in row.commands}
    assert not (lacking := sorted(set(commands) - named)), \
        f"README.md's command table leaves out these commands of `psyq --help`: {lacking}"
    assert not (extra := sorted(named - set(commands))), \
        f"README.md's command table names commands psyq does not have: {extra}"


def test_every_option_of_a_command_is_in_its_row(table, commands):
    missing = {}
    for name, surface in commands.items():
        documented = {o for row in table if name in row.commands for o in row.options}
        if lacking := sorted(surface.options - documented):
            missing[name] = lacking
    assert not missing, f"README.md's command table leaves out these options of `psyq COMMAND --help`:{listing(missing)}"


def test_the_table_names_no_option_the_parser_lacks(table, commands):
    unknown = {}
    for row in table:
        known = set().union(*(commands[c].options for c in row.commands if c in commands))
        if extra := sorted(row.options - known):
            unknown[f"README.md:{row.line}"] = extra
    assert not unknown, f"README.md's command table names options that none of the row's commands has:{listing(unknown)}"


def test_every_fixed_word_of_a_command_is_in_its_row(table, commands):
    missing = {}
    for name, surface in commands.items():
        documented = {w for row in table if name in row.commands for w in row.words}
        if lacking := sorted(surface.words - documented):
            missing[name] = lacking
    assert not missing, ("README.md's command table leaves out these choices (`psyq schema codebook`) or "
                         f"sub-commands (`psyq import qsf`):{listing(missing)}")


def test_alternatives_in_a_command_are_its_choices(table, commands):
    unknown = {}
    for row in table:
        for span in row.spans:
            name = span.split()[1] if span.startswith("psyq ") and len(span.split()) > 1 else None
            if name not in commands:
                continue
            for group in ALTERNATIVES.findall(span):
                if extra := [w for w in group.split("|") if w not in commands[name].choices]:
                    unknown[f"README.md:{row.line}: {span}"] = extra
    assert not unknown, f"README.md's command table offers choices the command does not take:{listing(unknown)}"


# --- (b) docs/studies.md's annotated format against the study JSON Schema ----------------------

def study_schema() -> dict[str, Any]:
    """What `psyq schema study` prints (cli/files.py), without a process."""
    from psyq.engine.design.study import StudySpec
    from psyq.engine.files.fields import format_json_schema
    return format_json_schema(StudySpec, "psyq study (format study/1)")


def annotated_text(text: str) -> str:
    """The first ```yaml block after BLOCK_INTRO."""
    match = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M).search(text, text.index(BLOCK_INTRO))
    assert match, f"docs/studies.md: no ```yaml block after {BLOCK_INTRO!r}"
    return match.group(1)


class Walker:
    """Walks the schema (following $ref and anyOf) and a document beside it, by dotted paths.

    A path names a field by where it sits: ``backends[].capabilities.profile``; ``[]`` is any
    element of an array, ``*`` any key of an object whose keys are data (``prices.*.input``).
    """

    def __init__(self, schema: dict[str, Any]):
        self.schema, self.defs = schema, schema.get("$defs", {})

    def branches(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        if "$ref" in node:
            return self.branches(self.defs[node["$ref"].rsplit("/", 1)[-1]])
        if "anyOf" in node:
            return [b for alternative in node["anyOf"] for b in self.branches(alternative)]
        return [node]

    def fields(self, node: dict[str, Any] | None = None, path: str = "") -> set[str]:
        """Every property's path under `node` (default: the whole schema)."""
        out: set[str] = set()
        for branch in self.branches(self.schema if node is None else node):
            for key, sub in branch.get("properties", {}).items():
                here = f"{path}.{key}" if path else key
                out |= {here} | self.fields(sub, here)
            if isinstance(branch.get("additionalProperties"), dict):
                out |= self.fields(branch["additionalProperties"], f"{path}.*")
            if isinstance(branch.get("items"), dict):
                out |= self.fields(branch["items"], f"{path}[]")
        return out

    def named(self, value: Any, node: dict[str, Any] | None = None, path: str = "",
              unknown: list[str] | None = None) -> set[str]:
        """The paths of the fields `value` names; keys the schema lacks are added to `unknown`."""
        unknown = [] if unknown is None else unknown
        branches = self.branches(self.schema if node is None else node)
        out: set[str] = set()
        if isinstance(value, dict):
            objects = [b for b in branches if "properties" in b]
            maps = [b for b in branches if isinstance(b.get("additionalProperties"), dict)]
            if objects:
                # Of alternative objects (a measure or an evoke stage), the one that knows most keys.
                best = max(objects, key=lambda b: len(set(value) & set(b["properties"])))
                for key, sub in value.items():
                    here = f"{path}.{key}" if path else str(key)
                    if key in best["properties"]:
                        out |= {here} | self.named(sub, best["properties"][key], here, unknown)
                    else:
                        unknown.append(here)
            elif maps:
                for sub in value.values():
                    out |= self.named(sub, maps[0]["additionalProperties"], f"{path}.*", unknown)
            else:
                unknown.extend(f"{path}.{key}" for key in value)
        elif isinstance(value, list):
            arrays = [b for b in branches if isinstance(b.get("items"), dict)]
            for sub in value if arrays else []:
                out |= self.named(sub, arrays[0]["items"], f"{path}[]", unknown)
        return out


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return study_schema()


@pytest.fixture(scope="module")
def block() -> Any:
    return yaml.safe_load(annotated_text(STUDIES.read_text(encoding="utf-8")))


def test_every_field_of_the_study_schema_is_in_the_annotated_format(schema, block):
    walker = Walker(schema)
    missing = sorted(walker.fields() - walker.named(block))
    assert not missing, ("docs/studies.md's annotated format leaves out these fields of `psyq schema study`:"
                         + "".join(f"\n  {path}" for path in missing))


def test_the_annotated_format_names_no_field_the_schema_lacks(schema, block):
    unknown: list[str] = []
    Walker(schema).named(block, unknown=unknown)
    assert not unknown, ("docs/studies.md's annotated format names fields `psyq schema study` does not have:"
                         + "".join(f"\n  {path}" for path in unknown))


def test_the_annotated_format_satisfies_the_study_schema(schema, block):
    jsonschema.Draft202012Validator(schema).validate(block)


def test_the_annotated_format_is_a_study_psyq_validate_accepts(tmp_path):
    # Beyond its shape: the example values go together (e.g. `stages:` asks whole instruments, and
    # does not go with `mode: batch`), and the shipped files it names by name exist.
    (tmp_path / "study.yaml").write_text(annotated_text(STUDIES.read_text(encoding="utf-8")))
    result = psyq_in_process("validate", "study.yaml", cwd=tmp_path)
    assert result.returncode == 0, f"docs/studies.md's annotated format: `psyq validate` says\n{result.stderr}"


def test_the_walker_sees_nested_and_alternative_objects(schema):
    # The checks above are only as good as the walk: it must reach into $ref'd, anyOf'd, array
    # and map-valued objects, and flag an unknown key at any depth.
    walker = Walker(schema)
    paths = walker.fields()
    assert {"backends[].capabilities.profile", "protocol.answer", "prices.*.cached_input", "stages[].evoke",
            "situations.per_respondent.sample", "report.estimator"} <= paths
    unknown: list[str] = []
    walker.named({"backends": [{"id": "a", "capabilities": {"profil": "x"}}], "stages": [{"evoke": "situations"}],
                  "norms": {"iri": ["x"]}}, unknown=unknown)
    assert unknown == ["backends[].capabilities.profil"]
