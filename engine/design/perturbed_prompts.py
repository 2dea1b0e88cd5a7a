"""Prompt sensitivity: the same study asked with perturbed prompts, as a run of its own.

`psyq run STUDY --perturb-prompts SET:ID` applies one rule perturbation of a perturbation set
(engine/design/perturbation_sets.py: typos, look-alike characters, repeated punctuation) to what each
respondent is asked — every instrument's instructions and item texts — and runs the study with
those texts. Ids, scales, keys and norms stay as they are, so the perturbed run is scored like
the original, and `psyq sensitivity ORIGINAL PERTURBED` pairs the two runs' scores respondent
by respondent (analysis/statistics/prompt_sensitivity.py).

The perturbation is part of the run's identity (engine/administer/record.py hashes it), so a perturbed run
never resumes into, or mixes its answers with, the unperturbed run; runs without it keep their
ids. Response options (the scale labels) and personas' system prompts are not perturbed: the
variant changes the question, not the answer format or who answers.

Example:
    >>> from psyq.engine.design.study import load_study
    >>> study = load_study("quickstart")
    >>> typo = perturb_study_prompts(study, "prompt_noise", "typos_light")
    >>> typo.prompt_perturbation["perturbation"], typo.instruments[0].id == study.instruments[0].id
    ('typos_light', True)
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from psyq.engine.files.errors import InputError
from psyq.engine.design.perturbation_sets import RULES, load_perturbations, perturb_prompt_texts
from psyq.engine.design.study import Study
from psyq.engine.files.shipped import locate


def parse_variant(spec: str) -> tuple[Path, str]:
    """`SET:ID` of ``--perturb-prompts`` as (set file, perturbation id); SET is a file or the
    name of a shipped set.

    Example:
        >>> parse_variant("prompt_noise:typos_light")[1]
        'typos_light'
    """
    set_name, sep, perturbation = spec.rpartition(":")
    if not sep or not set_name or not perturbation:
        raise InputError.single("--perturb-prompts", f"'{spec}': give SET:ID, e.g. prompt_noise:typos_light")
    return locate(set_name, "perturbations"), perturbation


def perturb_study_prompts(study: Study, set_file: str | Path, perturbation_id: str) -> Study:
    """`study` with every instrument's instructions and item texts perturbed by the rule
    `perturbation_id` of the set in `set_file`; the perturbation is recorded in the study (and
    so in the run's id and manifest). Rewrites are refused: they would need a backend per prompt."""
    pset = load_perturbations(set_file)
    chosen = [p for p in pset.perturbations if p.id == perturbation_id]
    if not chosen:
        raise InputError.single(str(set_file), f"no perturbation '{perturbation_id}' "
                                f"(the set has: {', '.join(p.id for p in pset.perturbations)})", field="perturbations")
    p = chosen[0]
    if p.method not in RULES:
        raise InputError.single(str(set_file), f"'{p.id}' is a rewrite through a backend; prompts "
                                f"are perturbed by rules only ({', '.join(RULES)})", field="perturbations")
    record: dict[str, Any] = {"set": pset.id, "set_source": pset.content_source, "perturbation": p.id,
                              "method": p.method, "seed": p.seed, "params": p.checked_params().model_dump()}
    return replace(study, instruments=tuple(perturb_prompt_texts(i, p) for i in study.instruments),
                   prompt_perturbation=record)
