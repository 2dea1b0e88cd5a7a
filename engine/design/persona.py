"""Personas and cohorts: who answers the questionnaire (format `cohort/1`).

A :class:`Persona` is an id, named attributes (age, gender, ...) and an optional backstory; it
becomes the model's system prompt through a template. A :class:`Cohort` is the list of personas
a study administers an instrument to, read from a YAML file whose personas are written by hand,
sampled reproducibly from attribute distributions, read from a CSV file, or taken from the rows
of a human data file (`from_data:`, engine/design/cohort_data.py). The format is
documented with an annotated example in ``personas/README.md``.

Shape is checked by pydantic; meaning (unique ids, usable weights and ranges, placeholders every
persona can fill) by the ``check_*`` functions. Both report every problem with its file, line and
field, as instruments do.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from psyq.engine.design.cohort_data import FromDataSpec, check_from_data, read_from_data
from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.fields import Id, StrictModel, Text, format_json_schema
from psyq.engine.files.inputfile import decode_text, read_input_bytes
from psyq.engine.files.shipped import locate as locate_file
from psyq.engine.files.validation import parse_document, raise_problems
from psyq.engine.files.yamlfile import FieldPath, YamlDocument, load_yaml

if TYPE_CHECKING:   # numpy is imported where personas are sampled: a hand-written or CSV cohort needs none
    import numpy as np

FORMAT = "cohort/1"

# Placeholders every template may use besides the attribute names; an attribute may not take
# one of these names, or `{id}` would be ambiguous.
FIXED_PLACEHOLDERS = ("id", "backstory", "attributes")
ATTRIBUTE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

# Range attributes are drawn as floor(u * n) from one 53-bit uniform u; far below 2**53 values
# the bias is nil, and no attribute a persona describes needs more.
MAX_RANGE_VALUES = 2**31
# Range ends are drawn as 64-bit integers; far beyond any age or income, and refused by
# `validate` rather than overflowing when the cohort is sampled.
MAX_RANGE_END = 2**53
# A sample is drawn whole in memory (a table of uniforms, then personas) before the run plans
# its trials; far more personas than any study administers, and refused before any allocation.
MAX_SAMPLE_SIZE = 100_000


def _scalar(value: Any) -> Any:
    # One plain message instead of pydantic's four (one per member of the union).
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"must be a finite number, not {value}")
    if isinstance(value, (str, int, float, bool)):
        return value
    shown = "empty" if value is None else ("a list" if isinstance(value, list) else
                                           "a mapping" if isinstance(value, dict) else repr(value))
    raise ValueError(f"must be text, a number or true/false, not {shown}")


AttributeValue = Annotated[str | int | float | bool, BeforeValidator(_scalar)]
StrictInt = Annotated[int, Field(strict=True)]  # strict: YAML `true` is not the number 1


class Persona(StrictModel):
    """One simulated respondent: an id, attributes in the order written, an optional backstory.

    Example:
        >>> Persona(id="p01", attributes={"age": 34, "gender": "female"}).attributes["age"]
        34
    """

    id: Id
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)
    backstory: Text | None = None


BASELINE = Persona(id="baseline")
"""The model answering as itself: no attributes and no system prompt (see `include_baseline`)."""

DEFAULT_TEMPLATE = """\
You are answering a questionnaire as the person described below, not as yourself.

{attributes}

{backstory}

