"""The invariance sequence, partial invariance by score tests, and latent means (see the package docstring).

Checked in tests/test_invariance.py (lavaan's published Holzinger & Swineford verdicts, Chen's
cut-offs, planted unequal intercepts in simulated groups, the latent d's SE against the numerical
delta method) and tests/test_invariance_lavaan.py (the partial scalar release of FS against the R
emulation in tests/data/lavaan/invariance.R, latent means and robust SEs, z, p and CI against lavaan
0.6.14)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from psyq.analysis.statistics.invariance import fit_measures
from psyq.analysis.statistics.invariance.continuous import ContinuousModel, Fit, Sample, Structure
from psyq.analysis.statistics.invariance.layout import Layout
from psyq.analysis.statistics.invariance.ordinal import OrdinalModel
from psyq.analysis.statistics.invariance.score_tests import univariate_score_tests
from psyq.analysis.statistics.polychoric import NotEstimable

ESTIMATORS = ("ML", "MLR", "WLSMV")
# What each step holds equal, as lavaan's group.equal; the continuous and the ordinal sequence.
CONTINUOUS_STEPS = {"configural": (), "metric": ("loadings",), "scalar": ("loadings", "intercepts")}
ORDINAL_STEPS = {"configural": (), "thresholds": ("thresholds",), "metric": ("thresholds", "loadings"),
                 "scalar": ("thresholds", "loadings", "intercepts")}
# What a step adds (the constraints its score tests may release) and the SRMR cut-off of Chen (2007).
ADDED = {"thresholds": "thresholds", "metric": "loadings", "scalar": "intercepts"}
CHEN_DELTA_CFI = -0.010
CHEN_DELTA_RMSEA = 0.015
CHEN_DELTA_SRMR = {"thresholds": 0.010, "metric": 0.030, "scalar": 0.010}
# Conventional bounds of an acceptable configural fit (CFI ≥ .90, RMSEA ≤ .10; Browne & Cudeck, 1993).
ACCEPTABLE_CFI = 0.90
ACCEPTABLE_RMSEA = 0.10
# A constraint is released only when its score test says so at this level.
RELEASE_ALPHA = 0.05
COLUMNS = ["step", "equal", "released", "chi2", "df", "p", "chi2_scaled", "scaling", "shift", "p_scaled", "cfi", "tli",
           "rmsea", "rmsea_low", "rmsea_high", "cfi_scaled", "tli_scaled", "rmsea_scaled", "cfi_robust", "tli_robust",
           "rmsea_robust", "srmr", "n", "groups", "delta_chi2", "delta_df", "delta_p", "delta_cfi", "delta_rmsea",
           "delta_srmr", "estimable", "note"]
# Which CFI and RMSEA the decisions read, per estimator (lavaan's names).
DECIDING = {"ML": ("cfi", "rmsea"), "MLR": ("cfi_robust", "rmsea_robust"), "WLSMV": ("cfi_scaled", "rmsea_scaled")}
METHOD = {
    "ML": ("Multi-group CFA by psyq.measurement_invariance (checked against lavaan 0.6.14): normal-theory maximum "
           "likelihood with mean structure (lavaan's estimator 'ML', likelihood 'normal'), marker-variable "
           "identification; RMSEA × sqrt(G) with 90 % CI; SRMR as lavaan's srmr_bentler"),
    "MLR": ("Multi-group CFA by psyq.measurement_invariance (checked against lavaan 0.6.14): maximum likelihood with "
            "the Yuan–Bentler scaled χ² (Mplus' variant, lavaan's 'yuan.bentler.mplus'), Huber–White standard "
            "errors, robust CFI/TLI/RMSEA (Brosseau-Liard & Savalei) and Satorra–Bentler (2001) scaled Δχ² "
            "(lavaan's estimator 'MLR')"),
    "WLSMV": ("Multi-group CFA by psyq.measurement_invariance (checked against lavaan 0.6.14 and semTools 0.5.6): "
              "diagonally weighted least squares on thresholds and polychoric correlations with robust standard "
              "errors and the mean- and variance-adjusted χ² (lavaan's estimator 'WLSMV', test 'scaled.shifted', "
              "delta parameterisation), scaled CFI/TLI/RMSEA and Satorra (2000) scaled Δχ²; the steps of Wu & "
              "Estabrook (2016) as semTools' measEq.syntax"),
}


@dataclass
class _Step:
    name: str
    equal: tuple[str, ...]
    released: tuple[tuple[str, int], ...] = ()
    fit: Fit | None = None
    row: dict = field(default_factory=dict)


def _name(kind: str, element: int, items: Sequence[str], factor_names: Sequence[str], model) -> str:
    """A parameter as lavaan writes it: "FS=~davi5", "davi5~1", "davi5|t2"."""
    if kind == "loadings":
        return f"{factor_names[model.structure.factor_of[element]]}=~{items[element]}"
    if kind == "intercepts":
        return f"{items[element]}~1"
    if kind == "thresholds":
        item, k = model.threshold_of(element)
        return f"{items[item]}|t{k + 1}"
    return f"{kind}[{element}]"


def _item_of(kind: str, element: int, model) -> int:
    return model.threshold_of(element)[0] if kind == "thresholds" else element


def _fails(row: Mapping, before: Mapping, step: str, deciding: tuple[str, str]) -> bool:
    """Chen (2007): the added equalities do not hold when CFI drops by .010 or more together with RMSEA
    rising by .015 or more or SRMR by the step's cut-off."""
    cfi, rmsea = deciding
    delta_cfi, delta_rmsea = row[cfi] - before[cfi], row[rmsea] - before[rmsea]
    delta_srmr = row["srmr"] - before["srmr"]
    return delta_cfi <= CHEN_DELTA_CFI and (delta_rmsea >= CHEN_DELTA_RMSEA or delta_srmr >= CHEN_DELTA_SRMR[step])


