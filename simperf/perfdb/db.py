"""The performance database: calibration tables of one GPU, answered as timings with their provenance.

`PerfDB.load(dir, gpu)` reads every *.parquet of a calibration directory once; `curve(op, key)` resolves an op's
exact key (OpSpec.key_columns) to an `OpCurve`, built lazily and cached, that the cost model evaluates over the
op's axes. A curve is backed, in order of preference, by
  1. the measured grid of that key (interpolated, monotone, roofline-scaled beyond the grid; grid.py),
  2. for collectives only: an alpha-beta model fitted on another measured group size (alphabeta.py),
  3. for a key this GPU has no table for, but the reference GPU named in the directory's scaled_from.yaml
     has: the reference's curve scaled by the ratio of the two GPUs' rooflines (scaled.py, "scaled-from:<gpu>"),
  4. for a key no table has: the nearest measured key of the same op, scaled by the roofline ratio between the two
     keys and clamped below by the op's measured floor on this GPU (nearest.py, label scaled_key,
     "scaled-key:<what differs>"), from this GPU's tables or else the reference's,
  5. the roofline (roofline.py), only where no table of the op exists at all (`OpCurve.backing` says so).
Rows with status != "ok" never time anything; rows with sample "heldout" or "ragged" are kept for checks but never
interpolated over. docs/perfdb.md states these rules in prose.
"""

from __future__ import annotations

import bisect
import difflib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import polars as pl
import pyarrow.parquet as pq

import simperf
from simperf.hardware.catalog import GpuSpec, get_gpu
from simperf.perfdb import prefillplan, vocabulary
from simperf.perfdb.alphabeta import AlphaBetaModel, fit_alpha_beta
from simperf.perfdb.axisslice import AxisSlice
from simperf.perfdb.ctastream import CtaStreamRates
from simperf.perfdb.ctastream import read_rates as read_cta_stream
from simperf.perfdb.grid import Grid, build_grid
from simperf.perfdb.keys import (
    PREFIX_AXIS,
    KeyTuple,
    PerfDBError,
    format_key,
    key_dict,
    monotone_axes,
    normalize_key,
    op_spec,
)
from simperf.perfdb.nearest import describe_substitution, nearest_key
from simperf.perfdb.prefillplan import KeyRates
from simperf.perfdb.prefix_path import PrefixPathRatios, read_prefix_path
from simperf.perfdb.ratios import RatioTable, read_ratios
from simperf.perfdb.roofline import COLLECTIVE_OPS, Roofline, achievable_link_bytes_per_s
from simperf.perfdb.scaled import ScaledModel, read_scaled_from, reference_directory
from simperf.perfdb.schema import (
    OP_SPECS,
    SCHEMA_VERSION,
    SOURCE_INDEX,
    SOURCES,
    STRING_KEY_COLUMNS,
    OpSpec,
    arrow_schema,
)
from simperf.perfdb.shared_reads import SharedReadCosts
from simperf.perfdb.shared_reads import read_costs as read_shared_reads
from simperf.perfdb.spec_verify import SpecVerifyRatios, read_spec_verify
from simperf.perfdb.vintage import VintageChoice, select_vintages

_EXTRAPOLATED = SOURCE_INDEX["extrapolated"]
_ROOFLINE = SOURCE_INDEX["roofline"]
_MEASURED = SOURCE_INDEX["measured"]
_THIRD_PARTY = SOURCE_INDEX["third_party"]
_SCALED_KEY = SOURCE_INDEX["scaled_key"]
# a reference GPU's nearest key is taken over this GPU's own only when it is nearer by more than this (crossing GPUs
# is one more estimate)
_CROSS_GPU_DISTANCE = 1.0

_PROVENANCE_LISTS = ("gpu_name", "sm", "driver", "cuda", "torch", "flashinfer", "flash_mla", "deep_gemm")
_PROVENANCE_LISTS += ("timing_method", "source", "simperf_version")


@dataclass(frozen=True)
class Timing:
    us: float
    source: str  # one of schema.SOURCES
    detail: str  # human-readable account of how the number was obtained


def shipped_calibration_dir(gpu_key: str) -> Path | None:
    """The repository's calibration/<gpu>/ next to the package, or None when it is absent."""
    directory = Path(simperf.__file__).resolve().parent.parent / "calibration" / gpu_key
    return directory if directory.is_dir() else None


# ---- curve models: how one op + key turns axes into time ---------------------------------------------------------


class _CurveModel(Protocol):
    def evaluate(self, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]: ...
    def evaluate_scalar(self, xs: Sequence[float]) -> tuple[float, int]: ...
    def explain(self, xs: Sequence[float]) -> Timing: ...


def _breakpoints(model: object, axis: str) -> tuple[list[float], bool]:
    """Where a curve bends along one axis (its grid's values there), and whether it also bends between them
    (then a slice samples densely as well)."""
    if isinstance(model, _GridModel) and axis in model.grid.axis_names:
        return list(model.grid.axis_lists[model.grid.axis_names.index(axis)]), False
    if isinstance(model, _ScaledKeyModel):
        return _breakpoints(model.near._model, axis)[0], True
    return [], False


