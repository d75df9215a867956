"""Polars frames -> Parquet tables in the calibration schema (the importers' counterpart of perfdb/tables.py).

Importers build whole columns at once (hundreds of thousands of rows), so they work on frames, not row dicts.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from simperf.perfdb.schema import ALL_COLUMNS, arrow_schema


def frame_to_schema(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with every schema column (missing ones null) in schema order; unknown columns are an error."""
    unknown = sorted(set(frame.columns) - set(ALL_COLUMNS))
    if unknown:
        raise ValueError(f"columns not in the calibration schema: {unknown}")
    schema = dict(pl.from_arrow(arrow_schema().empty_table()).schema)  # type: ignore[union-attr]
    missing = [
        pl.lit(None, dtype=dtype).alias(name) for name, dtype in schema.items() if name not in frame.columns
    ]
    return frame.with_columns(missing).select(list(schema)).cast(schema)  # type: ignore[arg-type]


def write_frame(frame: pl.DataFrame, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = frame_to_schema(frame).to_arrow().cast(arrow_schema())
    pq.write_table(table, path, compression="zstd")
    return path
