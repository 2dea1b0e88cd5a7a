"""Three marks from an interval, and the intervals the verdict adds.

Independent checks: Bonett's SD-ratio interval and the α-difference interval against the published
examples of statpsych (D. G. Bonett's R package, its help pages for ``ci.ratio.sd2`` and
``ci.cronbach2``); Feldt's α interval and Bonett's SD-ratio interval by their coverage on simulated
normal data and on random halves of the 1,973 Briganti et al. (2018) people; the sample size to decide
by recomputing the narrowed interval by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from psyq.analysis.statistics.standin.equivalence import (FALLS_SHORT, INCONCLUSIVE, MEETS, NOT_ESTIMABLE,
                                                  alpha_difference_interval, alpha_interval, combine_marks,
                                                  interval_mark, rescale_interval, sample_size_to_decide,
                                                  sd_ratio_interval)


def test_interval_marks_against_a_region():
    assert interval_mark(-0.29, 0.29, -0.3, 0.3) == MEETS
    assert interval_mark(-0.31, 0.29, -0.3, 0.3) == INCONCLUSIVE
    assert interval_mark(0.31, 0.9, -0.3, 0.3) == FALLS_SHORT
    assert interval_mark(-0.9, -0.31, -0.3, 0.3) == FALLS_SHORT
    assert interval_mark(0.2, 0.4, -0.3, 0.3) == INCONCLUSIVE
    assert interval_mark(0.40, 0.59, upper=0.60) == MEETS               # one-sided: AUC ≤ .60
    assert interval_mark(0.61, 0.70, upper=0.60) == FALLS_SHORT
    assert interval_mark(0.30, 0.50, lower=0.20) == MEETS               # twins: above .20
    assert interval_mark(math.nan, 0.1, -0.3, 0.3) == NOT_ESTIMABLE


def test_criterion_marks_combine_rows():
    assert combine_marks([MEETS, MEETS]) == MEETS
    assert combine_marks([MEETS, INCONCLUSIVE]) == INCONCLUSIVE
    assert combine_marks([MEETS, INCONCLUSIVE, FALLS_SHORT]) == FALLS_SHORT
    assert combine_marks([MEETS, NOT_ESTIMABLE]) == INCONCLUSIVE        # part unknown is never "meets"
    assert combine_marks([NOT_ESTIMABLE]) == NOT_ESTIMABLE


def test_sd_ratio_interval_is_statpsychs_published_example():
    # statpsych::ci.ratio.sd2(.05, y1, y2): SD1/SD2 0.8854257, LL 0.486279, UL 1.728396.
    y1 = [32, 39, 26, 35, 43, 27, 40, 37, 34, 29]
    y2 = [36, 44, 47, 42, 49, 39, 46, 31, 33, 48]
    ratio, low, high = sd_ratio_interval(y1, y2, confidence=0.95)
    assert ratio == pytest.approx(0.8854257, abs=1e-7)
    assert low == pytest.approx(0.486279, abs=1e-6) and high == pytest.approx(1.728396, abs=1e-6)


def test_alpha_difference_interval_is_statpsychs_published_example():
    # statpsych::ci.cronbach2(.05, .88, .76, 8, 8, 200, 250): 0.12, LL 0.06973411, UL 0.173236.
    d, low, high = alpha_difference_interval(.88, 200, 8, .76, 250, 8, confidence=0.95, feldt_df="statpsych")
    assert d == pytest.approx(0.12)
    assert low == pytest.approx(0.06973411, abs=1e-7) and high == pytest.approx(0.173236, abs=1e-6)


def test_feldt_interval_covers_alpha_as_often_as_it_says():
    # Seven parallel normal items, loading .6 (population α = 7·.36/(1 + 6·.36) = .797): the 90 %
    # interval of 400 samples of 100 covers it in 90 % ± 3 (binomial SE 1.5 points).
    rng = np.random.default_rng(3)
    k, loading = 7, 0.6
    truth = k * loading ** 2 / (1 + (k - 1) * loading ** 2)
    covered = 0
    for _ in range(400):
        x = loading * rng.normal(size=(100, 1)) + math.sqrt(1 - loading ** 2) * rng.normal(size=(100, k))
        total = x.sum(axis=1)
        alpha = k / (k - 1) * (1 - x.var(axis=0, ddof=1).sum() / total.var(ddof=1))
        low, high = alpha_interval(alpha, 100, k)
        covered += low <= truth <= high
    assert 0.87 <= covered / 400 <= 0.93


def test_sd_ratio_interval_covers_one_on_halves_of_the_people(iri, people):
    # Two random halves of the same people have the same SD: the 90 % interval covers 1 about 90 % of
    # the time, on real, skewed, discrete subscale sums (FS). 300 splits: 90 % ± 5.
    import psyq
    scores = psyq.score_wide(iri, people)["FS"].to_numpy()
    rng = np.random.default_rng(5)
    covered = 0
    for _ in range(300):
        order = rng.permutation(len(scores))
        _, low, high = sd_ratio_interval(scores[order[:150]], scores[order[150:]])
        covered += low <= 1 <= high
    assert 0.85 <= covered / 300 <= 0.95


def test_rescaled_interval_keeps_the_standard_error():
    low, high = rescale_interval(1.0, 1.0 - 1.959963984540054 * 0.2, 1.0 + 1.959963984540054 * 0.2, 0.95, 0.90)
    assert (low, high) == pytest.approx((1.0 - 1.6448536269514722 * 0.2, 1.0 + 1.6448536269514722 * 0.2))


def test_sample_size_to_decide_narrows_the_interval_to_the_bound():
    # g = 0.10, 90 % CI −0.12 to 0.32 from 50: the upper half-width 0.22 must shrink to 0.20 (the room
    # up to 0.3): 50 · (0.22/0.20)² = 60.5; at that n the narrowed interval touches 0.3.
    n = sample_size_to_decide(0.10, -0.12, 0.32, 50, -0.3, 0.3)
    assert n == pytest.approx(60.5)
    assert 0.10 + 0.22 * math.sqrt(50 / n) == pytest.approx(0.3)
    # Outside the region: the interval must shrink until it clears the bound on the near side.
    n = sample_size_to_decide(0.5, 0.1, 0.9, 20, -0.3, 0.3)
    assert 0.5 - 0.4 * math.sqrt(20 / n) == pytest.approx(0.3)
    # Decided already: its own n; on the bound: no n decides.
    assert sample_size_to_decide(0.0, -0.1, 0.1, 80, -0.3, 0.3) == 80
    assert math.isnan(sample_size_to_decide(0.3, 0.1, 0.5, 80, -0.3, 0.3))


def test_feldt_interval_is_the_f_distribution_of_one_minus_alpha():
    # Feldt (1965): (1 − α)/(1 − α_pop) ~ F(n − 1, (n − 1)(k − 1)); the 90 % limits by hand with scipy.
    from scipy import stats
    alpha, n, k = 0.72, 40, 7
    low = 1 - (1 - alpha) * stats.f.ppf(0.95, 39, 39 * 6)
    high = 1 - (1 - alpha) * stats.f.ppf(0.05, 39, 39 * 6)
    assert alpha_interval(alpha, n, k) == pytest.approx((low, high))
