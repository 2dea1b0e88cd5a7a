"""An answer read from the first answer token's log-probabilities (`answer: logprobs`): the
distribution over the scale's options, and a value from it (the expected value, the most likely
value, or one drawn). A stated distribution (`answer: verbalized`) and one mapped from free text
(`answer: ssr`) get their value here the same way (:func:`chosen_value`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from psyq.engine.trials.scale import Option
from psyq.engine.trials.trial import stable_int

if TYPE_CHECKING:   # numpy is imported by the one function that draws: the item kinds import this module
    import numpy as np


def option_distribution(top_logprobs: Mapping[str, float],
                        scale: Sequence[Option]) -> dict[int, float] | None:
    """Probabilities of the scale's options from the first answer token's top log-probabilities.

    A token counts for an option when, stripped of spaces, it equals the option's value as text or
    its code (case-insensitive; a code wins if a token could be both). Probabilities are summed per
    option and renormalised over the options found; None when no token names an option.
    Caveat: with tokenizers that split numbers into digits, "1" on a 0-10 scale also carries the
    start of "10".

    Example:
        >>> scale = [Option(value=v) for v in range(1, 4)]
        >>> option_distribution({" 1": math.log(0.2), "2": math.log(0.3), " The": math.log(0.5)}, scale)
        {1: 0.4, 2: 0.6, 3: 0.0}
    """
    by_code = {o.code.strip().lower(): o.value for o in scale if o.code}
    by_value = {str(o.value): o.value for o in scale}
    mass = {o.value: 0.0 for o in scale}
    found = False
    for token, logprob in top_logprobs.items():
        key = token.strip()
        value = by_code.get(key.lower(), by_value.get(key))
        if value is None or math.isnan(logprob):
            continue
        mass[value] += math.exp(logprob)
        found = True
    total = sum(mass.values())
    if not found or total <= 0.0:
        return None
    return {v: m / total for v, m in mass.items()}


def _check_distribution(distribution: Mapping[int, float]) -> None:
    if not distribution:
        raise ValueError("the distribution is empty")
    probs = list(distribution.values())
    if any(not math.isfinite(p) or p < 0 for p in probs):
        raise ValueError(f"probabilities must be finite and non-negative: {dict(distribution)}")
    if abs(sum(probs) - 1.0) > 1e-6:
        raise ValueError(f"probabilities must sum to 1 (they sum to {sum(probs)})")


def expected_value(distribution: Mapping[int, float]) -> float:
    """Σ value × probability (the distribution must sum to 1).

    Example:
        >>> expected_value({1: 0.4, 2: 0.6})
        1.6
    """
    _check_distribution(distribution)
    return float(sum(v * p for v, p in distribution.items()))


def most_likely(distribution: Mapping[int, float]) -> int:
    """The most probable value; on a tie, the lowest of the tied values.

    Example:
        >>> most_likely({1: 0.5, 2: 0.5, 3: 0.0})
        1
    """
    _check_distribution(distribution)
    return min(distribution, key=lambda v: (-distribution[v], v))


def sample_answer(distribution: Mapping[int, float], rng: np.random.Generator) -> int:
    """One value drawn from the distribution with `rng` (reproducible with a seeded generator).

    Example:
        >>> import numpy as np
        >>> sample_answer({1: 0.0, 2: 1.0}, np.random.default_rng(0))
        2
    """
    import numpy as np

    _check_distribution(distribution)
    values = sorted(distribution)
    probs = np.array([distribution[v] for v in values], dtype=float)
    return int(values[int(rng.choice(len(values), p=probs / probs.sum()))])


def chosen_value(distribution: Mapping[int, float], how: str, seed: int) -> int:
    """The answer taken from `distribution` as the protocol's ``logprob_answer`` says: drawn
    (``sample``, with a generator seeded by the trial's request seed `seed`) or the most likely
    option (``most_likely``).

    Example:
        >>> chosen_value({1: 0.2, 2: 0.8}, "most_likely", seed=7), chosen_value({1: 0.0, 2: 1.0}, "sample", seed=7)
        (2, 2)
    """
    import numpy as np

    if how == "sample":
        return sample_answer(distribution, np.random.default_rng(stable_int("sample", seed)))
    return most_likely(distribution)
