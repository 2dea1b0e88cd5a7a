"""Differential item functioning (DIF) of keyed item answers between a cohort and humans, by
ordinal logistic regression (Swaminathan & Rogers 1990; Zumbo 1999; the likelihood-ratio tests of
R's lordif, Choi, Gibbons & Crane 2011), each regression a proportional-odds model fitted by
Newton–Raphson with its analytic Hessian.

* :func:`differential_item_functioning` — per item, the overall, uniform and non-uniform DIF tests
  on the (purified) total score, Holm-corrected, with Nagelkerke's pseudo-R² change as the effect.

The matching score is the observed total score, not a latent trait: nothing here fits the graded
response model of :mod:`psyq.analysis.statistics.irt`, whose coding of answers as category indices
(:func:`psyq.analysis.statistics.irt.category_codes`) it shares. Inputs are *keyed* answers (higher
= more of the trait), one row per respondent, one column per item; ``levels`` are the ordered
answer values. A test that cannot be run is never a number: its row has ``estimable`` False, NaN
numbers and the reason in ``note``.

Checked in tests/test_dif.py: the likelihood-ratio tests and pseudo-R² changes against statsmodels'
``OrderedModel`` ordered logit on the same total score, Holm's correction against statsmodels'
``multipletests``, the effect bands at Jodoin & Gierl's bounds, the analytic gradient and Hessian of
the ordinal regressions against central differences, planted DIF found in simulated data, and the
cases that are not estimable. In tests/test_report_at_scale.py: the regressions on counted rows
against the rows themselves.

Example: :func:`differential_item_functioning` (no DIF planted, 200 respondents per group).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from psyq.analysis.statistics.irt import category_codes
from psyq.analysis.statistics.multiple_testing import holm

MAX_PURIFICATION_ROUNDS = 10
MAX_ORDINAL_NEWTON = 100
ORDINAL_TOLERANCE = 1e-8      # the ordinal regressions: Newton stops at max |gradient| below this
MAX_HALVINGS = 30             # a Newton step is halved at most this often
ROUNDING = 1e-12              # a Newton step may lose this much of |log L| (rounding near the maximum)
TINY = 1e-300                 # probabilities are clipped here before a log or a division
MIN_GROUP = 30                # fewer respondents in a group and nothing is tested
NEGLIGIBLE, LARGE = 0.035, 0.070   # Jodoin & Gierl (2001) bounds on the pseudo-R² change
DIF_COLUMNS = ["item", "n_reference", "n_focal", "chi2_dif", "df", "p", "p_holm", "chi2_uniform", "p_uniform",
               "chi2_nonuniform", "p_nonuniform", "delta_r2", "delta_r2_mcfadden", "effect", "flag", "estimable", "note"]


def _effect_label(delta_r2: float) -> str:
    if not np.isfinite(delta_r2):
        return ""
    return "negligible" if delta_r2 < NEGLIGIBLE else "moderate" if delta_r2 <= LARGE else "large"


def _ordinal_terms(y: np.ndarray, exog: np.ndarray, params: np.ndarray,
                   weight: np.ndarray | None = None) -> tuple[float, np.ndarray, np.ndarray]:
    """Log-likelihood, gradient and Hessian of the proportional-odds model at `params` = (α_1 > … > α_m,
    β): P(Y = y | x) = S_y − S_{y+1}, S_k = logistic(α_k + x β), S_0 = 1, S_{m+1} = 0. With ψ = S (1 − S)
    and ω = ψ (1 − 2 S) at the answer's upper (k = y) and lower (k = y + 1) boundary, u = ψ_y / P and
    l = ψ_{y+1} / P: α_y enters log P with u, α_{y+1} with −l, x β with u − l. `weight`: how many
    respondents each row stands for (rows of equal answer and covariates counted once)."""
    m = len(params) - exog.shape[1]
    w = np.ones(len(y)) if weight is None else weight
    cuts = np.concatenate([[np.inf], params[:m], [-np.inf]])         # α_0 = +∞, α_{m+1} = −∞
    eta = exog @ params[m:]
    upper, lower = expit(cuts[y] + eta), expit(cuts[y + 1] + eta)
    prob = np.clip(upper - lower, TINY, None)
    psi_up, psi_low = upper * (1 - upper), lower * (1 - lower)
    omega_up, omega_low = psi_up * (1 - 2 * upper) / prob, psi_low * (1 - 2 * lower) / prob
    u, low = psi_up / prob, psi_low / prob

    def by_threshold(up: np.ndarray, down: np.ndarray) -> np.ndarray:   # Σ over answers at α_y and at α_{y+1}
        return (np.bincount(y, up * w, minlength=m + 2) + np.bincount(y + 1, down * w, minlength=m + 2))[1:m + 1]

    grad = np.concatenate([by_threshold(u, -low), exog.T @ (w * (u - low))])
    hess = np.empty((len(params), len(params)))
    aa = np.diag(by_threshold(omega_up - u ** 2, -omega_low - low ** 2))
    neighbours = np.bincount(y, w * u * low, minlength=m + 2)[1:m]     # α_k with α_{k+1}: answers y = k
    aa[np.arange(m - 1), np.arange(1, m)] = aa[np.arange(1, m), np.arange(m - 1)] = neighbours
    hess[:m, :m] = aa
    cross_up, cross_low = omega_up - u * (u - low), -omega_low + low * (u - low)
    hess[:m, m:] = np.column_stack([by_threshold(cross_up * x, cross_low * x) for x in exog.T])
    hess[m:, :m] = hess[:m, m:].T
    hess[m:, m:] = exog.T @ ((w * (omega_up - omega_low - (u - low) ** 2))[:, None] * exog)
    return float(w @ np.log(prob)), grad, hess


def _cumulative_logit(y: np.ndarray, exog: np.ndarray | None, start: np.ndarray | None = None,
                      weight: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Maximised log-likelihood of the proportional-odds (cumulative logit) model
    ``P(Y ≥ k | x) = logistic(α_k + x β)``, k = 1..m, of y (codes 0..m, every one used) on the
    columns of `exog`, and the estimate (α_1..α_m, β). None: thresholds only, in closed form.
    Newton–Raphson with the analytic Hessian (the log-likelihood is concave in (α, β), Pratt 1981),
    each step halved until the thresholds stay ordered and the likelihood does not fall; from
    `start` (a nested model's estimate with 0 for the new slopes: DIF fits M2 from M1 and M3 from M2)
    or the marginal thresholds and β = 0. `weight`: how many respondents each row stands for (default
    one each). Raises RuntimeError when the fit does not converge or a slope runs off (separation)."""
    counts = np.bincount(y, weight)
    m = len(counts) - 1
    above = (np.cumsum(counts[::-1])[::-1][1:] / counts.sum()).clip(1e-3, 1 - 1e-3)
    alpha0 = np.log(above / (1 - above))
    if exog is None:
        return float(np.sum(counts * np.log(counts / counts.sum()))), alpha0
    params = np.concatenate([alpha0, np.zeros(exog.shape[1])]) if start is None else np.asarray(start, dtype=float)
    value, grad, hess = _ordinal_terms(y, exog, params, weight)
    for _ in range(MAX_ORDINAL_NEWTON):
        if np.max(np.abs(grad)) < ORDINAL_TOLERANCE:
            break
        step = np.linalg.lstsq(-hess, grad, rcond=None)[0]       # lstsq: −H is singular under separation
        for _ in range(MAX_HALVINGS):
            trial = params + step
            if np.all(np.diff(trial[:m]) < 0):
                new = _ordinal_terms(y, exog, trial, weight)
                if new[0] >= value - ROUNDING * abs(value):
                    break
            step = step / 2
        else:
            break
        params, (value, grad, hess) = trial, new
        if np.any(np.abs(params[m:]) > 50):
            raise RuntimeError("coefficients ran off (perfect separation)")
    if not np.isfinite(value) or np.max(np.abs(grad)) > 1e-3 * max(1.0, np.sqrt(counts.sum())):
        raise RuntimeError("the ordinal logistic regression did not converge")
    return value, params