def _holds(row: Mapping, before: Mapping, step: str, deciding: tuple[str, str]) -> bool:
    """Chen (2007), as the report's readings call a step's parameters equal: CFI drops by less than .010
    and neither RMSEA nor SRMR rises by its cut-off. Where the indices disagree (the readings' "doubtful")
    the step is not taken as holding."""
    cfi, rmsea = deciding
    return (row[cfi] - before[cfi] > CHEN_DELTA_CFI and row[rmsea] - before[rmsea] < CHEN_DELTA_RMSEA
            and row["srmr"] - before["srmr"] < CHEN_DELTA_SRMR[step])


def level_reached(frame: pd.DataFrame, *, require_fit: bool = True) -> str:
    """The highest step of a :func:`~psyq.analysis.statistics.invariance.measurement_invariance` frame
    that holds, with every step before it: "none" (the configural model is not estimable or fits
    poorly: CFI < .90 or RMSEA > .10 on the estimator's deciding indices), "configural", then each later
    step (or its "partial" form) while it holds by Chen's (2007) cut-offs: ΔCFI > −.010 and neither
    ΔRMSEA ≥ .015 nor ΔSRMR ≥ its step's cut-off. A step on which the indices disagree (the report's
    readings call it doubtful) is not reached: a verdict built on the level claims no more than the
    readings. With `require_fit` False the configural model need only be estimable: the levels then say
    whether the groups differ, whatever the model's fit in both (an instrument may fit people poorly too).

    Example
    -------
    >>> nan = float("nan")
    >>> fit = pd.DataFrame({"step": ["configural", "metric", "scalar", "partial scalar"],
    ...                     "estimable": True, "cfi": [.995, .994, .952, .990], "rmsea": [.031, .028, .071, .030],
    ...                     "srmr": [.030, .034, .055, .036]})
    >>> level_reached(fit)
    'partial scalar'
    >>> level_reached(fit.iloc[:3])
    'metric'
    >>> level_reached(fit.assign(cfi=fit["cfi"] - .1)), level_reached(fit.assign(cfi=fit["cfi"] - .1), require_fit=False)
    ('none', 'partial scalar')

    A partial scalar step whose CFI drops by .020 while RMSEA rises by only .012 is doubtful:
    >>> level_reached(fit.assign(cfi=[.995, .994, .952, .974], rmsea=[.031, .028, .071, .040]))
    'metric'
    """
    deciding = frame.attrs.get("deciding", ("cfi", "rmsea"))
    rows = {row["step"]: row for row in frame.to_dict("records")}
    first = rows.get("configural")
    if first is None or not first["estimable"]:
        return "none"
    if require_fit and not (first[deciding[0]] >= ACCEPTABLE_CFI and first[deciding[1]] <= ACCEPTABLE_RMSEA):
        return "none"
    reached, before = "configural", first
    for step in (s for s in ORDINAL_STEPS if s != "configural" and s in rows):
        candidates = [rows[step]] + ([rows[f"partial {step}"]] if f"partial {step}" in rows else [])
        held = next((row for row in candidates if row["estimable"] and _holds(row, before, step, deciding)), None)
        if held is None:
            return reached
        reached, before = held["step"], held
    return reached


