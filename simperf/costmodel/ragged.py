"""Decode attention over a ragged batch (requests with different KV lengths), from the kernels' work split.

Paged decode kernels (flashinfer's split-KV scheduler, FlashMLA's tile scheduler) cut each request's KV into
chunks so that the whole batch fills the GPU a few times over, then merge the partial results. A uniform batch and
a ragged batch with the same total KV read the same bytes, but the ragged one rounds more chunks up: each request
adds a partly filled chunk. The model: chunk size c = Σkv / work_units (work_units ≈ 2 CTAs per SM), and the
ragged batch costs the uniform batch at its mean KV length scaled by Σ ceil(kv_i / c) / (bs · ceil(mean / c)).

Checked against the measured ragged batches of the calibration tables (`ragged_errors`, printed by
`simperf perfdb check`): on H200 the correction moves the error by under one point, because the error there is
interpolation between sparse batch grid points, not raggedness — so the simulator prices decode at the mean KV
length (exact for uniform batches, same bytes for ragged ones) and this module stays as the check.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from simperf.hardware.catalog import GpuSpec
from simperf.perfdb.db import PerfDB
from simperf.perfdb.offgrid.predict import predict
from simperf.perfdb.schema import OP_SPECS

CTAS_PER_SM = 2
RAGGED_OPS = ("attn_mla_decode", "attn_gqa_decode", "attn_nsa_decode")


def split_kv_factor(kv_lens: np.ndarray, num_sms: int) -> float:
    """Chunk count of this ragged batch over that of a uniform batch with the same total KV (>= ~1)."""
    kv = np.asarray(kv_lens, dtype=np.float64)
    total, bs = float(kv.sum()), len(kv)
    chunk = max(total / (CTAS_PER_SM * num_sms), 1.0)
    uniform = bs * np.ceil((total / bs) / chunk)
    return float(np.ceil(kv / chunk).sum() / uniform)


def ragged_errors(directory: Path, gpu: GpuSpec) -> pl.DataFrame:
    """Each measured ragged batch predicted by the mean-KV model and by the split-KV model (relative errors)."""
    db = PerfDB.load(directory, gpu)
    rows = []
    for op in RAGGED_OPS:
        path = Path(directory) / f"{op}.parquet"
        if not path.exists():
            continue
        table = pl.read_parquet(path).filter((pl.col("sample") == "ragged") & (pl.col("status") == "ok"))
        for r in table.iter_rows(named=True):
            kv = np.asarray(json.loads(r["kv_lens"]), dtype=np.float64)
            key = {c: r[c] for c in OP_SPECS[op].key_columns if c != "op"}
            curve = db.curve(op, key)
            mean = float(kv.mean())
            at_mean = float(curve(batch=float(len(kv)), kv_len=mean)[0])
            split = float(curve(batch=float(len(kv)), kv_len=mean * split_kv_factor(kv, gpu.num_sms))[0])
            checked = predict(db, {**r, "op": op}).us
            rows.append(
                {
                    "op": op,
                    "backend": r["backend"],
                    "batch": len(kv),
                    "kv_mean": mean,
                    "kv_max": float(kv.max()),
                    "measured_us": r["time_us"],
                    "mean_kv_error": at_mean / r["time_us"] - 1.0,
                    "split_kv_error": split / r["time_us"] - 1.0,
                    # as the off-grid check prices it: flashinfer MLA's work plan, GQA's CTAs sharing HBM
                    "check_error": checked / r["time_us"] - 1.0,
                }
            )
    return pl.DataFrame(rows)


def ragged_summary(errors: pl.DataFrame) -> pl.DataFrame:
    return (
        errors.group_by("op")
        .agg(
            pl.len().alias("batches"),
            pl.col("mean_kv_error").abs().median().alias("mean_kv_median"),
            pl.col("mean_kv_error").abs().quantile(0.9).alias("mean_kv_p90"),
            pl.col("split_kv_error").abs().median().alias("split_kv_median"),
            pl.col("split_kv_error").abs().quantile(0.9).alias("split_kv_p90"),
        )
        .sort("op")
    )
