"""The cohort file (format `cohort/1`): its shape, its meaning checks and :func:`load_cohort`.

A cohort file gives its personas in one of four ways: written by hand (`personas:`), sampled
reproducibly from attribute distributions (`sample:`, engine/design/persona.py), read from a CSV
file (`csv:`, engine/design/cohort_csv.py), or taken from the rows of a human data file
(`from_data:`, engine/design/cohort_data.py). The format is documented with an annotated example
in ``personas/README.md``.

Shape is checked by pydantic; meaning (unique ids, usable weights and ranges, placeholders every
persona can fill) by the ``check_*`` functions. Both report every problem with its file, line and
field, as instruments do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from psyq.engine.design.cohort_csv import read_personas_csv_lines
from psyq.engine.design.cohort_data import FromDataSpec, check_from_data, read_from_data
from psyq.engine.design.persona import (BASELINE, Cohort, Persona, SampleSpec, check_attribute_name, check_persona_id,
    check_sample, sample_personas)
from psyq.engine.design.persona_prompt import (DEFAULT_TEMPLATE, check_template, template_fields,
    unknown_placeholder_message, unknown_placeholders)
from psyq.engine.files.errors import Problem
from psyq.engine.files.fields import Id, StrictModel, Text, format_json_schema
from psyq.engine.files.validation import load_document, raise_problems
from psyq.engine.files.yamlfile import FieldPath, YamlDocument

FORMAT = "cohort/1"


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
        problems.extend(check_from_data(spec.from_data, doc))

    if spec.template is not None:
        for message in check_template(spec.template):
            bad(("template",), message)
    # In file order, as parse_document reports shape problems.
    return sorted(problems, key=lambda p: (p.line or 0, p.column or 0))


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
    spec, doc, path = load_document(path, CohortFile, "cohort", check_cohort)

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
        data = read_from_data(spec.from_data, doc, path)
        located = [(None, Persona(id=pid, attributes=attributes)) for pid, attributes in data.personas]
    else:
        assert spec.csv is not None
        csv_path = Path(path).parent / spec.csv  # relative to the cohort file, not the working directory
        if not csv_path.is_file():
            what = "is not a file (a directory or a device)" if csv_path.exists() else "not found"
            raise_problems([doc.problem(("csv",), f"CSV file {what}: {csv_path}")])
        located = [(_in_csv(str(csv_path), line), p) for line, p in read_personas_csv_lines(csv_path)]

    template = spec.template if spec.template is not None else DEFAULT_TEMPLATE
    raise_problems(_check_placeholders(doc, template, located))
    personas = tuple(p for _, p in located)
    return Cohort(id=spec.id, personas=(BASELINE, *personas) if spec.include_baseline else personas,
                  template=template, source=str(path), provenance=data.provenance if data else None,
                  files=data.files if data else ())
