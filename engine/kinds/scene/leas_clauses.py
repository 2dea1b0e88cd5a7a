"""The clause around an emotion word, read as a hand scorer reads it, for the LEAS scorer
(:mod:`.leas`): whether a negation reaches the word or only adds emphasis, whether the feeling is
taken back or said in irony, and whether an AI disowns it. Words are the lower-case tokens of
:func:`.leas.tokens` ("n't" split off, punctuation kept).

The LEAS scores the words a respondent chooses to describe a feeling (Lane et al. 1990; the
Bio-protocol summary of its scoring: "based solely on the words chosen to describe feelings"); a
word that describes no feeling of the person asked about ("I wouldn't be angry") describes none,
and the hand-scored set psyq checks itself against does not count it
(``tests/data/leas_validation_README.md``, rules 9 and 10). What follows is how far a negation
reaches, framed as clinical negation finders frame it (NegEx, Chapman et al. 2001, J Biomed Inform
34:301-310: cues before and after a term, pseudo-negations that look like cues but are not, and
terms that end a cue's scope) and as the survey of Morante & Blanco (2021, Natural Language
Engineering 27(2)) defines scope: the part of the sentence the negation is about, a clause
rather than a count of words. Each decision is ours; none is taken from a LEAS manual, which we
could not read.

Negation (:func:`negation_at`). A cue (the lexicon's ``negators``) counts for a word when it
stands before it in the same clause: a clause ends at punctuation, at a word that turns the
sentence (:data:`TURNS`: "but", "just", "only", "rather" ...) and at "and/or/so" followed by a
subject ("... and I'd be sad"). Inside the clause the distance does not matter ("wouldn't feel
the slightest bit of guilt"), but the cue's scope ends where a new clause begins after a content
word: at a subordinator or at a finite verb ("Not hearing back would make me anxious": the cue
negates "hearing", not "anxious"); verbs that pass a negation down ("I don't think I'd be angry",
"I can't say I'd be thrilled": understatement, a denial) do not end it. "no" and "without" negate a
noun phrase only ("no guilt", "without a trace of fear", not "no one would blame me for being
angry"), up to :data:`NP_REACH` words. A cue that only looks like one is skipped ("no doubt",
"no wonder", "not only", "not just"). An emphatic form is no negation (:func:`emphasis`): a
negated comparison with "never" or "can't/couldn't" ("I have never been so scared", "I couldn't
be happier", "never felt more alive"), "can't help / couldn't stop", "... how <feeling>" ("I
can't tell you how relieved"), "didn't expect to be so ..." and a question expecting yes
("Wouldn't you be angry?").

A feeling taken back (:func:`taken_back`): a clause of nothing but a negation or a retraction and
filler words ("Angry? Not really.", "... consumed with remorse. Not.", "A twinge of jealousy? No
- scratch that") takes back the nearest clause before it that names a feeling, or, after a full
stop, that clause's sentence.

Irony (:func:`ironic_spans`): a sentence with an irony mark ("yeah right", "as if",
"sarcasm"), a verbless sentence opened by an interjection and closed by an adverb of mock
certainty ("Oh, delighted, obviously"), or "oh" directly before a feeling word ("Oh great").

An AI disowning feelings (:func:`disowned_spans`): the sentences of an AI's self-description
("As an AI, I don't experience fear ...") name no feeling of the respondent; a refusal scores 0
(the hand-scored set, rule 10).

Example:
    >>> from psyq.engine.kinds.scene.leas import tokens
    >>> words = tokens("I have never been so scared, and I wouldn't feel the slightest bit of guilt.")
    >>> negation_at(words, words.index("scared"), frozenset({"never", "n't"})).kind
    'emphatic'
    >>> negation_at(words, words.index("guilt"), frozenset({"never", "n't"})).kind
    'negated'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Literal

PUNCTUATION = frozenset(",.;:!?")
SENTENCE_ENDS = frozenset(".;:!?")
# Words that turn a clause: a negation before them does not reach past them ("not angry, just tired").
TURNS = frozenset({"but", "just", "only", "merely", "though", "although", "yet", "instead", "rather", "however",
                   "whereas", "except", "otherwise"})
COORDINATORS = frozenset({"and", "or", "so", "then", "plus"})
SUBJECTS = frozenset({"i", "i'd", "i'm", "i'll", "i've", "you", "you'd", "you're", "you'll", "he", "he'd", "he's",
                      "he'll", "she", "she'd", "she's", "she'll", "they", "they'd", "they're", "they'll", "we",
                      "we'd", "we're", "we'll", "it", "it'd", "it's", "it'll", "that", "that's", "that'd", "this",
                      "there's", "there'd"})
# Verbs that pass a negation down to the clause they take (neg-raising: "I don't think I'd be angry").
RAISERS = frozenset({"think", "thought", "believe", "believed", "suppose", "say", "said", "saying", "imagine",
                     "imagined", "expect", "expected", "reckon", "guess", "want", "wanted", "see", "seem", "pretend", "claim",
                     "seems", "seemed", "know", "knew", "realise", "realize", "realised", "realized"})
# A new clause begins at these after a content word ("Not hearing back would make me anxious").
SUBORDINATORS = frozenset({"because", "since", "when", "whenever", "if", "unless", "until", "while", "after",
                           "before", "which", "who", "whom", "where", "why", "what", "whether", "that", "once"})
FINITE = frozenset({"would", "will", "could", "might", "may", "must", "should", "shall", "can", "is", "was",
                    "were", "are", "am", "has", "had", "does", "did", "makes", "made", "make", "leaves", "left",
                    "leave", "got"})
# Words that are no content of their own between a cue and a feeling word.
FUNCTION = frozenset({"a", "an", "the", "be", "been", "being", "feel", "feels", "feeling", "felt", "get", "getting",
                      "go", "going", "seem", "look", "looks", "really", "even", "exactly", "quite", "very", "too",
                      "so", "that", "all", "at", "much", "any", "particularly", "necessarily", "actually",
                      "honestly", "probably", "overly", "terribly", "entirely", "completely", "remotely", "bit",
                      "slightest", "least", "little", "some", "more", "most", "like", "ever", "anything", "anyone",
                      "one", "of", "to", "in", "for", "with", "about", "by", "on", "it", "this", "me", "him", "her",
                      "them", "us", "you", "i", "he", "she", "they", "we", "my", "your", "his", "their", "our",
                      "its", "myself", "yourself", "himself", "herself", "themselves", "have", "having", "such",
                      "as", "either", "and", "or", "nor", "lot", "someone", "somebody", "person", "type", "kind",
                      "sort", "super", "remotely", "terribly", "awfully", "that", "there"})
NP_NEGATORS = frozenset({"no", "without"})
NP_REACH = 4          # "without a trace of fear": the noun phrase a "no"/"without" negates
WHOLE_AFTER_NO = frozenset({"way", "chance"})   # "no way I'd be happy" negates the clause
PSEUDO = {"no": frozenset({"doubt", "wonder", "matter", "question", "problem", "idea"}),
          "never": frozenset({"mind"}), "not": frozenset({"to"})}
CAN = frozenset({"could", "can", "ca"})
DEGREE = frozenset({"so", "such", "more", "this"})
STOP_HELP = frozenset({"stop", "help"})
AUXILIARIES = frozenset({"would", "could", "do", "does", "did", "is", "are", "was", "were", "will", "wo", "ca",
                         "should", "have", "has", "had"})
_CLITIC = re.compile(r"^[a-z]+'(?:d|ll|re|ve|m|s)$")

# A feeling taken back: a clause of these words only, with a cue or a retraction in it.
RETRACT_CUES = frozenset({"not", "no", "nope", "nah", "never"})
RETRACT_PHRASES = (("scratch", "that"), ("strike", "that"), ("take", "that", "back"), ("take", "it", "back"),
                   ("scratch", "it"))
RETRACT_FILLER = frozenset({"really", "at", "all", "exactly", "quite", "particularly", "much", "so", "that", "in",
                            "the", "slightest", "least", "bit", "a", "actually", "honestly", "though", "well", "i",
                            "i'm", "am", "it", "it's", "is", "was", "would", "do", "does", "did", "n't", "think",
                            "either", "way", "wait", "hmm", "um", "okay", "ok", "oh", "of", "course", "very",
                            "too", "entirely", "i'd", "say", "actually", "anymore", "remotely", "even", "one",
                            "bit", "mind", "you"})

# Irony: marks anywhere in a sentence; an interjection plus an adverb of mock certainty.
IRONY_MARKS = (("yeah", "right"), ("as", "if"), ("sarcasm",), ("sarcastic",), ("sarcastically",))
INTERJECTIONS = frozenset({"oh", "ah", "ooh", "wow", "gee", "yay", "whoopee"})
MOCK_CERTAINTY = frozenset({"obviously", "clearly", "naturally", "totally", "sure", "surely", "course"})

# An AI's self-description, on the tokens joined by spaces ("don't" is "do n't").
_AI = r"(?:ai|artificial intelligence|(?:large )?language model|ai (?:language )?model|ai assistant|" \
      r"virtual assistant|chatbot|computer program|machine)"
DISOWNING = re.compile(
    rf"\bas an? {_AI}\b"
    rf"|\bi(?:'m| am) (?:just |only |merely |simply )?an? {_AI}\b"
    r"|\bi (?:do n't|do not|dont|ca n't|cannot|cant|can not) (?:really |actually )?(?:have|experience|feel|possess) "
    r"(?:any )?(?:real |personal |actual |human |genuine )?(?:feelings|emotions)\b")


_CASED = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|n't|[,.;:!?]")


def cased_tokens(text: str) -> list[str]:
    """Words and clause punctuation in their own case, "n't" split off ("wasn't": "was" + "n't"),
    a dash or an ellipsis read as the clause break it is; :func:`.leas.tokens` gives them in lower
    case, and :mod:`.leas_people` tells a name by its capital.

    Example:
        >>> cased_tokens("Sofia wouldn't mind – honestly…")
        ['Sofia', 'would', "n't", 'mind', ',', 'honestly', '.']
    """
    text = text.replace("’", "'").replace("…", ".").replace("—", ",").replace("–", ",").replace("--", ",")
    text = re.sub(r"(?<=\s)-(?=\s)", ",", text)
    text = re.sub(r"([a-z])n't\b", r"\1 n't", text, flags=re.IGNORECASE)
    return _CASED.findall(text)


@dataclass(frozen=True)
class Negation:
    """What a cue before a feeling word does to it: ``negated``; ``emphatic`` (an emphatic form,
    not a denial); ``out_of_scope`` (a cue in the clause whose scope ends before the word)."""

    kind: Literal["negated", "emphatic", "out_of_scope"]
    cue: int
    why: str


def sentences(words: list[str]) -> list[tuple[int, int]]:
    """(start, end) of each sentence: runs of words between :data:`SENTENCE_ENDS`.

    Example:
        >>> sentences(["angry", "?", "not", "really", "."])
        [(0, 1), (2, 4)]
    """
    return _spans(words, SENTENCE_ENDS)


def clauses(words: list[str]) -> list[tuple[int, int]]:
    """(start, end) of each run of words between any punctuation (commas too)."""
    return _spans(words, PUNCTUATION)


def _spans(words: list[str], breaks: frozenset[str]) -> list[tuple[int, int]]:
    spans, start = [], 0
    for k, w in enumerate(words + ["."]):
        if w in breaks or k == len(words):
            if k > start:
                spans.append((start, k))
            start = k + 1
    return spans


def sentence_of(words: list[str], i: int) -> tuple[int, int]:
    """The sentence span holding word `i`."""
    return next(((s, e) for s, e in sentences(words) if s <= i < e), (i, i + 1))


def clause_start(words: list[str], i: int) -> int:
    """The first word of the clause of word `i` (see the module docstring: punctuation, a turn,
    "and/or/so" + a subject)."""
    k = i
    while k > 0:
        w = words[k - 1]
        if w in PUNCTUATION or w in TURNS or (w in COORDINATORS and words[k] in SUBJECTS):
            return k
        k -= 1
    return 0


def _pseudo(words: list[str], k: int) -> bool:
    nxt = words[k + 1] if k + 1 < len(words) else ""
    return nxt in PSEUDO.get(words[k], ())


def negation_at(words: list[str], start: int, negators: frozenset[str], skip: frozenset[int] = frozenset(),
                comparative: Callable[[str], bool] = lambda w: False) -> Negation | None:
    """What the nearest negation cue before word `start` in its clause does to it (None: no cue).
    `skip`: positions that are no cue (a cue inside a listed phrase, "couldn't breathe");
    `comparative`: whether a word is a comparative form of a feeling word ("happier").

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("Not hearing back would make me anxious")
        >>> negation_at(w, w.index("anxious"), frozenset({"not"})).kind
        'out_of_scope'
    """
    first = clause_start(words, start)
    cue = next((k for k in range(start - 1, first - 1, -1)
                if words[k] in negators and k not in skip and not _pseudo(words, k)), None)
    if cue is None:
        return None
    between = words[cue + 1:start]
    said = words[cue]
    if said in NP_NEGATORS and not (between and between[0] in WHOLE_AFTER_NO):
        if len(between) > NP_REACH or any(w in SUBJECTS or w in FINITE or _CLITIC.match(w) for w in between):
            return Negation("out_of_scope", cue, f"'{said}' negates a noun phrase only")
        return Negation("negated", cue, f"'{said}' + noun phrase")
    emphatic = emphasis(words, cue, start, comparative)
    if emphatic:
        return Negation("emphatic", cue, emphatic)
    content = None
    for w in between[1:] if said == "no" and between and between[0] in WHOLE_AFTER_NO else between:
        if w in SUBORDINATORS or w in FINITE or _CLITIC.match(w):
            if content:
                return Negation("out_of_scope", cue, f"'{said}' reaches '{content}', not past '{w}'")
        elif w not in FUNCTION and w not in RAISERS and w not in negators:
            content = content or w
    return Negation("negated", cue, f"'{said}' in its clause")


def emphasis(words: list[str], cue: int, start: int, comparative: Callable[[str], bool] = lambda w: False) -> str | None:
    """Why the cue at `cue` is emphasis rather than a denial of the word at `start`, or None.

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("I couldn't be happier")
        >>> emphasis(w, w.index("n't"), w.index("happier"), lambda word: word == "happier")
        "a negated comparison ('never so', 'couldn't be happier')"
    """
    between = set(words[cue + 1:start])
    before = words[cue - 1] if cue > 0 else ""
    said = words[cue]
    strong = said in ("never", "cannot", "cant", "couldnt") or (said in ("n't", "not") and before in CAN)
    if strong and (between & DEGREE or comparative(words[start])):
        return "a negated comparison ('never so', 'couldn't be happier')"
    if strong and between & STOP_HELP:
        return "'can't help / couldn't stop' affirms"
    if "how" in between:
        return "'... how <feeling>' affirms the feeling"
    if said in ("n't", "not") and before == "did" and between & RAISERS and between & (DEGREE | {"that", "how"}):
        return "'didn't expect to be so ...' affirms"
    first = clause_start(words, cue)
    if (said == "n't" and cue == first + 1 and before in AUXILIARIES and cue + 1 < len(words)
            and words[cue + 1] in SUBJECTS and _sentence_end(words, start) == "?"):
        return "a question expecting yes ('Wouldn't you be angry?')"
    return None


def _sentence_end(words: list[str], i: int) -> str:
    return next((w for w in words[i:] if w in SENTENCE_ENDS), "")


def _is_retraction(part: list[str]) -> bool:
    phrase_words = set()
    for phrase in RETRACT_PHRASES:
        n = len(phrase)
        if any(tuple(part[k:k + n]) == phrase for k in range(len(part) - n + 1)):
            phrase_words |= set(phrase)
    cued = phrase_words or RETRACT_CUES & set(part)
    return bool(cued) and all(w in RETRACT_FILLER or w in RETRACT_CUES or w in phrase_words for w in part)


def taken_back(words: list[str], names_feeling: Callable[[int, int], bool]) -> list[tuple[int, int, int]]:
    """The spans taken back by a following clause of negation or retraction only, as
    ``(start, end, cue)``: the nearest earlier clause for which `names_feeling(start, end)`, or after
    a full stop (or "?", "!") the whole sentence of that clause.

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("A twinge of jealousy? No - scratch that, relief.")
        >>> [(w[s:e], w[c]) for s, e, c in taken_back(w, lambda s, e: "jealousy" in w[s:e])]
        [(['a', 'twinge', 'of', 'jealousy'], 'no'), (['a', 'twinge', 'of', 'jealousy'], 'scratch')]
    """
    spans = clauses(words)
    out = []
    for j, (s, e) in enumerate(spans):
        if not _is_retraction(words[s:e]):
            continue
        for ps, pe in reversed(spans[:j]):
            if names_feeling(ps, pe):
                if s > 0 and words[s - 1] in SENTENCE_ENDS:
                    ps = sentence_of(words, ps)[0]
                out.append((ps, pe, s))
                break
    return out


def ironic_spans(words: list[str], term_starts: set[int]) -> list[tuple[int, int]]:
    """Spans whose feeling words are said in irony (see the module docstring); `term_starts`: the
    positions where a lexicon term begins ("Oh great": the term right after "oh").

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("Oh, delighted, obviously. I'd be fuming.")
        >>> [w[s:e] for s, e in ironic_spans(w, {2, 9})]
        [['oh', ',', 'delighted', ',', 'obviously']]
    """
    out = []
    for s, e in sentences(words):
        part = words[s:e]
        plain = [w for w in part if w not in PUNCTUATION]
        if not plain:
            continue
        marked = any(tuple(part[k:k + len(m)]) == m for m in IRONY_MARKS for k in range(len(part)))
        mock = plain[0] in INTERJECTIONS and bool(MOCK_CERTAINTY & set(plain)) and not SUBJECTS & set(plain)
        if marked or mock:
            out.append((s, e))
        elif words[s] == "oh" and s + 1 in term_starts:
            out.append((s + 1, s + 2))
    return out


def disowned_spans(words: list[str]) -> list[tuple[int, int]]:
    """The sentences in which an AI says it has no feelings ("As an AI, I don't experience fear").

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("As an AI, I don't feel fear. People would be scared.")
        >>> [w[s:e] for s, e in disowned_spans(w)]
        [['as', 'an', 'ai', ',', 'i', 'do', "n't", 'feel', 'fear']]
    """
    out = []
    for s, e in sentences(words):
        if DISOWNING.search(" ".join(words[s:e])):
            out.append((s, e))
    return out