def _evaluate(model, step: _Step, baseline: Mapping, start: Fit | None = None) -> None:
    """Fit one step's layout (from the estimates of `start`, a neighbouring step's fit, when given) and
    fill its row (or its reason for having no number)."""
    layout = Layout.build(model.free(step.equal), step.equal, step.released, model.pinned(step.equal))
    row = dict.fromkeys(COLUMNS, float("nan"))
    row.update(step=step.name, equal=", ".join(step.equal), released=", ".join(
        _name(k, e, model.items, model.factor_names, model) for k, e in step.released), n=model.n,
        groups=len(model.samples), estimable=False, note="")
    df = model.n_moments() - layout.n_reduced
    row["df"] = df
    if df <= 0:
        row["note"] = f"not estimable: df {df}: the model has as many parameters as moments or more, nothing to test"
        step.row = row
        return
    result = model.fit(layout, start)
    if not result.converged:
        row["note"] = f"not estimable: the optimizer did not converge ({result.message})"
        step.row = row
        return
    step.fit = result
    n, groups = model.n, len(model.samples)
    chi2 = result.chi2
    cfi, tli = fit_measures.cfi_tli(chi2, df, baseline["chi2"], baseline["df"])
    low, high = fit_measures.rmsea_interval(chi2, df, n, groups)
    row.update(chi2=chi2, p=float(stats.chi2.sf(chi2, df)), cfi=cfi, tli=tli,
               rmsea=fit_measures.rmsea(chi2, df, n, groups), rmsea_low=low, rmsea_high=high,
               srmr=model.srmr(result), estimable=True)
    if model.estimator in ("MLR", "WLSMV"):
        scaling, shift = model.scaling(result, df)
        scaled = chi2 / scaling + shift
        base_scaled = baseline["chi2"] / baseline["scaling"] + baseline["shift"]
        row.update(chi2_scaled=scaled, scaling=scaling, shift=shift, p_scaled=float(stats.chi2.sf(scaled, df)))
        row["cfi_scaled"], row["tli_scaled"] = fit_measures.cfi_tli(scaled, df, base_scaled, baseline["df"])
        row["rmsea_scaled"] = fit_measures.rmsea(scaled, df, n, groups)
        if model.estimator == "MLR":
            row["cfi_robust"] = fit_measures.robust_cfi(chi2, df, scaling, baseline["chi2"], baseline["df"],
                                                        baseline["scaling"])
            row["tli_robust"] = fit_measures.robust_tli(chi2, df, scaling, baseline["chi2"], baseline["df"],
                                                        baseline["scaling"])
            row["rmsea_robust"] = fit_measures.rmsea(chi2, df, n, groups, scaling)
    if result.heywood:
        row["note"] = "Heywood case (estimate held at its lower bound near 0): " + "; ".join(result.heywood)
    step.row = row


def _difference(model, before: _Step, after: _Step) -> dict[str, float]:
    """Δχ² of two nested fits: the plain difference (ML), Satorra–Bentler 2001 (MLR), Satorra 2000 (WLSMV)."""
    b, a = before.row, after.row
    delta_df = int(a["df"] - b["df"])
    out = {"delta_df": delta_df}
    if model.estimator == "ML":
        delta = a["chi2"] - b["chi2"]
    elif model.estimator == "MLR":
        # The scaling of the difference (Satorra & Bentler, 2001): c_d = (df₀c₀ − df₁c₁)/(df₀ − df₁).
        c_d = (a["df"] * a["scaling"] - b["df"] * b["scaling"]) / delta_df
        delta = (a["chi2"] - b["chi2"]) / c_d if c_d > 0 else float("nan")
    else:
        delta = model.difference_test(before.fit, after.fit, delta_df)
    deciding = DECIDING[model.estimator]
    out.update(delta_chi2=delta, delta_p=float(stats.chi2.sf(delta, delta_df)) if np.isfinite(delta) else float("nan"),
               delta_cfi=a[deciding[0]] - b[deciding[0]], delta_rmsea=a[deciding[1]] - b[deciding[1]],
               delta_srmr=a["srmr"] - b["srmr"])
    return out


def score_tests(model, result: Fit) -> pd.DataFrame:
    """lavaan's ``lavTestScore(fit)$uni``: one row per equality in force (group g against group 1)."""
    layout = result.layout
    score, information = model.score_and_information(result)
    constraints = layout.constraints()
    places = [layout.split[kind][g, element] for kind, element, g in constraints]
    x2 = univariate_score_tests(score, information, layout.fold_matrix(), places, model.n)
    labels = [s.label for s in model.samples]
    return pd.DataFrame({
        "kind": [k for k, _, _ in constraints], "element": [e for _, e, _ in constraints],
        "parameter": [_name(k, e, model.items, model.factor_names, model) for k, e, _ in constraints],
        "groups": [f"{labels[0]} = {labels[g]}" for _, _, g in constraints],
        "x2": x2, "df": 1, "p": stats.chi2.sf(x2, 1)})


