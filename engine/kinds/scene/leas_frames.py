"""The frame of words around a lexicon word, for the LEAS scorer (:mod:`.leas`): whether the word
is used in another sense there (the lexicon's ``senses``), and the terms no list can hold, read
from their frame: a body part changing (level 1) and an urge to act (level 2). The words each
frame reads are the lexicon's ``word_classes`` (:class:`.leas_clauses.Cues`), each with its reason
and source in the lexicon file.

**Another sense.** A ``senses`` entry is a run of slots, one per word:

- ``a|b|c``: one of these words; ``*``: any one word;
- ``@name``: a one-word entry of word class ``name``; ``!@name``: any word but those (a
  punctuation mark and the end of the answer count as "any word but");
- ``@feeling``: the lexicon word itself, whichever it is ("the @feeling @judged_things": "the sad
  part", "a lovely thing");
- a ``?`` before a slot: the slot takes its word when it can and is left out otherwise ("happy to
  ?@adverbs !@emotive_complements": "happy to just drive", but not "happy to finally see").

Wherever the run matches with one of its slots on a lexicon word, that word names no feeling.

**A body part changing** (:func:`frame_terms`, rule ``bodily``): a word of ``body_parts``
followed in its clause, within :data:`BODY_REACH` words, by a word of ``body_changes`` ("my
heart going a bit quicker", "my pulse would quicken"): a bodily sensation, level 1, as "heart
racing" is in the list (Lane & Smith 2021, Table 1: level 1, somatic sensations). Listed phrases
win ("heart sank" is matched as listed).

A word of ``body_sensations`` followed in its clause, within :data:`BODY_REACH` words, by a body
part after a possessive ("a heaviness settle in my chest", "a flutter low in her stomach") is
bodily too.

**An urge to act** (rule ``urge``): a phrase of ``urge_frames`` ("want to", "tempted to",
"itching to") followed by a verb that is no deliberate or cognitive act (``deliberate_verbs``:
"want to know", "want to ask" are plans): an action tendency, level 2, as the listed "want to
hit" is ("I'd be tempted to slam the door"; the hand-scored set's rule: emotional impulses 2,
deliberate behaviour 0, ``tests/data/leas_validation_README.md``). A verb the lexicon lists
decides itself ("tempted to laugh": "laugh", 2).

Both rules are fragile (a body part and a verb of change, or "want to" and a verb, can mean
other things), so an answer whose level one of them decided is flagged.

Example:
    >>> from psyq.engine.kinds.scene.leas_clauses import Cues
    >>> cues = Cues({"body_parts": frozenset({("heart",)}), "body_changes": frozenset({("quicker",)})})
    >>> words = "my heart going a bit quicker".split()
    >>> frame_terms(words, set(), cues)
    [(1, 6, 1, 'bodily')]
"""

from __future__ import annotations

from typing import Callable, Iterable, Literal, Mapping

from psyq.engine.kinds.scene.leas_clauses import FUNCTION, POSSESSIVES, PUNCTUATION, TURNS, Cues, cased_tokens

BODY_REACH = 6      # "heart might go a bit quicker": the change at most six words after the part
BODILY_LEVEL, URGE_LEVEL = 1, 2

SlotKind = Literal["in", "any", "not_in", "feeling"]
Slot = tuple[SlotKind, frozenset[str], bool]          # kind, its words, whether it may be left out
Sense = tuple[tuple[Slot, ...], int, str]              # slots, the lexicon word's slot, reason
ANY_WORD = "*"                                         # the key of senses held by "@feeling"


def parse_senses(senses: Iterable[tuple[str, str]], lexicon_words: set[str],
                 classes: Mapping[str, frozenset[tuple[str, ...]]]) -> tuple[dict[str, tuple[Sense, ...]], list]:
    """The ``senses`` (phrase, reason) by the lexicon word each can hold (:data:`ANY_WORD` for
    ``@feeling``), and the problems found as (index, message).

    Example:
        >>> got, problems = parse_senses([("hate to *", "reluctance")], {"hate"}, {})
        >>> sorted(got), got["hate"][0][1], problems
        (['hate'], 0, [])
    """
    out: dict[str, list[Sense]] = {}
    problems: list[tuple[int, str]] = []
    for i, (phrase, reason) in enumerate(senses):
        slots: list[Slot] = []
        held: list[tuple[str, int]] = []
        for j, text in enumerate(phrase.split()):
            optional = text.startswith("?")
            text = text.lstrip("?")
            name = text.lstrip("!@")
            if text == "@feeling":
                slots.append(("feeling", frozenset(), optional))
                held.append((ANY_WORD, j))
            elif text.startswith(("@", "!@")):
                if name not in classes:
                    problems.append((i, f"{text!r}: no word class {name!r} (word_classes: {', '.join(sorted(classes)) or 'none'})"))
                words = frozenset(p[0] for p in classes.get(name, ()) if len(p) == 1)
                slots.append(("not_in" if text.startswith("!") else "in", words, optional))
            elif text == "*":
                slots.append(("any", frozenset(), optional))
            else:
                split = [[t.lower() for t in cased_tokens(a)] for a in text.split("|")]
                if any(len(w) != 1 for w in split):
                    problems.append((i, f"{text!r}: each alternative is one word"))
                words = frozenset(w[0] for w in split if len(w) == 1)
                slots.append(("in", words, optional))
                held += [(w, j) for w in words if w in lexicon_words]
        if not held:
            problems.append((i, f"{phrase!r} holds no word of the lexicon"))
        for word, j in held:
            out.setdefault(word, []).append((tuple(slots), j, reason))
    return {w: tuple(v) for w, v in out.items()}, problems


