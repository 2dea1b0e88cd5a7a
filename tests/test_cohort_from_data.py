"""A cohort drawn from a human data file (`from_data:` in a cohort file, issue 28).

Twins (one persona per row, id = the row's respondent id) and draws (n personas ∝ a weight
column, with or without replacement, optionally stratified), checked against the shipped
Briganti et al. (2018) IRI file and against data sets built here with known weights; the
record of the draw in a real run's manifest (stub server); rows skipped and said; every
mistake reported by `psyq validate` at its file:line:column.
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
import textwrap
import warnings
from pathlib import Path

import pytest
import yaml

from psyq import administer, load_cohort, load_study
from psyq.engine.backends import make_backend
from psyq.engine.administer.record import run_id_for
from psyq.engine.design.cohort_data import allocate
from psyq.engine.files.errors import InputError
from psyq.engine.files.notices import InputNotice
from stub_server import StubServer
from test_malformed import Child, _stop_runner  # noqa: F401  (the runner's fixture stops it after this module)
from cli_helper import psyq_in_process

ROOT = Path(__file__).resolve().parents[1]
BRIGANTI = ROOT / "instruments" / "data" / "iri_briganti2018_keyed.csv"


def briganti_rows() -> dict[str, str]:
    """respondent id -> gender as the file writes it (F/M), read here with the csv module."""
    with BRIGANTI.open(newline="") as handle:
        return {row["respondent_id"]: row["gender"] for row in csv.DictReader(handle)}


def cohort_file(tmp_path: Path, from_data: dict, name: str = "cohort.yaml", **top) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", **top, "from_data": from_data},
                                   sort_keys=False))
    return path


def quiet_load(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputNotice)
        return load_cohort(path)


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


# --- twins -------------------------------------------------------------------------------------


def test_twins_of_the_briganti_file_are_its_people_with_gender_labelled(tmp_path):
    people = briganti_rows()
    twins = quiet_load(cohort_file(tmp_path, {"file": str(BRIGANTI), "attributes": ["gender"],
                                              "twins": {"rows": 5, "seed": 1}}))
    assert len(twins.personas) == 5
    for persona in twins.personas:
        assert persona.id in people                     # the respondent id exactly
        # the codebook beside the file labels F/M as female/male
        assert persona.attributes == {"gender": {"F": "female", "M": "male"}[people[persona.id]]}
    ids = [p.id for p in twins.personas]
    assert ids == sorted(ids, key=list(people).index)   # listed in the file's order
    record = twins.provenance
    assert record["mode"] == "twins" and record["seed"] == 1 and record["rows"] == 5
    assert [p["respondent_id"] for p in record["personas"]] == ids
    assert record["codebook"].endswith("iri_briganti2018_keyed.codebook.yaml")

    again = quiet_load(cohort_file(tmp_path, {"file": str(BRIGANTI), "attributes": ["gender"],
                                              "twins": {"rows": 5, "seed": 1}}, name="again.yaml"))
    other = quiet_load(cohort_file(tmp_path, {"file": str(BRIGANTI), "attributes": ["gender"],
                                              "twins": {"rows": 5, "seed": 2}}, name="other.yaml"))
    assert [p.id for p in again.personas] == ids          # the same seed: the same people
    assert [p.id for p in other.personas] != ids          # another seed: other people


def test_all_twins_are_every_row_in_order_and_the_shipped_cohort_is_200_of_them(tmp_path):
    people = briganti_rows()
    everyone = quiet_load(cohort_file(tmp_path, {"file": str(BRIGANTI), "attributes": ["gender"], "twins": "all"}))
    assert [p.id for p in everyone.personas] == list(people)
    assert sum(p.attributes["gender"] == "female" for p in everyone.personas) == 1135
    shipped = quiet_load(ROOT / "personas" / "briganti_twins.yaml")
    assert len(shipped.personas) == 200 and len({p.id for p in shipped.personas}) == 200
    assert {p.id for p in shipped.personas} <= set(people)


def test_plan_counts_one_respondent_per_twin():
    out = psyq_in_process("plan", "studies/iri_twins.yaml", "--json", "--preview", "0")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert [(r["instrument"], r["requests"]) for r in plan["rows"]] == [("iri", 200 * 28)]   # 200 twins × 28 items
    assert "found beside it" in out.stderr          # the codebook used is said


def test_a_twins_id_must_be_a_persona_id(tmp_path):
    data = write_csv(tmp_path / "people.csv", ["respondent_id", "gender"],
                     [["p1", "female"], ["p 2", "male"], ["baseline", "male"]])
    path = cohort_file(tmp_path, {"file": "people.csv", "attributes": ["gender"], "twins": "all"})
    with pytest.raises(InputError) as info:
        load_cohort(path)
    assert [str(p) for p in info.value.problems] == [
        f"{data}:3: column 'respondent_id': respondent id 'p 2' cannot be a twin's persona id (the twin's id is "
        "the respondent id exactly): use letters, digits, '_', '-' or '.', starting with a letter or digit",
        f"{data}:4: column 'respondent_id': 'baseline' is reserved for the model answering as itself "
        "(use include_baseline: true)"]
    # In a draw the respondent id is only recorded: any text will do.
    drawn = load_cohort(cohort_file(tmp_path, {"file": "people.csv", "attributes": ["gender"],
                                               "draw": {"size": 4, "seed": 0, "id_prefix": "d"}}, name="d.yaml"))
    assert [p.id for p in drawn.personas] == ["d1", "d2", "d3", "d4"]
    assert {p["respondent_id"] for p in drawn.provenance["personas"]} <= {"p1", "p 2", "baseline"}


# --- draws -------------------------------------------------------------------------------------


def weighted_data(tmp_path: Path) -> Path:
    """1,000 rows: stratum A holds 30 % of the rows but 60 % of the weight (300 × 3.5 = 1,050 of 1,750)."""
    rows = [[f"r{k:04d}", "A" if k < 300 else "B", 3.5 if k < 300 else 1, "x"] for k in range(1000)]
    return write_csv(tmp_path / "survey.csv", ["respondent_id", "region", "wt", "note"], rows)


def test_a_draw_in_proportion_to_weight_reproduces_the_weighted_share(tmp_path):
    weighted_data(tmp_path)
    n, p_weighted, p_rows = 2000, 1050 / 1750, 300 / 1000
    sd = math.sqrt(p_weighted * (1 - p_weighted) / n)          # binomial SD of a share of n draws: .011
    for seed in (1, 2, 3):
        cohort = load_cohort(cohort_file(tmp_path, {"file": "survey.csv", "attributes": ["region"], "draw": {
            "size": n, "seed": seed, "id_prefix": "d", "weight": "wt", "replace": True}}, name=f"draw{seed}.yaml"))
        share_a = sum(p.attributes["region"] == "A" for p in cohort.personas) / n
        assert abs(share_a - p_weighted) < 4 * sd, (seed, share_a)        # within 4 SD of .60
        assert abs(share_a - p_rows) > 10 * sd, (seed, share_a)           # and nowhere near the rows' .30
        # with replacement a row comes more than once; each persona's weight is its row's
        record = cohort.provenance
        assert len({p["respondent_id"] for p in record["personas"]}) < n
        assert all(p["weight"] == (3.5 if int(p["respondent_id"][1:]) < 300 else 1.0) for p in record["personas"])
    # Without replacement, from 10,000 rows (the same shares): 400 draws deplete stratum A's weight
    # by under 10 %, so its share stays within sampling error of .60 (successive draws ∝ weight).
    write_csv(tmp_path / "large.csv", ["respondent_id", "region", "wt"],
              [[f"r{k:05d}", "A" if k < 3000 else "B", 3.5 if k < 3000 else 1] for k in range(10000)])
    n_without = 400
    sd_without = math.sqrt(p_weighted * (1 - p_weighted) / n_without)      # .024
    without = load_cohort(cohort_file(tmp_path, {"file": "large.csv", "attributes": ["region"], "draw": {
        "size": n_without, "seed": 1, "id_prefix": "d", "weight": "wt", "replace": False}}, name="without.yaml"))
    share_a = sum(p.attributes["region"] == "A" for p in without.personas) / n_without
    assert len({p["respondent_id"] for p in without.provenance["personas"]}) == n_without
    assert abs(share_a - p_weighted) < 4 * sd_without, share_a
    assert abs(share_a - p_rows) > 8 * sd_without, share_a
    # Equal weights (no `weight:`): the rows' share instead.
    equal = load_cohort(cohort_file(tmp_path, {"file": "survey.csv", "attributes": ["region"], "draw": {
        "size": n, "seed": 1, "id_prefix": "d"}}, name="equal.yaml"))
    share_a = sum(p.attributes["region"] == "A" for p in equal.personas) / n
    assert abs(share_a - p_rows) < 4 * math.sqrt(p_rows * (1 - p_rows) / n), share_a


def test_a_draw_is_reproducible_and_its_ids_are_numbered(tmp_path):
    weighted_data(tmp_path)

    def drawn(seed: int, name: str):
        return load_cohort(cohort_file(tmp_path, {"file": "survey.csv", "attributes": ["region"], "draw": {
            "size": 50, "seed": seed, "id_prefix": "s", "weight": "wt", "replace": False}}, name=name))

    first, again, other = drawn(5, "a.yaml"), drawn(5, "b.yaml"), drawn(6, "c.yaml")
    rows = [p["respondent_id"] for p in first.provenance["personas"]]
    assert rows == [p["respondent_id"] for p in again.provenance["personas"]]
    assert rows != [p["respondent_id"] for p in other.provenance["personas"]]
    assert len(set(rows)) == 50                                   # without replacement: 50 different rows
    assert [p.id for p in first.personas][:2] == ["s01", "s02"] and first.personas[-1].id == "s50"
    assert all("respondent_id" not in p.attributes for p in first.personas)   # never shown to the model


def test_a_stratified_draw_allocates_exactly_in_proportion(tmp_path):
    weighted_data(tmp_path)
    cohort = load_cohort(cohort_file(tmp_path, {"file": "survey.csv", "attributes": ["region"], "draw": {
        "size": 2000, "seed": 9, "id_prefix": "d", "weight": "wt", "strata": "region"}}))
    record = cohort.provenance
    assert record["allocation"] == {"A": 1200, "B": 800}          # 60 % and 40 % of the weight, exactly
    assert sum(p.attributes["region"] == "A" for p in cohort.personas) == 1200
    assert [p["stratum"] for p in record["personas"]] == ["A"] * 1200 + ["B"] * 800   # drawn stratum by stratum
    # Rounding: whole parts, then the units left to the largest remainders (ties: the first stratum).
    assert allocate(7, [1050, 700]) == [4, 3]          # 4.2 and 2.8: floors 4 + 2, one left to B's .8
    assert allocate(10, [1, 1, 1]) == [4, 3, 3]
    assert allocate(3, [0.5, 0.25, 0.25]) == [1, 1, 1]    # 1.5, .75, .75: the two .75 remainders before the .5
    assert allocate(2, [1, 1, 1]) == [1, 1, 0]            # equal remainders: the strata listed first


def test_a_stratified_draw_without_replacement_refuses_a_stratum_too_small(tmp_path):
    weighted_data(tmp_path)
    path = cohort_file(tmp_path, {"file": "survey.csv", "attributes": ["region"], "draw": {
        "size": 600, "seed": 9, "id_prefix": "d", "weight": "wt", "strata": "region", "replace": False}})
    with pytest.raises(InputError) as info:
        load_cohort(path)
    assert [str(p) for p in info.value.problems] == [
        f"{path}:8:11: from_data.draw.size: stratum 'A' is allocated 360 personas, but it has 300 usable rows "
        "and the draw is without replacement"]


# --- skipped rows ------------------------------------------------------------------------------


def test_rows_with_an_empty_attribute_or_weight_are_skipped_counted_and_said(tmp_path):
    write_csv(tmp_path / "people.csv", ["respondent_id", "gender", "age", "wt"], [
        ["a1", "female", "30", "1"], ["a2", "", "41", "2"], ["a3", "male", "", "1"], ["a4", "male", "50", ""],
        ["a5", "", "", "1"], ["a6", "female", "22", "0"], ["a7", "male", "35", "1.5"]])
    path = cohort_file(tmp_path, {"file": "people.csv", "attributes": ["gender", "age"],
                                  "draw": {"size": 3, "seed": 1, "id_prefix": "d", "weight": "wt"}})
    with pytest.warns(InputNotice, match=r"5 of 7 rows skipped for the cohort .*: 1 with empty gender; 1 with empty "
                                         r"age; 1 with empty wt; 1 with empty gender, age; 1 with weight 0 in wt"):
        cohort = load_cohort(path)
    assert cohort.provenance["rows_usable"] == 2 and cohort.provenance["rows_in_file"] == 7
    assert cohort.provenance["skipped"] == [
        {"reason": "empty gender", "rows": 1, "respondent_ids": ["a2"]},
        {"reason": "empty age", "rows": 1, "respondent_ids": ["a3"]},
        {"reason": "empty wt", "rows": 1, "respondent_ids": ["a4"]},
        {"reason": "empty gender, age", "rows": 1, "respondent_ids": ["a5"]},
        {"reason": "weight 0 in wt", "rows": 1, "respondent_ids": ["a6"]}]
    drawn = [p["respondent_id"] for p in cohort.provenance["personas"]]
    assert len(drawn) == 3 and set(drawn) <= {"a1", "a7"}     # three personas, none from a skipped row
    # `psyq validate` says it too.
    out = psyq_in_process("validate", path)
    assert out.returncode == 0, out.stderr
    assert "note: " in out.stderr and "5 of 7 rows skipped" in out.stderr


def test_rows_sharing_a_reason_are_counted_together(tmp_path):
    """Two rows with an empty gender and two of weight 0, interleaved, and one with an empty age: each
    reason is said once with its count, in the order first met, in the notice and the provenance."""
    write_csv(tmp_path / "people.csv", ["respondent_id", "gender", "age", "wt"], [
        ["b1", "female", "30", "1"], ["b2", "", "41", "2"], ["b3", "male", "52", "0"], ["b4", "", "33", "1"],
        ["b5", "female", "27", "0"], ["b6", "male", "", "1"], ["b7", "male", "35", "1.5"]])
    path = cohort_file(tmp_path, {"file": "people.csv", "attributes": ["gender", "age"],
                                  "draw": {"size": 4, "seed": 1, "id_prefix": "d", "weight": "wt"}})
    with pytest.warns(InputNotice, match=r"5 of 7 rows skipped for the cohort .*: 2 with empty gender; 2 with weight "
                                         r"0 in wt; 1 with empty age$"):
        cohort = load_cohort(path)
    assert cohort.provenance["rows_usable"] == 2 and cohort.provenance["rows_in_file"] == 7
    assert cohort.provenance["skipped"] == [
        {"reason": "empty gender", "rows": 2, "respondent_ids": ["b2", "b4"]},
        {"reason": "weight 0 in wt", "rows": 2, "respondent_ids": ["b3", "b5"]},
        {"reason": "empty age", "rows": 1, "respondent_ids": ["b6"]}]
    drawn = [p["respondent_id"] for p in cohort.provenance["personas"]]
    assert len(drawn) == 4 and set(drawn) <= {"b1", "b7"}


def test_no_usable_row_counts_each_reason(tmp_path):
    write_csv(tmp_path / "people.csv", ["respondent_id", "gender", "wt"], [
        ["c1", "", "1"], ["c2", "male", "0"], ["c3", "", "2"]])
    path = cohort_file(tmp_path, {"file": "people.csv", "attributes": ["gender"],
                                  "draw": {"size": 2, "seed": 1, "id_prefix": "d", "weight": "wt"}})
    with pytest.raises(InputError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore", InputNotice)
        load_cohort(path)
    [problem] = info.value.problems
    assert str(problem).endswith(f"no usable rows in {tmp_path / 'people.csv'}: all 3 rows are skipped "
                                 "(2 with empty gender; 1 with weight 0 in wt)")


# --- the manifest and the run id ---------------------------------------------------------------


def test_the_manifest_records_the_draw(tmp_path):
    weighted_data(tmp_path)
    with (tmp_path / "survey.csv").open("a") as handle:       # one row without a weight: skipped and recorded
        handle.write("r9999,A,,x\n")
    cohort_file(tmp_path, {"file": "survey.csv", "attributes": ["region"], "draw": {
        "size": 6, "seed": 4, "id_prefix": "d", "weight": "wt", "strata": "region"}})
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({
        "psyq": "study/1", "id": "draw_test", "instruments": [str(ROOT / "tests" / "data" / "mini_1to7.yaml")],
        "cohort": "cohort.yaml",
        "backends": [{"id": "stub", "kind": "openai", "base_url": "", "model": "stub-model", "concurrency": 4}],
        "protocol": {"answer": "text", "seed": 3}}))
    with StubServer() as stub, warnings.catch_warnings():
        warnings.simplefilter("ignore", InputNotice)
        text = (tmp_path / "study.yaml").read_text().replace("base_url: ''", f"base_url: {stub.url}")
        (tmp_path / "study.yaml").write_text(text)
        study = load_study(tmp_path / "study.yaml")
        result = asyncio.run(administer(study, tmp_path / "runs", log=lambda m: None))
    manifest = json.loads((result.run_dir.path / "manifest.json").read_text())
    record = manifest["cohort"]["from_data"]
    assert manifest["cohort"]["respondents"] == 6 and result.planned == 6 * 4
    assert record["mode"] == "draw" and record["seed"] == 4 and record["weight"] == "wt"
    assert record["replace"] is True and record["strata"] == "region" and record["allocation"] == {"A": 4, "B": 2}
    assert record["file"] == "survey.csv"                     # relative to the study's folder, as `files`
    assert record["sha256"] == manifest["files"]["survey.csv"]
    assert record["skipped"] == [{"reason": "empty wt", "rows": 1, "respondent_ids": ["r9999"]}]
    assert [p["id"] for p in record["personas"]] == ["d1", "d2", "d3", "d4", "d5", "d6"]
    assert record["personas"] == study.cohort.provenance["personas"]
    for p in record["personas"]:
        k = int(p["respondent_id"][1:])
        assert (p["stratum"], p["weight"]) == (("A", 3.5) if k < 300 else ("B", 1.0))
    # the personas answered are the drawn ones, and their respondent ids are not attributes
    from psyq.engine.store.run_store import RunStore
    with RunStore(result.run_dir.database) as store:
        answered = {row[0] for row in store.db.execute("SELECT DISTINCT respondent_id FROM trials")}
    assert answered == {"d1", "d2", "d3", "d4", "d5", "d6"}


def test_the_run_id_changes_when_the_data_file_or_its_codebook_changes(tmp_path):
    (tmp_path / "data.csv").write_bytes(BRIGANTI.read_bytes())
    book = BRIGANTI.with_name("iri_briganti2018_keyed.codebook.yaml")
    (tmp_path / "data.codebook.yaml").write_text(book.read_text().replace("davi{id}", "davi{id}"))
    cohort_file(tmp_path, {"file": "data.csv", "attributes": ["gender"], "twins": {"rows": 3, "seed": 1}})
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({
        "psyq": "study/1", "id": "twins_test", "instruments": [str(ROOT / "instruments" / "iri.yaml")],
        "cohort": "cohort.yaml",
        "backends": [{"id": "stub", "kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}]}))

    def run_id() -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InputNotice)
            study = load_study(tmp_path / "study.yaml")
        return run_id_for(study, {c.id: make_backend(c) for c in study.spec.backends})

    first = run_id()
    assert run_id() == first
    # A changed answer in a row no twin comes from: the same personas, but another data file.
    text = (tmp_path / "data.csv").read_text()
    assert "\nr1973,4,2," in text
    (tmp_path / "data.csv").write_text(text.replace("\nr1973,4,2,", "\nr1973,3,2,"))
    second = run_id()
    assert second != first
    (tmp_path / "data.codebook.yaml").write_text((tmp_path / "data.codebook.yaml").read_text() + "# edited\n")
    assert run_id() not in (first, second)


# --- validation --------------------------------------------------------------------------------


def validate(path: Path) -> Child:
    """`psyq validate PATH` in a process of its own, forked from one that has imported psyq once
    (tests/forkrunner.py, as the malformed-input corpus runs): a fresh interpreter per mistake spent
    most of this file's time importing."""
    return Child(["-m", "psyq.cli", "validate", str(path)])


