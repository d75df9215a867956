"""Kernel-level published rows (FlashMLA decode on H100) checked against the shipped calibration tables.

A row's `model` column carries the kernel's shape as FlashMLA's test prints it (`b=128 s_q=1 mean_sk=4096 h_q=16
h_kv=1 d=576 dv=512 varlen=False`) and `backend_flags` its KV dtype and page size (`BF16 KV, page 64, causal`).
The shape is looked up in `attn_mla_decode` with backend `flashmla`: batch = b, kv_len = mean_sk, q_len = s_q,
num_heads = h_q. The answer carries the perf database's source label; a key the tables do not cover falls back to
the roofline and is marked so, never passed off as measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from simperf.accuracy.truth import TruthRow
from simperf.hardware.catalog import device_gpu_key, get_gpu
from simperf.perfdb.db import PerfDB, shipped_calibration_dir

_OP = "attn_mla_decode"
_SHAPE = re.compile(r"(\w+)=([\w.]+)")


@dataclass(frozen=True)
class KernelShape:
    batch: int
    q_len: int
    kv_len: int
    num_heads: int
    kv_dtype: str
    page_size: int
    varlen: bool


@dataclass(frozen=True)
class KernelPrediction:
    us: float
    source: str  # the perf database's label: measured / interpolated / extrapolated / roofline / ...
    detail: str
    calibrated: bool  # the tables have this exact key (otherwise a nearby key scaled, or the roofline)


def parse_shape(row: TruthRow) -> KernelShape:
    fields = dict(_SHAPE.findall(row.model))
    needed = ("b", "s_q", "mean_sk", "h_q")
    missing = [k for k in needed if k not in fields]
    if missing:
        raise ValueError(f"{row.id}: kernel shape lacks {', '.join(missing)} (model column: {row.model!r})")
    flags = row.config.lower()
    page = re.search(r"page\s*(\d+)", flags)
    kv_dtype = "fp8" if "fp8" in flags else "bf16"
    return KernelShape(
        batch=int(fields["b"]),
        q_len=int(fields["s_q"]),
        kv_len=int(fields["mean_sk"]),
        num_heads=int(fields["h_q"]),
        kv_dtype=kv_dtype,
        page_size=int(page.group(1)) if page else 64,
        varlen=fields.get("varlen", "False") == "True",
    )


def is_flashmla_row(row: TruthRow) -> bool:
    return row.metric == "kernel_time" and "flashmla" in (row.source + row.config + row.notes).lower()


def predict_kernel(row: TruthRow, db: PerfDB) -> KernelPrediction:
    shape = parse_shape(row)
    key = {
        "backend": "flashmla",
        "kv_dtype": shape.kv_dtype,
        "num_heads": shape.num_heads,
        "page_size": shape.page_size,
        "q_len": shape.q_len,
    }
    timing = db.lookup(_OP, key, batch=shape.batch, kv_len=shape.kv_len)
    return KernelPrediction(timing.us, timing.source, timing.detail, db.has(_OP, key))


def flashmla_available(directory: Path | None) -> bool:
    """The calibration directory has an attn_mla_decode table with FlashMLA rows."""
    if directory is None or not (Path(directory) / f"{_OP}.parquet").is_file():
        return False
    import polars as pl

    rows = pl.read_parquet(Path(directory) / f"{_OP}.parquet", columns=["backend", "status"])
    return rows.filter((pl.col("backend") == "flashmla") & (pl.col("status") == "ok")).height > 0


def open_db(gpu: str) -> tuple[PerfDB | None, str]:
    """The shipped tables of a row's GPU, or None and why not."""
    key = device_gpu_key(gpu)
    if key is None:
        return None, f"GPU {gpu!r} is not in simperf's hardware catalogue"
    directory = shipped_calibration_dir(key)
    if not flashmla_available(directory):
        return None, f"calibration/{key}/{_OP}.parquet has no flashmla rows (not calibrated yet)"
    return PerfDB.load(directory, get_gpu(key)), ""
