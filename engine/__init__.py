"""psyq engine: instruments, personas, backends, administration, storage and scoring.

The public API for scripts and notebooks::

    from engine import load_instrument, load_study, administer, export_table, score
    iri = load_instrument("instruments/iri.yaml")
"""

__version__ = "0.1.0"

from .errors import InputError, Problem, PsyqError  # noqa: E402
from .export import export_table, wide_answers  # noqa: E402
from .human_data import read_answers_csv  # noqa: E402
from .instrument import Instrument, instrument_json_schema, load_instrument  # noqa: E402
from .persona import BASELINE, Cohort, Persona, load_cohort, render_system_prompt  # noqa: E402
from .run import administer, open_run_dir  # noqa: E402
from .scoring import keyed_answers, reverse_key, score, score_wide  # noqa: E402
from .store import RunStore  # noqa: E402
from .study import Study, load_study  # noqa: E402

__all__ = [
    "BASELINE", "Cohort", "InputError", "Instrument", "Persona", "Problem", "PsyqError", "RunStore",
    "Study", "__version__", "administer", "export_table", "instrument_json_schema", "keyed_answers",
    "load_cohort", "load_instrument", "load_study", "open_run_dir", "read_answers_csv",
    "render_system_prompt", "reverse_key", "score", "score_wide", "wide_answers",
]
