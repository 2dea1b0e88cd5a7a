"""The clause around an emotion word, read as a hand scorer reads it, for the LEAS scorer
(:mod:`.leas`): whether a negation reaches the word or only adds emphasis, whether two negations
cancel, and whether the feeling is taken back. Words are the lower-case tokens of
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
"I can't say I'd be thrilled": understatement, a denial) do not end it, and a clause headed by
"anything" keeps it ("not ... anything resembling what you'd call calm"). "no", "without" and
"nothing" negate a noun phrase only ("no guilt", "without a trace of fear", not "no one would
blame me for being angry"), up to :data:`NP_REACH` words, and what one would call it ("nothing
I'd call pride"). A cue that only looks like one is skipped ("no doubt",
"no wonder", "not only", "not just"). An emphatic form is no negation (:func:`emphasis`): a
negated comparison with "never" or "can't/couldn't" ("I have never been so scared", "I couldn't
be happier", "never felt more alive"), "can't help / couldn't stop", "... how <feeling>" ("I
can't tell you how relieved"), "didn't expect to be so ..." and a question expecting yes
("Wouldn't you be angry?").

A feeling taken back (:func:`taken_back`): a clause of nothing but a negation or a retraction and
filler words ("Angry? Not really.", "... consumed with remorse. Not.", "A twinge of jealousy? No
- scratch that") takes back the nearest clause before it that names a feeling, or, after a full
stop, that clause's sentence.

A negation after its term (:func:`named_otherwise`: "Relieved is not the word I'd use"), two
negations that cancel (:func:`cancelling`: "I'd be lying if I said I wasn't nervous"), and
parenthetical comments passed over (:func:`asides`: "I would not, I think, have felt ...") read
word classes of the lexicon (:class:`Cues`). Irony and an AI's refusal are in :mod:`.leas_stance`.

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
from dataclasses import dataclass, field
from typing import Callable, Literal, Mapping

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
# Possessives: any reads for "my" in a listed phrase ("a lump in her throat"); before a body part, a body.
POSSESSIVES = frozenset({"my", "her", "his", "their", "your", "our"})
NP_NEGATORS = frozenset({"no", "without", "nothing", "zero"})
NP_REACH = 4          # "without a trace of fear": the noun phrase a "no"/"without" negates
WHOLE_AFTER_NO = frozenset({"way", "chance"})   # "no way I'd be happy" negates the clause
# A negator before these words is none: "no doubt", "never mind"; "nothing short of delighted" says
# the feeling ("nothing but relief" does too: "but" opens a clause of its own).
PSEUDO = {"no": frozenset({"doubt", "wonder", "matter", "question", "problem", "idea", "small", "little"}),   # litotes
          "nothing": frozenset({"short"}),
          "never": frozenset({"mind"}), "not": frozenset({"to"})}
CAN = frozenset({"could", "can", "ca"})
DEGREE = frozenset({"so", "such", "more", "this", "as"})   # "never been as frightened"
STOP_HELP = frozenset({"stop", "help"})
COPULA_RUN = frozenset({"is", "was", "'s", "would", "will", "be", "are", "were", "really", "probably", "certainly",
                        "just", "honestly", "definitely"})
NAMING_PATH = frozenset({"how", "what", "quite", "exactly", "right", "best", "first", "one", "word", "i'd", "i"})
AUXILIARIES = frozenset({"would", "could", "do", "does", "did", "is", "are", "was", "were", "will", "wo", "ca",
                         "should", "have", "has", "had"})
_CLITIC = re.compile(r"^[a-z]+'(?:d|ll|re|ve|m|s)$")
ASIDE_SUBJECTS = frozenset({"i", "i'm", "i'd", "you", "we", "i'll"})
ASIDE_FILLER = frozenset({"would", "do", "really", "honestly", "am", "guess", "must", "like", "to"})   # "I'd like to think"
# Verbs of opinion that, after a first-person subject, frame what follows as the respondent's guess
# ("I imagine she'd feel pleased", "and I suspect a little relieved"): the guesser feels nothing there.
# Not the lexicon's comment_words, though most words are in both: those end a comment between commas
# ("..., I think, ..."), where "know", "mean" or "hope" comment too but frame no guess after them.
STANCE_VERBS = frozenset({"think", "imagine", "suspect", "guess", "reckon", "suppose", "expect", "bet", "believe",
                          "say", "figure", "gather"})
# Words a second negation may stand behind and still hold the first in its scope
# ("I'd be lying if I said I wasn't ...", "It's not that I wouldn't be ...", "It's not as if / like she
# wouldn't be ..."; the subject right after "if/that/like" may be any word: "not like Ravi wouldn't").
CANCEL_PATH = frozenset({"if", "that", "to", "be", "been", "i", "you", "it", "it's", "that's", "say", "said", "like",
                         "as"})

# A feeling taken back: a clause of these words only, with a cue or a retraction in it.
RETRACT_CUES = frozenset({"not", "no", "nope", "nah", "never", "hardly", "scarcely"})
RETRACT_PHRASES = (("scratch", "that"), ("strike", "that"), ("take", "that", "back"), ("take", "it", "back"),
                   ("scratch", "it"))
# These take back only when they open their clause: "He'd feel guilty? Doubt it." does; "..., though I
# doubt it" is a hedge (the writers of sets f and k differ here).
RETRACT_OPENERS = (("doubt", "it"), ("i", "doubt", "it"))
RETRACT_FILLER = frozenset({"really", "at", "all", "exactly", "quite", "particularly", "much", "so", "that", "in",
                            "the", "slightest", "least", "bit", "a", "actually", "honestly", "though", "well", "i",
                            "i'm", "am", "it", "it's", "is", "was", "would", "do", "does", "did", "n't", "think",
                            "either", "way", "wait", "hmm", "um", "okay", "ok", "oh", "of", "course", "very",
                            "too", "entirely", "i'd", "say", "actually", "anymore", "remotely", "even", "one",
                            "bit", "mind", "you", "me", "for", "myself", "probably", "maybe", "perhaps", "but", "frankly"})



@dataclass(frozen=True)
class Cues:
    """The lexicon's data the clause rules read: its ``word_classes`` (name -> phrases, each a tuple
    of words), its ``valence`` (a level-3 family or a word -> +1 or -1) and its negators. A lexicon
    without them gives empty classes, and the rules that read them do nothing.

    Example:
        >>> cues = Cues({"irony_markers": frozenset({("i'm", "sure"), ("obviously",)})})
        >>> cues.match("irony_markers", ["grateful", ",", "i'm", "sure"], 2), sorted(cues.words("irony_markers"))
        (2, ['obviously'])
    """

    classes: Mapping[str, frozenset[tuple[str, ...]]] = field(default_factory=dict)
    valence: Mapping[str, int] = field(default_factory=dict)
    negators: frozenset[str] = frozenset()

    def words(self, name: str) -> frozenset[str]:
        """The one-word entries of class `name`."""
        return frozenset(p[0] for p in self.classes.get(name, ()) if len(p) == 1)

    def match(self, name: str, words: list[str], k: int) -> int:
        """The length of the longest phrase of class `name` that starts at ``words[k]`` (0: none)."""
        return max((len(p) for p in self.classes.get(name, ()) if tuple(words[k:k + len(p)]) == p), default=0)

    def find(self, name: str, words: list[str], start: int = 0, end: int | None = None) -> int | None:
        """Where the first phrase of class `name` in ``words[start:end]`` begins (None: nowhere)."""
        end = len(words) if end is None else end
        return next((k for k in range(start, end) if self.match(name, words[:end], k)), None)


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
    not a denial); ``out_of_scope`` (a cue in the clause whose scope ends before the word);
    ``affirmed`` (a negated denial, :func:`cancelling`)."""

    kind: Literal["negated", "emphatic", "out_of_scope", "affirmed"]
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


