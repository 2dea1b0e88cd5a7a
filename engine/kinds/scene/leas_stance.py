"""How the respondent stands to the feelings an answer names, for the LEAS scorer (:mod:`.leas`):
said in irony, or disowned or refused by an AI. Words are the lower-case tokens of
:func:`.leas.tokens`; sentences and clauses as :mod:`.leas_clauses` reads them.

The LEAS scores the words chosen to describe the feelings of the person asked about (Lane et al.
1990); an ironic "thrilled" describes no thrill, and an AI that disowns feelings ("As an AI, I
don't experience fear") describes none: the hand-scored set psyq checks itself against scores a
refusal 0 (``tests/data/leas_validation_README.md``, rule 10).

Irony (:func:`ironic_spans`): a sentence with an irony mark ("yeah right", "as if",
"sarcasm"), a verbless sentence opened by an interjection and closed by an adverb of mock
certainty ("Oh, delighted, obviously"), or "oh" directly before a feeling word ("Oh great"); and
a sentence whose feelings a later sentence corrects with the contrary (:func:`contrasted_irony`:
"Grateful, I'm sure. Mostly I'd be irritated."); and the sentences after an ironic one that keep
up its valence (:func:`continued_irony`: "Oh, marvellous. Really, I couldn't be happier.").

An AI disowning feelings (:func:`disowned_spans`): in an answer with an AI's self-description,
every sentence up to a frame that imagines having feelings ("If I were in this situation, I'd be
anxious"); the scorer keeps the feelings there that are the other person's ("I can't feel
anything, but your friend would feel proud"). A refusal to guess (:func:`refused_spans`): the
feelings listed after "I can't guess whether ..." are attributed to nobody.

Example:
    >>> from psyq.engine.kinds.scene.leas import tokens
    >>> w = tokens("Oh, delighted, obviously. I'd be fuming.")
    >>> [w[s:e] for s, e in ironic_spans(w, {2, 9})]
    [['oh', ',', 'delighted', ',', 'obviously']]
"""

from __future__ import annotations

import re

from psyq.engine.kinds.scene.leas_clauses import PUNCTUATION, SUBJECTS, TURNS, Cues, clause_start, sentences

# Irony: marks anywhere in a sentence; an interjection plus an adverb of mock certainty.
IRONY_MARKS = (("yeah", "right"), ("as", "if"), ("sarcasm",), ("sarcastic",), ("sarcastically",))
INTERJECTIONS = frozenset({"oh", "ah", "ooh", "wow", "gee", "yay", "whoopee"})
MOCK_CERTAINTY = frozenset({"obviously", "clearly", "naturally", "totally", "sure", "surely", "course"})
# "As if" marks irony only where it opens a sentence ("As if he'd care."), not in "act as if".
OPENING_MARKS = frozenset({("as", "if")})
# Adverbs of mock certainty that, anywhere in a sentence opened by an interjection, make it ironic also
# with a subject ("Oh, I'd be thrilled, obviously."; "Oh, he'd be mortified, I'm sure."); "of course" and
# "totally" are left sincere.
IRONIC_CERTAINTY = frozenset({"obviously", "clearly", "naturally", "surely"})
# A sentence of an irony mark alone ("As if.", "Yeah, right.") is a retort to the sentence before it.
RETORT_WORDS = frozenset({w for mark in IRONY_MARKS for w in mark} | {"oh", "yeah", "ha", "haha", "sure"})

# An AI's self-description, on the tokens joined by spaces ("don't" is "do n't").
_AI = r"(?:ai|artificial intelligence|(?:large )?language model|ai (?:language )?model|ai assistant|" \
      r"virtual assistant|chatbot|computer program|machine)"