def differential_item_functioning(data: pd.DataFrame, items: Sequence[str], group: str, levels: Sequence[float], *,
                                  focal: object, reference: object, purify: bool = True) -> pd.DataFrame:
    """Differential item functioning of keyed `items` between the `focal` and `reference` values
    of column `group`, by ordinal logistic regression (Swaminathan & Rogers 1990; Zumbo 1999; the
    likelihood-ratio tests of lordif, Choi, Gibbons & Crane 2011, J Stat Softw 39(8)).

    Matching score: the **total score** (each answer as its category index in `levels`, summed),
    the studied item included, as in Zumbo (1999); centred. With ``purify`` (default) the score is
    purified iteratively (French & Maller 2007): items flagged in one round are left out of the
    other items' matching score in the next, until the flagged set is stable (at most 10 rounds;
    ``frame.attrs["anchors_left_out"]``). Without it a strongly DIF item contaminates the score
    and, under a real group difference (impact), clean items turn significant. Respondents with
    any missing answer among `items` are left out (complete cases; counted in
    ``frame.attrs["n_dropped_missing"]``). Per item, three proportional-odds models of the answer:
    M1 score, M2 score + group, M3 score + group + score × group. Likelihood-ratio χ²: M1 vs M3,
    overall DIF (2 df, ``chi2_dif``, ``p``); M1 vs M2, uniform DIF (1 df); M2 vs M3, non-uniform
    DIF (1 df). ``p_holm``: Holm's correction of ``p`` over the estimable items. Effect size: the
    change in Nagelkerke's pseudo-R² from M1 to M3 (``delta_r2``), the measure for which
    Zumbo & Thomas (1997) and Jodoin & Gierl (2001) gave their bounds, labelled after Jodoin &
    Gierl: < .035 negligible, .035–.070 moderate, > .070 large. McFadden's change (lordif's
    default pseudo-R²; about half of Nagelkerke's in our simulations) is in
    ``delta_r2_mcfadden``, for reference only.

    ``flag`` is True when ``p_holm`` < .05 **and** the effect is at least moderate
    (Δ R² ≥ .035): statistically detectable and not negligible.

    Columns: ``item, n_reference, n_focal, chi2_dif, df, p, p_holm, chi2_uniform, p_uniform,
    chi2_nonuniform, p_nonuniform, delta_r2, delta_r2_mcfadden, effect, flag, estimable, note``;
    ``frame.attrs`` has the matching score, the flag rule and ``n_dropped_missing``.

    Not estimable (``estimable`` False, NaN, reason in ``note``): a group with fewer than 30
    complete respondents (every item); an item answered in a single category within a group; a
    model that does not converge or whose coefficients run off (separation).

    Example
    -------
    No DIF planted; 200 respondents per group:

    >>> rng = np.random.default_rng(2)
    >>> theta = rng.standard_normal(400)
    >>> answers = pd.DataFrame({f"i{j}": (theta + rng.logistic(size=400) / 1.7 > [[-1], [0], [1]]).sum(axis=0)
    ...                         for j in range(5)})
    >>> answers["sample"] = ["cohort"] * 200 + ["humans"] * 200
    >>> dif = differential_item_functioning(answers, [f"i{j}" for j in range(5)], "sample", [0, 1, 2, 3],
    ...                                     focal="cohort", reference="humans")
    >>> dif[["item", "df", "estimable"]].values.tolist()[:2], int(dif["flag"].sum())
    ([['i0', 2, True], ['i1', 2, True]], 0)
    """
    items = list(items)
    frame = data[data[group].isin([focal, reference])]
    codes = category_codes(frame, items, levels)
    complete = (codes >= 0).all(axis=1)
    codes = codes[complete]
    is_focal = (frame[group].to_numpy()[complete] == focal).astype(float)
    flagged: set[str] = set()
    seen: list[set[str]] = []
    for _ in range(MAX_PURIFICATION_ROUNDS if purify else 1):
        out, basis = _dif_round(codes, is_focal, items, levels, flagged), flagged
        now = set(out.loc[out["flag"], "item"])
        if now == flagged or now in seen:           # stable (or cycling): stop
            break
        seen.append(now)
        flagged = now
    out.attrs.update(matching=("total score over the items not flagged (purified), the studied item included; centred"
                               if purify else "total score over the items (studied item included), centred"),
                     anchors_left_out=sorted(basis, key=items.index),
                     purification_rounds=len(seen) + 1, n_dropped_missing=int((~complete).sum()),
                     focal=focal, reference=reference,
                     flag_rule="p_holm < .05 and delta_r2 >= .035 (at least moderate, Jodoin & Gierl 2001)")
    return out


