"""The ``psyq`` command line.

Exit codes (also in ``psyq --help``):

- 0: success; for `psyq run`, every trial finished: answered, or missing with its reason;
- 1: a run-time failure that is not the user's input (e.g. the server refused the key);
- 2: bad input (the problems are printed as ``file:line:column: field: what``, never as a
  traceback);
- 3: `psyq run` ended, but some trials failed (the backend gave no answer after its retries);
  they are stored as failed and the same command retries them;
- 4: `psyq run` stopped early: a backend could not be reached (connections failed again and
  again); the message names the URL;
- 5: `psyq run` refused: another process is running the same run (the message names the run
  directory and that process);
- 130: interrupted (Ctrl-C or SIGTERM); every answer received is stored.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from . import __version__
from .errors import InputError, Problem, PsyqError
from .human_data import read_answers_csv
from .instrument import instrument_json_schema, load_instrument
from .notices import print_notices_to_stderr
from .yamlfile import load_yaml

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2
EXIT_TRIALS_FAILED, EXIT_UNREACHABLE, EXIT_LOCKED, EXIT_REFUSED, EXIT_INTERRUPTED = 3, 4, 5, 6, 130
EXIT_CODES_HELP = """exit codes:
  0    success (psyq run: every trial answered, or missing with its reason)
  1    run-time failure (e.g. the server refused the API key)
  2    bad input: file:line:column: field: what is wrong
  3    psyq run ended but some trials failed (no answer after retries); rerun to retry them
  4    psyq run stopped early: a backend could not be reached (the URL is named)
  5    psyq run or judge refused: another process is writing the same run (directory and PID named)
  6    psyq run stopped early: the provider refused requests in a way retrying cannot fix
       (a bad key or model at once, or 5 identical refusals; its words and, where known, the fix)
  130  interrupted; every answer received is stored, rerun to resume"""
MAX_PROBLEMS_SHOWN = 50


def yaml_files_to_check(paths: list[str]) -> tuple[list[Path], int]:
    """The YAML files `psyq validate` checks under `paths`, and how many it skipped: in a folder,
    those inside `runs/` or any other run directory (a run's copies of its study and
    instruments, checked when written) and inside hidden folders (names starting with '.', e.g.
    .git, .venv). A file named explicitly is always checked.

    Example:
        >>> yaml_files_to_check(["."])   # doctest: +SKIP
        ([PosixPath('instruments/iri.yaml'), ...], 12)
    """
    from .runs import is_run_dir

    files: list[Path] = []
    skipped = 0
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            files.append(path)
            continue
        for found in sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml")):
            inside = found.relative_to(path).parts[:-1]
            folders = [path.joinpath(*inside[:i + 1]) for i in range(len(inside))]
            if any(part == "runs" or part.startswith(".") for part in inside) or any(map(is_run_dir, folders)):
                skipped += 1
            else:
                files.append(found)
    return files, skipped


def load_any(path: Path) -> object:
    """Load a psyq YAML file of any format, chosen by its `psyq:` field."""
    from .judge import load_rubric
    from .kinds import all_kinds
    from .perturbations import load_perturbations
    from .persona import load_cohort
    from .situations import load_situations
    from .study import load_study
    kind_formats = {name: load for kind in all_kinds() for name, load in kind.file_formats().items()}
    loaders = {"instrument/1": load_instrument, "cohort/1": load_cohort, "study/1": load_study,
               **kind_formats, "rubric/1": load_rubric,
               "situations/1": load_situations, "perturbations/1": load_perturbations}
    doc = load_yaml(path)
    kind = doc.data.get("psyq")
    if kind not in loaders:
        raise InputError([doc.problem(("psyq",), f"must be one of {', '.join(loaders)}, not {kind!r}")])
    return loaders[kind](path)


def _notice_missing_texts(loaded: object, file: Path) -> None:
    """A notice (not an error) on stderr for an instrument whose user-supplied texts are missing."""
    from .instrument import Instrument, missing_texts_message
    from .study import Study

    if isinstance(loaded, Instrument):
        pairs = [(loaded, file)]
    elif isinstance(loaded, Study):
        pairs = list(zip(loaded.instruments, loaded.instrument_paths))
    else:
        pairs = []
    for inst, path in pairs:
        message = missing_texts_message(inst, path)
        if message:
            print(f"notice: {file}: {message} `psyq run` refuses to administer it until then.", file=sys.stderr)


def cmd_validate(args: argparse.Namespace) -> int:
    files, skipped = yaml_files_to_check(args.paths)
    if skipped:
        print(f"note: skipped {skipped} YAML file{'s' if skipped != 1 else ''} inside runs/, run directories and hidden "
              "folders (names starting with '.'); name a file to check it", file=sys.stderr)
    if not files:
        raise InputError.single(" ".join(args.paths), "no YAML files found")
    problems = []
    for file in files:
        try:
            loaded = load_any(file)
            print(f"ok  {file}")
            _notice_missing_texts(loaded, file)
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputError(problems)
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    if args.format == "instrument":
        schema = instrument_json_schema()
    elif args.format == "cohort":
        from .persona import cohort_json_schema
        schema = cohort_json_schema()
    elif args.format == "situations":
        from .situations import situations_json_schema
        schema = situations_json_schema()
    elif args.format == "perturbations":
        from .perturbations import perturbations_json_schema
        schema = perturbations_json_schema()
    else:
        from .fields import format_json_schema
        from .study import StudySpec
        schema = format_json_schema(StudySpec, "psyq study (format study/1)")
    print(json.dumps(schema, indent=2))
    return EXIT_OK


def _prorated_summary(scores, what: str) -> str:
    """One line saying how many scores were prorated and how many left unscored (too few items)."""
    prorated = int(scores["prorated"].sum())
    unscored = int(scores["score"].isna().sum())
    parts = [f"{what}: {len(scores)} subscale scores; {prorated} prorated over the items answered"]
    parts.append(f"{unscored} not scored (fewer items answered than the subscale's min_answered)")
    return "; ".join(parts)


def cmd_score(args: argparse.Namespace) -> int:
    from analysis.score_table import wide_scores, write_scores
    from analysis.scores import human_scores

    instrument = load_instrument(args.instrument)
    answers = read_answers_csv(args.responses, instrument, keyed=args.keyed)
    long = human_scores(answers, instrument)
    wide = wide_scores(long, prefix=False).drop(columns=["backend_id", "model", "repeat"])
    print(_prorated_summary(long, args.responses), file=sys.stderr)
    if args.keyed:
        print(f"{args.responses}: declared keyed; reverse-keyed items were taken as already reversed",
              file=sys.stderr)
    if args.out:
        write_scores(wide, args.out, args.format, {instrument.id: instrument}, prefix=False)
        print(f"scored {len(wide)} respondents on {', '.join(s.id for s in instrument.rating_subscales)} "
              f"-> {args.out}")
    elif args.format != "csv":
        raise InputError.single(args.responses, f"--format {args.format} needs --out FILE")
    else:
        wide.to_csv(sys.stdout, index=False)
    return EXIT_OK


def cmd_scores(args: argparse.Namespace) -> int:
    from analysis.score_table import wide_scores, write_scores
    from analysis.scores import load_run_scores
    from .export import run_instruments
    from .run import open_run_dir

    from .imported_run import is_imported_run

    if is_imported_run(args.run):
        return _write_stage_scores(args, Path(args.run), imported=True)
    run = open_run_dir(args.run)
    if run.read_manifest().get("stages"):
        return _write_stage_scores(args, run.path, imported=False)
    long = load_run_scores(run.path)
    wide = wide_scores(long)
    out = Path(args.out) if args.out else run.path / f"scores.{args.format}"
    names = write_scores(wide, out, args.format, run_instruments(run))
    print(_prorated_summary(long, str(run.path)), file=sys.stderr)
    renamed = {a: b for a, b in names.items() if a != b}
    if renamed:
        print("renamed for SPSS: " + ", ".join(f"{a} -> {b}" for a, b in renamed.items()), file=sys.stderr)
    print(f"{len(wide)} respondent rows x {len(wide.columns)} columns -> {out}")
    return EXIT_OK


def _write_stage_scores(args: argparse.Namespace, run_path: Path, imported: bool) -> int:
    """`psyq scores` on a run with stages (or an imported run): the scores per measure stage and
    situation, long (one row per backend x respondent x repeat x situation x stage x subscale),
    since one row per respondent cannot hold a before and an after per situation."""
    if imported:
        from .imported_run import read_imported_run

        frame = read_imported_run(run_path)[1]
    else:
        from analysis.stage_scores import load_stage_scores

        frame = load_stage_scores(run_path)
    out = Path(args.out) if args.out else run_path / f"scores_by_stage.{args.format}"
    if args.format == "csv":
        frame.to_csv(out, index=False)
    elif args.format == "parquet":
        frame.to_parquet(out, index=False)
    else:
        import pyreadstat

        pyreadstat.write_sav(frame.assign(prorated=frame["prorated"].astype(float)), str(out))
    if imported:
        print(f"{run_path}: {len(frame)} imported subscale scores; {int(frame['score'].isna().sum())} empty "
              "(a missing answer in the imported file; never prorated)", file=sys.stderr)
    else:
        print(_prorated_summary(frame, str(run_path)), file=sys.stderr)
    print("a run with stages: one row per backend x respondent x repeat x situation x stage x subscale "
          "(phase before/after), not one per respondent", file=sys.stderr)
    print(f"{len(frame)} stage score rows x {len(frame.columns)} columns -> {out}")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from .progress import RunProgress
    from .run import administer
    from .runlock import RunLocked
    from .study import load_study, require_item_texts

    if args.dry_run:
        return cmd_plan(args)
    study = _with_prompt_variant(args, load_study(args.study))
    require_item_texts(study)
    overridden = _backend_overrides(args, study)
    configs = overridden.configs if overridden.overrides or overridden.origins else None
    prices = _price_table(args, study)
    progress = RunProgress()

    async def main():
        # SIGTERM stops a run the way Ctrl-C does: cleanly, keeping every answer received.
        task = asyncio.current_task()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await administer(study, args.runs_dir, configs, on_start=progress.start,
                                on_trial=progress.trial, log=progress.say,
                                overrides=[o.to_json() for o in overridden.overrides], prices=prices)

    try:
        result = asyncio.run(main())
    except KeyboardInterrupt:
        progress.stop()
        print("interrupted: every answer received is stored; run the same command again to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except RunLocked as exc:
        progress.stop()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    progress.stop()
    return run_outcome(result)


def _add_perturb_prompts_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--perturb-prompts", metavar="SET:ID",
                   help="ask every instrument with its instructions and item texts perturbed by rule ID of a "
                        "perturbation set (a file, or a shipped one: prompt_noise, haleas7): a run of its own, to "
                        "compare with the unperturbed run by `psyq sensitivity`")


def _with_prompt_variant(args: argparse.Namespace, study):
    """The study with --perturb-prompts applied (said on stderr), or as it is."""
    if not getattr(args, "perturb_prompts", None):
        return study
    from .prompt_variants import parse_variant, perturb_study_prompts

    set_file, perturbation = parse_variant(args.perturb_prompts)
    study = perturb_study_prompts(study, set_file, perturbation)
    v = study.prompt_perturbation
    print(f"note: prompts perturbed by '{v['perturbation']}' ({v['method']}, seed {v['seed']}) of set '{v['set']}': "
          "instructions and item texts changed, options and personas not; this is a run of its own "
          "(compare it with the unperturbed run: psyq sensitivity ORIGINAL THIS_RUN)", file=sys.stderr)
    return study


def cmd_sensitivity(args: argparse.Namespace) -> int:
    from analysis.prompt_sensitivity import format_sensitivity, sensitivity_of_runs

    table, notes = sensitivity_of_runs(args.original, args.perturbed)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(format_sensitivity(table))
    if args.out:
        table.to_csv(args.out, index=False)
        print(f"{len(table)} rows -> {args.out}", file=sys.stderr)
    return EXIT_OK


def _backend_overrides(args: argparse.Namespace, study):
    """The study's backends with the command-line flags applied; says on stderr where each setting came from."""
    from .overrides import CliOverrides, apply_overrides
    from .run import check_command_line_backend

    if args.base_url is not None or args.api_key_env is not None:
        check_command_line_backend(args.base_url, args.api_key_env)   # refused without echoing a secret
    flags = CliOverrides(base_url=args.base_url, model=args.model, api_key_env=args.api_key_env,
                         concurrency=args.concurrency, rpm=args.rpm, tpm=args.tpm, temperature=args.temperature,
                         reasoning_effort=args.reasoning_effort)
    overridden = apply_overrides(list(study.spec.backends), flags, str(args.study))
    if not (args.base_url or args.model):      # a default model the flags did not replace
        for line in study.notes:
            print(f"note: {line}", file=sys.stderr)
    for line in overridden.origins:
        print(f"note: {line}", file=sys.stderr)
    if overridden.overrides:   # what the model accepts, checked again for the backends as changed
        from .study import require_honourable_design
        given = ", ".join(dict.fromkeys(o.flag for o in overridden.overrides))
        require_honourable_design(study, overridden.configs, f"{args.study} with {given}")
    return overridden


