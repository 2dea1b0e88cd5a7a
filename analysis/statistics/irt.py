"""Item response theory on keyed item answers: Samejima's graded response model and test
information. Differential item functioning, which matches on the total score and fits no IRT
model, is in :mod:`psyq.analysis.statistics.dif`.

* :func:`graded_response_model` — unidimensional graded response model (Samejima 1969) fitted by
  marginal maximum likelihood (θ ~ N(0, 1), Gauss–Hermite quadrature) as mirt fits it: EM (Bock &
  Aitkin 1981) over the distinct answer patterns, then Newton–Raphson on the marginal likelihood
  with its analytic Hessian; standard errors from the observed information (that Hessian)
  inverted. Parameters are in the IRT parametrisation of R's mirt (``coef(mod, IRTpars = TRUE)``)
  and ltm: ``P(X ≥ k | θ) = 1 / (1 + exp(−a (θ − b_k)))``.
* :func:`test_information` — item and test information curves of a fitted model.
* :func:`category_codes` — answers as category indices, the coding the GRM and DIF share.

Inputs are *keyed* answers (higher = more of the trait; e.g. from
:func:`psyq.engine.trials.scoring.keyed_answers`), one row per respondent, one column per item;
``levels`` are the ordered answer values. A quantity that cannot be estimated is never a number:
its row has ``estimable`` False, NaN numbers and the reason in ``note``.

Checked in tests/test_irt.py: a published ltm fit of the LSAT-6 data reproduced, the log-likelihood
against brute-force numerical integration (scipy), test information against its numerical-derivative
formula, and recovery of known parameters in simulated data. In tests/test_irt_em.py: the fit of the
shipped people's four IRI subscales against PyPI mirt 1.2.0's (stored by bench/grm_vs_mirt.py), the
analytic Hessians against differenced gradients, and the early, cheap verdict on noise-like answers.

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
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.polynomial.hermite_e import hermegauss
from scipy import sparse
from scipy.special import expit
from threadpoolctl import threadpool_limits

MIN_RESPONDENTS = 50          # fewer: the GRM is not fitted
MIN_ITEMS = 3                 # fewer: a one-factor model of the items is not identified
MAX_ABS_ESTIMATE = 10.0       # |a| or |b| beyond this: the estimate ran off (near-perfect separation)
MAX_ABS_GRADIENT = 1e-2       # convergence: largest |∂ log L / ∂ parameter| at the estimate
MIN_SLOPE = 0.25              # fewer than MIN_ITEMS slopes |a| this large: the items share no common factor
QUADRATURE_POINTS = 41
EM_GAIN = 1e-4                # EM hands over to Newton when an iteration gains less log-likelihood per respondent
MAX_EM_ITERATIONS = 200
NEWTON_TOLERANCE = 1e-6       # Newton on the marginal likelihood stops at max |gradient| below this
MAX_NEWTON_ITERATIONS = 50
MAX_HALVINGS = 30
ROUNDING = 1e-12              # a Newton step may lose this much of |log L| (rounding near the maximum)
TINY = 1e-300                 # probabilities are clipped here before a log or a division
TEST = "test"                 # the `item` of the summed curve in test_information
RAN_OFF = f"not estimable: the estimate ran off (|a| or |b| > {MAX_ABS_ESTIMATE:g}: near-perfect separation)"
COLLAPSED = (f"not estimable: the slopes collapsed towards 0 (fewer than {MIN_ITEMS} items with |a| ≥ {MIN_SLOPE:g}: "
             "the items share no common factor)")


# --------------------------------------------------------------------------------------------
# Graded response model


def category_codes(data: pd.DataFrame, items: Sequence[str], levels: Sequence[float]) -> np.ndarray:
    """Answers to `items` as category indices 0..K−1 (the position of each answer in `levels`), −1
    where missing; an answer that is not among the levels raises ValueError.

    Example
    -------
    >>> category_codes(pd.DataFrame({"i": [3, 1, None]}), ["i"], [1, 2, 3]).ravel().tolist()
    [2, 0, -1]
    """
    order = np.argsort(np.asarray(levels, dtype=float), kind="stable")
    grid = np.asarray(levels, dtype=float)[order]
    codes = np.full((len(data), len(items)), -1, dtype=int)
    for j, item in enumerate(items):
        values = pd.to_numeric(data[item], errors="coerce").to_numpy(dtype=float)
        present = ~np.isnan(values)
        where = np.searchsorted(grid, values[present]).clip(0, len(grid) - 1)
        stray = grid[where] != values[present]
        if stray.any():
            raise ValueError(f"item {item!r} has answers {sorted(set(values[present][stray].tolist()))} that are not "
                             f"among the levels {list(levels)}")
        codes[present, j] = order[where]
    return codes


def _distinct_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of `codes` (whole numbers ≥ −1) in lexicographic order and how often each
    occurs: ``np.unique(codes, axis=0, return_counts=True)``, through one integer per row when the
    rows fit in 63 bits (ten times faster on 10⁵ rows: no sort of row records)."""
    base = int(codes.max(initial=-1)) + 2
    if codes.shape[1] * np.log2(max(base, 2)) > 62:
        return np.unique(codes, axis=0, return_counts=True)
    weights = base ** np.arange(codes.shape[1] - 1, -1, -1, dtype=np.int64)
    keys, first, counts = np.unique((codes.astype(np.int64) + 1) @ weights, return_index=True, return_counts=True)
    return codes[first], counts


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


