"""Misspelt emotion words read as the word meant, for the LEAS scorer (:mod:`.leas`).

Hand scorers credit a misspelt emotion word ("embarassed", "greatful", "frustated"): the LEAS
scores the words chosen to describe feelings (Lane et al. 1990; the level summary in
``instruments/README.md``), not their spelling, and the hand-scored set psyq checks itself
against does so (``tests/data/leas_validation_README.md``, rule 11). A word list alone does not:
POES and VETA match words exactly (Barchard et al. 2010 score the words of a list; VETA's
``_334`` module looks each word up), so a misspelling scores as no word at all.

The rule. A word of an answer that is no lexicon word, no "think" word and no negator, at least
:data:`MIN_LENGTH` letters long and without an apostrophe, is read as the lexicon word it is
closest to when

- its edit distance to that word (insertions, deletions, substitutions and swaps of two
  neighbouring letters: the optimal string alignment distance of Damerau 1964) is at most 1, or 2
  for lexicon words of :data:`LONG_WORD` letters or more ("greatful" is two edits from
  "grateful", "embarassed" one from "embarrassed");
- one lexicon word only is that close, or, of several as close, one only has the same letters
  ("greatful" is two edits from "grateful" and from "dreadful": grateful), or one only shares
  the longest beginning with it ("devasted": devastated, not devoted or defeated; misspellings
  seldom change the first letters, Pollock & Zamora 1984, Commun ACM 27:358-368), or all are of
  one level and family ("angery": angry or anger); otherwise the word is left unread;
- it is not a real English word: the lexicon's companion file of real words (``real_words``)
  lists every word of SCOWL's American and British lists (the Debian packages ``wamerican`` and
  ``wbritish``, 2020.12.07) within that distance of a lexicon word, so "tried" is never read as
  "tired", "shared" as "scared", "hurl" as "hurt" or "received" as "relieved". Words shorter than
  :data:`MIN_LENGTH` are never corrected: one letter changed in "mad" or "sad" nearly always
  makes another word ("made", "said"), so a short misspelling is left unscored.

The lexicon words corrected to are the one-word entries of levels 1-3; a phrase is matched only
as written. The file of real words is made by ``tests/data/leas_real_words.py`` from the two word
lists (``apt-get install wamerican wbritish``); the scorer needs only the file.

Example:
    >>> edit_distance("greatful", "grateful"), edit_distance("releived", "relieved")
    (2, 1)
    >>> speller = make_speller(["grateful", "tired", "embarrassed"], frozenset({"tried", "fired"}))
    >>> speller.correct("greatful"), speller.correct("embarassed"), speller.correct("tried")
    ('grateful', 'embarrassed', None)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal

from pydantic import Field

from psyq.engine.files.fields import StrictModel, Text
from psyq.engine.files.validation import load_document

MIN_LENGTH = 4    # shorter words are never corrected (see the module docstring)
LONG_WORD = 8     # lexicon words this long may be two edits away, shorter ones one


def allowed_distance(word: str) -> int:
    """How many edits a misspelling of the lexicon word `word` may be from it.

    Example:
        >>> allowed_distance("tired"), allowed_distance("grateful")
        (1, 2)
    """
    return 2 if len(word) >= LONG_WORD else 1


def edit_distance(a: str, b: str) -> int:
    """The optimal string alignment distance: insertions, deletions, substitutions and swaps of two
    neighbouring letters, each one edit (Damerau 1964; no substring edited twice).

    Example:
        >>> edit_distance("frustated", "frustrated"), edit_distance("jelous", "jealous"), edit_distance("ab", "ba")
        (1, 1, 1)
    """
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[len(b)]


def deletions(word: str, depth: int) -> set[str]:
    """`word` and every string made from it by deleting up to `depth` letters (the index of a
    symmetric-deletion look-up: two words within `depth` edits share one of these).

    Example:
        >>> sorted(deletions("sad", 1))
        ['ad', 'sa', 'sad', 'sd']
    """
    found, frontier = {word}, {word}
    for _ in range(depth):
        frontier = {w[:k] + w[k + 1:] for w in frontier for k in range(len(w))}
        found |= frontier
    return found


@dataclass(frozen=True)
class Speller:
    """Lexicon words by their deletion strings, and the real words never corrected."""

    index: dict[str, tuple[str, ...]]
    real: frozenset[str]
    kind: dict[str, tuple[int, str | None]] = field(default_factory=dict)   # word -> (level, family)

    def correct(self, token: str) -> str | None:
        """The lexicon word `token` is a misspelling of, or None (see the module docstring)."""
        if len(token) < MIN_LENGTH or not token.isalpha() or token in self.real:
            return None
        best: dict[str, int] = {}
        for variant in deletions(token, 2):
            for word in self.index.get(variant, ()):
                if word not in best:
                    distance = edit_distance(token, word)
                    if 0 < distance <= allowed_distance(word):
                        best[word] = distance
        if not best:
            return None
        nearest = min(best.values())
        closest = [w for w, d in best.items() if d == nearest]
        if len(closest) > 1:   # a tie: the word of the same letters wins ("greatful": grateful, not dreadful)
            closest = [w for w in closest if sorted(w) == sorted(token)] or closest
        if len(closest) > 1:   # then the word sharing the longest beginning ("devasted": devastated, not devoted)
            shared = {w: _shared_start(w, token) for w in closest}
            closest = [w for w in closest if shared[w] == max(shared.values())]
        return closest[0] if len(closest) == 1 or self.same_emotion(closest) else None

    def same_emotion(self, words: list[str]) -> bool:
        """Whether `words` are all of one level and family ("angery": angry or anger, one emotion)."""
        return len({self.kind.get(w) for w in words}) == 1 and None not in {self.kind.get(w) for w in words}


def _shared_start(a: str, b: str) -> int:
    return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def make_speller(words: Iterable[str], real: frozenset[str],
                 kind: dict[str, tuple[int, str | None]] | None = None) -> Speller:
    """A :class:`Speller` correcting to `words` (one-word lexicon entries, :data:`MIN_LENGTH`
    letters or more), never correcting the words of `real`; `kind`: each word's (level, family),
    so that a tie between two words of one emotion is no tie."""
    index: dict[str, list[str]] = {}
    for word in sorted(set(words)):
        if len(word) >= MIN_LENGTH and word.isalpha():
            for variant in deletions(word, allowed_distance(word)):
                index.setdefault(variant, []).append(word)
    return Speller({k: tuple(v) for k, v in index.items()}, real, dict(kind or {}))


class RealWordsFile(StrictModel):
    """A lexicon's companion file of real words near its words (format `real_words/1`)."""

    psyq: Literal["real_words/1"]
    source: Text
    near: dict[str, list[str]]                                # lexicon word -> real words near it
    also: dict[str, Text] = Field(default_factory=dict)        # a real word added by hand -> why
    made_for: list[str] = Field(default_factory=list)          # the lexicon words it was made for (stale if they changed)


def load_real_words(path: str | Path) -> frozenset[str]:
    """The real words of a `real_words/1` file (those near a lexicon word, and those added by hand).

    Example:
        >>> from psyq.engine.files.shipped import INSTRUMENTS
        >>> words = load_real_words(INSTRUMENTS / "lexicons" / "leas_psyq_lexicon.real_words.yaml")
        >>> {"tried", "shared", "hurl", "received"} <= words
        True
    """
    spec, _doc, _path = load_document(path, RealWordsFile)
    return frozenset(w for near in spec.near.values() for w in near) | frozenset(spec.also)