def clause_start(words: list[str], i: int, aside: frozenset[int] = frozenset()) -> int:
    """The first word of the clause of word `i` (see the module docstring: punctuation, a turn,
    "and/or/so" + a subject); a parenthetical comment between commas (`aside`: its positions, with
    the comma before it, :func:`asides`) is passed over: "I would not, I think, have ..."."""
    k = i
    while k > 0:
        w = words[k - 1]
        if w == "," and k - 2 in aside:
            k -= 2
            while k - 1 in aside:
                k -= 1
            continue
        if w in PUNCTUATION or w in TURNS or (w in COORDINATORS and words[k] in SUBJECTS):
            return k
        k -= 1
    return 0


def asides(words: list[str], cues: Cues) -> frozenset[int]:
    """The positions of parenthetical comments, with the comma before each: a clause after a comma
    made of a first-person subject (or "you") and a word of ``comment_words``, with at most
    "would/do/really" between, followed by punctuation or the end ("..., I'm sure, ...", "..., I
    think, ...", "..., you know, ..."); and a first-person subject with a verb of opinion
    (:data:`STANCE_VERBS`) framing what follows ("I imagine she'd feel pleased", "I'd guess some
    awkwardness"). They say what the respondent thinks of the sentence, not who feels what
    (Quirk et al. 1985 call the first kind comment clauses).

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("She'd be relieved, I'm sure, and a bit embarrassed.")
        >>> [w[k] for k in sorted(asides(w, Cues({"comment_words": frozenset({("sure",)})})))]
        [',', "i'm", 'sure']
    """
    comment = cues.words("comment_words")
    out: set[int] = set()
    for s, e in clauses(words):
        part = words[s:e]
        if s == 0 or words[s - 1] != "," or not 2 <= len(part) <= 4 or (e < len(words) and words[e] not in PUNCTUATION):
            continue
        if part[0] in ASIDE_SUBJECTS and part[-1] in comment and all(w in ASIDE_FILLER for w in part[1:-1]):
            out.update(range(s - 1, e))
    for k, w in enumerate(words):     # a framing guess: "I imagine she'd ...", "I'd guess some awkwardness"
        j = k + 1
        while w in ASIDE_SUBJECTS and j < len(words) and words[j] in ASIDE_FILLER - {"guess"}:
            j += 1
        if w in ASIDE_SUBJECTS and j + 1 < len(words) and words[j] in STANCE_VERBS and words[j + 1] not in PUNCTUATION:
            out.update(range(k, j + 1))
    return frozenset(out)