def _item_curves(eta: np.ndarray, nodes: np.ndarray, order: int = 0) -> tuple[np.ndarray, ...]:
    """Category probabilities of every item at the nodes and, for order ≥ 1, their derivatives.

    `eta` is items × C: the slope a, then the intercepts d_1 > d_2 > … of the boundary curves
    P*_t(θ) = logistic(a θ + d_t), −inf past an item's last category (P*_t = 0 there: the category
    does not exist). Returns P(X = c | θ_q) (items × C × nodes); order 1 adds its derivatives in
    (a, d_1, …, d_{C−1}) (items × C × nodes × C), order 2 the second derivatives (… × C × C).
    With ψ_t = P*_t (1 − P*_t) = ∂P*_t/∂d_t and ω_t = ∂ψ_t/∂d_t = ψ_t (1 − 2 P*_t): P_c = P*_c − P*_{c+1},
    so d_t enters P_t with +ψ_t and P_{t−1} with −ψ_t, and a enters every curve as θ times d_t does.
    """
    n_items, width = eta.shape
    star = np.zeros((n_items, width + 1, len(nodes)))
    star[:, 0] = 1.0
    star[:, 1:width] = expit(eta[:, :1, None] * nodes + eta[:, 1:, None])
    prob = star[:, :-1] - star[:, 1:]
    if order == 0:
        return (prob,)
    psi = star * (1.0 - star)
    first = np.zeros((*prob.shape, width))
    first[..., 0] = nodes * (psi[:, :-1] - psi[:, 1:])
    for t in range(1, width):
        first[:, t, :, t] = psi[:, t]
        first[:, t - 1, :, t] = -psi[:, t]
    if order == 1:
        return prob, first
    omega = psi * (1.0 - 2.0 * star)
    second = np.zeros((*prob.shape, width, width))
    second[..., 0, 0] = nodes ** 2 * (omega[:, :-1] - omega[:, 1:])
    for t in range(1, width):
        for c, sign in ((t, 1.0), (t - 1, -1.0)):
            second[:, c, :, t, t] = sign * omega[:, t]
            second[:, c, :, 0, t] = second[:, c, :, t, 0] = sign * nodes * omega[:, t]
    return prob, first, second


