"""Fit indices from a test statistic, as lavaan's ``fitMeasures`` computes them.

CFI (Bentler, 1990) and TLI (Tucker & Lewis, 1973) against the baseline (independence) model; RMSEA
for G groups, sqrt(max(0, (χ² − df)/(df·N)))·sqrt(G) (Steiger, 1998), with its 90 % interval from the
noncentral χ² (Browne & Cudeck, 1993). The *scaled* versions put a scaled statistic into the same
formulas; the *robust* ones (Brosseau-Liard, Savalei & Li, 2012; Brosseau-Liard & Savalei, 2014) keep
the ML statistic and correct by the scaling factor c: RMSEA_robust = sqrt(max(0, χ²/(N·df) − c/N))·sqrt(G),
CFI_robust = 1 − max(χ² − c·df, 0) / max(χ² − c·df, χ²_B − c_B·df_B, 0).

May import numpy and scipy.

Checked in tests/test_invariance_lavaan.py (CFI, TLI, RMSEA, SRMR, their scaled and robust versions
and the robust RMSEA interval against lavaan 0.6.14's ``fitMeasures``) and tests/test_invariance.py
(the 90 % RMSEA interval against the noncentral χ² solved with scipy's ``ncx2`` and ``brentq``; CFI
= 1 and TLI > 1 when χ² < df, as lavaan).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, stats


def cfi_tli(chi2: float, df: int, base_chi2: float, base_df: int) -> tuple[float, float]:
    """CFI and TLI as lavaan computes them; TLI is not estimable (NaN) when the baseline's χ²/df is 1."""
    model_excess = max(chi2 - df, 0.0)
    base_excess = max(chi2 - df, base_chi2 - base_df, 0.0)
    cfi = 1.0 if base_excess == 0 else 1.0 - model_excess / base_excess
    ratio_gain, base_gain = base_chi2 / base_df - chi2 / df, base_chi2 / base_df - 1.0
    if ratio_gain < 0 and base_gain < 0:
        tli = 1.0
    elif base_gain == 0:
        tli = float("nan")   # the baseline fits as well as its df: no gain to measure against
    else:
        tli = ratio_gain / base_gain
    return cfi, tli


def rmsea(chi2: float, df: int, n: int, n_groups: int, scaling: float = 1.0) -> float:
    """RMSEA; with a Yuan–Bentler or Satorra–Bentler `scaling` factor c ≠ 1 on the ML χ², the robust RMSEA."""
    return float(np.sqrt(max(0.0, chi2 / (n * df) - scaling / n)) * np.sqrt(n_groups))


def robust_cfi(chi2: float, df: int, scaling: float, base_chi2: float, base_df: int, base_scaling: float) -> float:
    """lavaan's ``cfi.robust``: the ML statistics, each model's excess over c·df."""
    model = max(chi2 - scaling * df, 0.0)
    base = max(chi2 - scaling * df, base_chi2 - base_scaling * base_df, 0.0)
    return 1.0 if base == 0 else 1.0 - model / base


def robust_tli(chi2: float, df: int, scaling: float, base_chi2: float, base_df: int, base_scaling: float) -> float:
    """lavaan's ``tli.robust``."""
    model = (chi2 - scaling * df) * base_df
    base = (base_chi2 - base_scaling * base_df) * df
    return float("nan") if base == 0 else 1.0 - model / base


def rmsea_interval(chi2: float, df: int, n: int, n_groups: int, scaling: float = 1.0,
                   level: float = 0.90) -> tuple[float, float]:
    """The RMSEA confidence interval from the noncentral χ² (Browne & Cudeck, 1993), as lavaan: the
    noncentrality λ where the statistic sits at the (1 + level)/2 and (1 − level)/2 quantiles,
    sqrt(c·λ/(N·df))·sqrt(G); for the robust interval pass the ML χ² divided by c and c."""
    upper_quantile, lower_quantile = (1 + level) / 2, (1 - level) / 2

    def cdf(ncp: float) -> float:
        # The noncentral χ² with ncp 0 is the central one (scipy's ncx2 wants ncp > 0).
        return float(stats.chi2.cdf(chi2, df) if ncp <= 0 else stats.ncx2.cdf(chi2, df, ncp))

    def to_rmsea(ncp: float) -> float:
        return float(np.sqrt(scaling * ncp / (n * df)) * np.sqrt(n_groups))

    low = 0.0
    if cdf(0.0) >= upper_quantile:
        low = to_rmsea(optimize.brentq(lambda ncp: cdf(ncp) - upper_quantile, 0.0, chi2))
    high = 0.0
    ceiling = max(n, 4 * chi2)
    if cdf(0.0) >= lower_quantile and cdf(ceiling) <= lower_quantile:
        high = to_rmsea(optimize.brentq(lambda ncp: cdf(ncp) - lower_quantile, 0.0, ceiling))
    return low, high