def _far_from(words: list[str], k: int) -> bool:
    """Whether word `k` is the "from" of "far from", which denies the state after it ("far from
    worried" = not worried at all; ours)."""
    return words[k] == "from" and k > 0 and words[k - 1] == "far"


def _pseudo(words: list[str], k: int) -> bool:
    nxt = words[k + 1] if k + 1 < len(words) else ""
    return nxt in PSEUDO.get(words[k], ()) or words[k:k + 3] == ["not", "a", "little"]   # litotes: = very


def negation_at(words: list[str], start: int, negators: frozenset[str], skip: frozenset[int] = frozenset(),
                comparative: Callable[[str], bool] = lambda w: False, cues: Cues | None = None,
                aside: frozenset[int] = frozenset()) -> Negation | None:
    """What the nearest negation cue before word `start` in its clause does to it (None: no cue).
    `skip`: positions that are no cue (a cue inside a listed phrase, "couldn't breathe");
    `comparative`: whether a word is a comparative form of a feeling word ("happier"); `cues`:
    the lexicon's word classes (``naming_words``: "nothing I'd call pride"; ``polarity_items``:
    "not ... anything resembling what you'd call calm" keeps its scope through the clause that
    the "anything" heads; ``denials``: :func:`cancelling`); `aside`: parenthetical comments
    (:func:`asides`), passed over. "Anything but" is a cue too ("anything but calm").

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("Not hearing back would make me anxious")
        >>> negation_at(w, w.index("anxious"), frozenset({"not"})).kind
        'out_of_scope'
    """
    cues = cues or Cues()
    first = clause_start(words, start, aside)
    cue = next((k for k in range(start - 1, first - 1, -1)
                if (words[k] in negators or _far_from(words, k)) and k not in skip and k not in aside
                and not _pseudo(words, k)), None)
    if cue is None and first > 1 and _anything_but(words, first - 1, negators):   # "but" opens the clause of "calm"
        cue = first - 1
    if cue is None:
        return None
    between = [w for k, w in enumerate(words[cue + 1:start], cue + 1) if k not in aside]
    said = words[cue]
    if said in NP_NEGATORS and not (between and between[0] in WHOLE_AFTER_NO):
        if cues.words("naming_words") & set(between[-2:]) and not COORDINATORS & set(between):
            return Negation("negated", cue, f"'{said}' + what one would call it ('nothing I'd call pride')")
        if len(between) > NP_REACH or any(w in SUBJECTS or w in FINITE or w in COORDINATORS or _CLITIC.match(w)
                                          for w in between):
            return Negation("out_of_scope", cue, f"'{said}' negates a noun phrase only")
        return Negation("negated", cue, f"'{said}' + noun phrase")
    if any(w == "as" and "much" in between[:j] for j, w in enumerate(between)):
        return Negation("out_of_scope", cue, "'not X so much as Y' says Y")
    emphatic = emphasis(words, cue, start, comparative)
    if emphatic:
        return Negation("emphatic", cue, emphatic)
    content, polar = None, None
    for k, w in enumerate(between[1:] if said == "no" and between and between[0] in WHOLE_AFTER_NO else between):
        if w in cues.words("polarity_items"):
            polar = k
        if w in SUBORDINATORS or w in FINITE or _CLITIC.match(w):
            if content and not (polar is not None and content[1] == polar + 1):
                return Negation("out_of_scope", cue, f"'{said}' reaches '{content[0]}', not past '{w}'")
        elif w not in FUNCTION and w not in RAISERS and w not in negators:
            content = content or (w, k)
    outer = cancelling(words, cue, negators, cues.words("denials"))
    if outer is not None:
        return Negation("affirmed", cue, f"'{words[outer]}' denies the denial '{said}'")
    return Negation("negated", cue, f"'{said}' in its clause")


