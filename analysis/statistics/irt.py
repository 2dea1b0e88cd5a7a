"""Item response theory on keyed item answers: Samejima's graded response model, test
information, and differential item functioning (DIF) between a cohort and humans.

* :func:`graded_response_model` — unidimensional graded response model (Samejima 1969) fitted by
  marginal maximum likelihood (θ ~ N(0, 1), Gauss–Hermite quadrature; the marginal likelihood is
  maximised directly with its analytic gradient, and standard errors come from the observed
  information, the numerically differentiated analytic gradient, inverted). Parameters are in
  the IRT parametrisation of R's mirt (``coef(mod, IRTpars = TRUE)``) and ltm:
  ``P(X ≥ k | θ) = 1 / (1 + exp(−a (θ − b_k)))``.
* :func:`test_information` — item and test information curves of a fitted model.
* :func:`differential_item_functioning` — ordinal logistic regression DIF (Swaminathan & Rogers
  1990; Zumbo 1999; the likelihood-ratio tests of R's lordif, Choi, Gibbons & Crane 2011).

Inputs are *keyed* answers (higher = more of the trait; e.g. from
:func:`psyq.engine.trials.scoring.keyed_answers`), one row per respondent, one column per item;
``levels`` are the ordered answer values. A quantity that cannot be estimated is never a number:
its row has ``estimable`` False, NaN numbers and the reason in ``note``.

Checked in tests/test_irt.py: a published ltm fit of the LSAT-6 data reproduced, the log-likelihood
against brute-force numerical integration (scipy), test information against its numerical-derivative
formula, recovery of known parameters in simulated data, and the DIF tests against statsmodels'
``OrderedModel`` ordered logit and Holm's correction against statsmodels' ``multipletests``.

Example
-------
A small simulated scale:

>>> rng = np.random.default_rng(0)
>>> theta = rng.standard_normal(300)
>>> answers = pd.DataFrame({f"i{j}": (theta + rng.logistic(size=300) / 1.7 > np.array([[-1], [0], [1]])).sum(axis=0)
...                         for j in range(4)})
>>> params = graded_response_model(answers, list(answers), levels=[0, 1, 2, 3])
>>> params[["item", "estimable"]].values.tolist()[:2]
[['i0', True], ['i1', True]]
>>> curve = test_information(params, np.array([0.0]))
>>> curve.query("item == 'test'")["information"].round(0).tolist()
[3.0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.polynomial.hermite_e import hermegauss
from scipy import optimize, stats
from scipy.special import expit, logsumexp

MIN_RESPONDENTS = 50          # fewer: the GRM is not fitted
MIN_ITEMS = 3                 # fewer: a one-factor model of the items is not identified
MAX_ABS_ESTIMATE = 10.0       # |a| or |b| beyond this: the estimate ran off (near-perfect separation)
MAX_ABS_GRADIENT = 1e-2       # convergence: largest |∂ log L / ∂ parameter| at the estimate
QUADRATURE_POINTS = 41
TEST = "test"                 # the `item` of the summed curve in test_information

MAX_PURIFICATION_ROUNDS = 10
MIN_GROUP = 30                # DIF: fewer respondents in a group and nothing is tested
NEGLIGIBLE, LARGE = 0.035, 0.070   # Jodoin & Gierl (2001) bounds on the pseudo-R² change
DIF_COLUMNS = ["item", "n_reference", "n_focal", "chi2_dif", "df", "p", "p_holm", "chi2_uniform", "p_uniform",
               "chi2_nonuniform", "p_nonuniform", "delta_r2", "delta_r2_mcfadden", "effect", "flag", "estimable", "note"]


# --------------------------------------------------------------------------------------------
# Graded response model


def _category_codes(data: pd.DataFrame, items: Sequence[str], levels: Sequence[float]) -> np.ndarray:
    """Answers as category indices 0..K−1 (the position in `levels`), −1 where missing."""
    lookup = {float(v): i for i, v in enumerate(levels)}
    codes = np.full((len(data), len(items)), -1, dtype=int)
    for j, item in enumerate(items):
        values = pd.to_numeric(data[item], errors="coerce").to_numpy(dtype=float)
        stray = sorted({v for v in values[~np.isnan(values)] if float(v) not in lookup})
        if stray:
            raise ValueError(f"item {item!r} has answers {stray} that are not among the levels {list(levels)}")
        present = ~np.isnan(values)
        codes[present, j] = [lookup[float(v)] for v in values[present]]
    return codes


def _category_probabilities(a: float, d: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(X = c | θ) for c = 0..m (rows) at the nodes (columns), and ψ_t = P*_t (1 − P*_t) with the
    boundary curves P*_t = P(X ≥ t | θ) = logistic(a θ + d_t), t = 1..m (slope–intercept form;
    the IRT threshold is b_t = −d_t / a). Rows 0 and m+1 of ψ are 0 (P*_0 = 1, P*_{m+1} = 0)."""
    m = len(d)
    star = np.ones((m + 2, len(nodes)))
    star[m + 1] = 0.0
    star[1:m + 1] = expit(a * nodes[None, :] + d[:, None])
    psi = star * (1.0 - star)
    return star[:-1] - star[1:], psi