def _dif_round(codes: np.ndarray, is_focal: np.ndarray, items: list[str], levels: Sequence[float],
               flagged: set[str]) -> pd.DataFrame:
    """One pass of the three ordinal logistic regressions per item; the matching score leaves out
    the `flagged` items other than the studied one."""
    n_focal, n_ref = int(is_focal.sum()), int((1 - is_focal).sum())
    anchor = np.array([item not in flagged for item in items])
    rows = []
    for j, item in enumerate(items):
        total = codes[:, anchor].sum(axis=1) + (0 if anchor[j] else codes[:, j])     # whole numbers
        centre = total.astype(float).mean() if len(total) else 0.0
        row = {"item": item, "n_reference": n_ref, "n_focal": n_focal, "chi2_dif": np.nan, "df": 2, "p": np.nan,
               "p_holm": np.nan, "chi2_uniform": np.nan, "p_uniform": np.nan, "chi2_nonuniform": np.nan,
               "p_nonuniform": np.nan, "delta_r2": np.nan, "delta_r2_mcfadden": np.nan, "effect": "", "flag": False, "estimable": False,
               "note": ""}
        rows.append(row)
        if min(n_focal, n_ref) < MIN_GROUP:
            row["note"] = (f"not estimable: {n_ref:,} reference and {n_focal:,} focal respondents with every answer "
                           f"(at least {MIN_GROUP} per group needed)")
            continue
        y_all = codes[:, j]
        single = [name for name, mask in (("reference", is_focal == 0), ("focal", is_focal == 1))
                  if len(np.unique(y_all[mask])) < 2]
        if single:
            row["note"] = f"not estimable: a single category used in the {' and '.join(single)} group"
            continue
        used = np.unique(y_all)
        y = np.searchsorted(used, y_all)
        if len(used) < len(levels):
            row["note"] = f"levels never chosen: {[levels[k] for k in range(len(levels)) if k not in used]} (no threshold for them)"
        # Respondents with the same answer, matching score and group have the same likelihood: each such
        # row is fitted once, weighted by their number (a few hundred rows for 10⁵ respondents).
        span = int(total.max()) + 1
        distinct, weight = np.unique((y * span + total) * 2 + is_focal.astype(int), return_counts=True)
        y_u, total_u, focal_u = distinct // (2 * span), distinct // 2 % span, (distinct % 2).astype(float)
        score_u, weight = total_u.astype(float) - centre, weight.astype(float)
        exog1 = score_u[:, None]
        exog2 = np.column_stack([score_u, focal_u])
        exog3 = np.column_stack([score_u, focal_u, score_u * focal_u])
        try:
            ll0, _ = _cumulative_logit(y_u, None, weight=weight)
            ll1, fit1 = _cumulative_logit(y_u, exog1, weight=weight)
            ll2, fit2 = _cumulative_logit(y_u, exog2, start=np.append(fit1, 0.0), weight=weight)  # nested: M1, group = 0
            ll3, _ = _cumulative_logit(y_u, exog3, start=np.append(fit2, 0.0), weight=weight)
        except (RuntimeError, np.linalg.LinAlgError, ValueError) as err:
            row["note"] = "; ".join(x for x in (row["note"], f"not estimable: {err}") if x)
            continue
        if ll2 < ll1 - 1e-4 or ll3 < ll2 - 1e-4:
            row["note"] = "; ".join(x for x in (row["note"], "not estimable: nested fits out of order "
                                                "(optimisation failed)") if x)
            continue
        chi_dif, chi_u, chi_nu = (max(0.0, 2 * (hi - lo)) for hi, lo in ((ll3, ll1), (ll2, ll1), (ll3, ll2)))
        n = len(y)
        nagelkerke = lambda ll: (1 - np.exp(2 * (ll0 - ll) / n)) / (1 - np.exp(2 * ll0 / n))   # noqa: E731
        delta = nagelkerke(ll3) - nagelkerke(ll1)
        row.update(chi2_dif=chi_dif, p=stats.chi2.sf(chi_dif, 2), chi2_uniform=chi_u, p_uniform=stats.chi2.sf(chi_u, 1),
                   chi2_nonuniform=chi_nu, p_nonuniform=stats.chi2.sf(chi_nu, 1), delta_r2=delta,
                   delta_r2_mcfadden=(ll3 - ll1) / -ll0, effect=_effect_label(delta), estimable=True)
    out = pd.DataFrame(rows, columns=DIF_COLUMNS)
    out["p_holm"] = holm(out["p"].to_numpy(dtype=float))
    out["flag"] = (out["p_holm"] < 0.05) & (out["delta_r2"] >= NEGLIGIBLE)
    out["df"] = out["df"].astype(int)
    out["estimable"] = out["estimable"].astype(bool)
    return out