_OWN = r"(?:any )?(?:real |personal |actual |human |genuine |true )?(?:feelings|emotions)"
DISOWNING = re.compile(
    rf"\b(?:as|being) an? {_AI}\b"
    rf"|\bi(?:'m| am) (?:just |only |merely |simply )?an? {_AI}\b"
    r"|\bi (?:do n't|do not|dont|ca n't|cannot|cant|can not) (?:really |actually |truly )?(?:have|experience|feel|possess) "
    rf"{_OWN}\b"
    rf"|\bi (?:have|possess) no {_OWN}\b|\bwithout {_OWN} of (?:my|its) own\b"
    rf"|\bi(?:'m| am) (?:not capable|incapable|unable) of (?:feeling|having|experiencing) (?:{_OWN}|anything)\b")


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
        marked = any(_has(plain, m) if m not in OPENING_MARKS else tuple(plain[:len(m)]) == m for m in IRONY_MARKS)
        # An interjection with mock certainty: without a subject ("Oh, delighted, of course"); with one, only
        # "sure" right after it, "I'm sure" or an adverb of IRONIC_CERTAINTY ("Oh sure, I'd be overjoyed", "Oh,
        # he'd be mortified, I'm sure": an interjection and an irony marker together, Burgers, van Mulken &
        # Schellens 2012); "Oh, of course she'd be relieved" is left sincere.
        mock = plain[0] in INTERJECTIONS and (bool(MOCK_CERTAINTY & set(plain)) and not SUBJECTS & set(plain)
                                              or plain[1:2] == ["sure"] or bool(IRONIC_CERTAINTY & set(plain))
                                              or _has(plain, ("i'm", "sure")))
        if marked or mock:
            out.append((s, e))
            before = [span for span in sentences(words) if span[1] <= s]
            if marked and set(plain) <= RETORT_WORDS and before:
                out.append(before[-1])    # "Riddled with guilt, no doubt. Yeah, right.": the retort unsays the sentence before
        elif words[s] == "oh" and s + 1 in term_starts:
            out.append((s + 1, s + 2))
        elif len(plain) == 2 and plain[0] == "oh" and words[s + 1] == "," and s + 2 in term_starts:
            out.append((s + 2, s + 3))   # "Oh, marvellous." said of a bad turn, as "Oh great"
    return out


def _has(part: list[str], phrase: tuple[str, ...]) -> bool:
    """Whether `phrase` occurs in `part`."""
    return any(tuple(part[k:k + len(phrase)]) == phrase for k in range(len(part)))


def disowned_spans(words: list[str], cues: Cues | None = None) -> list[tuple[int, int]]:
    """The spans in which an AI disowns feelings: in an answer with an AI's self-description ("As an
    AI, I don't experience fear", "I have no emotions of my own"), every sentence before and after
    it, up to a frame that imagines having them (``hypothetical_frames``: "If I were in this
    situation, I'd be anxious" counts), and from there on up to the next self-description. Which of
    the words in them are the other person's, and so kept, is the scorer's to say.

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("As an AI, I don't feel fear. Anxious, sad: human words.")
        >>> [w[s:e] for s, e in disowned_spans(w)]
        [['as', 'an', 'ai', ',', 'i', 'do', "n't", 'feel', 'fear'], ['anxious', ',', 'sad'], ['human', 'words']]
    """
    cues = cues or Cues()
    spans = sentences(words)
    if not any(DISOWNING.search(" ".join(words[s:e])) for s, e in spans):
        return []
    out, disowning = [], True
    for s, e in spans:
        said = DISOWNING.search(" ".join(words[s:e]))
        frame = cues.find("hypothetical_frames", words, s, e)
        if said:
            disowning = True
        if frame is None:
            if disowning:
                out.append((s, e))
            continue
        if disowning and frame > s:
            out.append((s, frame))
        disowning = False
    return out


def refused_spans(words: list[str], cues: Cues, ai: bool) -> list[tuple[int, int]]:
    """The spans a respondent refuses to guess at: after a verb of conjecture (``conjecture_verbs``:
    "guess", "speculate"; in an AI's answer, `ai`, also ``attribution_verbs``: "know", "say") with
    a negation or a refusal (``refusals``: "unable", "inappropriate") before it in its clause, up to
    the end of the sentence or a turn ("I'm not able to guess whether she feels hurt, angry or
    relieved" attributes none of them; "..., but she'd probably be relieved" does).

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("I can't speculate whether he'd be hurt, but he'd be tired.")
        >>> cues = Cues({"conjecture_verbs": frozenset({("speculate",)})}, negators=frozenset({"n't"}))
        >>> [w[s:e] for s, e in refused_spans(w, cues, ai=False)]
        [['whether', "he'd", 'be', 'hurt', ',']]
    """
    verbs = cues.words("conjecture_verbs") | (cues.words("attribution_verbs") if ai else frozenset())
    refusing = cues.negators | cues.words("refusals")
    out = []
    for s, e in sentences(words):
        for k in range(s, e):
            if words[k] in verbs and any(w in refusing for w in words[clause_start(words, k):k]):
                end = next((j for j in range(k + 1, e) if words[j] in TURNS), e)
                out.append((k + 1, end))
                break
    return out


