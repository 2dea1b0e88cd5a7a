"""Measurement invariance between groups (a cohort and humans) by multi-group confirmatory factor analysis.

:func:`measurement_invariance` fits one factor model to every group at rising levels of equality and
returns one row per level (the report's sentence on each row:
:func:`psyq.analysis.report.readings.invariance_verdicts`). Its words follow lavaan's (Rosseel, 2012):
``estimator`` "ML", "MLR" or "WLSMV", ``ordered`` items, a column ``equal`` naming what a step holds
equal as ``group.equal`` does, fit columns named after ``fitMeasures``.

Items treated as continuous (estimator ML or MLR; Meredith, 1993; Vandenberg & Lance, 2000):

* **configural** — the same items load on the same factors in every group; every parameter free
  per group (factor means fixed to 0);
* **metric** (weak, ``equal = "loadings"``) — loadings equal; factor variances and covariances,
  residual variances and intercepts free in every group;
* **scalar** (strong, ``"loadings, intercepts"``) — loadings and intercepts equal; the factor means
  fixed to 0 in the first group and free in the others.

Ordinal items (estimator WLSMV; the sequence of Wu & Estabrook, 2016, as semTools' ``measEq.syntax``
writes it for the delta parameterisation): **configural** (thresholds free per group, latent-response
intercepts 0 and scales 1), **thresholds** (thresholds equal; intercepts and scales free in the
other groups), **metric** (``"thresholds, loadings"``), **scalar** (``"thresholds, loadings,
intercepts"``: intercepts back to 0, factor means free in the other groups).

Estimation (:mod:`.continuous`, :mod:`.ordinal`): ML as lavaan's defaults for continuous items
(likelihood "normal", marker-variable identification: the first item of each factor loads 1; the
normal's information about its moments in :mod:`.normal_theory`); MLR
the same estimates with the Yuan–Bentler scaled χ² (Mplus' variant), Huber–White standard errors
and robust CFI/RMSEA; WLSMV diagonally weighted least squares on the thresholds and polychoric
correlations (:func:`psyq.analysis.statistics.polychoric.polychoric`) with the mean- and
variance-adjusted χ². Fit indices: :mod:`.fit_measures`. Residual and factor variances are kept
positive by a bound just above 0; an estimate stopped there is a Heywood case, named in ``note``.

Decision rules (Chen, 2007, for equal groups of N > 300): a step signals non-invariance when CFI
drops by .010 or more (ΔCFI ≤ −.010) *together with* RMSEA rising by .015 or more or SRMR rising by
.030 or more for loadings (.010 for thresholds and intercepts), read on the estimator's own indices
(ML: CFI, RMSEA; MLR: robust; WLSMV: scaled). The Δχ² test (ML: likelihood ratio; MLR:
Satorra–Bentler 2001; WLSMV: Satorra 2000) is reported beside them, not instead of them.

Partial invariance: when a step fails, its added equalities are released one at a time by the
largest univariate score test (lavaan's ``lavTestScore``, :mod:`.score_tests`), refitting after each,
until Chen's rule no longer rejects the step (a row "partial <step>" naming the released parameters
in ``released``). A release needs a score test significant at .05, and at least half of a factor's
items (rounded up) keep the equality; when either stops the search first, the step is "not
invariant", not partially invariant. Later steps keep the releases.

Latent means (``attrs["latent_means"]``): under scalar or partial scalar invariance, each factor's
mean in every other group relative to the first, with its SE (ML: expected information; MLR:
sandwich; WLSMV: robust), 95 % CI, and d = the difference over the N-weighted pooled latent SD.

Nothing is a number that is not estimable: a row whose model cannot be fitted (a group with no more
respondents than items, an item constant within a group, an empty category in one group for ordinal
items, a singular sample covariance, a factor with one item, df ≤ 0, an optimizer that does not
converge) has ``estimable`` False, NaN statistics and the reason in ``note``. Respondents with a
missing item answer are dropped listwise, and every row's ``note`` says how many.

Checked in tests/test_invariance.py (lavaan's published Holzinger & Swineford, 1939, example; the
configural fit against independent per-group fits by semopy; simulated invariant and non-invariant
groups), tests/test_invariance_lavaan.py (ML and MLR steps, score tests and latent means against
lavaan 0.6.14 / semTools 0.5.6 on the Briganti IRI answers by gender, stored output of
tests/data/lavaan/invariance.R) and tests/test_invariance_ordinal.py (WLSMV steps, Satorra 2000
differences and latent means against the same lavaan output).

Example
-------
Two groups of 150 simulated respondents, one with two shifted intercepts:

>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(1)
>>> def sample(n, shift):
...     eta = rng.multivariate_normal([0, 0], [[1, .4], [.4, 1]], n)
...     x = eta @ np.array([[1, .8, .9, 0, 0, 0], [0, 0, 0, 1, .7, .8]]) + rng.normal(0, .6, (n, 6))
...     return pd.DataFrame(x + shift, columns=["a1", "a2", "a3", "b1", "b2", "b3"])
>>> data = pd.concat([sample(150, 0).assign(group="cohort"),
...                   sample(150, [0, .8, 0, 0, 0, -.8]).assign(group="human")])
>>> fit = measurement_invariance(data, {"A": ["a1", "a2", "a3"], "B": ["b1", "b2", "b3"]}, "group")
>>> fit[["step", "equal", "released", "df", "estimable"]]
             step                 equal    released  df  estimable
0      configural                                    16       True
1          metric              loadings              20       True
2          scalar  loadings, intercepts              24       True
3  partial scalar  loadings, intercepts  a2~1, b3~1  22       True
>>> bool(fit.loc[1, "delta_p"] > .05), bool(fit.loc[2, "delta_p"] < .001)
(True, True)

The score tests released exactly the two shifted intercepts; the latent means, compared under
that partial scalar model, were drawn equal and are estimated near 0:
>>> fit.attrs["latent_means"][["factor", "group", "d", "d_ci_low", "d_ci_high"]].round(2)
  factor  group     d  d_ci_low  d_ci_high
0      A  human -0.11     -0.36       0.14
1      B  human -0.16     -0.40       0.08

References
----------
Browne, M. W., & Cudeck, R. (1993). Alternative ways of assessing model fit. In K. A. Bollen &
J. S. Long (Eds.), *Testing structural equation models* (pp. 136–162). Sage.
Chen, F. F. (2007). Sensitivity of goodness of fit indexes to lack of measurement invariance.
*Structural Equation Modeling, 14*(3), 464–504. https://doi.org/10.1080/10705510701301834
Meredith, W. (1993). Measurement invariance, factor analysis and factorial invariance.
*Psychometrika, 58*(4), 525–543.
Rosseel, Y. (2012). lavaan: An R package for structural equation modeling. *Journal of
Statistical Software, 48*(2), 1–36.
Satorra, A., & Bentler, P. M. (2001). A scaled difference chi-square test statistic for moment
structure analysis. *Psychometrika, 66*(4), 507–514.
Vandenberg, R. J., & Lance, C. E. (2000). A review and synthesis of the measurement invariance
literature. *Organizational Research Methods, 3*(1), 4–70.
Wu, H., & Estabrook, R. (2016). Identification of confirmatory factor analysis models of different
levels of invariance for ordered categorical outcomes. *Psychometrika, 81*(4), 1014–1045.
Yuan, K.-H., & Bentler, P. M. (2000). Three likelihood-based methods for mean and covariance
structure analysis with nonnormal missing data. *Sociological Methodology, 30*, 165–200.

May import numpy, scipy, pandas and psyq.analysis.statistics.polychoric.
"""

from __future__ import annotations

from psyq.analysis.statistics.invariance.sequence import (ACCEPTABLE_CFI, ACCEPTABLE_RMSEA, CHEN_DELTA_CFI,
                                                          CHEN_DELTA_RMSEA, CHEN_DELTA_SRMR, level_reached,
                                                          measurement_invariance)

__all__ = ["ACCEPTABLE_CFI", "ACCEPTABLE_RMSEA", "CHEN_DELTA_CFI", "CHEN_DELTA_RMSEA", "CHEN_DELTA_SRMR",
           "level_reached", "measurement_invariance"]