class _GridModel:
    def __init__(self, grid: Grid, third_party: str | None = None) -> None:
        self.grid = grid
        # The source of the key's third-party rows (e.g. "third-party:aiconfigurator 0.12.0"): every explanation
        # off this grid names it, so an interpolated or extrapolated answer still says whose numbers it rests on.
        self.third_party = third_party

    def evaluate(self, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return self.grid.evaluate(xs)

    def evaluate_scalar(self, xs: Sequence[float]) -> tuple[float, int]:
        return self.grid.value_scalar(xs)

    def explain(self, xs: Sequence[float]) -> Timing:
        result = self.grid.evaluate_scalar(xs)
        names = self.grid.axis_names
        notes = []
        if result.filled_corners:
            cells = "; ".join(_format_point(names, cell) for cell in result.filled_corners)
            notes.append(
                f"leans on unmeasured grid cells filled by roofline scaling from the nearest measured: {cells}"
            )
        if result.roofline_factor != 1.0 or any(c != x for c, x in zip(result.clamped, xs, strict=True)):
            head = f"extrapolated x{result.roofline_factor:.3g} by roofline from {_format_point(names, result.clamped)}"
        elif result.corners == 1:
            cell = tuple(
                values.index(c) for values, c in zip(self.grid.axis_lists, result.clamped, strict=True)
            )
            head = "third-party" if result.source == _THIRD_PARTY else "measured"
            if result.source == _EXTRAPOLATED:
                head = "extrapolated: grid point not measured"
            if self.grid.raised[cell]:
                notes.append("raised to the running max along monotone axes (measurement noise)")
        else:
            head = f"interpolated between {result.corners} points"
            if result.source == _EXTRAPOLATED:
                head = f"extrapolated: {head}"
        if self.third_party is not None:
            notes.append(f"grid from {self.third_party}")
        detail = "; ".join([head, *notes])
        return Timing(result.us, SOURCES[result.source], detail)


# Causal extend attention is gridded over (batch, q_len, prefix + 1) instead of (batch, q_len, kv_len). Calibration
# measures rows of fixed prefix (0, 8192, ...) across q_len: rectangular in that space, but in (q_len, kv_len) a
# diagonal and a shifted diagonal, so a fresh prefill (kv = q) between grid values interpolated through unmeasured,
# roofline-filled cells (simperf validate measured such prefills 1.5-4x faster than that predicted).
CAUSAL_PREFIX_OPS = ("attn_mha_prefill", "attn_mla_extend")


def _prefix_scalars(xs: Sequence[float]) -> list[float]:
    batch, q_len, kv_len = xs
    return [batch, q_len, max(kv_len - q_len, 0.0) + 1.0]


def _prefix_arrays(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
    batch, q_len, kv_len = xs
    return [batch, q_len, np.maximum(kv_len - q_len, 0.0) + 1.0]


class _PrefixGridModel(_GridModel):
    """A grid over (batch, q_len, prefix + 1), queried with (batch, q_len, kv_len). Between two measured prefixes
    the time is linear in the prefix (interpolated in log-log over batch and q_len at each of the two): at a fixed
    batch and query length a causal extend's query-key pairs, its work, grow by q_len per prefix token, and
    log-log interpolation across the grid's first step (prefix 0 to 256 or 1,024) put a prefix of 200 at three
    quarters of the way (docs/perfdb.md "Interpolation on the grid")."""

    def _between(self, prefix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(inside, low prefix + 1, high prefix + 1, fraction) of queries strictly between two grid prefixes."""
        values = self.grid.axis_values[2]
        inside = (prefix > values[0]) & (prefix < values[-1]) & ~np.isin(prefix, values)
        i = np.clip(np.searchsorted(values, prefix, side="right") - 1, 0, max(len(values) - 2, 0))
        low = values[i]
        high = values[np.minimum(i + 1, len(values) - 1)]
        span = np.where(high > low, high - low, 1.0)
        return inside, low, high, (prefix - low) / span

    def evaluate(self, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        batch, q_len, prefix = _prefix_arrays(xs)
        inside, low, high, frac = self._between(prefix)
        if not inside.any():
            return super().evaluate([batch, q_len, prefix])
        us = np.empty(prefix.shape)
        source = np.empty(prefix.shape, dtype=np.int8)
        on = ~inside  # on a grid prefix or beyond the grid: the grid's own interpolation
        if on.any():
            us[on], source[on] = super().evaluate([batch[on], q_len[on], prefix[on]])
        b, q = batch[inside], q_len[inside]
        us_low, src_low = super().evaluate([b, q, low[inside]])
        us_high, src_high = super().evaluate([b, q, high[inside]])
        us[inside] = us_low + (us_high - us_low) * frac[inside]
        extrapolated = (src_low == _EXTRAPOLATED) | (src_high == _EXTRAPOLATED)
        source[inside] = np.where(extrapolated, _EXTRAPOLATED, self.grid.interpolated_label)
        return us, source

    def _bracket(self, prefix: float) -> int | None:
        """Index of the grid prefix just below a scalar strictly between two grid prefixes, else None."""
        values = self.grid.axis_lists[2]
        if len(values) < 2 or not values[0] < prefix < values[-1] or prefix in values:
            return None
        return bisect.bisect_right(values, prefix) - 1

    def evaluate_scalar(self, xs: Sequence[float]) -> tuple[float, int]:
        batch, q_len, prefix = _prefix_scalars(xs)
        i = self._bracket(prefix)
        if i is None:
            return super().evaluate_scalar([batch, q_len, prefix])
        low, high = self.grid.axis_lists[2][i], self.grid.axis_lists[2][i + 1]
        us_low, src_low = super().evaluate_scalar([batch, q_len, low])
        us_high, src_high = super().evaluate_scalar([batch, q_len, high])
        us = us_low + (us_high - us_low) * (prefix - low) / (high - low)
        extrapolated = src_low == _EXTRAPOLATED or src_high == _EXTRAPOLATED
        return us, _EXTRAPOLATED if extrapolated else self.grid.interpolated_label

    def explain(self, xs: Sequence[float]) -> Timing:
        batch, q_len, prefix = _prefix_scalars(xs)
        i = self._bracket(prefix)
        if i is None:
            return super().explain([batch, q_len, prefix])
        values = self.grid.axis_lists[2]
        low, high = super().explain([batch, q_len, values[i]]), super().explain([batch, q_len, values[i + 1]])
        us, source = self.evaluate_scalar(xs)
        detail = (
            f"linear in the prefix between prefix {values[i] - 1:g} ({low.us:.1f} us: {low.detail}) and "
            f"{values[i + 1] - 1:g} ({high.us:.1f} us: {high.detail})"
        )
        return Timing(us, SOURCES[source], detail)


class _RooflineModel:
    def __init__(self, roofline: Roofline) -> None:
        self.roofline = roofline
        self.names = roofline.spec.axis_columns

    def evaluate(self, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        us = np.asarray(self.roofline.time_us(dict(zip(self.names, xs, strict=True))), dtype=np.float64)
        return us, np.full(us.shape, _ROOFLINE, dtype=np.int8)

    def evaluate_scalar(self, xs: Sequence[float]) -> tuple[float, int]:
        return self.roofline.time_us_scalar(dict(zip(self.names, xs, strict=True))), _ROOFLINE

    def explain(self, xs: Sequence[float]) -> Timing:
        us, detail = self.roofline.describe(dict(zip(self.names, xs, strict=True)))
        return Timing(us, "roofline", detail)


class _AlphaBetaCurveModel:
    def __init__(self, model: AlphaBetaModel, group_size: int) -> None:
        self.model = model
        self.group_size = group_size

    def evaluate(self, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        us = self.model.time_us(self.group_size, xs[0])
        return us, np.full(us.shape, _EXTRAPOLATED, dtype=np.int8)

    def evaluate_scalar(self, xs: Sequence[float]) -> tuple[float, int]:
        return float(self.model.time_us(self.group_size, np.asarray(xs[0]))), _EXTRAPOLATED

    def explain(self, xs: Sequence[float]) -> Timing:
        us, _ = self.evaluate_scalar(xs)
        return Timing(us, "extrapolated", f"{self.model.describe()}, applied to group_size={self.group_size}")


class _ScaledCurveModel:
    def __init__(self, model: ScaledModel) -> None:
        self.model = model

    def evaluate(self, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return self.model.evaluate(xs)

    def evaluate_scalar(self, xs: Sequence[float]) -> tuple[float, int]:
        return self.model.evaluate_scalar(xs)

    def explain(self, xs: Sequence[float]) -> Timing:
        us, detail = self.model.explain(xs)
        return Timing(us, "extrapolated", detail)


class _ScaledKeyModel:
    """A key without a table: the nearest measured key's curve x roofline(key) / roofline(nearest key), at least
    the op's measured floor on this GPU (nearest.py)."""

    def __init__(
        self,
        near: OpCurve,
        near_roofline: Roofline,
        roofline: Roofline,
        floor: tuple[float, str] | None,
        substitution: str,
    ) -> None:
        self.near = near
        self.near_roofline = near_roofline
        self.roofline = roofline
        self.floor_us = floor[0] if floor is not None else 0.0
        self.floor_note = floor[1] if floor is not None else ""
        self.label = f"scaled-key:{substitution}"
        self.names = roofline.spec.axis_columns

    def evaluate(self, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        axes = dict(zip(self.names, xs, strict=True))
        us, _ = self.near(**axes)
        ratio = self.roofline.time_us(axes) / self.near_roofline.time_us(axes)
        out = np.maximum(np.asarray(us, dtype=np.float64) * ratio, self.floor_us)
        return out, np.full(out.shape, _SCALED_KEY, dtype=np.int8)

    def evaluate_scalar(self, xs: Sequence[float]) -> tuple[float, int]:
        axes = dict(zip(self.names, xs, strict=True))
        us, _ = self.near._model.evaluate_scalar(xs)
        ratio = self.roofline.time_us_scalar(axes) / self.near_roofline.time_us_scalar(axes)
        return max(us * ratio, self.floor_us), _SCALED_KEY

    def explain(self, xs: Sequence[float]) -> Timing:
        axes = dict(zip(self.names, xs, strict=True))
        near = self.near.timing(**axes)
        ratio = self.roofline.time_us_scalar(axes) / self.near_roofline.time_us_scalar(axes)
        us = max(near.us * ratio, self.floor_us)
        how = near.source if near.detail == near.source else f"{near.source}: {near.detail}"
        detail = (
            f"{self.label}: {near.us:.4g} us at {format_key(self.near.spec, tuple(self.near.key.values()))} ({how}) "
            f"x roofline ratio {ratio:.3g}"
        )
        if us == self.floor_us and self.floor_us > near.us * ratio:
            detail += f"; raised to the measured floor {self.floor_us:.3g} us ({self.floor_note})"
        return Timing(us, "scaled_key", detail)


def _format_point(names: Sequence[str], values: Sequence[float]) -> str:
    return ", ".join(f"{name}={_format_number(v)}" for name, v in zip(names, values, strict=True))


def _format_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


_SCALAR_TYPES = (int, float, np.integer, np.floating)


class OpCurve:
    """One op + exact key resolved against the tables (or against the roofline when no table covers it)."""

    def __init__(
        self, spec: OpSpec, key: KeyTuple, model: _CurveModel, measured: bool, backing: str | None = None
    ) -> None:
        self.op = spec.name
        self.spec = spec
        self.key: dict[str, object] = key_dict(spec, key)
        self.measured = measured  # True if backed by a table of this very key
        # what stands behind the curve: measured | alpha-beta | scaled-from | scaled-key | roofline
        self.backing = backing or ("measured" if measured else "roofline")
        self._model = model
        self._axis_names = spec.axis_columns
        self._axis_set = frozenset(spec.axis_columns)

    def __repr__(self) -> str:
        return f"OpCurve({self.op}, {format_key(self.spec, tuple(self.key.values()))}, {self.backing})"

    def constructor_args(self) -> tuple[OpSpec, KeyTuple, _CurveModel, bool, str]:
        """The arguments that build this curve again: a subclass that reprices a curve (costmodel/prefix_path.py)
        starts from them, keeping the base's key, backing and grid model."""
        return self.spec, tuple(self.key.values()), self._model, self.measured, self.backing

    def _axes_in_order(self, axes: Mapping[str, object]) -> list[object]:
        if axes.keys() != self._axis_set:
            missing = sorted(self._axis_set - set(axes))
            extra = sorted(set(axes) - self._axis_set)
            raise PerfDBError(
                f"axes for op {self.op!r}: missing {missing}, unexpected {extra} (expected {list(self._axis_names)})"
            )
        return [axes[name] for name in self._axis_names]

    def __call__(self, **axes: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised: axis arrays broadcast -> (us float64 array, source index int8 array into SOURCES)."""
        values = self._axes_in_order(axes)
        if all(isinstance(v, _SCALAR_TYPES) for v in values):
            scalars = self._checked_scalars(values)
            us, source = self._model.evaluate_scalar(scalars)
            return np.asarray(us, dtype=np.float64), np.asarray(source, dtype=np.int8)
        arrays = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in values))
        for name, array in zip(self._axis_names, arrays, strict=True):
            if not np.all(array >= 0.0):  # also catches NaN
                raise PerfDBError(
                    f"axis {name!r} of op {self.op!r} must be >= 0, got {array[~(array >= 0.0)][:3]}"
                )
        shape = arrays[0].shape
        us, source = self._model.evaluate([a.reshape(-1) for a in arrays])
        return us.reshape(shape), source.reshape(shape)

    def timing(self, **axes: float) -> Timing:
        return self._model.explain(self._checked_scalars(self._axes_in_order(axes)))

    def along(self, axis: str, lo: float = 1.0, hi: float = float(2**24), **fixed: float) -> AxisSlice:
        """This curve as a function of one axis, the others fixed: exact inside the grid, cheap to evaluate."""
        if axis not in self._axis_set or set(fixed) != self._axis_set - {axis}:
            raise PerfDBError(
                f"along({axis!r}) of op {self.op!r} needs every other axis fixed: {sorted(self._axis_set - {axis})}"
            )
        grid_values, dense_inside = _breakpoints(self._model, axis)

        def evaluate(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return self(**fixed, **{axis: values})

        return AxisSlice(evaluate, grid_values, lo, hi, dense_inside=dense_inside)

    def _checked_scalars(self, values: Sequence[object]) -> list[float]:
        scalars = [float(v) for v in values]  # type: ignore[arg-type]
        for name, value in zip(self._axis_names, scalars, strict=True):
            if not value >= 0.0:
                raise PerfDBError(f"axis {name!r} of op {self.op!r} must be >= 0, got {value}")
        return scalars


# ---- the database ------------------------------------------------------------------------------------------------


def _borrowed_cta_stream(reference: PerfDB | None) -> CtaStreamRates | None:
    """A GPU without its own per-CTA stream rates takes its scaled-from reference's, labelled: one CTA's lone rate
    is bound by its SM (the H100 and H200 agree within 1%, ctastream.py), so it is the better estimate there than
    none at all (mean KV, as if a lone CTA streamed at full bandwidth)."""
    if reference is None or reference.cta_stream is None:
        return None
    rates = reference.cta_stream
    return CtaStreamRates(
        rates.bytes_per_s, f"{rates.provenance} (borrowed from {reference.gpu.key}: an estimate)"
    )


class PerfDB:
    def __init__(
        self,
        gpu: GpuSpec,
        rows: pl.DataFrame,
        files: Sequence[Path],
        directory: Path | None,
        reference: PerfDB | None = None,
        ratios: RatioTable | None = None,
    ) -> None:
        self.gpu = gpu
        self.directory = directory
        self.files = tuple(files)
        self.reference = reference  # another GPU's tables for the scaled-from fallback (scaled.py)
        self.ratios = ratios  # measured time ratios of this GPU against the reference (ratios.py)
        self._rows = rows
        self._grid_rows: dict[str, dict[KeyTuple, _KeyPoints]] = {}
        self._curves: dict[tuple[str, KeyTuple], OpCurve] = {}
        self.vintages: list[VintageChoice] = []  # the third-party vintage chosen per op (vintage.py)
        self._nearest: dict[tuple[str, KeyTuple], tuple[dict[str, object], float] | None] = {}
        self._floors: dict[tuple[str, str], float] | None = None
        self._prefill_rates: dict[tuple[str, KeyTuple], KeyRates | None] = {}
        # one CTA's lone stream rate per kernel (ctastream.py): prices ragged GQA decode batches; None: mean KV.
        # load() puts the directory's own in place of the reference's.
        self.cta_stream: CtaStreamRates | None = _borrowed_cta_stream(reference)
        # what a decode kernel pays to read a shared prefix page again (shared_reads.py); None: the distinct price.
        # Not borrowed from a reference: it is a ratio of L2 to HBM time, which differs between GPUs (H100 0.19-0.26,
        # H200 0.35-0.44 for flashinfer's GQA decode at 32q/8kv)
        self.shared_reads: SharedReadCosts | None = None
        # SGLang's flashinfer extend over a cached prefix (ragged FA3 + paged FA2 + merge) over the tables' one
        # kernel (prefix_path.py); None: the tables' kernel stands for it
        self.prefix_path: PrefixPathRatios | None = None
        # SGLang's flashinfer speculative verify / draft extend (one paged FA2 kernel with q_len draft tokens) over
        # the decode kernel the tables time (spec_verify.py); None: priced as before, from the prefill tables
        self.spec_verify: SpecVerifyRatios | None = None

    @classmethod
    def load(
        cls,
        directory: Path | None,
        gpu: GpuSpec,
        reference: PerfDB | None = None,
        scaled_from: bool = True,
        sglang_version: str | None = None,
        ratios: RatioTable | None = None,
    ) -> PerfDB:
        """All *.parquet tables of a calibration directory; a None or missing directory gives an empty database
        (every lookup then falls back to the roofline). `reference` (or, when `scaled_from`, the sibling
        directory named by the directory's scaled_from.yaml) backs keys this GPU has no table for, scaled by
        `ratios` (else the directory's scaled_ratios.yaml for that reference, else the rooflines).
        `sglang_version` picks one vintage per op among third-party tables of several versions (vintage.py);
        None: the newest."""
        files = (
            sorted(Path(directory).glob("*.parquet"))
            if directory is not None and Path(directory).is_dir()
            else []
        )
        rows, vintages = select_vintages(_read_tables(files).with_row_index(_ROW_AT), sglang_version)
        check_repeats(rows, files)
        rows = rows.drop(_ROW_AT)
        foreign = sorted({g for g in rows["gpu"].unique().to_list() if g is not None and g != gpu.key})
        if foreign:
            warnings.warn(
                f"calibration tables in {directory} were measured on {foreign}, loaded as {gpu.key!r}",
                stacklevel=2,
            )
        if reference is None and scaled_from and directory is not None:
            reference = _load_reference(Path(directory), gpu)
        if ratios is None and reference is not None:
            ratios = read_ratios(directory, reference.gpu.key)
            if ratios is not None and ratios.target != gpu.key:  # another GPU's ratios would scale this one's
                raise ValueError(
                    f"{directory}/scaled_ratios.yaml: target: {ratios.target!r}, but these are {gpu.key} tables"
                )
        db = cls(gpu, rows, files, Path(directory) if directory is not None else None, reference, ratios)
        db.vintages = vintages
        db.cta_stream = read_cta_stream(directory) or db.cta_stream
        db.shared_reads = read_shared_reads(directory)
        db.prefix_path = read_prefix_path(directory, int(float(gpu.sm)))
        db.spec_verify = read_spec_verify(directory, int(float(gpu.sm)))
        return db

    @classmethod
    def empty(cls, gpu: GpuSpec) -> PerfDB:
        return cls(gpu, _read_tables([]), [], None)

    def table_rows(self) -> pl.DataFrame:
        """Every loaded row, in the schema's columns (failed, held-out and ragged rows included)."""
        return self._rows

    # -- grouping, once per op, on first use: one sort, then each key is a slice of numpy arrays
    def _groups(self, op: str) -> dict[KeyTuple, _KeyPoints]:
        groups = self._grid_rows.get(op)
        if groups is None:
            groups = _group_grid_rows(self._rows, op_spec(op))
            self._grid_rows[op] = groups
        return groups

    def grid_rows(self, op: str, key: Mapping[str, object]) -> pl.DataFrame:
        """This GPU's own rows that a measured curve of this exact key interpolates over (all columns, table
        order); empty when only the scaled-from reference or the roofline covers the key."""
        spec = op_spec(op)
        wanted = key_dict(spec, normalize_key(spec, key))
        match = _grid_row_filter(op)
        for column, value in wanted.items():
            match = match & (pl.col(column).is_null() if value is None else pl.col(column) == value)
        return self._rows.filter(match)

    def has(self, op: str, key: Mapping[str, object]) -> bool:
        """A table covers this key: this GPU's own, or the scaled-from reference's."""
        return self.table_rank(op, key) > 0

    def has_own(self, op: str, key: Mapping[str, object]) -> bool:
        """This GPU's own tables (measured here or imported for this GPU) cover this key."""
        return normalize_key(op_spec(op), key) in self._groups(op)

    def table_rank(self, op: str, key: Mapping[str, object]) -> int:
        """How well a key is covered, for choosing among candidate keys: 2 = a table of this GPU (measured or
        imported for it), 1 = only the scaled-from reference's table, 0 = no table (roofline). A table for the
        target GPU always beats one scaled from another GPU (docs/b200.md, "Precedence")."""
        if self.has_own(op, key):
            return 2
        return 1 if self.reference is not None and self.reference.has(op, key) else 0

    def nearest(self, op: str, key: Mapping[str, object]) -> tuple[dict[str, object], float] | None:
        """This GPU's measured key of the op nearest to `key` and its distance (nearest.py); (key, 0.0) for a key
        with its own table; None when no measured key of the op can stand for it."""
        spec = op_spec(op)
        normalized = normalize_key(spec, key)
        if normalized not in self._nearest:
            if normalized in self._groups(op):
                found: tuple[dict[str, object], float] | None = (key_dict(spec, normalized), 0.0)
            else:
                found = nearest_key(op, key_dict(spec, normalized), self.keys(op))
            self._nearest[(op, normalized)] = found
        return self._nearest[(op, normalized)]

    def covers(self, op: str, key: Mapping[str, object]) -> float | None:
        """How far the tables are from this key: 0 for a key with a table (this GPU's or the scaled-from
        reference's), the nearest key's distance when another key of the op stands in, None when none can (then
        the key is priced by the roofline alone). The cost model picks among candidate keys by it."""
        if self.has(op, key):
            return 0.0
        own = self.nearest(op, key)
        other = self.reference.nearest(op, key) if self.reference is not None else None
        distances = [d for d in (own and own[1], other and other[1] + _CROSS_GPU_DISTANCE) if d is not None]
        return min(distances) if distances else None

    def measured_floors(self) -> dict[tuple[str, str], float]:
        """Per (op, backend): the launch / latency floor of that backend's kernels, measured: the smallest time any
        usable row of this GPU's tables took, where that row is latency-bound (its roofline work is at most half
        its time, as at the grid's smallest shapes). A backend whose fastest row is still work-bound (a grid that
        starts at large shapes) has no floor: its fastest row is not a floor for smaller calls."""
        if self._floors is None:
            usable = self._rows.filter(
                _usable_grid_rows()
                & pl.col("op").is_in(list(OP_SPECS))
                & ~pl.col("op").is_in(list(COLLECTIVE_OPS))
            )
            fastest = usable.sort("time_us").group_by("op", "backend", maintain_order=True).first()
            floors = {}
            for row in fastest.iter_rows(named=True):
                spec = OP_SPECS[row["op"]]
                roofline = Roofline(row["op"], {c: row[c] for c in spec.key_columns}, self.gpu)
                work_us = roofline.time_us_scalar({a: float(row[a]) for a in spec.axis_columns})
                if work_us - roofline.constants.kernel_floor_us <= 0.5 * row["time_us"]:
                    floors[(row["op"], row["backend"])] = float(row["time_us"])
            self._floors = floors
        return self._floors

    def prefill_rates(self, op: str, key: Mapping[str, object]) -> KeyRates | None:
        """The key's own uniform grid rows as prefillplan.KeyRates (a ragged extend's critical path priced at the
        key's rate); None where the op and backend have no modelled planner or this GPU has no rows of the key."""
        spec = op_spec(op)
        normalized = normalize_key(spec, key)
        cache_key = (op, normalized)
        if cache_key not in self._prefill_rates:
            found = None
            points = self._groups(op).get(normalized) if prefillplan.planned(op, key) else None
            if points is not None:  # the rows the key's curve interpolates over (axes: batch, q_len, kv_len)
                batch, q_len, kv_len = points.axes.T
                found = KeyRates.of(
                    batch,
                    q_len,
                    kv_len,
                    points.us,
                    heads=int(key["num_heads"]),  # type: ignore[call-overload]
                    head_dim_v=int(key["head_dim_v"]),  # type: ignore[call-overload]
                    num_sms=self.gpu.num_sms,
                )
            self._prefill_rates[cache_key] = found
        return self._prefill_rates[cache_key]

    def keys(self, op: str) -> list[dict]:
        """Measured keys of an op (those with at least one usable grid row), for choosing candidates."""
        spec = op_spec(op)
        found = sorted(self._groups(op), key=lambda k: tuple(("" if v is None else str(v)) for v in k))
        return [key_dict(spec, k) for k in found]

    def curve(self, op: str, key: Mapping[str, object]) -> OpCurve:
        spec = op_spec(op)
        normalized = normalize_key(spec, key)
        cached = self._curves.get((op, normalized))
        if cached is None:
            cached = self._build_curve(spec, normalized)
            self._curves[(op, normalized)] = cached
        return cached

    def lookup(self, op: str, key: Mapping[str, object], **axes: float) -> Timing:
        return self.curve(op, key).timing(**axes)

    def _build_curve(self, spec: OpSpec, key: KeyTuple) -> OpCurve:
        roofline = Roofline(spec.name, key_dict(spec, key), self.gpu)
        points = self._groups(spec.name).get(key)
        if points is not None and spec.name in CAUSAL_PREFIX_OPS:
            names = (*spec.axis_columns[:2], PREFIX_AXIS)

            def roofline_of_prefix(axes: dict[str, np.ndarray]) -> np.ndarray:
                kv = axes[PREFIX_AXIS] - 1.0 + axes["q_len"]
                return roofline.time_us({"batch": axes["batch"], "q_len": axes["q_len"], "kv_len": kv})

            def scalar_roofline_of_prefix(axes: dict[str, float]) -> float:
                kv = axes[PREFIX_AXIS] - 1.0 + axes["q_len"]  # the same operations as roofline_of_prefix
                return roofline.time_us_scalar({"batch": axes["batch"], "q_len": axes["q_len"], "kv_len": kv})

            grid_axes = np.column_stack(_prefix_arrays(list(points.axes.T)))
            grid = build_grid(
                names, grid_axes, points.us, points.labels, roofline_of_prefix, scalar_roofline_of_prefix
            )
            if grid is not None:
                return OpCurve(spec, key, _PrefixGridModel(grid, points.third_party), measured=True)
        elif points is not None:
            grid = build_grid(
                spec.axis_columns,
                points.axes,
                points.us,
                points.labels,
                roofline.time_us,
                roofline.time_us_scalar,
                monotone_axes(spec.name, key_dict(spec, key)),
            )
            if grid is not None:
                return OpCurve(spec, key, _GridModel(grid, points.third_party), measured=True)
        if spec.name in COLLECTIVE_OPS:
            model = self._alpha_beta(spec, key)
            if model is not None:
                group = int(key_dict(spec, key)["group_size"])  # type: ignore[arg-type]
                return OpCurve(spec, key, _AlphaBetaCurveModel(model, group), False, "alpha-beta")
        wanted = key_dict(spec, key)
        if self.reference is not None and self.reference.has(spec.name, wanted):
            model = _ScaledCurveModel(self._scaled(spec, key, roofline))
            return OpCurve(spec, key, model, measured=False, backing="scaled-from")
        own = self.nearest(spec.name, wanted)
        other = self.reference.nearest(spec.name, wanted) if self.reference is not None else None
        if own is not None and (other is None or own[1] <= other[1] + _CROSS_GPU_DISTANCE):
            return OpCurve(spec, key, self._scaled_key(spec, wanted, own[0], roofline), False, "scaled-key")
        if other is not None:  # the reference's nearest key, then the reference GPU scaled to this one
            model = _ScaledCurveModel(self._scaled(spec, key, roofline))
            return OpCurve(spec, key, model, measured=False, backing="scaled-from")
        return OpCurve(spec, key, _RooflineModel(roofline), measured=False)

    def _scaled_key(
        self, spec: OpSpec, wanted: dict[str, object], near: dict[str, object], roofline: Roofline
    ) -> _ScaledKeyModel:
        floors = self.measured_floors()
        floor = None
        for backend in (wanted.get("backend"), near.get("backend")):
            us = floors.get((spec.name, str(backend)))
            if us is not None:
                floor = (us, f"fastest measured {spec.name} {backend} row on {self.gpu.key}")
                break
        near_curve = self.curve(spec.name, near)
        near_roofline = Roofline(spec.name, near, self.gpu)
        return _ScaledKeyModel(
            near_curve, near_roofline, roofline, floor, describe_substitution(wanted, near)
        )

    def _scaled(self, spec: OpSpec, key: KeyTuple, roofline: Roofline) -> ScaledModel:
        reference = self.reference
        assert reference is not None
        curve = reference.curve(spec.name, key_dict(spec, key))
        reference_roofline = Roofline(spec.name, key_dict(spec, key), reference.gpu)
        # Sliced along an axis (OpCurve.along), a scaled curve is sampled densely: the roofline ratio bends
        # inside the reference's grid cells, so the reference's breakpoints alone would not reproduce it.
        return ScaledModel(curve, reference_roofline, roofline, reference.gpu.key, self.ratios)

    def _alpha_beta(self, spec: OpSpec, key: KeyTuple) -> AlphaBetaModel | None:
        """Fit on the measured group of the same backend and dtype closest to the requested one (the largest
        smaller group if any, else the smallest larger one)."""
        wanted = key_dict(spec, key)
        target = int(wanted["group_size"])  # type: ignore[arg-type]
        candidates: dict[int, _KeyPoints] = {}
        for other, points in self._groups(spec.name).items():
            other_key = key_dict(spec, other)
            same = all(other_key[c] == wanted[c] for c in spec.key_columns if c != "group_size")
            group = other_key["group_size"]
            if same and isinstance(group, int) and group > 1:
                candidates[group] = points
        if not candidates or target <= 1:
            return None
        smaller = [g for g in candidates if g < target]
        chosen = max(smaller) if smaller else min(candidates)
        points = candidates[chosen]
        return fit_alpha_beta(
            spec.name, chosen, points.axes[:, 0], points.us, achievable_link_bytes_per_s(self.gpu)
        )

    # -- reports
    def provenance(self) -> dict:
        """GPU, library versions and measurement dates found in the tables."""
        rows = self._rows
        info: dict[str, object] = {
            "gpu": self.gpu.key,
            "directory": str(self.directory) if self.directory is not None else None,
            "files": [f.name for f in self.files],
            "rows": rows.height,
            "table_gpus": _distinct(rows, "gpu"),
            "schema_versions": sorted({_schema_version(f) for f in self.files} - {None}),
            "scaled_from": self.reference.gpu.key if self.reference is not None else None,
            "vintages": [v.describe() for v in self.vintages],
            "scaled_ratios": self.ratios.provenance if self.ratios is not None else None,
            "cta_stream": self.cta_stream.provenance if self.cta_stream is not None else None,
            "shared_reads": self.shared_reads.provenance if self.shared_reads is not None else None,
            "prefix_path": self.prefix_path.provenance if self.prefix_path is not None else None,
            "spec_verify": self.spec_verify.provenance if self.spec_verify is not None else None,
        }
        for column in _PROVENANCE_LISTS:
            info[column] = _distinct(rows, column)
        dates = rows["date"].drop_nulls()
        info["date_min"] = dates.min() if dates.len() else None
        info["date_max"] = dates.max() if dates.len() else None
        return info

    def coverage(self) -> pl.DataFrame:
        """Per op and key: usable grid points and row counts by status and sample."""
        frames = []
        for op in sorted(set(self._rows["op"].drop_nulls().unique().to_list())):
            rows = self._rows.filter(pl.col("op") == op)
            spec = OP_SPECS.get(op)
            key_columns = list(spec.key_columns) if spec else []
            key_expr = (
                pl.concat_str(
                    [
                        pl.format(f"{c}={{}}", pl.col(c).cast(pl.String).fill_null("null"))
                        for c in key_columns
                    ],
                    separator=", ",
                )
                if key_columns
                else pl.lit("")
            )
            usable = (pl.col("status") == "ok") & (pl.col("sample").is_null() | (pl.col("sample") == "grid"))
            axis_columns = list(spec.axis_columns) if spec else []
            point_id = pl.concat_str([pl.col(c).cast(pl.String) for c in axis_columns], separator="x")
            counted = (
                rows.with_columns(key=key_expr)
                .group_by("key", maintain_order=True)
                .agg(
                    points=(point_id.filter(usable).n_unique() if axis_columns else pl.lit(0)),
                    grid=(pl.col("sample").is_null() | (pl.col("sample") == "grid")).sum(),
                    heldout=(pl.col("sample") == "heldout").sum(),
                    ragged=(pl.col("sample") == "ragged").sum(),
                    ok=(pl.col("status") == "ok").sum(),
                    failed=(pl.col("status") == "failed").sum(),
                    unsupported=(pl.col("status") == "unsupported").sum(),
                    rows=pl.len(),
                )
            )
            frames.append(counted.with_columns(op=pl.lit(op)))
        schema = {
            "op": pl.String,
            "key": pl.String,
            **{
                c: pl.UInt32
                for c in ("points", "grid", "heldout", "ragged", "ok", "failed", "unsupported", "rows")
            },
        }
        if not frames:
            return pl.DataFrame(schema=schema)
        return pl.concat([f.select(list(schema)).cast(schema) for f in frames]).sort("op", "key")  # type: ignore[arg-type]


@dataclass(frozen=True)
class _KeyPoints:
    """The usable grid rows of one op + key."""

    axes: np.ndarray  # (N, d) float64, in OpSpec.axis_columns order
    us: np.ndarray  # (N,)
    labels: np.ndarray  # (N,) int8: measured or third_party
    third_party: str | None = None  # the source string of the key's third-party rows, if any


def _usable_grid_rows() -> pl.Expr:
    """Rows that time something: ok, grid samples (or unlabelled), a positive time."""
    return (
        (pl.col("status") == "ok")
        & (pl.col("sample").is_null() | (pl.col("sample") == "grid"))
        & (pl.col("time_us") > 0)
    )


def _grid_row_filter(op: str) -> pl.Expr:
    """The rows of an op that curves interpolate over: ok, grid samples (or unlabelled), with a time."""
    return (
        (pl.col("op") == op)
        & (pl.col("status") == "ok")
        & (pl.col("sample").is_null() | (pl.col("sample") == "grid"))
        & pl.col("time_us").is_not_null()
    )


def _group_grid_rows(rows: pl.DataFrame, spec: OpSpec) -> dict[KeyTuple, _KeyPoints]:
    key_columns = list(spec.key_columns)
    usable = (
        rows.lazy()
        .filter(_grid_row_filter(spec.name))
        .select(
            *key_columns,
            *(pl.col(c).cast(pl.Float64) for c in spec.axis_columns),
            "time_us",
            third_party=pl.col("source").fill_null("measured").str.starts_with("third-party"),
        )
        .sort(key_columns, nulls_last=True, maintain_order=True)
        .collect()
    )
    if usable.height == 0:
        return {}
    bounds = (
        usable.select(key_columns)
        .with_row_index("_row")
        .group_by(key_columns, maintain_order=True)
        .agg(start=pl.col("_row").min(), count=pl.len())
    )
    axes = (
        usable.select(spec.axis_columns).to_numpy().astype(np.float64, copy=False).reshape(usable.height, -1)
    )
    us = usable["time_us"].to_numpy()
    third = usable["third_party"].to_numpy()
    labels = np.where(third, _THIRD_PARTY, _MEASURED).astype(np.int8)
    sources = _third_party_sources(rows, spec) if third.any() else {}
    groups: dict[KeyTuple, _KeyPoints] = {}
    for *key, start, count in bounds.iter_rows():
        part = slice(start, start + count)
        groups[tuple(key)] = _KeyPoints(axes[part], us[part], labels[part], sources.get(tuple(key)))
    return groups


def _third_party_sources(rows: pl.DataFrame, spec: OpSpec) -> dict[KeyTuple, str]:
    """Per key of an op, the source string of its third-party rows ("third-party:<tool> <version>")."""
    key_columns = list(spec.key_columns)
    found = (
        rows.lazy()
        .filter((pl.col("op") == spec.name) & pl.col("source").str.starts_with("third-party"))
        .group_by(key_columns)
        .agg(pl.col("source").first())
        .collect()
    )
    return {tuple(key): source for *key, source in found.iter_rows()}


def _load_reference(directory: Path, gpu: GpuSpec) -> PerfDB | None:
    """The scaled-from reference named in the directory's scaled_from.yaml (never itself scaled)."""
    reference_gpu = read_scaled_from(directory)
    if reference_gpu is None:
        return None
    if reference_gpu == gpu.key:  # a directory scaled from itself prices nothing it lacks, silently
        raise ValueError(f"{directory}/scaled_from.yaml: reference: {gpu.key} is this directory's own GPU")
    reference_dir = reference_directory(directory, reference_gpu)
    if not reference_dir.is_dir():
        warnings.warn(
            f"{directory}: scaled_from names {reference_gpu!r} but {reference_dir} does not exist; "
            "keys without a table fall back to the roofline",
            stacklevel=3,
        )
        return None
    return PerfDB.load(reference_dir, get_gpu(reference_gpu), scaled_from=False)


def _distinct(rows: pl.DataFrame, column: str) -> list[str]:
    return sorted(str(v) for v in rows[column].drop_nulls().unique().to_list())


def _schema_version(path: Path) -> str | None:
    metadata = pq.read_schema(path).metadata or {}
    value = metadata.get(b"simperf_schema_version")
    return value.decode() if value is not None else None


def check_schema_version(path: Path) -> None:
    """A table written under another schema version (simperf_schema_version in its Parquet metadata) is refused:
    its columns may mean something else, and it was read as this version's without a word. A table without the
    field (written by other tools) is read by its columns alone."""
    version = _schema_version(path)
    if version is not None and version != str(SCHEMA_VERSION):
        raise ValueError(
            f"{path}: a table of schema version {version} (simperf_schema_version in its Parquet metadata); this "
            f"simperf reads version {SCHEMA_VERSION}: rewrite it with this simperf (simperf calibrate, or calibrate "
            "import), or read it with the simperf that wrote it"
        )


def _polars_schema() -> dict[str, pl.DataType]:
    return dict(pl.from_arrow(arrow_schema().empty_table()).schema)  # type: ignore[union-attr]


_STATUSES = ("ok", "failed", "unsupported")
_SAMPLES = ("grid", "heldout", "ragged")


def check_table_rows(frame: pl.DataFrame, path: Path) -> None:
    """A table whose rows can time something: the columns its ops are keyed and interpolated on (a column a
    newer schema added may be absent; these never were), known statuses, and a positive finite time on every
    usable row. A NaN, negative or missing time would otherwise be interpolated as if measured."""
    if "op" not in frame.columns:  # not a calibration table at all: the callers name that (locate.py)
        return
    check_schema_version(path)
    _check_key_spelling(frame, path)
    check_key_vocabulary(frame, path)
    needed = {"status", "time_us"}
    ops = frame["op"].drop_nulls().unique().to_list()
    for op in ops:
        if op in OP_SPECS:
            needed |= set(OP_SPECS[op].axis_columns) | set(OP_SPECS[op].key_columns)
    absent = sorted(needed - set(frame.columns))
    if absent:
        raise ValueError(f"{path}: not a calibration table: no column {', '.join(absent)}")
    statuses = set(frame["status"].unique().to_list()) - set(_STATUSES)
    if statuses:
        raise ValueError(
            f"{path}: status: got {sorted(map(str, statuses))}; allowed values: {', '.join(_STATUSES)}"
        )
    samples = (
        set(frame["sample"].drop_nulls().unique().to_list()) - set(_SAMPLES)
        if "sample" in frame.columns
        else set()
    )
    if samples:  # an unknown label made its rows unusable: neither interpolated over nor checked
        row = int((frame["sample"].is_in(sorted(map(str, samples)))).arg_true()[0])
        raise ValueError(
            f"{path}: row {row}: sample: got {sorted(map(str, samples))}; allowed values: {', '.join(_SAMPLES)} "
            "(or empty, read as grid)"
        )
    _check_integers(frame, path)
    times = frame["time_us"].cast(pl.Float64, strict=False)
    bad = (
        (frame["status"] == "ok") & ~(times.is_finite().fill_null(False) & (times > 0).fill_null(False))
    ).arg_true()
    if bad.len():
        row = int(bad[0])
        raise ValueError(
            f"{path}: row {row}: time_us is {times[row]} on a status 'ok' row ({bad.len()} such rows); "
            "a usable row needs a positive finite time (mark it failed, or recalibrate)"
        )
    for op in ops:
        if op in OP_SPECS:
            _check_axes(frame, path, op, OP_SPECS[op].axis_columns)


# The string columns a query matches exactly (and the gpu a directory is checked against). simperf calibrate and
# the importers write them lowercase without spaces; a row keyed 'bf16 ' or 'BF16' matched no query, so the key
# fell back to the nearest other key or the roofline without a word.
_KEY_STRING_COLUMNS = (*STRING_KEY_COLUMNS, "gpu")


# Rows at one point of one key are repeats of one measurement, combined by their median (in log space: for two rows
# their geometric mean). Repeats agree: a heavy decode kernel timed in different sessions on these hosts varies up
# to ~16% ("GQA decode buckets" in docs/perfdb.md), and the widest spread the shipped tables hold is 1.81x, H200
# collectives below 16 MiB where simperf's event-timed rows (upper bounds: the launch gap) meet AIConfigurator's
# (docs/calibration.md). Rows further apart than this are not repeats (a unit slip, another kernel, a broken run):
# their median moved a decode's TPOT 7.06 -> 23.14 ms when one row was 10x its neighbour. Refused, naming both rows.
REPEAT_SPREAD_LIMIT = 2.0
_ROW_AT = "_row_at"  # a row's index in the concatenated tables, to name its file and row


def check_repeats(rows: pl.DataFrame, files: Sequence[Path]) -> None:
    """No point of any key holds usable rows more than REPEAT_SPREAD_LIMIT apart (rows carry _ROW_AT)."""

    def where(at: int) -> str:  # only on a refusal: the files' row counts are read then, not on every load
        starts = np.cumsum([0] + [pq.read_metadata(f).num_rows for f in files])
        i = int(np.searchsorted(starts, at, side="right")) - 1
        return f"{files[i]} row {at - int(starts[i])}"

    for op in sorted(set(rows["op"].drop_nulls().unique().to_list()) & set(OP_SPECS)):
        spec = OP_SPECS[op]
        point = [*spec.key_columns, *spec.axis_columns]
        spread = (
            rows.filter(_grid_row_filter(op) & (pl.col("time_us") > 0))
            .group_by(point)
            .agg(
                count=pl.len(),
                low=pl.col("time_us").min(),
                high=pl.col("time_us").max(),
                low_at=pl.col(_ROW_AT).sort_by("time_us").first(),
                high_at=pl.col(_ROW_AT).sort_by("time_us").last(),
            )
            .filter(pl.col("high") > REPEAT_SPREAD_LIMIT * pl.col("low"))
        )
        if spread.height == 0:
            continue
        worst = spread.sort(pl.col("high") / pl.col("low"), descending=True).row(0, named=True)
        key = format_key(spec, tuple(worst[c] for c in spec.key_columns))
        at = _format_point(spec.axis_columns, [worst[c] for c in spec.axis_columns])
        raise ValueError(
            f"{where(worst['high_at'])}: {op} ({key}) at {at} times {worst['high']:.4g} us, but "
            f"{where(worst['low_at'])} times the same point {worst['low']:.4g} us "
            f"(x{worst['high'] / worst['low']:.2f}; {worst['count']} rows there, {spread.height} such points); rows "
            f"at one point are repeats, combined by their median, and repeats more than x{REPEAT_SPREAD_LIMIT:g} apart "
            "are not (a unit slip, another kernel, a broken run): remove the wrong row or mark it failed"
        )


def _check_integers(frame: pl.DataFrame, path: Path) -> None:
    """The schema's integer columns hold whole numbers: a table written with floats there (m = 64.5) was cast to the
    schema's int64 by truncation, so the row timed m = 64 without a word."""
    for column, dtype in _polars_schema().items():
        if column not in frame.columns or not dtype.is_integer() or not frame[column].dtype.is_float():
            continue
        values = frame[column]
        bad = (values.is_finite() & (values != values.floor())).fill_null(False).arg_true()
        if bad.len():
            row = int(bad[0])
            raise ValueError(
                f"{path}: row {row}: {column} is {values[row]} ({bad.len()} such rows); {column} is an integer "
                "column of the calibration schema (a fraction was truncated without a word): correct the row"
            )


def _check_key_spelling(frame: pl.DataFrame, path: Path) -> None:
    """Every key string is spelt as a query spells it: lowercase, no surrounding whitespace."""
    for column in _KEY_STRING_COLUMNS:
        if column not in frame.columns or frame[column].dtype != pl.String:
            continue
        values = frame[column]
        bad = (values.is_not_null() & (values != values.str.strip_chars().str.to_lowercase())).arg_true()
        if bad.len():
            row = int(bad[0])
            value = str(values[row])
            raise ValueError(
                f"{path}: row {row}: {column} is {value!r} ({bad.len()} such rows); key values are lowercase "
                f"without surrounding spaces, as simperf calibrate writes them ({value.strip().lower()!r}), and a "
                "row spelt otherwise matches no query: correct the column"
            )


def check_key_vocabulary(frame: pl.DataFrame, path: Path) -> None:
    """Every row names a known op, and its key strings are values simperf queries or writes (vocabulary.py): a row
    keyed dtype 'bf17', backend 'flashinfr' or variant 'rmsnrom' matched no query, and the key it was meant to time
    was priced from another key, another GPU or the roofline without a word."""
    ops = frame["op"]
    unknown = sorted({str(op) for op in ops.drop_nulls().unique().to_list()} - set(OP_SPECS))
    if unknown:
        bad = ops.is_in(unknown).fill_null(False)
        row = int(bad.arg_true()[0])
        value = str(ops[row])
        near = difflib.get_close_matches(value, sorted(OP_SPECS), n=3, cutoff=0.5)
        hint = f"nearest: {', '.join(near)}; " if near else ""
        raise ValueError(
            f"{path}: row {row}: op is {value!r} ({int(bad.sum())} such rows); not an op of the calibration schema "
            f"({hint}known: {', '.join(sorted(OP_SPECS))}): correct the column"
        )
    for op in sorted(str(op) for op in ops.drop_nulls().unique().to_list()):
        of_op = (ops == op).fill_null(False)
        for column in OP_SPECS[op].key_columns:
            if column not in vocabulary.VOCABULARY_COLUMNS or column not in frame.columns:
                continue
            if frame[column].dtype != pl.String:
                continue
            values = frame[column]
            present = values.filter(of_op).drop_nulls().unique().to_list()
            refused = sorted(v for v in present if not vocabulary.allowed(op, column, v))
            if not refused:
                continue
            bad = of_op & values.is_in(refused).fill_null(False)
            row = int(bad.arg_true()[0])
            value = str(values[row])
            raise ValueError(
                f"{path}: row {row}: {op} {column} is {value!r} ({int(bad.sum())} such rows); "
                f"{vocabulary.describe_refusal(op, column, value)}; a row keyed so matches no query: correct the "
                "column (simperf/perfdb/vocabulary.py says where the names come from)"
            )


def _check_axes(frame: pl.DataFrame, path: Path, op: str, axes: Sequence[str]) -> None:
    """Every status 'ok' row of `op` sits at a point: each axis a positive finite number. A missing axis ended
    in an internal error (TypeError), a negative one in a RecursionError, once a prediction interpolated there."""
    ok = (frame["op"] == op) & (frame["status"] == "ok")
    for axis in axes:
        values = frame[axis].cast(pl.Float64, strict=False)
        bad = (ok & ~(values.is_finite().fill_null(False) & (values > 0).fill_null(False))).arg_true()
        if bad.len():
            row = int(bad[0])
            raise ValueError(
                f"{path}: row {row}: {op} {axis} is {frame[axis][row]} on a status 'ok' row ({bad.len()} such "
                f"rows); a timed point needs every axis ({', '.join(axes)}) a positive number (mark it failed, "
                "or recalibrate)"
            )


def _read_tables(files: Sequence[Path]) -> pl.DataFrame:
    """Concatenate tables in the schema's column types; a column a table lacks becomes null."""
    schema = _polars_schema()
    aligned = []
    for path in files:
        frame = pl.read_parquet(path)
        check_table_rows(frame, path)
        missing = [
            pl.lit(None, dtype=dtype).alias(name)
            for name, dtype in schema.items()
            if name not in frame.columns
        ]
        aligned.append(frame.with_columns(missing).select(list(schema)).cast(schema))  # type: ignore[arg-type]
    if not aligned:
        return pl.DataFrame(schema=schema)
    return pl.concat(aligned, how="vertical")