class _Grm:
    """The marginal log-likelihood of a GRM over the observed answers and its gradient in the
    natural parameters (a_j, d_j1 > d_j2 > …) of every item; `codes` are 0..m_j per item, −1
    missing."""

    def __init__(self, codes: np.ndarray, n_categories: list[int], points: int):
        self.codes = codes
        self.m = [k - 1 for k in n_categories]
        nodes, weights = hermegauss(points)          # ∫ f(x) exp(−x²/2) dx: the N(0, 1) kernel
        self.nodes, self.log_w = nodes, np.log(weights / weights.sum())
        self.onehot = [(codes[:, j][:, None] == np.arange(k)[None, :]).astype(float)
                       for j, k in enumerate(n_categories)]
        self.slices, start = [], 0
        for m in self.m:
            self.slices.append(slice(start, start + 1 + m))
            start += 1 + m
        self.size = start

    def split(self, natural: np.ndarray) -> list[tuple[float, np.ndarray]]:
        return [(natural[s][0], natural[s][1:]) for s in self.slices]

    def loglik_grad(self, natural: np.ndarray) -> tuple[float, np.ndarray]:
        probs, psis, log_joint = [], [], np.tile(self.log_w, (len(self.codes), 1))
        for j, (a, d) in enumerate(self.split(natural)):
            p, psi = _category_probabilities(a, d, self.nodes)
            probs.append(p)
            psis.append(psi)
            log_joint += self.onehot[j] @ np.log(np.clip(p, 1e-300, None))    # missing rows add 0
        log_person = logsumexp(log_joint, axis=1)
        posterior = np.exp(log_joint - log_person[:, None])                  # h_iq
        grad = np.empty(self.size)
        for j, s in enumerate(self.slices):
            expected = self.onehot[j].T @ posterior                           # r_cq, c = 0..m
            ratio = expected / np.clip(probs[j], 1e-300, None)
            psi = psis[j]
            grad[s.start] = np.sum(ratio * self.nodes[None, :] * (psi[:-1] - psi[1:]))
            # d_t enters P_t with +ψ_t and P_{t−1} with −ψ_t
            grad[s.start + 1:s.stop] = np.sum(psi[1:-1] * (ratio[1:] - ratio[:-1]), axis=1)
        return float(log_person.sum()), grad

    # Ordered intercepts without constraints: d_1 free, d_t = d_{t−1} − exp(g_t).
    def to_natural(self, free: np.ndarray) -> np.ndarray:
        natural = free.copy()
        for s in self.slices:
            if s.stop - s.start > 2:
                natural[s.start + 2:s.stop] = free[s.start + 1] - np.cumsum(np.exp(free[s.start + 2:s.stop]))
        return natural

    def to_free(self, natural: np.ndarray) -> np.ndarray:
        free = natural.copy()
        for s in self.slices:
            if s.stop - s.start > 2:
                free[s.start + 2:s.stop] = np.log(-np.diff(natural[s.start + 1:s.stop]))
        return free

    def objective(self, free: np.ndarray) -> tuple[float, np.ndarray]:
        natural = self.to_natural(free)
        ll, grad = self.loglik_grad(natural)
        out = grad.copy()
        for s in self.slices:
            if s.stop - s.start > 2:
                g_d = grad[s.start + 1:s.stop]
                tail = np.cumsum(g_d[::-1])[::-1]                              # Σ_{t ≥ k} ∂/∂d_t
                out[s.start + 1] = tail[0]
                out[s.start + 2:s.stop] = -np.exp(free[s.start + 2:s.stop]) * tail[1:]
        return -ll, -out

    def information(self, natural: np.ndarray) -> np.ndarray:
        """Observed information: minus the Hessian of log L, by central differences of the
        analytic gradient."""
        info = np.empty((self.size, self.size))
        for k in range(self.size):
            h = 1e-5 * max(1.0, abs(natural[k]))
            up, down = natural.copy(), natural.copy()
            up[k] += h
            down[k] -= h
            info[:, k] = -(self.loglik_grad(up)[1] - self.loglik_grad(down)[1]) / (2 * h)
        return (info + info.T) / 2


