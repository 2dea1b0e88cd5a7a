"""Where the files psyq ships live: instruments/, personas/ and studies/ beside engine/.

Example:
    >>> (INSTRUMENTS / "iri.yaml").exists()
    True
"""

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
INSTRUMENTS = REPOSITORY / "instruments"
