"""A bundle's format: its version, its members' places, and the limits a reader keeps.

A bundle is a zip file::

    bundle.json          what the bundle is: format, psyq version, members with their sha256,
                         row counts of the store, what was left out or replaced and why
    README.md            the same for a person, and the commands that re-report it
    environment.json     psyq, Python, psyq's dependencies, the local model's name and sha256
    scores.csv           the run's subscale scores as the bundling psyq computed them
    run/                 the run's folder: manifest.json (its paths pointing into the bundle),
                         run.sqlite (a checkpointed copy), the instrument and study copies, the report
    inputs/              the files the run read, each where run/manifest.json finds it
    site/                with --site: the viewer's pages as a static site (index.html; engine/view/site.py)

Example:
    >>> FORMAT, member_path("run", "manifest.json")
    ('psyq-bundle/1', 'run/manifest.json')
"""

from __future__ import annotations

FORMAT = "psyq-bundle/1"
RECORD = "bundle.json"
README = "README.md"
ENVIRONMENT = "environment.json"
SCORES = "scores.csv"
RUN = "run"
INPUTS = "inputs"
STUDY_FOLDER = f"{INPUTS}/study"     # the study file's folder inside the bundle
SITE = "site"

# What a reader accepts (engine/bundle/read.py): a run of 10^5 trials with its report is
# some hundreds of MB; a bundle declaring more, or compressed far beyond what text and SQLite
# compress to, is refused before anything is unpacked.
MAX_MEMBERS = 200_000
MAX_TOTAL_BYTES = 4 * 1024**3
MAX_RATIO = 200          # uncompressed / compressed, over the whole bundle


def member_path(*parts: str) -> str:
    """The name of a member: its parts joined by '/', as zip files name them.

    Example:
        >>> member_path("inputs", "study", "quickstart.yaml")
        'inputs/study/quickstart.yaml'
    """
    return "/".join(parts)