def _price_table(args: argparse.Namespace, study):
    """The study's `prices:` with --prices FILE on top (None: no table)."""
    from .prices import combine, load_prices

    return combine(study.spec.prices, args.study, load_prices(args.prices) if args.prices else None)


def cmd_plan(args: argparse.Namespace) -> int:
    """`psyq plan` and `psyq run --dry-run`: what the run would send, its tokens, cost and time."""
    from contextlib import ExitStack

    from .backends import make_backend
    from .backends.local import llama_server_path
    from .plan import build_plan, plan_lines
    from .run import DATABASE, run_id_for
    from .runner import plan_trials
    from .study import load_study, require_item_texts
    from .tokenizer import token_counter
    from .usage import read_finished_trials

    study = _with_prompt_variant(args, load_study(args.study))
    require_item_texts(study)
    prices = _price_table(args, study)
    overridden = _backend_overrides(args, study)
    backends = {c.id: make_backend(c, log=lambda m: print(m, file=sys.stderr)) for c in overridden.configs}
    run_dir = Path(args.runs_dir) / study.id / run_id_for(study, backends)
    finished, finished_note = read_finished_trials(run_dir / DATABASE)
    if study.spec.stages:   # conversations: later stages shown with their history (placeholders for replies)
        from .stages import PREVIEW_NOTE, first_conversations, plan_chains, preview_trials
        chains = plan_chains(study, backends)
        trials, shown_first = preview_trials(chains), first_conversations(chains)
    else:
        trials, shown_first = list(plan_trials(study, backends)), None
    built = llama_server_path().exists()
    start = {b: (3.0, "~3 s to start llama-server") if built else
             (300.0, "about 5 min to build llama-server once (then cached)")
             for b, x in backends.items() if x.config.kind == "local"}
    with ExitStack() as stack:
        counters = {b: stack.enter_context(token_counter(x, args.tokenizer)) for b, x in backends.items()}
        # A staged study's preview shows at least one whole conversation (every stage of the first chain).
        # (with answer: logprobs a measure stage has one step per item, so count the steps, not the stages)
        whole = len(chains[0].steps) if study.spec.stages and chains else 0
        preview = max(args.preview, whole) if study.spec.stages and args.preview else args.preview
        plan = build_plan(study.id, str(run_dir), backends, trials, finished, counters, prices,
                          latency_s=args.latency, preview=preview, start_s=start, shown_first=shown_first)
    if study.spec.stages:
        plan.notes.append(PREVIEW_NOTE)
    done = sum(t.trial_id in finished for t in trials)
    if args.json:
        print(json.dumps({**plan.to_json(), "already_finished": done,
                          "overrides": [o.to_json() for o in overridden.overrides]}, indent=2, ensure_ascii=False))
    else:
        print("\n".join(plan_lines(plan, study.protocol.reask_limit, study.protocol.answer == "logprobs",
                                    done, finished_note)))
    return EXIT_OK


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a number above 0")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a number of 0 or more")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _add_backend_override_args(p: argparse.ArgumentParser) -> None:
    """--base-url, --model, --api-key-env, --concurrency, --rpm, --tpm, --temperature, --reasoning-effort
    (run and plan)."""
    g = p.add_argument_group("overriding the study's backends (recorded in the run's manifest; engine/overrides.py)")
    g.add_argument("--base-url", help="use this OpenAI-compatible server: with one study backend, it keeps its "
                                      "sampling and pacing settings; with several, one backend with defaults")
    g.add_argument("--model", help="model name (the backend is named after it); without --base-url: every backend's")
    g.add_argument("--api-key-env", help="NAME of the environment variable holding the API key for --base-url "
                                         "(the study's key variable is not sent to another URL)")
    g.add_argument("--concurrency", type=_positive_int, help="requests in flight per backend (not part of the run "
                                                             "id: resuming with another concurrency is the same run)")
    g.add_argument("--rpm", type=_positive_float, help="requests per minute per backend (not part of the run id)")
    g.add_argument("--tpm", type=_positive_float, help="tokens per minute per backend (not part of the run id)")
    g.add_argument("--temperature", type=_non_negative_float,
                   help="sampling temperature of every backend (part of the run id: another temperature is another run)")
    g.add_argument("--reasoning-effort", choices=["none", "minimal", "low", "medium", "high"],
                   help="reasoning effort of every backend's reasoning model (OpenAI-style reasoning_effort; part of "
                        "the run id); refused for a model without that control")


