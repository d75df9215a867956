"""Crash-safe record of finished points, and its compaction into the per-op Parquet tables.

Every finished point (measured, failed or unsupported) is appended to `<out>/_journal.jsonl` as one line,
flushed and fsynced before the next point starts, so a kill loses at most the point in flight. Compaction
merges the journal with the existing tables (the journal wins on a repeated key, except that a failed or
unsupported row never replaces an `ok` one: a table is never lowered), writes each `<op>.parquet` atomically
(temp file + rename), then deletes the journal. A crash between those two steps
only leaves rows that the next compaction deduplicates. Uses pyarrow only (the GPU image has no polars).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from simperf.calibrate.points import point_key
from simperf.jsonl import FsyncedJsonLines, read_journal_lines
from simperf.perfdb.schema import ALL_COLUMNS, OP_SPECS, arrow_schema, table_path_name

JOURNAL_NAME = "_journal.jsonl"


class Journal:
    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        self.path = self.out_dir / JOURNAL_NAME
        self._lines = FsyncedJsonLines(self.path)
        self.ok_rows = 0  # rows appended with status ok: what this run measured

    def append(self, row: Mapping[str, Any]) -> None:
        self._lines.append({name: row.get(name) for name in ALL_COLUMNS})
        if row.get("status") == "ok":
            self.ok_rows += 1

    def close(self) -> None:
        self._lines.close()


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Rows of a journal; a torn last line (killed mid-write) is ignored."""
    return read_journal_lines(path)


def read_tables(out_dir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for op in OP_SPECS:
        path = Path(out_dir) / table_path_name(op)
        if path.exists():
            rows += pq.read_table(path).to_pylist()
    return rows


def keep_better(merged: dict[str, dict[str, Any]], row: Mapping[str, Any]) -> bool:
    """Put `row` under its point key unless that would replace an ok measurement by a failure; True if put."""
    key = point_key(row)
    old = merged.get(key)
    if old is not None and old.get("status") == "ok" and row.get("status") != "ok":
        return False
    merged[key] = dict(row)
    return True


def recorded_rows(out_dir: Path) -> dict[str, dict[str, Any]]:
    """Every recorded row (tables, then journal on top), by point key."""
    merged: dict[str, dict[str, Any]] = {}
    for row in read_tables(out_dir) + read_journal(Path(out_dir) / JOURNAL_NAME):
        keep_better(merged, row)
    return merged


def rows_to_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    schema = arrow_schema()
    columns: dict[str, list[Any]] = {name: [] for name in schema.names}
    for row in rows:
        for name in schema.names:
            columns[name].append(row.get(name))
    return pa.table(columns, schema=schema)


def write_table_atomic(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp, compression="zstd")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def compact(out_dir: Path, journal: Journal | None = None) -> dict[str, int]:
    """Merge journal into the tables; returns rows per op written."""
    out_dir = Path(out_dir)
    if journal is not None:
        journal.close()
    journal_path = out_dir / JOURNAL_NAME
    new_rows = read_journal(journal_path)
    if not new_rows:
        if journal_path.exists():
            journal_path.unlink()
        return {}
    touched_ops = {row["op"] for row in new_rows}
    counts: dict[str, int] = {}
    for op in sorted(touched_ops):
        counts[op] = fold_rows(out_dir / table_path_name(op), [row for row in new_rows if row["op"] == op])[0]
    journal_path.unlink()
    return counts


def fold_rows(path: Path, new_rows: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """Fold one op's `new_rows` into its table at `path` (keep_better per point key; sorted; written atomically).
    Returns (rows in the table now, new rows put in it)."""
    merged: dict[str, dict[str, Any]] = {}
    if path.exists():
        for row in pq.read_table(path).to_pylist():
            merged[point_key(row)] = row
    taken = sum(keep_better(merged, row) for row in new_rows)
    ordered = sorted(merged.values(), key=_sort_key)
    write_table_atomic(rows_to_table(ordered), path)
    return len(ordered), taken


def _sort_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    spec = OP_SPECS[row["op"]]
    cols = ("sample",) + spec.key_columns + spec.axis_columns
    return tuple((row.get(c) is None, "" if row.get(c) is None else row.get(c)) for c in cols) + (
        point_key(row),
    )


def recorded_points(table_dir: Path) -> list[dict[str, Any]]:
    """The points (identity columns only) of every row a calibration directory's tables hold: what `--retime`
    measures again under the backends' current protocol."""
    from simperf.calibrate.points import IDENTITY_COLUMNS

    return [{name: row.get(name) for name in IDENTITY_COLUMNS} for row in read_tables(table_dir)]


def merge_tables(source_dir: Path, dest_dir: Path) -> dict[str, tuple[int, int]]:
    """Fold the rows of `source_dir`'s tables into `dest_dir`'s, as compaction folds a journal: a row replaces
    the one with its point key unless it would replace an ok measurement by a failure. Returns, per op touched,
    (rows replaced or added, rows kept because the new one failed)."""
    counts: dict[str, tuple[int, int]] = {}
    for op in OP_SPECS:
        source = Path(source_dir) / table_path_name(op)
        if not source.exists():
            continue
        new_rows = pq.read_table(source).to_pylist()
        _, taken = fold_rows(Path(dest_dir) / table_path_name(op), new_rows)
        counts[op] = (taken, len(new_rows) - taken)
    return counts
