"""The sweep's result table: one Parquet file, one row per point (axis columns, status and reason, metrics).

The sweep's own description (name, axes, plan defaults, where relative paths point) rides in the file's
metadata, so `simperf plan` and `simperf report` need nothing but the table.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from simperf.errors import UserError
from simperf.sweep.evaluate import DOES_NOT_FIT, FAILED, INVALID, OK, UNSUPPORTED
from simperf.sweep.sla import METRICS as SLA_METRICS
from simperf.sweep.sla import STATS as SLA_STATS

_META_KEY = b"simperf.sweep"


def rows_to_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Rows (possibly with different keys: failed points carry no metrics) -> one frame ordered by point."""
    if not rows:
        return pl.DataFrame({"point_index": pl.Series([], dtype=pl.Int64)})
    ordered = sorted(rows, key=lambda r: r["point_index"])
    keys = list(dict.fromkeys(k for r in ordered for k in r))
    # JSON turns inf into a float but loses nothing else; polars needs one type per column, so a column
    # mixing numbers with text (an axis given as [1, "inf"]) becomes text
    columns: dict[str, list[Any]] = {k: [r.get(k) for r in ordered] for k in keys}
    for k, values in columns.items():
        kinds = {type(v) for v in values if v is not None}
        if len(kinds) > 1 and not kinds <= {int, float}:
            columns[k] = [None if v is None else str(v) for v in values]
        elif kinds == {int, float}:
            columns[k] = [None if v is None else float(v) for v in values]
    return pl.DataFrame(columns, strict=False)


def write_table(frame: pl.DataFrame, path: Path, meta: dict[str, Any]) -> None:
    """Atomic write: a reader never sees a half-written table."""
    path.parent.mkdir(parents=True, exist_ok=True)
    arrow = frame.to_arrow()
    schema_meta = dict(arrow.schema.metadata or {})
    schema_meta[_META_KEY] = json.dumps(meta, default=str).encode()
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(arrow.replace_schema_metadata(schema_meta), tmp)
    os.replace(tmp, path)


def read_table(path: Path, option: str = "") -> tuple[pl.DataFrame, dict[str, Any]]:
    """The table and its sweep description. Another Parquet file (a --requests table, a calibration table) is
    refused: plan and report failed on it with 'cannot read the table (ColumnNotFoundError): "point_id" not found',
    naming no file, and a sweep whose --out was one with 'error: point_id'."""
    arrow = pq.read_table(path)
    meta_raw = (arrow.schema.metadata or {}).get(_META_KEY)
    if meta_raw is None:
        where = f"{option} {path}" if option else str(path)
        raise UserError(
            f"{where}: not a sweep result table (its Parquet metadata has no {_META_KEY.decode()} entry); "
            "`simperf sweep` and `simperf plan --model` write one"
            + ("; choose another --out, it would be resumed from and replaced" if option == "--out" else "")
        )
    frame = pl.from_arrow(arrow)
    _check_rows(frame, f"{option} {path}" if option else str(path))
    return frame, json.loads(meta_raw)


# the columns every row of a sweep table holds, and those a row that ran (status ok) holds too: plan and report read
# them. A table cut down by hand lost them quietly: without p90_ttft_ms every configuration "cannot meet the SLA",
# without status each printed "None: None", and without scenario_json report failed as 'error: scenario_json'
_ROW_COLUMNS = ("point_id", "config_id", "config_label", "status", "scenario_json")
# (the columns an SLA bound can name: sweep/sla.py)
_LATENCY_COLUMNS = tuple(
    f"{stat}_{metric}_ms" for metric in SLA_METRICS.values() for stat in dict.fromkeys(SLA_STATS.values())
)
_OK_COLUMNS = ("request_rate", "failed_requests", "num_gpus", "output_throughput", *_LATENCY_COLUMNS)
_STATUSES = (OK, INVALID, DOES_NOT_FIT, UNSUPPORTED, FAILED)  # what sweep/evaluate.py writes


def _check_rows(frame: pl.DataFrame, where: str) -> None:
    if frame.height == 0:  # every plan printed "no swept configuration meets the SLA"
        raise UserError(f"{where}: the sweep table holds no rows (a sweep writes one per point)")
    missing = [c for c in _ROW_COLUMNS if c not in frame.columns]
    if not missing and (frame["status"] == "ok").any():
        missing = [c for c in _OK_COLUMNS if c not in frame.columns]
    if missing:
        raise UserError(
            f"{where}: the sweep table has no column {', '.join(missing)}, which plan and report read; "
            "use the table `simperf sweep` wrote"
        )
    unknown = sorted(set(frame["status"].cast(pl.Utf8).fill_null("null").to_list()) - set(_STATUSES))
    if unknown:
        raise UserError(f"{where}: status: got {', '.join(unknown)}; expected one of {', '.join(_STATUSES)}")
    ran = frame.filter(pl.col("status") == "ok")
    # (no point ran: the metric columns do not exist; NaN stays: it fails every bound on it, Sla.passes)
    for column in _LATENCY_COLUMNS if ran.height else ():
        values = ran[column].cast(pl.Float64, strict=False)
        if (values < 0).any():
            point = ran.filter(values < 0)["point_id"][0]
            raise UserError(
                f"{where}: {column}: got {float(values.filter(values < 0)[0]):g} at point {point}; a latency "
                "is a number of ms >= 0"
            )


def table_name(path: Path) -> str | None:
    """The name of the sweep whose table `path` is (from its metadata alone)."""
    meta_raw = (pq.read_schema(path).metadata or {}).get(_META_KEY)
    return json.loads(meta_raw).get("name") if meta_raw is not None else None


def table_rows(path: Path) -> dict[str, dict[str, Any]]:
    """Rows of an existing table by point id (to resume from); nulls dropped, as a journal row omits them."""
    if not path.exists():
        return {}
    frame, _ = read_table(path, "--out")
    return {
        row["point_id"]: {k: v for k, v in row.items() if v is not None}
        for row in frame.iter_rows(named=True)
    }


def capped_note(frame: pl.DataFrame) -> str | None:
    """The points whose requests were shortened to fit the model's context length: their rows name the lengths
    the sweep gave (input_len 100000) and report the shorter requests that ran. None when there are none (or the
    table predates the capped_requests column)."""
    if "capped_requests" not in frame.columns:
        return None
    capped = frame.filter(pl.col("capped_requests").fill_null(0) > 0)
    if capped.is_empty():
        return None
    first = capped.row(0, named=True)
    return (
        f"{capped.height} of {frame.height} points shortened requests to fit the model's context length (column "
        f"capped_requests; first: point {first['point_index']}, {first['config_label']}, "
        f"{first['capped_requests']} requests): their rows report shorter requests than the sweep names; give "
        "workload.over_context: drop to leave such requests out, or lengths that fit"
    )
