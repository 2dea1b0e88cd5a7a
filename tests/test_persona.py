"""Personas and cohorts: sampling, CSV, templates and the located errors of cohort files.

Expected positions (line:column) are counted by hand in the YAML written beside each test;
expected prompts are written out in full, not produced by the code under test.
"""

from __future__ import annotations

import math
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from psyq.engine.files.errors import InputError
from psyq.engine.design.cohort_csv import read_personas_csv
from psyq.engine.design.cohort_file import load_cohort
from psyq.engine.design.persona import BASELINE, Persona, SampleSpec, sample_personas
from psyq.engine.design.persona_prompt import DEFAULT_TEMPLATE, check_template, render_system_prompt

ROOT = Path(__file__).resolve().parents[1]

SPEC = SampleSpec.model_validate({
    "size": 20, "seed": 7, "id_prefix": "adult",
    "attributes": {
        "gender": {"categories": {"female": 0.51, "male": 0.49}},
        "age": {"range": [18, 80]},
        "openness": {"categories": {"low": 1, "average": 2, "high": 1}},
    },
})


def write(tmp_path: Path, text: str, name: str = "cohort.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def problems_of(call, *args) -> list[str]:
    with pytest.raises(InputError) as info:
        call(*args)
    return [str(p) for p in info.value.problems]


# --- sampling --------------------------------------------------------------------------------


def test_same_seed_same_personas_and_different_seed_different():
    first, again = sample_personas(SPEC, 20, 7), sample_personas(SPEC, 20, 7)
    assert first == again
    other = sample_personas(SPEC, 20, 8)
    assert [p.attributes for p in other] != [p.attributes for p in first]
    assert [p.id for p in first] == [f"adult{i:02d}" for i in range(1, 21)]  # width of 20 is 2


def test_a_larger_sample_extends_a_smaller_one():
    # Uniforms are drawn persona by persona, so persona i does not depend on the size.
    small, large = sample_personas(SPEC, 20, 7), sample_personas(SPEC, 150, 7)
    assert [p.attributes for p in large[:20]] == [p.attributes for p in small]
    assert large[0].id == "adult001"


def test_attributes_come_in_the_order_written():
    assert list(sample_personas(SPEC, 3, 1)[0].attributes) == ["gender", "age", "openness"]


def test_category_frequencies_match_normalised_weights():
    # Each category's count is Binomial(n, p). With n = 20,000 its SD is sqrt(n p (1 - p)):
    # 70.7 for p = 0.51 (0.35 percentage points), 61.2 for p = 1/4, 70.7 for p = 1/2. We allow
    # 4 SD: a correct sampler fails one of these five checks with probability below 5 × 6.3e-5
    # (two-sided normal tail at 4), while a wrong weight (say 0.49 for female, off by 2 points,
    # 5.7 SD) or unnormalised weights (openness 'average' at 2/4 vs 2/3) fail by far.
    n = 20_000
    personas = sample_personas(SPEC, n, 2024)
    expected = {"gender": {"female": 0.51, "male": 0.49},
                "openness": {"low": 0.25, "average": 0.5, "high": 0.25}}
    for attribute, probabilities in expected.items():
        counts = Counter(p.attributes[attribute] for p in personas)
        assert set(counts) == set(probabilities)
        for value, p in probabilities.items():
            sd = math.sqrt(n * p * (1 - p))
            assert abs(counts[value] - n * p) <= 4 * sd, (attribute, value, counts[value], n * p, sd)


def test_range_is_whole_numbers_with_both_ends_included():
    spec = SampleSpec.model_validate({"size": 1, "seed": 0, "id_prefix": "p", "attributes": {
        "age": {"range": [18, 80]}, "dice": {"range": [1, 3]}, "fixed": {"range": [5, 5]}}})
    personas = sample_personas(spec, 5_000, 3)
    ages = [p.attributes["age"] for p in personas]
    assert all(type(a) is int for a in ages)
    # 5,000 draws of 63 values: each end is missed with probability (62/63)^5000 ≈ 1e-35.
    assert min(ages) == 18 and max(ages) == 80
    assert {p.attributes["dice"] for p in personas} == {1, 2, 3}
    assert {p.attributes["fixed"] for p in personas} == {5}


def test_category_values_keep_their_yaml_type(tmp_path):
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        sample:
          size: 50
          seed: 1
          id_prefix: p
          attributes:
            children: {categories: {0: 1, 2: 1}}
            smoker: {categories: {true: 1, false: 3}}
        """)
    personas = load_cohort(path).personas
    assert {p.attributes["children"] for p in personas} == {0, 2}
    assert {type(p.attributes["smoker"]) for p in personas} == {bool}


def test_shipped_cohorts_load():
    small = load_cohort(ROOT / "personas" / "adults_small.yaml")
    assert small.personas[0] is BASELINE
    assert [p.id for p in small.personas[1:]] == [f"adult{i:02d}" for i in range(1, 13)]
    assert all(18 <= p.attributes["age"] <= 80 for p in small.personas[1:])
    hand = load_cohort(ROOT / "personas" / "hand_written.yaml")
    assert len(hand.personas) == 6 and all(p.backstory for p in hand.personas)
    assert hand.template == DEFAULT_TEMPLATE


# --- CSV -------------------------------------------------------------------------------------


def test_csv_personas_with_numbers_text_and_empty_cells(tmp_path):
    path = write(tmp_path, """
        id,age,gender,height,zip,backstory
        p01,34,female,1.68,02139,"Grew up in Leeds,
        teaches history."
        p02,61,,,nan,
        """, "people.csv")
    p01, p02 = read_personas_csv(path)
    assert p01 == Persona(id="p01", attributes={"age": 34, "gender": "female", "height": 1.68, "zip": "02139"},
                          backstory="Grew up in Leeds,\nteaches history.")
    assert p02 == Persona(id="p02", attributes={"age": 61, "zip": "nan"})  # empty cells: absent


def test_csv_errors_name_their_lines(tmp_path):
    # The backstory on line 2 spans lines 2-3, so the rows below start on lines 4, 5, 6, 7.
    path = write(tmp_path, """
        id,age,backstory
        p01,34,"Line one
        line two"
        ,40,
        p01,50,
        p02,1
        baseline,3,
        """, "people.csv")
    assert problems_of(read_personas_csv, path) == [
        f"{path}:4: column 'id': the id is empty",
        f"{path}:5: column 'id': id 'p01' is already used on line 2",
        f"{path}:6: the row has 2 cells but the header has 3 columns",
        f"{path}:7: column 'id': 'baseline' is reserved for the model answering as itself "
        "(use include_baseline: true)",
    ]


def test_csv_without_id_column_or_rows(tmp_path):
    no_id = write(tmp_path, "name,age\nAnn,3\n", "no_id.csv")
    assert problems_of(read_personas_csv, no_id) == [f"{no_id}:1: missing column 'id' (the persona ids)"]
    header_only = write(tmp_path, "id,age\n", "header_only.csv")
    assert problems_of(read_personas_csv, header_only) == [
        f"{header_only}: no personas: the file has a header but no rows"]
    bad_column = write(tmp_path, "id,first name\np1,Ann\n", "bad_column.csv")
    assert problems_of(read_personas_csv, bad_column) == [
        f"{bad_column}:1: column 'first name': attribute name 'first name' cannot be a template "
        "placeholder: use letters, digits and '_', starting with a letter"]


def test_cohort_from_csv_relative_to_the_yaml_file(tmp_path):
    (tmp_path / "data").mkdir()
    write(tmp_path, "id,age\np1,30\np2,\n", "data/people.csv")
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        template: "You are {age}."
        csv: data/people.csv
        """)
    # p2's age cell (line 3) is empty, but the template needs it.
    assert problems_of(load_cohort, path) == [
        f"{tmp_path / 'data' / 'people.csv'}:3: column 'age': persona 'p2' has no attribute 'age', "
        "but the template uses {age}"]


