"""The H100 and H200 tables hold the GEMM, BMM and elementwise keys the zoo's own layouts run (issue 19: a key without a
table is priced from the nearest one by the roofline ratio). These were found missing by walking every zoo model at
TP 1/2/4/8 through the step cost and timed by calibration/grids/issue19_zoo_missing_keys.yaml (docs/perfdb.md,
"The zoo's own keys that had no table")."""

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


@pytest.fixture(scope="module", params=("h100", "h200"))
def db(request) -> PerfDB:
    directory = ROOT / "calibration" / request.param
    return PerfDB.load(directory, resolve_gpu(directory))


@pytest.mark.parametrize(
    ("op", "key", "axes"), KEYS, ids=[f"{op}-" + "-".join(str(v) for v in k.values()) for op, k, _ in KEYS]
)
def test_the_zoo_key_has_its_own_table(db, op, key, axes):
    assert db.has_own(op, key), f"{op} {key}: no {db.gpu.key} table of its own"
    assert db.lookup(op, key, **axes).source in ("measured", "interpolated")