Answer every question in the first person, as this person would answer it. Do not mention \
being an AI or a language model.
"""


@dataclass(frozen=True)
class Cohort:
    """The personas of one cohort file, with the template that turns each into a system prompt."""

    id: str
    personas: tuple[Persona, ...]
    template: str
    source: str
    # A cohort drawn from a human data file (`from_data:`, engine/design/cohort_data.py): what was
    # drawn (rows, weights, mode, seed, the file's sha256, rows skipped and why), recorded in the
    # run's manifest as cohort.from_data; None for the other sources.
    provenance: dict[str, Any] | None = field(default=None, hash=False)
    # Files besides the cohort file its personas were read from (the data file and its codebook):
    # their content is part of the run id (Study.file_hashes).
    files: tuple[Path, ...] = ()


# --- the file format -------------------------------------------------------------------------


class AttributeSpec(StrictModel):
    """How one attribute is sampled: weighted `categories` or a whole-number `range` (one of them)."""

    categories: dict[AttributeValue, Annotated[float, Field(strict=True)]] | None = None
    range: list[StrictInt] | None = None


class SampleSpec(StrictModel):
    """A reproducible sample: `size` personas drawn with `seed`, ids `id_prefix` + number."""

    size: Annotated[int, Field(strict=True, ge=1, le=MAX_SAMPLE_SIZE)]
    seed: Annotated[int, Field(strict=True, ge=0)]
    id_prefix: Id
    attributes: dict[str, AttributeSpec] = Field(min_length=1)


class CohortFile(StrictModel):
    """A cohort file as written (see ``personas/README.md``); :func:`load_cohort` builds the Cohort."""

    psyq: Literal["cohort/1"]
    id: Id
    description: Text | None = None
    include_baseline: bool = False
    template: Text | None = None
    # Not `list[Persona] | None`: the did-you-mean for a misspelt persona field finds the Persona
    # model through a plain list only. Whether the list was written is `given_sources`' business.
    personas: list[Persona] = Field(default_factory=list, min_length=1)
    sample: SampleSpec | None = None
    csv: Text | None = None
    from_data: FromDataSpec | None = None


def cohort_json_schema() -> dict[str, Any]:
    """The JSON Schema of the cohort format (what ``psyq schema cohort`` prints), for editors.

    Example:
        >>> cohort_json_schema()["title"]
        'psyq cohort (format cohort/1)'
    """
    return format_json_schema(CohortFile, "psyq cohort (format cohort/1)")


SOURCES = ("personas", "sample", "csv", "from_data")


def given_sources(spec: CohortFile) -> list[str]:
    """The sources of personas the file gives, among `personas`, `sample`, `csv` and `from_data`.

    Example:
        >>> given_sources(CohortFile(psyq="cohort/1", id="c", csv="people.csv"))
        ['csv']
    """
    return [s for s in SOURCES if s in spec.model_fields_set and getattr(spec, s) is not None]


# --- meaning checks --------------------------------------------------------------------------


def check_attribute_name(name: str) -> str | None:
    """Why `name` cannot be an attribute name, or None if it can.

    Example:
        >>> check_attribute_name("first-name")
        "attribute name 'first-name' cannot be a template placeholder: use letters, digits and '_', starting with a letter"
    """
    if name in FIXED_PLACEHOLDERS:
        return f"'{name}' is reserved (it is the placeholder {{{name}}}); name the attribute otherwise"
    if not ATTRIBUTE_NAME.match(name):
        return (f"attribute name '{name}' cannot be a template placeholder: use letters, digits "
                "and '_', starting with a letter")
    return None


def check_persona_id(persona_id: str) -> str | None:
    """Why `persona_id` cannot be used by a persona of a cohort, or None if it can."""
    if persona_id == BASELINE.id:
        return "'baseline' is reserved for the model answering as itself (use include_baseline: true)"
    return None


def check_sample(spec: SampleSpec) -> list[tuple[FieldPath, str]]:
    """Meaning problems of a sample spec, each with its path below `sample`.

    Example:
        >>> check_sample(SampleSpec(size=3, seed=1, id_prefix="p", attributes={"age": {"range": [80, 18]}}))
        [(('attributes', 'age', 'range'), 'the range is [low, high] with low ≤ high, not [80, 18]')]
    """
    out: list[tuple[FieldPath, str]] = []
    for name, attr in spec.attributes.items():
        path: FieldPath = ("attributes", name)
        if message := check_attribute_name(name):
            out.append((path, message))
        if (attr.categories is None) == (attr.range is None):
            out.append((path, "give exactly one of `categories` (weighted values) or `range` ([low, high])"))
        if attr.categories is not None:
            if not attr.categories:
                out.append((path + ("categories",), "needs at least 1 category"))
            for value, weight in attr.categories.items():
                if not (math.isfinite(weight) and weight > 0):
                    # The key as text: the position index knows keys as written.
                    out.append((path + ("categories", str(value)),
                                f"the weight of {value!r} must be a number greater than 0, not {weight:g}"))
        if attr.range is not None:
            if len(attr.range) != 2:
                out.append((path + ("range",), f"the range is [low, high]: two whole numbers, "
                                               f"not {len(attr.range)}"))
            elif any(abs(end) > MAX_RANGE_END for end in attr.range):
                out.append((path + ("range",), f"the range ends must be whole numbers between "
                                               f"-{MAX_RANGE_END} and {MAX_RANGE_END}"))
            elif attr.range[0] > attr.range[1]:
                out.append((path + ("range",), f"the range is [low, high] with low ≤ high, not {attr.range}"))
            elif attr.range[1] - attr.range[0] >= MAX_RANGE_VALUES:
                out.append((path + ("range",), f"the range is too wide to sample evenly "
                                               f"(at most {MAX_RANGE_VALUES} values)"))
    return out


def check_cohort(spec: CohortFile, doc: YamlDocument) -> list[Problem]:
    """Meaning checks that need no other file; returns every problem found."""
    problems: list[Problem] = []

    def bad(path: FieldPath, message: str) -> None:
        problems.append(doc.problem(path, message))

    # Exactly one source; a second one is reported where it was written.
    given = sorted(given_sources(spec), key=lambda s: doc.where((s,)))
    if not given:
        bad((), "no personas: give one of `personas` (a list), `sample` (a sampling spec), `csv` (a file) "
                "or `from_data` (a human data file)")
    for extra in given[1:]:
        bad((extra,), f"`{extra}` cannot be combined with `{given[0]}`: give exactly one of "
                      "personas, sample, csv or from_data")

    for i, persona in enumerate(spec.personas):
        if message := check_persona_id(persona.id):
            bad(("personas", i, "id"), message)
        for name in persona.attributes:
            if message := check_attribute_name(name):
                bad(("personas", i, "attributes", name), message)
    counts = Counter(p.id for p in spec.personas)
    for i, persona in enumerate(spec.personas):
        if counts[persona.id] > 1:
            bad(("personas", i, "id"), f"persona id '{persona.id}' is used by more than one persona")

    if spec.sample is not None:
        for path, message in check_sample(spec.sample):
            bad(("sample",) + path, message)

    if spec.from_data is not None:
        problems.extend(check_from_data(spec.from_data, doc, check_attribute_name=check_attribute_name))

    if spec.template is not None:
        for message in check_template(spec.template):
            bad(("template",), message)
    # In file order, as parse_document reports shape problems.
    return sorted(problems, key=lambda p: (p.line or 0, p.column or 0))


# --- sampling --------------------------------------------------------------------------------


def _draw(attr: AttributeSpec, u: np.ndarray) -> list[Any]:
    """Turn uniforms in [0, 1) into values of one attribute (inverse of its distribution)."""
    import numpy as np

    if attr.categories is not None:
        values = list(attr.categories)
        cdf = np.cumsum(np.array(list(attr.categories.values()), dtype=float))
        cdf /= cdf[-1]
        cdf[-1] = 1.0  # rounding must not leave a sliver above the last category
        return [values[k] for k in np.searchsorted(cdf, u, side="right")]
    assert attr.range is not None
    low, high = attr.range
    drawn = low + np.floor(u * (high - low + 1)).astype(np.int64)
    return np.minimum(drawn, high).tolist()


def sample_personas(spec: SampleSpec, size: int, seed: int) -> list[Persona]:
    """Draw `size` personas from `spec`'s attribute distributions, reproducibly from `seed`.

    `size` and `seed` are arguments (a cohort file passes its own) so that the same spec can be
    drawn larger or again. One ``Generator(PCG64(seed))`` fills a table of uniforms persona by
    persona, one column per attribute in the order written; so the result depends only on the
    seed and the file, and persona *i* is the same whatever `size` (a larger sample extends a
    smaller one, though ids widen with the width of `size`).

    Example:
        >>> spec = SampleSpec(size=12, seed=7, id_prefix="adult", attributes={"age": {"range": [18, 80]}})
        >>> [p.id for p in sample_personas(spec, spec.size, spec.seed)][:2]
        ['adult01', 'adult02']
    """
    if size < 1 or seed < 0:
        raise ValueError(f"size must be at least 1 and seed at least 0, not {size} and {seed}")
    if problems := check_sample(spec):
        raise ValueError("; ".join(f"{'.'.join(map(str, path))}: {msg}" for path, msg in problems))
    import numpy as np

    rng = np.random.Generator(np.random.PCG64(seed))
    uniforms = rng.random((size, len(spec.attributes)))
    columns = {name: _draw(attr, uniforms[:, j]) for j, (name, attr) in enumerate(spec.attributes.items())}
    width = len(str(size))
    return [Persona(id=f"{spec.id_prefix}{i + 1:0{width}d}",
                    attributes={name: values[i] for name, values in columns.items()})
            for i in range(size)]


# --- CSV -------------------------------------------------------------------------------------

_INT = re.compile(r"^[+-]?(0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"^[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?$")


def parse_cell(text: str) -> str | int | float:
    """A CSV cell as a number where it is one, else as text.

    Only plain decimal numbers count: 'nan', 'inf' and '1_000' stay text, and so do codes with a
    leading zero ('007', '02139'), which a number would silently change.

    Example:
        >>> parse_cell("34"), parse_cell("2.5"), parse_cell("02139"), parse_cell("female")
        (34, 2.5, '02139', 'female')
    """
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text) and not re.match(r"^[+-]?0[0-9]", text):
        return float(text)
    return text


def _read_csv(path: str | Path) -> list[tuple[int, Persona]]:
    """Personas of a CSV file, each with the line its row starts on (header = line 1)."""
    file = str(path)
    # A bounded regular UTF-8 file (a byte-order mark, which spreadsheets often write, is dropped).
    text = decode_text(file, read_input_bytes(path))
    rows = _csv_rows(file, io.StringIO(text, newline=""))
    if not rows:
        raise InputError.single(file, "the file is empty")
    header = [name.strip() for name in rows[0][1]]
    raise_problems(_check_header(file, header))

    problems: list[Problem] = []
    out: list[tuple[int, Persona]] = []
    first_line: dict[str, int] = {}
    for line, cells in rows[1:]:
        cells = [c.strip() for c in cells]
        if not any(cells):
            continue  # blank rows, or the ',,,' spreadsheets leave at the end, hold no persona
        if len(cells) != len(header):
            problems.append(Problem(file, line, None, "", f"the row has {len(cells)} cells but the "
                                                          f"header has {len(header)} columns"))
            continue
        row = dict(zip(header, cells))
        pid = row["id"]
        if message := _csv_id_problem(pid, first_line):
            problems.append(Problem(file, line, None, "column 'id'", message))
            continue
        first_line[pid] = line
        attributes = {name: parse_cell(value) for name, value in row.items()
                      if name not in ("id", "backstory") and value != ""}
        out.append((line, Persona(id=pid, attributes=attributes, backstory=row.get("backstory") or None)))
    raise_problems(problems)
    if not out:
        raise InputError.single(file, "no personas: the file has a header but no rows")
    return out


def _csv_rows(file: str, handle: Iterable[str]) -> list[tuple[int, list[str]]]:
    # csv.reader's line_num is the line a row *ends* on; a quoted cell may span lines (a
    # backstory often does), so the row starts one line after the previous row ended.
    reader = csv.reader(handle)
    rows = []
    try:
        while True:
            start = reader.line_num + 1
            try:
                rows.append((start, next(reader)))
            except StopIteration:
                return rows
    except csv.Error as exc:
        raise InputError.single(file, f"not a readable CSV file: {exc}", line=reader.line_num) from None


def _check_header(file: str, header: list[str]) -> list[Problem]:
    def at_header(field: str, message: str) -> Problem:
        return Problem(file, 1, None, field, message)

    problems = []
    if "id" not in header:
        problems.append(at_header("", "missing column 'id' (the persona ids)"))
    for name, count in Counter(header).items():
        if count > 1:
            problems.append(at_header(f"column '{name}'", "the column appears more than once"))
    for i, name in enumerate(header):
        if name == "":
            problems.append(at_header(f"column {i + 1}", "the column has no name"))
        elif name not in ("id", "backstory") and (message := check_attribute_name(name)):
            problems.append(at_header(f"column '{name}'", message))
    return problems


def _csv_id_problem(pid: str, first_line: dict[str, int]) -> str | None:
    if pid == "":
        return "the id is empty"
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", pid):  # the pattern of psyq.engine.design.instrument.Id
        return (f"{pid!r} is not a valid id: use letters, digits, '_', '-' or '.', "
                "starting with a letter or digit")
    if pid in first_line:
        return f"id '{pid}' is already used on line {first_line[pid]}"
    return check_persona_id(pid)


def read_personas_csv(path: str | Path) -> list[Persona]:
    """Read personas from a CSV file: column `id`, optional `backstory`, every other column an attribute.

    Cells holding numbers become numbers; an empty cell leaves the attribute out for that persona.
    Raises :class:`~psyq.engine.files.errors.InputError` with the line of every bad row (header = line 1).

    Example (a CSV written to a temporary folder):
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = Path(folder) / "personas.csv"
        ...     _ = path.write_text("id,age,gender,backstory\\np1,34,female,A nurse in Leeds.\\np2,,male,\\n",
        ...                         encoding="utf-8")
        ...     personas = read_personas_csv(path)
        >>> personas[0].attributes, personas[0].backstory
        ({'age': 34, 'gender': 'female'}, 'A nurse in Leeds.')
        >>> personas[1].attributes, personas[1].backstory
        ({'gender': 'male'}, None)
    """
    return [persona for _, persona in _read_csv(path)]


# --- templates -------------------------------------------------------------------------------


def _show(value: str | int | float | bool) -> str:
    # A prompt reads "smoker: yes", not Python's "True".
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _reword_brace_error(exc: ValueError) -> str:
    text = str(exc)
    if "Single '}'" in text:
        return "a '}' has no matching '{': write '}}' for a literal brace"
    if "Single '{'" in text or "expected '}'" in text:
        return "a '{' is never closed: write '{{' for a literal brace"
    return f"the braces do not match ({text}): write '{{{{' and '}}}}' for literal braces"


def template_fields(template: str) -> list[str]:
    """The placeholder names of `template`, each once, in order of first use.

    Raises ValueError if the braces do not match.

    Example:
        >>> template_fields("You are {age}. {attributes} {{not this}} {age}")
        ['age', 'attributes']
    """
    names: list[str] = []
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None and name not in names:
            names.append(name)
    return names


def check_template(template: str, attributes: Collection[str] | None = None) -> list[str]:
    """Problems of a template, as messages. With `attributes` (the names some persona has),
    placeholders that are neither those nor {id}, {backstory}, {attributes} are reported too.

    Example:
        >>> check_template("You are {agee} years old.", attributes=["age", "gender"])
        ["unknown placeholder {agee}: no persona has an attribute 'agee' (did you mean 'age'?)"]
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        return [_reword_brace_error(exc)]
    problems = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        written = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if name == "" or name.isdigit():
            problems.append(f"placeholder {written} needs a name: {{id}}, {{backstory}}, "
                            "{attributes} or an attribute name")
        elif conversion or spec or any(c in name for c in ".[]"):
            problems.append(f"placeholder {written} must be a plain name such as {{age}} "
                            "(no '.', '[', '!' or ':')")
    if problems or attributes is None:
        return problems
    return [unknown_placeholder_message(name, attributes) for name in unknown_placeholders(template, attributes)]


