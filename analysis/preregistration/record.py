"""The pre-registration's machine-readable file, ``preregistration.json`` (format ``preregistration/1``).

:class:`Preregistration` is its model: every value the Markdown says, as numbers and names (the
planned run's manifest as ``psyq run`` would write it, the analysis plan, the planned size and
power, the SHA-256 of every file). :func:`read_preregistration` reads one back for ``psyq report
--preregistration``: JSON that does not parse, or a field that is missing, unknown or of the wrong
kind, is an :class:`~psyq.engine.files.errors.InputError` naming ``file:line:column: field: what
is wrong`` (the positions found as for psyq's YAML files: JSON is YAML), so the command exits 2.

:func:`cutoff_values` gives the verdict's cut-offs as the code holds them (imported from the
scorecard, the equivalence marks and the verdict's power, never retyped), so a pre-registration
records them and the report sees when a later psyq changed one.

Example:
    >>> values = cutoff_values()
    >>> values["sd_ratio"], values["confidence"]
    ([0.8, 1.25], 0.9)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import ConfigDict, Field, StringConstraints

from psyq.engine.files.errors import InputError
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.files.inputfile import decode_text, read_input_bytes
from psyq.engine.files.validation import parse_document
from psyq.engine.files.yamlfile import YamlDocument, load_yaml

FORMAT = "preregistration/1"
FILE_NAME = "preregistration.json"
MARKDOWN_NAME = "preregistration.md"
DOCX_NAME = "preregistration.docx"

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Day = Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")]


class StudyRecord(StrictModel):
    """The study: its id, its file's name (as the run's manifest names it), the run id ``psyq run``
    would give it, and the study file as read (every field, defaults filled in)."""

    id: Id
    file: Text
    description: str | None = None
    run_id: Text
    spec: dict[str, Any]


class BackendRecord(StrictModel):
    """One backend as a run's manifest records it: what decides its answers, its settings, and what
    psyq read that its model accepts."""

    identity: dict[str, Any]
    config: dict[str, Any]
    capabilities: dict[str, Any] = Field(default_factory=dict)


class PlannedRun(StrictModel):
    """The manifest ``psyq run`` would write for the study (before any time or count of its own)."""

    model_config = ConfigDict(extra="allow", frozen=True)   # every other field of a manifest, as written

    files: dict[str, Sha256]
    backends: dict[str, BackendRecord] = Field(min_length=1)
    protocol: dict[str, Any]
    cohort: dict[str, Any]
    trials_planned: int = Field(ge=0)
    conditions: list[dict[str, Any]] = Field(default_factory=list)


class Use(StrictModel):
    """A use the verdict judges and the criteria that decide it."""

    use: Text
    criteria: list[Text] = Field(min_length=1)


class AnalysisPlan(StrictModel):
    """How the report will judge the run: the uses and criteria, each criterion's region, the
    equivalence bound, the interval's confidence, the multiplicity correction, the invariance
    estimator per instrument, the norm samples, the seeds, and what is done with missing answers."""

    uses: list[Use]
    criteria: dict[str, Text]
    cutoffs: dict[str, int | float | list[float]]
    bound: float = Field(gt=0)
    confidence: float = Field(gt=0, lt=1)
    correction: Text
    estimator: dict[str, Literal["ML", "MLR", "WLSMV"]]
    estimator_chosen_by: Text
    norm_samples: dict[str, list[str] | Literal["all"]]
    seeds: dict[str, int | None]
    missing: dict[str, Any]


class PeopleRecord(StrictModel):
    """The people's answers one instrument is to be compared with (``--human``)."""

    file: Text
    sha256: Sha256
    keyed: bool
    codebook: str | None = None
    codebook_sha256: Sha256 | None = None
    who: Text


class SampleSize(StrictModel):
    """The planned size and what it can decide: the verdict's power at it (with people's answers)
    or its intervals' widths (against published norms), else a sentence saying neither was computed."""

    personas: int = Field(ge=0)
    respondents: int = Field(ge=0)
    baseline: bool
    trials: int = Field(ge=0)
    trials_finished: int = Field(ge=0)
    power: dict[str, Any] | None = None
    ci_widths: list[dict[str, Any]] | None = None
    note: str = ""


class FileRecord(StrictModel):
    """One file the pre-registration rests on."""

    name: Text
    role: Literal["study", "instrument", "item texts", "cohort", "data", "situations", "anchors", "people",
                  "codebook"]
    sha256: Sha256


class Preregistration(StrictModel):
    """``preregistration.json``: the plan of one study, every value of the Markdown beside it."""

    psyq: Literal["preregistration/1"]
    psyq_version: Text
    date: Day
    created_at: Text
    templates: list[Text]
    study: StudyRecord
    question: Text
    instruments: list[dict[str, Any]] = Field(min_length=1)
    cohort: dict[str, Any]
    run: PlannedRun
    analysis: AnalysisPlan
    people: dict[str, PeopleRecord] = Field(default_factory=dict)
    sample_size: SampleSize
    files: list[FileRecord] = Field(min_length=1)


