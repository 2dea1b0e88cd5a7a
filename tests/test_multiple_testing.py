"""Holm's correction (analysis/statistics/multiple_testing.py) against statsmodels and by hand."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from psyq.analysis.statistics.multiple_testing import holm


@pytest.mark.parametrize("n", [1, 5, 50, 500])
def test_holm_is_statsmodels_to_the_last_bit(n):
    rng = np.random.default_rng(n)
    p = rng.uniform(size=n) ** 3
    p[::7] = p[0]                                          # ties
    assert np.array_equal(holm(p), multipletests(p, method="holm")[1])


def test_holm_by_hand_with_a_test_that_was_not_run():
    # sorted: .005 (x4 = .02), .01 (x3 = .03), .03 (x2 = .06), .04 (x1 = .04 -> running max .06)
    out = holm([0.01, 0.04, np.nan, 0.03, 0.005])
    assert out[[0, 1, 3, 4]] == pytest.approx([0.03, 0.06, 0.06, 0.02]) and np.isnan(out[2])
    assert holm([0.6, 0.7]).tolist() == [1.0, 1.0]          # 0.6 x 2 capped at 1
    assert holm([]).size == 0
