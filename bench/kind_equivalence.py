"""Run every shipped study (studies/*.yaml) against the test stub and write what a refactoring
must not change: the export CSV of each run (trial ids included), every table and reading of the
report, its Markdown rendering and the methods paragraph (times masked).

Used to check that moving item kinds into plug-ins changes no behaviour: run it before and after,
then compare the two folders byte for byte::

    python bench/kind_equivalence.py /tmp/kinds_before
    ... refactor ...
    python bench/kind_equivalence.py /tmp/kinds_after && diff -r /tmp/kinds_before /tmp/kinds_after

The local backend of each study is replaced by the stub (tests/stub_server.py) speaking the OpenAI
protocol on 127.0.0.1; free-text kinds get scripted text replies chosen by a hash of the prompt, so
the replies (and hence scene levels and vignette ratings) vary but are the same on every run.
Columns that record when something happened (times, durations) are dropped: they differ on every
run whatever the code does. Figures are skipped.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sqlite3
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from stub_server import StubServer, default_answer  # noqa: E402

from psyq.analysis.report import build_sections, methods_text, render_markdown  # noqa: E402
import psyq  # noqa: E402
from psyq import administer, load_study  # noqa: E402
from psyq.analysis.scoring.human_data import human_data  # noqa: E402
from psyq.engine.files.shipped import locate  # noqa: E402
from psyq.engine.results.export import export_table  # noqa: E402

FEELINGS = ["fine", "angry and hurt", "happy, proud and a little nervous", "sad", "I don't know",
            "worried but relieved", "embarrassed and annoyed", "nothing much"]
# A fixed port: the backend's address is part of every trial id (and so of the seeds of sampled
# answers), so a port chosen by the system would change them from one check to the next.
PORT = 47311
TIME_COLUMNS = ("time", "started", "finished", "elapsed", "duration", "latency", "created")


def _pick(body: dict, salt: str) -> str:
    blob = json.dumps(body.get("messages"), sort_keys=True) + salt
    return FEELINGS[int(hashlib.sha256(blob.encode()).hexdigest(), 16) % len(FEELINGS)]


def scripted(body: dict) -> str:
    """The stub's reply: JSON or text for scenes and stops, the hashed digit for rating items."""
    prompt = body["messages"][-1]["content"]
    schema = json.dumps(body.get("response_format") or {})
    digit = int(default_answer(body))
    if '"you"' in schema:
        return json.dumps({"you": _pick(body, "you"), "other": _pick(body, "other")})
    if "How would you feel?" in prompt:
        return f"You: {_pick(body, 'you')}\nOther: {_pick(body, 'other')}"
    if '"thoughts"' in schema:
        props = body["response_format"]["json_schema"]["schema"]["properties"] \
            if "json_schema" in body["response_format"] else {}
        reply = {e: (digit + i) % 5 for i, e in enumerate(p for p in props if p != "thoughts")}
        reply["thoughts"] = _pick(body, "t")
        return json.dumps(reply)
    if 'a line starting "Thoughts:"' in prompt:
        emotions = re.search(r"\(([^)]*)\), then", prompt).group(1).split(", ")
        lines = [f"{e}: {(digit + i) % 5}" for i, e in enumerate(emotions)]
        return "\n".join(lines[: len(lines) - (digit == 1)] + [f"Thoughts: {_pick(body, 't')}"])
    if "thinking and feeling" in prompt:
        return _pick(body, "t")
    if "Statements:" in prompt:
        # A whole instrument: every statement answered, except the last when the digit is 1 (so
        # that some replies are incomplete and re-asked).
        ids = re.findall(r"^(\S+)\. ", prompt.split("Statements:")[1], flags=re.M)
        ids = ids[: len(ids) - (digit == 1)]
        values = {i: 1 + (digit + k) % 4 for k, i in enumerate(ids)}
        if "json_schema" in schema:
            return json.dumps(values)
        return "\n".join(f"{i}: {v}" for i, v in values.items())
    return str(digit)


# Reports with people beside the personas (``psyq report RUN --human iri=...:keyed``): study, then
# the report's human-data arguments. These reach the norms, same-construct (invariance, GRM, DIF)
# and twins sections.
WITH_PEOPLE = {"iri_same_construct": {"iri": "iri_briganti2018_keyed:keyed"},
               "iri_twins": {"iri": "iri_briganti2018_keyed:keyed"}}

# Besides the shipped studies as they are, the answer modes they leave out, so that every way a
# kind is asked and read is compared (name of the variant, study, protocol changes).
VARIANTS = [("ea_vignettes_json", "ea_vignettes", {"answer": "json"}),
            ("ea_vignettes_text", "ea_vignettes", {"answer": "text"}),
            ("leas_text", "leas_repeated", {"answer": "text"}),
            ("iri_whole_json", "iri_hand_written", {"answer": "json", "presentation": "whole_instrument"}),
            ("iri_whole_text", "iri_hand_written", {"answer": "text", "presentation": "whole_instrument",
                                                    "item_order": "shuffled"})]


