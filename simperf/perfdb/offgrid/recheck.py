"""A designed set that times table grid points again, as they are: how far one measurement of a point repeats.

The dense bf16 GEMM tables hold one measurement per (m, n, k), and some points were taken while the GPU ran at a
lower SM clock (the tables record it: 1185-1980 MHz on the H100). At m = 1 a third of the H100's (n, k) keys came
out more than 3% slower than at m = 8, which a memory-bound GEMM reading the same weights cannot be unless cuBLAS
runs another kernel there; Qwen3-32B's gate_up projection (n = 51200, k = 5120) is one, 210.8 us at m = 1 (p10
198, p90 229, at 1185 MHz) against 187.9 us at m = 8. This set re-times every bf16 GEMM key of the shipped tables
at m = 1 and m = 8 (m = 1 first), so that `simperf perfdb check DIR --offgrid RESULTS --samples SET` says how far
each table point is from a second measurement taken with the same protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from simperf.calibrate.points import make_point

RECHECK_M = (1, 8)
# The GEMM M check (`generate_gemm_m_check`): token counts a step can give a linear layer, log-uniform
GEMM_M_CHECK_RANGE = (1, 8192)


def _bf16_grid_rows(directory: Path) -> pl.DataFrame:
    """The ok bf16 `torch` GEMM grid rows of a calibration directory's gemm table (empty without one)."""
    path = Path(directory) / "gemm.parquet"
    if not path.exists():
        return pl.DataFrame({"m": [], "n": [], "k": [], "time_us": []})
    return pl.read_parquet(path).filter(
        (pl.col("status") == "ok")
        & (pl.col("op") == "gemm")
        & (pl.col("dtype") == "bf16")
        & (pl.col("backend") == "torch")
        & (pl.col("sample").is_null() | (pl.col("sample") == "grid"))
    )


def gemm_keys(directories: Sequence[Path]) -> list[tuple[int, int]]:
    """(n, k) of every ok bf16 `torch` GEMM grid row in these calibration directories, sorted."""
    keys: set[tuple[int, int]] = set()
    for directory in directories:
        rows = _bf16_grid_rows(directory)
        keys.update(zip(rows["n"].to_list(), rows["k"].to_list(), strict=True))
    return sorted(keys)


def generate_gemm_recheck(directories: Sequence[Path]) -> list[dict[str, Any]]:
    """One sample per (m, n, k) with m in RECHECK_M, all m = 1 samples first (a timing budget that runs out
    still covers every key at m = 1)."""
    samples: list[dict[str, Any]] = []
    for m in RECHECK_M:
        for n, k in gemm_keys(directories):
            point = make_point("gemm", "torch", dtype="bf16", n=n, k=k, m=m, sample="heldout")
            note = f"grid point re-timed (m={m}, n={n}, k={k})"
            samples.append(
                {
                    "id": len(samples),
                    "category": "gemm",
                    "ragged": False,
                    "model": None,
                    "note": note,
                    "point": point,
                }
            )
    return samples


def set_header(samples: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "seed": None,
        "counts": {"gemm": len(samples)},
        "ragged_share": {},
        "generator": "simperf.perfdb.offgrid.recheck.generate_gemm_recheck",
    }


def table_vs_retimings(table_dir: Path, samples_path: Path, results: Sequence[Path]) -> dict[str, float]:
    """How far a GEMM table's points are from re-timings of them (`generate_gemm_recheck` results, one file per
    pass): median and p90 |table / median re-timing - 1|, the share of points the table has slower, and how far the
    passes agree with each other (median and p90 of max / min - 1 per point). Recomputed by a test for the numbers
    docs/perfdb.md states."""
    import numpy as np

    from simperf.perfdb.offgrid.io import read_results, read_samples

    _, samples = read_samples(samples_path)
    passes = [read_results(path)[1] for path in results]
    rows = _bf16_grid_rows(table_dir).select("m", "n", "k", "time_us")
    table = {(m, n, k): t for m, n, k, t in rows.iter_rows()}
    errors, spreads = [], []
    for sample in samples:
        times = [p[sample["id"]]["time_us"] for p in passes if sample["id"] in p]
        point = sample["point"]
        key = (point["m"], point["n"], point["k"])
        if not times or key not in table:
            continue
        errors.append(table[key] / float(np.median(times)) - 1.0)
        spreads.append(max(times) / min(times) - 1.0)
    abs_err = np.abs(errors)
    return {
        "points": float(len(errors)),
        "median": float(np.median(abs_err)),
        "p90": float(np.percentile(abs_err, 90)),
        "max": float(abs_err.max()),
        "table_slower": float(np.mean(np.array(errors) > 0)),
        "passes_median": float(np.median(spreads)),
        "passes_p90": float(np.percentile(spreads, 90)),
    }


def generate_gemm_m_check(count: int, seed: int) -> list[dict[str, Any]]:
    """`count` GEMMs of the zoo's linear layers (every family, TP 1-8; bf16, and block fp8 where n and k are
    multiples of 128) at M drawn log-uniform over GEMM_M_CHECK_RANGE: a held-out set for the tables' M axis, whose
    draws mostly fall between grid points. LM heads are drawn at M <= 512 (their M is the number of sequences)."""
    import math
    import random

    from simperf.calibrate import shapes

    rng = random.Random(seed)
    layers = shapes.deepseek_gemm_shapes() + shapes.dense_gemm_shapes()
    samples: list[dict[str, Any]] = []
    while len(samples) < count:
        shape = rng.choice(layers)
        dtype = rng.choice(("bf16", "fp8_block"))
        if dtype == "fp8_block" and (shape.n % 128 or shape.k % 128):
            continue
        high = 512 if "lm_head" in shape.name else GEMM_M_CHECK_RANGE[1]
        m = int(round(math.exp(rng.uniform(math.log(GEMM_M_CHECK_RANGE[0]), math.log(high)))))
        backend = "torch" if dtype == "bf16" else "torch_scaled_mm"
        point = make_point("gemm", backend, dtype=dtype, n=shape.n, k=shape.k, m=m, sample="heldout")
        samples.append(
            {
                "id": len(samples),
                "category": "gemm",
                "ragged": False,
                "model": None,
                "note": f"{shape.name} ({dtype}) at m={m}",
                "point": point,
            }
        )
    return samples