def _start_values(codes: np.ndarray, n_categories: list[int]) -> np.ndarray:
    """a = 1 and intercepts from the observed cumulative proportions (logit, widened for a = 1)."""
    start = []
    for j, k in enumerate(n_categories):
        x = codes[:, j][codes[:, j] >= 0]
        above = np.array([(x >= t).mean() for t in range(1, k)]).clip(0.01, 0.99)
        d = np.log(above / (1 - above)) * 1.3
        d = d[0] - np.concatenate([[0.0], np.cumsum(np.maximum(-np.diff(d), 0.05))])
        start.extend([1.0, *d])
    return np.array(start)


def graded_response_model(data: pd.DataFrame, items: Sequence[str], levels: Sequence[float], *,
                          quadrature_points: int = QUADRATURE_POINTS) -> pd.DataFrame:
    """Unidimensional graded response model (Samejima 1969) of keyed `items`, by marginal maximum
    likelihood: θ ~ N(0, 1) integrated out with `quadrature_points` Gauss–Hermite nodes, the
    marginal log-likelihood maximised directly (BFGS, analytic gradient, intercepts kept ordered),
    standard errors from the inverse observed information (the Hessian by central differences of
    the analytic gradient; thresholds by the delta method from the slope–intercept form).

    Parametrisation as mirt's IRT parameters: ``P(X ≥ level_k | θ) = 1/(1 + exp(−a (θ − b_k)))``
    for k = 1 … K−1 with ``levels`` = level_0 < … < level_{K−1}.

    Missing answers: each respondent contributes the likelihood of the answers they gave (missing
    at random); rows without any answer are dropped. Both counts are in ``frame.attrs``
    (``n_with_missing``, ``n_dropped_empty``) and in the note.

    Categories nobody chose: the item is fitted on the categories that were used (an unused
    category is merged into the next used one, as the data cannot tell them apart) and the
    thresholds whose boundary does not exist in the data are NaN, ``threshold_k`` for an unused
    level_k; the note names them. An item answered in one category only is left out of the model
    (``estimable`` False). Fewer than 50 respondents or 3 usable items, an estimate that does not
    converge, a singular information matrix or |a| or |b| > 10 give ``estimable`` False and NaN.

    Returns one row per item: ``item, discrimination, threshold_1 … threshold_{K−1},
    se_discrimination, se_threshold_1 …, n`` (respondents who answered it), ``estimable, note``;
    ``frame.attrs`` has ``log_likelihood, n_respondents, n_with_missing, n_dropped_empty,
    quadrature, quadrature_points, converged, max_abs_gradient, levels``.

    Example
    -------
    1PL-like data; mirt's parametrisation, a ≈ 1.7 here:

    >>> rng = np.random.default_rng(1)
    >>> theta = rng.standard_normal(400)
    >>> answers = pd.DataFrame({f"i{j}": (1.7 * theta + rng.logistic(size=400) > [[-2], [2]]).sum(axis=0)
    ...                         for j in range(3)})
    >>> fit = graded_response_model(answers, ["i0", "i1", "i2"], levels=[0, 1, 2])
    >>> list(fit.columns)[:4], fit.attrs["n_respondents"]
    (['item', 'discrimination', 'threshold_1', 'threshold_2'], 400)
    >>> bool(fit["discrimination"].between(1.2, 2.4).all())
    True
    """
    items, levels = list(items), list(levels)
    if len(levels) < 2 or any(b <= a for a, b in zip(levels, levels[1:])):
        raise ValueError(f"levels must be at least 2 increasing values, not {levels}")
    k_levels = len(levels)
    codes = _category_codes(data, items, levels)
    answered = codes >= 0
    empty = ~answered.any(axis=1)
    codes, answered = codes[~empty], answered[~empty]
    n_resp, n_partial = len(codes), int((~answered.all(axis=1)).sum())
    thresholds = [f"threshold_{k}" for k in range(1, k_levels)]
    columns = ["item", "discrimination", *thresholds, "se_discrimination", *("se_" + t for t in thresholds),
               "n", "estimable", "note"]
    rows = {item: {"item": item, **{c: np.nan for c in columns[1:-3]}, "n": int(answered[:, j].sum()),
                   "estimable": False, "note": ""} for j, item in enumerate(items)}
    attrs = {"log_likelihood": np.nan, "n_respondents": n_resp, "n_with_missing": n_partial,
             "n_dropped_empty": int(empty.sum()), "quadrature": f"Gauss–Hermite, θ ~ N(0, 1)",
             "quadrature_points": quadrature_points, "converged": False, "max_abs_gradient": np.nan,
             "levels": levels}
    missing_note = (f"{n_partial} respondent(s) with missing answers: likelihood over their observed answers"
                    if n_partial else "")

    def finish(general: str = "") -> pd.DataFrame:
        for row in rows.values():
            row["note"] = "; ".join(x for x in (row["note"], general, missing_note) if x)
        frame = pd.DataFrame([rows[i] for i in items], columns=columns)
        frame["n"] = frame["n"].astype(int)
        frame["estimable"] = frame["estimable"].astype(bool)
        frame.attrs.update(attrs)
        return frame

    # Per item: the categories used, recoded 0..m; threshold k exists when level_k was chosen
    # and is not the lowest level chosen.
    fitted, used_levels, recoded = [], {}, []
    for j, item in enumerate(items):
        used = np.unique(codes[answered[:, j], j])
        if len(used) < 2:
            rows[item]["note"] = ("no answers" if len(used) == 0 else
                                  f"constant item (every answer {levels[used[0]]}): left out of the model")
            continue
        unused = [levels[k] for k in range(used[0], used[-1] + 1) if k not in used]
        outside = [levels[k] for k in range(k_levels) if k < used[0] or k > used[-1]]
        if unused or outside:
            gone = [f"threshold_{k}" for k in range(1, k_levels) if k not in used[1:]]
            rows[item]["note"] = (f"levels never chosen: {sorted(unused + outside)}; fitted on the "
                                  f"{len(used)} used categories, {', '.join(gone)} not estimable")
        fitted.append(j)
        used_levels[j] = used
        column = np.full(len(codes), -1)
        column[answered[:, j]] = np.searchsorted(used, codes[answered[:, j], j])
        recoded.append(column)

    if n_resp < MIN_RESPONDENTS:
        return finish(f"not estimable: {n_resp} respondents (at least {MIN_RESPONDENTS} needed)")
    if len(fitted) < MIN_ITEMS:
        return finish(f"not estimable: {len(fitted)} item(s) with variation (at least {MIN_ITEMS} needed)")

    x = np.column_stack(recoded)
    keep = (x >= 0).any(axis=1)             # respondents who answered only constant items add nothing
    x = x[keep]
    n_categories = [len(used_levels[j]) for j in fitted]
    model = _Grm(x, n_categories, quadrature_points)
    start = model.to_free(_start_values(x, n_categories))
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        result = optimize.minimize(model.objective, start, jac=True, method="BFGS",
                                   options={"gtol": 1e-6, "maxiter": 2000})
    natural = model.to_natural(result.x)
    log_lik, grad = model.loglik_grad(natural)
    max_grad = float(np.max(np.abs(grad)))
    attrs.update(log_likelihood=log_lik, max_abs_gradient=max_grad, converged=bool(max_grad < MAX_ABS_GRADIENT))
    if not np.isfinite(log_lik) or max_grad >= MAX_ABS_GRADIENT:
        return finish(f"not estimable: the marginal likelihood did not converge (max |gradient| {max_grad:.3g})")
    info = model.information(natural)
    eigen = np.linalg.eigvalsh(info)
    if not np.all(np.isfinite(eigen)) or eigen.min() <= 1e-8 * max(1.0, eigen.max()):
        return finish("not estimable: the observed information is singular (parameters not identified)")
    cov = np.linalg.inv(info)
    for j, (a, d), s in zip(fitted, model.split(natural), model.slices):
        row, item = rows[items[j]], items[j]
        b = -d / a
        # delta method: b_t = −d_t / a, ∂b_t/∂a = d_t / a², ∂b_t/∂d_t = −1 / a
        jac = np.zeros((len(d), s.stop - s.start))
        jac[:, 0] = d / a ** 2
        jac[np.arange(len(d)), np.arange(1, len(d) + 1)] = -1.0 / a
        block = cov[s, s]
        se_b = np.sqrt(np.diag(jac @ block @ jac.T))
        if abs(a) > MAX_ABS_ESTIMATE or np.any(np.abs(b) > MAX_ABS_ESTIMATE):
            row["note"] = "; ".join(x for x in (row["note"], f"not estimable: the estimate ran off (|a| or |b| > "
                                    f"{MAX_ABS_ESTIMATE:g}: near-perfect separation)") if x)
            continue
        row.update(discrimination=a, se_discrimination=float(np.sqrt(block[0, 0])), estimable=True)
        for t, level_index in enumerate(used_levels[j][1:]):
            row[f"threshold_{level_index}"] = b[t]
            row[f"se_threshold_{level_index}"] = se_b[t]
        if a < 0:
            row["note"] = "; ".join(x for x in (row["note"], "negative discrimination: is the item keyed?") if x)
    return finish()


