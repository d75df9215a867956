"""The off-grid error: every timed sample against its prediction from the tables, summarised (CPU).

`evaluate` pairs the set with one GPU's results and prices each sample with that GPU's tables (predict.py);
`summarize` gives count, median, p90 and max |error| and the share within 2x per group (op family, family and
backend, how the key was covered, ragged or not); `scaled_from_errors` prices the same samples from another GPU's
tables (the scaled-from fallback, with the measured ratios and with the roofline ratio) against this GPU's times.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl

from simperf.hardware.catalog import get_gpu
from simperf.perfdb.check import resolve_gpu
from simperf.perfdb.db import PerfDB, _read_tables
from simperf.perfdb.offgrid.io import read_results, read_samples
from simperf.perfdb.offgrid.predict import predict
from simperf.perfdb.ratios import RatioTable
from simperf.perfdb.schema import op_family

_ROW_SCHEMA = {
    "id": pl.Int64,
    "category": pl.String,
    "ragged": pl.Boolean,
    "op": pl.String,
    "family": pl.String,
    "backend": pl.String,
    "model": pl.String,
    "note": pl.String,
    "measured_us": pl.Float64,
    "predicted_us": pl.Float64,
    "rel_error": pl.Float64,  # predicted / measured - 1
    "source": pl.String,
    "backing": pl.String,
    "detail": pl.String,
}


def timed_samples(samples_path: Path, results_path: Path) -> tuple[str, list[tuple[dict, dict]]]:
    """(GPU of the results, [(sample, ok result)]); samples without an ok time are left out (counted apart).
    A results file names the set it timed: read with another set, its ids would pair with other calls (a one-line
    ValueError instead)."""
    set_header, samples = read_samples(samples_path)
    header, results = read_results(results_path)
    timed = Path(str(header.get("samples") or "")).name
    if timed and timed != Path(samples_path).name:
        raise ValueError(
            f"{results_path}: timed the set {timed}, not {Path(samples_path).name} (pass that set as --samples)"
        )
    seeds = (header.get("seed"), set_header.get("seed"))
    if None not in seeds and seeds[0] != seeds[1]:  # another set copied under the timed set's name
        raise ValueError(
            f"{results_path}: timed a set of seed {seeds[0]}, and {samples_path} is the set of seed {seeds[1]} "
            "(pass the set it timed as --samples)"
        )
    pairs = [
        (s, results[s["id"]])
        for s in samples
        if s["id"] in results and results[s["id"]].get("status") == "ok" and results[s["id"]].get("time_us")
    ]
    for (
        _,
        result,
    ) in pairs:  # a NaN or negative time was scored as a measurement (an error of -100% and below)
        time_us = result["time_us"]
        if isinstance(time_us, bool) or not isinstance(time_us, int | float) or not 0 < time_us < math.inf:
            raise ValueError(
                f"{results_path}: id {result.get('id')}: time_us {time_us!r} on an ok row; expected a positive time"
            )
    return str(header.get("gpu") or ""), pairs


def evaluate(pairs: list[tuple[dict, dict]], db: PerfDB) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for sample, result in pairs:
        point = sample["point"]
        p = predict(db, point)
        measured = float(result["time_us"])
        rows.append(
            {
                "id": sample["id"],
                "category": sample["category"],
                "ragged": bool(sample["ragged"]),
                "op": point["op"],
                "family": op_family(point["op"]),
                "backend": point["backend"],
                "model": sample["model"],
                "note": sample["note"],
                "measured_us": measured,
                "predicted_us": p.us,
                "rel_error": p.us / measured - 1.0,
                "source": p.source,
                "backing": p.backing,
                "detail": p.detail,
            }
        )
    return pl.DataFrame(rows, schema=_ROW_SCHEMA)


def summarize(errors: pl.DataFrame, by: tuple[str, ...] = ("family",)) -> pl.DataFrame:
    """Per group: count, median / p90 / max |error|, signed median, and how many rows are within 2x."""
    abs_error = pl.col("rel_error").abs()
    ratio = pl.col("predicted_us") / pl.col("measured_us")
    return (
        errors.group_by(list(by))
        .agg(
            count=pl.len(),
            median=abs_error.median(),
            p90=abs_error.quantile(0.9, interpolation="linear"),
            max=abs_error.max(),
            signed_median=pl.col("rel_error").median(),
            within_2x=((ratio >= 0.5) & (ratio <= 2.0)).sum(),
        )
        .sort(list(by))
    )


def repeat_errors(first: pl.DataFrame, second: list[tuple[dict, dict]]) -> pl.DataFrame:
    """`first` (evaluate's rows of one timing session) joined by id with a second session's times of the same calls:
    how far the measured time moved (`repeat`), and the prediction's error against each session (`rel_error`,
    `rel_error_repeat`). Only calls timed ok in both sessions."""
    again = pl.DataFrame(
        [{"id": sample["id"], "measured_repeat_us": float(result["time_us"])} for sample, result in second],
        schema={"id": pl.Int64, "measured_repeat_us": pl.Float64},
    )
    return first.join(again, on="id").with_columns(
        repeat=pl.col("measured_repeat_us") / pl.col("measured_us") - 1.0,
        rel_error=pl.col("predicted_us") / pl.col("measured_us") - 1.0,
        rel_error_repeat=pl.col("predicted_us") / pl.col("measured_repeat_us") - 1.0,
    )


def repeat_summary(joined: pl.DataFrame, by: tuple[str, ...] = ("family",)) -> pl.DataFrame:
    """Per group: calls, median and p90 |time moved between the sessions|, median and p90 |error| against each."""

    def stats(column: str, name: str) -> list[pl.Expr]:
        absolute = pl.col(column).abs()
        return [absolute.median().alias(f"{name}_median"),
                absolute.quantile(0.9, interpolation="linear").alias(f"{name}_p90")]  # fmt: skip

    return (
        joined.group_by(list(by))
        .agg(
            pl.len().alias("count"),
            *stats("repeat", "repeat"),
            *stats("rel_error", "first"),
            *stats("rel_error_repeat", "second"),
        )  # fmt: skip
        .sort(list(by))
    )


def scaled_from_errors(
    pairs: list[tuple[dict, dict]], target_gpu: str, reference_dir: Path, ratios: RatioTable | None
) -> pl.DataFrame:
    """The samples priced from the reference GPU's tables alone (none of the target's), scaled to the target:
    by `ratios` where given, else by the two GPUs' rooflines."""
    reference = PerfDB.load(reference_dir, resolve_gpu(reference_dir), scaled_from=False)
    target = PerfDB(get_gpu(target_gpu), _read_tables([]), [], None, reference=reference, ratios=ratios)
    return evaluate(pairs, target)


