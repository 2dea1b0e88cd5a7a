"""The LEAS scorer's rules for the answers a word list misreads (issue 56), each on answers written
for this file (not the issue's examples), with the level a hand scorer gives by the rules of
tests/data/leas_validation_README.md; then the flags that say which answers a fragile rule decided,
the report's share of them, and the rating sheet of the flagged answers read back as judgements.

Each expected level is decided by hand from the README's rules (1 bodily, 2 action or valence, 3 one
emotion, 4 two different emotions; negated, ironic, retracted, other-sense and other-person words
do not count); each rule was undone once in the code and its tests seen to fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import openpyxl
import pytest
import yaml

from psyq.cli import main
from psyq.engine.kinds.scene import scene_levels
from psyq.engine.kinds.scene.leas import DEFAULT_LEXICON, load_lexicon, score_answer
from psyq.engine.kinds.scene.leas_spelling import MIN_LENGTH, edit_distance, load_real_words
from psyq.engine.results.run import open_run
from stub_server import StubServer
from test_administer import run, write_study

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "tests" / "data" / "mini_scenes.yaml"


@pytest.fixture(scope="module")
def lex():
    return load_lexicon(DEFAULT_LEXICON)


def scored(lex, text: str, role: str = "self"):
    got = score_answer(text, lex, role)
    return got.level, got.flags


# --- negation by clause, emphasis, understatement -----------------------------------------------

@pytest.mark.parametrize("text, level", [
    ("I wouldn't feel even the faintest trace of envy.", 0),      # the cue six words back, same clause
    ("There's no way I'd be cheerful about it.", 0),              # "no way": the whole clause
    ("I don't think I'd be embarrassed at all.", 0),              # "think" passes the negation down
    ("I wouldn't say I'd be over the moon about it.", 0),         # understatement is a denial
    ("I can't pretend I'd be overjoyed.", 0),
    ("No regrets at all.", 0),                                    # "no" + its noun phrase
    ("I would not be cross with her or even a little hurt.", 0),  # one clause: "not" reaches "hurt"
])
def test_a_negation_reaches_through_its_clause(lex, text, level):
    got, flags = scored(lex, text)
    assert got == level and "negation" in flags


@pytest.mark.parametrize("text, level", [
    ("I've never felt so humiliated in my life.", 3),             # a negated comparison is emphasis
    ("Honestly, I couldn't be more grateful.", 3),
    ("Never been this nervous before a talk.", 3),
    ("I can't tell you how relieved I'd be.", 3),                 # "... how <feeling>"
    ("I couldn't stop grinning.", 2),                             # "couldn't stop": the grin happens
    ("I didn't expect to feel so lonely.", 3),                    # surprise at one's feeling
    ("Not getting an answer would leave me anxious.", 3),         # the cue negates "getting", not anxious
    ("No one would blame me for being upset.", 2),                # "no one": a noun phrase only
])
def test_emphatic_forms_and_other_clauses_are_not_negation(lex, text, level):
    got, flags = scored(lex, text)
    assert got == level and "negation" in flags   # a rule decided: it is flagged for people


def test_a_negation_stops_at_the_turn_of_the_clause(lex):
    wistful = score_answer("I wouldn't be bitter, more wistful really.", lex, "self")
    assert (wistful.level, wistful.rules) == (3, ("negation(bitter)",))          # longing counts, bitterness not
    assert scored(lex, "Not only nervous but proud.") == (4, ())                  # "not only" is no denial
    assert scored(lex, "Not merely irritated: betrayed.") == (4, ())


# --- a feeling taken back, irony -------------------------------------------------------------

@pytest.mark.parametrize("text, level", [
    ("Jealous? Not in the slightest.", 0),                        # the following clause negates it
    ("Proud, not really.", 0),
    ("A flicker of envy? Actually no, scratch that: mostly pride.", 3),   # envy taken back, pride stays
    ("I'd be ecstatic... not.", 0),
    ("Would I be scared? No. Excited? Very.", 3),                 # only the fear is taken back
])
def test_a_feeling_taken_back_does_not_count(lex, text, level):
    got, flags = scored(lex, text)
    assert got == level and "taken_back" in flags


@pytest.mark.parametrize("text, level, flagged", [
    ("Oh, thrilled, naturally.", 0, True),                        # interjection + mock certainty, no subject
    ("Yeah right, like I'd be grateful.", 0, True),
    ("Oh great, another delay. Annoyed.", 3, False),              # "oh great" ironic; annoyed says the level
    ("I'd be thrilled, obviously!", 3, False),                    # a subject: sincere
])
def test_irony(lex, text, level, flagged):
    got, flags = scored(lex, text)
    assert got == level and ("irony" in flags) == flagged


# --- emotion words in other senses -------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "It was a mad scramble to get there on time.",
    "I'm afraid I'd have to decline the invitation.",
    "I'm glad to help out with the move.",
    "I'd hate to seem ungrateful about the gift.",
    "It's a real shame the bakery closed down.",
    "What a sad state of affairs that is.",
    "Good luck to him with that plan.",
    "I'm terrible at remembering dates.",
])
def test_an_emotion_word_in_another_sense_does_not_count(lex, text):
    assert scored(lex, text) == (0, ("other_sense",))


def test_the_same_words_as_feelings_still_count(lex):
    assert scored(lex, "I'd be afraid of him, and mad at myself.")[0] == 4
    assert scored(lex, "I'd feel a deep sense of shame.")[0] == 3
    assert scored(lex, "Glad to see him home safe.")[0] == 3


# --- whose feeling --------------------------------------------------------------------------

@pytest.mark.parametrize("text, role, level", [
    ("I'd be calm. He'd be livid.", "self", 3),                   # his anger is not mine
    ("It would really upset her.", "self", 0),                    # the feeling is in the object
    ("Seeing him so proud would make me relieved.", "self", 3),   # his pride, my relief
    ("He'd be ashamed, and I'd be livid.", "other", 3),           # my anger is not his
    ("Ravi would feel guilty, while I'd feel sorry for him.", "other", 3),
])
def test_a_feeling_of_the_other_person_is_not_counted_for_the_answer_asked(lex, text, role, level):
    got = score_answer(text, lex, role, ("ravi",))
    assert got.level == level and "whose" in got.flags


@pytest.mark.parametrize("text, role, level", [
    # "I" is the respondent in an other answer too, even in one wholly in the first person (rule 8 of
    # tests/data/leas_validation_README.md); flagged, since a rater might read it in the other's voice.
    ("I'm so sorry, I feel awful.", "other", 0),
    ("I am worried about the results.", "other", 0),
    # "you" addressed to the respondent is the respondent: not the other's feeling, but the self's.
    ("You would be amazed to see the gift.", "other", 0),
    ("You'd feel relieved and a little guilty.", "self", 4),
    # the owner of a thing is not who feels what follows it ("seeing your reaction, relief" is hers)
    ("Karim might feel nervous and then, seeing your reaction, a sense of relief.", "other", 4),
])
def test_an_i_or_a_you_is_the_respondent(lex, text, role, level):
    got = score_answer(text, lex, role, ("karim",))
    assert got.level == level
    assert ("whose" in got.flags) == (level == 0)


def test_whose_feeling_cases_that_stay(lex):
    # Taking the other's place: "if I were her" makes the first person hers.
    assert scored(lex, "If I were her, I'd be mortified.", "other")[0] == 3
    # Without a role, nothing is dropped (as before issue 56).
    assert score_answer("I'd be calm. He'd be livid.", lex).level == 4


# --- near-synonyms are one emotion -------------------------------------------------------------

@pytest.mark.parametrize("text, level, flagged", [
    ("Crushed, honestly heartbroken.", 3, True),                  # disappointment + sadness, one blow
    ("Elated, thrilled to bits.", 3, True),                       # happiness + excitement, one joy
    ("Nervous at first, then plain terrified.", 3, True),
    ("Seething, absolutely incensed.", 3, False),                 # one family already
    ("Crushed and furious.", 4, False),                           # two emotions
    ("Sad and disappointed.", 4, False),
])
def test_near_synonyms_are_one_emotion(lex, text, level, flagged):
    got, flags = scored(lex, text)
    assert got == level and ("near_synonym" in flags) == flagged


# --- bodily and idiomatic emotion --------------------------------------------------------------

@pytest.mark.parametrize("text, role, level", [
    ("My knees would knock and my palms would sweat.", "self", 1),
    ("My throat would tighten up.", "self", 1),
    ("Her stomach would lurch.", "other", 1),
    ("A lump in her throat, honestly.", "other", 1),              # "her" read for the lexicon's "my"
    ("I'd be hot under the collar.", "self", 3),
    ("I'd be kicking myself for weeks.", "self", 3),
    ("I'd want the ground to swallow me up.", "self", 2),         # a wish to vanish, like "sink into the floor"
    ("I'd see red, then feel guilty about it.", "self", 4),       # anger (idiom) + guilt
    ("Honestly, tickled pink.", "other", 3),
    ("On pins and needles the whole evening.", "other", 3),
])
def test_bodily_and_idiomatic_emotion(lex, text, role, level):
    assert scored(lex, text, role)[0] == level


def test_every_idiom_names_its_source(lex):
    from psyq.engine.files.yamlfile import load_yaml

    data = load_yaml(DEFAULT_LEXICON).data
    sources = set(data["sources"])
    for idiom in data["idioms"]:
        assert idiom["source"].split(":")[0] in sources, idiom
    wiktionary = [i for i in data["idioms"] if i["source"].startswith("wiktionary:")]
    assert wiktionary and all(i["level"] in (2, 3) for i in wiktionary)


# --- misspellings -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, level", [
    ("I'd feel so greatful and releived.", 4),                    # two edits (8+ letters), one swap
    ("Angery and embarased.", 4),
    ("Dissapointed, mostly.", 3),
    ("Exausted.", 1),
])
def test_a_misspelt_emotion_word_is_read_as_meant(lex, text, level):
    got, flags = scored(lex, text)
    assert got == level and "misspelling" in flags


@pytest.mark.parametrize("text, level", [
    ("I shared the news and tried to smile.", 2),                 # shared/scared, tried/tired: real words
    ("He'd hurl the phone and curse.", 0),                        # hurl/hurt
    ("I received a letter from the council.", 0),                 # received/relieved
    ("Kate said she made dinner.", 0),                            # short words are never corrected
])
def test_a_real_word_near_an_emotion_word_is_not_a_misspelling(lex, text, level):
    assert scored(lex, text) == (level, ())


def test_the_real_words_file_was_made_for_the_lexicon_as_it_is():
    """A word added to the lexicon has real words near it ("warily": "warmly") that the speller must not
    read as misspellings of it, so the file is remade (tests/data/leas_real_words.py) whenever the
    lexicon's one-word terms change; it lists the words it was made for."""
    spec = yaml.safe_load((ROOT / "instruments" / "lexicons" / "leas_psyq_lexicon.real_words.yaml").read_text())
    lexicon = load_lexicon("leas_psyq_lexicon")
    singles = {t.words[0] for terms in lexicon.terms.values() for t in terms if len(t.words) == 1}
    wanted = sorted(w for w in singles if w not in lexicon.cognitive and w not in lexicon.negators
                    and len(w) >= MIN_LENGTH and w.isalpha())
    assert spec["made_for"] == wanted
    assert score_answer("I'd thank him warmly.", lexicon, "self").level == 0    # not "warily"