def _release(model, failed: _Step, before: _Step, baseline: Mapping, tests: list[pd.DataFrame]) -> tuple[_Step, str]:
    """Release the failed step's added equalities one at a time, the largest score statistic first, until
    Chen's rule no longer rejects the step; stop when no remaining statistic is significant at
    RELEASE_ALPHA or when a release would leave fewer than half of a factor's items (rounded up) with
    the equality. Returns the last step fitted and what happened, in words for the step's note."""
    kind = ADDED[failed.name]
    deciding = DECIDING[model.estimator]
    current = failed
    sizes = np.bincount(model.structure.factor_of)
    for iteration in range(1, 10_000):
        table = score_tests(model, current.fit).assign(iteration=iteration, released=False)
        candidates = table[table["kind"] == kind]
        tests.append(table)
        if candidates.empty:
            return current, "no equality left to release"
        best = candidates.loc[candidates["x2"].idxmax()]
        if best["p"] >= RELEASE_ALPHA:
            return current, (f"not invariant: no remaining equality's score test is significant at "
                             f"{RELEASE_ALPHA:g} (largest {best['parameter']}, χ²(1) = {best['x2']:.2f})")
        released = (*current.released, (kind, int(best["element"])))
        items_freed = {_item_of(k, e, model) for k, e in released if k == kind}
        factor = model.structure.factor_of[_item_of(kind, int(best["element"]), model)]
        freed_here = sum(1 for i in items_freed if model.structure.factor_of[i] == factor)
        if sizes[factor] - freed_here < math.ceil(sizes[factor] / 2):
            return current, (f"not invariant: releasing {best['parameter']} would leave fewer than half of factor "
                             f"{model.factor_names[factor]}'s items with equal {kind}")
        tests[-1].loc[best.name, "released"] = True
        step = _Step(f"partial {failed.name}", failed.equal, released)
        _evaluate(model, step, baseline, current.fit)
        if not step.row["estimable"]:
            return step, "the model with the equality released is not estimable"
        current = step
        if not _fails(step.row, before.row, failed.name, deciding):
            return current, "holds"
    raise AssertionError("unreachable")   # pragma: no cover


def latent_means(model, step: _Step) -> pd.DataFrame:
    """Each factor's mean in every group but the first, relative to the first, with its SE, 95 % CI, z
    and p, and d: the difference over the groups' N-weighted pooled latent SD (delta-method CI)."""
    result = step.fit
    layout = result.layout
    vcov = model.vcov(result)
    labels = [s.label for s in model.samples]
    means, variances = layout.reduced("factor_means"), layout.reduced("factor_cov")
    diagonal = np.flatnonzero(np.equal(*np.tril_indices(model.structure.m)))
    rows = []
    for g in range(1, len(model.samples)):
        for f, name in enumerate(model.factor_names):
            place = means[g, f]
            estimate = float(result.theta[place])
            se = float(np.sqrt(vcov[place, place]))
            pair = [0, g]
            weights = np.array([model.samples[h].n for h in pair], dtype=float)
            weights /= weights.sum()
            var_places = [variances[h, diagonal[f]] for h in pair]
            pooled = float(sum(w * model.factor_variance(result, h, f) for w, h in zip(weights, pair)))
            d = estimate / np.sqrt(pooled)
            gradient = np.zeros(len(result.theta))
            gradient[place] += 1 / np.sqrt(pooled)
            for w, v in zip(weights, var_places):
                if v >= 0:
                    gradient[v] += -0.5 * estimate * pooled ** -1.5 * w
            d_se = float(np.sqrt(gradient @ vcov @ gradient))
            z = estimate / se
            rows.append({"factor": name, "group": labels[g], "reference": labels[0], "step": step.name,
                         "estimate": estimate, "se": se, "ci_low": estimate - 1.959963984540054 * se,
                         "ci_high": estimate + 1.959963984540054 * se, "z": z, "p": float(2 * stats.norm.sf(abs(z))),
                         "d": d, "d_ci_low": d - 1.959963984540054 * d_se, "d_ci_high": d + 1.959963984540054 * d_se})
    return pd.DataFrame(rows)


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
    one freed) and ``latent_means``. The package docstring gives the models and rules.

    Example
    -------
    Women and men among the 1,973 people of Briganti et al., 2018, items continuous:

    >>> import warnings
    >>> from psyq import human_data, load_instrument
    >>> from psyq.engine.trials.scoring import keyed_answers
    >>> from psyq.analysis.statistics.invariance.against_people import factor_structure
    >>> iri = load_instrument("iri")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")          # the notice that the codebook beside the CSV was read
    ...     people = human_data({"iri": "iri_briganti2018_keyed"})["iri"].answers(iri)
    >>> keyed = keyed_answers(iri, people).assign(gender=people["gender"])
    >>> fit = measurement_invariance(keyed, factor_structure(iri)[0], "gender")
    >>> fit["step"].tolist(), fit.attrs["group_sizes"]
    (['configural', 'metric', 'scalar'], {'female': 1135, 'male': 838})
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