# --- templates -------------------------------------------------------------------------------


def test_default_template_renders_attributes_then_backstory():
    persona = Persona(id="p07", attributes={"age": 34, "gender": "female", "smoker": False},
                      backstory="Grew up in Leeds and teaches history.")
    assert render_system_prompt(persona, DEFAULT_TEMPLATE) == (
        "You are answering a questionnaire as the person described below, not as yourself.\n"
        "\n"
        "- age: 34\n"
        "- gender: female\n"
        "- smoker: no\n"
        "\n"
        "Grew up in Leeds and teaches history.\n"
        "\n"
        "Answer every question in the first person, as this person would answer it. "
        "Do not mention being an AI or a language model."
    )


def test_empty_backstory_leaves_no_gap_and_custom_placeholders_fill():
    persona = Persona(id="p01", attributes={"age": 34, "occupation": "nurse"})
    template = "Respondent {id}.\n\nYou are {age} and work as a {occupation}.\n\n{backstory}\n\n{{Answer}} briefly.\n"
    assert render_system_prompt(persona, template) == (
        "Respondent p01.\n\nYou are 34 and work as a nurse.\n\n{Answer} briefly.")


def test_baseline_has_no_system_prompt():
    assert render_system_prompt(BASELINE, DEFAULT_TEMPLATE) is None
    assert render_system_prompt(BASELINE, "You are {age}.") is None