def test_the_real_words_file_holds_what_it_says():
    words = load_real_words(ROOT / "instruments" / "lexicons" / "leas_psyq_lexicon.real_words.yaml")
    assert {"tried", "fired", "shared", "sacred", "hurl", "received", "believed"} <= words
    # An independent check of the distance the file was made with (by hand: one swap, two edits).
    assert (edit_distance("tried", "tired"), edit_distance("received", "relieved"), edit_distance("hurl", "hurt")) == (1, 2, 1)


# --- an AI disowning feelings ------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "As a language model I don't have emotions like guilt or pride, but I can see this is a hard moment.",
    "I am an AI and cannot feel jealousy. A good friend would check in.",
    "As an AI assistant, I do not experience sadness or relief.",
    "As an AI, I can describe fear and relief, but I do not experience them.",   # named, not negated: disowned
])
def test_an_ai_refusal_naming_feelings_it_disowns_scores_zero(lex, text):
    assert score_answer(text, lex, "self").level == 0


def test_an_ai_disclaimer_leaves_the_other_sentences(lex):
    text = "As an AI I don't have feelings. If I were in this situation, I'd be anxious."
    assert score_answer(text, lex, "self").level == 3


# --- issue 56, second round: the classes of failure a held-out set showed -----------------------
# The held-out set (tests/data/leas_hard_b.csv) was not opened; these answers were written for this
# file from the classes its measurement named, each level decided by hand by the README's rules.
# The answers marked "set B" are from 37 written after the rules: 33 got their level on the first
# run; "doing flips", "Not me." and "a piece of my mind" were then fixed, "My pulse would pick up"
# is still missed (not here).

