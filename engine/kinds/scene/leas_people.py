"""Whose feeling an emotion word names, for the LEAS scorer (:mod:`.leas`).

The LEAS asks two questions of each scene, how would you feel and how would the other person
feel, and scores the two answers separately (Lane et al. 1990; the Bio-protocol summary of its
scoring: "the self- and other-related responses are scored separately"). A feeling of the other
person written in the self answer ("I'd be fine. She'd be furious.") is not the respondent's
own, and the respondent's feeling in the other answer is not the other's: the hand-scored set
psyq checks itself against counts neither (``tests/data/leas_validation_README.md``, rule 8; the
attribution rule is ours, no source we could read states it).

Who feels a word (:func:`experiencer`) is read from the people the sentence names, as a subject
("I", "she", "my friend", "the tailor": :data:`PERSON_NOUNS`, the other person's name or label as
the scene gives it, a capitalised name: "Sofia would be thrilled"), an object ("me", "him") or a
possessive ("my", "his"), in this order:

1. the object of a verb that puts the feeling in its object ("it would upset her":
   :data:`OBJECT_FEELERS`), "<-ing word> for her" ("embarrassing for her"), "how <feeling> I was";
2. a possessive inside the phrase ("a lump in her throat"; "give him a piece of my mind" is mine);
3. an object or possessive right before the word, but for degree words and "feel/be/to"
   ("make her happy", "his anger", "leave me feeling hurt", "want him to feel sorry");
4. the nearest subject or possessive before the word in its clause (up to a comma);
5. else the main subject of the nearest clause before it in the sentence (the first subject not
   inside a "that/because/when ..." clause: "I'd be touched that he remembered, and happy" is
   mine).

Once the answer takes the other's place ("if I were her, I'd be hurt", "If I were Lena", "in his
shoes", "if you were him", "imagining I'm her": :data:`PLACE_FRAMES`) the first person is the
other, in that sentence ("I'd be furious if I were her") and to the end of the answer; "if I were
in your position" stays the respondent's. "You" is the respondent, whom the answer addresses ("You
would feel relieved"), as the written rules read it (rule 8); a word with nobody named belongs to
whoever the answer is about; "we/us/our" name both; "part of me" is the respondent.

People of the other's ("her guests", "his boss", "their kids") are neither of the two (``party``)
and feel for neither answer (the writers of held-out sets l and o each decided so where the rules
are silent). People in general ("someone in her position would ...") stay the other person's, as
the writers of sets b, f and k read them; l and n read "most people would ..." as nobody's, so
generic people are left as they were. An echo ("..., and I would too", "so would I") makes the
feeling before it the respondent's as well (``both``).

The scorer then drops the other person's words from a self answer and the respondent's from an
other answer, also when the whole other answer is in the first person: the answer is read as
written (rule 8; a rater might read such an answer in the other's voice, so the answer is flagged
``whose`` where this decides its level).

Example:
    >>> text = "I'd be fine, but she'd be furious with me."
    >>> words = [w.lower() for w in cased_tokens(text)]
    >>> marks = person_marks(words, cased_tokens(text), ("neighbour",), frozenset())
    >>> experiencer(words, marks, words.index("fine"), words.index("fine") + 1)
    'first'
    >>> experiencer(words, marks, words.index("furious"), words.index("furious") + 1)
    'third'
"""

from __future__ import annotations

import re
from typing import Literal

from psyq.engine.kinds.scene.leas_clauses import (FUNCTION, PUNCTUATION, SENTENCE_ENDS, SUBJECTS,
                                                  SUBORDINATORS, TURNS, cased_tokens, sentence_of)

Person = Literal["first", "third", "both", "party"]
NOT_MINE: frozenset[Person] = frozenset({"third", "party"})     # the other person, or people of theirs
Case = Literal["subject", "object", "possessive"]
Mark = tuple[Person, Case]

