"""The scaled-from fallback: price an op on a GPU with no table for it from a measured GPU's table.

Where the target directory has measured ratios against the reference (ratios.py, `scaled_ratios.yaml`), the
reference's time is multiplied by the measured target/reference ratio of its regime (op family, memory- or
compute-bound, efficiency against the reference's roofline); the detail says "x measured <t>/<r> ratio". Otherwise
(and for a family no common point measured) it is scaled by the ratio of the two rooflines, as below.

On the reference GPU every answer t_ref(x) of the op's curve has an efficiency relative to that GPU's roofline,
eff(x) = roofline_ref(x) / t_ref(x), as a function of the op's axes (exact on the reference's grid points,
interpolated between them exactly as the reference's own lookups are). The target GPU is assumed to reach the same
efficiency against its own roofline: t_target(x) = roofline_target(x) / eff(x) = t_ref(x) * roofline_target(x) /
roofline_ref(x). The two rooflines are evaluated separately, so a point memory-bound on one GPU and compute-bound on
the other gets the right bound on each. Every answer is labelled `extrapolated` and its detail starts with
`scaled-from:<reference gpu>`.

Which reference a calibration directory falls back to is data, not code: `calibration/<gpu>/scaled_from.yaml`
(`reference: h200`) names a sibling directory; `PerfDB.load` reads it. docs/b200.md and docs/perfdb.md describe it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import yaml

from simperf.hardware.catalog import get_gpu
from simperf.perfdb.ratios import RatioTable, ratio_for
from simperf.perfdb.roofline import Roofline
from simperf.perfdb.schema import SOURCE_INDEX
from simperf.strictyaml import safe_load

SCALED_FROM_FILE = "scaled_from.yaml"
_EXTRAPOLATED = SOURCE_INDEX["extrapolated"]

CurveFn = Callable[..., tuple[np.ndarray, np.ndarray]]


def scaled_from_label(reference_gpu: str) -> str:
    return f"scaled-from:{reference_gpu}"


def read_scaled_from(directory: Path | None) -> str | None:
    """The reference GPU key a calibration directory names in scaled_from.yaml, or None."""
    if directory is None:
        return None
    path = Path(directory) / SCALED_FROM_FILE
    if not path.is_file():
        return None
    try:
        data = safe_load(path.read_text(encoding="utf-8")) or {}  # simperf's: a key given twice is refused
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or set(data) != {"reference"} or not isinstance(data["reference"], str):
        raise ValueError(f"{path}: expected exactly one key 'reference: <gpu key>', got {data!r}")
    try:
        get_gpu(data["reference"])
    except ValueError as exc:
        raise ValueError(f"{path}: reference: {exc}") from None
    return data["reference"]


def reference_directory(directory: Path, reference_gpu: str) -> Path:
    """The reference's tables sit next to the target's: calibration/<reference_gpu>/."""
    return Path(directory).parent / reference_gpu


class ScaledModel:
    """An op curve of the target GPU: the reference GPU's curve times the ratio of the two rooflines."""

    def __init__(
        self,
        reference_curve: object,  # the reference PerfDB's OpCurve for the same op and key
        reference_roofline: Roofline,
        target_roofline: Roofline,
        reference_gpu: str,
        ratios: RatioTable | None = None,
    ) -> None:
        self.reference_curve = reference_curve
        self.reference_roofline = reference_roofline
        self.target_roofline = target_roofline
        self.reference_gpu = reference_gpu
        self.ratios = ratios
        self.names = target_roofline.spec.axis_columns

    def _ratio(self, axes: dict) -> np.ndarray:
        target = np.asarray(self.target_roofline.time_us(axes), dtype=np.float64)
        reference = np.asarray(self.reference_roofline.time_us(axes), dtype=np.float64)
        # A group of one GPU costs nothing on either side: keep the reference's (zero) answer.
        return np.divide(target, reference, out=np.ones_like(target), where=reference > 0)

    def _measured_ratio(self, axes: dict, reference_us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ratio, measured?) per point: the measured ratio of the point's regime where there is one."""
        roofline = self._ratio(axes)
        if self.ratios is None:
            return roofline, np.zeros(roofline.shape, dtype=bool)
        bound = np.broadcast_to(self.reference_roofline.memory_bound(axes), roofline.shape)
        reference_roofline = np.asarray(self.reference_roofline.time_us(axes), dtype=np.float64)
        efficiency = np.divide(
            reference_roofline, reference_us, out=np.ones_like(reference_roofline), where=reference_us > 0
        )
        measured, found = ratio_for(
            self.ratios, self.reference_roofline.op, bound, np.broadcast_to(efficiency, roofline.shape)
        )
        return np.where(found, measured, roofline), found

    def evaluate(self, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        axes = dict(zip(self.names, xs, strict=True))
        us, _ = self.reference_curve(**axes)  # type: ignore[operator]
        us = np.asarray(us, dtype=np.float64)
        ratio, _ = self._measured_ratio(axes, us)
        us = us * ratio
        return us, np.full(us.shape, _EXTRAPOLATED, dtype=np.int8)

    def evaluate_scalar(self, xs: Sequence[float]) -> tuple[float, int]:
        us, _ = self.evaluate([np.asarray(x, dtype=np.float64) for x in xs])
        return float(us), _EXTRAPOLATED

    def explain(self, xs: Sequence[float]) -> tuple[float, str]:
        axes = dict(zip(self.names, xs, strict=True))
        reference = self.reference_curve.timing(**axes)  # type: ignore[attr-defined]
        arrays = {k: np.asarray(v, dtype=np.float64) for k, v in axes.items()}
        ratio_array, found = self._measured_ratio(arrays, np.asarray(reference.us, dtype=np.float64))
        ratio = float(ratio_array)
        how = (
            reference.source
            if reference.detail == reference.source
            else f"{reference.source}: {reference.detail}"
        )
        target = self.target_roofline.gpu.key
        scale = f"x roofline {target}/{self.reference_gpu} {ratio:.3g}"
        if bool(found):
            scale = f"x measured {target}/{self.reference_gpu} ratio {ratio:.3g} ({self._regime(arrays, reference.us)})"
        detail = f"{scaled_from_label(self.reference_gpu)}: {reference.us:.4g} us on {self.reference_gpu} ({how}) {scale}"
        return reference.us * ratio, detail

    def _regime(self, axes: dict, reference_us: float) -> str:
        from simperf.perfdb.schema import op_family

        assert self.ratios is not None
        bound = "memory" if bool(self.reference_roofline.memory_bound(axes)) else "compute"
        efficiency = float(self.reference_roofline.time_us(axes)) / reference_us
        hit = self.ratios.lookup(op_family(self.reference_roofline.op), bound, efficiency)
        assert hit is not None
        cell, bucket = hit
        return (
            f"{op_family(self.reference_roofline.op)}, {bound}-bound, {self.ratios.describe_bucket(bucket)}: "
            f"median of {cell.points} common points"
        )