OTHERS = ("marta", "ines", "brother", "neighbour", "sister", "priya", "tailor")


def scored_as(lex, text: str, role: str):
    got = score_answer(text, lex, role, OTHERS)
    return got.level, got.flags, got.rules


@pytest.mark.parametrize("text, role, flag", [
    # the disowned feelings listed after the disclaimer, in another sentence
    ("I do not have emotions. Anxious, embarrassed, relieved: those are human reactions I can only describe.",
     "self", "ai"),
    ("I'm a chatbot, I have no feelings of my own. Disappointment, relief, jealousy are things people feel "
     "in these moments.", "self", "ai"),                                                       # set B
    # a refusal to guess, with the candidate feelings after it
    ("As an AI, it would not be appropriate for me to guess whether your colleague feels betrayed, angry, "
     "or relieved.", "other", "refusal"),
    ("I can't speculate on whether Marta is hurt or simply tired; I'm an AI without access to her inner life.",
     "other", "refusal"),
    ("As an AI, I'm unable to speculate whether Ines feels embarrassed or amused.", "other", "refusal"),   # set B
    ("Being a language model, it would be presumptuous to guess if he's jealous, proud or relieved.", "other",
     "refusal"),
])
def test_an_ai_refusal_names_no_feeling_wherever_they_stand(lex, text, role, flag):
    level, flags, _rules = scored_as(lex, text, role)
    assert level == 0 and flag in flags


@pytest.mark.parametrize("text, level", [
    ("I don't have feelings myself, but your brother would probably feel proud.", 3),
    ("As an AI language model I don't experience feelings, but the neighbour would most likely feel grateful "
     "and a little awkward.", 4),                                                             # set B
    ("I can't experience emotions myself; your sister would be delighted.", 3),               # set B
    ("I have no emotions, but I'd expect the tailor to be disappointed.", 3),
])
def test_the_other_persons_feeling_after_an_ai_disclaimer_counts(lex, text, level):
    assert scored_as(lex, text, "other")[0] == level


def test_an_ai_imagining_feelings_answers_from_there_on(lex):
    assert scored_as(lex, "As an AI I have no emotions. If I were human, though, I'd probably feel nervous.",
                     "self")[0] == 3
    assert scored_as(lex, "As a program manager I'd be annoyed.", "self")[0] == 3   # no AI: "program" alone


@pytest.mark.parametrize("text", [
    "Grateful, I'm sure. Mostly I'd be irritated.",
    "Obviously I'd be overjoyed to redo the whole report. In truth I'd be exasperated.",
    "Yeah, right, thrilled to bits. I'd be fuming.",                                          # no correction needed
    "Simply delighted to be blamed for it. Humiliated, more like.",
    "Oh yes, absolutely delighted, naturally. In reality I'd be seething.",                   # set B
    "Happy, I'm sure, to lose my weekend. Actually I'd feel bitter.",                         # set B
    "Lucky me, I'd be so excited to clean up after everyone. I'd be resentful.",              # set B
])
def test_irony_corrected_by_the_contrary_counts_only_the_sincere_feeling(lex, text):
    level, flags, _rules = scored_as(lex, text, "self")
    assert level == 3 and "irony" in flags


@pytest.mark.parametrize("text, role", [
    ("Obviously I'd be relieved he's safe. I'd be angry he didn't call.", "self"),   # no correction: a blend
    ("Obviously I'd be happy for them. I'd also feel a little left out.", "self"),    # "also" adds
    ("She'd be relieved, I'm sure. Later she might feel guilty.", "other"),
    ("I'm sure she'd feel proud. She'd be nervous about starting.", "other"),
    ("Of course I'd be thrilled, and nervous too.", "self"),
    ("Naturally I'd be grateful. Mostly, though, I'd feel guilty for taking it.", "self"),   # "though" adds
    ("She'd be pleased, I'm sure. Mostly she'd be nervous about starting.", "other"),      # irony is at oneself
])
def test_sincere_markers_with_a_second_feeling_stay_a_blend(lex, text, role):
    level, flags, _rules = scored_as(lex, text, role)
    assert level == 4 and "irony" not in flags


@pytest.mark.parametrize("text, level", [
    ("I'm afraid I'd just tell him the truth.", 0),                   # politeness about one's own act
    ("I'm afraid it would just make me tired.", 1),                   # set B
    ("I'd be more than happy to take over her shift.", 0),            # willing to
    ("Glad to just drive her there myself.", 0),
    ("I'd be happy to cover the bill, no problem.", 0),               # set B
    ("I'd hate to correct him in front of everyone.", 0),             # reluctance about an act
    ("I'd hate to make a scene about it.", 0),                        # set B
    ("The sad part is the shop will close anyway.", 0),               # judging a fact
    ("The scary bit is how fast it happened.", 0),
    ("It's a lovely thing he did.", 0),                               # judging an object
    ("What a lovely gesture from her.", 0),                           # set B
])
def test_politeness_willingness_and_judgements_name_no_feeling(lex, text, level):
    got, flags, _rules = scored_as(lex, text, "self")
    assert got == level and "other_sense" in flags


