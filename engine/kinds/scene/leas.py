"""Automatic scoring of LEAS-format answers with a levelled emotion lexicon.

The rules (Lane et al. 1990; the level summary in ``instruments/README.md``): each
answer gets the level of its words — 0 no emotion word (or only "think" words), 1 bodily
sensation, 2 action tendency or undifferentiated state, 3 one differentiated emotion,
4 two or more level-3 words that together say more than one alone (here: level-3 words from at
least two different emotion families). A scene's total is the higher of the self and other
levels, or 5 when both are 4 and the two are differentiated from each other (here: different
sets of emotion families).

Two rules read a little grammar around the lexicon's words (the lexicon lists cues and phrases only;
its header leaves how they are read to this module):

- Negation. A term preceded by a negator (the lexicon's ``negators``) at most
  :data:`NEGATION_WINDOW` words back, with no clause break (:data:`CLAUSE_BREAKS`: punctuation,
  "but", "just" ...) in between, does not count ("I wasn't angry, just tired": tired counts). The
  negation also covers the terms coordinated with a negated one by "or" / "nor": a run of terms
  separated only by "or", "nor" and commas, with at least one "or" or "nor" in it, is negated as
  a whole when its first term is ("I would not feel angry or sad", "I wouldn't be angry, sad or
  scared": no emotion counts). A comma alone does not carry it ("not angry, sad": sad counts),
  nor does "but" ("not angry but sad"), nor anything else between the terms ("not angry or even
  sad" keeps sad: the rule stays with the plain list).
- "feel like" + an -ing verb is an action tendency, level 2: "I'd feel like walking away",
  "feel like giving up", "felt like leaving". The verb is any word of five or more letters
  ending in "-ing" after "feel/feels/felt/feeling like", but for "being" (a state, not an act)
  and the "-thing" pronouns ("feel like nothing matters"). Where the lexicon lists a phrase
  there, the lexicon decides ("feel like crying" 2; "feel like a fool" is embarrassment, 3; "feel
  like hurting him" is read by its word "hurting", 3); "feel like" before a noun or a clause is
  no action ("I feel like a failure", "I feel like I failed": 0). A bare noun in "-ing" right
  after "feel like" ("feel like spring") would be misread as an act; it is rare in these answers.

The lexicon is ours (``instruments/lexicons/leas_psyq_lexicon.yaml``); see its header for how it
was built and how it relates to the computer scoring of Barchard et al. (2010).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import Field

from psyq.engine.files.errors import Problem
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.files.validation import load_document, raise_problems
from psyq.engine.files.shipped import INSTRUMENTS

# The lexicon the report and `psyq score` use unless told otherwise.
DEFAULT_LEXICON = INSTRUMENTS / "lexicons" / "leas_psyq_lexicon.yaml"
SCENE_LEVEL_COLUMNS = ["backend_id", "respondent_id", "repeat", "instrument", "scene",
                       "self_level", "other_level", "total_level"]
NEGATION_WINDOW = 3   # a negator this many words or fewer before a term negates it
COORDINATORS = frozenset({"or", "nor"})   # carry a negation on to the next term of a list
FEEL_FORMS = frozenset({"feel", "feels", "felt", "feeling"})
ACTION_LEVEL = 2      # "feel like <doing>": an action tendency


class LexiconFile(StrictModel):
    """A levelled lexicon as written (format `lexicon/1`)."""

    psyq: Literal["lexicon/1"]
    id: Id
    version: Text
    levels: dict[Literal["1", "2", "3"], list[Text] | dict[Id, list[Text]]]
    negators: list[Text] = Field(default_factory=list)
    cognitive: list[Text] = Field(default_factory=list)


@dataclass(frozen=True)
class Term:
    words: tuple[str, ...]
    level: int
    family: str | None


@dataclass(frozen=True)
class Lexicon:
    """Terms by their first word (for a longest-match scan), negators and cognitive words."""

    id: str
    terms: dict[str, tuple[Term, ...]]
    negators: frozenset[str]
    size: int


_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?|n't|[,.;:!?]")
# A negation reaches forward until the clause turns ("not angry, just tired": tired counts).
CLAUSE_BREAKS = frozenset({",", ".", ";", ":", "!", "?", "but", "just", "only", "though", "although", "yet",
                           "instead", "rather", "however"})


def tokens(text: str) -> list[str]:
    """Lower-case words and clause punctuation, with "n't" split off ("wasn't angry" is negated).

    Example:
        >>> tokens("I wasn't ANGRY, just tired.")
        ['i', 'was', "n't", 'angry', ',', 'just', 'tired', '.']
    """
    text = text.lower().replace("’", "'")
    text = re.sub(r"([a-z])n't\b", r"\1 n't", text)
    return _WORD.findall(text)


def load_lexicon(path: str | Path) -> Lexicon:
    """Load a `lexicon/1` file, given its path or the name of a shipped one; a phrase in two
    levels or two families is an error.

    Example:
        >>> sorted(load_lexicon("leas_psyq_lexicon").negators)[:3]
        ['aint', 'arent', 'barely']
    """
    spec, doc, path = load_document(path, LexiconFile, "lexicon")
    seen: dict[tuple[str, ...], tuple] = {}
    problems: list[Problem] = []
    by_first: dict[str, list[Term]] = {}
    for level, entries in spec.levels.items():
        groups = entries.items() if isinstance(entries, dict) else [(None, entries)]
        for family, phrases in groups:
            for i, phrase in enumerate(phrases):
                words = tuple(w for w in tokens(phrase) if w not in CLAUSE_BREAKS or len(w) > 1)
                where = ("levels", level) + ((family,) if family else ()) + (i,)
                if not words:
                    problems.append(doc.problem(where, f"{phrase!r} has no words"))
                    continue
                if words in seen and seen[words] != (int(level), family):
                    problems.append(doc.problem(where, f"{phrase!r} is also in level {seen[words][0]}"
                                                + (f" ({seen[words][1]})" if seen[words][1] else "")))
                    continue
                seen[words] = (int(level), family)
                by_first.setdefault(words[0], []).append(Term(words, int(level), family))
    raise_problems(problems)
    # Longest phrases first, so "want to scream" wins over "want".
    terms = {w: tuple(sorted(ts, key=lambda t: -len(t.words))) for w, ts in by_first.items()}
    negators = frozenset(w for n in spec.negators for w in tokens(n))
    return Lexicon(spec.id, terms, negators, len(seen))


@dataclass(frozen=True)
class AnswerScore:
    """The level of one answer and the emotion families that gave it."""

    level: int
    families: frozenset[str]
    matched: tuple[str, ...]


def _negated(words: list[str], i: int, negators: frozenset[str]) -> bool:
    for w in reversed(words[max(0, i - NEGATION_WINDOW):i]):
        if w in CLAUSE_BREAKS:
            return False
        if w in negators:
            return True
    return False


def _term_at(words: list[str], i: int, lexicon: Lexicon) -> Term | None:
    """The longest lexicon term starting at word `i`, or None."""
    return next((t for t in lexicon.terms.get(words[i], ()) if tuple(words[i:i + len(t.words)]) == t.words), None)


def _is_action_verb(word: str) -> bool:
    """An -ing form read as an act after "feel like" (see the module docstring)."""
    return len(word) >= 5 and word.endswith("ing") and word != "being" and not word.endswith("thing")


def _feel_like_action(words: list[str], i: int, lexicon: Lexicon) -> Term | None:
    """"feel like <-ing verb>" at word `i` as an action tendency, unless the lexicon has a term at the verb."""
    if (words[i] in FEEL_FORMS and i + 2 < len(words) and words[i + 1] == "like" and _is_action_verb(words[i + 2])
            and _term_at(words, i + 2, lexicon) is None):
        return Term(tuple(words[i:i + 3]), ACTION_LEVEL, None)
    return None


def _lists(matches: list[tuple[Term, int, bool]], words: list[str]) -> list[tuple[list[tuple[Term, int, bool]], bool]]:
    """`matches` cut into lists: runs of terms with only commas, "or" and "nor" between them; each
    with whether an "or"/"nor" joins it ("angry, sad or scared": one list, joined)."""
    runs: list[tuple[list[tuple[Term, int, bool]], bool]] = []
    for match in matches:
        if runs:
            run, joined = runs[-1]
            last, start = run[-1], match[1]
            gap = words[last[1] + len(last[0].words):start]
            if gap and all(w == "," or w in COORDINATORS for w in gap):
                run.append(match)
                runs[-1] = (run, joined or any(w in COORDINATORS for w in gap))
                continue
        runs.append(([match], False))
    return runs


def score_answer(text: str | None, lexicon: Lexicon) -> AnswerScore:
    """Level 0–4 of one free-text answer.

    Example:
        >>> lex = load_lexicon("leas_psyq_lexicon")
        >>> score_answer("I'd be angry and hurt, but not scared", lex).level
        4
        >>> score_answer("I wouldn't be angry or sad, I'd feel like walking away", lex).matched
        ('feel like walking',)
    """
    if not text:
        return AnswerScore(0, frozenset(), ())
    words = tokens(text)
    matches: list[tuple[Term, int, bool]] = []   # term, its first word, negated by a cue before it
    i = 0
    while i < len(words):
        term = _term_at(words, i, lexicon) or _feel_like_action(words, i, lexicon)
        if term is None:
            i += 1
            continue
        matches.append((term, i, _negated(words, i, lexicon.negators)))
        i += len(term.words)
    found: list[Term] = []
    for run, joined in _lists(matches, words):
        # A list joined by "or"/"nor" whose first term is negated is negated as a whole.
        whole = joined and run[0][2]
        found.extend(term for term, _start, negated in run if not (negated or whole))
    families = frozenset(t.family for t in found if t.level == 3 and t.family)
    if len(families) >= 2:
        level = 4
    else:
        level = max((t.level for t in found), default=0)
    return AnswerScore(level, families, tuple(" ".join(t.words) for t in found))


def scene_total(self_score: AnswerScore, other_score: AnswerScore) -> int:
    """The higher of the two levels, or 5 when both are 4 and name different emotion families.

    Example:
        >>> a, b = AnswerScore(4, frozenset({"anger", "sadness"}), ()), AnswerScore(4, frozenset({"guilt", "fear"}), ())
        >>> scene_total(a, b)
        5
    """
    if self_score.level == 4 and other_score.level == 4 and self_score.families != other_score.families:
        return 5
    return max(self_score.level, other_score.level)


def is_scene_answer(item_ids: pd.Series) -> pd.Series:
    """Which exported rows are scene answers (``<scene>:self`` or ``<scene>:other``).

    Example:
        >>> is_scene_answer(pd.Series(["s1:self", "s1:other", "v01:1:thoughts", "7"])).tolist()
        [True, True, False, False]
    """
    return item_ids.astype(str).str.fullmatch(r"[^:]+:(?:self|other)")


def score_scenes(table: pd.DataFrame, lexicon: Lexicon) -> pd.DataFrame:
    """Scene levels per respondent from an exported answers table (scene rows only).

    Returns one row per backend × respondent × repeat × instrument × scene with columns
    ``self_level, other_level, total_level``. A missing answer (refusal, unreadable) scores 0,
    as an answer without emotion words does in hand scoring; its status stays in the export.
    """
    rows = table[is_scene_answer(table["item_id"])].copy()
    if rows.empty:
        return pd.DataFrame(columns=SCENE_LEVEL_COLUMNS)
    rows[["scene", "role"]] = rows["item_id"].str.split(":", n=1, expand=True)
    keys = ["backend_id", "respondent_id", "repeat", "instrument", "scene"]
    out = []
    for key, group in rows.groupby(keys, sort=False):
        texts = dict(zip(group["role"], group["text"]))
        own = score_answer(texts.get("self") if isinstance(texts.get("self"), str) else None, lexicon)
        other = score_answer(texts.get("other") if isinstance(texts.get("other"), str) else None, lexicon)
        out.append((*key, own.level, other.level, scene_total(own, other)))
    return pd.DataFrame(out, columns=keys + ["self_level", "other_level", "total_level"])


def leas_scores(scene_levels: pd.DataFrame) -> pd.DataFrame:
    """Self, other and total sums per respondent (long format: ``subscale`` self/other/total)."""
    keys = ["backend_id", "respondent_id", "repeat", "instrument"]
    sums = scene_levels.groupby(keys, sort=False)[["self_level", "other_level", "total_level"]].sum()
    sums.columns = ["self", "other", "total"]
    return sums.reset_index().melt(id_vars=keys, var_name="subscale", value_name="score")