class _Grm:
    """The marginal likelihood of a GRM over the distinct answer patterns of `codes` (0..m_j per item,
    −1 missing; each pattern weighted by how many respondents gave it), with θ ~ N(0, 1) on
    `points` Gauss–Hermite nodes: the E-step, the M-step and the Hessian.

    Parameters are an items × C array `eta` (C: the most categories of any item): the slope a_j, then
    the intercepts d_j1 > d_j2 > …, −inf past the item's own categories; `free` marks the entries
    that are parameters, in the order of the natural vector (per item a_j, d_j1, …, d_jm)."""

    def __init__(self, codes: np.ndarray, n_categories: list[int], points: int):
        patterns, counts = _distinct_rows(codes)
        self.patterns, self.counts = patterns, counts.astype(float)
        n_items, width = patterns.shape[1], max(n_categories)
        self.shape = (n_items, width)
        self.free = np.arange(width)[None, :] < np.asarray(n_categories)[:, None]
        nodes, weights = hermegauss(points)          # ∫ f(x) exp(−x²/2) dx: the N(0, 1) kernel
        self.nodes, self.log_w = nodes, np.log(weights / weights.sum())
        # One-hot answers, column j·C + c (a missing answer has none: it adds nothing); sparse, so an
        # E-step costs patterns × items × nodes.
        answered = patterns >= 0
        self.column = np.where(answered, np.arange(n_items) * width + patterns, -1)
        rows, cols = np.nonzero(answered)
        self.onehot = sparse.csr_matrix((np.ones(len(rows)), (rows, self.column[rows, cols])),
                                        shape=(len(patterns), n_items * width))
        self.onehot_t = self.onehot.T.tocsr()
        self.answer_rows = [(j, c, rows) for j in range(n_items) for c in range(width)
                            if len(rows := np.flatnonzero(patterns[:, j] == c))]
        self._pairs: sparse.csr_matrix | None = None
        self.evaluations = 0                          # E-steps: each is one evaluation of the likelihood

    def start(self, natural: np.ndarray) -> np.ndarray:
        eta = np.full(self.shape, -np.inf)
        eta[self.free] = natural
        return eta

    def e_step(self, eta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """The log-likelihood, each pattern's posterior over the nodes (patterns × nodes) and the
        expected count r_jcq of answer c to item j at node q (items × C × nodes)."""
        self.evaluations += 1
        (prob,) = _item_curves(eta, self.nodes)
        log_joint = self.onehot @ np.log(np.clip(prob, TINY, None)).reshape(-1, len(self.nodes)) + self.log_w
        top = log_joint.max(axis=1, keepdims=True)          # log-sum-exp by hand: it reuses the exp
        posterior = np.exp(log_joint - top)
        total = posterior.sum(axis=1, keepdims=True)
        posterior /= total
        log_lik = float(self.counts @ (top[:, 0] + np.log(total[:, 0])))
        expected = (self.onehot_t @ (self.counts[:, None] * posterior)).reshape(*self.shape, -1)
        return log_lik, posterior, expected

    def complete(self, eta: np.ndarray, expected: np.ndarray, order: int = 0) -> tuple[np.ndarray, ...]:
        """Per item, Σ_cq r_jcq log P_jc(θ_q) (the M-step's objective); order 1 adds its gradient
        (items × C; at the E-step's own eta it is the gradient of the marginal log-likelihood, by
        Fisher's identity), order 2 its Hessian (items × C × C), and the curves."""
        curves = _item_curves(eta, self.nodes, order)
        prob = np.clip(curves[0], TINY, None)
        value = np.sum(expected * np.log(prob), axis=(1, 2))
        if order == 0:
            return (value,)
        ratio = expected / prob
        grad = np.einsum("jcq,jcqd->jd", ratio, curves[1])
        if order == 1:
            return value, grad
        hess = (np.einsum("jcq,jcqde->jde", ratio, curves[2])
                - np.einsum("jcqd,jcqe->jde", (ratio / prob)[..., None] * curves[1], curves[1]))
        return value, grad, hess, curves

    def ordered(self, eta: np.ndarray) -> np.ndarray:
        """Per item: are its intercepts strictly decreasing (every category has room)?"""
        d = eta[:, 1:]
        return np.all((d[:, :-1] > d[:, 1:]) | ~self.free[:, 2:], axis=1)

    def m_step(self, eta: np.ndarray, expected: np.ndarray) -> np.ndarray:
        """One Newton step on each item's expected complete-data log-likelihood, all items at once.
        It is a cumulative logit model of the answers on the nodes, concave in (a, d), so the step
        goes uphill; it is halved where it would lower the objective or disorder the intercepts. A
        step that raises the objective is all EM needs (a generalised EM: the likelihood never falls)."""
        padding = np.where(self.free, 0.0, 1.0)[:, :, None] * np.eye(self.shape[1])   # −inf entries stay put
        value, grad, hess, _ = self.complete(eta, expected, order=2)
        step = -np.linalg.solve(hess - padding, np.where(self.free, grad, 0.0)[..., None])[..., 0]
        step = np.where(self.free, step, 0.0)
        size = np.ones(len(eta))
        for _ in range(MAX_HALVINGS):
            trial = eta + size[:, None] * step
            better = self.ordered(trial) & (self.complete(trial, expected)[0] >= value)
            if better.all():
                break
            size = np.where(better, size, size / 2)
        return np.where(better[:, None], trial, eta)

    def gradient(self, eta: np.ndarray, expected: np.ndarray) -> np.ndarray:
        """∂ log L / ∂ natural parameters (Fisher's identity: r from the E-step at `eta`)."""
        return self.complete(eta, expected, order=1)[1][self.free]

    def pairs(self) -> sparse.csr_matrix:
        """Which pairs of answers to two different items each pattern holds: row
        (j·C + c)·(items·C) + k·C + e for item j < item k, both answered; column the pattern."""
        if self._pairs is None:
            width = self.onehot.shape[1]
            n_items = self.shape[0]
            upper = np.triu(np.ones((n_items, n_items), dtype=bool), k=1)[None]
            both = (self.column[:, :, None] >= 0) & (self.column[:, None, :] >= 0) & upper
            rows = self.column[:, :, None] * width + self.column[:, None, :]
            pattern = np.broadcast_to(np.arange(len(self.patterns))[:, None, None], rows.shape)
            self._pairs = sparse.csr_matrix((np.ones(int(both.sum())), (rows[both], pattern[both])),
                                            shape=(width * width, len(self.patterns)))
        return self._pairs

    def hessian(self, eta: np.ndarray, posterior: np.ndarray, expected: np.ndarray) -> np.ndarray:
        """Hessian of the marginal log-likelihood in the natural parameters, analytic (Louis 1982):
        with s_pq the score of pattern p's answers at node q and h_pq its posterior,
        Σ_p n_p [Σ_q h_pq (∂s_pq + s_pq s_pqᵀ) − s̄_p s̄_pᵀ], s̄_p = Σ_q h_pq s_pq. The first part is the
        complete-data Hessian (per item); s_pq s_pqᵀ sums the scores of pairs of answers, so it needs
        only the expected count of each pair of answers at each node."""
        n_items, width = self.shape
        _, _, hess, (prob, first, _) = self.complete(eta, expected, order=2)
        score = first / np.clip(prob, TINY, None)[..., None]          # ∂ log P_jc(θ_q): items × C × nodes × C
        # expected count of each pair of answers at each node: items j < k from the pairs, j > k by
        # symmetry, j = k the answer's own count (one answer per item)
        upper = (self.pairs() @ (self.counts[:, None] * posterior)).reshape(n_items, width, n_items, width, -1)
        pair = upper + upper.transpose(2, 3, 0, 1, 4)
        item, category = np.arange(n_items)[:, None], np.arange(width)[None, :]
        pair[item, category, item, category] = expected
        outer = np.einsum("icjeq,icqd,jeqf->idjf", pair, score, score,
                          optimize=True).reshape(n_items * width, n_items * width)
        mean = np.zeros((len(posterior), n_items, width))              # s̄_p, item by item
        for j, c, rows in self.answer_rows:
            mean[rows, j] = posterior[rows] @ score[j, c]
        mean = mean.reshape(len(posterior), -1)
        total = outer - mean.T @ (self.counts[:, None] * mean)
        for j in range(n_items):
            total[j * width:(j + 1) * width, j * width:(j + 1) * width] += hess[j]
        keep = self.free.ravel()
        return total[np.ix_(keep, keep)]


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


@dataclass
class _Estimate:
    """Where the maximisation stopped: the estimate, its log-likelihood, gradient and Hessian (natural
    parameters; None when it was stopped early), the iterations, and why it was stopped early (the
    note; "" when it was not)."""
    eta: np.ndarray
    log_lik: float
    gradient: np.ndarray | None = None
    hessian: np.ndarray | None = None
    em_iterations: int = 0
    newton_iterations: int = 0
    stopped: str = ""


def _ran_off(eta: np.ndarray) -> bool:
    return bool(np.max(np.abs(eta[:, 0])) > MAX_ABS_ESTIMATE)


def _collapsed(eta: np.ndarray) -> bool:
    return bool(np.sum(np.abs(eta[:, 0]) >= MIN_SLOPE) < MIN_ITEMS)


def _maximise(model: _Grm, eta: np.ndarray, n_respondents: int) -> _Estimate:
    """Maximum marginal likelihood from `eta`: EM (Bock & Aitkin 1981) while an iteration gains at least
    EM_GAIN per respondent, then Newton–Raphson on the marginal likelihood with its analytic Hessian
    (EM's linear convergence is slow near the maximum; Newton's quadratic one is not, and the
    Hessian is needed for the standard errors anyway) until max |gradient| < NEWTON_TOLERANCE.

    Stops early, with the note, when the model is not identified: a slope past MAX_ABS_ESTIMATE (the
    latent variable collapsing onto one item, a Heywood case or near-perfect separation: the slope
    would run on for ever), or fewer than MIN_ITEMS slopes of at least MIN_SLOPE once EM stops
    gaining (the slopes collapsing towards 0, as in noise-like answers: Newton would crawl along a
    flat ridge towards one of those Heywood cases)."""
    log_lik, posterior, expected = model.e_step(eta)
    em = 0
    while em < MAX_EM_ITERATIONS:
        eta = model.m_step(eta, expected)
        em += 1
        if _ran_off(eta):
            return _Estimate(eta, log_lik, em_iterations=em, stopped=RAN_OFF)
        previous, (log_lik, posterior, expected) = log_lik, model.e_step(eta)
        if log_lik - previous < EM_GAIN * n_respondents:
            break
    if _collapsed(eta):
        return _Estimate(eta, log_lik, em_iterations=em, stopped=COLLAPSED)
    newton = 0
    while True:
        gradient = model.gradient(eta, expected)
        hessian = model.hessian(eta, posterior, expected)
        if (np.max(np.abs(gradient)) < NEWTON_TOLERANCE or newton == MAX_NEWTON_ITERATIONS
                or not np.all(np.isfinite(hessian))):
            break
        step = _ascent_step(hessian, gradient)
        for _ in range(MAX_HALVINGS):
            trial = eta.copy()
            trial[model.free] += step
            if model.ordered(trial).all():
                new = model.e_step(trial)
                if new[0] >= log_lik - ROUNDING * abs(log_lik):
                    break
            step = step / 2
        else:
            break                               # no step gains: at the maximum to numerical precision
        newton += 1
        eta, (log_lik, posterior, expected) = trial, new
        if _ran_off(eta):
            return _Estimate(eta, log_lik, em_iterations=em, newton_iterations=newton, stopped=RAN_OFF)
    return _Estimate(eta, log_lik, gradient, hessian, em, newton)


def _ascent_step(hessian: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """The Newton step −H⁻¹ g; where −H is not positive definite (away from the maximum) it is
    damped, −H + λI with λ lifting the smallest eigenvalue above a floor (Levenberg–Marquardt), so
    that the step still goes uphill."""
    info = -hessian
    floor = 1e-6 * max(1.0, float(np.max(np.abs(np.diag(info)))))
    lowest = float(np.linalg.eigvalsh(info)[0])
    damping = 0.0 if lowest > floor else floor - lowest
    return np.linalg.solve(info + damping * np.eye(len(info)), gradient)


def graded_response_model(data: pd.DataFrame, items: Sequence[str], levels: Sequence[float], *,
                          quadrature_points: int = QUADRATURE_POINTS) -> pd.DataFrame:
    """Unidimensional graded response model (Samejima 1969) of keyed `items`, by marginal maximum
    likelihood: θ ~ N(0, 1) integrated out with `quadrature_points` Gauss–Hermite nodes.

    Fitted as mirt fits it, over the distinct answer patterns (each counted once, with how many gave
    it): EM (Bock & Aitkin 1981; the E-step over patterns × nodes, the M-step a Newton step on each
    item's expected complete-data likelihood, all items at once) from a = 1 and the observed
    cumulative proportions, until an iteration gains less than 1e-4 per respondent; then
    Newton–Raphson on the marginal likelihood with its analytic Hessian (Louis 1982; steps halved to
    keep the intercepts ordered and the likelihood rising) to max |gradient| < 1e-6. Converged when
    max |gradient| < 1e-2 (``attrs["converged"]``, ``attrs["max_abs_gradient"]``). Standard errors
    from the inverse observed information (that Hessian; thresholds by the delta method from the
    slope–intercept form). Same estimates and log-likelihood as mirt (PyPI 1.2.0, EM, tolerance 1e-6,
    the same nodes) on the shipped people's IRI subscales (tests/test_irt_em.py).

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
    A model that is not identified is told early, without maximising on: a slope beyond 10 while
    fitting (the latent variable collapsing onto one item: the estimate ran off), or fewer than 3
    items with |a| ≥ 0.25 once EM stops gaining (the slopes collapsed towards 0: the items share
    no common factor, as in noise-like answers); every item is then not estimable, with the reason.

    Returns one row per item: ``item, discrimination, threshold_1 … threshold_{K−1},
    se_discrimination, se_threshold_1 …, n`` (respondents who answered it), ``estimable, note``;
    ``frame.attrs`` has ``log_likelihood, n_respondents, n_with_missing, n_dropped_empty,
    quadrature, quadrature_points, converged, max_abs_gradient, levels``, and ``method,
    em_iterations, newton_iterations, likelihood_evaluations`` (E-steps) for models that were fitted.

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
    codes = category_codes(data, items, levels)
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
             "n_dropped_empty": int(empty.sum()), "quadrature": "Gauss–Hermite, θ ~ N(0, 1)",
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
    # The matrices are small: BLAS threads cost more than they save (10× on a busy two-core machine).
    with threadpool_limits(limits=1, user_api="blas"), np.errstate(over="ignore", under="ignore", divide="ignore",
                                                                   invalid="ignore"):
        model = _Grm(x, n_categories, quadrature_points)
        fit = _maximise(model, model.start(_start_values(x, n_categories)), len(x))
        attrs.update(method="EM (Bock–Aitkin) then Newton–Raphson", em_iterations=fit.em_iterations,
                     newton_iterations=fit.newton_iterations, likelihood_evaluations=model.evaluations)
        if fit.stopped:
            return finish(fit.stopped)
        max_grad = float(np.max(np.abs(fit.gradient)))
        attrs.update(log_likelihood=fit.log_lik, max_abs_gradient=max_grad, converged=bool(max_grad < MAX_ABS_GRADIENT))
        if not np.isfinite(fit.log_lik) or max_grad >= MAX_ABS_GRADIENT:
            return finish(f"not estimable: the marginal likelihood did not converge (max |gradient| {max_grad:.3g})")
        if _collapsed(fit.eta):
            return finish(COLLAPSED)
        info = -fit.hessian
        eigen = np.linalg.eigvalsh(info)
        if not np.all(np.isfinite(eigen)) or eigen.min() <= 1e-8 * max(1.0, eigen.max()):
            return finish("not estimable: the observed information is singular (parameters not identified)")
    cov = np.linalg.inv(info)
    offsets = np.concatenate([[0], np.cumsum(n_categories)])       # item i: a, d_1..d_m at offsets[i]..
    for i, j in enumerate(fitted):
        row, s = rows[items[j]], slice(offsets[i], offsets[i + 1])
        a, d = fit.eta[i, 0], fit.eta[i, 1:n_categories[i]]
        b = -d / a
        # delta method: b_t = −d_t / a, ∂b_t/∂a = d_t / a², ∂b_t/∂d_t = −1 / a
        jac = np.zeros((len(d), s.stop - s.start))
        jac[:, 0] = d / a ** 2
        jac[np.arange(len(d)), np.arange(1, len(d) + 1)] = -1.0 / a
        block = cov[s, s]
        se_b = np.sqrt(np.diag(jac @ block @ jac.T))
        if abs(a) > MAX_ABS_ESTIMATE or np.any(np.abs(b) > MAX_ABS_ESTIMATE):
            # |b| = |d / a| also runs off without separation: a flat slope and a rarely chosen category
            reason = RAN_OFF if abs(a) > MAX_ABS_ESTIMATE else (
                f"not estimable: a threshold beyond ±{MAX_ABS_ESTIMATE:g} with a slope of {a:.2f}: the item "
                f"barely relates to the others, or a category is almost never chosen")
            row["note"] = "; ".join(x for x in (row["note"], reason) if x)
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
