"""A curve along one axis with the other axes fixed, precomputed for cheap repeated evaluation.

The simulator asks for the same op at the same batch size over and over with a different KV length (or token
count). Restricted to one axis, the grid's multilinear log-space interpolation is piecewise linear in log space with
breakpoints at the grid's values on that axis, so sampling the curve at exactly those values and interpolating with
`np.interp` in log space reproduces it exactly inside the grid. Outside the grid (roofline-scaled extrapolation) and
for roofline-only curves, the curve is smooth and is sampled at 16 points per octave: the error of log-log linear
interpolation there is far below the uncertainty of the estimate itself, and those points keep their labels.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence

import numpy as np

from simperf.perfdb.schema import SOURCE_INDEX

try:  # np.interp's compiled core, without the wrapper's argument checks (~1.5 µs a call; same numbers)
    from numpy._core.multiarray import interp as _interp
except ImportError:  # pragma: no cover - other numpy layouts
    _interp = np.interp

_INTERPOLATED = SOURCE_INDEX["interpolated"]
SAMPLES_PER_OCTAVE = 16

CurveFn = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class AxisSlice:
    def __init__(
        self,
        evaluate: CurveFn,
        grid_values: Sequence[float],
        lo: float,
        hi: float,
        dense_inside: bool = False,
    ) -> None:
        """dense_inside: the curve also bends between its grid values (a scaled curve: grid x a smooth ratio), so
        sample densely there too."""
        self._evaluate = evaluate
        self.lo, self.hi = float(lo), float(hi)
        grid = np.asarray(sorted(v for v in grid_values if v > 0), dtype=np.float64)
        dense = np.exp2(
            np.arange(
                math.floor(math.log2(lo) * SAMPLES_PER_OCTAVE),
                math.ceil(math.log2(hi) * SAMPLES_PER_OCTAVE) + 1,
            )
            / SAMPLES_PER_OCTAVE
        )
        if grid.size and not dense_inside:
            # inside the grid only the grid's own values: that is what makes the slice exact there
            dense = dense[(dense < grid[0]) | (dense > grid[-1])]
        points = np.unique(np.concatenate([grid, dense]))
        us, source = evaluate(points)
        self._x = points
        self._log_x = np.log(points)
        self._log_us = np.log(np.asarray(us, dtype=np.float64))
        source = np.asarray(source, dtype=np.int8)
        # label of a query between samples i and i+1: the worse of the two, at least "interpolated"; a query exactly
        # on a measured grid value is labelled "interpolated" too (both count as table-backed in reports)
        between = np.maximum(source[:-1], source[1:]) if len(source) > 1 else source
        self._interval_source = np.maximum(between, _INTERPOLATED).astype(np.int8)
        self._last = len(self._interval_source) - 1
        first = self._interval_source[0]
        # most slices carry one label throughout (all roofline, or all interpolated): skip the per-query lookup
        self.uniform_source: int | None = int(first) if (self._interval_source == first).all() else None
        # where the label changes along the axis, so a query range inside one stretch needs no per-point lookup
        self._log_x_list = self._log_x.tolist()
        self._log_us_list = self._log_us.tolist()
        self._labels = self._interval_source.tolist()
        self._changes = [i for i in range(1, len(self._labels)) if self._labels[i] != self._labels[i - 1]]

    def values(self, x: np.ndarray) -> tuple[np.ndarray, int | np.ndarray]:
        """Like __call__, but the label is a plain int when it is the same for every query (the fast path)."""
        first, last = float(x[0]), float(x[-1])
        if first >= self.lo and last <= self.hi:
            label = self.uniform_source
            if label is None:
                i0 = min(max(bisect.bisect_right(self._log_x_list, math.log(first)) - 1, 0), self._last)
                i1 = min(max(bisect.bisect_right(self._log_x_list, math.log(last)) - 1, 0), self._last)
                k = bisect.bisect_right(self._changes, i0)
                if k == len(self._changes) or self._changes[k] > i1:
                    label = self._labels[i0]
            if label is not None:
                return np.exp(_interp(np.log(x), self._log_x, self._log_us)), label
        return self(x)

    def values_list(self, xs: list[float]) -> tuple[list[float], int] | None:
        """values() for a few ascending Python floats, on Python floats: np.interp's operations in log space one
        query at a time (slope · (x − xᵢ) + yᵢ, exactly yᵢ on a sample), with math.log/exp, so the same numbers
        without numpy's per-call overhead (libm and numpy's SIMD log/exp can differ in the last bit on some
        CPUs; the equivalence test allows 1e-12 relative). None when the queries leave the sampled range or cross a label
        change: the caller takes the array path."""
        if xs[0] < self.lo or xs[-1] > self.hi:
            return None
        log_x, log_us = self._log_x_list, self._log_us_list
        top = len(log_x) - 1
        out = []
        j_first = -2
        for x in xs:
            lx = math.log(x)
            j = bisect.bisect_right(log_x, lx) - 1
            if j_first == -2:
                j_first = j
            if j < 0:
                ly = log_us[0]
            elif j >= top:
                ly = log_us[top]
            else:
                x0 = log_x[j]
                if x0 == lx:
                    ly = log_us[j]
                else:
                    ly = (log_us[j + 1] - log_us[j]) / (log_x[j + 1] - x0) * (lx - x0) + log_us[j]
            out.append(math.exp(ly))
        label = self.uniform_source
        if label is None:
            # the same interval labels values() reads, from the first and last query's intervals
            i0 = min(max(j_first, 0), self._last)
            i1 = min(max(j, 0), self._last)
            k = bisect.bisect_right(self._changes, i0)
            if k != len(self._changes) and self._changes[k] <= i1:
                return None
            label = self._labels[i0]
        return out, label

    def __call__(self, x: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """x: ascending values (a scalar, or e.g. the KV lengths of consecutive decode steps)."""
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if x[0] < self.lo or x[-1] > self.hi:
            return self._evaluate(x)  # beyond the sampled range: ask the curve itself
        log_x = np.log(x)
        us = np.exp(np.interp(log_x, self._log_x, self._log_us))
        if self.uniform_source is not None:
            return us, np.full(us.shape, self.uniform_source, dtype=np.int8)
        interval = np.searchsorted(self._log_x, log_x, side="right") - 1
        return us, self._interval_source[np.minimum(interval, self._last)]