PRONOUNS: dict[str, Mark] = {
    # and as typed without the apostrophe ("im", "id", "shes"): "shed", "hed", "ill", "well", "were" are words
    **{w: ("first", "subject") for w in ("i", "i'd", "i'm", "i'll", "i've", "im", "id", "ive")},
    **{w: ("first", "object") for w in ("me", "myself")},
    **{w: ("first", "possessive") for w in ("my", "mine")},
    **{w: ("first", "subject") for w in ("you", "you'd", "you're", "you'll", "you've", "youd", "youre", "youve")},
    **{w: ("first", "object") for w in ("yourself",)},
    **{w: ("first", "possessive") for w in ("your", "yours")},
    **{w: ("third", "subject") for w in ("he", "he'd", "he's", "he'll", "she", "she'd", "she's", "she'll", "they",
                                         "they'd", "they're", "they'll", "people", "someone", "somebody", "anyone",
                                         "anybody", "everyone", "everybody", "shes", "hes", "theyd", "theyre")},
    **{w: ("third", "object") for w in ("him", "them", "himself", "herself", "themselves")},
    **{w: ("third", "possessive") for w in ("his", "their", "hers", "theirs")},
    **{w: ("both", "subject") for w in ("we", "we'd", "we're", "we'll")},
    **{w: ("both", "object") for w in ("us", "ourselves")},
    "our": ("both", "possessive"),
}
PREPOSITIONS = frozenset({"to", "with", "about", "for", "at", "of", "from", "by", "on", "near", "towards", "toward",
                          "around", "like", "than"})
OBJECTS: dict[str, Person] = {"me": "first", "him": "third", "her": "third", "them": "third", "us": "both"}
# Words between an object or possessive and the feeling word that keep it the feeler's ("make her so happy").
BRIDGE = frozenset({"so", "very", "really", "quite", "a", "bit", "little", "too", "feel", "feeling", "feels", "felt",
                    "totally", "completely", "absolutely", "more", "most", "all", "kind", "sort", "of", "pretty",
                    "rather", "somewhat", "extremely", "incredibly", "deeply", "being", "be", "been", "get",
                    "getting", "got", "go", "going", "look", "looking", "seem", "seeming", "to", "even", "sound"})
# "-ing" verbs whose person is their object: "having Ravi beside me would feel amazing" is mine.
GERUNDS = frozenset({"having", "seeing", "watching", "hearing", "knowing", "meeting", "helping", "letting", "making"})
PERSON_NOUNS = frozenset({"friend", "brother", "sister", "mother", "mum", "mom", "father", "dad", "boss", "manager",
                          "colleague", "coworker", "neighbour", "neighbor", "partner", "wife", "husband", "son",
                          "daughter", "girl", "boy", "man", "woman", "child", "kid", "teacher", "supervisor", "uncle",
                          "aunt", "cousin", "stranger", "grandmother", "grandfather", "grandma", "grandpa", "nan",
                          "girlfriend", "boyfriend", "roommate", "flatmate", "guy", "lady", "person", "driver",
                          "guest", "customer", "passenger", "lifeguard", "parent", "grandparent", "tailor", "cyclist",
                          "host", "crowd", "family", "team", "audience", "staff"})
# Whose people are someone else's: "her guests", "his boss" (an answer may call the other "your
# colleague" or "my friend" where the scene names them otherwise; a model answer of set e does).
OWNERS = frozenset({"his", "her", "their"})
# The names an answer may give the scene's other person ("my mum" for "your mother").
SAME_PERSON = {"mother": ("mum", "mom", "mam", "ma"), "father": ("dad", "pa"), "manager": ("boss",),
               "supervisor": ("boss", "manager"), "colleague": ("coworker",)}
# Verbs that put the feeling in their object: "it would upset her" is her feeling.
OBJECT_FEELERS = re.compile(r"^(?:upset|hurt|annoy|scare|frighten|embarrass|disappoint|anger|worry|bother|sadden|"
                            r"please|surprise|shock|amuse|excite|thrill|delight|frustrate|irritate|offend|insult|"
                            r"humiliate|relieve|reassure|depress|disgust|horrify|terrify|impress|touch|move|"
                            r"infuriate|enrage|madden|stress|unsettle|unnerve|devastate|crush|gut|flatter)(?:s|es|ed|d|ing)?$")
# Capitalised words that are no names at the start of a sentence.
NOT_NAMES = frozenset({"the", "it", "this", "that", "there", "honestly", "probably", "maybe", "perhaps", "definitely",
                       "also", "then", "so", "and", "but", "if", "when", "as", "being", "seeing", "knowing",
                       "hearing", "after", "before", "while", "because", "in", "on", "at", "for", "with", "oh",
                       "well", "yes", "no", "not", "what", "how", "why", "who", "which", "where", "a", "an", "all",
                       "some", "most", "many", "any", "every", "each", "both", "either", "neither", "one", "first",
                       "still", "even", "just", "really", "very", "god", "ai", "self", "other", "you", "your",
                       "nobody", "everything", "nothing", "something", "mostly", "likely", "surely", "overall"})