class LoadedPreregistration(NamedTuple):
    """A pre-registration read by :func:`read_preregistration`: the record, the document (for the
    positions of later problems) and the file's path."""

    plan: Preregistration
    doc: YamlDocument
    path: Path


def preregistration_file(path: str | Path) -> Path:
    """The JSON file of a pre-registration: `path` itself, or ``preregistration.json`` in the folder
    `path` (what ``psyq preregister --out`` wrote).

    Example:
        >>> preregistration_file("prereg").as_posix(), preregistration_file("x/plan.json").as_posix()
        ('prereg/preregistration.json', 'x/plan.json')
    """
    path = Path(path)
    return path if path.suffix == ".json" else path / FILE_NAME


def read_preregistration(path: str | Path) -> LoadedPreregistration:
    """Read and check a pre-registration (a folder holding ``preregistration.json``, or the file).

    Raises :class:`InputError` naming ``file:line:column: field: what is wrong`` for a file that is
    missing, not JSON, or not a ``preregistration/1`` record.

    Example (`prereg_dir`: a folder written by ``psyq preregister``):
        >>> read_preregistration(prereg_dir).plan.psyq     # needs a folder psyq preregister wrote  # doctest: +SKIP
        'preregistration/1'
    """
    file = preregistration_file(path)
    if not file.is_file():
        raise InputError.single(str(file), "not found: give the folder `psyq preregister --out` wrote, or its "
                                f"{FILE_NAME}")
    text = decode_text(str(file), read_input_bytes(file))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError.single(str(file), f"not valid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise InputError.single(str(file), "the JSON is nested too deeply to be a pre-registration") from None
    try:      # JSON is YAML: the YAML reader gives every field's line and column (the values are json's)
        positions = load_yaml(file)
        doc = YamlDocument(str(file), data, positions.positions, positions.key_positions)
    except InputError:
        doc = YamlDocument(str(file), data)
    if not isinstance(data, dict):
        raise InputError.single(str(file), f"expected a JSON object with \"psyq\": \"{FORMAT}\"", 1, 1)
    if data.get("psyq") != FORMAT:
        line, column = doc.where(("psyq",))
        raise InputError.single(str(file), f"expected \"{FORMAT}\" (a pre-registration written by psyq "
                                "preregister), found " + json.dumps(data.get("psyq")), line, column, "psyq")
    return LoadedPreregistration(parse_document(doc, Preregistration), doc, file)


def check_study(loaded: LoadedPreregistration, study_id: str) -> None:
    """Refuse a pre-registration of another study than the run's (an :class:`InputError` at its
    ``study.id``).

    Example:
        >>> check_study(loaded, "quickstart")      # needs a pre-registration read; the same study: nothing said  # doctest: +SKIP
    """
    if loaded.plan.study.id != study_id:
        line, column = loaded.doc.where(("study", "id"))
        raise InputError.single(str(loaded.path), f"this pre-registration is of study '{loaded.plan.study.id}', "
                                f"the run of study '{study_id}'", line, column, "study.id")


def cutoff_values() -> dict[str, int | float | list[float]]:
    """The verdict's cut-offs and conventions as numbers, from the code that applies them: the
    scorecard's regions and minimum sizes, the marks' interval confidence, the power target.

    Example: see the module's.
    """
    from psyq.analysis.statistics.standin import scorecard
    from psyq.analysis.statistics.standin.equivalence import CONFIDENCE
    from psyq.analysis.statistics.standin.verdict_power import TARGET

    return {"sd_ratio": list(scorecard.SD_RATIO), "alpha_gap": scorecard.ALPHA_GAP, "auc_max": scorecard.AUC_MAX,
            "auc_min_per_side": scorecard.AUC_MIN_PER_SIDE, "min_for_correlational": scorecard.MIN_FOR_CORRELATIONAL,
            "style_max": scorecard.STYLE_MAX, "relation_r": scorecard.RELATION_R,
            "individuals_min": scorecard.INDIVIDUALS_MIN, "worth_min": scorecard.WORTH_MIN,
            "min_twins": scorecard.MIN_TWINS, "pooled_ratio": scorecard.POOLED_RATIO, "confidence": CONFIDENCE,
            "power_target": TARGET}


__all__ = ["DOCX_NAME", "FILE_NAME", "FORMAT", "MARKDOWN_NAME", "LoadedPreregistration", "Preregistration",
           "check_study", "cutoff_values", "preregistration_file", "read_preregistration"]
