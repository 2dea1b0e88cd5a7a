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

from psyq.analysis.statistics.invariance.continuous import (Fit, Sample, Structure, loadings_ran_off, marker_start,
                                                            threadpool_limits)
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

    def _jacobian_entries(self, theta_split: np.ndarray, layout: Layout, g: int
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Δ_g = ∂σ_g/∂θ over the split vector, analytically, as its nonzero entries (rows, split
        places, values; a place may repeat, its values then add). With C = ΛΦΛ', m = ν + Λα and simple
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
        common = lam @ phi @ lam.T
        both = scales[i] * scales[j]
        phi_ij = phi[factor_of[i], factor_of[j]]
        high, low = np.maximum(factor_of[i], factor_of[j]), np.minimum(factor_of[i], factor_of[j])
        parts = (("thresholds", rows_t, np.arange(n_thresholds), scales[item]),
                 ("intercepts", rows_t, item, -scales[item]),
                 ("scales", rows_t, item, tau - location[item]),
                 ("loadings", rows_t, item, -scales[item] * alpha[factor_of[item]]),
                 ("factor_means", rows_t, factor_of[item], -scales[item] * loading[item]),
                 ("scales", rows_r, i, scales[j] * common[i, j]),
                 ("scales", rows_r, j, scales[i] * common[i, j]),
                 ("loadings", rows_r, i, both * phi_ij * loading[j]),
                 ("loadings", rows_r, j, both * phi_ij * loading[i]),
                 ("factor_cov", rows_r, high * (high + 1) // 2 + low, both * loading[i] * loading[j]))
        rows, places, values = [], [], []
        for kind, kind_rows, elements, kind_values in parts:
            where = layout.split[kind][g][elements]
            keep = where >= 0
            rows.append(kind_rows[keep])
            places.append(where[keep])
            values.append(kind_values[keep])
        return np.concatenate(rows), np.concatenate(places), np.concatenate(values)

    def _jacobian(self, theta_split: np.ndarray, layout: Layout, g: int) -> np.ndarray:
        """Δ_g = ∂σ_g/∂θ over the split vector, analytically (:meth:`_jacobian_entries`, dense)."""
        rows, places, values = self._jacobian_entries(theta_split, layout, g)
        jac = np.zeros((len(self._threshold_item) + len(self.pairs), layout.n_split))
        np.add.at(jac, (rows, places), values)
        return jac

    def _jacobians(self, theta_split: np.ndarray, layout: Layout) -> list[np.ndarray]:
        return [self._jacobian(theta_split, layout, g) for g in range(len(self.samples))]

    def _residual_jacobian(self, theta: np.ndarray, layout: Layout) -> np.ndarray:
        """∂e/∂θ over the reduced vector, e the weighted residuals of :meth:`_residuals`: Δ_g's entries
        summed straight onto the reduced places (a place pinned at 0 has none) and scaled by row."""
        theta_split = layout.expand(theta)
        n_rows = len(self._threshold_item) + len(self.pairs)
        blocks = []
        for g, (weight, w) in enumerate(zip(self.weight_diag, self.fit_weights)):
            rows, places, values = self._jacobian_entries(theta_split, layout, g)
            reduced = layout.reduced_of[places]
            keep = reduced >= 0
            flat = np.bincount(rows[keep] * layout.n_reduced + reduced[keep], values[keep],
                               minlength=n_rows * layout.n_reduced)
            blocks.append(-np.sqrt(w * weight)[:, None] * flat.reshape(n_rows, layout.n_reduced))
        return np.vstack(blocks)

    def _gradient(self, theta: np.ndarray, layout: Layout, residuals: np.ndarray) -> np.ndarray:
        """∂F/∂θ = 2 (∂e/∂θ)' e over the reduced vector, without forming ∂e/∂θ: each entry of Δ_g times
        its row's weighted residual, summed onto its reduced place."""
        theta_split = layout.expand(theta)
        n_rows = len(self._threshold_item) + len(self.pairs)
        gradient = np.zeros(layout.n_reduced)
        for g, (weight, w) in enumerate(zip(self.weight_diag, self.fit_weights)):
            e = residuals[g * n_rows:(g + 1) * n_rows]
            rows, places, values = self._jacobian_entries(theta_split, layout, g)
            reduced = layout.reduced_of[places]
            keep = reduced >= 0
            scaled = -np.sqrt(w * weight) * e
            gradient += np.bincount(reduced[keep], values[keep] * scaled[rows[keep]], minlength=layout.n_reduced)
        return 2.0 * gradient

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
            return float(residuals @ residuals), self._gradient(theta, layout, residuals)

        def information(theta: np.ndarray) -> np.ndarray:      # Gauss–Newton: F's Hessian but for e's curvature
            jac = self._residual_jacobian(theta, layout)
            return 2.0 * jac.T @ jac

        slack = np.where(np.isfinite(lower), 1e-6, 0.0)
        with threadpool_limits(1):
            result = fisher.minimise(value_gradient, information, start, lower, slack=slack,
                                     tolerance=GRADIENT_TOLERANCE * 1e-3, ties=layout.variance_ties(self.structure.m),
                                     ran_off=loadings_ran_off(layout, self.structure, self.items,
                                                              [s.label for s in self.samples], np.ones(self.structure.p)))
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
    def _stacked(self, result: Fit) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """Δ (stacked, over the reduced vector), the diagonal of V and the blocks of Ω at a fit."""
        delta = np.vstack([result.layout.fold_columns(d) for d in self._jacobians(result.theta_split, result.layout)])
        return delta, self._v, self._omega

    @cached_property
    def _v(self) -> np.ndarray:
        """The diagonal of V = blockdiag((N_g/N)·W_g): the groups' weights in F (W_g is diagonal)."""
        return np.concatenate([w * weight for w, weight in zip(self.weights, self.weight_diag)])

    @cached_property
    def _omega(self) -> list[np.ndarray]:
        """The blocks of Ω = blockdiag(Γ_g·N/N_g): the asymptotic covariance of the stacked sample
        statistics, times N."""
        return [m.gamma / w for m, w in zip(self.moments, self.weights)]

    @staticmethod
    def _omega_times(omega: list[np.ndarray], x: np.ndarray) -> np.ndarray:
        """Ω·x, block by block."""
        out, at = np.empty_like(x), 0
        for block in omega:
            out[at:at + len(block)] = block @ x[at:at + len(block)]
            at += len(block)
        return out

    @staticmethod
    def _adjust(delta: np.ndarray, v: np.ndarray, omega: list[np.ndarray], df: int) -> tuple[float, float]:
        """(1/a, b) of the mean- and variance-adjusted statistic a·T + b: a = sqrt(df/tr((UΩ)²)),
        b = df − a·tr(UΩ), U = V − VΔE⁻¹Δ'V, E = Δ'VΔ. With V diagonal and Ω block-diagonal the
        traces are taken without forming U (A = VΔ, M = A'ΩA): tr(UΩ) = tr(VΩ) − tr(E⁻¹M),
        tr((UΩ)²) = tr((VΩ)²) − 2 tr(E⁻¹(ΩA)'V(ΩA)) + tr((E⁻¹M)²)."""
        trace, trace2, at = 0.0, 0.0, 0
        for block in omega:                     # tr(VΩ) and tr((VΩ)²), block by block
            weighted = v[at:at + len(block), None] * block
            trace += float(np.trace(weighted))
            trace2 += float(np.sum(weighted * weighted.T))
            at += len(block)
        if delta.shape[1]:
            a_matrix = v[:, None] * delta
            information = delta.T @ a_matrix
            omega_a = OrdinalModel._omega_times(omega, a_matrix)
            e_inv_m = np.linalg.solve(information, a_matrix.T @ omega_a)
            trace -= float(np.trace(e_inv_m))
            trace2 += (-2.0 * float(np.trace(np.linalg.solve(information, omega_a.T @ (v[:, None] * omega_a))))
                       + float(np.sum(e_inv_m * e_inv_m.T)))
        a = np.sqrt(df / trace2)
        return 1.0 / a, df - a * trace

    def scaling(self, result: Fit, df: int) -> tuple[float, float]:
        with threadpool_limits(1):
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
        with threadpool_limits(1):
            scaling, shift = self._adjust(delta, self._v, self._omega, df)
        return {"chi2": chi2, "df": df, "scaling": scaling, "shift": shift}

    def difference_test(self, less: Fit, more: Fit, m: int) -> float:
        """Satorra's (2000) scaled and shifted difference of two nested fits (`more` restricted), as
        lavaan's ``lavTestLRT``: A spans what the restricted model's Δ cannot reach in the other's."""
        with threadpool_limits(1):
            delta1, v, omega = self._stacked(less)
            delta0, _, _ = self._stacked(more)
            h = np.linalg.pinv(delta1) @ delta0
            a_matrix = linalg.null_space(h.T).T
            weighted = v[:, None] * delta1                                   # VΔ₁
            information_inv = np.linalg.inv(delta1.T @ weighted)
            middle = a_matrix @ information_inv @ a_matrix.T
            paapaap = information_inv @ a_matrix.T @ np.linalg.pinv(middle) @ a_matrix @ information_inv
            k_all = weighted.T @ self._omega_times(omega, weighted)         # Δ₁'VΩVΔ₁
            mk = paapaap @ k_all
            trace, trace2 = float(np.trace(mk)), float(np.sum(mk * mk.T))
        a = np.sqrt(m / trace2)
        return (more.chi2 - less.chi2) * a + (m - a * trace)

    def vcov(self, result: Fit) -> np.ndarray:
        with threadpool_limits(1):
            delta, v, omega = self._stacked(result)
            weighted = v[:, None] * delta
            information_inv = np.linalg.inv(delta.T @ weighted)
            return information_inv @ (weighted.T @ self._omega_times(omega, weighted)) @ information_inv / self.n

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