CORRECTION_OPENERS = frozenset({"well", "ok", "okay", "actually", "no", "wait", "hmm", "um", "so", "not", "maybe"})


def corrected(found: list, words: list[str]) -> None:
    """A feeling named, then denied at the start of a later sentence, is taken back: "Furious and
    disappointed. Well, not furious, it's only cake." (a self-correction; a denial inside a
    sentence, "happy for her but not happy about the cost", corrects nothing). `found`: the
    scorer's terms (:class:`.leas.Found`: ``start``, ``name``, ``drop``), marked in place."""
    for g in found:
        s = sentence_of(words, g.start)[0]
        opener = [w for w in words[s:g.start] if w not in PUNCTUATION]
        if "negation" in g.drop and "not" in opener and set(opener) <= CORRECTION_OPENERS:
            for f in found:
                if f.start < s and f.name == g.name and not f.drop:
                    f.drop.add("taken_back")


def raised_negations(words: list[str]) -> list[tuple[int, int]]:
    """The spans a negated verb of opinion negates across a parenthetical: "I don't imagine, given
    how busy he is, that he'd feel any shame" is "I imagine he wouldn't" (negation raising: Horn
    1989, A Natural History of Negation, ch. 5). Only where a comma follows the verb (and "that")
    before its clause begins, so the clause-bound cue of :func:`negation_at` cannot reach it; the span
    runs from the clause after the parenthetical to the end of the sentence or a turn ("but").

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("I don't think that, whatever it is, she'd be anxious; she'd be busy.")
        >>> [w[s:e] for s, e in raised_negations(w)]
        [["she'd", 'be', 'anxious']]
    """
    out = []
    for k, w in enumerate(words[:-1]):
        if w not in RAISERS or k < 1 or words[k - 1] not in ("n't", "not"):
            continue
        j = k + 1 + (words[k + 1] == "that")
        if j >= len(words) or words[j] != ",":
            continue
        close = next((i for i in range(j + 1, len(words)) if words[i] in PUNCTUATION), None)
        if close is None or words[close] != ",":
            continue
        start = close + 1 + (close + 1 < len(words) and words[close + 1] == "that")
        end = next((i for i in range(start, len(words)) if words[i] in SENTENCE_ENDS or words[i] in TURNS), len(words))
        out.append((start, end))
    return out


def _anything_but(words: list[str], k: int, negators: frozenset[str]) -> bool:
    """ "anything but calm" = not calm at all: "but" after "anything" is a negation cue, unless a
    negation stands before the "anything" ("I wouldn't feel anything but sadness" = only sadness)."""
    return (words[k] == "but" and k > 0 and words[k - 1] == "anything"
            and not negators & set(words[max(0, k - 7):k - 1]))


def cancelling(words: list[str], cue: int, negators: frozenset[str], denials: frozenset[str]) -> int | None:
    """Where a second negation or a word of denial (``denials``: "lying", "deny") stands whose
    scope holds the cue at `cue`, so that the two cancel and affirm (Wikipedia, "Double negative":
    in standard English two negatives in one scope affirm, litotes): "I'd be lying if I said I
    wasn't moved", "I won't pretend I wouldn't be jealous", "It's not that I wouldn't be
    grateful". Between the two only subjects, auxiliaries, verbs that pass a negation down
    (:data:`RAISERS`) and "if/that" may stand; "no" is no such negation ("No I wasn't angry").

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("I'd be lying if I said I wasn't nervous")
        >>> w[cancelling(w, w.index("n't"), frozenset({"n't"}), frozenset({"lying"}))]
        'lying'
    """
    for k in range(cue - 1, -1, -1):
        w = words[k]
        if (w in negators and w not in NP_NEGATORS and not _pseudo(words, k)) or w in denials:
            return k
        if w in WHOLE_AFTER_NO and k > 0 and words[k - 1] == "no":    # "There's no way she wouldn't be ..."
            return k - 1
        if not (w in CANCEL_PATH or w in RAISERS or w in SUBJECTS or w in AUXILIARIES or w in FINITE or w in CAN
                or _CLITIC.match(w) or (k > 0 and words[k - 1] in ("if", "that", "like") and words[k + 1] in AUXILIARIES)):
            return None
    return None