def _add_plan_args(p: argparse.ArgumentParser) -> None:
    """Options of the plan report (psyq plan, psyq run --dry-run)."""
    g = p.add_argument_group("plan report (psyq plan, psyq run --dry-run)")
    g.add_argument("--prices", metavar="FILE", help="price table YAML (prices: {MODEL: {input: USD, output: USD}} per "
                                                    "1M tokens; on top of the study's `prices:`)")
    g.add_argument("--latency", type=_positive_float, default=1.0, metavar="SECONDS",
                   help="assumed seconds per request for the wall-time estimate (default 1.0)")
    g.add_argument("--preview", type=_non_negative_int, default=2, metavar="N",
                   help="show the first N requests of each backend exactly as sent (default 2; 0: none)")
    g.add_argument("--tokenizer", choices=["auto", "approximate", "server"], default="auto",
                   help="auto (default): the server's own tokenizer where it offers one (llama.cpp, vLLM), else "
                        "characters/4, labelled approximate; approximate: never ask a server; server: as auto, and "
                        "start the cached local llama-server (~3 s) to count with the local model's vocabulary")
    g.add_argument("--json", action="store_true", help="print the plan as JSON")


PLAN_HELP = """The plan counts what `psyq run` would send, from the runner's own planning code: requests per
backend x instrument x stage (repeats and counterbalancing included; trials already finished in the
run directory left out). Not counted: re-asks of unreadable replies and retries, which may add
requests. Prompt tokens come from the server's tokenizer where it has one (llama.cpp /apply-template
+ /tokenize, vLLM /tokenize; no key is sent, nothing is generated), else characters/4, labelled
approximate; completion tokens are the sum of max_tokens, an upper bound. Cost needs a price table
(USD per 1M tokens by model, in the study's `prices:` or --prices FILE); a model without a price is
"not estimable". Wall time: per backend the slowest of requests/concurrency x --latency, requests/rpm
and tokens/tpm; backends run at the same time. The preview shows URL, headers (the API key's value
never) and the JSON body as the backend's own code builds them.

example price file:
  prices:
    gpt-4o-mini: {input: 0.15, output: 0.60}
  as_of: 2026-11-01"""


