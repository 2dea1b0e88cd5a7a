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
(likelihood "normal", marker-variable identification: the first item of each factor loads 1); MLR
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

Example (two groups of 150 simulated respondents, one with two shifted intercepts):
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

References:
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

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from psyq.analysis.statistics.invariance.continuous import ContinuousModel, Sample, Structure
from psyq.analysis.statistics.invariance.ordinal import OrdinalModel
from psyq.analysis.statistics.polychoric import NotEstimable
from psyq.analysis.statistics.invariance.sequence import (ACCEPTABLE_CFI, ACCEPTABLE_RMSEA, CHEN_DELTA_CFI,
                                                          CHEN_DELTA_RMSEA, CHEN_DELTA_SRMR, COLUMNS,
                                                          CONTINUOUS_STEPS, DECIDING, ESTIMATORS, METHOD,
                                                          ORDINAL_STEPS, _difference, _evaluate, _fails, _release,
                                                          _Step, latent_means, level_reached)

__all__ = ["ACCEPTABLE_CFI", "ACCEPTABLE_RMSEA", "CHEN_DELTA_CFI", "CHEN_DELTA_RMSEA", "CHEN_DELTA_SRMR",
           "level_reached", "measurement_invariance"]


def _data_problem(samples: Sequence[Sample], items: Sequence[str], factors: Mapping[str, Sequence[str]]) -> str | None:
    """Why no level can be estimated from these groups and this model, or None."""
    if len(samples) < 2:
        return f"{len(samples)} group{'s' if len(samples) != 1 else ''} with complete answers: invariance needs two or more"
    for name, members in factors.items():
        if len(members) < 2:
            return f"factor {name} has {len(members)} item: a factor needs two or more to be identified"
    if len(factors) == 1 and len(items) < 3:
        return f"a single factor with {len(items)} items is not identified: it needs three or more"
    p = len(items)
    for sample in samples:
        if sample.n <= p:
            return f"group '{sample.label}' has {sample.n} respondents for {p} items"
    for sample in samples:
        constant = [item for item, variance in zip(items, np.diag(sample.cov)) if variance <= 0]
        if constant:
            return f"item{'s' if len(constant) > 1 else ''} {', '.join(constant)} constant in group '{sample.label}'"
    for sample in samples:
        sd = np.sqrt(np.diag(sample.cov))
        eigenvalues = np.linalg.eigvalsh(sample.cov / np.outer(sd, sd))
        if eigenvalues[0] < 1e-10:
            return f"the sample covariance of group '{sample.label}' is singular (items linearly dependent)"
    return None


