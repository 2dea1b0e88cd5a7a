"""The JSON Schema that editors use must match the loader, and accept what the loader accepts."""

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "instruments" / "instrument.schema.json"
SHIPPED = sorted((ROOT / "instruments").glob("*.yaml")) + [ROOT / "tests" / "data" / "mini_1to7.yaml"]


def test_committed_schema_is_what_psyq_schema_prints():
    printed = psyq_in_process("schema", check=True).stdout
    assert json.loads(printed) == json.loads(SCHEMA_FILE.read_text()), \
        "instruments/instrument.schema.json is stale: regenerate with `psyq schema > instruments/instrument.schema.json`"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_files_point_to_the_schema_and_satisfy_it(path):
    text = path.read_text()
    assert text.splitlines()[0].startswith("# yaml-language-server: $schema=")
    # jsonschema is an independent validator of the same shape rules pydantic enforces.
    jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text())).validate(yaml.safe_load(text))


def test_schema_rejects_what_the_loader_rejects():
    data = yaml.safe_load((ROOT / "tests" / "data" / "mini_1to7.yaml").read_text())
    data["items"][0]["reverse"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text())).validate(data)


STUDY_SCHEMA = ROOT / "studies" / "study.schema.json"


def test_committed_study_schema_is_what_psyq_schema_study_prints():
    printed = psyq_in_process("schema", "study", check=True).stdout
    assert json.loads(printed) == json.loads(STUDY_SCHEMA.read_text()), \
        "studies/study.schema.json is stale: regenerate with `psyq schema study > studies/study.schema.json`"


@pytest.mark.parametrize("path", sorted((ROOT / "studies").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_studies_satisfy_the_study_schema(path):
    jsonschema.Draft202012Validator(json.loads(STUDY_SCHEMA.read_text())).validate(yaml.safe_load(path.read_text()))


COHORT_SCHEMA = ROOT / "personas" / "cohort.schema.json"


def test_committed_cohort_schema_is_what_psyq_schema_cohort_prints():
    printed = psyq_in_process("schema", "cohort", check=True).stdout
    assert json.loads(printed) == json.loads(COHORT_SCHEMA.read_text()), \
        "personas/cohort.schema.json is stale: regenerate with `psyq schema cohort > personas/cohort.schema.json`"


@pytest.mark.parametrize("path", sorted((ROOT / "personas").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_cohorts_point_to_the_cohort_schema_and_satisfy_it(path):
    text = path.read_text()
    assert text.splitlines()[0] == "# yaml-language-server: $schema=cohort.schema.json"
    jsonschema.Draft202012Validator(json.loads(COHORT_SCHEMA.read_text())).validate(yaml.safe_load(text))


def test_cohort_schema_rejects_what_the_loader_rejects(tmp_path):
    # A persona with an unknown field and a sample with a negative seed: both refused by
    # `psyq validate` (the loader) and by the schema (jsonschema, an independent validator).
    from psyq.cli import main
    validator = jsonschema.Draft202012Validator(json.loads(COHORT_SCHEMA.read_text()))
    for bad in ({"psyq": "cohort/1", "id": "c", "personas": [{"id": "p1", "agee": 3}]},
                {"psyq": "cohort/1", "id": "c", "sample": {"size": 2, "seed": -1, "id_prefix": "p",
                                                           "attributes": {"age": {"range": [20, 30]}}}}):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(bad)
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(bad))
        assert main(["validate", str(path)]) == 2
