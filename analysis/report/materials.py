"""What the report's Materials appendix shows, read from a run: what reviewers ask to check of a study
with language models (GUIDE-LLM; llm-guidelines.org), each as a tidy frame or text.

Per backend: the model requested and what the replies named as served, with the times
(:func:`served_table`, from :func:`~psyq.engine.results.served.served_models`); how it was reached
and whether requests shared a conversation (:func:`access_table`); every parameter the stored
request bodies carry (:func:`parameters_sent`); the local model's file, quantisation and SHA-256
(:func:`local_models`); tokens and cost (:func:`usage_table`). The prompts: the persona template as
the cohort file (or a condition) gives it, checked against the system prompts the run stored
(:func:`persona_templates`), the item prompt as psyq built it, read from a stored request with its
dynamic parts marked (:func:`item_templates`), and one stored request with its reply, verbatim
(:func:`example_exchange`). The people compared with (:func:`reference_people`).

Dynamic parts are marked ⟨name⟩: a placeholder ``{age}`` of a persona template is shown as ⟨age⟩.
Every text here comes from files and the store, untrusted: it is returned as text, and the report's
renderers escape it.

Example (`run_dir`: 16 trials sent to a stub server):
    >>> from psyq.engine.results.run import open_run
    >>> run = open_run(run_dir)
    >>> parameters_sent(run)[["parameter", "value", "trials"]].to_dict("records")[:2]
    [{'parameter': 'max_tokens', 'value': '48', 'trials': 16}, {'parameter': 'temperature', 'value': '1.0', 'trials': 16}]
    >>> served_table(run)[["requested", "served", "trials"]].to_dict("records")    # the stub names what it was asked
    [{'requested': 'stub-model', 'served': 'stub-model', 'trials': 16}]
    >>> marked("You are {age}. {{literal}}")
    'You are ⟨age⟩. {literal}'
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import pandas as pd

from psyq.engine.design.persona import BASELINE, Persona
from psyq.engine.design.persona_prompt import DEFAULT_TEMPLATE, check_template, render_system_prompt
from psyq.engine.design.prices import PriceTable
from psyq.engine.results.run import Run
from psyq.engine.results.runs import served_by_psyq
from psyq.engine.results.served import served_models
from psyq.engine.store.readonly import connect_readonly
from psyq.engine.trials.prompts import options_block

from psyq.analysis.report.methods import access_mode, cohort_file_outline, quantisation, run_usage
from psyq.analysis.scoring.human_data import HumanData

MARK = "⟨{}⟩"
"""How a dynamic part of a prompt is shown: ⟨age⟩ for ``{age}``."""
ITEM_TEXT, OPTIONS = MARK.format("item text"), MARK.format("options")
NOT_SENT = {"messages", "model", "system"}
"""Fields of a request body that are not generation parameters: the prompt and the model (shown apart)."""
FEW_VALUES = 4
"""A parameter taking at most this many values is shown with each value and its trials."""
CHECKED_PROMPTS = 200
"""Stored system prompts a persona template is checked against (the first, by respondent)."""


def marked(template: str) -> str:
    """A persona template with each placeholder shown as ⟨name⟩ and each doubled brace as written once
    (what the persona reads); the text itself unchanged.

    Example:
        >>> marked("{attributes}\\n\\nYou are {age}.")
        '⟨attributes⟩\\n\\nYou are ⟨age⟩.'
    """
    if check_template(template):            # braces that do not match: shown as written
        return template
    return "".join(literal + (MARK.format(name) if name is not None else "")
                   for literal, name, _, _ in string.Formatter().parse(template))


def text_lines(text: str, **columns: Any) -> pd.DataFrame:
    """`text` one row per line (``line``, ``text``), so that a table shows it verbatim in HTML,
    Markdown and CSV alike; `columns` are added in front.

    Example:
        >>> text_lines("a\\n\\nb", part="user").to_dict("records")[1]
        {'part': 'user', 'line': 2, 'text': ''}
    """
    lines = text.split("\n")
    return pd.DataFrame({**{k: [v] * len(lines) for k, v in columns.items()},
                         "line": range(1, len(lines) + 1), "text": lines})


def _when(first: Any, last: Any) -> str:
    return "" if not first else (str(first) if first == last else f"{first} to {last}")


def served_table(run: Run) -> pd.DataFrame:
    """Per backend and what its replies named as served: the model requested, the model served and
    its system fingerprint (as the provider said, blank where it says none), the trials and when.
    psyq's own llama-server names the GGUF file by its path on the machine that ran it: only the
    file's name is kept (its SHA-256 is in :func:`local_models`).

    Example: see the module's.
    """
    served = served_models(run)
    kinds = {b: (e.get("identity") or {}).get("kind") for b, e in (run.manifest.get("backends") or {}).items()}
    rows = []
    for row in served.itertuples():
        model = row.served_model
        if served_by_psyq(kinds.get(row.backend_id)) and isinstance(model, str):
            model = PurePath(model.replace("\\", "/")).name
        rows.append({"backend": row.backend_id, "requested": row.requested_model, "served": model,
                     "fingerprint": row.fingerprint, "trials": int(row.trials), "when": _when(row.first_at, row.last_at)})
    return pd.DataFrame(rows, columns=["backend", "requested", "served", "fingerprint", "trials", "when"])


def context_mode(manifest: Mapping[str, Any]) -> str:
    """Whether the requests of a run shared a conversation (memory across interactions).

    Example:
        >>> context_mode({"protocol": {"presentation": "per_item", "reask_limit": 0}})
        'none: each item in a request of its own, with no earlier items or answers'
    """
    protocol = manifest.get("protocol") or {}
    if manifest.get("stages"):
        text = ("one conversation per respondent and situation: the earlier questions and the respondent's own "
                "replies were sent with each request; nothing across situations or respondents")
    elif protocol.get("presentation") == "whole_instrument":
        text = "none: each instrument in one request, with no earlier requests"
    else:
        text = "none: each item in a request of its own, with no earlier items or answers"
    if protocol.get("reask_limit"):
        text += "; a re-ask was sent after the unreadable reply, in the same conversation"
    return text


def access_table(run: Run) -> pd.DataFrame:
    """Per backend: its interface, how it was reached (:func:`~psyq.analysis.report.methods.access_mode`)
    and what the model remembered between requests (:func:`context_mode`)."""
    manifest = run.manifest
    return pd.DataFrame([{"backend": b, "interface": (e.get("identity") or {}).get("kind"),
                          "access": access_mode(e), "conversation": context_mode(manifest)}
                         for b, e in (manifest.get("backends") or {}).items()],
                        columns=["backend", "interface", "access", "conversation"])


def _json_value(kind: str, value: Any) -> str:
    """A value json_each gave, written as JSON (true, 1.0, "low", {...})."""
    if kind in ("true", "false", "null"):
        return kind
    if kind == "text":
        return json.dumps(value, ensure_ascii=False)
    if kind == "real":
        return repr(float(value))
    return str(value)


def parameters_sent(run: Run) -> pd.DataFrame:
    """Every field of the request bodies the run stored but the prompt and the model name, per backend:
    its value as sent (JSON), or how many values it took when it differs between trials (a per-trial
    seed), and how many trials' requests carried it. The stored body is each trial's first request;
    a re-ask repeats it with the conversation so far.

    Example: see the module's.
    """
    columns = ["backend", "parameter", "value", "trials"]
    if not run.database.exists():
        return pd.DataFrame(columns=columns)
    fields = ("FROM trials t, json_each(t.request) j WHERE json_valid(t.request) "
              f"AND j.key NOT IN ({', '.join('?' * len(NOT_SENT))})")     # the prompt is not read here
    db = connect_readonly(run.database)
    try:
        spread = db.execute(
            "SELECT t.backend_id, j.key, COUNT(DISTINCT j.type || ':' || j.value), COUNT(*), MIN(j.id), "
            "MIN(CASE WHEN j.type IN ('integer', 'real') THEN j.value END), "
            f"MAX(CASE WHEN j.type IN ('integer', 'real') THEN j.value END) {fields} GROUP BY 1, 2",
            sorted(NOT_SENT)).fetchall()
        few = {(backend, key) for backend, key, distinct, *_ in spread if distinct <= FEW_VALUES}
        values: dict[tuple[str, str], list[tuple[str, Any, int]]] = {}
        if few:     # one more pass, for the fields with few values: each value and its trials
            for backend, key, kind, value, n in db.execute(
                    f"SELECT t.backend_id, j.key, j.type, j.value, COUNT(*) {fields} GROUP BY 1, 2, 3, 4 "
                    "ORDER BY MIN(t.started_at)", sorted(NOT_SENT)):
                if (backend, key) in few:
                    values.setdefault((backend, key), []).append((kind, value, n))
    finally:
        db.close()
    order = {k: i for i, k in enumerate(run.manifest.get("backends") or {})}
    rows = []
    for backend, key, distinct, count, position, low, high in spread:
        if (backend, key) in few:
            taken = values[(backend, key)]
            said = (_json_value(*taken[0][:2]) if distinct == 1 else
                    "; ".join(f"{_json_value(kind, value)} ({n:,} trials)" for kind, value, n in taken))
        else:
            every = ", one per trial" if distinct == count else ""
            said = f"{distinct:,} values{every}" + (f", from {low} to {high}" if low is not None else "")
        rows.append({"backend": backend, "parameter": key, "value": said, "trials": int(count),
                     "_order": (order.get(backend, len(order)), position)})
    frame = pd.DataFrame(rows, columns=[*columns, "_order"])
    return frame.sort_values("_order", kind="stable").drop(columns="_order").reset_index(drop=True)


def local_models(manifest: Mapping[str, Any]) -> pd.DataFrame:
    """The local models (GGUF files psyq served): per backend the model's name or file name, its
    quantisation (by llama.cpp's naming of GGUF files), its SHA-256, the server build and how it served."""
    rows = [{"backend": b, "model file": (e.get("identity") or {}).get("model"),
             "quantisation": quantisation((e.get("identity") or {}).get("model")) or "not in the file name",
             "SHA-256": (e.get("identity") or {}).get("sha256"), "server": (e.get("identity") or {}).get("server"),
             "serving": (e.get("identity") or {}).get("serving") or "fast (parallel slots, prompt cache)"}
            for b, e in (manifest.get("backends") or {}).items() if (e.get("identity") or {}).get("sha256")]
    return pd.DataFrame(rows, columns=["backend", "model file", "quantisation", "SHA-256", "server", "serving"])


def usage_table(run: Run) -> pd.DataFrame:
    """Per backend: trials, the prompt and completion tokens the servers reported (and for how many
    trials), and their cost at the run's prices (or why it cannot be estimated)."""
    prices = PriceTable.from_json(run.manifest["prices"]) if run.manifest.get("prices") else None
    rows = [{"backend": u.backend_id, "trials": u.trials, "with counts": u.with_usage,
             "prompt tokens": u.prompt_tokens, "completion tokens": u.completion_tokens,
             "cost": str(u.cost(prices))} for u in run_usage(run)]
    return pd.DataFrame(rows, columns=["backend", "trials", "with counts", "prompt tokens", "completion tokens", "cost"])


@dataclass(frozen=True)
class PersonaTemplate:
    """The persona (system prompt) template of a run, or of one of its conditions, and whether it gives
    the system prompts the run stored."""

    condition: str | None      # None: the study's own (the cohort file's)
    template: str | None       # None: not known (the cohort file changed or moved since the run)
    origin: str                # where it was read
    checked: int = 0           # stored system prompts it was rendered against
    matched: int = 0           # of them, those it gave exactly

    def said(self) -> str:
        """Where the template comes from and what checking it against the store found."""
        if self.template is None:
            return f"The persona template is not known: {self.origin}."
        if not self.checked:
            return f"The persona template ({self.origin}) could not be checked: no stored system prompt."
        agree = ("gives every one of them exactly" if self.matched == self.checked
                 else f"gives {self.matched} of them exactly, not the others")
        return f"The persona template ({self.origin}), rendered for {self.checked} stored system prompt(s), {agree}."


def _text_of(content: Any) -> str | None:
    """A message's content as text (OpenAI's string, or Anthropic's list of text blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return None


def system_text(body: Mapping[str, Any]) -> str | None:
    """The system prompt of a stored request body (a ``system`` message, or Anthropic's ``system``)."""
    if "system" in body:
        return _text_of(body["system"])
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "system":
            return _text_of(message.get("content"))
    return None


def _stored_prompts(run: Run, condition: str | None) -> list[tuple[Persona, str | None]]:
    """(persona, the system prompt its request carried) for the first stored trials, one per respondent:
    of `condition` (None: any), the baseline left out."""
    db = connect_readonly(run.database)
    try:
        where = "" if condition is None else "AND t.condition = ? "
        rows = db.execute(
            "SELECT r.respondent_id, r.attributes, r.backstory, MIN(t.request) FROM respondents r "
            f"JOIN trials t ON t.respondent_id = r.respondent_id WHERE r.respondent_id != ? {where}"
            "GROUP BY r.respondent_id ORDER BY r.respondent_id LIMIT ?",
            (BASELINE.id, *(() if condition is None else (condition,)), CHECKED_PROMPTS)).fetchall()
    finally:
        db.close()
    out = []
    for rid, attributes, backstory, request in rows:
        try:
            persona = Persona(id=rid, attributes=json.loads(attributes or "{}"), backstory=backstory)
            out.append((persona, system_text(json.loads(request))))
        except (ValueError, TypeError, AttributeError):
            continue
    return out


def persona_templates(run: Run) -> list[PersonaTemplate]:
    """The persona template of the run (the cohort file's ``template:``, or psyq's default when it has
    none) and of each condition that sets its own, each rendered for the stored respondents and
    compared with the system prompt their first request carried."""
    outline = cohort_file_outline(run, template=True)
    if outline is not None:
        template = outline.get("template")
        origin = ("the cohort file's template" if template is not None
                  else "psyq's default template: the cohort file sets none")
        template = template if template is not None else DEFAULT_TEMPLATE
    else:    # a CSV cohort, or a cohort file changed since: psyq's default, if the stored prompts say so
        template, origin = DEFAULT_TEMPLATE, "psyq's default template (the cohort file is no longer as the run read it)"
    own = {c["id"]: (c.get("changes") or {}).get("template") for c in run.conditions}
    keep = [cid for cid, text in own.items() if text is None]       # the conditions asking with the cohort's
    wanted = [(None, template, origin, keep if run.conditions else [None])] if keep or not run.conditions else []
    wanted += [(cid, text, f"the template of condition {cid}", [cid]) for cid, text in own.items() if text is not None]
    out = []
    for condition, text, said, asked in wanted:
        stored = ([s for cid in asked for s in _stored_prompts(run, cid)][:CHECKED_PROMPTS]
                  if run.database.exists() else [])
        matched = 0
        for persona, prompt in stored:
            try:
                matched += render_system_prompt(persona, text) == prompt
            except ValueError:      # a placeholder this persona cannot fill: not the template it was given
                pass
        out.append(PersonaTemplate(condition, text, said, len(stored), matched))
    return out


@dataclass(frozen=True)
class ExampleTrial:
    """A trial stored in a run: what it asked and the reply."""

    instrument: str
    condition: str           # "" without conditions
    option_order: str
    item_ids: list[str]
    request: str             # the body as sent (JSON)
    reply: str | None        # every assistant text received


def example_trials(run: Run) -> list[ExampleTrial]:
    """Per instrument and condition, its first stored trial (a persona's when there is one)."""
    if not run.database.exists():
        return []
    db = connect_readonly(run.database)
    try:
        rows = db.execute(
            "SELECT instrument_id, condition, option_order, item_ids, request, raw_text FROM ("
            "SELECT *, ROW_NUMBER() OVER (PARTITION BY instrument_id, condition ORDER BY respondent_id = ?, "
            "started_at, trial_id) AS k FROM trials) WHERE k = 1 ORDER BY started_at", (BASELINE.id,)).fetchall()
    finally:
        db.close()
    return [ExampleTrial(inst, condition or "", order, json.loads(items), request, reply)
            for inst, condition, order, items, request, reply in rows]


def _user_text(body: Mapping[str, Any]) -> str | None:
    users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    return _text_of(users[-1].get("content")) if users else None


def item_templates(run: Run, examples: list[ExampleTrial] | None = None) -> list[tuple[str, list[str], str]]:
    """Per instrument, the item prompt (the last user message) of its first stored request with its
    dynamic parts marked: each item's text as ⟨item text⟩ and the answer options, whose order the
    protocol may change per respondent, as ⟨options⟩; the rest verbatim as sent. One per different
    prompt: (instrument, the conditions asking it — empty without conditions —, prompt). `examples`:
    :func:`example_trials` of the run, when read already."""
    out: dict[tuple[str, str], list[str]] = {}
    for trial in example_trials(run) if examples is None else examples:
        try:
            text = _user_text(json.loads(trial.request))
        except ValueError:
            text = None
        instrument = run.instruments.get(trial.instrument)
        if text is None or instrument is None:
            continue
        order = trial.option_order
        for item_id in trial.item_ids:
            item = next((i for i in instrument.items if i.id == item_id), None)
            if item is not None and getattr(item, "text", None):
                text = text.replace(item.text, ITEM_TEXT).replace(item.text.strip(), ITEM_TEXT)
        if getattr(instrument, "scale", None):
            for shown in dict.fromkeys((order, "as_written", "reversed")):
                block = options_block(instrument, shown)
                if block and block in text:
                    text = text.replace(block, OPTIONS)
                    break
        out.setdefault((trial.instrument, text), []).extend([trial.condition] if trial.condition else [])
    return [(instrument, conditions, text) for (instrument, text), conditions in out.items()]


def example_exchange(run: Run, examples: list[ExampleTrial] | None = None) -> pd.DataFrame:
    """The first instrument's example trial (:func:`example_trials`; `examples`, when read already),
    verbatim: each message of the request by line, the other fields of its body as ``field: value``,
    then the reply text stored."""
    columns = ["part", "line", "text"]
    examples = example_trials(run) if examples is None else examples
    if not examples:
        return pd.DataFrame(columns=columns)
    request, reply = examples[0].request, examples[0].reply
    try:
        body = json.loads(request)
    except ValueError:
        return text_lines(request, part="request")
    parts = []
    if isinstance(body.get("system"), (str, list)):
        parts.append(text_lines(system_text(body) or "", part="system"))
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            parts.append(text_lines(_text_of(message.get("content")) or "", part=str(message.get("role"))))
    fields = [f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in body.items() if k not in ("messages", "system")]
    parts.append(text_lines("\n".join(fields), part="body fields"))
    if reply is not None:
        parts.append(text_lines(reply, part="reply"))
    return pd.concat(parts, ignore_index=True)[columns]


def reference_people(people: Mapping[str, HumanData], answers: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The people the personas were compared with (``--human``), per instrument: who, where, in which
    language, how many (the rows of their answers read), the source and the file's name, from the
    codebook's ``people:`` (blank where it says nothing)."""
    from psyq.engine.files.codebook import codebook_beside, load_codebook

    rows = []
    for inst_id, data in people.items():
        book = data.codebook or codebook_beside(data.file)
        said = load_codebook(book).spec.people if book is not None else None
        frame = answers.get(inst_id)
        rows.append({"instrument": inst_id, "who": said.who if said else "not stated in a codebook",
                     "where": said.where if said else None, "language": said.language if said else None,
                     "n": len(frame) if frame is not None else None,
                     "source": said.source if said else None, "file": data.file.name})
    return pd.DataFrame(rows, columns=["instrument", "who", "where", "language", "n", "source", "file"])