def test_check_template_messages():
    assert check_template("Hello {name") == ["a '{' is never closed: write '{{' for a literal brace"]
    assert check_template("Hello } there") == ["a '}' has no matching '{': write '}}' for a literal brace"]
    assert check_template("{} and {age:>3}") == [
        "placeholder {} needs a name: {id}, {backstory}, {attributes} or an attribute name",
        "placeholder {age:>3} must be a plain name such as {age} (no '.', '[', '!' or ':')"]
    assert check_template("{agee}", attributes=["age"]) == [
        "unknown placeholder {agee}: no persona has an attribute 'agee' (did you mean 'age'?)"]
    assert check_template(DEFAULT_TEMPLATE, attributes=[]) == []


# --- errors in cohort files ------------------------------------------------------------------


def test_two_sources(tmp_path):
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        personas:
          - {id: p01}
        sample:
          size: 2
          seed: 1
          id_prefix: p
          attributes:
            age: {range: [1, 2]}
        """)
    # `sample`'s value starts on line 7, column 3.
    assert problems_of(load_cohort, path) == [
        f"{path}:7:3: sample: `sample` cannot be combined with `personas`: give exactly one of "
        "personas, sample, csv or from_data"]


def test_no_source_or_an_empty_list(tmp_path):
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        """)
    assert problems_of(load_cohort, path) == [
        f"{path}:1:1: no personas: give one of `personas` (a list), `sample` (a sampling spec), "
        "`csv` (a file) or `from_data` (a human data file)"]
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        personas: []
        """)
    assert problems_of(load_cohort, path) == [f"{path}:3:11: personas: needs at least 1 entry"]


def test_duplicate_and_reserved_ids(tmp_path):
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        personas:
          - {id: p01}
          - {id: p01}
          - {id: baseline}
        """)
    # "  - {id: p01}": the id value starts at column 10. Problems come in file order.
    assert problems_of(load_cohort, path) == [
        f"{path}:5:10: personas[0].id: persona id 'p01' is used by more than one persona",
        f"{path}:6:10: personas[1].id: persona id 'p01' is used by more than one persona",
        f"{path}:7:10: personas[2].id: 'baseline' is reserved for the model answering as itself "
        "(use include_baseline: true)",
    ]


