"""Which calls the tables measured exactly: the off-grid set redraws a uniform sample that lands on one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from simperf.calibrate.points import Point
from simperf.perfdb.offgrid.samples import OnGrid
from simperf.perfdb.schema import OP_SPECS


def _identity(op: str, values: dict) -> tuple:
    spec = OP_SPECS[op]
    return (op, *(values.get(c) for c in spec.key_columns), *(values.get(a) for a in spec.axis_columns))


def measured_grid(directories: Sequence[Path]) -> OnGrid:
    """A predicate: does any of these directories hold an ok grid row of exactly this op, key and axes?"""
    seen: set[tuple] = set()
    for directory in directories:
        for path in sorted(Path(directory).glob("*.parquet")):
            rows = pl.read_parquet(path).filter(
                (pl.col("status") == "ok") & (pl.col("sample").is_null() | (pl.col("sample") == "grid"))
            )
            for row in rows.iter_rows(named=True):
                if row["op"] in OP_SPECS:
                    seen.add(_identity(row["op"], row))

    def on_grid(point: Point) -> bool:
        return _identity(point["op"], point) in seen

    return on_grid
