"""Persona texts and model replies are untrusted: the report shows them as text, never as markup.

A cohort whose attribute values are HTML (`<script>`, an `<img onerror>`) and a model that
answers with a script around its digit are administered over the stub server; the report's HTML
and Markdown must hold the escaped text and no live element made of it.
"""

from __future__ import annotations

import asyncio
import html

import yaml

from psyq import administer, load_study
from psyq.analysis.report import write_report
from runs_helper import MINI
from stub_server import StubServer, default_answer

SCRIPT = "<script>alert('persona')</script>"
IMAGE = "<img src=x onerror=alert(1)>"


def scripted_reply(body: dict) -> str:
    return f"<script>alert('reply')</script>{default_answer(body)}"


def test_persona_texts_and_replies_are_shown_as_text(tmp_path):
    personas = [{"id": f"p{i}", "attributes": {"gender": "female" if i % 2 else "male", "occupation": SCRIPT,
                                               "country": IMAGE}} for i in range(6)]
    (tmp_path / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "personas": personas}))
    with StubServer(answer=scripted_reply) as stub:
        (tmp_path / "study.yaml").write_text(yaml.safe_dump({
            "psyq": "study/1", "id": "untrusted", "instruments": [str(MINI)], "cohort": "cohort.yaml",
            "backends": [{"id": "stub", "kind": "openai", "base_url": stub.url, "model": "m"}],
            "protocol": {"answer": "text", "seed": 1}}))
        result = asyncio.run(administer(load_study(tmp_path / "study.yaml"), tmp_path / "runs", log=lambda m: None))
    html_path, md_path = write_report(result.run_dir.path)
    page = html_path.read_text(encoding="utf-8")
    assert html.escape(SCRIPT, quote=False) in page   # the cohort table shows it, as text
    assert SCRIPT not in page and "<script>alert('reply')" not in page
    assert IMAGE not in page and "<img src=x" not in page
    assert "<script" not in page.lower()      # the report is self-contained and runs no script at all

