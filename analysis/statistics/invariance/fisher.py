"""Fisher scoring with lower bounds: the optimizer of every invariance estimator.

lavaan and Mplus move a factor model by (quasi-)Newton steps on the expected information; a
first-order method (L-BFGS-B) crawls on the ill-conditioned fits persona answers give (a factor
whose variance runs to 0, leaving its loadings without direction), where it needed tens of
thousands of evaluations. Each step here solves (H + μ·D)d = −g over the parameters not held at a
bound, with H the expected information of F (ML: 2Σ_g(N_g/N)Δ_g'W_gΔ_g; DWLS: the Gauss–Newton
matrix, the same form), D its diagonal (plus a small floor for directions the data do not
determine) and μ a Levenberg–Marquardt damping that shrinks after a step that lowers F and grows
until one does. H is computed afresh only when the set of free parameters changes, after a step
that needed more damping, or every REFRESH steps: in the slow tail of a fit at a boundary each
step then costs one evaluation of F instead of a new H. A parameter at its lower bound with the gradient pushing it further down stays
there (a Heywood case, which the estimators name). It stops when the largest such projected
gradient is below the tolerance, or when F has fallen by less than STALL (relative) over the last
REFRESH steps — on the ridge a factor whose variance runs to 0 leaves, Newton converges only
linearly, and the estimator then judges the gradient it reached — or reports that it did not
converge; never silently.

May import numpy only.

Checked through the fits it produces, not step by step: the minima it reaches equal lavaan's
published Holzinger & Swineford fit and per-group semopy fits (tests/test_invariance.py) and lavaan
0.6.14's ML, MLR and WLSMV fits of the Briganti IRI answers (tests/test_invariance_lavaan.py,
tests/test_invariance_ordinal.py); tests/test_invariance.py also checks that a fit that does not
converge gives no number.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

REFRESH = 8
STALL = 1e-10
# A fit whose discrepancy stalled is accepted when its largest projected gradient is below this:
# lavaan's own check of a converged fit (optim.dx.tol, on its objective F/2).
STALLED_GRADIENT = 2e-3


def accepted(result: Result, gradient: np.ndarray, tolerance: float) -> bool:
    """Whether an estimator takes a fit as converged: its projected `gradient` below `tolerance`, or,
    when F stalled on a ridge, below lavaan's STALLED_GRADIENT."""
    largest = float(np.max(np.abs(gradient), initial=0.0))
    return bool(np.all(np.isfinite(result.theta))) and (largest < tolerance or
                                                         (result.stalled and largest < STALLED_GRADIENT))


@dataclass
class Result:
    theta: np.ndarray
    value: float
    gradient: np.ndarray
    at_bound: np.ndarray
    converged: bool
    iterations: int
    message: str
    stalled: bool = False      # F stopped falling (see STALL) before the gradient reached the tolerance


def projected(gradient: np.ndarray, theta: np.ndarray, lower: np.ndarray, slack: np.ndarray,
              ties: Sequence[tuple[int, np.ndarray]] = ()) -> tuple[np.ndarray, np.ndarray]:
    """The gradient with the parameters held at their bound removed (KKT), and which those are; a
    variance at its bound also holds its `ties` (its factor's covariances) at 0."""
    at_bound = theta <= lower + slack
    held = at_bound & (gradient > 0)
    for variance, covariances in ties:
        if at_bound[variance]:
            held[covariances] = True
    return np.where(held, 0.0, gradient), at_bound


