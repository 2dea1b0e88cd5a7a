"""Shared test helpers: the stub server is importable as `stub_server`; the IRI and the raw answers
of the 1,973 people of Briganti et al. (2018) shipped with psyq, and a headless Chromium
(Debian's, through Playwright; tests that use it skip when it is missing), as fixtures (a module's
own fixture of the same name takes precedence)."""

import os
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


CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"no chromium at {CHROMIUM} (Debian: apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield browser
        browser.close()


# The suite runs in two workers (pyproject.toml: -n 2). A `local_model` test drives the real local
# model, whose llama-server uses both cores and slows down many times over when anything else runs beside
# it (seen here: a 250-token prompt 30× slower beside a second worker). So such a test runs alone:
# it holds an exclusive lock shared by the workers, every other test a shared one. A waiting local_model
# test first takes the turnstile, so that the other worker's next test waits behind it instead of
# keeping the shared lock busy for ever.
def _lock_file(name: str):
    import tempfile
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    return None if run is None else open(Path(tempfile.gettempdir()) / f"psyq-tests-{run}.{name}", "a+")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    import fcntl
    cpu, turnstile = _lock_file("cpu"), _lock_file("turnstile")
    if cpu is None:                                  # one process: nothing runs beside this test
        yield
        return
    alone = item.get_closest_marker("local_model") is not None
    with cpu, turnstile:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if alone:
            fcntl.flock(cpu, fcntl.LOCK_EX)
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        else:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
            fcntl.flock(cpu, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(cpu, fcntl.LOCK_UN)