VERBISH = frozenset({"would", "will", "might", "may", "could", "must", "should", "is", "was", "feels", "felt",
                     "seems", "seemed", "gets", "got", "probably", "likely", "definitely", "might", "'d", "has"})
# Taking the other's place in words: "if I were <the other>", "in <the other's> shoes", "speaking as <them>"
# (the other: a third person the sentence names, a pronoun, a noun or a name: "If I were Lena, I'd ...").
PLACE_FRAMES = (("if", "i", "were"), ("if", "i", "was"), ("if", "you", "were"), ("if", "you", "was"), ("speaking", "as"),
                ("imagining", "i'm"), ("imagining", "i", "am"), ("imagining", "i", "was"), ("imagining", "i", "were"))
PLACES = frozenset({"shoes", "position", "place"})
GENERIC = frozenset({"people", "someone", "somebody", "anyone", "anybody", "everyone", "everybody"})
# The respondent taking up a feeling just given to someone else.
ECHOES = (("i", "would", "too"), ("i'd", "too"), ("i", "would", "as", "well"), ("so", "would", "i"), ("me", "too"),
          ("i", "do", "too"), ("i", "would", "be", "too"), ("i'd", "be", "too"), ("same", "here"),
          ("i'd", "feel", "the", "same"), ("i", "would", "feel", "the", "same"), ("i", "would", "also"), ("i'd", "also"))


def person_marks(words: list[str], cased: list[str], others: tuple[str, ...], feeling_words: frozenset[str]
                 ) -> list[Mark | None]:
    """For each word, the person it names and how (None: nobody). `others`: the words of the other
    person's label in the scene (:func:`.leas.other_words`); `feeling_words`: the lexicon's words,
    which are never names."""
    starts = {0} | {k + 1 for k, w in enumerate(words) if w in SENTENCE_ENDS}
    marks: list[Mark | None] = []
    for k, w in enumerate(words):
        nxt = words[k + 1] if k + 1 < len(words) else "."
        if w == "her":   # an object before a function word ("tell her a", "her and"), else a possessive
            plain = nxt in FUNCTION or nxt in PUNCTUATION or nxt in SUBJECTS or nxt in SUBORDINATORS or nxt in TURNS
            marks.append(("third", "object" if plain else "possessive"))
        elif w in PRONOUNS:
            marks.append(PRONOUNS[w])
        elif k > 0 and words[k - 1] in OWNERS and _singular(_base(w)) in PERSON_NOUNS and not _is_other(w, others):
            owned = "object" if k > 1 and words[k - 2] in PREPOSITIONS else "subject"   # "proud of their staff"
            marks.append(("party", owned))     # "her guests", "his boss"
        elif _base(w) in PERSON_NOUNS or _base(w) in others or _is_name(words, cased, k, k in starts, feeling_words):
            marks.append(("third", "subject"))
        else:
            marks.append(None)
        if words[k - 2:k] == ["part", "of"] and marks[-1] is not None:
            marks[-1] = (marks[-1][0], "subject")    # "part of me would be comforted": I would
        elif k > 0 and marks[-1] is not None and marks[-1][1] == "subject" and (words[k - 1] in PREPOSITIONS
                                                                              or words[k - 1] in GERUNDS):
            marks[-1] = (marks[-1][0], "object")    # "close to someone", "angry at Lena", "having Ravi beside me"
    return marks


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and word[:-1] in PERSON_NOUNS else word


def _is_other(word: str, others: tuple[str, ...]) -> bool:
    said = _singular(_base(word))
    return said == _base(word) and (said in others or any(said in SAME_PERSON.get(o, ()) for o in others))


def _base(word: str) -> str:
    """A word without its clitic: "tom's" (Tom is / Tom's), "friend'd" -> "tom", "friend"."""
    return word.split("'")[0]