def _stub_study(study_path: Path, url: str, tmp: Path, name: str | None = None, protocol: dict | None = None) -> Path:
    data = yaml.safe_load(study_path.read_text())
    if protocol:
        data["protocol"].update(protocol)
        data["id"] = name
    # The copy is written elsewhere: files named by path are resolved from the study's folder
    # (shipped names stay names).
    data["instruments"] = [str(locate(p, "instrument", study_path.parent).resolve()) for p in data["instruments"]]
    data["cohort"] = str(locate(data["cohort"], "cohort", study_path.parent).resolve())
    if data.get("situations"):   # a staged study's situation set
        data["situations"]["file"] = str(locate(data["situations"]["file"], "situations", study_path.parent).resolve())
    data["backends"] = [{"id": b["id"], "kind": "openai", "base_url": url, "model": "stub-model",
                         "concurrency": 4, "max_retries": 3, "backoff_s": 0.01, "max_backoff_s": 0.05,
                         "timeout_s": 10, **({"max_tokens": b["max_tokens"]} if "max_tokens" in b else {})}
                        for b in data["backends"]]
    out = tmp / f"{name or study_path.stem}.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def _timed(label) -> bool:
    return any(t in str(label).lower() for t in TIME_COLUMNS)


def _clean(frame):
    """`frame` without columns or rows (a facts table: label in the index) that record times."""
    frame = frame.drop(columns=[c for c in frame.columns if _timed(c)])
    return frame[[not _timed(label) for label in frame.index]]


def _untimed(text: str) -> str:
    """`text` with its dates and times (ISO 8601) and durations masked: they differ on every run; and
    with the folder psyq is installed in masked (where a shipped file was read from)."""
    text = text.replace(str(Path(psyq.__file__).parent), "<psyq>")
    text = re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+(?:[+-]\d\d:\d\d|Z)?", "<time>", text)
    return re.sub(r"\d+(?:\.\d+)? (?:s|min|seconds|minutes)\b", "<duration>", text)


def _write_sections(dest: Path, prefix: str, sections: list) -> None:
    for s_index, section in enumerate(sections):
        lines = [section.title, *section.readings, section.note or ""]
        (dest / f"{prefix}{s_index:02d}_readings.txt").write_text(_untimed("\n".join(lines) + "\n"))
        for t_index, (caption, frame) in enumerate(section.tables):
            with open(dest / f"{prefix}{s_index:02d}_t{t_index:02d}.csv", "w") as handle:
                handle.write(caption + "\n")
                _clean(frame).to_csv(handle)


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp_name, StubServer(answer=scripted, port=PORT) as stub:
        tmp = Path(tmp_name)
        shipped = [(p.stem, p, None) for p in sorted((ROOT / "studies").glob("*.yaml"))]
        variants = [(name, ROOT / "studies" / f"{base}.yaml", change) for name, base, change in VARIANTS]
        for name, study_path, change in shipped + variants:
            study = load_study(_stub_study(study_path, stub.url, tmp, name, change))
            result = asyncio.run(administer(study, tmp / "runs", log=lambda m: None))
            dest = out / name
            dest.mkdir(exist_ok=True)
            (dest / "run_id.txt").write_text(f"{result.run_dir.path.name}\n{result.counts}\n")
            table = _clean(export_table(result.run_dir.path))
            # Rows in a fixed order: the order trials finish in depends on the scheduler.
            table = table.sort_values(["backend_id", "respondent_id", "instrument", "repeat", "item_id"], kind="stable")
            table.to_csv(dest / "export.csv", index=False)
            manifest, sections = build_sections(result.run_dir.path, warn=lambda m: None)
            _write_sections(dest, "s", sections)
            methods = methods_text(result.run_dir.path)
            (dest / "report.md").write_text(_untimed(render_markdown(manifest, sections, methods=methods)))
            if name in WITH_PEOPLE:
                people = human_data(WITH_PEOPLE[name])
                _, sections = build_sections(result.run_dir.path, warn=lambda m: None, people=people)
                _write_sections(dest, "people_s", sections)
                (dest / "people_report.md").write_text(_untimed(render_markdown(manifest, sections, methods=methods)))
            with sqlite3.connect(result.run_dir.database) as db:
                trials = db.execute("SELECT trial_id, respondent_id, item_ids FROM trials ORDER BY trial_id").fetchall()
            (dest / "trials.txt").write_text("".join(f"{t} {r} {i}\n" for t, r, i in trials))
            print(name, result.counts, len(sections), "sections")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/kinds_check")