def _fits(slots: tuple[Slot, ...], words: list[str], k: int, step: int) -> bool:
    """Whether `slots` match the words from `k` on, going by `step` (1 forward, -1 backward)."""
    if not slots:
        return True
    kind, allowed, optional = slots[0]
    word = words[k] if 0 <= k < len(words) else None
    ok = (word is not None and (kind in ("any", "feeling") or (kind == "in" and word in allowed))) or (
        kind == "not_in" and (word is None or word not in allowed))
    if optional and not ok:       # an optional slot takes its word when it can, else is left out
        return _fits(slots[1:], words, k, step)
    return ok and _fits(slots[1:], words, k + step, step)


def other_sense(words: list[str], at: int, senses: Mapping[str, tuple[Sense, ...]]) -> str | None:
    """The reason the lexicon word at ``words[at]`` is in another sense there, or None.

    Example:
        >>> senses, _ = parse_senses([("the @feeling part|thing", "judges a fact")], {"sad"}, {})
        >>> other_sense("the sad part is".split(), 1, senses), other_sense("so sad".split(), 1, senses)
        ('judges a fact', None)
    """
    for slots, j, reason in senses.get(words[at], ()) + senses.get(ANY_WORD, ()):
        if _fits(tuple(reversed(slots[:j])), words, at - 1, -1) and _fits(slots[j + 1:], words, at + 1, 1):
            return reason
    return None


def frame_terms(words: list[str], taken: set[int], cues: Cues,
                listed: Callable[[int], bool] = lambda k: False) -> list[tuple[int, int, int, str]]:
    """The terms read from their frame, as (start, end, level, rule): a body part changing
    (``bodily``, level 1) and an urge to act (``urge``, level 2); see the module docstring.
    `taken`: positions inside lexicon terms found already; `listed(k)`: whether a lexicon term
    starts at word `k`.

    Example:
        >>> cues = Cues({"urge_frames": frozenset({("tempted", "to")}), "deliberate_verbs": frozenset({("ask",)})})
        >>> frame_terms("i'd be tempted to slam it".split(), set(), cues), frame_terms("tempted to ask".split(), set(), cues)
        ([(2, 5, 2, 'urge')], [])
    """
    out: list[tuple[int, int, int, str]] = []
    parts, changes, sensations = cues.words("body_parts"), cues.words("body_changes"), cues.words("body_sensations")
    adverbs, deliberate = cues.words("adverbs"), cues.words("deliberate_verbs")
    k = 0
    while k < len(words):
        if k in taken:
            k += 1
            continue
        if words[k] in sensations:     # "a heaviness settle in my chest": the sensation, then where it is felt
            for j in range(k + 1, min(len(words), k + 1 + BODY_REACH)):
                if words[j] in PUNCTUATION or words[j] in TURNS or j in taken:
                    break
                if words[j] in parts and (words[j - 1] in POSSESSIVES or words[j - 1] == "the"):
                    out.append((k, j + 1, BODILY_LEVEL, "bodily"))
                    k = j
                    break
        elif words[k] in parts:
            for j in range(k + 1, min(len(words), k + 1 + BODY_REACH)):
                if words[j] in PUNCTUATION or words[j] in TURNS or j in taken:
                    break
                if words[j] in changes:
                    out.append((k, j + 1, BODILY_LEVEL, "bodily"))
                    k = j
                    break
        elif (n := cues.match("urge_frames", words, k)) and not any(p in taken for p in range(k, k + n)):
            verb = k + n
            while verb < len(words) and words[verb] in adverbs:
                verb += 1
            said = words[verb] if verb < len(words) else ""
            if said.isalpha() and said not in deliberate and said not in FUNCTION and verb not in taken \
                    and not listed(verb):
                out.append((k, verb + 1, URGE_LEVEL, "urge"))
                k = verb
        k += 1
    return out
