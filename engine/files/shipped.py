"""The files psyq ships, and finding a file by the name of a shipped one.

psyq carries its instruments, cohorts, studies, rubrics, situation and perturbation sets,
lexicons and human data files as package data (``instruments/``, ``personas/`` and
``studies/`` inside the installed ``psyq`` package, or beside ``engine/`` in a clone). Each has a
*name*: its file name without folder and extension (``iri``, ``adults_small``, ``quickstart``,
``empathy_ceb``, ``iri_briganti2018_keyed``). Wherever psyq reads such a file, :func:`locate`
turns what the user wrote into a path:

1. a file that exists where the reference is read (beside the study file, or in the working
   folder on the command line) always wins; so does ``NAME.yaml`` (the kind's extensions) for a
   bare name, and when psyq ships a file of that name too, a notice says which one was used;
2. else a bare name is the shipped file of that kind;
3. a name that matches nothing, or files of two kinds, is an :class:`InputError` that names the
   candidates.

Example:
    >>> locate("iri", "instrument").relative_to(ROOT).as_posix()
    'instruments/iri.yaml'
    >>> sorted(shipped_files("cohort"))[:2]
    ['adults_small', 'briganti_twins']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.notices import notify

# The installed package (site-packages/psyq) or, installed editable, the clone's root.
ROOT = Path(str(resources.files("psyq")))
INSTRUMENTS = ROOT / "instruments"


@dataclass(frozen=True)
class FileKind:
    """One kind of file psyq ships: where its files lie and how they end."""

    name: str                     # as the user says it: "instrument", "human data"
    plural: str                   # "instruments": the word of `psyq list KIND`
    folder: str                   # relative to ROOT
    suffixes: tuple[str, ...]
    # Human data files are the CSVs that come with a codebook (a text template does not).
    needs_codebook: bool = False

    def files(self) -> dict[str, Path]:
        """Shipped files of this kind by name, in name order."""
        found = {}
        for suffix in self.suffixes:
            for path in (ROOT / self.folder).glob(f"*{suffix}"):
                name = path.name[: -len(suffix)]
                described = path.with_name(f"{name}.codebook.yaml").is_file()
                if path.is_file() and "." not in name and (described or not self.needs_codebook):
                    found[name] = path
        return dict(sorted(found.items()))


KINDS = {kind.name: kind for kind in (
    FileKind("instrument", "instruments", "instruments", (".yaml",)),
    FileKind("cohort", "cohorts", "personas", (".yaml",)),
    FileKind("study", "studies", "studies", (".yaml",)),
    FileKind("rubric", "rubrics", "instruments/rubrics", (".yaml",)),
    FileKind("situations", "situations", "instruments/situations", (".yaml",)),
    FileKind("perturbations", "perturbations", "instruments/perturbations", (".yaml",)),
    FileKind("lexicon", "lexicons", "instruments/lexicons", (".yaml",)),
    FileKind("anchors", "anchors", "instruments/anchors", (".yaml",)),
    FileKind("human data", "human-data", "instruments/data", (".csv",), needs_codebook=True),
)}

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")


def is_name(reference: str | Path) -> bool:
    """Whether `reference` is a bare name (no folder, no extension) rather than a path.

    Example:
        >>> is_name("iri"), is_name("iri.yaml"), is_name("../instruments/iri"), is_name("my-study")
        (True, False, False, True)
    """
    return isinstance(reference, str) and _NAME.fullmatch(reference) is not None


def shipped_files(kind: str) -> dict[str, Path]:
    """The shipped files of `kind` (a key of :data:`KINDS`) by name.

    Example:
        >>> "iri_briganti2018_keyed" in shipped_files("human data")
        True
    """
    return KINDS[kind].files()


def shipped_name(path: str | Path) -> tuple[str, str] | None:
    """(kind, name) when `path` is one of the files psyq ships, else None.

    Example:
        >>> shipped_name(ROOT / "personas" / "adults_small.yaml")
        ('cohort', 'adults_small')
    """
    resolved = Path(path).resolve()
    for kind in KINDS.values():
        for name, file in kind.files().items():
            if file.resolve() == resolved:
                return kind.name, name
    return None


def locate(reference: str | Path, kind: str | None = None, folder: str | Path | None = None) -> Path:
    """The file `reference` means, read in `folder` (default: the working folder).

    `kind` is the kind of file expected (a key of :data:`KINDS`); None accepts any kind, and a
    name shipped as two kinds is then an error naming both. A path that does not exist is
    returned as it is, for the reader to say so in its own words; a bare name that matches
    nothing is an :class:`InputError` that lists the shipped names.

    Example:
        >>> locate("adults_small", "cohort").name
        'adults_small.yaml'
        >>> locate("adults", "cohort")
        Traceback (most recent call last):
        psyq.engine.files.errors.InputError: adults: no such file here, and psyq ships no cohort of this name; \
its cohorts: adults_small, briganti_twins, hand_written, young_adults_150, young_adults_small (psyq list cohorts)
    """
    base = Path(folder) if folder is not None else Path()
    given = base / reference
    kinds = [KINDS[kind]] if kind is not None else list(KINDS.values())
    if not is_name(reference):
        return given
    shipped = {k.name: path for k in kinds if (path := k.files().get(str(reference))) is not None}
    # Files only: a folder named like the study (`psyq init quickstart`) does not hide the name.
    local = [p for p in dict.fromkeys([given, *(base / f"{reference}{s}" for k in kinds for s in k.suffixes)])
             if p.is_file()][:1]
    if local:
        if shipped and local[0].resolve() not in {p.resolve() for p in shipped.values()}:
            notify(Problem(str(reference), None, None, "", f"the file {local[0]} is used; psyq also ships "
                           f"{_a(next(iter(shipped)))} of this name, which is not (give its path to be sure)"))
        return local[0]
    if len(shipped) == 1:
        return next(iter(shipped.values()))
    if len(shipped) > 1:
        listed = ", ".join(f"the {k} {p.relative_to(ROOT).as_posix()}" for k, p in shipped.items())
        raise InputError.single(str(reference), f"psyq ships more than one file of this name ({listed}); "
                                                "give the kind's file path instead")
    if kind is None:
        raise InputError.single(str(reference), "no such file here, and psyq ships nothing of this name "
                                                "(psyq list shows every shipped name)")
    names = ", ".join(KINDS[kind].files()) or "none"
    raise InputError.single(str(reference), f"no such file here, and psyq ships no {kind} of this name; its "
                                            f"{KINDS[kind].plural}: {names} (psyq list {KINDS[kind].plural})")


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