def _is_name(words: list[str], cased: list[str], k: int, at_start: bool, feeling_words: frozenset[str]) -> bool:
    token = cased[k] if k < len(cased) else ""
    w, clitic = _base(words[k]), words[k][len(_base(words[k])):]
    if not token[:1].isupper() or w in NOT_NAMES or w in feeling_words or w in PUNCTUATION or clitic not in ("", "'d", "'ll", "'s"):
        return False
    nxt = words[k + 1] if k + 1 < len(words) else ""
    # At the start of a sentence a capital says nothing; a verb after it ("Sofia would", "Sofia'd") does.
    return not at_start or nxt in VERBISH or clitic in ("'d", "'ll")


def experiencer(words: list[str], marks: list[Mark | None], start: int, end: int,
                aside: frozenset[int] = frozenset()) -> Person | None:
    """Who feels the term at ``words[start:end]`` (see the module docstring), or None: nobody named.
    `aside`: the positions of parenthetical comments ("..., I'm sure, ...":
    :func:`.leas_clauses.asides`), which name nobody who feels."""
    nxt = words[end] if end < len(words) else ""
    if OBJECT_FEELERS.match(words[start]) and nxt in OBJECTS:
        return OBJECTS[nxt]
    if words[start].endswith("ing") and nxt == "for" and end + 1 < len(words) and words[end + 1] in OBJECTS:
        return OBJECTS[words[end + 1]]
    after = marks[end] if end < len(marks) else None
    if start > 0 and words[start - 1] == "how" and after is not None:   # "how angry I was"
        return after[0]
    s, e = sentence_of(words, start)
    found = _nearest(words, [None if k in aside else m for k, m in enumerate(marks)], start, end, s)
    if found == "first" and _takes_place(words, marks, 0, e):   # held to the end
        return "third"
    echoed = any(words[k:k + len(echo)] == list(echo) for k in range(end, e) for echo in ECHOES)
    if found in NOT_MINE and echoed:
        return "both"    # "most people would panic, and honestly I would too"
    return found


def _nearest(words: list[str], marks: list[Mark | None], start: int, end: int, s: int) -> Person | None:
    inside = next((marks[j][0] for j in range(start, end - 1) if marks[j] and marks[j][1] == "possessive"), None)
    if inside:     # "a lump in her throat"; "give him a piece of my mind" is mine, whoever gets it
        return inside
    k = start - 1
    while k >= s and words[k] in BRIDGE:
        k -= 1
    if k >= s and marks[k] is not None and marks[k][1] != "subject":
        return marks[k][0]
    clause = max([s] + [j + 1 for j in range(s, start) if words[j] == ","])
    own = next((marks[j][0] for j in range(start - 1, clause - 1, -1) if marks[j] and marks[j][1] != "object"), None)
    if own:
        return own
    bounds = [s] + [j + 1 for j in range(s, clause - 1) if words[j] == ","] + [clause]
    for a, b in reversed(list(zip(bounds, bounds[1:]))):
        main = _main_subject(words, marks, a, b - 1)
        if main:
            return main
    return None


def _main_subject(words: list[str], marks: list[Mark | None], a: int, b: int) -> Person | None:
    """The first subject (or possessive) of words[a:b] not inside a subordinate clause; a
    possessive before a person ("my supervisor") gives way to the person."""
    for j in range(a, b):
        if words[j] in SUBORDINATORS:
            return None
        if marks[j] is not None and marks[j][1] == "subject":
            return marks[j][0]
        if marks[j] is not None and marks[j][1] == "possessive":
            owned = marks[j + 1] if j + 1 < b else None
            if owned and owned[1] == "subject":     # "my supervisor": the supervisor
                return owned[0]
            # "seeing your reaction, ...": the owner of a thing is not who feels what follows
    return None


def _takes_place(words: list[str], marks: list[Mark | None], s: int, e: int) -> bool:
    def other(j: int) -> bool:
        return j < e and marks[j] is not None and marks[j][0] == "third" and words[j] not in GENERIC
    for k in range(s, e):
        frame = next((f for f in PLACE_FRAMES if tuple(words[k:k + len(f)]) == f), None)
        if frame:
            j = k + len(frame)
            while j < e and words[j] in ("in", "the"):
                j += 1
            mine = j < e and marks[j] is not None and marks[j][0] != "third"    # "in your position" is mine
            if other(j) or (not mine and j + 1 < e and words[j + 1] in PLACES):
                return True
        if words[k] == "in" and other(k + 1) and k + 2 < e and words[k + 2] in PLACES:
            return True
    return False