def minimise(value_gradient: Callable[[np.ndarray], tuple[float, np.ndarray]],
             information: Callable[[np.ndarray], np.ndarray], start: np.ndarray, lower: np.ndarray, *,
             slack: np.ndarray, tolerance: float, max_iterations: int = 1000,
             ties: Sequence[tuple[int, np.ndarray]] = (),
             ran_off: Callable[[np.ndarray], str] | None = None) -> Result:
    """Minimise F from `start` subject to θ ≥ `lower` (−inf: free); `slack` is how close to its bound
    a parameter counts as held there. `ties` pairs a factor variance with its covariances: while the
    variance is at its bound (≈ 0) they are held at 0, as a factor without variance covaries with
    nothing (otherwise Φ is not positive semi-definite and the fit crawls along that impossible ridge).
    `ran_off`, when given, is asked about every accepted estimate from step REFRESH on: a reason
    ("" for none) ends the fit there, not converged, with that reason as its message — an estimate
    heading for infinity (a loading on a factor its marker does not measure) would otherwise crawl
    on to the iteration limit and end not converged all the same.

    Example
    -------
    A quadratic with its minimum below the bound of its first parameter:

    >>> f = lambda t: (float((t[0] + 1) ** 2 + (t[1] - 2) ** 2), np.array([2 * (t[0] + 1), 2 * (t[1] - 2)]))
    >>> r = minimise(f, lambda t: 2 * np.eye(2), np.array([3.0, 0.0]), np.array([0.0, -np.inf]),
    ...              slack=np.array([1e-9, 0.0]), tolerance=1e-10)
    >>> r.theta.round(6).tolist(), r.converged, r.at_bound.tolist()
    ([0.0, 2.0], True, [True, False])
    """
    theta = np.maximum(start, lower)
    value, gradient = value_gradient(theta)
    damping = 1e-3
    kept: tuple[np.ndarray, np.ndarray] | None = None       # (free set, its H) while H is reused
    age = 0
    history = [value]
    for iteration in range(1, max_iterations + 1):
        step_gradient, at_bound = projected(gradient, theta, lower, slack, ties)
        if float(np.max(np.abs(step_gradient), initial=0.0)) < tolerance:
            return Result(theta, value, gradient, at_bound, True, iteration - 1, "converged")
        held = at_bound & (gradient > 0)
        for variance, covariances in ties:
            if at_bound[variance]:
                held[covariances] = True
        free = ~held
        for variance, covariances in ties:
            if at_bound[variance] and np.any(theta[covariances] != 0):
                theta = theta.copy()
                theta[covariances] = 0.0
                value, gradient = value_gradient(theta)
                kept = None                       # the free set changed: a fresh H
        if kept is None or not np.array_equal(kept[0], free) or age >= REFRESH:
            kept, age = (free, information(theta)[np.ix_(free, free)]), 0
        hessian = kept[1]
        age += 1
        diagonal = np.diag(hessian).copy()
        floor = 1e-8 * max(float(np.mean(np.abs(diagonal))), 1e-12)
        while True:
            system = hessian + np.diag(damping * np.maximum(diagonal, floor) + floor)
            try:
                step = -np.linalg.solve(system, gradient[free])
            except np.linalg.LinAlgError:
                step = -np.linalg.lstsq(system, gradient[free], rcond=None)[0]
            candidate = theta.copy()
            candidate[free] += step
            candidate = np.maximum(candidate, lower)
            new_value, new_gradient = value_gradient(candidate)
            if np.isfinite(new_value) and new_value <= value:
                unchanged = value - new_value <= 1e-15 * max(1.0, abs(value))
                theta, value, gradient = candidate, new_value, new_gradient
                damping = max(damping / 4, 1e-12)
                break
            damping *= 8
            age = REFRESH                      # a step that needed more damping: a fresh H next time
            if damping > 1e12:
                return Result(theta, value, gradient, at_bound, False, iteration,
                              "no step lowers the discrepancy (the damping ran out)")
        history.append(value)
        if ran_off is not None and iteration >= REFRESH and (reason := ran_off(theta)):
            return Result(theta, value, gradient, projected(gradient, theta, lower, slack, ties)[1], False, iteration,
                          reason)
        stalled = len(history) > REFRESH and history[-REFRESH - 1] - value <= STALL * max(1.0, abs(value))
        if unchanged or stalled:
            step_gradient, at_bound = projected(gradient, theta, lower, slack, ties)
            converged = float(np.max(np.abs(step_gradient), initial=0.0)) < tolerance
            return Result(theta, value, gradient, at_bound, converged, iteration,
                          "converged" if converged else "the discrepancy stopped falling before the gradient vanished",
                          stalled=not converged)
    step_gradient, at_bound = projected(gradient, theta, lower, slack, ties)
    return Result(theta, value, gradient, at_bound, False, max_iterations,
                  f"the iteration limit ({max_iterations}) was reached")