def unknown_placeholders(template: str, attributes: Collection[str]) -> list[str]:
    """Placeholder names of a (well-formed) template that no persona can fill."""
    return [n for n in template_fields(template) if n not in FIXED_PLACEHOLDERS and n not in attributes]


def unknown_placeholder_message(name: str, attributes: Iterable[str]) -> str:
    """Why {name} cannot be filled, with the closest known name as a hint."""
    close = difflib.get_close_matches(name, [*FIXED_PLACEHOLDERS, *attributes], n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown placeholder {{{name}}}: no persona has an attribute '{name}'{hint}"


def render_system_prompt(persona: Persona, template: str) -> str | None:
    """The system prompt for `persona`; None for :data:`BASELINE` (the model as itself).

    Blank lines left by an empty placeholder (no backstory, no attributes) collapse to one, and
    the prompt is stripped at both ends.

    Example:
        >>> p = Persona(id="p01", attributes={"age": 34, "smoker": False})
        >>> render_system_prompt(p, "{id} is {age}.\\n\\n{attributes}\\n\\n{backstory}")
        'p01 is 34.\\n\\n- age: 34\\n- smoker: no'
    """
    if persona.id == BASELINE.id:
        return None
    if problems := check_template(template, persona.attributes):
        raise ValueError(f"persona '{persona.id}': " + "; ".join(problems))
    values = {name: _show(value) for name, value in persona.attributes.items()}
    values["id"] = persona.id
    values["backstory"] = persona.backstory or ""
    values["attributes"] = "\n".join(f"- {name}: {_show(value)}" for name, value in persona.attributes.items())
    # Assembled from the parsed pieces rather than str.format: check_template has ruled out
    # format specs and conversions, so a placeholder is exactly a name.
    text = "".join(literal + (values[name] if name is not None else "")
                   for literal, name, _, _ in string.Formatter().parse(template))
    return re.sub(r"\n(?:[ \t]*\n){2,}", "\n\n", text).strip()


# --- loading ---------------------------------------------------------------------------------


def _find_in_file(doc: YamlDocument, path: FieldPath, needle: str) -> tuple[int | None, int | None]:
    """Line and column of `needle` at or after the field `path`, else the field's own position.

    A template is one YAML value over many lines; pointing at the line that holds the bad
    placeholder saves searching for it. A placeholder has no spaces, so YAML folding cannot split it.
    """
    line, column = doc.where(path)
    if line is None:
        return (line, column)
    try:
        lines = Path(doc.file).read_text(encoding="utf-8").splitlines()
    except OSError:
        return (line, column)
    for number in range(line, len(lines) + 1):
        start = lines[number - 1].find(needle, column - 1 if number == line and column else 0)
        if start >= 0:
            return (number, start + 1)
    return (line, column)


Locate = Callable[[str, str], Problem]
"""Where a persona was written: (attribute name, message) -> a Problem at that place."""


def _in_yaml(doc: YamlDocument, index: int) -> Locate:
    return lambda name, message: doc.problem(("personas", index, "attributes"), message)


def _in_csv(file: str, line: int) -> Locate:
    return lambda name, message: Problem(file, line, None, f"column '{name}'", message)


def _check_placeholders(doc: YamlDocument, template: str,
                        personas: list[tuple[Locate | None, Persona]]) -> list[Problem]:
    """Every placeholder is filled for every persona (None: sampled, so it has every attribute)."""
    known = {name for _, p in personas for name in p.attributes}
    problems = []
    for name in unknown_placeholders(template, known):
        line, column = _find_in_file(doc, ("template",), "{" + name + "}")
        problems.append(Problem(doc.file, line, column, "template", unknown_placeholder_message(name, known)))
    used = [n for n in template_fields(template) if n in known]
    for locate, persona in personas:
        for name in used:
            if name not in persona.attributes and locate is not None:
                problems.append(locate(name, f"persona '{persona.id}' has no attribute '{name}', "
                                             f"but the template uses {{{name}}}"))
    return problems


def load_cohort(path: str | Path) -> Cohort:
    """Load and validate a cohort file (format `cohort/1`).

    Raises :class:`~psyq.engine.files.errors.InputError` naming file, line, column and field of every problem
    (the CSV file's line for problems in a CSV source).

    Example:
        >>> cohort = load_cohort("adults_small")
        >>> len(cohort.personas), [p.id for p in cohort.personas[:2]]
        (13, ['baseline', 'adult01'])
    """
    path = locate_file(path, "cohort")
    doc = load_yaml(path)
    spec = parse_document(doc, CohortFile)
    raise_problems(check_cohort(spec, doc))

    located: list[tuple[Locate | None, Persona]]
    source = given_sources(spec)[0]
    data = None
    if source == "personas":
        located = [(_in_yaml(doc, i), p) for i, p in enumerate(spec.personas)]
    elif source == "sample":
        assert spec.sample is not None
        located = [(None, p) for p in sample_personas(spec.sample, spec.sample.size, spec.sample.seed)]
    elif source == "from_data":
        assert spec.from_data is not None
        # Rows lacking an attribute are skipped: every persona has every attribute.
        data = read_from_data(spec.from_data, doc, path, check_persona_id=check_persona_id, parse_cell=parse_cell)
        located = [(None, Persona(id=pid, attributes=attributes)) for pid, attributes in data.personas]
    else:
        assert spec.csv is not None
        csv_path = Path(path).parent / spec.csv  # relative to the cohort file, not the working directory
        if not csv_path.is_file():
            what = "is not a file (a directory or a device)" if csv_path.exists() else "not found"
            raise_problems([doc.problem(("csv",), f"CSV file {what}: {csv_path}")])
        located = [(_in_csv(str(csv_path), line), p) for line, p in _read_csv(csv_path)]

    template = spec.template if spec.template is not None else DEFAULT_TEMPLATE
    raise_problems(_check_placeholders(doc, template, located))
    personas = tuple(p for _, p in located)
    return Cohort(id=spec.id, personas=(BASELINE, *personas) if spec.include_baseline else personas,
                  template=template, source=str(path), provenance=data.provenance if data else None,
                  files=data.files if data else ())