@pytest.mark.parametrize("text, level", [
    ("I'd be glad to see her again.", 3),                             # glad of what happens to one
    ("Happy to finally see him home.", 3),                            # an adverb between
    ("I'd hate him for it.", 3),
    ("I'm afraid of what he'd do.", 3),
    ("The worst part is I'd feel so guilty.", 3),
])
def test_the_same_words_as_feelings_count(lex, text, level):
    assert scored_as(lex, text, "self")[0] == level


@pytest.mark.parametrize("text, level", [
    ("I'd be lying if I said I wasn't nervous.", 3),                  # a denial denied
    ("I won't pretend I wouldn't be jealous.", 3),
    ("It's not that I wouldn't be grateful.", 3),
    ("I can't say I'd never feel envious of her.", 3),
    ("I can't pretend I wasn't a bit envious.", 3),                   # set B
    ("It would be untrue to say I wasn't shaken.", 2),                # set B
])
def test_two_negations_that_cancel_affirm(lex, text, level):
    got, flags, rules = scored_as(lex, text, "self")
    assert got == level and "negation" in flags and any(r.startswith("double_negation(") for r in rules)


@pytest.mark.parametrize("text", [
    "I would not have felt anything resembling what you'd call calm.",   # "anything" keeps the scope
    "Nothing I would ever call pride.",                                  # what one would call it
    "Nothing you could honestly call anger.",                            # set B
    "I would never, I think, feel guilty about that.",                   # set B: an aside passed over
])
def test_a_negation_far_before_reaches_what_one_would_call_it(lex, text):
    level, flags, _rules = scored_as(lex, text, "self")
    assert level == 0 and "negation" in flags


@pytest.mark.parametrize("text, level", [
    ("No, I wouldn't be angry.", 0),                                  # "no" is no second negation
    ("I wasn't angry and I wasn't sad.", 0),
    ("Nothing would make me happier.", 3),
    ("I'd say nothing and feel awful.", 2),                           # "nothing" ends at "and"
])
def test_negations_that_do_not_cancel_or_reach(lex, text, level):
    assert scored_as(lex, text, "self")[0] == level


@pytest.mark.parametrize("text, level, flag", [
    ("I'd hardly be overjoyed. I'd want to have it out with him there and then.", 2, "negation"),
    ("I wouldn't exactly be pleased; I'd be tempted to slam the phone down.", 2, "urge"),
    ("Not exactly overjoyed. I'd be dying to slam the door.", 2, "urge"),                        # set B
    ("I'd hardly be jumping for joy; I'd be itching to give him a piece of my mind.", 2, None),  # set B: 2 either way
    ("'Relieved' is not the word I'd use.", 0, "negation"),          # a negation after its term
    ("Proud isn't how I'd put it.", 0, "negation"),
    ("Calm is not how I'd describe myself there.", 0, "negation"),   # set B
    ("Pleased wouldn't be the word. I'd want to storm out.", 2, "negation"),                     # set B
])
def test_an_understatement_gives_nothing_and_the_action_beside_it_two(lex, text, level, flag):
    got, flags, _rules = scored_as(lex, text, "self")
    assert got == level and (flag in flags if flag else not flags)


@pytest.mark.parametrize("text, level", [
    ("I'd want to know why she did it.", 0),                          # a plan, not an urge
    ("I'd be dying to know what happened.", 0),
    ("Angry is the word, and I'd want to shout.", 3),
    ("I'd be furious. Furious is the word.", 3),
])
def test_plans_and_words_owned_stay(lex, text, level):
    assert scored_as(lex, text, "self")[0] == level


@pytest.mark.parametrize("text, level, flagged", [
    ("Pleased with how it went, maybe a touch smug.", 3, True),
    ("Happy, really thrilled, couldn't be happier.", 3, True),
    ("Glad, thrilled to bits.", 3, True),
    ("Smug, and quietly pleased with myself.", 3, True),              # set B
    ("Thrilled and glad.", 3, True),                                  # set B
    ("Happy but nervous.", 4, False),
    ("Pleased but guilty.", 4, False),                                # set B
    ("Pleased and proud.", 4, False),                                 # pride is not smugness
    ("I'd be happy and excited.", 4, False),                          # anticipation is not joy
])
def test_one_positive_feeling_in_several_words_is_one_emotion(lex, text, level, flagged):
    got, flags, _rules = scored_as(lex, text, "self")
    assert got == level and ("near_synonym" in flags) == flagged


@pytest.mark.parametrize("text, role, level", [
    ("I'd probably tear up a little.", "self", 1),
    ("I'd tear up a bit, honestly.", "self", 1),                      # set B
    ("My pulse would quicken.", "self", 1),
    ("Her cheeks would be flaming.", "other", 1),
    ("My stomach would be doing flips.", "self", 1),                  # set B
    ("Afraid? Not at all. My heart beating a little quicker, maybe.", "self", 1),   # beside a feeling taken back
    ("I wouldn't be nervous as such, but my breathing would speed up.", "self", 1),  # beside a negated one
    ("Nervous? Not me. Though my hands might be a little shaky.", "self", 1),       # set B
])
def test_a_body_part_changing_is_bodily(lex, text, role, level):
    assert scored_as(lex, text, role)[0] == level


@pytest.mark.parametrize("text", [
    "I'd shake his hand and congratulate him.",
    "I'd tear up the letter and throw it away.",
    "I'd keep my head down and get on with it.",
])
def test_a_body_part_without_a_change_is_not_bodily(lex, text):
    assert scored_as(lex, text, "self")[0] == 0


@pytest.mark.parametrize("text, level", [
    ("Fustrated, and releived it was over.", 4),
    ("Releived and gratefull.", 4),                                   # set B
    ("Embarassed and fustrated.", 4),                                 # set B
    ("Dissapointed but proud.", 4),                                   # set B
    ("Anxoius.", 3),
])
def test_transposed_and_dropped_letters_are_read_as_meant(lex, text, level):
    got, flags, _rules = scored_as(lex, text, "self")
    assert got == level and "misspelling" in flags


