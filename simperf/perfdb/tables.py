"""Rows -> a table in the calibration schema: columns a row leaves out are null, unknown columns are an error."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from simperf.perfdb.schema import ALL_COLUMNS, arrow_schema


def rows_to_table(rows: Iterable[Mapping[str, object]]) -> pa.Table:
    rows = list(rows)
    known = set(ALL_COLUMNS)
    for row in rows:
        unknown = sorted(set(row) - known)
        if unknown:
            raise ValueError(f"columns not in the calibration schema: {unknown}")
    columns = {name: [row.get(name) for row in rows] for name in ALL_COLUMNS}
    return pa.Table.from_pydict(columns, schema=arrow_schema())


def write_table(rows: Iterable[Mapping[str, object]], path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows_to_table(rows), path)
    return path
