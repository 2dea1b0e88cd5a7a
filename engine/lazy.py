"""Names a package re-exports, imported on first use (PEP 562 module ``__getattr__`` and ``__dir__``).

``import psyq`` must not cost the statistics stack (pandas, scipy.stats, statsmodels, pingouin,
matplotlib, scikit-learn: about 2 s and 250 MB) to a command or script that never touches it: a
package whose ``__init__.py`` re-exports names from heavy modules lists them in a table (name ->
the module that defines it) and installs the two functions :func:`lazy_names` returns. The first
``package.name`` (or ``from package import name``) imports that one module and keeps the value in
the package, so later accesses are plain attribute reads; ``dir(package)`` lists every name of
the table. A submodule of the package (``psyq.analysis.report``) is imported on first access too,
as it was when the package imported everything eagerly. This module imports nothing of psyq's own,
so that any package can use it.

Example:
    >>> import sys, types
    >>> pkg = sys.modules["lazy_demo"] = types.ModuleType("lazy_demo")
    >>> pkg.__getattr__, pkg.__dir__ = lazy_names("lazy_demo", {"dedent": "textwrap"})
    >>> "dedent" in dir(pkg), "dedent" in vars(pkg)
    (True, False)
    >>> pkg.dedent("  a") == "a", "dedent" in vars(pkg)
    (True, True)
    >>> try:
    ...     pkg.indent_all
    ... except AttributeError as missing:
    ...     print(missing)
    module 'lazy_demo' has no attribute 'indent_all'
    >>> del sys.modules["lazy_demo"]
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any, Callable, Mapping


def lazy_names(package: str, table: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the module `package`: each name of `table` (name -> module
    defining it) is imported from its module on first access and then kept in the package."""

    def __getattr__(name: str) -> Any:
        module = sys.modules[package]
        if name in table:
            value = getattr(importlib.import_module(table[name]), name)
        elif not name.startswith("__") and getattr(module, "__path__", None) \
                and importlib.util.find_spec(f"{package}.{name}") is not None:
            value = importlib.import_module(f"{package}.{name}")     # a submodule
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