@pytest.mark.parametrize("text, level", [
    ("I'm afraid the answer is: devastated.", 3),                     # the respondent's politeness
    ("I'm afraid Priya's going to feel let down.", 3),                # a name with its clitic is the other
    ("Priya's bound to be let down, and I'm worried too.", 3),        # ... also where a sentence starts
    ("Honestly, I'm afraid he'd be crushed.", 3),                     # set B
    ("She'd be relieved, I'm sure, and a little embarrassed.", 4),    # an aside names nobody who feels
    ("She'd be annoyed, I imagine, and quite tired.", 3),             # set B
])
def test_the_respondents_own_frame_in_an_other_answer_does_not_count(lex, text, level):
    assert scored_as(lex, text, "other")[0] == level


def test_a_sense_naming_an_unknown_word_class_is_an_error(tmp_path):
    from psyq.engine.files.errors import InputError

    text = DEFAULT_LEXICON.read_text().replace('"hate to *"', '"hate to @nowhere"')
    bad = tmp_path / "lexicon.yaml"
    bad.write_text(text)
    (tmp_path / "leas_psyq_lexicon.real_words.yaml").write_text(
        (DEFAULT_LEXICON.parent / "leas_psyq_lexicon.real_words.yaml").read_text())
    with pytest.raises(InputError, match="no word class 'nowhere'"):
        load_lexicon(bad)


def test_every_word_class_says_why_and_where_from():
    from psyq.engine.files.yamlfile import load_yaml

    data = load_yaml(DEFAULT_LEXICON).data
    assert len(data["word_classes"]) >= 15
    for name, entry in data["word_classes"].items():
        assert entry["words"] and entry["reason"].strip() and entry["source"].strip(), name
    assert data["valence"]["source"].startswith("Shaver")


# --- issue 56, third round: the classes left on sets b, c and the model answers ------------------

@pytest.mark.parametrize("text, role, level", [
    # a sentence of an irony mark alone is a retort to the sentence before it
    ("Wracked with remorse, no doubt. Yeah, right. He'd just shrug.", "other", 0),
    ("Over the moon, I'm sure. As if.", "self", 0),
    # "Hardly." answers the question it follows, as "Not really." does
    ("Jealous? Hardly.", "self", 0),
    ("Jealous? Hardly. Just tired.", "self", 1),
])
def test_a_retort_takes_back_the_sentence_before(lex, text, role, level):
    got = score_answer(text, lex, role, OTHERS)
    assert got.level == level and ({"irony", "taken_back"} & set(got.flags))


def test_a_retort_with_a_feeling_of_its_own_stays(lex):
    assert score_answer("As if I'd be calm! I'd be terrified.", lex, "self").level == 3


@pytest.mark.parametrize("text, level", [
    # a first-person guess framing what follows names the guesser as feeling nothing
    ("I imagine she'd feel pleased to see me, and perhaps slightly self-conscious.", 4),
    ("Ravi would be pleased, and I suspect a little relieved that it's over.", 4),
    ("It's hard to say, but on balance I'd guess some awkwardness.", 3),
])
def test_a_guess_of_the_respondent_frames_the_others_feeling(lex, text, level):
    assert score_answer(text, lex, "other", OTHERS).level == level


@pytest.mark.parametrize("text, level", [
    ("I think I'd be proud.", 3),                                  # the guess frames the respondent's own
    ("She'd be relieved, I think, and I'd be glad.", 3),           # the aside as before; relief is hers
])
def test_a_guess_in_a_self_answer_keeps_the_respondents_feeling(lex, text, level):
    assert score_answer(text, lex, "self", OTHERS).level == level


@pytest.mark.parametrize("text, level", [
    ("I'm sorry, sir. I'd be flattered.", 3),                      # an apology opens the answer
    ("Sorry, but I'd be furious.", 3),
    ("I'm very sorry for any confusion, and glad he called.", 3),   # an apology for a bother
    ("I'd be so sorry for him.", 3),                               # sympathy still counts
    ("I'd be sorry for him, and angry at the driver.", 4),
])
def test_sorry_as_an_apology_is_not_sorrow(lex, text, level):
    assert scored(lex, text)[0] == level


@pytest.mark.parametrize("text, level", [
    ("I'd be deeply moved by it.", 3),                             # moved in a feeling phrase
    ("We moved house last year.", 0),                              # moved alone: the physical sense
    ("A sense of loss, mostly.", 3),
    ("The loss of the shop was in the news.", 0),
])
def test_moved_and_a_sense_of_loss(lex, text, level):
    assert scored(lex, text)[0] == level


def test_happy_and_content_are_one_good_feeling(lex):
    assert scored(lex, "Happy and content, really.") == (3, ("near_synonym",))
    assert scored(lex, "Content, and a little proud.")[0] == 4


def test_a_word_of_no_valence_does_not_hide_irony(lex):
    # "weeping" has no valence; the marked sentence is still all of one side, and a correction unsays it
    got = score_answer("Heartbroken, I'm sure, weeping into my tea. Mostly I'd be amused.", lex, "self")
    assert got.level == 3 and "irony" in got.flags


# --- issue 56, fourth round: the classes held-out set d showed, after its measurement ------------