def _usage_lines(run, manifest: dict, prices_file: str | None) -> list[str]:
    """Tokens the run used (from its store) and their cost, for `psyq status`."""
    from .prices import PriceTable, load_prices
    from .usage import read_token_usage, usage_lines

    if prices_file:
        table = load_prices(prices_file)
    else:
        table = PriceTable.from_json(manifest["prices"]) if manifest.get("prices") else None
    from .usage import endpoint_lines, read_endpoint_usage
    # Then trials and tokens per endpoint, for backends answered by several (endpoint pools).
    return usage_lines(read_token_usage(run.database), table) + endpoint_lines(read_endpoint_usage(run.database))


def run_outcome(result) -> int:
    """Print what a run ended with and return its exit code (see the module docstring).

    Example:
        >>> run_outcome(result)   # doctest: +SKIP
        3
    """
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items())) or "nothing stored"
    print(f"run {result.run_dir.path}: {result.planned} trials planned, {result.already_finished} "
          f"already done before this run; now {counts}")
    for note in result.notes or []:
        print(f"note: {note}", file=sys.stderr)
    if result.interrupted:
        print("interrupted: every answer received is stored; run the same command again to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    if result.unreachable:
        print(f"error: stopped early: {result.unreachable}\nEvery answer received is stored; run the same "
              f"command again to resume", file=sys.stderr)
        return EXIT_UNREACHABLE
    if result.refused:
        print(f"error: stopped early: {result.refused}\nEvery answer received is stored; change the study and "
              f"run again (psyq status RUN lists the errors)", file=sys.stderr)
        return EXIT_REFUSED
    failed = result.counts.get("failed", 0)
    if failed:
        from .store import RunStore
        with RunStore(result.run_dir.database) as store:
            errors = store.frequent_errors()
        said = "; ".join(f"{n} × {message}" for message, n in errors)
        print(f"error: {failed} of {result.planned} trials failed (no answer: {said}); run the same command "
              f"again to retry them", file=sys.stderr)
        return EXIT_TRIALS_FAILED
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    from .runs import format_runs, list_runs

    print(format_runs(list_runs(args.dir)))
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from .run import open_run_dir
    from .runs import format_breakdown, run_breakdown, status_target
    from .store import RunStore

    path, listing = status_target(args.run)   # a study's runs folder: its runs, then the latest one
    if listing:
        print(listing + "\n")
    run = open_run_dir(path)
    manifest = run.read_manifest()
    with RunStore(run.database) as store:
        trials, answers = store.status_counts(), store.answer_status_counts()
        batches = _batch_lines(store)
    done = trials.get("answered", 0) + trials.get("missing", 0)
    print(f"study      {manifest['study']}  (run {manifest['run_id']})")
    print(f"backends   " + ", ".join(f"{b}: {v['identity'].get('model')}" for b, v in manifest["backends"].items()))
    print(f"trials     {done} of {manifest['trials_planned']} finished; "
          + ", ".join(f"{k} {v}" for k, v in sorted(trials.items())))
    print(f"answers    " + ", ".join(f"{k} {v}" for k, v in sorted(answers.items())))
    print(f"started    {manifest.get('started_at')}   finished {manifest.get('finished_at') or '-'}")
    if manifest.get("stopped_early"):
        print(f"stopped    early: {manifest['stopped_early']}")
    with RunStore(run.database) as store:
        for message, n in store.frequent_errors():   # why trials failed, in the server's words
            print(f"error      {n} failed trials: {message}")
    for line in batches:   # batch mode: what is pending in which provider batch
        print(line)
    print("\n" + format_breakdown(*run_breakdown(run.path)))
    for line in _usage_lines(run, manifest, getattr(args, "prices", None)):   # tokens used and cost
        print(line)
    return EXIT_OK


def _batch_lines(store) -> list[str]:
    from .batch import batch_status_lines

    return batch_status_lines(store)


def cmd_export(args: argparse.Namespace) -> int:
    from .export import export_table

    table = export_table(args.run)
    out = Path(args.out) if args.out else Path(args.run) / f"answers.{args.format}"
    if args.format == "csv":
        table.to_csv(out, index=False)
    else:
        table.to_parquet(out, index=False)
    print(f"{len(table)} answers -> {out}")
    return EXIT_OK


RUBRICS = Path(__file__).resolve().parents[1] / "instruments" / "rubrics"


def cmd_judge(args: argparse.Namespace) -> int:
    import asyncio

    from .judge import judge_run, load_rubric
    from .runlock import RunLocked

    rubric_path = Path(args.rubric)
    if not rubric_path.exists() and (RUBRICS / f"{args.rubric}.yaml").exists():
        rubric_path = RUBRICS / f"{args.rubric}.yaml"   # a shipped rubric by name
    multi = load_yaml(rubric_path).data.get("psyq") == "rubric/2" if rubric_path.exists() else False
    if multi:   # a multi-dimension rubric rates the run's rating targets (engine.target_judge)
        from .rubric2 import load_multi_rubric
        rubric = load_multi_rubric(rubric_path)
    else:
        rubric = load_rubric(rubric_path)
    config = _helper_backend(args, args.judge_id)
    answer = args.answer or ("logprobs" if config.kind == "local" else "json")
    _require_helper_capabilities(config, answer, "--answer" if args.answer else "--model")
    if multi:
        return _judge_targets(args, config, rubric, answer)
    tick = _every_fifty("judged")
    try:
        result = asyncio.run(judge_run(args.run, config, rubric, answer, on_judgement=tick,
                                       log=lambda m: print(m, file=sys.stderr)))
    except KeyboardInterrupt:
        print("interrupted: every judgement received is stored; run the same command again to resume",
              file=sys.stderr)
        return 130
    except RunLocked as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items())) or "nothing"
    print(f"{rubric.spec.id} by {config.id} ({answer}): {result.tasks} answers to judge, {result.already} "
          f"already judged before; now {counts}")
    return EXIT_OK