def errors_of(path: Path) -> list[str]:
    out = validate(path)
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 2, out.stderr
    return [line for line in out.stderr.splitlines() if line.startswith("error: ")]


def write(tmp_path: Path, text: str, name: str = "bad.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_validate_reports_each_mistake_at_its_line_and_column(tmp_path):
    weighted_data(tmp_path)
    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        from_data:
          file: survey.csv
          attributes: [regoin, gender]
          draw: {size: 5, seed: 1, id_prefix: d, weight: weight, strata: region}
        """)
    columns = "respondent_id, region, wt, note"
    assert errors_of(path) == [
        f"error: {path}:5:16: from_data.attributes[0]: attribute column 'regoin' is not in {tmp_path}/survey.csv "
        f"(did you mean 'region'?) (its columns: {columns})",
        f"error: {path}:5:24: from_data.attributes[1]: attribute column 'gender' is not in {tmp_path}/survey.csv "
        f"(its columns: {columns})",
        f"error: {path}:6:50: from_data.draw.weight: weight column 'weight' is not in {tmp_path}/survey.csv "
        f"(its columns: {columns})"]

    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        from_data:
          file: nothere.csv
          codebook: nobook.yaml
          attributes: [region]
          twins: all
        """)
    assert errors_of(path) == [f"error: {path}:4:9: from_data.file: data file not found: {tmp_path}/nothere.csv",
                               f"error: {path}:5:13: from_data.codebook: codebook not found: {tmp_path}/nobook.yaml"]

    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        from_data:
          file: survey.csv
          attributes: [region]
          twins: {rows: 5, seed: 1}
          draw: {size: 5, seed: 1, id_prefix: d}
        """)
    assert errors_of(path) == [f"error: {path}:7:3: from_data.draw: `twins` and `draw` cannot be combined: "
                               "give one of them"]

    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        from_data:
          file: survey.csv
          attributes: [region]
        """)
    assert errors_of(path) == [f"error: {path}:4:3: from_data: give `twins` (one persona per row: `all` or "
                               "{rows: N, seed: S}) or `draw` (N personas drawn from the rows: {size, seed, "
                               "id_prefix, ...})"]

    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        from_data:
          file: survey.csv
          attributes: [region]
          draw: {size: 1001, seed: 1, id_prefix: d, replace: false}
        """)
    assert errors_of(path) == [f"error: {path}:6:16: from_data.draw.size: 1001 personas drawn without replacement, "
                               "but the file has 1000 usable rows (replace: true draws a row more than once)"]

    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        from_data:
          file: survey.csv
          attributes: [region]
          twins: {rows: 1001, sed: 1}
        """)
    assert errors_of(path) == [f"error: {path}:6:23: from_data.twins.sed: unknown field 'sed' (did you mean 'seed'?)"]

    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        from_data:
          file: survey.csv
          attributes: [region]
          twins: {rows: 1001, seed: 1}
        """)
    assert errors_of(path) == [f"error: {path}:6:17: from_data.twins.rows: 1001 twins asked for, but the file has "
                               "1000 usable rows"]

    path = write(tmp_path, """
        psyq: cohort/1
        id: c
        from_data:
          file: survey.csv
          attributes: [region]
          twins: 200
        sample: {size: 2, seed: 1, id_prefix: p, attributes: {a: {range: [1, 2]}}}
        """)
    assert errors_of(path) == [
        f"error: {path}:6:10: from_data.twins: must be `all` (every row) or {{rows: N, seed: S}} (a seeded subset of "
        "N rows), not 200"]


def test_a_bad_weight_is_an_error_at_its_csv_line(tmp_path):
    data = write_csv(tmp_path / "people.csv", ["respondent_id", "gender", "wt"],
                     [["a1", "female", "1"], ["a2", "male", "-2"], ["a3", "male", "heavy"], ["a1", "male", "1"]])
    path = cohort_file(tmp_path, {"file": "people.csv", "attributes": ["gender"],
                                  "draw": {"size": 2, "seed": 1, "id_prefix": "d", "weight": "wt"}})
    assert errors_of(path) == [
        f"error: {data}:3: column 'wt': the weight '-2' is not a number ≥ 0 (an empty cell skips the row; a weight "
        "of 0 never draws it)",
        f"error: {data}:4: column 'wt': the weight 'heavy' is not a number ≥ 0 (an empty cell skips the row; a weight "
        "of 0 never draws it)",
        f"error: {data}:5: column 'respondent_id': respondent id 'a1' is already used on line 2"]


def test_a_codebook_naming_a_column_the_file_lacks_is_an_error_at_the_codebooks_line(tmp_path):
    write_csv(tmp_path / "people.csv", ["id", "sex"], [["a1", "F"], ["a2", "M"]])
    book = write(tmp_path, """
        psyq: codebook/1
        columns:
          respondent_id: id
          attributes: {gender: gender_code}
        values:
          gender: {F: female, M: male}
        """, name="people.codebook.yaml")
    path = cohort_file(tmp_path, {"file": "people.csv", "attributes": ["gender"], "twins": "all"})
    assert errors_of(path) == [f"error: {book}:4:24: columns.attributes.gender: column 'gender_code' is not in "
                               f"{tmp_path}/people.csv (its columns: id, sex)"]
    book.write_text(book.read_text().replace("gender_code", "sex"))
    twins = quiet_load(path)
    assert [(p.id, p.attributes["gender"]) for p in twins.personas] == [("a1", "female"), ("a2", "male")]


def test_a_command_that_reads_the_data_file_several_times_says_its_notice_once():
    """`psyq validate` of a study and its cohort loads the cohort twice; the codebook notice of its
    data file is one line, not one per reading."""
    done = psyq_in_process("validate", ROOT / "studies" / "iri_twins.yaml", ROOT / "personas" / "briganti_twins.yaml")
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:") and "codebook" in line]
    assert len(notes) == 1, done.stderr
