"""Validation results: Parquet, the error summary by step kind, a plain-text table, and the chart
(predicted vs measured step time, with the y = x line). pyarrow and the standard library only, except the
chart (altair), so the summary also prints on a GPU machine without the laptop dependencies."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from simperf.calibrate.timing import percentile
from simperf.sim.steplog import STEP_KINDS

RESULTS_NAME = "validation.parquet"
CHART_STEM = "validation"
_SCALARS = (
    ("sample_id", pa.int64()),
    ("kind", pa.string()),
    ("stratum", pa.string()),
    ("batch", pa.int64()),
    ("num_rows", pa.int64()),
    ("mean_kv", pa.float64()),
    ("graph", pa.bool_()),
    ("predicted_us", pa.float64()),
    ("measured_us", pa.float64()),
    ("rel_error", pa.float64()),
    ("predicted_unmeasured_us", pa.float64()),
    ("predicted_step_us", pa.float64()),
    ("timing_method", pa.string()),
    ("gpu", pa.string()),
    ("gpu_name", pa.string()),
    ("error", pa.string()),
)
_JSON_COLUMNS = ("per_kind", "unsupported", "not_run")


def write_results(rows: Sequence[dict[str, Any]], path: Path) -> None:
    columns = {name: pa.array([r.get(name) for r in rows], type=t) for name, t in _SCALARS}
    for name in _JSON_COLUMNS:
        columns[name] = pa.array([json.dumps(r.get(name) or {}) for r in rows], type=pa.string())
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(pa.table(columns), tmp)
    tmp.replace(path)


def read_results(path: Path) -> list[dict[str, Any]]:
    rows = pq.read_table(path).to_pylist()
    for row in rows:
        for name in _JSON_COLUMNS:
            row[name] = json.loads(row[name] or "{}")
    return rows


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per step kind and overall: samples, median and p90 absolute relative error, median signed error."""
    ok = [r for r in rows if r.get("rel_error") is not None]
    groups = [(k, [r for r in ok if r["kind"] == k]) for k in STEP_KINDS] + [("all", ok)]
    out = []
    for kind, members in groups:
        if not members:
            continue
        errors = sorted(r["rel_error"] for r in members)
        absolute = sorted(abs(e) for e in errors)
        out.append(
            {
                "kind": kind,
                "samples": len(members),
                "median_abs_error": percentile(absolute, 0.5),
                "p90_abs_error": percentile(absolute, 0.9),
                "median_signed_error": percentile(errors, 0.5),
            }
        )
    return out


def format_rows(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        f"{'id':>3} {'kind':<8} {'batch':>5} {'rows':>6} {'mean kv':>8} {'pred ms':>9} {'meas ms':>9} {'err':>7}"
    ]
    for r in rows:
        if r.get("error"):
            lines.append(f"{r['sample_id']:>3} {r['kind']:<8} {r['batch']:>5} {r['num_rows']:>6} "
                         f"{r['mean_kv']:>8.0f}   failed: {r['error']}")  # fmt: skip
            continue
        lines.append(
            f"{r['sample_id']:>3} {r['kind']:<8} {r['batch']:>5} {r['num_rows']:>6} {r['mean_kv']:>8.0f} "
            f"{r['predicted_us'] / 1000:>9.3f} {r['measured_us'] / 1000:>9.3f} {100 * r['rel_error']:>+6.1f}%"
        )
    return "\n".join(lines)


def format_summary(summary: Sequence[dict[str, Any]]) -> str:
    lines = [f"{'kind':<8} {'samples':>7} {'median |err|':>13} {'p90 |err|':>10} {'median err':>11}"]
    for s in summary:
        lines.append(
            f"{s['kind']:<8} {s['samples']:>7} {100 * s['median_abs_error']:>12.1f}% "
            f"{100 * s['p90_abs_error']:>9.1f}% {100 * s['median_signed_error']:>+10.1f}%"
        )
    return "\n".join(lines)


def not_measured_notes(rows: Sequence[dict[str, Any]]) -> list[str]:
    """What the comparison left out, once per op: collectives, unsupported kernels, the overhead constant."""
    seen: dict[str, str] = {}
    for r in rows:
        for name, why in {**(r.get("not_run") or {}), **(r.get("unsupported") or {})}.items():
            seen.setdefault(name, why)
    return [f"{name}: {why}" for name, why in sorted(seen.items())]


def chart(rows: Sequence[dict[str, Any]], title: str):
    """Predicted vs measured step time (ms, log-log), one point per sample, and the y = x line."""
    import altair as alt

    data = [
        {
            "predicted_ms": r["predicted_us"] / 1000,
            "measured_ms": r["measured_us"] / 1000,
            "kind": r["kind"],
            "batch": r["batch"],
            "mean_kv": round(r["mean_kv"]),
            "error_pct": round(100 * r["rel_error"], 1),
        }
        for r in rows
        if r.get("rel_error") is not None
    ]
    if not data:
        raise ValueError("no measured samples to chart")
    lo = min(min(d["predicted_ms"], d["measured_ms"]) for d in data) * 0.8
    hi = max(max(d["predicted_ms"], d["measured_ms"]) for d in data) * 1.25
    scale = alt.Scale(type="log", domain=[lo, hi])
    points = (
        alt.Chart(alt.Data(values=data))
        .mark_circle(size=70, opacity=0.8)
        .encode(
            x=alt.X("measured_ms:Q", scale=scale, title="measured step time on the GPU (ms)"),
            y=alt.Y("predicted_ms:Q", scale=scale, title="predicted step time (ms)"),
            color=alt.Color("kind:N", title="step kind", sort=list(STEP_KINDS)),
            tooltip=["kind:N", "batch:Q", "mean_kv:Q", "predicted_ms:Q", "measured_ms:Q", "error_pct:Q"],
        )
    )
    diagonal = (
        alt.Chart(alt.Data(values=[{"x": lo, "y": lo}, {"x": hi, "y": hi}]))
        .mark_line(color="gray", strokeDash=[4, 4])
        .encode(x=alt.X("x:Q", scale=scale), y=alt.Y("y:Q", scale=scale))
    )
    return (diagonal + points).properties(width=420, height=420, title=title)


def write_report(
    out_dir: Path, rows: Sequence[dict[str, Any]], title: str, charts: bool = True
) -> list[Path]:
    """Parquet always; the chart as HTML and PNG when altair and vl-convert are installed."""
    written = [out_dir / RESULTS_NAME]
    write_results(rows, written[0])
    if charts and any(r.get("rel_error") is not None for r in rows):
        try:
            from simperf.report.charts import save_chart

            written += save_chart(chart(rows, title), out_dir / CHART_STEM, ("html", "png"))
        except (ImportError, RuntimeError):
            pass  # GPU machines without the laptop extras: the Parquet is enough to chart later
    return written