PERTURBATIONS = Path(__file__).resolve().parents[1] / "instruments" / "perturbations"


def _every_fifty(word: str) -> Callable[[object], None]:
    """A progress callback for judging: a line on stderr every 50 results ("  50 rated")."""
    done = [0]

    def tick(_result: object) -> None:
        done[0] += 1
        if done[0] % 50 == 0:
            print(f"  {done[0]} {word}", file=sys.stderr)

    return tick


def _helper_backend(args: argparse.Namespace, backend_id: str):
    """The backend a judge or a rewriter uses: --base-url/--model/--api-key-env, else the local
    instruct model (engine/backends/catalogue.py); temperature 0 (the same text gets the same
    level or rewrite)."""
    from .backends import BackendConfig
    from .backends.catalogue import INSTRUCT_DEFAULT

    if bool(args.base_url) != bool(args.model):
        raise InputError.single(args.run, "--base-url and --model go together")
    if not args.base_url:
        print(f"note: {backend_id}: the local model {INSTRUCT_DEFAULT} (instruction-tuned; --base-url URL "
              "--model NAME for another server)", file=sys.stderr)
        return BackendConfig(id=backend_id, kind="local", model=INSTRUCT_DEFAULT, temperature=0.0)
    from .run import check_command_line_backend

    check_command_line_backend(args.base_url, args.api_key_env)
    from .backends.capabilities import capabilities_for

    caps = capabilities_for("openai", args.base_url, args.model)
    if caps.temperature == "default_only":   # e.g. a reasoning model: temperature 0 would be refused
        print(f"note: {args.model} ({caps.title}) takes only its default temperature: the {backend_id} asks at "
              f"temperature 1, not 0, so the same text may get another answer when asked again", file=sys.stderr)
    return BackendConfig(id=backend_id, kind="openai", base_url=args.base_url, model=args.model,
                         api_key_env=args.api_key_env,
                         temperature=None if caps.temperature == "default_only" else 0.0)


