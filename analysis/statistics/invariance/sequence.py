"""The invariance sequence, partial invariance by score tests, and latent means (see the package docstring)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from psyq.analysis.statistics.invariance import fit_measures
from psyq.analysis.statistics.invariance.continuous import Fit
from psyq.analysis.statistics.invariance.layout import Layout
from psyq.analysis.statistics.invariance.score_tests import univariate_score_tests

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

    Example:
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