def test_information(params: pd.DataFrame, theta: np.ndarray) -> pd.DataFrame:
    """Item and test information of a fitted GRM (:func:`graded_response_model`) at `theta`:
    ``I_j(θ) = Σ_c P'_jc(θ)² / P_jc(θ)`` with ``P'_jc = a (ψ_c − ψ_{c+1})``, ψ_k = P*_k (1 − P*_k),
    summed over the estimable items for the test (``item`` "test"); items that are not
    estimable add nothing (named in ``frame.attrs["left_out"]``). Thresholds that are NaN
    (unused categories) are skipped: the item is the one that was fitted. The standard error of
    θ at a point is 1/√I (column ``se_theta``).

    Returns a tidy frame ``theta, item, information, se_theta``, the test rows first.

    Example
    -------
    >>> params = pd.DataFrame({"item": ["x", "y"], "discrimination": [1.0, 2.0], "threshold_1": [-1.0, 0.0],
    ...                        "threshold_2": [1.0, np.nan], "estimable": [True, True]})
    >>> test_information(params, np.array([0.0])).round(3)
       theta  item  information  se_theta
    0    0.0  test        1.287     0.881
    1    0.0     x        0.287     1.865
    2    0.0     y        1.000     1.000
    """
    theta = np.asarray(theta, dtype=float)
    per_item, left_out = [], []
    threshold_cols = sorted((c for c in params.columns if c.startswith("threshold_")), key=lambda c: int(c[10:]))
    for row in params.itertuples(index=False):
        values = row._asdict()
        a = values.get("discrimination", np.nan)
        if not bool(values.get("estimable", True)) or not np.isfinite(a):
            left_out.append(values["item"])
            continue
        b = np.array([values[c] for c in threshold_cols], dtype=float)
        b = b[np.isfinite(b)]    # in category order: descending when a < 0 (never sorted: that breaks P)
        p, psi = _category_probabilities(a, -a * b, theta)
        slope = a * (psi[:-1] - psi[1:])
        info = np.sum(slope ** 2 / np.clip(p, 1e-300, None), axis=0)
        per_item.append(pd.DataFrame({"theta": theta, "item": values["item"], "information": info}))
    total = sum((f["information"].to_numpy() for f in per_item), np.zeros_like(theta))
    frame = pd.concat([pd.DataFrame({"theta": theta, "item": TEST, "information": total}), *per_item],
                      ignore_index=True)
    with np.errstate(divide="ignore"):
        frame["se_theta"] = np.where(frame["information"] > 0, 1 / np.sqrt(frame["information"]), np.nan)
    frame.attrs["left_out"] = left_out
    return frame


