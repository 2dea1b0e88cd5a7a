"""psyq engine: instruments, personas, backends, administration, storage and scoring.

The public API for scripts and notebooks::

    from engine import load_instrument, score
    iri = load_instrument("instruments/iri.yaml")
"""

from .errors import InputError, Problem, PsyqError
from .human_data import read_answers_csv
from .instrument import Instrument, instrument_json_schema, load_instrument
from .scoring import keyed_answers, reverse_key, score, score_wide

__version__ = "0.1.0"

__all__ = [
    "InputError", "Instrument", "Problem", "PsyqError", "__version__", "instrument_json_schema",
    "keyed_answers", "load_instrument", "read_answers_csv", "reverse_key", "score", "score_wide",
]