def _require_helper_capabilities(config, answer: str, option: str) -> None:
    """InputError when the judge's or rewriter's model cannot give `answer` (e.g. logprobs)."""
    from .backends.capabilities import design_problems

    problems = [Problem(option, None, None, "", why) for _, why in design_problems(config, answer)]
    if problems:
        raise InputError(problems)


def _add_perturb_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="run directory (runs/<study>/<run-id>)")
    p.add_argument("--set", required=True, dest="set_file",
                   help="perturbation set YAML file, or the name of a shipped one (haleas7)")
    p.add_argument("--only", metavar="ID,...", help="apply only these perturbations of the set")
    p.add_argument("--base-url", help="rewrite with this OpenAI-compatible server (default: the local model)")
    p.add_argument("--model", help="model name for --base-url")
    p.add_argument("--api-key-env", help="NAME of the environment variable holding the API key for --base-url")
    p.add_argument("--rewriter-id", default="rewriter", help="backend id of the rewrites (default: rewriter)")


def cmd_perturb(args: argparse.Namespace) -> int:
    import asyncio

    from .perturb import perturb_run
    from .perturbations import load_perturbations
    from .runlock import RunLocked

    set_path = Path(args.set_file)
    if not set_path.exists() and (PERTURBATIONS / f"{args.set_file}.yaml").exists():
        set_path = PERTURBATIONS / f"{args.set_file}.yaml"   # a shipped set by name
    pset = load_perturbations(set_path)
    only = [o.strip() for o in args.only.split(",") if o.strip()] if args.only else None
    config = _helper_backend(args, args.rewriter_id)
    try:
        result = asyncio.run(perturb_run(args.run, pset, config, only=only, log=lambda m: print(m, file=sys.stderr)))
    except KeyboardInterrupt:
        print("interrupted: every perturbed text received is stored; run the same command again to resume",
              file=sys.stderr)
        return 130
    except RunLocked as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    if result.pairs == 0:
        print(f"warning: {args.run} has no rating targets to perturb (no persona replies to response items, no "
              "imported reference replies)", file=sys.stderr)
    if result.added_persona_replies:
        print(f"note: added {result.added_persona_replies} persona replies of the run as rating targets",
              file=sys.stderr)
    for perturbation, original, reason in result.unusable:
        print(f"warning: {perturbation} of {original}: not perturbed, the rewrite is unusable: {reason}",
              file=sys.stderr)
    for perturbation, counts in result.counts.items():
        if counts.get("unchanged"):
            print(f"note: {perturbation}: the rule left {counts['unchanged']} text(s) unchanged (nothing to change); "
                  "they are stored with the original text and rated like the others", file=sys.stderr)
        if counts.get("failed"):
            print(f"warning: {perturbation}: {counts['failed']} rewrite(s) failed (no answer from the backend); "
                  "run the same command again to ask for them", file=sys.stderr)
    summary = "; ".join(f"{p} " + ", ".join(f"{k} {v}" for k, v in c.items()) for p, c in result.counts.items())
    print(f"{pset.id}: {result.pairs} (reply, perturbation) pairs, {result.already} done before; "
          f"now {summary or 'nothing'}")
    return EXIT_OK


def _judge_targets(args: argparse.Namespace, config, rubric, answer: str) -> int:
    """`psyq judge` with a `rubric/2` rubric: every rating target × dimension, blind, resumable."""
    import asyncio

    from .runlock import RunLocked
    from .target_judge import judge_targets

    tick = _every_fifty("rated")
    try:
        result = asyncio.run(judge_targets(args.run, config, rubric, answer, order_seed=args.order_seed,
                                           on_rating=tick, log=lambda m: print(m, file=sys.stderr)))
    except KeyboardInterrupt:
        print("interrupted: every rating received is stored; run the same command again to resume", file=sys.stderr)
        return 130
    except RunLocked as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    for note in result.skipped:
        print(f"warning: {note}", file=sys.stderr)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items())) or "nothing"
    print(f"{rubric.spec.id} by {config.id} ({answer}): {result.targets} targets ({result.new_targets} persona "
          f"replies added now) x {len(rubric.dimension_ids)} dimensions = {result.requests} ratings, "
          f"{result.already} rated before; now {counts}")
    return EXIT_OK


