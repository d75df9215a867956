"""The H100 tables hold the GEMM, BMM and elementwise keys the zoo's own layouts run (issue 19: a key without a
table is priced from the nearest one by the roofline ratio). These were found missing by walking every zoo model at
TP 1/2/4/8 through the step cost and timed by calibration/grids/issue19_zoo_missing_keys.yaml (docs/perfdb.md,
"The zoo's own keys that had no table"); the H200 was not lent for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from simperf.perfdb.check import resolve_gpu
from simperf.perfdb.db import PerfDB

ROOT = Path(__file__).resolve().parents[1]
SILU_MUL_WIDTHS = (
    384,
    704,
    768,
    1376,
    1408,
    1536,
    2736,
    2752,
    2816,
    3072,
    3200,
    5472,
    6400,
    10944,
    12800,
    25600,
)
KEYS = [
    *[("elementwise", {"backend": "flashinfer", "variant": "silu_mul", "n": n}, {"m": 100}) for n in SILU_MUL_WIDTHS],
    ("elementwise", {"backend": "flashinfer", "variant": "add_rmsnorm", "n": 1024}, {"m": 100}),
    ("elementwise", {"backend": "flashinfer", "variant": "rope", "n": 256}, {"m": 100}),
    *[("elementwise", {"backend": "triton", "variant": "fp8_group_quant", "n": n}, {"m": 100})
      for n in (256, 512, 1024, 3072, 6144)],
    *[("gemm", {"backend": "torch", "dtype": "bf16", "n": 128, "k": k}, {"m": 300}) for k in (2048, 4096)],  # routers
    ("bmm", {"backend": "torch", "dtype": "bf16", "batch": 4, "n": 512, "k": 128}, {"m": 300}),
]  # fmt: skip


@pytest.fixture(scope="module")
def h100() -> PerfDB:
    directory = ROOT / "calibration" / "h100"
    return PerfDB.load(directory, resolve_gpu(directory))


@pytest.mark.parametrize(
    ("op", "key", "axes"), KEYS, ids=[f"{op}-" + "-".join(str(v) for v in k.values()) for op, k, _ in KEYS]
)
def test_the_zoo_key_has_its_own_h100_table(h100, op, key, axes):
    assert h100.has_own(op, key), f"{op} {key}: no H100 table of its own"
    assert h100.lookup(op, key, **axes).source in ("measured", "interpolated")
