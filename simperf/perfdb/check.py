"""Checks of a calibration directory: how well the interpolator predicts points it never saw, and what is covered.

Held-out rows (sample "heldout") are measured off the grid on purpose; the interpolator is built from grid rows
only, so predicting them measures interpolation error honestly. Decode ops with a modelled KV planner
(perfdb/workplan.py) are priced with its work-plan factor, as the off-grid check prices them (the simulator's
decode step does not use it yet). `simperf perfdb check DIR` prints both.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from simperf.hardware.catalog import GpuSpec, get_gpu, gpu_keys
from simperf.perfdb import workplan
from simperf.perfdb.db import PerfDB
from simperf.perfdb.keys import format_key, key_dict
from simperf.perfdb.locate import directory_gpu
from simperf.perfdb.schema import OP_SPECS, SOURCES, op_family


def resolve_gpu(directory: Path, gpu: GpuSpec | str | None = None) -> GpuSpec:
    """The GPU a calibration directory was measured on: as given, else as a prediction reads it
    (locate.directory_gpu: the tables' gpu column, else device.json, else the directory's name)."""
    if isinstance(gpu, GpuSpec):
        return gpu
    if isinstance(gpu, str):
        return get_gpu(gpu)
    found: dict[str, str] = {}  # GPU -> the first table measured on it
    empty: list[str] = []
    for path in sorted(Path(directory).glob("*.parquet")):
        column = pl.read_parquet(path, columns=["gpu"])["gpu"]
        if column.is_empty():
            empty.append(path.name)
        for g in column.drop_nulls().unique().sort().to_list():
            found.setdefault(g, path.name)
    if len(found) > 1:
        tables = ", ".join(f"{g} ({name})" for g, name in sorted(found.items()))
        raise ValueError(
            f"{directory}: tables measured on several GPUs: {tables}; a calibration directory holds one GPU's tables"
        )
    said = directory_gpu(Path(directory), list(found))
    if said is None and empty and not found:
        # 'its tables record no gpu ... fill the tables' gpu column' sent the user to a column of no rows
        raise ValueError(
            f"{directory}: its tables hold no rows ({', '.join(empty)}): nothing was measured; calibrate into it "
            "(`simperf calibrate --out`) or give a directory of measured tables"
        )
    if said is None:
        raise ValueError(
            f"{directory}: its tables record no gpu, it has no device.json naming one, and its name is no GPU "
            f"(unknown GPU {Path(directory).resolve().name!r}; the catalogue knows: {', '.join(gpu_keys())}); fill "
            "the tables' gpu column"
        )
    try:
        return get_gpu(said[0])
    except ValueError as exc:  # name the directory and where the GPU was read
        raise ValueError(f"{directory}: {said[1]}: {exc}") from None


_ERROR_SCHEMA = {
    "op": pl.String,
    "family": pl.String,
    "key": pl.String,
    "point": pl.String,
    "measured_us": pl.Float64,
    "predicted_us": pl.Float64,
    "rel_error": pl.Float64,  # predicted / measured - 1
    "source": pl.String,  # label of the prediction
}


def heldout_errors(directory: Path, gpu: GpuSpec | str | None = None) -> pl.DataFrame:
    """One row per usable held-out point: the measured time, the prediction from the grid rows, the error."""
    db = PerfDB.load(Path(directory), resolve_gpu(directory, gpu))
    heldout = db.table_rows().filter(
        (pl.col("sample") == "heldout") & (pl.col("status") == "ok") & pl.col("time_us").is_not_null()
    )
    frames = []
    for op in sorted(set(heldout["op"].drop_nulls().to_list()) & set(OP_SPECS)):
        spec = OP_SPECS[op]
        rows = heldout.filter(pl.col("op") == op)
        for key, group in rows.partition_by(
            list(spec.key_columns), as_dict=True, maintain_order=True
        ).items():
            group = group.drop_nulls(list(spec.axis_columns))
            if group.height == 0:
                continue
            curve = db.curve(op, key_dict(spec, tuple(key)))
            axes = {name: group[name].cast(pl.Float64).to_numpy() for name in spec.axis_columns}
            predicted, source = curve(**axes)
            if workplan.planned(op, curve.key):  # decode with a modelled KV planner: where its chunks fall
                predicted = np.array(
                    [
                        workplan.planned_us(curve, np.full(int(b), int(k)), db.gpu.num_sms)[0]
                        for b, k in zip(axes["batch"], axes["kv_len"], strict=True)
                    ]
                )
            measured = group["time_us"].to_numpy()
            points = [
                ", ".join(f"{name}={int(axes[name][i])}" for name in spec.axis_columns)
                for i in range(group.height)
            ]
            frames.append(
                pl.DataFrame(
                    {
                        "op": [op] * group.height,
                        "family": [op_family(op)] * group.height,
                        "key": [format_key(spec, tuple(key))] * group.height,
                        "point": points,
                        "measured_us": measured,
                        "predicted_us": predicted,
                        "rel_error": predicted / measured - 1.0,
                        "source": [SOURCES[int(s)] for s in np.atleast_1d(source)],
                    },
                    schema=_ERROR_SCHEMA,
                )
            )
    if not frames:
        return pl.DataFrame(schema=_ERROR_SCHEMA)
    return pl.concat(frames)


def heldout_summary(errors: pl.DataFrame) -> pl.DataFrame:
    """Per op family: count, median and p90 of |relative error|, and the worst point's error."""
    abs_error = pl.col("rel_error").abs()
    return (
        errors.group_by("family")
        .agg(
            count=pl.len(),
            median_abs_rel_error=abs_error.median(),
            p90_abs_rel_error=abs_error.quantile(0.9, interpolation="linear"),
            max_abs_rel_error=abs_error.max(),
        )
        .sort("family")
    )


def summarize_coverage(directory: Path, gpu: GpuSpec | str | None = None) -> pl.DataFrame:
    """Per op and key: usable grid points and row counts by status and sample (PerfDB.coverage)."""
    return PerfDB.load(Path(directory), resolve_gpu(directory, gpu)).coverage()
