"""Administering a study: psyq plan and psyq run (with the backend overrides they share)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from psyq.engine.files.errors import InputError
from psyq.cli.common import (EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, EXIT_TRIALS_FAILED, EXIT_UNREACHABLE,
                             id_paths, non_negative_float, non_negative_int, positive_float, positive_int,
                             run_stoppable)


def cmd_run(args: argparse.Namespace) -> int:
    from psyq.engine.administer.progress import RunProgress
    from psyq.engine.administer.run import administer
    from psyq.engine.design.study import load_study

    if args.dry_run:
        return cmd_plan(args)
    # Items without text are refused by administer(), the first thing it does (for a script too).
    study = _with_prompt_variant(args, load_study(args.study))
    overridden = backend_overrides(args, study)
    configs = overridden.configs if overridden.overrides or overridden.origins else None
    prices = price_table(args, study)
    progress = RunProgress()

    try:
        # SIGTERM and SIGHUP stop a run the way Ctrl-C does: administer keeps every answer received and
        # returns, and the outcome says so (exit 130).
        result = run_stoppable(lambda: administer(study, args.runs_dir, configs, on_start=progress.start,
                                                  on_trial=progress.trial, log=progress.say,
                                                  overrides=[o.to_json() for o in overridden.overrides],
                                                  prices=prices), "answer")
    finally:
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
    from psyq.engine.design.perturbed_prompts import parse_variant, perturb_study_prompts

    set_file, perturbation = parse_variant(args.perturb_prompts)
    study = perturb_study_prompts(study, set_file, perturbation)
    v = study.prompt_perturbation
    print(f"note: prompts perturbed by '{v['perturbation']}' ({v['method']}, seed {v['seed']}) of set '{v['set']}': "
          "instructions and item texts changed, options and personas not; this is a run of its own "
          "(compare it with the unperturbed run: psyq sensitivity ORIGINAL THIS_RUN)", file=sys.stderr)
    return study


def backend_overrides(args: argparse.Namespace, study):
    """The study's backends with the command-line flags applied; says on stderr where each setting came from."""
    from psyq.engine.administer.overrides import CliOverrides, apply_overrides
    from psyq.engine.administer.overrides import check_command_line_backend

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
        from psyq.engine.backends.capabilities import require_capable
        given = ", ".join(dict.fromkeys(o.flag for o in overridden.overrides))
        for asked in _asked(study):   # each condition's answer mode on the backends that ask it
            keep = asked.condition.backends if asked.condition is not None else None
            require_capable([c for c in overridden.configs if keep is None or c.id in keep], asked.protocol.answer,
                            f"{args.study} with {given}")
    return overridden


def _asked(study) -> list:
    """The study as each of its conditions asks it (engine/design/study.py), or the study itself without conditions."""
    from psyq.engine.design.study import condition_study

    return [condition_study(study, c) for c in study.conditions] or [study]


def price_table(args: argparse.Namespace, study):
    """The study's `prices:` with --prices FILE on top (None: no table)."""
    from psyq.engine.design.prices import combine, load_prices

    return combine(study.spec.prices, args.study, load_prices(args.prices) if args.prices else None)


def cmd_plan(args: argparse.Namespace) -> int:
    """`psyq plan` and `psyq run --dry-run`: what the run would send, its tokens, cost and time."""
    from contextlib import ExitStack

    from psyq.engine.backends import make_backend
    from psyq.engine.administer.plan_estimate import build_plan, plan_lines
    from psyq.engine.store.run_dir import DATABASE
    from psyq.engine.administer.record import run_id_for
    from psyq.engine.administer.plan import plan_trials
    from psyq.engine.administer.ssr_rating import embedding_plan
    from psyq.engine.design.study import load_study, require_item_texts
    from psyq.engine.administer.tokenizer import token_counter
    from psyq.engine.results.usage import read_finished_trials

    study = _with_prompt_variant(args, load_study(args.study))
    require_item_texts(study)
    people = people_for_power(args, study)     # a bad --human is said before anything is planned
    prices = price_table(args, study)
    overridden = backend_overrides(args, study)
    backends = {c.id: make_backend(c, log=lambda m: print(m, file=sys.stderr)) for c in overridden.configs}
    run_dir = Path(args.runs_dir) / study.id / run_id_for(study, backends)
    finished, finished_note = read_finished_trials(run_dir / DATABASE)
    if study.spec.stages:   # conversations: later stages shown with their history (placeholders for replies)
        from psyq.engine.administer.plan import (PREVIEW_NOTE, first_conversations, plan_chains,
            preview_trials)
        chains = plan_chains(study, backends)
        trials, shown_first = preview_trials(chains), first_conversations(chains)
    else:
        trials, shown_first = list(plan_trials(study, backends)), None
    start = {b: seconds for b, x in backends.items() if (seconds := x.start_time()) is not None}
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
    power = study_verdict_power(args, study, people) if people else None
    embeddings = embedding_plan(study, trials, finished, prices)   # answer: ssr's embedding requests (else None)
    if args.json:
        print(json.dumps({**plan.to_json(), "already_finished": done,
                          "overrides": [o.to_json() for o in overridden.overrides],
                          **({"embeddings": embeddings.to_json()} if embeddings is not None else {}),
                          **({"verdict_power": power} if power is not None else {})}, indent=2, ensure_ascii=False))
    else:
        protocols = [asked.protocol for asked in _asked(study)]
        print("\n".join(plan_lines(plan, max(p.reask_limit for p in protocols),
                                    all(p.answer == "logprobs" for p in protocols),
                                    done, finished_note)))
        if embeddings is not None:
            print("\n".join(embeddings.lines()))
        if power is not None:
            print("\n".join(_power_lines(power)))
    return EXIT_OK


