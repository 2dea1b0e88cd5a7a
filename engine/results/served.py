"""What the providers served: the model snapshot and serving fingerprint each reply names.

A study asks for a model by name (often an alias such as ``gpt-4o``); the provider answers with the
snapshot it used (``gpt-4o-2024-08-06``) and, for OpenAI-compatible servers, a
``system_fingerprint`` that changes with its serving configuration. Reviewers ask for the snapshot
(GUIDE-LLM; llm-guidelines.org), and a change of snapshot within a run, or since a
pre-registration, is a deviation. Each backend kind declares which fields of its reply carry them
(``served_model_field`` and ``fingerprint_field`` on its class, engine/backends/): no provider is
named here. The fields are read from the raw response each trial stores, without writing to the run.

Example (`run_dir`: 16 trials sent to a stub server answering as OpenAI documents):
    >>> from psyq.engine.results.run import open_run
    >>> served = served_models(open_run(run_dir))
    >>> served[["backend_id", "requested_model", "served_model", "trials"]].to_dict("records")
    [{'backend_id': 'stub', 'requested_model': 'stub-model', 'served_model': 'stub-model', 'trials': 16}]
"""

from __future__ import annotations

import pandas as pd

from psyq.engine.backends.registry import backend_class
from psyq.engine.registry import UnknownName
from psyq.engine.results.run import Run, as_run
from psyq.engine.store.readonly import connect_readonly

COLUMNS = ["backend_id", "requested_model", "served_model", "fingerprint", "trials", "first_at", "last_at"]


def served_models(run: Run | str) -> pd.DataFrame:
    """One row per backend and (served model, fingerprint) its replies named, in order of first use.

    Columns: ``backend_id``, ``requested_model`` (what the study asked for), ``served_model`` and
    ``fingerprint`` (what the replies named; missing where the provider does not say or no reply
    was stored), ``trials`` (trials whose last reply named it), ``first_at`` and ``last_at`` (when
    the first and last of those trials finished, ISO 8601 UTC). A backend with two rows was served
    two snapshots or configurations within the run, at the times the rows give.

    Example: see the module's.
    """
    run = as_run(run)
    backends = run.manifest.get("backends") or {}
    if not run.database.exists():          # an imported run or one held in memory: nothing was sent
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    with connect_readonly(run.database) as db:
        for backend_id, entry in backends.items():
            identity = entry.get("identity") or {}
            model_field, fingerprint_field = _fields(identity.get("kind") or (entry.get("config") or {}).get("kind"))
            served = _json_path(model_field)
            fingerprint = _json_path(fingerprint_field)
            query = (f"SELECT {served}, {fingerprint}, COUNT(*), MIN(finished_at), MAX(finished_at) "
                     f"FROM trials WHERE backend_id = ? GROUP BY 1, 2 ORDER BY MIN(finished_at)")
            for model, print_, count, first, last in db.execute(query, (backend_id,)):
                rows.append({"backend_id": backend_id, "requested_model": identity.get("model"),
                             "served_model": _text(model), "fingerprint": _text(print_), "trials": int(count),
                             "first_at": first, "last_at": last})
    return pd.DataFrame(rows, columns=COLUMNS)


def _fields(kind: str | None) -> tuple[str | None, str | None]:
    """The reply fields a backend kind names its served model and fingerprint in (None: not said)."""
    try:
        cls = backend_class(kind) if kind else None
    except UnknownName:                    # a kind registered by a plug-in no longer installed
        return None, None
    return (getattr(cls, "served_model_field", None), getattr(cls, "fingerprint_field", None)) if cls else (None, None)


def _json_path(field: str | None) -> str:
    """The SQL reading top-level `field` of the stored response (NULL when the kind has none)."""
    if field is None:
        return "NULL"
    if not field.replace("_", "").isalnum():
        raise ValueError(f"reply field {field!r}: a top-level field name is expected")
    return f"CASE WHEN json_valid(response) THEN json_extract(response, '$.{field}') END"


def _text(value: object) -> str | None:
    """A field's value as text (a provider might send a number), None when absent."""
    return None if value is None else str(value)
