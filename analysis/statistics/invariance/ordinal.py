"""The factor model for ordinal items: WLSMV on thresholds and polychoric correlations, delta parameterisation.

Each item is a cut latent response y* = ν + Λη + ε (Muthén, 1984). Per group g the sample statistics
are the thresholds and polychoric correlations with Γ_g, N_g times their asymptotic covariance
(:func:`psyq.analysis.statistics.polychoric.ordinal_moments`, lavaan's two-step). The model implies,
with Δ = diag(scales) (lavaan's delta parameterisation: y*'s total variance is 1/δ²):
correlations ρ_ij = δ_iδ_j(ΛΦΛ')_ij and thresholds τ*_ik = δ_i(τ_ik − ν_i − (Λα)_i). Parameter kinds
of :class:`~.layout.Layout`: ``thresholds`` (every item's, item by item), ``loadings`` (markers 1),
``factor_cov``, ``intercepts`` (ν, default 0), ``factor_means`` (α, default 0), ``scales`` (δ, default 1).

The steps of Wu & Estabrook (2016), as semTools' ``measEq.syntax(ID.cat = "Wu.Estabrook.2016")``:
configural (thresholds free per group; ν = 0, δ = 1, α = 0 everywhere); thresholds equal (ν and δ
free in the other groups); loadings equal too; intercepts equal too (ν back to 0 everywhere — pinned,
so that a score test can release one — and α free in the other groups). Marker identification
(first loading 1, factor variances free) gives the same fits as semTools' std.lv.

DWLS (lavaan's ``estimator = "WLSMV"``): F = Σ_g (N_g/N)(s_g − σ_g)'W_g(s_g − σ_g), W_g = diag(Γ_g)⁻¹,
χ² = N·F, minimised by Gauss–Newton steps (:mod:`.fisher`). With Δ_g the Jacobian of
σ_g, V = blockdiag((N_g/N)W_g), E = Δ'VΔ, U = V − VΔE⁻¹Δ'V and Ω = blockdiag(Γ_g·N/N_g): the
mean- and variance-adjusted statistic (Asparouhov & Muthén, 2010; lavaan's ``scaled.shifted``) is
a·χ² + b with a = sqrt(df/tr(UΩUΩ)), b = df − a·tr(UΩ); robust standard errors E⁻¹(Δ'VΩVΔ)E⁻¹/N; the
difference of two nested fits by Satorra (2000) as lavaan's ``lavTestLRT`` (method "satorra.2000",
scaled and shifted).

May import numpy, scipy, psyq.analysis.statistics.polychoric and the siblings :mod:`.layout`,
:mod:`.continuous` (the :class:`~.continuous.Fit` and :class:`~.continuous.Sample` records).

Checked in tests/test_invariance_ordinal.py against lavaan 0.6.14 / semTools 0.5.6
(``measEq.syntax(..., ID.cat = "Wu.Estabrook.2016", estimator = "WLSMV")`` on the Briganti IRI
answers by gender, stored output of tests/data/lavaan/invariance.R): the WLSMV steps, Satorra (2000)
differences as ``lavTestLRT`` and the latent mean; the analytic Jacobian against the numerical
derivative; planted non-invariant parameters in simulated answers released exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np
from scipy import linalg

from psyq.analysis.statistics.invariance.continuous import Fit, Sample, Structure, marker_start, threadpool_limits
from psyq.analysis.statistics.invariance import fisher
from psyq.analysis.statistics.invariance.layout import Layout
from psyq.analysis.statistics.polychoric import NotEstimable, ordinal_moments

# Factor variances and scales stay above this (a scale of 0 would remove the item).
POSITIVE_FLOOR = 1e-6
# The optimizer's answer is accepted when the largest gradient of F is below this.
GRADIENT_TOLERANCE = 1e-5


class OrdinalModel:
    """The groups' ordinal answers and the factor structure, fitted by WLSMV.

    Raises :class:`~psyq.analysis.statistics.polychoric.NotEstimable` when a group's thresholds or
    polychoric correlations cannot be estimated (an empty category in one group, a constant item),
    with the group named.
    """

    estimator = "WLSMV"

    def __init__(self, samples: Sequence[Sample], structure: Structure, items: Sequence[str],
                 factor_names: Sequence[str]):
        self.samples, self.structure = list(samples), structure
        self.items, self.factor_names = list(items), list(factor_names)
        self.n = sum(s.n for s in samples)
        self.weights = np.array([s.n / self.n for s in samples])
        # lavaan's DWLS statistic for ordinal items is Σ_g (N_g − 1)·F_g, and the fit minimises it: the
        # groups weigh (N_g − 1)/N in F (found by evaluating F at lavaan's estimates: 135.801 · 1134/1135 is
        # lavaan's 135.682 for the women's FS configural share). The robust corrections keep N_g/N.
        self.fit_weights = np.array([(s.n - 1) / self.n for s in samples])
        answers = np.vstack([s.values for s in samples])
        if not np.all(answers == np.round(answers)):
            raise NotEstimable("ordinal items need whole-number answers")
        levels = [np.unique(answers[:, j]) for j in range(structure.p)]
        self.n_categories = [len(v) for v in levels]
        self.moments = []
        for sample in samples:
            codes = np.column_stack([np.searchsorted(levels[j], sample.values[:, j]) for j in range(structure.p)])
            try:
                self.moments.append(ordinal_moments(codes.astype(int), self.n_categories, items))
            except NotEstimable as error:
                where = f"in group '{sample.label}'"
                if error.category is not None:     # the answer itself, not its position among the categories
                    j = list(items).index(error.item)
                    answer = f"{levels[j][error.category]:g}"
                    reason = (f"item {error.item}: nobody {where} answered {answer}, which others did, so no "
                              f"threshold can be placed there")
                else:
                    reason = str(error).replace("in this group", where)
                raise NotEstimable(reason if where in reason else f"{reason} ({where})") from error
        self._threshold_item = np.repeat(np.arange(structure.p), [k - 1 for k in self.n_categories])
        self._threshold_rank = np.concatenate([np.arange(k - 1) for k in self.n_categories])
        self.pairs = np.array(self.moments[0].pairs, dtype=int).reshape(-1, 2)
        self.observed = [m.wls_obs for m in self.moments]
        self.weight_diag = [1.0 / np.diag(m.gamma) for m in self.moments]

    # -- the layout -------------------------------------------------------------------------------
    def free(self, equal: Sequence[str]) -> dict[str, np.ndarray]:
        n_groups, p, m = len(self.samples), self.structure.p, self.structure.m
        others = np.zeros((n_groups, p), dtype=bool)
        if "thresholds" in equal:
            others[1:] = True
        means = np.zeros((n_groups, m), dtype=bool)
        if "intercepts" in equal:
            means[1:] = True
        return {"thresholds": np.ones((n_groups, len(self._threshold_item)), dtype=bool),
                "loadings": np.tile(~self.structure.marker, (n_groups, 1)),
                "factor_cov": np.ones((n_groups, m * (m + 1) // 2), dtype=bool),
                "intercepts": others.copy(), "scales": others.copy(), "factor_means": means}

    def pinned(self, equal: Sequence[str]) -> tuple[str, ...]:
        return ("intercepts",) if "intercepts" in equal else ()

    def threshold_of(self, element: int) -> tuple[int, int]:
        """(item, rank) of a threshold element."""
        return int(self._threshold_item[element]), int(self._threshold_rank[element])

    def n_moments(self) -> int:
        return sum(len(s) for s in self.observed)

    # -- the model --------------------------------------------------------------------------------
    def _parts(self, theta_split: np.ndarray, layout: Layout, g: int):
        p, m = self.structure.p, self.structure.m

        def take(kind: str, default: float) -> np.ndarray:
            places = layout.split[kind][g]
            return np.where(places >= 0, theta_split[np.maximum(places, 0)], default)

        lam = np.zeros((p, m))
        lam[np.arange(p), self.structure.factor_of] = take("loadings", 1.0)
        phi = np.zeros((m, m))
        rows, cols = np.tril_indices(m)
        phi[rows, cols] = take("factor_cov", 0.0)
        phi[cols, rows] = phi[rows, cols]
        return lam, phi, take("factor_means", 0.0), take("intercepts", 0.0), take("scales", 1.0), take("thresholds", 0.0)

    def implied(self, theta_split: np.ndarray, layout: Layout, g: int) -> np.ndarray:
        """Group g's implied thresholds and correlations, in the order of the sample statistics."""
        lam, phi, alpha, nu, scales, tau = self._parts(theta_split, layout, g)
        common = lam @ phi @ lam.T
        location = nu + lam @ alpha
        item = self._threshold_item
        thresholds = scales[item] * (tau - location[item])
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        return np.concatenate([thresholds, scales[i] * scales[j] * common[i, j]])

    def _residuals(self, theta: np.ndarray, layout: Layout) -> np.ndarray:
        theta_split = layout.expand(theta)
        return np.concatenate([np.sqrt(w * weight) * (s - self.implied(theta_split, layout, g))
                               for g, (s, weight, w) in enumerate(zip(self.observed, self.weight_diag,
                                                                      self.fit_weights))])

    def _jacobian(self, theta_split: np.ndarray, layout: Layout, g: int) -> np.ndarray:
        """Δ_g = ∂σ_g/∂θ over the split vector, analytically. With C = ΛΦΛ', m = ν + Λα and simple
        structure (item i on factor f_i): ∂τ*_ik/∂τ_ik = δ_i, ∂τ*_ik/∂ν_i = −δ_i, ∂τ*_ik/∂δ_i = τ_ik − m_i,
        ∂τ*_ik/∂λ_i = −δ_iα_{f_i}, ∂τ*_ik/∂α_{f_i} = −δ_iλ_i; ∂ρ_ij/∂δ_i = δ_jC_ij,
        ∂ρ_ij/∂λ_i = δ_iδ_jφ_{f_i f_j}λ_j, ∂ρ_ij/∂φ_{f_i f_j} = δ_iδ_jλ_iλ_j."""
        lam, phi, alpha, nu, scales, tau = self._parts(theta_split, layout, g)
        factor_of = self.structure.factor_of
        loading = lam[np.arange(self.structure.p), factor_of]
        location = nu + lam @ alpha
        item = self._threshold_item
        n_thresholds = len(item)
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        rows_t = np.arange(n_thresholds)
        rows_r = n_thresholds + np.arange(len(i))
        jac = np.zeros((n_thresholds + len(i), layout.n_split))

        def put(kind: str, rows: np.ndarray, elements: np.ndarray, values: np.ndarray) -> None:
            places = layout.split[kind][g][elements]
            keep = places >= 0
            np.add.at(jac, (rows[keep], places[keep]), values[keep])

        put("thresholds", rows_t, np.arange(n_thresholds), scales[item])
        put("intercepts", rows_t, item, -scales[item])
        put("scales", rows_t, item, tau - location[item])
        put("loadings", rows_t, item, -scales[item] * alpha[factor_of[item]])
        put("factor_means", rows_t, factor_of[item], -scales[item] * loading[item])
        common = lam @ phi @ lam.T
        put("scales", rows_r, i, scales[j] * common[i, j])
        put("scales", rows_r, j, scales[i] * common[i, j])
        both = scales[i] * scales[j]
        phi_ij = phi[factor_of[i], factor_of[j]]
        put("loadings", rows_r, i, both * phi_ij * loading[j])
        put("loadings", rows_r, j, both * phi_ij * loading[i])
        high, low = np.maximum(factor_of[i], factor_of[j]), np.minimum(factor_of[i], factor_of[j])
        put("factor_cov", rows_r, high * (high + 1) // 2 + low, both * loading[i] * loading[j])
        return jac

    def _jacobians(self, theta_split: np.ndarray, layout: Layout) -> list[np.ndarray]:
        return [self._jacobian(theta_split, layout, g) for g in range(len(self.samples))]

    def _residual_jacobian(self, theta: np.ndarray, layout: Layout) -> np.ndarray:
        theta_split = layout.expand(theta)
        return np.vstack([-np.sqrt(w * weight)[:, None] * layout.fold_columns(self._jacobian(theta_split, layout, g))
                          for g, (weight, w) in enumerate(zip(self.weight_diag, self.fit_weights))])

    def _start(self, layout: Layout) -> np.ndarray:
        """Start values: each group's sample thresholds, loadings and factor variances from its polychoric
        correlations (:func:`~.continuous.marker_start`), intercepts 0, scales 1, factor means 0."""
        m, p = self.structure.m, self.structure.p
        starts = []
        for moments in self.moments:
            lam, phi = marker_start(moments.correlations, self.structure, np.full(m, 0.05))
            starts.append({"thresholds": np.concatenate(moments.thresholds), "loadings": lam, "factor_cov": phi,
                           "intercepts": np.zeros(p), "scales": np.ones(p), "factor_means": np.zeros(m)})
        return layout.average(starts, [s.n for s in self.samples])

    def fit(self, layout: Layout, start: Fit | None = None) -> Fit:
        """Minimise the DWLS discrepancy of one layout."""
        lower = np.full(layout.n_reduced, -np.inf)
        diagonal = np.flatnonzero(np.equal(*np.tril_indices(self.structure.m)))
        for g in range(len(self.samples)):
            for places in (layout.reduced("factor_cov")[g][diagonal], layout.reduced("scales")[g]):
                lower[places[places >= 0]] = POSITIVE_FLOOR
        defaults = {"thresholds": 0.0, "loadings": 1.0, "factor_cov": 0.0, "intercepts": 0.0, "factor_means": 0.0,
                    "scales": 1.0}
        start = np.maximum(self._start(layout) if start is None else
                           layout.carried(start.layout, start.theta_split, defaults), lower + 1e-3)
        def value_gradient(theta: np.ndarray) -> tuple[float, np.ndarray]:
            residuals = self._residuals(theta, layout)
            return float(residuals @ residuals), 2.0 * self._residual_jacobian(theta, layout).T @ residuals

        def information(theta: np.ndarray) -> np.ndarray:      # Gauss–Newton: F's Hessian but for e's curvature
            jac = self._residual_jacobian(theta, layout)
            return 2.0 * jac.T @ jac

        slack = np.where(np.isfinite(lower), 1e-6, 0.0)
        with threadpool_limits(1):
            result = fisher.minimise(value_gradient, information, start, lower, slack=slack,
                                     tolerance=GRADIENT_TOLERANCE * 1e-3, ties=layout.variance_ties(self.structure.m))
        theta = result.theta
        projected, at_bound = fisher.projected(result.gradient, theta, lower, slack,
                                               layout.variance_ties(self.structure.m))
        converged = fisher.accepted(result, projected, GRADIENT_TOLERANCE)
        theta_split = layout.expand(theta)
        group_f = []
        for g, (s, weight) in enumerate(zip(self.observed, self.weight_diag)):
            e = s - self.implied(theta_split, layout, g)
            group_f.append(float(e @ (weight * e)))
        heywood = []
        for g, sample in enumerate(self.samples):
            lam, phi, _, _, scales, _ = self._parts(theta_split, layout, g)
            residual = 1.0 / scales ** 2 - np.diag(lam @ phi @ lam.T)
            heywood += [f"residual variance of {self.items[i]} in group '{sample.label}' is negative"
                        for i in np.flatnonzero(residual < 0)]
            heywood += [f"variance of factor {self.factor_names[f]} in group '{sample.label}'"
                        for f in range(self.structure.m) if at_bound[layout.reduced("factor_cov")[g][diagonal[f]]]]
        group_chi2 = [(s.n - 1) * f for s, f in zip(self.samples, group_f)]
        return Fit(layout, theta, float(sum(group_chi2)), group_chi2, heywood, converged,
                   f"{result.message} after {result.iterations} Gauss–Newton steps")

    # -- robust statistics ------------------------------------------------------------------------
    def _stacked(self, result: Fit) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Δ (stacked, over the reduced vector), V and Ω (block-diagonal) at a fit."""
        delta = np.vstack([result.layout.fold_columns(d) for d in self._jacobians(result.theta_split, result.layout)])
        return delta, self._v, self._omega

    @cached_property
    def _v(self) -> np.ndarray:
        """blockdiag((N_g/N)·W_g): the groups' weights in F."""
        return linalg.block_diag(*[w * np.diag(weight) for w, weight in zip(self.weights, self.weight_diag)])

    @cached_property
    def _omega(self) -> np.ndarray:
        """blockdiag(Γ_g·N/N_g): the asymptotic covariance of the stacked sample statistics, times N."""
        return linalg.block_diag(*[m.gamma / w for m, w in zip(self.moments, self.weights)])

    @staticmethod
    def _adjust(delta: np.ndarray, v: np.ndarray, omega: np.ndarray, df: int) -> tuple[float, float]:
        """(1/a, b) of the mean- and variance-adjusted statistic a·T + b."""
        information = delta.T @ v @ delta
        u = v - v @ delta @ np.linalg.solve(information, delta.T @ v) if delta.shape[1] else v
        u_omega = u @ omega
        trace, trace2 = float(np.trace(u_omega)), float(np.sum(u_omega * u_omega.T))
        a = np.sqrt(df / trace2)
        return 1.0 / a, df - a * trace

    def scaling(self, result: Fit, df: int) -> tuple[float, float]:
        return self._adjust(*self._stacked(result), df)

    def baseline(self) -> dict[str, float]:
        """The independence model: thresholds free per group (they fit exactly), correlations 0."""
        n_thresholds = len(self._threshold_item)
        chi2 = 0.0
        blocks = []
        for sample, s, weight in zip(self.samples, self.observed, self.weight_diag):
            r = s[n_thresholds:]
            chi2 += (sample.n - 1) * float(r @ (weight[n_thresholds:] * r))
            select = np.zeros((len(s), n_thresholds))
            select[np.arange(n_thresholds), np.arange(n_thresholds)] = 1.0
            blocks.append(select)
        delta = linalg.block_diag(*blocks)
        df = len(self.samples) * len(self.pairs)
        scaling, shift = self._adjust(delta, self._v, self._omega, df)
        return {"chi2": chi2, "df": df, "scaling": scaling, "shift": shift}

    def difference_test(self, less: Fit, more: Fit, m: int) -> float:
        """Satorra's (2000) scaled and shifted difference of two nested fits (`more` restricted), as
        lavaan's ``lavTestLRT``: A spans what the restricted model's Δ cannot reach in the other's."""
        delta1, v, omega = self._stacked(less)
        delta0, _, _ = self._stacked(more)
        h = np.linalg.pinv(delta1) @ delta0
        a_matrix = linalg.null_space(h.T).T
        information_inv = np.linalg.inv(delta1.T @ v @ delta1)
        middle = a_matrix @ information_inv @ a_matrix.T
        paapaap = information_inv @ a_matrix.T @ np.linalg.pinv(middle) @ a_matrix @ information_inv
        k_all = delta1.T @ v @ omega @ v @ delta1
        mk = paapaap @ k_all
        trace, trace2 = float(np.trace(mk)), float(np.sum(mk * mk.T))
        a = np.sqrt(m / trace2)
        return (more.chi2 - less.chi2) * a + (m - a * trace)

    def vcov(self, result: Fit) -> np.ndarray:
        delta, v, omega = self._stacked(result)
        information_inv = np.linalg.inv(delta.T @ v @ delta)
        return information_inv @ (delta.T @ v @ omega @ v @ delta) @ information_inv / self.n

    def srmr(self, result: Fit) -> float:
        """The root mean square of the correlation residuals, groups weighted by N_g/N (lavaan's srmr for
        categorical items: thresholds, which fit exactly or nearly, left out)."""
        n_thresholds = len(self._threshold_item)
        total = 0.0
        for g, s in enumerate(self.observed):
            e = (s - self.implied(result.theta_split, result.layout, g))[n_thresholds:]
            p = self.structure.p
            total += self.weights[g] * np.sqrt(np.sum(e ** 2) / (p * (p + 1) / 2))
        return float(total)

    def score_and_information(self, result: Fit) -> tuple[np.ndarray, np.ndarray]:
        """−½ ∂F/∂θ and the expected information Σ_g (N_g/N)Δ_g'W_gΔ_g over the split vector."""
        score = np.zeros(result.layout.n_split)
        information = np.zeros((result.layout.n_split, result.layout.n_split))
        for g, delta in enumerate(self._jacobians(result.theta_split, result.layout)):
            e = self.observed[g] - self.implied(result.theta_split, result.layout, g)
            weighted = delta.T * self.weight_diag[g]
            score += self.weights[g] * weighted @ e
            information += self.weights[g] * weighted @ delta
        return score, information

    def factor_variance(self, result: Fit, g: int, f: int) -> float:
        return float(self._parts(result.theta_split, result.layout, g)[1][f, f])