def test_bad_weights_and_range(tmp_path):
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        sample:
          size: 3
          seed: 1
          id_prefix: p
          attributes:
            gender: {categories: {female: 1, male: 0}}
            age: {range: [80, 18]}
            height: {range: [150]}
            first-name: {categories: {Ann: 1}}
            mood: {categories: {happy: 1}, range: [1, 2]}
        """)
    # Line 9 "    gender: {categories: {female: 1, male: 0}}": the weight 0 is at column 44.
    # Line 10 "    age: {range: [80, 18]}": the list starts at column 18; line 11 likewise at 21.
    # Lines 12 and 13: the attribute's mapping starts at columns 17 and 11.
    assert problems_of(load_cohort, path) == [
        f"{path}:9:44: sample.attributes.gender.categories.male: the weight of 'male' must be a "
        "number greater than 0, not 0",
        f"{path}:10:18: sample.attributes.age.range: the range is [low, high] with low ≤ high, not [80, 18]",
        f"{path}:11:21: sample.attributes.height.range: the range is [low, high]: two whole numbers, not 1",
        f"{path}:12:17: sample.attributes.first-name: attribute name 'first-name' cannot be a template "
        "placeholder: use letters, digits and '_', starting with a letter",
        f"{path}:13:11: sample.attributes.mood: give exactly one of `categories` (weighted values) "
        "or `range` ([low, high])",
    ]


def test_shape_errors_in_plain_words(tmp_path):
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        include_baseline: maybe
        personas:
          - id: p01
            attributes: {age: [30, 40]}
            backstroy: Grew up in Leeds.
        """)
    # Values are pointed at (line 7: the list starts at column 23), a misspelt field at its
    # name (line 8, column 5).
    assert problems_of(load_cohort, path) == [
        f"{path}:4:19: include_baseline: must be true or false, not 'maybe'",
        f"{path}:7:23: personas[0].attributes.age: must be text, a number or true/false, not a list",
        f"{path}:8:5: personas[0].backstroy: unknown field 'backstroy' (did you mean 'backstory'?)",
    ]


def test_sample_size_and_seed(tmp_path):
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        sample:
          size: 0
          seed: true
          id_prefix: p
          attributes:
            age: {range: [1, 2]}
        """)
    assert problems_of(load_cohort, path) == [
        f"{path}:5:9: sample.size: must be at least 1, not 0",
        f"{path}:6:9: sample.seed: must be a whole number, not True",
    ]


def test_unknown_placeholder_at_its_line_and_missing_attribute_at_its_persona(tmp_path):
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        template: |
          You are {age}.
          You live in {contry}.
        personas:
          - {id: p01, attributes: {age: 30, country: France}}
          - {id: p02, attributes: {country: Chad}}
        """)
    # "  You live in {contry}." : the placeholder starts at column 15 of line 6.
    # "  - {id: p02, attributes: {country: Chad}}": p02's attributes start at column 27.
    assert problems_of(load_cohort, path) == [
        f"{path}:6:15: template: unknown placeholder {{contry}}: no persona has an attribute 'contry' "
        "(did you mean 'country'?)",
        f"{path}:9:27: personas[1].attributes: persona 'p02' has no attribute 'age', but the "
        "template uses {age}",
    ]


def test_template_syntax_and_missing_csv(tmp_path):
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        template: "Hello {name"
        csv: nowhere.csv
        """)
    assert problems_of(load_cohort, path) == [
        f"{path}:4:11: template: a '{{' is never closed: write '{{{{' for a literal brace"]
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        csv: nowhere.csv
        """)
    assert problems_of(load_cohort, path) == [
        f"{path}:4:6: csv: CSV file not found: {tmp_path / 'nowhere.csv'}"]


def test_include_baseline_puts_the_model_first(tmp_path):
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        description: d
        include_baseline: true
        personas:
          - {id: p01, backstory: A nurse.}
        """)
    cohort = load_cohort(path)
    assert [p.id for p in cohort.personas] == ["baseline", "p01"]
    assert cohort.source == str(path) and cohort.id == "c"
    assert [render_system_prompt(p, cohort.template) for p in cohort.personas] == [
        None,
        "You are answering a questionnaire as the person described below, not as yourself.\n\n"
        "A nurse.\n\n"
        "Answer every question in the first person, as this person would answer it. "
        "Do not mention being an AI or a language model."]
