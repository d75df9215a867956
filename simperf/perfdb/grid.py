"""Interpolation of one op + key over its measured grid: piecewise linear in log(axis) -> log(time).

The measured points are placed on the tensor grid spanned by the distinct values of each axis. Cells the
calibration skipped (e.g. large batch x long KV that would not fit in memory) are filled from the nearest measured
cell scaled by the roofline ratio, and marked: a query that touches a filled cell is labelled "extrapolated".
The grid is then made monotone non-decreasing along the physically monotone axes by a running max, so that
measurement noise never makes more work cheaper. Between grid values the interpolation is multilinear in log
space, which is exact at grid points and keeps steps (no global fit). Outside the grid the query is clamped to the
grid's boundary and scaled by roofline(query) / roofline(clamped). docs/perfdb.md states the rules in prose.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from simperf.perfdb.keys import MONOTONE_AXES
from simperf.perfdb.schema import SOURCE_INDEX

RooflineFn = Callable[[dict[str, np.ndarray]], np.ndarray]
# The same roofline at one point, on Python floats (Roofline.time_us_scalar): the scalar path's extrapolation
ScalarRooflineFn = Callable[[dict[str, float]], float]

MEASURED = SOURCE_INDEX["measured"]
INTERPOLATED = SOURCE_INDEX["interpolated"]
THIRD_PARTY = SOURCE_INDEX["third_party"]
EXTRAPOLATED = SOURCE_INDEX["extrapolated"]
_FILL_CHUNK = 512


@dataclass(frozen=True)
class GridEvaluation:
    """One scalar query, with what is needed to explain it."""

    us: float
    source: int
    corners: int  # distinct grid cells with non-zero weight
    clamped: tuple[float, ...]  # the query clamped into the grid
    roofline_factor: float  # 1.0 inside the grid
    filled_corners: tuple[tuple[float, ...], ...]  # unmeasured cells the value leaned on


class Grid:
    """The log-log tensor grid of one op + key. Built by `build_grid`; read-only afterwards."""

    def __init__(
        self,
        axis_names: Sequence[str],
        axis_values: Sequence[np.ndarray],
        log_us: np.ndarray,
        exact_source: np.ndarray,
        filled: np.ndarray,
        raised: np.ndarray,
        roofline: RooflineFn,
        measured_points: int,
        roofline_scalar: ScalarRooflineFn | None = None,
    ) -> None:
        self.axis_names = tuple(axis_names)
        self.axis_values = tuple(np.asarray(v, dtype=np.float64) for v in axis_values)  # sorted, distinct
        self.log_us = log_us  # shape (len(v) for v in axis_values)
        self.exact_source = (
            exact_source  # int8 per cell: measured/third_party where measured, else extrapolated
        )
        self.filled = (
            filled  # per cell: not measured, filled by roofline scaling from the nearest measured cell
        )
        self.raised = raised  # per cell: lifted by the monotone running max
        self.roofline = roofline
        self.roofline_scalar = roofline_scalar
        self.measured_points = measured_points

        self.log_axis = tuple(np.log(v) for v in self.axis_values)
        shape = log_us.shape
        self._strides = [int(np.prod(shape[i + 1 :])) for i in range(len(shape))]
        # Interpolation cell of a value: searchsorted over the interior breakpoints gives the low index directly.
        self._interior = tuple(logs[1:-1] for logs in self.log_axis)
        # Divide by the width (not multiply by its inverse) so that the top grid value gets t == 1.0 exactly.
        self._width = tuple(np.diff(logs) if len(logs) > 1 else np.ones(1) for logs in self.log_axis)
        self._log_flat = log_us.reshape(-1)
        self._filled_flat = filled.reshape(-1)
        self._source_flat = exact_source.reshape(-1)
        # interpolating between another tool's points is still that tool's number: keep the third-party label
        third_party = bool(np.all(exact_source[~filled] == THIRD_PARTY)) if (~filled).any() else False
        self._interpolated_label = THIRD_PARTY if third_party else INTERPOLATED
        self._has_filled = bool(filled.any())
        self._uniform_source = (
            int(exact_source.flat[0]) if np.all(exact_source == exact_source.flat[0]) else None
        )
        # Corners of an interpolation cell; a single-valued axis has no upper neighbour, so it takes bit 0 only.
        choices = [(0, 1) if size > 1 else (0,) for size in shape]
        bits = np.array(list(itertools.product(*choices)), dtype=bool).reshape(-1, len(shape))
        self._corner_bits = [bits[:, axis][:, None] for axis in range(len(shape))]
        self._corner_offsets = (bits.astype(np.int64) @ np.array(self._strides, dtype=np.int64))[:, None]
        # The same, as Python objects, for the scalar path.
        self.axis_lists = tuple(v.tolist() for v in self.axis_values)
        self._log_lists = tuple(v.tolist() for v in self.log_axis)
        self._width_lists = tuple(v.tolist() for v in self._width)
        self._log_flat_list = self._log_flat.tolist()
        self._filled_flat_list = self._filled_flat.tolist()
        self._source_flat_list = self._source_flat.tolist()
        self._corner_list = [
            (tuple(bool(b) for b in row), int(offset))
            for row, offset in zip(bits, self._corner_offsets[:, 0], strict=True)
        ]

    @property
    def interpolated_label(self) -> int:
        """The source index of a value between grid points: interpolated, or third_party on a third-party grid."""
        return self._interpolated_label

    # ---- vectorised path -------------------------------------------------------------------------------------
    def evaluate(self, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """xs: one flat float64 array per axis, same length -> (us, source index int8)."""
        n = xs[0].shape[0]
        flat = np.zeros(n, dtype=np.intp)
        outside = np.zeros(n, dtype=bool)
        clamped, fracs = [], []
        for axis, x in enumerate(xs):
            logs = self.log_axis[axis]
            with np.errstate(divide="ignore", invalid="ignore"):
                lx = np.log(x)
            lxc = np.minimum(np.maximum(lx, logs[0]), logs[-1])
            outside |= lxc != lx
            clamped.append(lxc)
            if len(logs) == 1:
                fracs.append(np.zeros(n))
                continue
            lo = np.searchsorted(self._interior[axis], lxc, side="right")
            fracs.append((lxc - logs.take(lo)) / self._width[axis].take(lo))
            flat += lo * self._strides[axis]

        index = flat[None, :] + self._corner_offsets  # (corners, n)
        weight = np.ones((len(self._corner_offsets), n))
        for bits, t in zip(self._corner_bits, fracs, strict=True):
            weight *= np.where(bits, t[None, :], 1.0 - t[None, :])
        us = np.exp((weight * self._log_flat.take(index)).sum(axis=0))

        used = weight > 0.0
        exact = used.sum(axis=0) == 1
        if self._uniform_source is not None:
            source = np.where(exact, self._uniform_source, self._interpolated_label).astype(np.int8)
        else:
            source = np.full(n, self._interpolated_label, dtype=np.int8)
            if exact.any():
                nearest = flat + sum(
                    (t >= 0.5) * stride for t, stride in zip(fracs, self._strides, strict=True)
                )
                source[exact] = self._source_flat.take(nearest[exact])
        if self._has_filled:
            touches = (used & self._filled_flat.take(index)).any(axis=0)
            source[touches] = EXTRAPOLATED
        if outside.any():
            names = self.axis_names
            query = {name: x[outside] for name, x in zip(names, xs, strict=True)}
            edge = {name: np.exp(x[outside]) for name, x in zip(names, clamped, strict=True)}
            us[outside] *= _ratio(self.roofline(query), self.roofline(edge))
            source[outside] = EXTRAPOLATED
        return us, source

    # ---- scalar path: pure Python, the simulator's hot path ----------------------------------------------------
    def _locate(self, xs: Sequence[float]) -> tuple[int, list[float], list[float], bool]:
        """Flat index of the low corner, fractions per axis, clamped query, and whether it was outside."""
        flat = 0
        fracs: list[float] = []
        clamped: list[float] = []
        outside = False
        for axis, x in enumerate(xs):
            values = self.axis_lists[axis]
            first, last = values[0], values[-1]
            if len(values) == 1:
                outside = outside or x != first
                clamped.append(first)
                fracs.append(0.0)
                continue
            if x <= first:
                outside = outside or x < first
                lo, t, xc = 0, 0.0, first
            elif x >= last:
                outside = outside or x > last
                lo, t, xc = len(values) - 2, 1.0, last
            else:
                lo = bisect.bisect_right(values, x) - 1
                t = (math.log(x) - self._log_lists[axis][lo]) / self._width_lists[axis][lo]
                xc = x
            flat += lo * self._strides[axis]
            fracs.append(t)
            clamped.append(xc)
        return flat, fracs, clamped, outside

    def value_scalar(self, xs: Sequence[float]) -> tuple[float, int]:
        flat, fracs, clamped, outside = self._locate(xs)
        log_us = 0.0
        corners = 0
        touches_filled = False
        last = flat
        for bits, offset in self._corner_list:
            weight = 1.0
            for bit, t in zip(bits, fracs, strict=True):
                weight *= t if bit else 1.0 - t
            if weight == 0.0:
                continue
            last = flat + offset
            corners += 1
            log_us += weight * self._log_flat_list[last]
            touches_filled = touches_filled or self._filled_flat_list[last]
        us = math.exp(log_us)
        if corners == 1:
            source = self._source_flat_list[last]
        else:
            source = EXTRAPOLATED if touches_filled else self._interpolated_label
        if outside:
            us *= self._roofline_factor(xs, clamped)
            source = EXTRAPOLATED
        return us, source

    def evaluate_scalar(self, xs: Sequence[float]) -> GridEvaluation:
        """The scalar value with what explains it (slower than value_scalar; for Timing details)."""
        us, source = self.value_scalar(xs)
        flat, fracs, clamped, outside = self._locate(xs)
        corners = 0
        filled: list[tuple[float, ...]] = []
        for bits, offset in self._corner_list:
            weight = math.prod(t if bit else 1.0 - t for bit, t in zip(bits, fracs, strict=True))
            if weight == 0.0:
                continue
            corners += 1
            if self._filled_flat_list[flat + offset]:
                cell = np.unravel_index(flat + offset, self.log_us.shape)
                filled.append(tuple(self.axis_lists[a][int(i)] for a, i in enumerate(cell)))
        factor = self._roofline_factor(xs, clamped) if outside else 1.0
        return GridEvaluation(us, source, corners, tuple(clamped), factor, tuple(filled))

    def _roofline_factor(self, xs: Sequence[float], clamped: Sequence[float]) -> float:
        scalar = self.roofline_scalar
        if scalar is not None:
            # _ratio on Python floats: the same division, ~10x cheaper than through 0-d arrays
            den = scalar(dict(zip(self.axis_names, clamped, strict=True)))
            num = scalar(dict(zip(self.axis_names, xs, strict=True)))
            return num / den if den > 0.0 else 1.0
        query = {name: np.asarray(x) for name, x in zip(self.axis_names, xs, strict=True)}
        edge = {name: np.asarray(x) for name, x in zip(self.axis_names, clamped, strict=True)}
        return float(_ratio(self.roofline(query), self.roofline(edge)))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    return np.where(den > 0.0, num / np.where(den > 0.0, den, 1.0), 1.0)


def build_grid(
    axis_names: Sequence[str],
    points: np.ndarray,
    us: np.ndarray,
    exact_labels: np.ndarray,
    roofline: RooflineFn,
    roofline_scalar: ScalarRooflineFn | None = None,
    monotone: frozenset[str] = MONOTONE_AXES,
) -> Grid | None:
    """points: (N, d) axis values of grid rows; us: (N,) times; exact_labels: (N,) source index of each row
    (measured or third_party). Duplicate points are combined by their median. None when no usable point.
    roofline_scalar: the same roofline on one point of Python floats, for cheaper scalar extrapolation.
    monotone: the axes made non-decreasing by a running max (keys.monotone_axes)."""
    points = np.asarray(points, dtype=np.float64).reshape(len(us), len(axis_names))
    us = np.asarray(us, dtype=np.float64)
    usable = np.isfinite(us) & (us > 0.0) & np.all(np.isfinite(points) & (points > 0.0), axis=1)
    points, us, exact_labels = points[usable], us[usable], np.asarray(exact_labels, dtype=np.int8)[usable]
    if len(us) == 0:
        return None

    axis_values: list[np.ndarray] = []
    cell_index: list[np.ndarray] = []
    for column in points.T:
        values, inverse = np.unique(column, return_inverse=True)
        axis_values.append(values)
        cell_index.append(inverse.reshape(-1))
    shape = tuple(len(v) for v in axis_values)
    flat = np.ravel_multi_index(tuple(cell_index), shape)

    log_us = np.full(int(np.prod(shape)), np.nan)
    labels = np.full(log_us.shape, EXTRAPOLATED, dtype=np.int8)
    order = np.argsort(flat, kind="stable")
    cells, starts, counts = np.unique(flat[order], return_index=True, return_counts=True)
    first = order[starts]
    log_us[cells] = np.log(us[first])
    labels[cells] = exact_labels[first]
    for cell, start, count in zip(cells[counts > 1], starts[counts > 1], counts[counts > 1], strict=True):
        group = order[start : start + count]  # repeated measurements of one point: their median
        log_us[cell] = float(np.median(np.log(us[group])))
        # a cell counts as measured if any of its rows was measured (rather than third-party)
        labels[cell] = MEASURED if np.any(exact_labels[group] == MEASURED) else exact_labels[group][0]

    filled = np.isnan(log_us)
    if filled.any():
        _fill_from_nearest(log_us, filled, shape, axis_values, axis_names, roofline)

    log_us = log_us.reshape(shape)
    filled_cells = filled.reshape(shape)
    before = log_us.copy()
    # A measured cell is lifted only by measured cells below it: a filled cell is a roofline-scaled guess and
    # must not overrule a measurement. Filled cells are lifted by everything below them.
    measured_max = np.where(filled_cells, -np.inf, log_us)
    for axis, name in enumerate(axis_names):
        if name in monotone:
            measured_max = np.maximum.accumulate(measured_max, axis=axis)
            log_us = np.maximum.accumulate(log_us, axis=axis)
    log_us = np.where(filled_cells, log_us, measured_max)
    raised = log_us > before + 1e-12

    return Grid(
        axis_names=axis_names,
        axis_values=axis_values,
        log_us=log_us,
        exact_source=labels.reshape(shape),
        filled=filled.reshape(shape),
        raised=raised,
        roofline=roofline,
        measured_points=int(len(cells)),
        roofline_scalar=roofline_scalar,
    )


def _fill_from_nearest(
    log_us: np.ndarray,
    filled: np.ndarray,
    shape: tuple[int, ...],
    axis_values: Sequence[np.ndarray],
    axis_names: Sequence[str],
    roofline: RooflineFn,
) -> None:
    """Give each unmeasured cell the value of the nearest measured cell (in grid steps) times the roofline ratio."""
    coords = np.stack(np.unravel_index(np.arange(log_us.size), shape), axis=1).astype(np.float64)
    known = np.flatnonzero(~filled)
    missing = np.flatnonzero(filled)
    origin = np.empty_like(missing)
    for start in range(0, len(missing), _FILL_CHUNK):  # chunked: the distance matrix is missing x known
        block = missing[start : start + _FILL_CHUNK]
        distance = np.linalg.norm(coords[block][:, None, :] - coords[known][None, :, :], axis=2)
        origin[start : start + _FILL_CHUNK] = known[np.argmin(distance, axis=1)]

    def cell_axes(flat_cells: np.ndarray) -> dict[str, np.ndarray]:
        idx = np.unravel_index(flat_cells, shape)
        return {name: values[i] for name, values, i in zip(axis_names, axis_values, idx, strict=True)}

    factor = _ratio(roofline(cell_axes(missing)), roofline(cell_axes(origin)))
    log_us[missing] = log_us[origin] + np.log(np.maximum(factor, 1e-12))
