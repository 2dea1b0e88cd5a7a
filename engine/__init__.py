"""psyq's engine, in rooms that follow the method section of a paper.

Instrument + Cohort + Backend -> administer -> Responses -> score -> compare with people -> report:

- ``files/``      reading input safely (YAML, CSV, errors, notices, validation, atomic writes)
- ``backends/``   how to reach a model: OpenAI-compatible, Anthropic, the local llama.cpp model,
  what each accepts (capabilities), endpoints, provider batch APIs
- ``store/``      a run's directory and its SQLite store, ratings, the run lock
- ``trials/``     what one question is: trial, prompt, answer scale, parsing, scoring
- ``kinds/``      the item kinds, each a plug-in registered by name (kinds/__init__.py lists them)
- ``design/``     what a study is: instruments, cohorts, the study file, situations, prices, perturbations
- ``bundle/``     psyq bundle and psyq verify: one run as one zip to share, read back as untrusted input
- ``results/``    reading what runs gave: one run opened once (``open_run`` -> ``Run``: a run's folder or a
  bundle), tidy answers, run listings, tokens, imported runs, human answers
- ``administer/`` psyq run and psyq plan: sending, re-asking, stages, batches, progress
- ``judging/``    judge models, human rating sheets, perturbed replies
- ``importers/``  psyq import: other tools' files into psyq's formats
- ``questionnaire/`` psyq questionnaire: a study's instruments for people (jsPsych, REDCap, Qualtrics),
  with the codebooks that read their answers back
- ``view/``       psyq view: a read-only local web viewer of runs, their trials and conversations

A set of plug-ins (the backend kinds, the item kinds, the importers) is a ``Registry`` of
``registry.py``, filled by its room's ``__init__.py``. A package that re-exports names from heavy
modules (``psyq``, ``psyq.analysis``) imports them on first use with ``lazy.py``.

Imports point one way, down this list: a room may import the rooms above it here and never the
ones below (tests/test_kinds.py checks it). ``psyq.analysis`` reads files, store, trials, kinds,
design, results and judging; nothing here imports it. The command line (``psyq.cli``, the folder
``cli/`` beside ``engine/`` and ``analysis/``) is the floor above both and the only code that drives
both. The curated API for scripts and notebooks is the top-level ``psyq`` namespace.
"""

from importlib.metadata import version as _installed_version

# One source of the version: pyproject.toml, read from the installed metadata (also when installed
# editable), so `psyq --version` and every manifest say the release that ran.
__version__ = _installed_version("psyq")
