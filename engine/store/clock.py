"""The time a run's records are stamped with: one clock, one precision, for the trials, the stages,
the batches, the manifest's start, resume and finish, and the perturbed replies' log.

UTC, ISO 8601 with milliseconds (``2026-12-07T06:30:01.234+00:00``): two records of one run are
always ordered as they happened to the millisecond, and a record of one room compares with another's
(they were stamped in seconds in some rooms and in milliseconds in others).

May import: the standard library only.

Example:
    >>> stamp = utc_now()
    >>> stamp.endswith("+00:00") and len(stamp.split("T")[1]) == len("06:30:01.234+00:00")
    True
"""

from __future__ import annotations

from datetime import datetime, timezone


def utc_now() -> str:
    """Now, in UTC, as ISO 8601 with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")
