"""The report's last section, "Materials": the appendix a reviewer checks a study with language models
against, read from the run (:mod:`psyq.analysis.report.materials`), and the GUIDE-LLM checklist filled
from this report (:mod:`psyq.analysis.report.guide_llm`).

Per backend the model requested and what its replies named as served, with the system fingerprint and
the times (a change within the run is a row of its own); how it was reached and whether requests
shared a conversation; every parameter the stored requests carried; the local model's file,
quantisation and SHA-256; tokens and cost. The persona (system prompt) template and the item prompt
verbatim with their dynamic parts marked ⟨…⟩, and one stored request with its reply; the people
compared with (``--human``). It is registered last so that the checklist sees every other section:
an item is answered only where its place is in this report.
"""

from __future__ import annotations

import pandas as pd

from psyq.analysis.report import materials
from psyq.analysis.report.context import ReportContext
from psyq.analysis.report.guide_llm import TITLE as CHECKLIST, TO_WRITE, fill_checklist, load_checklist
from psyq.analysis.report.section import ReportSection, Section

TITLE = "Materials"
MODELS = "Models requested and served"
ACCESS = "Access and context"
PARAMETERS = "Parameters sent"
LOCAL = "Local model file"
TOKENS = "Tokens and cost"
SYSTEM = "System prompt template"
ITEM = "Item prompt template"
EXAMPLE = "Example request and reply"
PEOPLE = "Reference people"
BUNDLED = ("run.sqlite", "study.yaml", "manifest.json")
"""Files of a run that ``psyq bundle`` packs (under ``run/``), which the checklist may point to."""


def _run_sentence(manifest: dict) -> str:
    """The software, dates, repeats and seed of the run."""
    version = manifest.get("psyq_version")
    tool = f"psyq {version}" if version else "psyq (version not recorded)"
    if manifest.get("git_commit"):
        tool += f" (commit {manifest['git_commit'][:12]})"
    protocol = manifest.get("protocol") or {}
    repeats = protocol.get("repeats")
    seed = protocol.get("seed", manifest.get("seed"))
    return (f"{tool} administered the run from {manifest.get('started_at') or 'an unrecorded time'} to "
            f"{manifest.get('finished_at') or 'no finish (the run did not finish)'}"
            + (f"; each respondent answered every instrument {'once' if repeats == 1 else f'{repeats} times'}"
               if repeats is not None else "")
            + (f"; the study's random seed was {seed}" if seed is not None else "") + ".")


class MaterialsSection(ReportSection):
    """"Materials": what was sent and served, the prompts, tokens and cost, the people compared with,
    and the GUIDE-LLM checklist of this report."""

    name = "materials"

    def applies(self, report: ReportContext) -> bool:
        return report.run is not None

    def sections(self, report: ReportContext) -> list[Section]:
        run = report.run
        assert run is not None
        section = Section(TITLE, readings=[_run_sentence(run.manifest)])
        for caption, frame in ((MODELS, materials.served_table(run)), (ACCESS, materials.access_table(run)),
                               (PARAMETERS, materials.parameters_sent(run)),
                               (LOCAL, materials.local_models(run.manifest)), (TOKENS, materials.usage_table(run))):
            if len(frame):
                section.add_table(caption, frame)
        self._prompts(report, section)
        people = materials.reference_people(report.people, report.human_items)
        if len(people):
            section.add_table(PEOPLE, people)
            section.methods = " ".join(
                f"The personas' answers to {inst} were compared with those of "
                f"{data.who(len(report.human_items[inst]) if inst in report.human_items else None)}."
                for inst, data in report.people.items())
        section.methods = ((section.methods + " ") if section.methods else "") + (
            "The models requested and served, every parameter sent, the prompt templates, an example request with "
            "its reply, and the tokens used are listed in the Materials appendix.")
        self._checklist(report, section)
        return [section]

    @staticmethod
    def _prompts(report: ReportContext, section: Section) -> None:
        """The persona template, the item prompt and the example exchange, with what says where they come from."""
        run = report.run
        conditions = bool(run.conditions)
        section.readings.append(
            "In the templates, ⟨…⟩ marks what changes from request to request: in the persona template each "
            "placeholder ({age} is shown as ⟨age⟩; ⟨attributes⟩ is the persona's attributes one a line, ⟨backstory⟩ "
            "its backstory); in the item prompt ⟨item text⟩ is the item's statement and ⟨options⟩ the answer "
            "options in the order that respondent saw them. Everything else is verbatim as sent.")
        found = materials.persona_templates(run)
        section.readings.extend(t.said() for t in found)
        templates = [t for t in found if t.template is not None]
        if templates:
            section.add_table(SYSTEM, pd.concat([materials.text_lines(
                materials.marked(t.template), **({"condition": t.condition or "the others"} if conditions else {}))
                for t in templates], ignore_index=True))
        examples = materials.example_trials(run)          # read once: a pass over every trial
        items = materials.item_templates(run, examples)
        if items:
            section.add_table(ITEM, pd.concat([materials.text_lines(
                text, instrument=inst, **({"conditions": ", ".join(asked)} if conditions else {}))
                for inst, asked, text in items], ignore_index=True))
        example = materials.example_exchange(run, examples)
        if len(example):
            first = examples[0]
            section.readings.append(
                f"The example is the first stored request of a persona to {first.instrument}"
                + (f" under condition {first.condition}" if first.condition else "")
                + ", with the reply received, verbatim; every request and reply is in the run's store (run.sqlite).")
            section.add_table(EXAMPLE, example)

    @staticmethod
    def _checklist(report: ReportContext, section: Section) -> None:
        """The GUIDE-LLM checklist, its places looked for in the sections built before and this one."""
        checklist = load_checklist()
        bundled = [name for name in BUNDLED if (report.run.path / name).is_file()]
        filled = fill_checklist([*report.sections, section], methods=True, bundle_files=bundled, checklist=checklist)
        answered = int((filled["where answered"] != TO_WRITE).sum())
        section.readings.append(
            f"{checklist.name} (version {checklist.version}; {checklist.citation}; {checklist.source}) asks for "
            f"{len(filled)} items: {answered} are answered in this report or the run's bundle, as the table "
            f"“{CHECKLIST}” says; the other {len(filled) - answered} are to be written by you. The items are "
            "paraphrased there: fill in the checklist's own form for the journal.")
        section.add_table(CHECKLIST, filled)