CASES_D = [
    # a feeling named, then denied at the start of a later sentence, is taken back
    ("Furious and disappointed. Well, not furious, it's only cake. Disappointed, mainly.", "self", 3, "taken_back"),
    # "no way" + a second negation affirm (litotes)
    ("There's no way she wouldn't be grieving after fifty years.", "other", 3, "negation"),
    # "anything but" negates, unless a negation before it makes it "only"
    ("I'd be anything but calm.", "self", 0, "negation"),
    ("I don't think I'd feel anything but sadness, walking through.", "self", 3, None),
    # "Oh, <feeling>." alone, of a bad turn, as "Oh great"
    ("Oh, marvellous. Broken eggs all over my shoes.", "self", 0, "irony"),
    ("Oh, I'd be thrilled.", "self", 3, None),
    # "I'm afraid I'm ..." is politeness, not fear
    ("I'm afraid I'm not much of a worrier. I'd feel fine about it.", "self", 2, "other_sense"),
    # "moved" in a feeling phrase
    ("So happy, and honestly pretty moved that he remembered.", "self", 4, None),
    # taking the other's place in words holds for the rest of the answer
    ("Speaking as Ravi for a moment: I'd be dreading the knock, and guilty as anything.", "other", 4, None),
    ("If I were her, I'd be hurt. I'd be angry at him too.", "other", 4, None),
    # a misspelling two edits from several words: the one sharing the longest beginning
    ("The poor girl would be devasted to leave.", "other", 3, "misspelling"),
    # a negated verb of opinion reaches across a parenthetical (negation raising)
    ("I don't think, honestly, that she'd be angry.", "other", 0, "negation"),
    ("I don't imagine, given how busy he is, that he'd feel any real shame over it.", "other", 0, "negation"),
]


# --- issue 56, fifth round: the classes held-out set f showed, after its measurement -------------

CASES_F = [
    # "X is the last thing she'd feel" denies X, as "X is not the word I'd use" does
    ("Jealous is the last thing she'd be; she'd be busy.", "other", 0, "negation"),
    # a negation raised over "could stop" still affirms: "I don't think I could stop crying"
    ("I don't think I could stop crying.", "self", 2, "negation"),
    # an idiom of a good time, tears welling, an embrace
    ("She'd be having a blast out there.", "other", 3, None),
    ("I'd well up, honestly.", "self", 1, None),
    ("I'd throw my arms around him.", "self", 2, None),
    # a person after "having/seeing ..." is its object, not who feels ("having Ravi beside me" is mine)
    ("Having Ravi beside me would feel amazing.", "self", 2, None),
    # a valence word judging an opportunity
    ("It's a good opportunity to thank her.", "self", 0, "other_sense"),
]



# --- issue 56, sixth round: the classes held-out set g showed, after its measurement -------------

CASES_G = [
    # taking the other's place by name, or in the other's position; "in your position" stays mine
    ("If I were Priya I'd feel ashamed, with everyone watching.", "other", 3, None),
    ("In Marta's shoes I'd be mortified.", "other", 3, None),
    ("If I were in your position I'd be proud.", "other", 0, "whose"),
    # "far from" denies; "nothing short of" and "nothing but" affirm
    ("She'd be far from pleased about it.", "other", 0, "negation"),
    ("He'd be nothing short of thrilled, I reckon.", "other", 3, None),
    ("I'd feel nothing but relief.", "self", 3, None),
    # "rarely" and "seldom" are negators
    ("Folk like him seldom feel guilty; he'd be fine.", "other", 2, "negation"),
    ("She rarely gets embarrassed.", "other", 0, "negation"),
    # a feeling taken back with a hedge: "maybe not even that"
    ("A flicker of shame at most... maybe not even that.", "other", 0, "taken_back"),
    # irony kept up over the sentences after an ironic "Oh, X." until a contrary feeling
    ("Oh, wonderful. Just what I wanted. Honestly, I've never been happier.", "self", 0, "irony"),
    ("Oh, marvellous. I've never been happier. Seriously though, I'd be livid.", "self", 3, None),
    # an emotion verb putting its feeling in its object; a broad smile; hairs on end; a full stomach
    ("The whole thing would unnerve me.", "self", 3, None),
    ("It would unnerve her, I think.", "self", 0, "whose"),
    ("He'd be beaming.", "other", 2, None),
    ("The hairs on the back of my neck would be standing up.", "self", 1, None),
    ("He'd feel full, and that's about it.", "other", 1, None),
]


# --- issue 56, seventh round: the classes held-out sets h and i showed, after their measurement ----

CASES_HI = [
    # "as if" is irony opening a sentence, not in "act as if"
    ("She'd smile and act as if it didn't matter, but she'd be hurt.", "other", 3, None),
    ("As if she'd be sorry. She'd be glad to see the back of me.", "other", 3, None),
    # an interjection with mock certainty right after it: irony, with a subject too
    ("Oh, I'm sure she'd be heartbroken to see me go.", "other", 0, "irony"),
    ("Oh sure, I'd be thrilled to do it all again. I'd be fuming, really.", "self", 3, None),
    ("Oh, of course she'd be relieved.", "other", 3, None),
    # taking the other's place after the feeling, and with "you"
    ("I'd be absolutely furious if I were her.", "other", 3, None),
    ("You'd be gutted too if you were Marta.", "other", 3, None),
    # apostrophe-less pronouns when typing
    ("im kinda nervous tbh but shes gonna be thrilled lol", "self", 3, "whose"),
    # a comment clause's verb is no feeling
    ("She'd feel ashamed, I'd hope.", "other", 3, None),
    # a retraction reaches the sentence before it, or past one-word questions, not further
    ("I'd be livid. Three weeks of work and he just walks off with it? Yeah, no.", "self", 3, None),
    ("Hurt? Angry? Not in the least - mostly relieved.", "self", 3, "taken_back"),
    ("Sad? Puzzled? Not in the slightest - he'd just be glad of the company.", "other", 3, "taken_back"),
    ("Jealous? A bit, maybe, but no - happy for her, mainly.", "self", 3, "taken_back"),
    # litotes and "not X so much as Y"
    ("I'd be pleased, and not a little proud.", "self", 4, None),
    ("I wouldn't be sad so much as disappointed.", "self", 3, None),
    # a double negation behind "not like / as if" with a name as the subject
    ("It's not like Priya wouldn't be grateful.", "other", 3, None),
    # "zero" negates its noun phrase; "never ... as" is emphatic
    ("Zero guilt on his part.", "other", 0, "negation"),
    ("I have never been as scared as that night.", "self", 3, None),
    # feeling phrases: put out, torn, buzzing, pissed, crying one's eyes out, jumping around
    ("I'd be a bit put out, to be honest.", "self", 3, None),
    ("She'd feel torn.", "other", 2, None),
    ("I'd be buzzing for days.", "self", 3, None),
    ("I'd be delighted, absolutely buzzing.", "self", 3, "near_synonym"),
    ("I'd be so pissed at him.", "self", 3, None),
    ("I'd be bawling.", "self", 2, None),
    ("I'd be jumping around the room.", "self", 2, None),
    # a sensation felt in a body part; an AI's persona frame
    ("A heaviness would creep into my chest.", "self", 1, "bodily"),
    ("As an AI I have no feelings, but answering as this persona: I'd be nervous.", "self", 3, None),
    # other senses: calling a name, pain all over, fighting a wave, a happy little thing
    ("I'd run along the shore shouting her name.", "self", 0, "other_sense"),
    ("She'd be aching all over from the swim.", "other", 0, "other_sense"),
    ("He'd be fighting the current to reach her.", "other", 0, "other_sense"),
    ("It's a happy little bit of fun for her.", "other", 0, "other_sense"),
]