def no_time_counts(samples_path: Path, results_path: Path) -> dict[str, int]:
    """How many samples have no usable time, by status (not timed yet, failed, unsupported)."""
    _, samples = read_samples(samples_path)
    _, results = read_results(results_path)
    counts: dict[str, int] = {}
    for s in samples:
        status = results.get(s["id"], {}).get("status", "not timed")
        if status != "ok":
            counts[status] = counts.get(status, 0) + 1
    return counts


def ragged_decode_alternatives(pairs: list[tuple[dict, dict]], db: PerfDB) -> pl.DataFrame:
    """Ragged decode calls priced at their mean KV (what the simulator does) and by the split-KV work model of
    costmodel/ragged.py (each request's KV cut into Σkv / (2 x SMs) chunks), against the measured times."""
    import json

    import numpy as np

    from simperf.costmodel.ragged import split_kv_factor
    from simperf.perfdb.schema import OP_SPECS

    rows = []
    for sample, result in pairs:
        point = sample["point"]
        if not point.get("kv_lens") or point.get("q_lens"):
            continue
        kv = np.asarray(json.loads(point["kv_lens"]), dtype=np.float64)
        curve = db.curve(point["op"], {c: point[c] for c in OP_SPECS[point["op"]].key_columns})
        mean = float(kv.mean())
        measured = float(result["time_us"])
        at_mean = float(curve(batch=float(kv.size), kv_len=mean)[0])
        split = float(curve(batch=float(kv.size), kv_len=mean * split_kv_factor(kv, db.gpu.num_sms))[0])
        rows.append({"backend": point["backend"], "mean_kv_error": at_mean / measured - 1.0,
                     "split_kv_error": split / measured - 1.0})  # fmt: skip
    frame = pl.DataFrame(
        rows, schema={"backend": pl.String, "mean_kv_error": pl.Float64, "split_kv_error": pl.Float64}
    )
    return (
        frame.group_by("backend")
        .agg(
            calls=pl.len(),
            mean_kv_median=pl.col("mean_kv_error").abs().median(),
            mean_kv_signed=pl.col("mean_kv_error").median(),
            split_kv_median=pl.col("split_kv_error").abs().median(),
            split_kv_signed=pl.col("split_kv_error").median(),
        )
        .sort("backend")
    )
