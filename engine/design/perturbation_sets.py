"""Perturbation sets: named, seeded changes to a text before it is rated (`psyq: perturbations/1`).

A perturbation set lists perturbations, each with an `id`, a `method`, its `params` and a
`seed`. Character-level methods are rules, pure functions of (text, params, seed): the same
text, parameters and seed always give the same result, another seed another one (the random
choices are drawn from ``random.Random`` seeded with the seed *and* the text, so two replies get
different positions changed). Paraphrases use the method ``rewrite``: the text is sent to a
backend with the perturbation's own instruction (see :mod:`psyq.engine.judging.perturbed_replies`).

Rules:

* ``repeat``: sentence punctuation repeated (``!`` → ``!!!``) and a letter stretched in a share
  of the words (``so`` → ``sooo``);
* ``substitute``: characters replaced by others from a map (Greek look-alikes, leetspeak, or a
  user's own), each occurrence with probability `rate`;
* ``typos``: spelling errors (two letters swapped, one dropped or doubled) in a share of the
  words, and optionally the text cut after a share of its words.

Example:
    >>> pset = load_perturbations("haleas7")
    >>> [p.id for p in pset.perturbations][:3]
    ['punctuation_repeat', 'greek_letters', 'typos_truncated']
    >>> apply_rule("substitute", "tea", {"map": {"e": "3"}}, seed=1)
    't3a'
"""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from psyq.engine.files.errors import InputError, Problem
from psyq.engine.files.fields import Id, StrictModel, Text, format_json_schema
from psyq.engine.files.validation import load_document, parse_document
from psyq.engine.files.yamlfile import YamlDocument

RuleMethod = Literal["repeat", "substitute", "typos"]
Method = Literal["repeat", "substitute", "typos", "rewrite"]
RULES = ("repeat", "substitute", "typos")


class RepeatParams(StrictModel):
    """``repeat``: punctuation marks . ! ? written `punctuation` times; in a share `letter_rate` of
    the words of three or more letters, one letter written `letter_times` times."""

    punctuation: int = Field(default=3, ge=1, le=20)
    letter_rate: float = Field(default=0.3, ge=0, le=1)
    letter_times: int = Field(default=3, ge=1, le=20)


class SubstituteParams(StrictModel):
    """``substitute``: each character that is a key of `map` replaced by its value with
    probability `rate` (1: every one)."""

    map: dict[str, str] = Field(min_length=1)
    rate: float = Field(default=1.0, ge=0, le=1)


class TyposParams(StrictModel):
    """``typos``: a share `rate` of the words of three or more letters misspelt (adjacent letters
    swapped, a letter dropped or doubled, drawn at random); then only the first share `keep` of the
    words kept (1: no truncation)."""

    rate: float = Field(default=0.15, ge=0, le=1)
    keep: float = Field(default=1.0, gt=0, le=1)


class RewriteParams(StrictModel):
    """``rewrite``: the text sent to a backend with `instruction` as the system message; a reply
    longer than `max_ratio` times the original (in characters) is unusable (the model went on)."""

    instruction: Text
    max_ratio: float = Field(default=3.0, gt=0)
    max_tokens: int = Field(default=1024, ge=16, le=8192)


PARAMS: dict[str, type[StrictModel]] = {"repeat": RepeatParams, "substitute": SubstituteParams,
                                        "typos": TyposParams, "rewrite": RewriteParams}


class Perturbation(StrictModel):
    """One perturbation as written: `params` are checked against the method's parameters."""

    id: Id
    method: Method
    seed: int = Field(ge=0)
    description: Text | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    def checked_params(self) -> StrictModel:
        """The params as the method's model (with its defaults filled in)."""
        return PARAMS[self.method].model_validate(self.params)


class PerturbationSet(StrictModel):
    """A perturbation set file as written."""

    psyq: Literal["perturbations/1"]
    id: Id
    description: Text | None = None
    content_source: Literal["psyq", "user"]
    source: Text
    perturbations: list[Perturbation] = Field(min_length=1)

    def select(self, only: list[str] | None) -> list[Perturbation]:
        """The perturbations named in `only` (all when None); KeyError naming an unknown one."""
        if not only:
            return list(self.perturbations)
        known = {p.id: p for p in self.perturbations}
        unknown = [o for o in only if o not in known]
        if unknown:
            raise KeyError(", ".join(unknown))
        return [known[o] for o in only]


def check_perturbations(pset: PerturbationSet, doc: YamlDocument) -> list[Problem]:
    """Meaning checks: ids unique (a perturbed target's key ends in its id), params right for the
    method (each wrong parameter located in the file)."""
    seen = Counter(p.id for p in pset.perturbations)
    problems = [doc.problem(("perturbations", i, "id"), f"perturbation id '{p.id}' is used more than once")
                for i, p in enumerate(pset.perturbations) if seen[p.id] > 1]
    for i, p in enumerate(pset.perturbations):
        try:
            parse_document(doc, PARAMS[p.method], root=("perturbations", i, "params")) \
                if "params" in doc.data["perturbations"][i] else p.checked_params()
        except InputError as exc:
            problems.extend(exc.problems)
        except ValueError as exc:   # params omitted while the method requires one (rewrite: instruction)
            problems.append(doc.problem(("perturbations", i, "method"),
                                        f"method '{p.method}' needs params: {_first_missing(exc)}"))
    return problems


def _first_missing(exc: ValueError) -> str:
    errors = getattr(exc, "errors", lambda: [])()
    return ", ".join(str(e["loc"][-1]) for e in errors) or str(exc)


