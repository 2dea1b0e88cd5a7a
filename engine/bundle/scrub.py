"""What must never leave the machine in a bundle, and finding it in any byte.

A bundle goes to other people: no secret, no environment variable's value and no absolute path of
the bundling machine may be in it. Paths are *replaced* (a report or a manifest may name the
run's folder; a placeholder says where it was); a secret or another environment value found in
a member is a reason to *refuse* the bundle, naming the member and the variable (never the
value), since psyq cannot know what else around it is private.

What counts:

- secrets: the value of every environment variable whose name says it holds one (``*KEY*``,
  ``*TOKEN*``, ``*SECRET*``, ``*PASS*``, ``*AUTH*``, ``*CREDENTIAL*``, ``*COOKIE*``) or that a
  backend names as its key variable, 6 characters or more;
- other environment values of 16 characters or more that are not paths (shorter ones, ``1``,
  ``C.UTF-8``, ``xterm``, occur in any text by chance);
- paths: the home folder, the working folder, the run's and the study's folders, psyq's own
  installation, the Python environment, and every environment value that is an absolute path,
  each as given and resolved.

Example:
    >>> found = Sensitive.of({"MY_API_KEY": "sk-123456", "HOME": "/home/ann"}, {"/home/ann": "~"})
    >>> found.scrub("read /home/ann/s.yaml")
    'read ~/s.yaml'
    >>> found.leaks(b"key sk-123456")
    ['the value of environment variable MY_API_KEY']
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|AUTH|CREDENTIAL|COOKIE", re.IGNORECASE)
MIN_SECRET = 6
MIN_VALUE = 16


def is_absolute_path(value: str) -> bool:
    """Whether `value` is an absolute path of two parts or more (``/home/ann``, ``C:\\Users``; not ``/tmp``).

    Example:
        >>> is_absolute_path("/home/ann"), is_absolute_path("/tmp"), is_absolute_path("runs/x")
        (True, False, False)
    """
    return value.startswith("/") and len([p for p in value.split("/") if p]) >= 2 or \
        bool(re.match(r"^[A-Za-z]:[\\/]", value))


@dataclass(frozen=True)
class Sensitive:
    """The strings a bundle may not hold: paths with their placeholder (longest first), secrets
    and other environment values by the variable's name."""

    paths: tuple[tuple[str, str], ...]
    secrets: tuple[tuple[str, str], ...]
    values: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, environ: Mapping[str, str], paths: Mapping[str, str],
           key_variables: Iterable[str] = ()) -> "Sensitive":
        """The sensitive strings of `environ` and `paths` (an absolute path -> its placeholder);
        `key_variables`: the environment variables the run's backends read their keys from.

        Example:
            >>> Sensitive.of({"TOKEN_X": "abcdefgh", "SHELL": "/bin/bash"}, {}).secrets
            (('TOKEN_X', 'abcdefgh'),)
        """
        keys = set(key_variables)
        secrets, values, found_paths = [], [], dict(paths)
        for name, value in environ.items():
            if (name in keys or _SECRET_NAME.search(name)) and len(value) >= MIN_SECRET:
                secrets.append((name, value))
            elif any(is_absolute_path(part) for part in value.split(os.pathsep)):
                for part in value.split(os.pathsep):
                    if is_absolute_path(part):
                        found_paths.setdefault(part.rstrip("/\\"), f"<${name}>")
            elif len(value) >= MIN_VALUE:
                values.append((name, value))
        expanded = {}
        for path, placeholder in found_paths.items():
            expanded.setdefault(path, placeholder)
            try:
                expanded.setdefault(os.path.realpath(path), placeholder)
            except OSError:
                pass
        ordered = sorted(((p, h) for p, h in expanded.items() if is_absolute_path(p)), key=lambda x: -len(x[0]))
        return cls(tuple(ordered), tuple(sorted(secrets)), tuple(sorted(values)))

    def scrub(self, text: str) -> str:
        """`text` with every sensitive path replaced by its placeholder.

        Example:
            >>> Sensitive((("/w/runs", "<runs>"),), (), ()).scrub("/w/runs/a")
            '<runs>/a'
        """
        for path, placeholder in self.paths:
            text = text.replace(path, placeholder)
        return text

    def leaks(self, data: bytes) -> list[str]:
        """What of the sensitive strings `data` holds, said without the values themselves.

        Example:
            >>> Sensitive((("/home/ann", "~"),), (), ()).leaks(b"at /home/ann/x")
            ['a path of this machine (~)']
        """
        found = []
        for name, value in self.secrets:
            if value.encode() in data:
                found.append(f"the value of environment variable {name}")
        for name, value in self.values:
            if value.encode() in data:
                found.append(f"the value of environment variable {name}")
        for path, placeholder in self.paths:
            if path.encode() in data:
                found.append(f"a path of this machine ({placeholder})")
        return found
