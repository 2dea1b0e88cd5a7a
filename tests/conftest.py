"""Shared test helpers: the stub server is importable as `stub_server`; the IRI and the raw answers
of the 1,973 people of Briganti et al. (2018) shipped with psyq, as fixtures (a module's own
fixture of the same name takes precedence)."""

import sys
import warnings
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


@pytest.fixture(scope="session")
def iri():
    import psyq
    return psyq.load_instrument("iri")


@pytest.fixture(scope="session")
def people(iri):
    """Raw answers (reverse items as answered), one column per item id, and ``gender``."""
    import psyq
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # the notice that the codebook beside the CSV was used
        return psyq.human_data({"iri": "iri_briganti2018_keyed"})["iri"].answers(iri)
