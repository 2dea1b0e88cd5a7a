"""Semantic similarity rating (`answer: ssr`): a free-text answer mapped onto the options by the
cosine similarity of its embedding to anchor statements, one statement per option.

Maier, Aslak, Fiaschi, Rismal, Fletcher, Luhmann, Dow, Pappas & Wiecki (2025), *LLMs reproduce
human purchase intent via semantic similarity elicitation of Likert ratings*, arXiv 2510.08338,
appendix A.4.3, eq. 8: for an answer and one set of anchor statements with similarities γ_r
(r = 1 … n options),

    p(r) = (γ_r − γ_min + ε·δ(r = argmin γ)) / (Σ_r γ_r − n·γ_min + ε)

so the option least like the answer gets ε / (…) (nothing with the default ε = 0) and the others
in proportion to how much more alike they are; several anchor sets give one such distribution
each, and they are averaged; a temperature T then sharpens (T < 1) or flattens (T > 1) it:
p ∝ p^(1/T) (T = 1, the default, leaves it).

Checked against the authors' reference implementation, github.com/pymc-labs/semantic-similarity-rating
(``semantic_similarity_rating/compute.py``, ``response_embeddings_to_pmf`` and ``scale_pmf``;
``response_rater.py``, ``get_response_pmfs``: the mean over reference sets, then the temperature),
read, not copied. There γ is the cosine similarity moved onto [0, 1], γ = (1 + cos)/2, and so it
is here; with ε = 0 the factor ½ cancels and γ may as well be the cosine itself, with ε > 0 it
sets the scale ε is read on. The minimum's ε goes to the first option of least similarity, as
there. Pure functions; the embeddings are engine/backends/embeddings.py's, the run's phase that
asks for them engine/administer/ssr_rating.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from psyq.engine.trials.parsing import ParsedAnswer

UNRATED = "unrated"
"""The status of a free-text answer stored before its embedding maps it onto the options."""
UNRATED_REASON = ("the free-text answer waits to be mapped onto the options (answer: ssr): its embedding is "
                  "asked for after the run's replies; run the study again to finish it")


def awaiting_rating(parsed: ParsedAnswer) -> ParsedAnswer:
    """A free-text answer as sending stores it: one with text waits, ``unrated``, for its mapping
    onto the options; one without (empty, a refusal) stays as it is.

    Example:
        >>> awaiting_rating(ParsedAnswer(None, "answered", text="Mostly me.")).status
        'unrated'
    """
    if parsed.status != "answered" or parsed.text is None:
        return parsed
    return replace(parsed, status=UNRATED, reason=UNRATED_REASON)


@dataclass(frozen=True)
class SimilarityRating:
    """One answer mapped onto the options: the cosine similarity to each option's anchor
    statement per anchor set (``similarities[set][option]``) and the distribution (in the order
    of the options)."""

    similarities: tuple[tuple[float, ...], ...]
    distribution: tuple[float, ...]


def cosine_similarities(answer: Sequence[float], anchors: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """The cosine similarity of `answer` to each vector of `anchors`.

    Example:
        >>> cosine_similarities([1.0, 0.0], [[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
        (1.0, 0.0, 0.7071067811865475)
    """
    norm = math.sqrt(math.fsum(x * x for x in answer))
    if norm == 0:
        raise ValueError("the answer's embedding is all zeros")
    out = []
    for anchor in anchors:
        if len(anchor) != len(answer):
            raise ValueError(f"an anchor's embedding has {len(anchor)} dimensions, the answer's {len(answer)}")
        anchor_norm = math.sqrt(math.fsum(x * x for x in anchor))
        if anchor_norm == 0:
            raise ValueError("an anchor statement's embedding is all zeros")
        out.append(math.fsum(a * b for a, b in zip(answer, anchor)) / (norm * anchor_norm))
    return tuple(out)


def similarity_distribution(similarities: Sequence[float], epsilon: float = 0.0) -> tuple[float, ...]:
    """Maier et al.'s eq. 8 for one anchor set: the distribution over the options from the answer's
    cosine similarity to each option's statement (γ = (1 + cos)/2, see the module docstring).

    Example (cosines 0.8, 0.5, 0.2: γ = 0.9, 0.75, 0.6; over the least, 0.3, 0.15, 0; sum 0.45):
        >>> [round(p, 12) for p in similarity_distribution([0.8, 0.5, 0.2])]
        [0.666666666667, 0.333333333333, 0.0]
    """
    gamma = [(1.0 + c) / 2.0 for c in similarities]
    low = min(gamma)
    first_low = gamma.index(low)
    numerators = [g - low + (epsilon if r == first_low else 0.0) for r, g in enumerate(gamma)]
    denominator = math.fsum(gamma) - len(gamma) * low + epsilon
    if denominator <= 0:
        raise ValueError("the answer is equally similar to every option's statement (and epsilon is 0): "
                         "the mapping gives no distribution")
    return tuple(n / denominator for n in numerators)


def with_temperature(distribution: Sequence[float], temperature: float) -> tuple[float, ...]:
    """p ∝ p^(1/T): sharper for T < 1, flatter for T > 1, unchanged for T = 1.

    Example:
        >>> with_temperature([0.75, 0.25], 0.5)
        (0.9, 0.1)
    """
    if temperature <= 0:
        raise ValueError("the temperature must be above 0")
    if temperature == 1:
        return tuple(distribution)
    powered = [p ** (1.0 / temperature) for p in distribution]
    total = math.fsum(powered)
    return tuple(p / total for p in powered)


def similarity_rating(answer: Sequence[float], anchor_sets: Sequence[Sequence[Sequence[float]]],
                      epsilon: float = 0.0, temperature: float = 1.0) -> SimilarityRating:
    """An answer's embedding mapped onto the options: eq. 8 per anchor set (each set one
    embedding per option, in the options' order), the sets' distributions averaged, then the
    temperature.

    Example (one set of three statements along the axes; the answer leans to the first):
        >>> rating = similarity_rating([3.0, 1.0, 0.0], [[[1, 0, 0], [0, 1, 0], [0, 0, 1]]])
        >>> [round(c, 4) for c in rating.similarities[0]], [round(p, 4) for p in rating.distribution]
        ([0.9487, 0.3162, 0.0], [0.75, 0.25, 0.0])
    """
    if not anchor_sets:
        raise ValueError("no anchor set")
    similarities = tuple(cosine_similarities(answer, anchors) for anchors in anchor_sets)
    per_set = [similarity_distribution(s, epsilon) for s in similarities]
    n = len(per_set[0])
    if any(len(d) != n for d in per_set):
        raise ValueError("the anchor sets have different numbers of statements")
    mean = [math.fsum(d[r] for d in per_set) / len(per_set) for r in range(n)]
    return SimilarityRating(similarities, with_temperature(mean, temperature))
