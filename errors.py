"""psyq's exceptions, one tree: ``except psyq.errors.PsyqError`` catches everything psyq raises on
purpose, and each branch says what went wrong::

    PsyqError                  anything psyq raises on purpose (the command line: exit 1)
    ├── InputError             a file the user gave is wrong: its Problems, file:line:column (exit 2)
    ├── RunLocked              another process writes into the same run (exit 5)
    ├── StoreWriterGone        the run store's writer process ended with answers not yet committed
    └── BackendError           a request failed for good (retries exhausted, or not retryable)
        ├── ProviderRefused    refused in a way retrying cannot fix: the provider's words (exit 6)
        ├── BackendUnreachable connections failed again and again: the run stops (exit 4)
        └── BatchApiError      a provider batch-API call failed for good

The classes are defined in :mod:`psyq.engine.files.errors`, the lowest room of the engine, so that
every room raises them; this module is their public name (also ``psyq.PsyqError`` and so on).

Example:
    >>> import psyq
    >>> try:
    ...     psyq.load_instrument("no_such_instrument")
    ... except psyq.errors.InputError as exc:
    ...     isinstance(exc, psyq.errors.PsyqError), len(exc.problems)
    (True, 1)
"""

from psyq.engine.files.errors import (BackendError, BackendUnreachable, BatchApiError, InputError, Problem,
                                      ProviderRefused, PsyqError, RunLocked, StoreWriterGone)

__all__ = ["BackendError", "BackendUnreachable", "BatchApiError", "InputError", "Problem", "ProviderRefused",
           "PsyqError", "RunLocked", "StoreWriterGone"]