def named_otherwise(words: list[str], end: int, cues: Cues) -> int | None:
    """Where the negation stands that denies the feeling word ending at `end` from after it: "X is
    not the word I'd use", "X isn't how I'd put it", "X wouldn't be what I'd feel" (a cue after
    its term, as NegEx's post-negation triggers are; Chapman et al. 2001): a copula, a negation,
    then within a few words of the same clause a word of ``naming_words``; or a copula and "the
    last thing" ("Guilty is the last thing she'd feel").

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("Relieved is not the word I'd use.")
        >>> named_otherwise(w, 1, Cues({"naming_words": frozenset({("word",)})}, negators=frozenset({"not"})))
        2
    """
    naming = cues.words("naming_words")
    k = end
    while k < len(words) and words[k] in COPULA_RUN:
        k += 1
    if k > end and words[k:k + 3] == ["the", "last", "thing"]:   # "Guilty is the last thing she'd feel"
        return k
    if not naming or k == end or k >= len(words) or words[k] not in cues.negators:
        return None
    for w in words[k + 1:k + 8]:
        if w in naming:
            return k
        if w in PUNCTUATION or not (w in FUNCTION or w in SUBJECTS or w in FINITE or w in NAMING_PATH
                                    or _CLITIC.match(w)):
            return None
    return None


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
    if (strong or between & CAN) and between & STOP_HELP:   # also raised: "I don't think I could stop crying"
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
    for phrase in RETRACT_OPENERS:
        if tuple(part[:len(phrase)]) == phrase:
            phrase_words |= set(phrase)
    cued = phrase_words or RETRACT_CUES & set(part)
    return bool(cued) and all(w in RETRACT_FILLER or w in RETRACT_CUES or w in phrase_words for w in part)


def _reach(words: list[str], here: int, names_feeling: Callable[[int, int], bool]) -> int:
    """The start of the earliest sentence a retraction in the sentence starting at `here` takes back
    from: the one before it, or further back over sentences that name no feeling and are retraction
    words only or a one- or two-word question ("Annoyed? Me? Never.", "Sad? Confused? Not in the
    slightest")."""
    start = here
    while start > 0:
        start, end = _sentence_before(words, start)
        plain = [w for w in words[start:end] if w not in PUNCTUATION]
        if names_feeling(start, end) or not (_short_question(words, start) or all(w in RETRACT_FILLER for w in plain)):
            break
    return start


def _sentence_before(words: list[str], start: int) -> tuple[int, int]:
    """The sentence before the one starting at `start` (past its closing marks: "?", "...")."""
    j = start - 1
    while j > 0 and words[j] in SENTENCE_ENDS:
        j -= 1
    return sentence_of(words, j)


def _short_question(words: list[str], start: int) -> bool:
    """Whether the sentence starting at `start` is a question of one or two words ("Angry?")."""
    s, e = sentence_of(words, start)
    return len([w for w in words[s:e] if w not in PUNCTUATION]) <= 2 and "?" in words[s:e + 1]


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
        reach = _reach(words, sentence_of(words, s)[0], names_feeling)
        for ps, pe in reversed(spans[:j]):
            if ps < reach:     # "I'd be seeing red. ... takes the credit? Yeah, no.": too far back
                break
            if names_feeling(ps, pe):
                if s > 0 and words[s - 1] in SENTENCE_ENDS:
                    ps = sentence_of(words, ps)[0]
                out.append((ps, pe, s))
                while ps > 0 and _short_question(words, ps):    # "Hurt? Angry? Not in the least": the whole list
                    ps, e_before = _sentence_before(words, ps)
                    if not (_short_question(words, ps) and names_feeling(ps, e_before)):
                        break
                    out.append((ps, e_before, s))
                break
    return out