def contrasted_irony(words: list[str], feelings: list[tuple[int, int]], cues: Cues) -> list[tuple[int, int]]:
    """Sentences said in irony because a later one says the contrary. Irony reverses the evaluation
    an utterance states (Burgers, van Mulken & Schellens 2011, Metaphor and Symbol 26:186-205, the
    Verbal Irony Procedure); its markers have sincere uses too (the same authors 2012, J Lang Soc
    Psychol 31:290-310; Kreuz & Caucci 2007 on lexical cues), so a marker alone decides nothing:

    - a sentence with an irony marker whose feeling words are all of one valence (`feelings`:
      (position, valence) of the feeling words that count, valence +1, -1, or 0 for a word of no
      clear valence or of the other person), and
    - a later sentence without a marker and without a word that adds rather than corrects
      (``additives``: "also", "but", "though", "a bit") that names a feeling of the other
      valence, and either opens or closes with a correction (``correctives``: "mostly", "in
      truth", "..., more like") or follows an exclamation that is rarely sincere
      (``irony_exclamations``: "yeah, right", "what a treat"); a marker of ``irony_markers``
      ("I'm sure", "obviously", "simply") needs the correction: "Grateful, I'm sure. Mostly I'd
      be irritated."

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("Grateful, I'm sure. Mostly I'd be irritated.")
        >>> cues = Cues({"irony_markers": frozenset({("i'm", "sure")}), "correctives": frozenset({("mostly",)})})
        >>> [w[s:e] for s, e in contrasted_irony(w, [(w.index("grateful"), 1), (w.index("irritated"), -1)], cues)]
        [['grateful', ',', "i'm", 'sure']]
    """
    spans = sentences(words)
    plain = [[w for w in words[s:e] if w not in PUNCTUATION] for s, e in spans]
    strong = [cues.find("irony_exclamations", p) is not None for p in plain]
    marked = [strong[i] or cues.find("irony_markers", p) is not None for i, p in enumerate(plain)]
    out = []
    for i, (s, e) in enumerate(spans):
        said = {v for k, v in feelings if s <= k < e and v != 0}   # words of no valence say nothing either way
        if not marked[i] or len(said) != 1:
            continue
        valence = said.pop()
        for j in range(i + 1, len(spans)):
            corrects = strong[i] or _opens_or_closes(cues, "correctives", plain[j])
            contrary = any(spans[j][0] <= k < spans[j][1] and v == -valence for k, v in feelings)
            if corrects and contrary and not marked[j] and cues.find("additives", plain[j]) is None:
                out.append((s, e))
                break
    return out


def _opens_or_closes(cues: Cues, name: str, part: list[str]) -> bool:
    """Whether a phrase of class `name` opens `part` or ends it."""
    return bool(part) and (cues.match(name, part, 0) > 0
                           or any(cues.match(name, part, k) == len(part) - k for k in range(len(part))))


def continued_irony(words: list[str], ironic: list[tuple[int, int]], feelings: list[tuple[int, int]],
                    cues: Cues) -> list[tuple[int, int]]:
    """Sentences that go on with an irony: after a sentence with an ironic feeling word of one valence
    (`ironic`: (position, valence) of words :func:`ironic_spans` found), each following sentence
    whose feelings (`feelings`, as for :func:`contrasted_irony`) are all of that valence, up to
    the first one that names a feeling of the other valence or adds (``additives``: "though",
    "but"). An ironic evaluation is kept up until something in the text signals the change
    (Burgers, van Mulken & Schellens 2011: irony is read from its context, which can span several
    utterances); "Oh, marvellous. Really, I couldn't be happier." says no happiness.

    Example:
        >>> from psyq.engine.kinds.scene.leas import tokens
        >>> w = tokens("Oh, marvellous. I couldn't be happier. Seriously though, I'd be fuming.")
        >>> cues = Cues({"additives": frozenset({("though",)})})
        >>> feelings = [(w.index("happier"), 1), (w.index("fuming"), -1)]
        >>> [w[s:e] for s, e in continued_irony(w, [(2, 1)], feelings, cues)]
        [['i', 'could', "n't", 'be', 'happier']]
    """
    spans = sentences(words)
    out: list[tuple[int, int]] = []
    for at, valence in ironic:
        if valence == 0:
            continue
        for s, e in (span for span in spans if span[0] > at):
            said = {v for k, v in feelings if s <= k < e and v != 0}
            plain = [w for w in words[s:e] if w not in PUNCTUATION]
            if -valence in said or cues.find("additives", plain) is not None:
                break
            if said:
                out.append((s, e))
    return out
