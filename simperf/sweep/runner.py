"""Run a sweep: expand the points, skip those a previous run finished, run the rest, journal, compact."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from simperf.errors import UserError
from simperf.sweep.evaluate import FAILED, evaluate_point
from simperf.sweep.executors import Evaluate, run_points
from simperf.sweep.expand import LOAD_PATHS, SweepPoint, build_axes, expand
from simperf.sweep.journal import Journal, journal_path
from simperf.sweep.spec import SweepSpec
from simperf.sweep.table import rows_to_frame, table_name, table_rows, write_table


@dataclass(frozen=True)
class SweepRun:
    table_path: Path
    frame: pl.DataFrame
    computed: int  # points evaluated by this run
    reused: int  # points a previous run had finished
    status_counts: dict[str, int]
    wall_s: float


def sweep_metadata(spec: SweepSpec, base_dir: Path, points: list[SweepPoint]) -> dict[str, Any]:
    axes = build_axes(spec)
    return {
        "name": spec.name,
        "spec": spec.model_dump(mode="json"),
        "base_dir": str(base_dir),
        "axis_columns": list(points[0].columns) if points else [],
        "config_axes": [a.name for a in axes if not a.is_load],
        "group_axes": [a.name for a in axes if a.is_group],
        "load_paths": list(LOAD_PATHS),
    }


def _reusable(previous: dict[str, dict[str, Any]], point: SweepPoint) -> dict[str, Any] | None:
    row = previous.get(point.point_id)
    if row is None or row.get("status") == FAILED:
        return None
    # the same scenario may sit elsewhere in an edited sweep: take position and labels from this expansion
    return {
        **row,
        "point_index": point.index,
        "config_id": point.config_id,
        "config_label": point.config_label,
        **point.columns,
    }


def _not_another_sweeps(
    out: Path, metadata: dict[str, Any], table: dict[str, dict[str, Any]], points: list[SweepPoint]
) -> None:
    """Another sweep's table as the output: each of its rows was dropped as a point no longer swept and the table
    replaced, hours of results lost to a reused file name. A renamed sweep that still holds some of the table's
    points resumes from them, as an edited one does."""
    if not table or {p.point_id for p in points} & table.keys():
        return
    name, other = metadata.get("name"), table_name(out)
    if other != name:
        raise UserError(
            f"{out}: holds the results of sweep {other!r}, none of them a point of sweep {name!r}, which would "
            "replace them; write it to another table, or give --fresh to replace it"
        )


def run_sweep(
    spec: SweepSpec,
    base: dict[str, Any],
    base_dir: Path,
    out: Path,
    *,
    executor: str = "process",
    workers: int | None = None,
    ray_address: str | None = None,
    fresh: bool = False,
    evaluate: Evaluate = evaluate_point,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> SweepRun:
    """Run every point of the sweep not already finished in `out` or its journal; write `out`.

    `on_start(total, already_done)` and `on_row(row)` drive a progress display. Interrupting leaves the
    finished rows in the journal; the next call with the same `out` picks up from there.
    """
    points = expand(spec, base, str(base_dir))
    return run_points_resumable(
        points,
        sweep_metadata(spec, base_dir, points),
        out,
        executor=executor,
        workers=workers,
        ray_address=ray_address,
        fresh=fresh,
        evaluate=evaluate,
        on_start=on_start,
        on_row=on_row,
    )


def run_points_resumable(
    points: list[SweepPoint],
    metadata: dict[str, Any],
    out: Path,
    *,
    executor: str = "process",
    workers: int | None = None,
    ray_address: str | None = None,
    fresh: bool = False,
    evaluate: Evaluate = evaluate_point,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> SweepRun:
    """Points made elsewhere (a sweep's expansion, a plan's candidates) run with the sweep's journal and table."""
    started = time.perf_counter()
    journal = Journal(journal_path(out))
    if fresh:
        journal.remove()
        previous: dict[str, dict[str, Any]] = {}
    else:
        table = table_rows(out)
        _not_another_sweeps(out, metadata, table, points)
        previous = {**table, **journal.read()}
    rows: dict[int, dict[str, Any]] = {}
    todo: list[SweepPoint] = []
    for point in points:
        row = _reusable(previous, point)
        if row is None:
            todo.append(point)
        else:
            rows[point.index] = row
    if on_start is not None:
        on_start(len(points), len(rows))
    try:
        for row in run_points(todo, evaluate, executor, workers or os.cpu_count() or 1, ray_address):
            journal.append(row)
            rows[row["point_index"]] = row
            if on_row is not None:
                on_row(row)
    finally:
        journal.close()
    frame = rows_to_frame(list(rows.values()))
    write_table(frame, out, metadata)
    journal.remove()
    counts = Counter(r["status"] for r in rows.values())
    return SweepRun(
        out, frame, len(todo), len(points) - len(todo), dict(counts), time.perf_counter() - started
    )
