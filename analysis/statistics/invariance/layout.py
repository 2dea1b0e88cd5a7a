"""Where each group's parameters sit in the parameter vector, and which are held equal across groups.

A multi-group model has, per group, arrays of parameters of a few kinds (loadings, intercepts,
thresholds, …). :class:`Layout` gives every free parameter of every group its own place in the
*split* vector — the model with nothing held equal — and maps the split vector onto the *reduced*
vector the optimizer moves, where a parameter held equal across groups (lavaan's ``group.equal``)
has one place for all groups. A parameter released from an equality (lavaan's ``group.partial``)
keeps a place per group. A *pinned* kind is held at its default (0) in every group where it is free
and not released: it has a split place, which a score test may release, but no reduced one (the
ordinal model's intercepts once thresholds and intercepts are equal: Wu & Estabrook, 2016). The
split vector and the constraints between its places are what a score test needs (lavaan's
``lavTestScore``).

May import numpy only.

Checked through the models built on it: the df and fit of every step equal lavaan 0.6.14's
(tests/test_invariance_lavaan.py, tests/test_invariance_ordinal.py), and releases built with
:class:`Layout` by hand in tests/test_invariance.py and tests/test_invariance_ordinal.py give the
parameters planted in simulated data.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class Layout:
    """Per kind, a (groups, elements) array of split-vector places (−1: fixed at the kind's default).

    ``reduced_of[k]`` is the reduced-vector place of split place k (−1: pinned at 0); ``origin[k]`` is
    its (kind, group, element).

    Example
    -------
    Two groups, two loadings, the first fixed, the second held equal:

    >>> free = {"loadings": np.array([[False, True], [False, True]])}
    >>> layout = Layout.build(free, equal={"loadings"})
    >>> layout.split["loadings"].tolist(), layout.reduced_of.tolist()
    ([[-1, 0], [-1, 1]], [0, 0])
    >>> layout.constraints()
    [('loadings', 1, 1)]
    """
    split: Mapping[str, np.ndarray]
    reduced_of: np.ndarray
    origin: tuple[tuple[str, int, int], ...]

    @classmethod
    def build(cls, free: Mapping[str, np.ndarray], equal: Collection[str] = (),
              released: Collection[tuple[str, int]] = (), pinned: Collection[str] = ()) -> Layout:
        """Number the free parameters group by group, kind by kind; a parameter of an `equal` kind that
        is free in every group and not `released` ((kind, element) pairs) shares group 1's reduced place;
        one of a `pinned` kind that is not released has none."""
        split, origin, reduced_of = {}, [], []
        shared: dict[tuple[str, int], int] = {}
        n_reduced = 0
        n_groups = len(next(iter(free.values())))
        for kind in free:
            split[kind] = np.full(free[kind].shape, -1, dtype=int)
        for g in range(n_groups):
            for kind, flags in free.items():
                for element in np.flatnonzero(flags[g]):
                    split[kind][g, element] = len(origin)
                    origin.append((kind, g, int(element)))
                    key = (kind, int(element))
                    if kind in pinned and key not in released:
                        reduced_of.append(-1)
                        continue
                    held = kind in equal and key not in released and bool(flags[:, element].all())
                    if held and key in shared:
                        reduced_of.append(shared[key])
                        continue
                    if held:
                        shared[key] = n_reduced
                    reduced_of.append(n_reduced)
                    n_reduced += 1
        return cls(split, np.array(reduced_of, dtype=int), tuple(origin))

    @property
    def n_split(self) -> int:
        return len(self.reduced_of)

    @property
    def n_reduced(self) -> int:
        return int(self.reduced_of.max()) + 1 if len(self.reduced_of) else 0

    def reduced(self, kind: str) -> np.ndarray:
        """The kind's (groups, elements) array of reduced-vector places (−1: fixed or pinned)."""
        places = self.split[kind]
        return np.where(places >= 0, self.reduced_of[np.maximum(places, 0)], -1)

    def expand(self, theta: np.ndarray) -> np.ndarray:
        """The split vector of a reduced one (pinned places 0)."""
        return np.where(self.reduced_of >= 0, theta[np.maximum(self.reduced_of, 0)], 0.0)

    def fold(self, gradient: np.ndarray) -> np.ndarray:
        """A gradient over the split vector summed onto the reduced vector (the chain rule of sharing)."""
        kept = self.reduced_of >= 0
        return np.bincount(self.reduced_of[kept], weights=gradient[kept], minlength=self.n_reduced)

    @cached_property
    def _folding(self) -> tuple[np.ndarray, np.ndarray]:
        kept = np.flatnonzero(self.reduced_of >= 0)
        order = kept[np.argsort(self.reduced_of[kept], kind="stable")]
        targets = self.reduced_of[order]
        return order, np.flatnonzero(np.r_[True, targets[1:] != targets[:-1]])

    def fold_columns(self, matrix: np.ndarray) -> np.ndarray:
        """``matrix @ K`` without K: the columns of a (rows × split) matrix summed onto the reduced places
        (pinned places dropped)."""
        order, starts = self._folding
        return np.add.reduceat(matrix[:, order], starts, axis=1)

    def fold_matrix(self) -> np.ndarray:
        """K (split × reduced): split = K·reduced; a pinned place's row is 0."""
        fold = np.zeros((self.n_split, self.n_reduced))
        kept = np.flatnonzero(self.reduced_of >= 0)
        fold[kept, self.reduced_of[kept]] = 1.0
        return fold

    def constraints(self) -> list[tuple[str, int, int]]:
        """Every equality in force, as (kind, element, group): group g's parameter equals group 1's (or,
        pinned, its default)."""
        rows = []
        first: dict[int, int] = {}
        for place, (kind, g, element) in enumerate(self.origin):
            reduced = int(self.reduced_of[place])
            if reduced < 0 or reduced in first:
                rows.append((kind, element, g))
            else:
                first[reduced] = place
        return rows

    def average(self, starts: Sequence[Mapping[str, np.ndarray]], sizes: Sequence[int]) -> np.ndarray:
        """A reduced vector from each group's values of every kind: a place shared by groups takes their
        size-weighted average (start values)."""
        theta = np.zeros(self.n_reduced)
        weight = np.zeros(self.n_reduced)
        for g, (values, size) in enumerate(zip(starts, sizes)):
            for kind, start in values.items():
                places = self.reduced(kind)[g]
                np.add.at(theta, places[places >= 0], size * np.asarray(start, dtype=float)[places >= 0])
                np.add.at(weight, places[places >= 0], size)
        filled = weight > 0
        theta[filled] /= weight[filled]
        return theta

    def carried(self, previous: Layout, theta_split: np.ndarray, defaults: Mapping[str, float]) -> np.ndarray:
        """A reduced vector for this layout from a fit of `previous` (its split vector): every kind's
        values group by group, shared places averaged; a kind fixed before starts at its default.
        Warm starts between the steps of a sequence, which differ by a few equalities."""
        starts = []
        for g in range(len(next(iter(self.split.values())))):
            starts.append({kind: np.where(previous.split[kind][g] >= 0,
                                          theta_split[np.maximum(previous.split[kind][g], 0)], defaults[kind])
                           for kind in self.split})
        return self.average(starts, [1] * len(starts))

    def variance_ties(self, m: int) -> list[tuple[int, np.ndarray]]:
        """Per group and factor: the reduced place of the factor's variance and those of its covariances
        (``factor_cov`` holds Φ's lower triangle row by row) — :func:`.fisher.minimise`'s ties."""
        rows, cols = np.tril_indices(m)
        places = self.reduced("factor_cov")
        ties = []
        for g in range(len(places)):
            for f in range(m):
                variance = int(places[g][(rows == f) & (cols == f)][0])
                covariances = places[g][((rows == f) | (cols == f)) & (rows != cols)]
                if variance >= 0:
                    ties.append((variance, covariances[covariances >= 0]))
        return ties