def measurement_invariance(data: pd.DataFrame, factors: Mapping[str, Sequence[str]], group: str,
                           steps: Sequence[str] | None = None, *, estimator: str = "ML",
                           ordered: bool | Sequence[str] | None = None, partial: bool = True) -> pd.DataFrame:
    """The invariance sequence of a factor model across the groups of `data`, with partial invariance.

    `data` has one row per respondent, the items of `factors` (factor name -> its item columns;
    simple structure, the first item of each factor is its marker) and the `group` column (two or
    more groups; the first group is the first category of a categorical column, else the first in
    the data: the reference of the latent means). `estimator` is "ML", "MLR" (items continuous) or
    "WLSMV" (items ordinal: `ordered` True or the item list, as lavaan; WLSMV implies every item
    ordered). `steps` is a leading part of the estimator's sequence (default: all of it); `partial`
    False skips the search for partial invariance.

    Returns one row per step (and per partial step): ``step``, ``equal`` (what it holds equal),
    ``released`` (parameters freed by partial invariance, lavaan's syntax), ``chi2, df, p``, for MLR and
    WLSMV ``chi2_scaled, scaling, shift, p_scaled``, ``cfi, tli, rmsea, rmsea_low, rmsea_high`` and
    their ``_scaled`` / ``_robust`` versions (NaN where the estimator has none), ``srmr``, ``n``,
    ``groups``, the change from the step it builds on (``delta_chi2, delta_df, delta_p, delta_cfi,
    delta_rmsea, delta_srmr``; the estimator's Δχ² and deciding indices), ``estimable`` and ``note``.
    ``attrs``: ``estimator``, ``deciding`` (the CFI and RMSEA columns the decisions read), ``problem``
    (why the data allow no fit at all — too few respondents, an empty category … — or None),
    ``baseline``, ``group_sizes``, ``group_chi2``, ``dropped``, ``method``, ``score_tests`` (every
    univariate score test computed, one row per constraint and iteration, ``released`` marking the
    one freed) and ``latent_means``. The package docstring gives the models, rules and an example.
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, not {estimator!r}")
    items = [item for members in factors.values() for item in members]
    ordinal = estimator == "WLSMV" or bool(ordered)
    if ordinal and estimator != "WLSMV":
        raise ValueError(f"ordered items are fitted by WLSMV, not {estimator}")
    if isinstance(ordered, Sequence) and not isinstance(ordered, str) and set(ordered) != set(items):
        raise ValueError("ordered must be True or list every item: psyq fits all items ordinal or none")
    sequence = ORDINAL_STEPS if ordinal else CONTINUOUS_STEPS
    steps = tuple(sequence) if steps is None else tuple(steps)
    if not steps or steps != tuple(sequence)[:len(steps)]:
        raise ValueError(f"steps must be a leading part of {tuple(sequence)}, not {steps}")
    if len(set(items)) != len(items):
        raise ValueError("an item is listed under two factors: the model is simple structure, one factor per item")
    missing_columns = [c for c in [*items, group] if c not in data.columns]
    if missing_columns:
        raise ValueError(f"columns not in the data: {', '.join(missing_columns)}")
    if not factors:
        raise ValueError("no factors given")

    answers = data[items].apply(pd.to_numeric)
    complete = answers.notna().all(axis=1) & data[group].notna()
    dropped = int((~complete).sum())
    labels = data.loc[complete, group]
    order = ([c for c in labels.cat.categories if (labels == c).any()] if isinstance(labels.dtype, pd.CategoricalDtype)
             else list(pd.unique(labels)))
    samples = [Sample(str(label), answers.loc[complete & (data[group] == label)].to_numpy(dtype=float))
               for label in order]
    factor_names = list(factors)
    structure = Structure(np.array([f for f, members in enumerate(factors.values()) for _ in members]),
                          np.array([j == 0 for members in factors.values() for j in range(len(members))]))
    dropped_note = (f"{dropped} respondent{'s' if dropped != 1 else ''} with a missing item answer or group "
                    f"dropped (listwise)") if dropped else None

    problem = _data_problem(samples, items, factors)
    model = None
    if problem is None:
        if ordinal:
            try:
                model = OrdinalModel(samples, structure, items, factor_names)
            except NotEstimable as error:
                problem = str(error)
        else:
            model = ContinuousModel(samples, structure, items, factor_names, estimator)
    n_total, n_groups = sum(s.n for s in samples), len(samples)
    baseline = model.baseline() if model is not None else {"chi2": float("nan"), "df": 0}

    rows, group_chi2, tests = [], {}, []
    base: _Step | None = None       # the step the next one builds on (its partial version when one holds)
    carried: tuple = ()
    final_scalar: _Step | None = None
    previous = None                 # the last fit: the next step starts from its estimates
    deciding = DECIDING[estimator]
    for name in steps:
        step = _Step(name, sequence[name], carried)
        if model is None:
            row = dict.fromkeys(COLUMNS, float("nan"))
            row.update(step=name, equal=", ".join(step.equal), released="", n=n_total, groups=n_groups,
                       estimable=False, note=f"not estimable: {problem}")
            step.row = row
        else:
            _evaluate(model, step, baseline, previous)
            previous = step.fit or previous
        rows.append(step.row)
        if step.row["estimable"]:
            group_chi2[name] = dict(zip((s.label for s in samples), step.fit.group_chi2))
        if base is not None and base.row["estimable"] and step.row["estimable"]:
            step.row.update(_difference(model, base, step))
            if partial and _fails(step.row, base.row, name, deciding):
                released_step, outcome = _release(model, step, base, baseline, tests)
                if released_step is not step:
                    released_step.row.update(_difference(model, base, released_step))
                    rows.append(released_step.row)
                if outcome == "holds":
                    released_step.row["note"] = _join(released_step.row["note"], "partial invariance holds")
                    step = released_step
                    carried = step.released
                else:
                    target = released_step.row if released_step is not step else step.row
                    target["note"] = _join(target["note"], outcome)
                    step = None
        if step is not None and name == "scalar" and step.row["estimable"]:
            final_scalar = step
        base = step if step is not None else _Step(name, (), ())   # a failed step: nothing builds on it
        if step is None:
            base.row = {"estimable": False}

    for row in rows:
        if dropped_note:
            row["note"] = _join(row["note"], dropped_note)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    for column in ("df", "delta_df"):
        frame[column] = frame[column].astype("Int64")
    frame["estimable"] = frame["estimable"].astype(bool)
    frame.attrs.update(estimator=estimator, deciding=deciding, problem=problem, baseline={k: baseline[k] for k in ("chi2", "df")},
                       group_sizes={s.label: s.n for s in samples}, group_chi2=group_chi2, dropped=dropped,
                       method=METHOD[estimator],
                       score_tests=pd.concat(tests, ignore_index=True) if tests else pd.DataFrame(),
                       latent_means=latent_means(model, final_scalar) if final_scalar is not None else pd.DataFrame())
    return frame


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