def people_for_power(args: argparse.Namespace, study) -> dict:
    """--human INSTRUMENT=FILE of `psyq plan`, checked: the files exist, the instruments are the study's."""
    if not getattr(args, "human", None):
        return {}
    from psyq.analysis.scoring.human_data import human_data

    people = human_data(id_paths(args.human, "--human"))
    instruments = [i.id for i in study.instruments]
    unknown = sorted(set(people) - set(instruments))
    if unknown:
        raise InputError.single(", ".join(unknown), f"--human names no instrument of the study "
                                                    f"(its instruments: {', '.join(instruments)})")
    return people


def study_verdict_power(args: argparse.Namespace, study, people: dict) -> dict:
    """Per instrument of `people`, how often a cohort of the study's size that truly stood in for those
    people would be marked meets / falls short per criterion, and the cohort size that meets in 80 % of
    draws (psyq.verdict_power, the people resampled)."""
    from psyq.analysis.statistics.standin.verdict_power import DEFAULT_GRID, verdict_power

    instruments = {i.id: i for i in study.instruments}
    n = sum(p.id != "baseline" for p in study.cohort.personas)
    out = {}
    for inst_id, data in people.items():
        answers = data.answers(instruments[inst_id])
        sizes = sorted({n, *DEFAULT_GRID} & set(range(2, len(answers) - 1)))
        print(f"simulating the verdict for {inst_id}: {args.power_reps} draws at each of {len(sizes)} cohort sizes "
              f"from {len(answers):,} people (about a minute) ...", file=sys.stderr, flush=True)
        power = verdict_power(answers, instruments[inst_id], sizes, reps=args.power_reps)
        out[inst_id] = {"people": data.who(len(answers)), "personas": n, "reps": args.power_reps,
                        "at_study_size": power[power["n_personas"] == n].drop(columns="n_personas").to_dict("records"),
                        "needed": power.attrs["needed"].to_dict("records")}
    return out


def _power_lines(power: dict) -> list[str]:
    lines = []
    for inst_id, p in power.items():
        lines += ["", f"Verdict power for {inst_id}, against {p['people']}:",
                  f"how often {p['personas']} personas that truly stood in for them would be marked (the people "
                  f"resampled, {p['reps']} draws; psyq.verdict_power; structure not simulated)",
                  f"  {'criterion':<16} {'meets':>6} {'falls short':>12}   personas for 80 % meets"]
        needed = {r["criterion"]: r for r in p["needed"]}
        for r in p["at_study_size"]:
            need = needed.get(r["criterion"], {})
            said = (f"{int(need['n_needed']):,}" if need.get("n_needed") == need.get("n_needed") and need.get("n_needed")
                    else need.get("note", ""))
            lines.append(f"  {r['criterion']:<16} {r['meets']:>6.0%} {r['falls_short']:>12.0%}   {said}")
    return lines


def add_people_power_args(p: argparse.ArgumentParser, human_help: str) -> None:
    """--human (people's answers, `human_help` saying what the command does with them) and --power-reps
    (plan and preregister: the verdict's power at the study's cohort size)."""
    p.add_argument("--human", action="append", metavar="INSTRUMENT=CSV", help=human_help)
    p.add_argument("--power-reps", type=positive_int, default=100, metavar="N",
                   help="draws per cohort size for --human (default 100)")


def add_backend_override_args(p: argparse.ArgumentParser) -> None:
    """--base-url, --model, --api-key-env, --concurrency, --rpm, --tpm, --temperature, --reasoning-effort
    (run and plan)."""
    g = p.add_argument_group("overriding the study's backends (recorded in the run's manifest; engine/administer/overrides.py)")
    g.add_argument("--base-url", help="use this OpenAI-compatible server: with one study backend, it keeps its "
                                      "sampling and pacing settings; with several, one backend with defaults")
    g.add_argument("--model", help="model name (the backend is named after it); without --base-url: every backend's")
    g.add_argument("--api-key-env", help="NAME of the environment variable holding the API key for --base-url "
                                         "(the study's key variable is not sent to another URL)")
    g.add_argument("--concurrency", type=positive_int, help="requests in flight per backend (not part of the run "
                                                             "id: resuming with another concurrency is the same run)")
    g.add_argument("--rpm", type=positive_float, help="requests per minute per backend (not part of the run id)")
    g.add_argument("--tpm", type=positive_float, help="tokens per minute per backend (not part of the run id)")
    g.add_argument("--temperature", type=non_negative_float,
                   help="sampling temperature of every backend (part of the run id: another temperature is another run)")
    g.add_argument("--reasoning-effort", choices=["none", "minimal", "low", "medium", "high"],
                   help="reasoning effort of every backend's reasoning model (OpenAI-style reasoning_effort; part of "
                        "the run id); refused for a model without that control")