def _id_paths(specs: list[str] | None, option: str) -> dict[str, str]:
    """INSTRUMENT_ID=PATH arguments as a mapping."""
    out = {}
    for spec in specs or []:
        instrument, sep, path = spec.partition("=")
        if not sep:
            raise InputError.single(spec, f"{option} takes INSTRUMENT_ID=FILE.csv, e.g. iri=humans.csv")
        out[instrument] = path
    return out


KEYED_SUFFIX = ":keyed"


def cmd_report(args: argparse.Namespace) -> int:
    from analysis.report import write_report

    human, targets = _id_paths(args.human, "--human"), _id_paths(args.targets, "--targets")
    norm_samples = [s.strip() for s in args.norms.split(",") if s.strip()] if args.norms else None
    # INSTRUMENT=FILE.csv:keyed declares item answers stored already keyed (reverse items reversed).
    keyed = {i for i, path in human.items() if path.endswith(KEYED_SUFFIX)}
    human = {i: path.removesuffix(KEYED_SUFFIX) if i in keyed else path for i, path in human.items()}
    html_path, md_path = write_report(args.run, args.out, human_csv=human or None, bound=args.bound,
                                      correction=args.correction, targets_csv=targets or None,
                                      norm_samples=norm_samples, human_keyed=keyed,
                                      warn=lambda m: print(f"warning: {m}", file=sys.stderr),
                                      human_change_csv=args.human_change)
    print(f"report -> {html_path}\nsummary -> {md_path}")
    return EXIT_OK


