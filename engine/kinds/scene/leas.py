"""Automatic scoring of LEAS-format answers with a levelled emotion lexicon, read as a trained
rater reads an answer.

The levels (Lane et al. 1990; Lane & Smith 2021, J Intell 9:42, Table 1; the level summary in
``instruments/README.md``): each answer gets the level of its words — 0 no emotion word (or only
"think" words), 1 bodily sensation, 2 action tendency or undifferentiated state, 3 one
differentiated emotion, 4 two or more level-3 words that together say more than one alone (here:
level-3 words naming at least two different emotions: from two emotion families, not joined as
near-synonyms by the lexicon's ``near_synonyms``). A scene's total is the higher of the self and
other levels, or 5 when both are 4 and the two are differentiated from each other (here:
different sets of emotion families). Barchard et al. (2010, Behav Res Methods 42:586-595) score a
word list the same way ("334": VETA's ``_334``) and say of programs before theirs that they
"cannot mimic LEAS hand scoring"; a word list reads no context. Hand scorers do, and so does this
module, rule by rule, each rule reading the clause around a lexicon word:

- **Negation**, by clause, not by a window (:func:`.leas_clauses.negation_at`): a cue anywhere
  before the word in its clause ("wouldn't feel the slightest bit of guilt"; understatement, "I
  can't say I'd be thrilled", is a denial; "nothing I'd call pride"), a list joined by "or/nor"
  negated as a whole when its first term is, a cue after it ("Relieved is not the word I'd use"),
  but not emphasis ("I have never been so scared", "I couldn't be happier") nor two negations
  that cancel ("I'd be lying if I said I wasn't nervous").
- **A feeling taken back** (:func:`.leas_clauses.taken_back`): "Angry? Not really.", "... Not."
- **Irony** (:mod:`.leas_stance`): "Oh, delighted, obviously", "Oh great", "Grateful, I'm sure.
  Mostly I'd be irritated." (a marker and the contrary corrected after it).
- **Another sense** (the lexicon's ``senses``, :mod:`.leas_frames`): "a mad rush", "I'm afraid
  I'd just tell him", "happy to take her shift", "I'd hate to correct him", "the sad part is".
- **Whose feeling** (:mod:`.leas_people`): the other person's feeling written in the self answer
  does not count there, nor the respondent's own in the other answer.
- **Near-synonyms** (the lexicon's ``near_synonyms``): "gutted ... devastated" is one emotion.
- **Bodily and urges read from their frame** (:mod:`.leas_frames`): "my heart going a bit
  quicker" (1), "I'd be tempted to slam the door" (2).
- **Misspellings** (:mod:`.leas_spelling`): "embarassed", "greatful", "frustated" are read as meant.
- **An AI disowning feelings or refusing to guess** (:mod:`.leas_stance`): "As an AI I don't have
  feelings of fear" names no feeling, nor "I can't guess whether she feels hurt or relieved"; the
  other person's feeling after such a disclaimer counts ("... but your friend would be proud").
- "feel like" + an -ing verb of five or more letters (not "being", not "-thing") is an action
  tendency, level 2: "I'd feel like walking away"; a listed phrase there decides ("feel like a
  fool" 3); "feel like" before a noun or a clause is no action ("I feel like a failure": 0).

The word lists these rules read are data in the lexicon (``word_classes``, ``valence``), each
with its reason and source.

Matching: longest phrase first; a phrase's words may stand apart by up to :data:`MAX_GAP` filler
words ("feel really down", "my heart would be in my throat"), and "my" in a phrase stands for any
possessive ("a lump in her throat").

**Uncertainty said.** Each answer carries the rules that fired (:attr:`AnswerScore.rules`) and,
in :attr:`AnswerScore.flags`, the fragile ones (:data:`FRAGILE`) that decided its level: a rule is
flagged when undoing it alone gives another level. Flagged answers are the ones to have people
score (``psyq rating-sheet RUN OUT.xlsx --rubric leas_level --flagged``).

The lexicon is ours (``instruments/lexicons/leas_psyq_lexicon.yaml``); see its header for how it
was built, its sources, and how it relates to the computer scoring of Barchard et al. (2010).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Mapping

import pandas as pd
from pydantic import Field

from psyq.engine.files.errors import Problem
from psyq.engine.files.fields import Id, StrictModel, Text
from psyq.engine.files.validation import load_document, raise_problems
from psyq.engine.files.shipped import INSTRUMENTS
from psyq.engine.kinds.scene.leas_clauses import (POSSESSIVES, PUNCTUATION, Cues, asides, cased_tokens, named_otherwise,
                                                  corrected, negation_at, raised_negations, taken_back)
from psyq.engine.kinds.scene.leas_frames import Sense, frame_terms, other_sense, parse_senses
from psyq.engine.kinds.scene.leas_stance import (contrasted_irony, continued_irony, disowned_spans, ironic_spans,
                                                 refused_spans)
from psyq.engine.kinds.scene.leas_people import NOT_MINE, PERSON_NOUNS, experiencer, person_marks
from psyq.engine.kinds.scene.leas_spelling import Speller, load_real_words, make_speller

# The lexicon the report and `psyq score` use unless told otherwise.
DEFAULT_LEXICON = INSTRUMENTS / "lexicons" / "leas_psyq_lexicon.yaml"
SCENE_LEVEL_COLUMNS = ["backend_id", "respondent_id", "repeat", "instrument", "scene",
                       "self_level", "other_level", "total_level", "self_rules", "other_rules",
                       "self_flags", "other_flags"]
ANSWER_COLUMNS = ["leas_level", "leas_rules", "leas_flags", "leas_flagged"]
COORDINATORS = frozenset({"or", "nor"})   # carry a negation on to the next term of a list
FEEL_FORMS = frozenset({"feel", "feels", "felt", "feeling"})
ACTION_LEVEL = 2      # "feel like <doing>": an action tendency
# Words a phrase's words may stand apart by ("my heart would be in my throat"), at most MAX_GAP in all.
FILLERS = frozenset({"would", "will", "might", "could", "should", "must", "be", "been", "is", "was", "were", "are",
                     "am", "probably", "definitely", "just", "really", "totally", "completely", "literally",
                     "absolutely", "so", "all", "immediately", "instantly", "suddenly", "start", "started",
                     "starting", "kind", "of", "sort", "bit", "a", "little", "quite", "very", "pretty"})
MAX_GAP = 3
# Rules known to be fragile: an answer whose level one of them decided is flagged.
FRAGILE = ("negation", "irony", "other_sense", "whose", "taken_back", "near_synonym", "misspelling", "ai", "refusal",
           "bodily", "urge")
FOUND_BY = ("misspelling", "bodily", "urge")     # rules that find a term rather than drop one
KEPT = {"emphatic": "emphasis", "out_of_scope": "negation_scope", "affirmed": "double_negation"}


class Idiom(StrictModel):
    """Phrases of one level (and family, at level 3) from one source."""

    phrases: list[Text] = Field(min_length=1)
    level: Literal[1, 2, 3]
    family: Id | None = None
    source: Text


class NearSynonyms(StrictModel):
    """Level-3 words of different families that name one emotion, and why."""

    words: list[Text] = Field(min_length=2)
    reason: Text


class SenseEntry(StrictModel):
    """An emotion word in another sense: the phrase (slots: :mod:`.leas_frames`) and why."""

    phrase: Text
    reason: Text


class WordClass(StrictModel):
    """Words or phrases a clause rule reads (a guard list), why, and where they come from."""

    words: list[Text] = Field(min_length=1)
    reason: Text
    source: Text


class Valence(StrictModel):
    """Level-3 families and other lexicon words of positive and of negative valence, and why."""

    positive: list[Text] = Field(min_length=1)
    negative: list[Text] = Field(min_length=1)
    reason: Text
    source: Text


class LexiconFile(StrictModel):
    """A levelled lexicon as written (format `lexicon/1`)."""

    psyq: Literal["lexicon/1"]
    id: Id
    version: Text
    levels: dict[Literal["1", "2", "3"], list[Text] | dict[Id, list[Text]]]
    negators: list[Text] = Field(default_factory=list)
    cognitive: list[Text] = Field(default_factory=list)
    sources: dict[Id, Text] = Field(default_factory=dict)
    idioms: list[Idiom] = Field(default_factory=list)
    near_synonyms: list[NearSynonyms] = Field(default_factory=list)
    senses: list[SenseEntry] = Field(default_factory=list)
    word_classes: dict[Id, WordClass] = Field(default_factory=dict)
    valence: Valence | None = None
    real_words: Text | None = None      # companion `real_words/1` file, relative to this one


@dataclass(frozen=True)
class Term:
    words: tuple[str, ...]
    level: int
    family: str | None
    source: str | None = None


@dataclass(frozen=True)
class Lexicon:
    """Terms by their first word (for a longest-match scan), negators, and the rules' data: other
    senses by word (slots, the word's slot, reason), near-synonym groups by phrase, the speller,
    the word classes and valence the clause rules read."""

    id: str
    terms: dict[str, tuple[Term, ...]]
    negators: frozenset[str]
    size: int
    cognitive: frozenset[str] = frozenset()
    senses: dict[str, tuple[Sense, ...]] = field(default_factory=dict)
    near: dict[str, frozenset[int]] = field(default_factory=dict)
    speller: Speller | None = None
    cues: Cues = field(default_factory=Cues)

    def single(self, word: str) -> Term | None:
        """The one-word term `word`, if listed."""
        return next((t for t in self.terms.get(word, ()) if len(t.words) == 1), None)

    def comparative(self, word: str) -> bool:
        """Whether `word` is a comparative of a listed word ("happier", "angrier", "prouder")."""
        if not word.endswith("er") or self.single(word) is None:
            return False
        stems = (word[:-2], word[:-3] + "y", word[:-3], word[:-1])
        return any(self.single(s) is not None for s in stems if s)


def tokens(text: str) -> list[str]:
    """Lower-case words and clause punctuation, with "n't" split off ("wasn't angry" is negated).

    Example:
        >>> tokens("I wasn't ANGRY, just tired.")
        ['i', 'was', "n't", 'angry', ',', 'just', 'tired', '.']
    """
    return [t.lower() for t in cased_tokens(text)]


def _phrase(text: str) -> tuple[str, ...]:
    return tuple(w for w in tokens(text) if w not in PUNCTUATION)


def load_lexicon(path: str | Path) -> Lexicon:
    """Load a `lexicon/1` file, given its path or the name of a shipped one; a phrase in two
    levels or two families, an idiom of an unknown family or source, a near-synonym that is no
    level-3 term and a sense naming no lexicon word are errors.

    Example:
        >>> sorted(load_lexicon("leas_psyq_lexicon").negators)[:3]
        ['aint', 'arent', 'barely']
    """
    spec, doc, path = load_document(path, LexiconFile, "lexicon")
    seen: dict[tuple[str, ...], tuple] = {}
    problems: list[Problem] = []
    by_first: dict[str, list[Term]] = {}

    def add(phrase: str, level: int, family: str | None, where: tuple, source: str | None = None) -> None:
        words = _phrase(phrase)
        if not words:
            problems.append(doc.problem(where, f"{phrase!r} has no words"))
            return
        if words in seen and seen[words] != (level, family):
            problems.append(doc.problem(where, f"{phrase!r} is also in level {seen[words][0]}"
                                        + (f" ({seen[words][1]})" if seen[words][1] else "")))
            return
        if words not in seen:
            by_first.setdefault(words[0], []).append(Term(words, level, family, source))
        seen[words] = (level, family)

    for level, entries in spec.levels.items():
        groups = entries.items() if isinstance(entries, dict) else [(None, entries)]
        for family, phrases in groups:
            for i, phrase in enumerate(phrases):
                add(phrase, int(level), family, ("levels", level) + ((family,) if family else ()) + (i,))
    families = set(spec.levels["3"]) if isinstance(spec.levels.get("3"), dict) else set()
    for i, idiom in enumerate(spec.idioms):
        if (idiom.level == 3) != (idiom.family is not None) or (idiom.family and idiom.family not in families):
            problems.append(doc.problem(("idioms", i, "family"), "a level-3 idiom names one of the level-3 families "
                                        f"({', '.join(sorted(families))}); other levels name none"))
            continue
        if idiom.source.split(":")[0] not in spec.sources:
            problems.append(doc.problem(("idioms", i, "source"), f"{idiom.source!r} is not one of `sources` "
                                        f"({', '.join(spec.sources) or 'none'}), optionally followed by ':entry'"))
            continue
        for k, phrase in enumerate(idiom.phrases):
            add(phrase, idiom.level, idiom.family, ("idioms", i, "phrases", k), idiom.source)
    near: dict[str, set[int]] = {}
    for i, group in enumerate(spec.near_synonyms):
        for k, word in enumerate(group.words):
            if seen.get(_phrase(word), (0,))[0] != 3:
                problems.append(doc.problem(("near_synonyms", i, "words", k), f"{word!r} is no level-3 term"))
            near.setdefault(" ".join(_phrase(word)), set()).add(i)
    classes = {name: frozenset(_phrase(w) for w in c.words) for name, c in spec.word_classes.items()}
    senses, wrong = parse_senses([(e.phrase, e.reason) for e in spec.senses], set(by_first), classes)
    problems += [doc.problem(("senses", i, "phrase"), message) for i, message in wrong]
    valence = {}
    if spec.valence:
        for sign, names in ((1, spec.valence.positive), (-1, spec.valence.negative)):
            for i, name in enumerate(names):
                if name not in families and (_phrase(name) not in seen or seen[_phrase(name)][0] == 3):
                    problems.append(doc.problem(("valence", "positive" if sign > 0 else "negative", i),
                                                f"{name!r} is no level-3 family nor a level-1 or 2 term"))
                valence[name if name in families else " ".join(_phrase(name))] = sign
    raise_problems(problems)
    # Longest phrases first, so "want to scream" wins over "want".
    terms = {w: tuple(sorted(ts, key=lambda t: -len(t.words))) for w, ts in by_first.items()}
    negators = frozenset(w for n in spec.negators for w in tokens(n))
    cognitive = frozenset(w for c in spec.cognitive for w in tokens(c))
    speller = None
    if spec.real_words:
        singles = [ts[0] for ts, level in seen.items() if len(ts) == 1 and level[0] in (1, 2, 3)]
        speller = make_speller([w for w in singles if w not in cognitive and w not in negators],
                               load_real_words(Path(path).parent / spec.real_words),
                               {w: seen[(w,)] for w in singles})
    return Lexicon(spec.id, terms, negators, len(seen), cognitive, senses,
                   {k: frozenset(v) for k, v in near.items()}, speller, Cues(classes, valence, negators))


@dataclass(frozen=True)
class AnswerScore:
    """The level of one answer, the emotion families that gave it, the rules that fired and the
    fragile rules that decided the level (:data:`FRAGILE`)."""

    level: int
    families: frozenset[str]
    matched: tuple[str, ...]
    rules: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()

    @property
    def flagged(self) -> bool:
        """Whether a fragile rule decided the level: an answer for people to score."""
        return bool(self.flags)


@dataclass
class Found:
    """A lexicon term found in an answer: where, as written, and the rules keeping it from counting."""

    term: Term
    start: int
    end: int
    spelled: str | None = None        # the word as written, when read as a misspelling
    drop: set[str] = field(default_factory=set)
    kept_by: str | None = None        # a cue in its clause that does not deny it: emphatic, out_of_scope, affirmed
    by: str | None = None             # the rule that found it, when no list did (FOUND_BY)

    @property
    def name(self) -> str:
        return " ".join(self.term.words)


def _same(word: str, wanted: str) -> bool:
    return word == wanted or (wanted in POSSESSIVES and word in POSSESSIVES)


def _match_end(words: list[str], i: int, term: Term) -> int | None:
    """One past the last word of `term` matched at word `i` (filler words between its words allowed)."""
    k, gaps = i, 0
    for n, wanted in enumerate(term.words):
        while n > 0 and k < len(words) and not _same(words[k], wanted) and words[k] in FILLERS and gaps < MAX_GAP:
            k, gaps = k + 1, gaps + 1
        if k >= len(words) or not _same(words[k], wanted):
            return None
        k += 1
    return k


def _is_action_verb(word: str) -> bool:
    """An -ing form read as an act after "feel like" (see the module docstring)."""
    return len(word) >= 5 and word.endswith("ing") and word != "being" and not word.endswith("thing")


def _feel_like_doing(words: list[str], i: int, lexicon: Lexicon) -> bool:
    """"feel like <-ing verb>" at word `i`, unless the lexicon has a term at the verb."""
    return (words[i] in FEEL_FORMS and i + 2 < len(words) and words[i + 1] == "like" and _is_action_verb(words[i + 2])
            and not any(_match_end(words, i + 2, t) for t in lexicon.terms.get(words[i + 2], ())))


def find_terms(words: list[str], lexicon: Lexicon) -> list[Found]:
    """The lexicon's terms in `words`, longest first and not overlapping; a "feel like <-ing>"
    action; a misspelt lexicon word (when the lexicon has a speller).

    Example:
        >>> lexicon = load_lexicon("leas_psyq_lexicon")
        >>> [f.name for f in find_terms(tokens("I'd feel like walking out, so greatful"), lexicon)]
        ['feel like walking', 'grateful']
    """
    found: list[Found] = []
    i = 0
    while i < len(words):
        hit = next(((t, e) for t in lexicon.terms.get(words[i], ()) if (e := _match_end(words, i, t)) is not None),
                   None)
        if hit is None and _feel_like_doing(words, i, lexicon):
            hit = (Term(tuple(words[i:i + 3]), ACTION_LEVEL, None), i + 3)
        if hit is not None:
            found.append(Found(hit[0], i, hit[1]))
            i = hit[1]
            continue
        word = words[i]
        if lexicon.speller and word not in lexicon.terms and word not in lexicon.cognitive \
                and word not in lexicon.negators:
            meant = lexicon.speller.correct(word)
            if meant is not None and lexicon.single(meant) is not None:
                found.append(Found(lexicon.single(meant), i, i + 1, spelled=word, by="misspelling"))
        i += 1
    taken = {k for f in found for k in range(f.start, f.end)}
    starts = {f.start for f in found}
    for start, end, level, rule in frame_terms(words, taken, lexicon.cues, starts.__contains__):
        found.append(Found(Term(tuple(words[start:end]), level, None), start, end, by=rule))
    return sorted(found, key=lambda f: f.start)


def _negate_lists(found: list[Found], words: list[str]) -> None:
    """A run of terms with only commas, "or" and "nor" between them, joined by at least one
    "or"/"nor", is negated as a whole when its first term is ("not angry, sad or scared")."""
    runs: list[list[Found]] = []
    for f in found:
        gap = words[runs[-1][-1].end:f.start] if runs else []
        if gap and all(w == "," or w in COORDINATORS for w in gap):
            runs[-1].append(f)
        else:
            runs.append([f])
    for run in runs:
        joined = any(w in COORDINATORS for a, b in zip(run, run[1:]) for w in words[a.end:b.start])
        if joined and "negation" in run[0].drop:
            for f in run[1:]:
                f.drop.add("negation")


def _level(counting: list[Found], near: Mapping[str, frozenset[int]], merge: bool = True) -> tuple[int, frozenset[str], int]:
    """(level, level-3 families, emotions): emotions are the level-3 terms grouped by family and,
    with `merge`, by near-synonym group."""
    threes = [f for f in counting if f.term.level == 3 and f.term.family]
    parent = {f.name: f.name for f in threes}

    def root(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x
    for a in threes:
        for b in threes:
            if a.term.family == b.term.family or (merge and near.get(a.name, frozenset()) & near.get(b.name, frozenset())):
                parent[root(a.name)] = root(b.name)
    emotions = len({root(f.name) for f in threes})
    families = frozenset(f.term.family for f in threes)
    level = 4 if emotions >= 2 else max((f.term.level for f in counting), default=0)
    return level, families, emotions


def score_answer(text: str | None, lexicon: Lexicon, role: Literal["self", "other"] | None = None,
                 others: tuple[str, ...] = ()) -> AnswerScore:
    """Level 0–4 of one free-text answer, with the rules that fired and those that decided it.

    `role` says which question the answer is to ("self": how would you feel; "other"): with it,
    a feeling of the other person in a self answer does not count, nor the reverse. `others`: the
    words naming the other person in the scene ("your friend Aiko": friend, aiko).

    Example:
        >>> lex = load_lexicon("leas_psyq_lexicon")
        >>> score_answer("I'd be angry and hurt, but not scared", lex).level
        4
        >>> score_answer("I wouldn't be angry or sad, I'd feel like walking away", lex).matched
        ('feel like walking',)
        >>> got = score_answer("Honestly, I'd be fine. She'd be livid.", lex, role="self")
        >>> got.level, got.rules, got.flags
        (2, ('whose(livid)',), ('whose',))
    """
    if not text:
        return AnswerScore(0, frozenset(), ())
    cased = cased_tokens(text)
    words = [w.lower() for w in cased]
    cues = lexicon.cues
    found = find_terms(words, lexicon)
    inside = frozenset(k for f in found for k in range(f.start, f.end))   # "couldn't breathe": no cue
    aside = asides(words, cues)
    marks = person_marks(words, cased, others, frozenset(lexicon.terms))

    def within(spans, rule: str, keep=lambda f: False) -> None:
        for s, e in spans:
            for f in found:
                if s <= f.start < e and not keep(f):
                    f.drop.add(rule)
    disowned = disowned_spans(words, cues)    # an AI disowns its own feelings, not the other person's
    within(disowned, "ai", lambda f: experiencer(words, marks, f.start, f.end, aside) in NOT_MINE)
    within(refused_spans(words, cues, ai=bool(disowned)), "refusal")
    within(ironic_spans(words, {f.start for f in found}), "irony")
    within([(s, e) for s, e, _cue in taken_back(words, lambda s, e: any(s <= f.start < e for f in found))], "taken_back")
    for f in found:
        if other_sense(words, f.start, lexicon.senses) or f.start in aside:   # "..., I'd hope." comments
            f.drop.add("other_sense")
        negation = negation_at(words, f.start, lexicon.negators, inside, lexicon.comparative, cues, aside)
        if (negation is not None and negation.kind == "negated") or named_otherwise(words, f.end, cues) is not None:
            f.drop.add("negation")
        elif negation is not None:
            f.kept_by = negation.kind    # emphatic, out of the cue's scope, or a denial denied
    _negate_lists(found, words)
    for s, e in raised_negations(words):
        for f in found:
            if s <= f.start < e and not f.kept_by:
                f.drop.add("negation")
    corrected(found, words)
    if role is not None:
        for f in found:
            who = experiencer(words, marks, f.start, f.end, aside)
            if who == "party" or (role == "self" and who == "third") or (role == "other" and who == "first"):
                f.drop.add("whose")
    valence = [(f.start, 0 if experiencer(words, marks, f.start, f.end, aside) in NOT_MINE   # irony at oneself
                else cues.valence.get(f.term.family or f.name, 0)) for f in found if not f.drop]
    within(contrasted_irony(words, valence, cues), "irony")
    ironic = [(f.start, cues.valence.get(f.term.family or f.name, 0)) for f in found if f.drop == {"irony"}]
    within(continued_irony(words, ironic, valence, cues), "irony")
    counting = [f for f in found if not f.drop]
    level, families, emotions = _level(counting, lexicon.near)
    rules = [f"{rule}({f.spelled or f.name})" for f in found for rule in sorted(f.drop)]
    rules += [f"{KEPT[f.kept_by]}({f.name})" for f in counting if f.kept_by]
    rules += [f"misspelling({f.spelled}->{f.name})" if f.spelled else f"{f.by}({f.name})" for f in found if f.by]
    if emotions < len(families):
        rules.append("near_synonym(" + "~".join(sorted({f.name for f in counting if f.term.level == 3})) + ")")
    flags = tuple(rule for rule in FRAGILE if _undone(rule, found, counting, lexicon.near) != level)
    return AnswerScore(level, families, tuple(f.spelled or f.name for f in counting), tuple(rules), flags)


def _undone(rule: str, found: list[Found], counting: list[Found], near: Mapping[str, frozenset[int]]) -> int:
    """The level with `rule` alone undone: what it dropped counted, what it read or kept not."""
    if rule == "near_synonym":
        return _level(counting, near, merge=False)[0]
    if rule in FOUND_BY:
        return _level([f for f in counting if f.by != rule], near)[0]
    again = counting + [f for f in found if f.drop == {rule}]
    if rule == "negation":
        again = [f for f in again if not f.kept_by]
    return _level(again, near)[0]


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


def other_words(label: str) -> tuple[str, ...]:
    """The words naming the other person of a scene, as :func:`score_answer` takes them: its head
    noun (the label's last word), its names and person nouns.

    Example:
        >>> other_words("your friend Aiko"), other_words("the woman at the bus stop"), other_words("Mr. Okafor")
        (('aiko', 'friend'), ('woman',), ('okafor',))
    """
    skip = {"the", "a", "an", "your", "my", "at", "next", "door", "bus", "stop", "mr", "mrs", "ms", "dr"}
    cased = [w for w in cased_tokens(label) if w not in PUNCTUATION and w.lower() not in skip]
    words = [w.lower() for w in cased]
    keep = words[-1:] + [w.lower() for w in cased if w[:1].isupper() or w.lower() in PERSON_NOUNS]
    return tuple(dict.fromkeys(keep))


def score_scene_rows(table: pd.DataFrame, lexicon: Lexicon,
                     others: Mapping[tuple[str, str], tuple[str, ...]] | None = None) -> tuple[pd.DataFrame, list[AnswerScore]]:
    """The scene answers of an exported table with the columns :data:`ANSWER_COLUMNS` added
    (level, rules that fired, fragile rules that decided it, flagged), and their scores.
    `others`: (instrument, scene) -> the words naming the other person (:func:`other_words`)."""
    rows = table[is_scene_answer(table["item_id"])].copy()
    scores = []
    for row in rows.itertuples(index=False):
        scene, role = str(row.item_id).split(":", 1)
        text = row.text if isinstance(row.text, str) else None
        scores.append(score_answer(text, lexicon, role, (others or {}).get((row.instrument, scene), ())))
    rows["leas_level"] = [s.level for s in scores]
    rows["leas_rules"] = ["; ".join(s.rules) for s in scores]
    rows["leas_flags"] = ["; ".join(s.flags) for s in scores]
    rows["leas_flagged"] = [s.flagged for s in scores]
    return rows, scores


def score_scenes(table: pd.DataFrame, lexicon: Lexicon,
                 others: Mapping[tuple[str, str], tuple[str, ...]] | None = None) -> pd.DataFrame:
    """Scene levels per respondent from an exported answers table (scene rows only).

    Returns one row per backend × respondent × repeat × instrument × scene with columns
    ``self_level, other_level, total_level`` and, per answer, the rules that fired and the
    fragile ones that decided its level (``self_rules, other_rules, self_flags, other_flags``). A
    missing answer (refusal, unreadable) scores 0, as an answer without emotion words does in hand
    scoring; its status stays in the export.
    """
    rows, scores = score_scene_rows(table, lexicon, others)
    if rows.empty:
        return pd.DataFrame(columns=SCENE_LEVEL_COLUMNS)
    rows[["scene", "role"]] = rows["item_id"].str.split(":", n=1, expand=True)
    rows["score"] = scores
    keys = ["backend_id", "respondent_id", "repeat", "instrument", "scene"]
    empty = AnswerScore(0, frozenset(), ())
    out = []
    for key, group in rows.groupby(keys, sort=False):
        by_role = dict(zip(group["role"], group["score"]))
        own, other = by_role.get("self", empty), by_role.get("other", empty)
        out.append((*key, own.level, other.level, scene_total(own, other), "; ".join(own.rules),
                    "; ".join(other.rules), "; ".join(own.flags), "; ".join(other.flags)))
    return pd.DataFrame(out, columns=SCENE_LEVEL_COLUMNS)


def leas_scores(scene_levels: pd.DataFrame) -> pd.DataFrame:
    """Self, other and total sums per respondent (long format: ``subscale`` self/other/total)."""
    keys = ["backend_id", "respondent_id", "repeat", "instrument"]
    sums = scene_levels.groupby(keys, sort=False)[["self_level", "other_level", "total_level"]].sum()
    sums.columns = ["self", "other", "total"]
    return sums.reset_index().melt(id_vars=keys, var_name="subscale", value_name="score")