def _add_plan_args(p: argparse.ArgumentParser) -> None:
    """Options of the plan report (psyq plan, psyq run --dry-run)."""
    g = p.add_argument_group("plan report (psyq plan, psyq run --dry-run)")
    g.add_argument("--prices", metavar="FILE", help="price table YAML (prices: {MODEL: {input: USD, output: USD}} per "
                                                    "1M tokens; on top of the study's `prices:`)")
    g.add_argument("--latency", type=positive_float, default=1.0, metavar="SECONDS",
                   help="assumed seconds per request for the wall-time estimate (default 1.0)")
    g.add_argument("--preview", type=non_negative_int, default=2, metavar="N",
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


def run_outcome(result) -> int:
    """Print what a run ended with, and the commands that read it next; return its exit code (see
    the module docstring).

    Example:
        >>> run_outcome(result)   # needs a finished administration  # doctest: +SKIP
        3
    """
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items())) or "nothing stored"
    print(f"run {result.run_dir.path}: {result.planned} trials planned, {result.already_finished} "
          f"already done before this run; now {counts}")
    for note in result.notes or []:
        print(f"note: {note}", file=sys.stderr)
    code = _stop_reason(result)
    answered = result.counts.get("answered", 0) + result.counts.get("missing", 0)
    if not answered and result.planned:
        # Nothing was answered, so nothing was paid and nothing is lost. The empty run stays where it is (the
        # rerun resumes it) but is never taken for the study's latest run (psyq.engine.results.runs.resolve_run).
        print(f"note: no trial was answered: {result.run_dir.path} holds no answer yet; psyq status, export, scores "
              f"and report pass it over when given the study's runs folder, and `psyq runs` marks it", file=sys.stderr)
    elif answered:
        print("\n".join(next_commands(result.run_dir.path, ended=code in (EXIT_OK, EXIT_TRIALS_FAILED))))
    return code


def next_commands(run_path: Path, ended: bool = True) -> list[str]:
    """The commands that read a run next, with its real path (quoted for the shell), to paste.
    A run that stopped before its end gets only `psyq status` (the rerun comes first).

    Example:
        >>> print("\\n".join(next_commands(Path("runs/quickstart/ab12cd34ef56"))))
        next:
          psyq status runs/quickstart/ab12cd34ef56
          psyq export runs/quickstart/ab12cd34ef56
          psyq scores runs/quickstart/ab12cd34ef56
          psyq report runs/quickstart/ab12cd34ef56
    """
    import shlex

    run = shlex.quote(str(run_path))
    lines = [f"  psyq status {run}"]
    if ended:
        lines += [f"  psyq export {run}", f"  psyq scores {run}", f"  psyq report {run}"]
    return ["next:", *lines]


def _stop_reason(result) -> int:
    """Say on stderr why a run stopped, if it did not end; return the exit code."""
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
        from psyq.engine.store.run_store import RunStore
        with RunStore(result.run_dir.database) as store:
            errors = store.frequent_errors()
        said = "; ".join(f"{n} × {message}" for message, n in errors)
        print(f"error: {failed} of {result.planned} trials failed (no answer: {said}); run the same command "
              f"again to retry them", file=sys.stderr)
        return EXIT_TRIALS_FAILED
    return EXIT_OK


def _arguments_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("study", help="study YAML file")
    p.add_argument("--runs-dir", default="runs", help="where runs go (default: runs/)")
    p.add_argument("--dry-run", action="store_true", help="print the plan (as `psyq plan`) and send nothing")
    add_backend_override_args(p)
    _add_plan_args(p)
    _add_perturb_prompts_arg(p)


def _arguments_plan(p: argparse.ArgumentParser) -> None:
    p.add_argument("study", help="study YAML file")
    add_people_power_args(p, "people's answers to compare with (as for psyq report): also print how often a cohort "
                             "of the study's size that truly stood in for them would be marked meets or falls short "
                             "per criterion, and the cohort size each criterion needs (docs/reading-report.md)")
    p.add_argument("--runs-dir", default="runs", help="where runs go, to leave out trials already finished "
                                                       "(default: runs/; read only)")
    add_backend_override_args(p)
    _add_plan_args(p)
    _add_perturb_prompts_arg(p)


# name -> (handler, help, arguments): read by cli/__init__.py
COMMANDS = {
    "run": (cmd_run, "administer a study (resumes a run of the same study)", _arguments_run),
    "plan": (cmd_plan, "what `psyq run` would send: requests, tokens, cost, time, a preview (nothing sent)", _arguments_plan),
}