def cmd_rating_sheet(args: argparse.Namespace) -> int:
    from .rating_sheet import write_rating_sheet
    from .rubric2 import find_multi_rubric
    from .runlock import RunLocked

    rubric = find_multi_rubric(args.rubric)
    try:
        n = write_rating_sheet(args.run, args.out, rubric, seed=args.seed, with_perturbed=args.with_perturbed)
    except RunLocked as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    print(f"{n} texts to rate on {', '.join(rubric.dimension_ids)} (blind, shuffled with seed {args.seed}) -> "
          f"{args.out}; fill in rater_id and the levels, then: psyq import ratings {args.out} --run {args.run} "
          f"--rubric {rubric.spec.id}")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from .importers.command import run as run_import

    return run_import(args)


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "validate": (cmd_validate, "check instrument, cohort and study YAML files (schema and meaning)"),
    "schema": (cmd_schema, "print the JSON Schema of the instrument (default), cohort, study or situations format"),
    "score": (cmd_score, "score a CSV of item answers (human data) with an instrument"),
    "run": (cmd_run, "administer a study (resumes a run of the same study)"),
    "plan": (cmd_plan, "what `psyq run` would send: requests, tokens, cost, time, a preview (nothing sent)"),
    "status": (cmd_status, "summarise a run, per instrument x backend (or the latest run of a study's runs folder)"),
    "runs": (cmd_runs, "list the runs in a folder (default runs/), newest first"),
    "export": (cmd_export, "write a run's answers as a tidy long table"),
    "scores": (cmd_scores, "write a run's subscale scores, one row per respondent x repeat x backend "
                           "(a run with stages, or an imported one: one row per stage and situation)"),
    "judge": (cmd_judge, "score a run's free-text answers with a judge model and a rubric"),
    "sensitivity": (cmd_sensitivity, "prompt sensitivity: pair a run's scores with those of the same study run with "
                                     "--perturb-prompts, respondent by respondent"),
    "perturb": (cmd_perturb, "add perturbed versions of a run's rating targets (typos, leetspeak, rewrites ...)"),
    "report": (cmd_report, "write an HTML report and a Markdown summary of a run"),
    "import": (cmd_import, "turn a REDCap dictionary, R psych keys or a Qualtrics .qsf into instrument YAML; "
                          "import reference replies or human ratings into a run; convert EmotionBench's "
                          "situations, crowd workbook or model results"),
    "rating-sheet": (cmd_rating_sheet, "write a blind CSV sheet of a run's replies for people to rate on a rubric"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="psyq",
        description="Administer psychometric instruments to LLM-simulated personas, "
                    "score them and compare them with human norms.",
        epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"psyq {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parsers = {name: sub.add_parser(name, help=help_, description=help_,
                                    epilog=EXIT_CODES_HELP if name == "run" else PLAN_HELP if name == "plan" else None,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
               for name, (_, help_) in COMMANDS.items()}
    parsers["validate"].add_argument("paths", nargs="+", metavar="PATH",
                                     help="YAML files or folders holding them")
    parsers["schema"].add_argument("format", nargs="?", choices=["instrument", "cohort", "study", "situations", "perturbations"],
                                   default="instrument")
    p = parsers["score"]
    p.add_argument("instrument", help="instrument YAML file")
    p.add_argument("responses", help="CSV with respondent_id and one column per item id")
    p.add_argument("--out", help="write scores to this file (default: CSV on standard output)")
    p.add_argument("--format", choices=["csv", "parquet", "sav"], default="csv",
                   help="file format for --out (sav: SPSS, with variable and value labels)")
    p.add_argument("--keyed", action="store_true",
                   help="the file's reverse-keyed items are already reversed (do not reverse them again)")
    p = parsers["run"]
    p.add_argument("study", help="study YAML file")
    p.add_argument("--runs-dir", default="runs", help="where runs go (default: runs/)")
    p.add_argument("--dry-run", action="store_true", help="print the plan (as `psyq plan`) and send nothing")
    _add_backend_override_args(p)
    _add_plan_args(p)
    _add_perturb_prompts_arg(p)
    p = parsers["plan"]
    p.add_argument("study", help="study YAML file")
    p.add_argument("--runs-dir", default="runs", help="where runs go, to leave out trials already finished "
                                                       "(default: runs/; read only)")
    _add_backend_override_args(p)
    _add_plan_args(p)
    _add_perturb_prompts_arg(p)
    p = parsers["sensitivity"]
    p.add_argument("original", help="run directory of the study as written")
    p.add_argument("perturbed", nargs="+", help="run directories of the same study with --perturb-prompts")
    p.add_argument("--out", help="also write the table as CSV to this file")
    parsers["status"].add_argument("--prices", metavar="FILE", help="price table YAML for the cost (default: the "
                                                                    "one recorded in the run's manifest)")
    parsers["status"].add_argument("run", help="run directory (runs/<study>/<run-id>), or a folder of runs "
                                   "(runs/<study>: lists them and shows the latest)")
    parsers["runs"].add_argument("dir", nargs="?", default="runs", metavar="DIR",
                                 help="folder holding runs: runs/ (default) or runs/<study>")
    p = parsers["export"]
    p.add_argument("run", help="run directory (runs/<study>/<run-id>)")
    p.add_argument("--format", choices=["csv", "parquet"], default="csv")
    p.add_argument("--out", help="output file (default: answers.<format> in the run directory)")
    p = parsers["scores"]
    p.add_argument("run", help="run directory (runs/<study>/<run-id>)")
    p.add_argument("--format", choices=["csv", "parquet", "sav"], default="csv",
                   help="sav: SPSS, with variable labels, value labels and SPSS-valid names")
    p.add_argument("--out", help="output file (default: scores.<format> in the run directory)")
    p = parsers["judge"]
    p.add_argument("run", help="run directory (runs/<study>/<run-id>)")
    p.add_argument("--rubric", required=True,
                   help="rubric YAML file, or the name of a shipped one (leas_level, ea_similarity)")
    p.add_argument("--base-url", help="judge with this OpenAI-compatible server (default: the local model)")
    p.add_argument("--model", help="model name for --base-url")
    p.add_argument("--api-key-env", help="NAME of the environment variable holding the API key for --base-url")
    p.add_argument("--judge-id", default="judge", help="name the judgements are stored under (default: judge)")
    p.add_argument("--answer", choices=["logprobs", "json", "text"],
                   help="how the level is read (default: logprobs for the local model, json otherwise)")
    p.add_argument("--order-seed", type=int, default=0,
                   help="rubric/2: seed of the shuffled order the targets are sent in (default: 0)")
    _add_perturb_args(parsers["perturb"])
    p = parsers["report"]
    p.add_argument("run", help="run directory (runs/<study>/<run-id>)")
    p.add_argument("--human", action="append", metavar="INSTRUMENT=CSV",
                   help="human data to compare with (repeatable): item answers, e.g. iri=humans.csv "
                        "(iri=humans.csv:keyed when reverse-keyed items are stored already reversed), or "
                        "perceiver ratings for an empathic-accuracy instrument, e.g. ea=perceivers.csv")
    p.add_argument("--targets", action="append", metavar="INSTRUMENT=CSV",
                   help="targets' own reports for an empathic-accuracy instrument, replacing its design-intended "
                        "profiles")
    p.add_argument("--human-change", metavar="CSV",
                   help="humans' before/after scores (respondent_id, emotion, situation_id, subscale, before, "
                        "after) to compare a staged run's change with (e.g. from `psyq import emotionbench-humans`)")
    p.add_argument("--norms", metavar="SAMPLE_ID,...",
                   help="compare only these norm samples (default: the study's `norms`, else every sample)")
    p.add_argument("--bound", type=float, default=0.3, help="equivalence bound in norm SD units (default 0.3)")
    p.add_argument("--correction", choices=["holm", "fdr_bh"], default="holm",
                   help="multiple-comparison correction across the family (default holm)")
    p.add_argument("--out", help="output folder (default: the run directory)")
    p = parsers["rating-sheet"]
    p.add_argument("run", help="run directory (runs/<study>/<run-id>)")
    p.add_argument("out", help="the CSV sheet to write")
    p.add_argument("--rubric", required=True, help="rubric/2 file or shipped name whose dimensions are rated "
                                                   "(e.g. empathy_ceb)")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffled row order (default: 0)")
    p.add_argument("--with-perturbed", action="store_true",
                   help="also list the perturbed texts of psyq perturb (left out by default)")
    from .importers.command import add_arguments as add_import_arguments   # one sub-command per format
    add_import_arguments(parsers["import"])
    return parser


def report_input_error(exc: InputError) -> None:
    """Print an input error's problems, one per line, to standard error."""
    shown = exc.problems[:MAX_PROBLEMS_SHOWN]
    for problem in shown:
        print(f"error: {problem}", file=sys.stderr)
    if len(exc.problems) > len(shown):
        print(f"error: ... and {len(exc.problems) - len(shown)} more problems", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler, _ = COMMANDS[args.command]
    print_notices_to_stderr()   # what a reader did otherwise than written is said: "note: file:line: ..."
    try:
        return handler(args)
    except InputError as exc:
        report_input_error(exc)
        return EXIT_BAD_INPUT
    except PsyqError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