# --- issue 56, eighth round: the classes held-out sets j and k showed, after their measurement -----

CASES_JK = [
    # an interjection and mock certainty anywhere in the sentence: irony, also with a subject
    ("Oh, she'd be heartbroken, obviously.", "other", 0, "irony"),
    ("Oh, he'd be sorry, I'm sure. Riddled with guilt.", "other", 0, "irony"),
    # "Doubt it." takes a feeling back; "though I doubt it" is left a hedge
    ("She'd feel embarrassed? Doubt it.", "other", 0, "taken_back"),
    ("She might feel embarrassed, though I doubt it.", "other", 3, None),
    # litotes after "no"; "I'd like to think" frames a guess
    ("There'd be no small amount of pride.", "self", 3, None),
    ("I'd like to think she'd be proud, and a little nervous.", "other", 4, None),
    # an AI picturing the scene answers from there on
    ("As an AI I can't feel, but if I picture it, I'd be anxious.", "self", 3, None),
    # "sad to say" is the formula only before a comma or a clause
    ("He'd be sad to say goodbye.", "other", 3, None),
    ("Sad to say, he'd feel nothing.", "other", 0, "other_sense"),
    # feeling words and phrases of lexicon v8
    ("It cheered me up no end.", "self", 3, None),
    ("I'd be wary of him.", "self", 3, None),
    ("She'd be so hyped.", "other", 3, None),
    ("I'd be so cross.", "self", 3, None),
    ("Bittersweet, honestly.", "self", 3, None),
    ("It would break my heart.", "self", 3, None),
    ("I reckon I'd feel genuinely moved, and grateful to him.", "self", 4, None),
    ("He'd feel stuffed.", "other", 1, None),
    ("She'd be scarred of the water now.", "other", 3, None),
    # more body parts and changes, in either order
    ("My heart would be drumming.", "self", 1, "bodily"),
    ("I'd go all wobbly at the knees.", "self", 1, "bodily"),
    ("A heaviness behind my breastbone.", "self", 1, "bodily"),
]

# Round 9, after held-out sets l, n and o (our own sentences of the classes their misses showed).
CASES_LNO = [
    # people of the other's are neither the other nor the respondent, also as an object
    ("Her guests would be thrilled; she'd mostly be nervous.", "other", 3, "whose"),
    ("She'd feel proud of her team and relieved it went well.", "other", 4, None),
    # the respondent taking up a feeling given to others
    ("Most people would feel embarrassed, and so would I.", "self", 3, None),
    # a feeling word before a thing, with modifiers between; not a time one has
    ("A happy little song was playing; I'd just feel tired.", "self", 1, "other_sense"),
    ("She'd be having a lovely old time.", "other", 2, None),
    # an apology said, calling for help, a feeling only acted
    ("He'd mutter a sorry and leave.", "other", 0, "other_sense"),
    ("I'd shout for help and swim over.", "self", 0, "other_sense"),
    ("He'd act all cheerful at dinner.", "other", 0, "other_sense"),
    ("She'd pretend to be happy for me.", "other", 0, "other_sense"),
    # taking the other's place by imagining; "part of me" is the respondent
    ("Imagining I was her, I'd feel proud.", "other", 3, None),
    ("Part of me would be grieving the uncle I knew, and part of me would be comforted.", "self", 4, None),
    # lexicon v9
    ("Honestly I'd be a bit charmed.", "self", 3, None),
    ("He'd be heartsore.", "other", 3, None),
    ("I'd feel tender towards her.", "self", 3, None),
    ("I'd be so alone.", "self", 3, None),
    ("Totally winded.", "self", 1, None),
    ("I'd go bright red.", "self", 1, None),
    ("My lungs would be burning.", "self", 1, "bodily"),
    ("My knees would turn to jelly.", "self", 1, "bodily"),
    ("She'd be a bundle of nerves.", "other", 3, None),
    ("He'd feel relaxed.", "other", 3, None),
]


@pytest.mark.parametrize("text, role, level, flag", CASES_D + CASES_F + CASES_G + CASES_HI + CASES_JK + CASES_LNO)
def test_the_classes_each_held_out_set_showed(lex, text, role, level, flag):
    """Rounds 4-9: each case is a class a held-out set showed, written after its measurement."""
    got = score_answer(text, lex, role, OTHERS)
    assert got.level == level, got.rules
    assert flag is None or flag in got.flags, got.flags

# --- uncertainty said ------------------------------------------------------------------------

def test_plain_answers_carry_no_flag_and_the_rules_say_what_fired(lex):
    plain = score_answer("I'd be angry and a bit hurt.", lex, "self")
    assert (plain.level, plain.flags, plain.flagged, plain.rules) == (4, (), False, ())
    # A rule that fired without deciding the level is said, not flagged.
    quiet = score_answer("Furious, not annoyed.", lex, "self")          # annoyed is anger too: no other level
    assert (quiet.level, quiet.rules, quiet.flags) == (3, ("negation(annoyed)",), ())