test_information.__test__ = False      # a public name, not a pytest test where it is imported


# --------------------------------------------------------------------------------------------
# Differential item functioning


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's (1979) step-down adjusted p-values; NaN stays NaN and is not counted in the family.

    Example
    -------
    >>> holm([0.01, 0.04, 0.03, np.nan, 0.005]).round(3).tolist()
    [0.03, 0.06, 0.06, nan, 0.02]
    """
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adjusted, 1.0)
    return out


def _effect_label(delta_r2: float) -> str:
    if not np.isfinite(delta_r2):
        return ""
    return "negligible" if delta_r2 < NEGLIGIBLE else "moderate" if delta_r2 <= LARGE else "large"


def _cumulative_logit(y: np.ndarray, exog: np.ndarray | None) -> float:
    """Maximised log-likelihood of the proportional-odds (cumulative logit) model
    ``P(Y ≥ k | x) = logistic(α_k + x β)``, k = 1..m, of y (codes 0..m, every one used) on the
    columns of `exog` (None: thresholds only, in closed form). BFGS with the analytic gradient,
    thresholds kept ordered (α_1 free, α_k = α_{k−1} − exp(g_k)). Raises RuntimeError when the fit
    does not converge or a slope runs off (separation)."""
    counts = np.bincount(y)
    if exog is None:
        return float(np.sum(counts * np.log(counts / counts.sum())))
    m, p = len(counts) - 1, exog.shape[1]
    rows = np.arange(len(y))

    def negloglik(free: np.ndarray) -> tuple[float, np.ndarray]:
        alpha = free[0] - np.concatenate([[0.0], np.cumsum(np.exp(free[1:m]))])
        eta = exog @ free[m:]
        star = np.ones((len(y), m + 2))
        star[:, m + 1] = 0.0
        star[:, 1:m + 1] = expit(alpha[None, :] + eta[:, None])
        dens = star * (1 - star)                                  # 0 in columns 0 and m+1
        prob = np.clip(star[rows, y] - star[rows, y + 1], 1e-300, None)
        upper, lower = dens[rows, y] / prob, dens[rows, y + 1] / prob
        grad_alpha = np.zeros(m + 2)
        np.add.at(grad_alpha, y, upper)
        np.add.at(grad_alpha, y + 1, -lower)
        grad_alpha = grad_alpha[1:m + 1]
        tail = np.cumsum(grad_alpha[::-1])[::-1]                  # Σ_{k ≥ j} ∂/∂α_k
        grad = np.concatenate([[tail[0]], -np.exp(free[1:m]) * tail[1:], exog.T @ (upper - lower)])
        return -float(np.sum(np.log(prob))), -grad

    above = (np.cumsum(counts[::-1])[::-1][1:] / counts.sum()).clip(1e-3, 1 - 1e-3)
    alpha0 = np.log(above / (1 - above))
    start = np.concatenate([[alpha0[0]], np.log(np.maximum(-np.diff(alpha0), 1e-3)), np.zeros(p)])
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        result = optimize.minimize(negloglik, start, jac=True, method="BFGS", options={"gtol": 1e-6, "maxiter": 1000})
    value, grad = negloglik(result.x)
    if not np.isfinite(value) or np.max(np.abs(grad)) > 1e-3 * max(1.0, np.sqrt(len(y))):
        raise RuntimeError("the ordinal logistic regression did not converge")
    if np.any(np.abs(result.x[m:]) > 50):
        raise RuntimeError("coefficients ran off (perfect separation)")
    return -value


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
    codes = _category_codes(frame, items, levels)
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
        score = codes[:, anchor].sum(axis=1).astype(float) + (0.0 if anchor[j] else codes[:, j])
        score -= score.mean() if len(score) else 0.0
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
        exog1 = score[:, None]
        exog2 = np.column_stack([score, is_focal])
        exog3 = np.column_stack([score, is_focal, score * is_focal])
        try:
            ll0 = _cumulative_logit(y, None)
            ll1, ll2, ll3 = (_cumulative_logit(y, x) for x in (exog1, exog2, exog3))
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
