"""Judging: psyq judge, psyq perturb and psyq rating-sheet."""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from psyq.cli.common import EXIT_OK, RUN_HELP, chosen_run, run_stoppable
from psyq.engine.files.errors import InputError
from psyq.engine.files.yamlfile import load_yaml
from psyq.engine.files.shipped import locate


def cmd_judge(args: argparse.Namespace) -> int:
    from psyq.engine.judging.answer_judge import judge_run, load_rubric

    rubric_path = locate(args.rubric, "rubric")
    multi = load_yaml(rubric_path).data.get("psyq") == "rubric/2" if rubric_path.exists() else False
    if multi:   # a multi-dimension rubric rates the run's rating targets (psyq.engine.judging.reply_judge)
        from psyq.engine.kinds.response.rubrics import load_multi_rubric
        rubric = load_multi_rubric(rubric_path)
    else:
        rubric = load_rubric(rubric_path)
    config = helper_backend(args, args.judge_id)
    from psyq.engine.backends import backend_class
    answer = args.answer or backend_class(config.kind).judge_answer
    from psyq.engine.backends.capabilities import require_capable
    require_capable([config], answer, "--answer" if args.answer else "--model")
    args.run = str(chosen_run(args.run))
    if multi:
        return _judge_targets(args, config, rubric, answer)
    tick = _every_fifty("judged")
    result = run_stoppable(lambda: judge_run(args.run, config, rubric, answer, on_judgement=tick,
                                             log=lambda m: print(m, file=sys.stderr)), "judgement")
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items())) or "nothing"
    print(f"{rubric.spec.id} by {config.id} ({answer}): {result.tasks} answers to judge, {result.already} "
          f"already judged before; now {counts}")
    return EXIT_OK


def _every_fifty(word: str) -> Callable[[object], None]:
    """A progress callback for judging: a line on stderr every 50 results ("  50 rated")."""
    done = [0]

    def tick(_result: object) -> None:
        done[0] += 1
        if done[0] % 50 == 0:
            print(f"  {done[0]} {word}", file=sys.stderr)

    return tick


def helper_backend(args: argparse.Namespace, backend_id: str):
    """The backend a judge or a rewriter uses: --base-url/--model/--api-key-env, else the local
    instruct model (engine/backends/catalogue.py); temperature 0 (the same text gets the same
    level or rewrite).

    Example:
        >>> helper_backend(argparse.Namespace(base_url="http://127.0.0.1:8000/v1", model="qwen", api_key_env=None,
        ...                                   run="r"), "judge").kind
        'openai'
    """
    from psyq.engine.backends import DEFAULT_KIND, URL_KIND, backend_class

    if bool(args.base_url) != bool(args.model):
        raise InputError.single(args.run, "--base-url and --model go together")
    if not args.base_url:
        config = backend_class(DEFAULT_KIND).helper_config(backend_id)
        print(f"note: {backend_id}: the local model {config.model} (instruction-tuned; --base-url URL "
              "--model NAME for another server)", file=sys.stderr)
        return config
    from psyq.engine.administer.overrides import check_command_line_backend

    check_command_line_backend(args.base_url, args.api_key_env)
    from psyq.engine.backends.capabilities import capabilities_for

    config = backend_class(URL_KIND).helper_config(backend_id, base_url=args.base_url, model=args.model,
                                                   api_key_env=args.api_key_env)
    caps = capabilities_for(config.kind, args.base_url, args.model)
    if caps.temperature == "default_only":   # e.g. a reasoning model: temperature 0 would be refused
        print(f"note: {args.model} ({caps.title}) takes only its default temperature: the {backend_id} asks at "
              f"temperature 1, not 0, so the same text may get another answer when asked again", file=sys.stderr)
    return config


def _add_perturb_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--set", required=True, dest="set_file",
                   help="perturbation set YAML file, or the name of a shipped one (haleas7)")
    p.add_argument("--only", metavar="ID,...", help="apply only these perturbations of the set")
    p.add_argument("--base-url", help="rewrite with this OpenAI-compatible server (default: the local model)")
    p.add_argument("--model", help="model name for --base-url")
    p.add_argument("--api-key-env", help="NAME of the environment variable holding the API key for --base-url")
    p.add_argument("--rewriter-id", default="rewriter", help="backend id of the rewrites (default: rewriter)")