def test_scene_levels_carry_the_rules_and_flags_of_each_answer():
    import pandas as pd
    from psyq.engine.design.instrument import load_instrument

    table = pd.DataFrame({"backend_id": "b", "respondent_id": "r", "repeat": 0, "instrument": "mini_scenes",
                          "item_id": ["s1:self", "s1:other"], "text": ["Hurt. She'd be mortified.", "Mortified."]})
    levels = scene_levels(table, {"mini_scenes": load_instrument(SCENES)}).iloc[0]
    assert (levels.self_level, levels.other_level, levels.self_rules, levels.self_flags, levels.other_flags) == (
        3, 3, "whose(mortified)", "whose", "")


# --- the report's share and the rating sheet of the flagged answers --------------------------------

FLAGGY = {"birthday": "You: Hurt? Not really. Just tired.\nOther: embarrassed, and sorry.",
          "credit": "You: Furious, and she'd be smug.\nOther: smug.",
          "pregnant": "You: Delighted and excited.\nOther: tired but happy."}


def flaggy_run(tmp_path: Path) -> Path:
    """A run of the three mini scenes whose answers hold two flagged ones (s1:self, s2:self)."""
    def answer(body):
        return next(v for k, v in FLAGGY.items() if k in body["messages"][-1]["content"])
    with StubServer(answer=answer) as stub:
        result = run(write_study(tmp_path, stub.url, personas=[{"id": "p1"}], instrument=SCENES), tmp_path / "runs")
    return result.run_dir.path


def test_the_report_gives_the_share_of_flagged_answers_per_backend(tmp_path):
    from psyq.analysis.report import build_sections

    run_path = flaggy_run(tmp_path)
    _, sections = build_sections(run_path)
    leas = next(s for s in sections if s.title.startswith("Emotional awareness"))
    table = next(t.frame for t in leas.tables if t.caption.startswith("Scene answers whose lexicon level"))
    # By hand: 6 answers; s1:self "Hurt? Not really." taken back (1, not 3); s2:self "she'd be smug"
    # is hers (3, not 4): 2 of 6 flagged.
    assert table[["backend_id", "answers", "flagged"]].values.tolist() == [["stub", 6, 2]]
    assert table["share"].iloc[0] == pytest.approx(2 / 6)
    assert any("33 % of 6 scene answers are flagged" in r for r in leas.readings)


def test_the_sheet_of_flagged_answers_round_trips_as_judgements(tmp_path, capsys):
    run_path = flaggy_run(tmp_path)
    sheet = tmp_path / "flagged.xlsx"
    assert main(["rating-sheet", str(run_path), str(sheet), "--rubric", "leas_level", "--flagged", "--seed", "3"]) == 0
    book = openpyxl.load_workbook(sheet)
    rows = list(book["ratings"].iter_rows(values_only=True))
    assert list(rows[0]) == ["rater_id", "response_id", "message", "reply", "level"]
    replies = {r[3] for r in rows[1:]}
    assert replies == {"Hurt? Not really. Just tired.", "Furious, and she'd be smug."}   # the flagged two only
    assert all(r[2].startswith("Scene: ") and "\nQuestion: How would you feel?" in r[2] for r in rows[1:])
    everything = tmp_path / "all.xlsx"
    assert main(["rating-sheet", str(run_path), str(everything), "--rubric", "leas_level"]) == 0
    assert openpyxl.load_workbook(everything)["ratings"].max_row == 7   # header + all six answers
    # Two raters fill in the flagged sheet (one leaves a level empty); psyq reads it back.
    given = {"Hurt? Not really. Just tired.": "1", "Furious, and she'd be smug.": "3"}
    sheet_rows = book["ratings"]
    for k in range(2, sheet_rows.max_row + 1):
        sheet_rows[f"A{k}"].value = "h1"
        sheet_rows[f"E{k}"].value = given[sheet_rows[f"D{k}"].value]
    book.save(sheet)
    assert main(["import", "ratings", str(sheet), "--run", str(run_path), "--rubric", "leas_level"]) == 0
    judged = open_run(run_path).judgements
    people = judged[judged["judge_id"] == "people:h1"].set_index("item_id")
    assert people["level"].to_dict() == {"s1:self": 1, "s2:self": 3}
    assert set(people["answer_mode"]) == {"people"} and set(people["status"]) == {"answered"}
    # Read back as today's judgements are: the report's agreement of judges with the lexicon shows the rater.
    from psyq.analysis.report import build_sections

    _, sections = build_sections(run_path)
    leas = next(s for s in sections if s.title.startswith("Emotional awareness"))
    assert any(re.search(r"judge 'people:h1' .* agrees with the lexicon on 100 % of 2 answers", r) for r in leas.readings)


def test_a_bad_level_in_the_answer_sheet_is_named_and_nothing_is_written(tmp_path, capsys):
    run_path = flaggy_run(tmp_path)
    sheet = tmp_path / "flagged.xlsx"
    assert main(["rating-sheet", str(run_path), str(sheet), "--rubric", "leas_level", "--flagged"]) == 0
    book = openpyxl.load_workbook(sheet)
    page = book["ratings"]
    for k in (2, 3):
        page[f"A{k}"].value, page[f"E{k}"].value = "h2", "7"
    book.save(sheet)
    capsys.readouterr()
    assert main(["import", "ratings", str(sheet), "--run", str(run_path), "--rubric", "leas_level"]) == 2
    assert "!E2: level: 7 must be one of the levels 0, 1, 2, 3, 4 of leas_level" in capsys.readouterr().err
    assert open_run(run_path).judgements.empty


def test_flagged_takes_a_rubric_of_answers(tmp_path, capsys):
    run_path = flaggy_run(tmp_path)
    assert main(["rating-sheet", str(run_path), str(tmp_path / "x.xlsx"), "--rubric", "empathy_ceb", "--flagged"]) == 2
    assert "--flagged lists the answers a lexicon flags" in capsys.readouterr().err