def load_perturbations(path: str | Path) -> PerturbationSet:
    """Load and check a perturbation set file, given its path or the name of a shipped one
    (InputError with file:line:column on any problem).

    Example:
        >>> load_perturbations("haleas7").id
        'haleas7'
    """
    return load_document(path, PerturbationSet, "perturbations", check_perturbations).spec


def perturbations_json_schema() -> dict[str, Any]:
    """The JSON Schema of the perturbation set format (what ``psyq schema perturbations`` prints).

    Example:
        >>> perturbations_json_schema()["title"]
        'psyq perturbation set (format perturbations/1)'
    """
    schema = format_json_schema(PerturbationSet, "psyq perturbation set (format perturbations/1)")
    schema["$defs"].update({f"{m.capitalize()}Params": model.model_json_schema() for m, model in PARAMS.items()})
    return schema


# --- the rules: pure functions of (text, params, seed) --------------------------------------------

_WORD = re.compile(r"[^\W\d_]{3,}")


def rng_for(seed: int, text: str) -> random.Random:
    """The random source of one perturbation of one text: a string seed is hashed by SHA-512
    inside ``random.seed``, so it is the same in every process (unlike ``hash()``)."""
    return random.Random(f"{seed}\x1f{text}")


def repeat(text: str, p: RepeatParams, rng: random.Random) -> str:
    """Punctuation repeated and letters stretched.

    Example:
        >>> repeat("Oh no. Why?", RepeatParams(punctuation=2, letter_rate=0), random.Random(0))
        'Oh no.. Why??'
    """
    def stretch(m: re.Match[str]) -> str:
        word = m.group(0)
        if rng.random() >= p.letter_rate:
            return word
        at = rng.randrange(len(word))
        return word[:at] + word[at] * p.letter_times + word[at + 1:]
    text = _WORD.sub(stretch, text)
    return re.sub(r"[.!?]", lambda m: m.group(0) * p.punctuation, text)


def substitute(text: str, p: SubstituteParams, rng: random.Random) -> str:
    """Characters replaced from the map (longest key first), each with probability `rate`.

    Example:
        >>> substitute("leet", SubstituteParams(map={"e": "3", "t": "7"}), random.Random(0))
        'l337'
    """
    keys = sorted(p.map, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(k) for k in keys))
    return pattern.sub(lambda m: p.map[m.group(0)] if p.rate >= 1 or rng.random() < p.rate else m.group(0), text)


def _misspell(word: str, rng: random.Random) -> str:
    at = rng.randrange(len(word) - 1)
    kind = rng.choice(("swap", "drop", "double"))
    if kind == "swap" and word[at] != word[at + 1]:
        return word[:at] + word[at + 1] + word[at] + word[at + 2:]
    if kind == "double":
        return word[:at] + word[at] * 2 + word[at + 1:]
    return word[:at] + word[at + 1:]   # drop (also a swap of two equal letters, which would change nothing)


def typos(text: str, p: TyposParams, rng: random.Random) -> str:
    """Spelling errors in a share of the words, then the text cut after a share of its words.

    Example:
        >>> typos("one two three four", TyposParams(rate=0, keep=0.5), random.Random(0))
        'one two'
    """
    text = _WORD.sub(lambda m: _misspell(m.group(0), rng) if rng.random() < p.rate else m.group(0), text)
    if p.keep >= 1:
        return text
    words = list(re.finditer(r"\S+", text))
    kept = max(1, round(len(words) * p.keep)) if words else 0
    return text[:words[kept - 1].end()] if kept else text


_RULES = {"repeat": repeat, "substitute": substitute, "typos": typos}


def apply_rule(method: str, text: str, params: dict[str, Any], seed: int) -> str:
    """Apply the rule `method` with `params` and `seed` to `text` (deterministic).

    Example:
        >>> apply_rule("typos", "I hear you", {"rate": 0, "keep": 0.7}, seed=3)
        'I hear'
    """
    if method not in _RULES:
        raise ValueError(f"'{method}' is not a rule (rules: {', '.join(RULES)})")
    return _RULES[method](text, PARAMS[method].model_validate(params), rng_for(seed, text))


# --- prompts: the same rules on what respondents are asked ----------------------------------------

def perturb_prompt_texts(instrument: Any, p: Perturbation) -> Any:
    """A copy of `instrument` whose instructions and item texts (items with a text field) went
    through the rule `p`, deterministically (a building block for prompt sensitivity: a study
    that asks each respondent the perturbed copy too; the study field is not built yet).

    Ids, scale, keys and norms are unchanged, so the copy is scored like the original. A rewrite
    is refused here: it would need a backend for every prompt.

    Example:
        >>> from psyq.engine.design.instrument import load_instrument
        >>> mini = load_instrument("tests/data/mini_1to7.yaml")
        >>> leet = Perturbation(id="leet", method="substitute", seed=1, params={"map": {"e": "3"}})
        >>> copy = perturb_prompt_texts(mini, leet)
        >>> copy.instructions, copy.items[0].text, copy.id == mini.id
        ('Rat3 3ach stat3m3nt.', 'It3m a', True)
    """
    if p.method not in RULES:
        raise ValueError(f"perturbation '{p.id}' is a rewrite; only rules ({', '.join(RULES)}) perturb prompts")
    items = [item.model_copy(update={"text": apply_rule(p.method, item.text, p.params, p.seed)})
             if isinstance(getattr(item, "text", None), str) else item for item in instrument.items]
    return instrument.model_copy(update={"items": items,
                                         "instructions": apply_rule(p.method, instrument.instructions, p.params,
                                                                    p.seed)})