def cmd_perturb(args: argparse.Namespace) -> int:
    from psyq.engine.judging.perturbed_replies import perturb_run
    from psyq.engine.design.perturbation_sets import load_perturbations

    pset = load_perturbations(args.set_file)
    args.run = str(chosen_run(args.run))
    only = [o.strip() for o in args.only.split(",") if o.strip()] if args.only else None
    config = helper_backend(args, args.rewriter_id)
    result = run_stoppable(lambda: perturb_run(args.run, pset, config, only=only,
                                               log=lambda m: print(m, file=sys.stderr)), "perturbed text")
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
    from psyq.engine.judging.reply_judge import judge_targets

    tick = _every_fifty("rated")
    result = run_stoppable(lambda: judge_targets(args.run, config, rubric, answer, order_seed=args.order_seed,
                                                 on_rating=tick, log=lambda m: print(m, file=sys.stderr)), "rating")
    for note in result.skipped:
        print(f"warning: {note}", file=sys.stderr)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items())) or "nothing"
    print(f"{rubric.spec.id} by {config.id} ({answer}): {result.targets} targets ({result.new_targets} persona "
          f"replies added now) x {len(rubric.dimension_ids)} dimensions = {result.requests} ratings, "
          f"{result.already} rated before; now {counts}")
    return EXIT_OK


def cmd_rating_sheet(args: argparse.Namespace) -> int:
    from psyq.engine.judging.rating_sheet import write_rating_sheet
    from psyq.engine.kinds.response.rubrics import load_multi_rubric

    rubric_path = locate(args.rubric, "rubric")
    if rubric_path.exists() and load_yaml(rubric_path).data.get("psyq") == "rubric/1":
        return _answer_sheet(args, rubric_path)
    if args.flagged:
        raise InputError.single(args.rubric, "--flagged lists the answers a lexicon flags; give a rubric/1 rubric "
                                             "of answers (leas_level)")
    rubric = load_multi_rubric(args.rubric)
    args.run = str(chosen_run(args.run))   # the sheet's import command then names the exact run
    n = write_rating_sheet(args.run, args.out, rubric, seed=args.seed, with_perturbed=args.with_perturbed)
    print(f"{n} texts to rate on {', '.join(rubric.dimension_ids)} (blind, shuffled with seed {args.seed}) -> "
          f"{args.out}; fill in rater_id and the levels, then: psyq import ratings {args.out} --run {args.run} "
          f"--rubric {rubric.spec.id}")
    return EXIT_OK


def _answer_sheet(args: argparse.Namespace, rubric_path) -> int:
    """`psyq rating-sheet` with a `rubric/1` rubric: a sheet of the run's answers (psyq.engine.judging.answer_sheet)."""
    from psyq.engine.judging.answer_judge import load_rubric
    from psyq.engine.judging.answer_sheet import write_answer_sheet

    rubric = load_rubric(rubric_path)
    args.run = str(chosen_run(args.run))
    n = write_answer_sheet(args.run, args.out, rubric, seed=args.seed, flagged=args.flagged)
    which = "flagged answers (a fragile scoring rule decided their level)" if args.flagged else "answers"
    print(f"{n} {which} to score on {rubric.spec.id} (blind, shuffled with seed {args.seed}) -> {args.out}; fill in "
          f"rater_id and level, then: psyq import ratings {args.out} --run {args.run} --rubric {rubric.spec.id}")
    return EXIT_OK


def _arguments_judge(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help=RUN_HELP)
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


def _arguments_perturb(p: argparse.ArgumentParser) -> None:
    _add_perturb_args(p)


def _arguments_rating_sheet(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("out", help="the sheet to write, an .xlsx whose every cell is text (never a formula)")
    p.add_argument("--rubric", required=True, help="rubric/2 file or shipped name whose dimensions are rated "
                                                   "(e.g. empathy_ceb), or a rubric/1 of answers (leas_level)")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffled row order (default: 0)")
    p.add_argument("--with-perturbed", action="store_true",
                   help="also list the perturbed texts of psyq perturb (left out by default)")
    p.add_argument("--flagged", action="store_true",
                   help="rubric/1 (leas_level): only the answers whose lexicon level a fragile rule decided "
                        "(negation, irony, another sense, whose feeling, a feeling taken back, near-synonyms, a misspelling)")


# name -> (handler, help, arguments): read by cli/__init__.py
COMMANDS = {
    "judge": (cmd_judge, "score a run's free-text answers with a judge model and a rubric", _arguments_judge),
    "perturb": (cmd_perturb, "add perturbed versions of a run's rating targets (typos, leetspeak, rewrites ...)", _arguments_perturb),
    "rating-sheet": (cmd_rating_sheet, "write a blind .xlsx sheet of a run's replies (or answers) for people to rate on a rubric", _arguments_rating_sheet),
}
