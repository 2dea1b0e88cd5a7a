"""An imported run: scores with stages that psyq did not collect, kept where `psyq report` reads them.

Some studies publish their models' answers (e.g. EmotionBench's PANAS result files). Importing
them (``psyq import emotionbench-results FILE --out DIR``) writes a directory with

- ``imported.json``: what was imported, from which file(s), by which command, that psyq made
  no request, and notes on how the files were read (``"psyq": "imported-run/1"``);
- ``stage_scores.csv``: the tidy scores with stages (the columns of
  :data:`psyq.analysis.scoring.stage_scores.STAGE_SCORE_COLUMNS`), one row per backend × respondent × repeat
  × situation × stage × subscale.

``psyq report DIR`` shows such a directory's change section (analysis/report/build.py). There is no
trial store: the item answers were not asked by psyq, and the report says so.

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> is_imported_run(folder)
    False
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from psyq.engine.files.errors import InputError, Problem

if TYPE_CHECKING:   # pandas is imported where scores are read: `psyq status` asks is_imported_run only
    import pandas as pd

MANIFEST = "imported.json"
SCORES = "stage_scores.csv"
FORMAT = "imported-run/1"
COLUMNS = ["backend_id", "respondent_id", "repeat", "situation_id", "emotion", "stage", "phase",
           "instrument", "subscale", "score", "n_answered", "n_items", "prorated"]
"""Same as psyq.analysis.scoring.stage_scores.STAGE_SCORE_COLUMNS (engine may not import analysis)."""


def is_imported_run(path: str | Path) -> bool:
    """Whether `path` is a directory written by an import of results (it holds ``imported.json``).

    Example:
        >>> is_imported_run("studies")
        False
    """
    return (Path(path) / MANIFEST).is_file()


def write_imported_run(out_dir: str | Path, scores: pd.DataFrame, manifest: dict[str, Any]) -> Path:
    """Write `scores` (the :data:`COLUMNS`) and `manifest` into `out_dir`; return the directory.

    The manifest gets ``psyq`` (the format) and ``requests_made: 0`` whatever the caller gave.

    Example:
        >>> import tempfile
        >>> import pandas as pd
        >>> frame = pd.DataFrame([dict.fromkeys(COLUMNS, 0)])
        >>> is_imported_run(write_imported_run(tempfile.mkdtemp(), frame, {"imported_from": ["f.csv"]}))
        True
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError.single(str(out), "exists and is not a directory; give a directory for the imported run")
    out.mkdir(parents=True, exist_ok=True)
    scores[COLUMNS].to_csv(out / SCORES, index=False)
    document = {"psyq": FORMAT, **manifest, "requests_made": 0}
    (out / MANIFEST).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def read_imported_run(path: str | Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """(manifest, stage scores) of an imported run directory; a malformed one is an InputError.

    Example:
        >>> import tempfile
        >>> import pandas as pd
        >>> folder = write_imported_run(tempfile.mkdtemp(), pd.DataFrame([dict.fromkeys(COLUMNS, 1)]), {})
        >>> manifest, scores = read_imported_run(folder)
        >>> manifest["requests_made"], len(scores)
        (0, 1)
    """
    folder = Path(path)
    manifest_path = folder / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError.single(str(manifest_path), f"not valid JSON: {exc.msg}", line=exc.lineno,
                                column=exc.colno) from None
    if not isinstance(manifest, dict) or manifest.get("psyq") != FORMAT:
        raise InputError.single(str(manifest_path), f"expected an object with \"psyq\": \"{FORMAT}\"", field="psyq")
    scores_path = folder / SCORES
    if not scores_path.is_file():
        raise InputError.single(str(scores_path), "missing: an imported run keeps its scores here")
    import pandas as pd

    # Only the numeric columns may be empty; "NA" is a subscale name (negative affect), never missing.
    scores = pd.read_csv(scores_path, keep_default_na=False, na_values={"score": [""], "n_answered": [""]},
                         dtype={"backend_id": str, "respondent_id": str, "situation_id": str, "emotion": str,
                                "phase": str, "instrument": str, "subscale": str})
    lacking = [c for c in COLUMNS if c not in scores.columns]
    if lacking:
        raise InputError([Problem(str(scores_path), 1, None, "header", f"missing column {c!r}") for c in lacking])
    return manifest, scores[COLUMNS]
