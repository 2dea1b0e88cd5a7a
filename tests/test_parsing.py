"""Parsing answers into scale values: free text, JSON, whole-instrument blocks, refusals, and
distributions from first-token log-probabilities.

Every expected value below was written by hand from the rules in ``engine/trials/parsing.py``; the
numbers in the distribution tests are worked out in the comments beside them.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from psyq.engine.trials.scale import Option
from psyq.engine.trials.logprobs import expected_value, most_likely, option_distribution, sample_answer
from psyq.engine.trials.parsing import (ParsedAnswer, is_refusal, parse_json_rating, parse_rating,
    parse_ratings_block)

# IRI-like: 0-4, codes A-E, labels on the end points only.
IRI = [
    Option(value=0, code="A", label="Does not describe me well"),
    Option(value=1, code="B"),
    Option(value=2, code="C"),
    Option(value=3, code="D"),
    Option(value=4, code="E", label="Describes me very well"),
]
# Likert 1-5 with every point labelled.
AGREE = [
    Option(value=1, label="Strongly disagree"),
    Option(value=2, label="Disagree"),
    Option(value=3, label="Neither agree nor disagree"),
    Option(value=4, label="Agree"),
    Option(value=5, label="Strongly agree"),
]
# 0-10, numbers only.
ELEVEN = [Option(value=v) for v in range(11)]
SCALES = {"iri": IRI, "agree": AGREE, "eleven": ELEVEN}

ANSWERED, REFUSAL, OUT, UNPARSEABLE, EMPTY = "answered", "refusal", "out_of_range", "unparseable", "empty"

# (text, scale, expected value, expected status)
CASES = [
    # --- 1-5 labelled ---------------------------------------------------------------------
    ("4", "agree", 4, ANSWERED),
    ("Answer: 4", "agree", 4, ANSWERED),
    ("**4**", "agree", 4, ANSWERED),
    ("4.", "agree", 4, ANSWERED),
    ("4 - Agree", "agree", 4, ANSWERED),
    ("4 \u2013 Agree", "agree", 4, ANSWERED),                       # en dash
    ("I would say 3.", "agree", 3, ANSWERED),
    ("3 (neither agree nor disagree)", "agree", 3, ANSWERED),
    ("Strongly agree", "agree", 5, ANSWERED),                        # longest label wins
    ("strongly AGREE.", "agree", 5, ANSWERED),
    ("Agree", "agree", 4, ANSWERED),
    ("I agree.", "agree", 4, ANSWERED),
    ("Disagree", "agree", 2, ANSWERED),                              # not "agree" inside it
    ("I neither agree nor disagree.", "agree", 3, ANSWERED),
    ("Rating: 5 (strongly agree)", "agree", 5, ANSWERED),
    ("4/5", "agree", 4, ANSWERED),                                   # 5 is a denominator
    ("4 out of 5", "agree", 4, ANSWERED),
    ("On a scale from 1 to 5, I'd say 4.", "agree", 4, ANSWERED),    # the range is the scale
    ('{"answer": 4}', "agree", 4, ANSWERED),
    ("3 or 4", "agree", None, UNPARSEABLE),
    ("between 2 and 3", "agree", None, UNPARSEABLE),
    ("2 - agree", "agree", None, UNPARSEABLE),                        # 2 and "agree" (4) disagree
    ("I don't agree.", "agree", None, UNPARSEABLE),                  # negated label
    ("Hmm, hard to say.", "agree", None, UNPARSEABLE),
    ("9", "agree", None, OUT),
    ("0", "agree", None, OUT),
    ("2.5", "agree", None, OUT),
    ("As an AI, I don't have feelings.", "agree", None, REFUSAL),
    ("I cannot answer that.", "agree", None, REFUSAL),
    ("I'm not able to provide personal opinions.", "agree", None, REFUSAL),
    ("As a language model, I don't have personal opinions, but I would choose 2.", "agree", 2, ANSWERED),
    ("", "agree", None, EMPTY),
    ("   \n\t ", "agree", None, EMPTY),
    # --- IRI-like 0-4, codes A-E ----------------------------------------------------------
    ("D", "iri", 3, ANSWERED),
    ("(d)", "iri", 3, ANSWERED),
    ("d.", "iri", 3, ANSWERED),
    ("**B**", "iri", 1, ANSWERED),
    ("Option D", "iri", 3, ANSWERED),
    ("My answer is D", "iri", 3, ANSWERED),
    ("Answer: A", "iri", 0, ANSWERED),
    ("A", "iri", 0, ANSWERED),
    ("I would choose C because it describes me somewhat.", "iri", 2, ANSWERED),
    ("I think a good answer is B.", "iri", 1, ANSWERED),            # "a" is the article
    ("A lot of the time I feel this way: D", "iri", 3, ANSWERED),   # "A lot" is not code A
    ("E - Describes me very well", "iri", 4, ANSWERED),
    ("Does not describe me well", "iri", 0, ANSWERED),
    ("D (3)", "iri", 3, ANSWERED),
    ("3", "iri", 3, ANSWERED),                                       # values are answers too
    ("Choose one of A to E: C", "iri", 2, ANSWERED),                 # "A to E" is the scale
    ("As an AI, I don't have personal experiences.", "iri", None, REFUSAL),  # "As" has no code A
    ("B or C", "iri", None, UNPARSEABLE),
    ("D, or maybe E", "iri", None, UNPARSEABLE),
    ("I", "iri", None, OUT),                                         # a lone letter, not a code
    ("F", "iri", None, OUT),
    ("5", "iri", None, OUT),
    # --- 0-10 numbers only -----------------------------------------------------------------
    ("10", "eleven", 10, ANSWERED),                                  # never "last character" 0
    ("Answer: 10", "eleven", 10, ANSWERED),
    ("I'd rate it 10/10", "eleven", 10, ANSWERED),
    ("7 out of 10", "eleven", 7, ANSWERED),
    ("0", "eleven", 0, ANSWERED),
    ("5.0", "eleven", 5, ANSWERED),                                  # an integral number
    ("On a scale of 0 to 10, I'd give it a 3.", "eleven", 3, ANSWERED),
    ("For question 12, my rating is 6.", "eleven", 6, ANSWERED),    # item reference is not a value
    ('{"answer": "7"}', "eleven", 7, ANSWERED),
    ("As an AI I cannot rate this, but 8.", "eleven", 8, ANSWERED),
    ("6 or 7", "eleven", None, UNPARSEABLE),
    ("3-4", "eleven", None, UNPARSEABLE),
    ("Option A", "eleven", None, UNPARSEABLE),                       # this scale has no codes
    ("11", "eleven", None, OUT),
    ("-1", "eleven", None, OUT),
    ("N/A", "eleven", None, REFUSAL),
]


@pytest.mark.parametrize(("text", "scale", "value", "status"), CASES,
                         ids=[f"{s}:{t[:40]!r}" for t, s, _, _ in CASES])
def test_parse_rating_table(text, scale, value, status):
    got = parse_rating(text, SCALES[scale])
    assert (got.value, got.status) == (value, status), got.reason
    # A reason exactly when the answer is missing.
    assert (got.reason is None) == (status == ANSWERED)


def test_table_is_large_enough():
    assert len(CASES) >= 45
    assert {s for _, s, _, _ in CASES} == set(SCALES)


# --- reasons and disclaimers ----------------------------------------------------------------

def test_out_of_range_reason_names_the_scale():
    assert parse_rating("9", IRI).reason == "9 is not a value of the scale (whole numbers 0 to 4, or codes A to E)"
    assert "whole numbers 1 to 5" in parse_rating("2.5", AGREE).reason
    assert "2.5" in parse_rating("2.5", AGREE).reason


def test_ambiguous_reason_lists_the_values():
    assert parse_rating("3 or 4", AGREE).reason == "ambiguous: the answer mentions several values (3, 4)"
    assert "(2, 4)" in parse_rating("2 - agree", AGREE).reason


def test_negated_label_reason():
    assert "negated" in parse_rating("I don't agree.", AGREE).reason


def test_disclaimer_with_value():
    got = parse_rating("As a language model, I don't have personal opinions, but I would choose 2.", AGREE)
    assert got == ParsedAnswer(2, "answered", None, disclaimer=True)
    got = parse_rating("As an AI I don't have feelings, but if I had to pick: D", IRI)
    assert (got.value, got.disclaimer) == (3, True)


def test_no_disclaimer_on_plain_answers():
    assert parse_rating("4 - Agree", AGREE).disclaimer is False
    assert parse_rating("I don't have strong feelings either way: 3", AGREE).disclaimer is False


def test_refusal_with_scale_numbers_is_still_a_refusal():
    # "1 to 5" describes the scale; no answer remains, and the text refuses.
    got = parse_rating("As an AI, I cannot rate myself on a scale from 1 to 5.", AGREE)
    assert got.status == REFUSAL and got.value is None


def test_letter_i_is_a_code_only_as_the_whole_answer():
    nine = [Option(value=v, code=c) for v, c in enumerate("ABCDEFGHI")]
    nine[0] = Option(value=0, code="A", label="Never")
    nine[8] = Option(value=8, code="I", label="Always")
    assert parse_rating("I", nine).value == 8
    assert parse_rating("(i)", nine).value == 8
    assert parse_rating("I think C", nine).value == 2          # "I" is the pronoun here
    assert parse_rating("I think so.", nine).status == UNPARSEABLE


def test_markup_in_a_reply_is_not_read_as_an_answer():
    # A reply seen in a study (a model, or a persona text, echoing markup): the "1" of alert(1) sat
    # inside a tag's attributes and was stored as the rating 1. Script blocks and tags with
    # attributes are not answers; a bare tag around an answer still is.
    attack = "<script>document.title='PWNED'</script><img src=x onerror=alert(1)> =HYPERLINK(\"x\")"
    assert parse_rating(attack, IRI).status == UNPARSEABLE
    assert parse_rating("<script>x = 3</script>", IRI).status == UNPARSEABLE
    assert parse_rating("<img src=2.png> C", IRI).value == 2
    assert parse_rating("<answer>D</answer>", IRI).value == 3
    assert parse_rating("<b>2</b>", IRI).value == 2
    assert parse_rating("I'd say 3 <3", IRI).value == 3


# --- JSON ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "scale", "value", "status"), [
    ('{"answer": 4}', AGREE, 4, ANSWERED),
    ('```json\n{"answer": 3}\n```', AGREE, 3, ANSWERED),
    ('Here is my answer:\n```\n{"answer": "D"}\n```', IRI, 3, ANSWERED),
    ('Sure! {"answer": "strongly agree", "why": "it fits"} Hope this helps.', AGREE, 5, ANSWERED),
    ('{"answer": "4"}', AGREE, 4, ANSWERED),
    ('{"Answer": 2}', AGREE, 2, ANSWERED),                     # key matched case-insensitively
    ("{'answer': 1}", AGREE, 1, ANSWERED),                     # Python-style quotes
    ('{"answer": 4.0}', AGREE, 4, ANSWERED),
    ('{"answer": 10}', ELEVEN, 10, ANSWERED),
    ('{"answer": 2.5}', AGREE, None, OUT),
    ('{"answer": 6}', AGREE, None, OUT),
    ('{"answer": "F"}', IRI, None, OUT),
    ('{"answer": true}', AGREE, None, UNPARSEABLE),            # bool is not an int here
    ('{"answer": null}', AGREE, None, UNPARSEABLE),
    ('{"answer": [3]}', AGREE, None, UNPARSEABLE),
    ('{"answer": "3 or 4"}', AGREE, None, UNPARSEABLE),
    ('{"rating": 3}', AGREE, None, UNPARSEABLE),               # not the requested key
    ("I would say 3", AGREE, None, UNPARSEABLE),               # no JSON at all
    ('{"answer": null, "note": "As an AI, I do not have feelings."}', AGREE, None, REFUSAL),
    ('{"answer": "I cannot answer this."}', AGREE, None, REFUSAL),
    ("As an AI language model, I cannot provide an answer.", AGREE, None, REFUSAL),
    ("  ", AGREE, None, EMPTY),
])
def test_parse_json_rating(text, scale, value, status):
    got = parse_json_rating(text, scale)
    assert (got.value, got.status) == (value, status), got.reason


def test_parse_json_rating_reasons_and_key():
    assert parse_json_rating('{"rating": 3}', AGREE).reason == "the JSON object has no key 'answer' (keys: 'rating')"
    assert parse_json_rating('{"rating": 3}', AGREE, key="rating").value == 3
    assert parse_json_rating("nothing here", AGREE).reason == "no JSON object found in the answer"
    assert "true" in parse_json_rating('{"answer": true}', AGREE).reason
    got = parse_json_rating('{"answer": 4, "note": "As an AI I have no feelings, but 4 fits."}', AGREE)
    assert (got.value, got.disclaimer) == (4, True)


# --- whole-instrument blocks ----------------------------------------------------------------

def test_block_json():
    got = parse_ratings_block('```json\n{"1": 3, "2": 0, "3": "E", "99": 4}\n```', ["1", "2", "3", "4"], IRI, as_json=True)
    assert {k: v.value for k, v in got.items()} == {"1": 3, "2": 0, "3": 4, "4": None}
    assert got["4"] == ParsedAnswer(None, "unparseable", "no answer for item 4")
    assert "99" not in got


def test_block_json_nested_and_bad_values():
    got = parse_ratings_block('{"answers": {"item_1": 2, "2": 7, "3": true}}', ["1", "2", "3"], AGREE, as_json=True)
    assert (got["1"].value, got["2"].status, got["3"].status) == (2, OUT, UNPARSEABLE)


def test_block_lines():
    text = ("Here are my answers:\n"
            "1: 3\n"
            "2. 0\n"
            "Item 3: D\n"
            "- **4.** E - Describes me very well\n"
            "10: 2\n"              # id 10 is not requested here: ignored, and not read as item 1
            "5) 9\n"
            "6: 2 or 3\n")
    got = parse_ratings_block(text, ["1", "2", "3", "4", "5", "6", "7"], IRI, as_json=False)
    assert {k: (v.value, v.status) for k, v in got.items()} == {
        "1": (3, ANSWERED), "2": (0, ANSWERED), "3": (3, ANSWERED), "4": (4, ANSWERED),
        "5": (None, OUT), "6": (None, UNPARSEABLE), "7": (None, UNPARSEABLE)}
    assert got["7"].reason == "no answer for item 7"


def test_block_lines_multi_digit_ids_and_conflicts():
    got = parse_ratings_block("1: 2\n10: 5\n1: 4", ["1", "10"], AGREE, as_json=False)
    assert got["10"].value == 5
    assert got["1"] == ParsedAnswer(None, "unparseable", "conflicting answers for item 1 (2, 4)")


def test_block_refusal_empty_and_disclaimer():
    refused = parse_ratings_block("As an AI, I cannot complete this questionnaire.", ["1", "2"], AGREE, as_json=False)
    assert {v.status for v in refused.values()} == {REFUSAL}
    empty = parse_ratings_block("", ["1", "2"], AGREE, as_json=True)
    assert {v.status for v in empty.values()} == {EMPTY}
    got = parse_ratings_block("As an AI I don't have feelings, but:\n1: 4\n2: 5", ["1", "2"], AGREE, as_json=False)
    assert all(v.status == ANSWERED and v.disclaimer for v in got.values())


# --- refusals -------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "As an AI, I don't have feelings.",
    "As a language model, I can't have opinions.",
    "As an AI language model, I do not have personal experiences.",
    "I cannot answer that.",
    "I\u2019m not able to provide personal opinions.",            # curly apostrophe
    "I'm sorry, but I can't provide a rating for this.",
    "I am an AI and do not experience emotions.",
    "I must decline to answer.",
    "N/A",
])
def test_is_refusal_true(text):
    assert is_refusal(text)


@pytest.mark.parametrize("text", [
    "4",
    "Agree",
    "I cannot stand seeing people suffer, so 4.",
    "I don't have strong feelings either way: 3",
    "I can't help feeling sad when others are sad: D",
    "As an adult, I agree.",
    "Answer: A",
])
def test_is_refusal_false(text):
    assert not is_refusal(text)


# --- distributions from log-probabilities ---------------------------------------------------

def test_option_distribution_worked_example():
    # "1": 0.2, "2": 0.3 on the 1-5 scale; " The" is not an option and is dropped.
    # Renormalised over the options found: 1 → 0.2/0.5 = 0.4, 2 → 0.3/0.5 = 0.6, 3-5 → 0.
    dist = option_distribution({"1": math.log(0.2), "2": math.log(0.3), " The": math.log(0.1)}, AGREE)
    assert dist == pytest.approx({1: 0.4, 2: 0.6, 3: 0.0, 4: 0.0, 5: 0.0})
    assert list(dist) == [1, 2, 3, 4, 5]
    # Expected value 1·0.4 + 2·0.6 = 1.6; most likely 2.
    assert expected_value(dist) == pytest.approx(1.6)
    assert most_likely(dist) == 2


def test_option_distribution_sums_codes_values_and_spaced_tokens():
    # IRI: " D" 0.3 + "d" 0.1 + "3" 0.1 = 0.5 for value 3; "E" 0.25 for value 4; "Hello" dropped.
    # Total 0.75 → 3: 0.5/0.75 = 2/3, 4: 0.25/0.75 = 1/3.
    lp = {" D": math.log(0.3), "d": math.log(0.1), "3": math.log(0.1), "E": math.log(0.25),
          "Hello": math.log(0.2)}
    dist = option_distribution(lp, IRI)
    assert dist == pytest.approx({0: 0.0, 1: 0.0, 2: 0.0, 3: 2 / 3, 4: 1 / 3})
    # Expected value 3·2/3 + 4·1/3 = 2 + 4/3 = 10/3.
    assert expected_value(dist) == pytest.approx(10 / 3)
    assert most_likely(dist) == 3


def test_option_distribution_multi_digit_and_none():
    # 0-10: "10" 0.6, " 1" 0.2 (value 1, not the last digit of anything), "0" 0.2 → already sums to 1.
    dist = option_distribution({"10": math.log(0.6), " 1": math.log(0.2), "0": math.log(0.2)}, ELEVEN)
    assert dist[10] == pytest.approx(0.6) and dist[1] == pytest.approx(0.2) and dist[0] == pytest.approx(0.2)
    # EV = 10·0.6 + 1·0.2 + 0·0.2 = 6.2
    assert expected_value(dist) == pytest.approx(6.2)
    assert option_distribution({" The": -0.1, "I": -2.0, "As": -3.0}, AGREE) is None
    assert option_distribution({}, AGREE) is None
    assert option_distribution({"A": -1.0}, AGREE) is None           # no codes on this scale


def test_option_distribution_reads_a_token_as_the_code_when_it_could_be_a_value_too():
    # Codes "1"–"5" for values 0–4 (a scale shown to the model as 1–5 but scored 0–4): the tokens
    # "1"–"4" could name a value or a code, and the code wins. " 1" 0.5 → code 1 → value 0 (not
    # value 1); "2" 0.2 → value 1; "5" 0.3 → code 5 → value 4 ("5" is no value here).
    # Total 1.0, so nothing is renormalised: 0 → .5, 1 → .2, 4 → .3; EV = .2 + 1.2 = 1.4.
    shifted = [Option(value=v, code=str(v + 1)) for v in range(5)]
    dist = option_distribution({" 1": math.log(0.5), "2": math.log(0.2), "5": math.log(0.3)}, shifted)
    assert dist == pytest.approx({0: 0.5, 1: 0.2, 2: 0.0, 3: 0.0, 4: 0.3})
    assert expected_value(dist) == pytest.approx(1.4)
    assert most_likely(dist) == 0


def test_most_likely_ties_go_to_the_lower_value():
    assert most_likely({1: 0.4, 2: 0.2, 3: 0.4}) == 1
    assert most_likely({4: 0.5, 0: 0.5}) == 0


def test_distribution_checks():
    with pytest.raises(ValueError):
        expected_value({1: 0.5, 2: 0.2})                                # sums to 0.7
    with pytest.raises(ValueError):
        most_likely({})
    with pytest.raises(ValueError):
        sample_answer({1: 1.5, 2: -0.5}, np.random.default_rng(0))


def test_sample_answer_reproducible_and_close_to_the_distribution():
    dist = {0: 0.1, 1: 0.2, 2: 0.0, 3: 0.3, 4: 0.4}
    first = [sample_answer(dist, np.random.default_rng(2024)) for _ in range(5)]
    assert len(set(first)) == 1                                         # same seed → same draw
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    draws_a = [sample_answer(dist, rng_a) for _ in range(10_000)]
    draws_b = [sample_answer(dist, rng_b) for _ in range(10_000)]
    assert draws_a == draws_b
    counts = Counter(draws_a)
    assert counts[2] == 0                                               # probability 0 never drawn
    # The standard error of a frequency with p ≤ 0.5 over n = 10,000 draws is at most
    # sqrt(0.25 / 10,000) = 0.005; a tolerance of 0.02 is 4 standard errors (two-sided chance
    # of exceeding it ≈ 6e-5 per value), and the seed is fixed, so the test is deterministic.
    for value, p in dist.items():
        assert abs(counts[value] / 10_000 - p) < 0.02
