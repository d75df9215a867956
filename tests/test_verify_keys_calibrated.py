"""The shipped H100/H200 tables time DeepSeek's speculative verify attention and its TP16 prefill in their own keys
(issue 19): an MTP/EAGLE verify step runs MLA decode at q_len = num_draft_tokens (2-4) for whatever heads per rank
the layout gives, and a key without a table is priced from another one by the roofline ratio, which was -34...+25%
off for FlashMLA (calibration/grids/issue19_mla_verify_q.yaml, issue19_mha_prefill_8heads.yaml; docs/perfdb.md
"Speculative verify widths and 8-head prefill")."""

from __future__ import annotations

from pathlib import Path

import pytest

from simperf.perfdb.check import resolve_gpu
from simperf.perfdb.db import PerfDB

ROOT = Path(__file__).resolve().parents[1]
HEADS = (8, 16, 32, 64, 128)  # DeepSeek-V3/R1 at TP16 ... TP1 (or DP attention)
VERIFY_LAYOUTS = (("flashmla", "bf16", 64), ("flashmla", "fp8", 64), ("flashinfer_fa3", "bf16", 1),
                  ("flashinfer_fa3", "bf16", 64), ("flashinfer_fa3", "fp8", 64))  # fmt: skip


@pytest.fixture(scope="module", params=("h100", "h200"))
def db(request) -> PerfDB:
    directory = ROOT / "calibration" / request.param
    return PerfDB.load(directory, resolve_gpu(directory))


@pytest.mark.parametrize("q_len", (2, 3, 4))
def test_every_verify_width_and_head_count_has_its_own_mla_decode_table(db, q_len):
    missing = []
    for backend, kv_dtype, page in VERIFY_LAYOUTS:
        for heads in HEADS:
            key = dict(backend=backend, kv_dtype=kv_dtype, num_heads=heads, page_size=page, q_len=q_len)
            timing = db.lookup("attn_mla_decode", key, batch=24, kv_len=3000)
            if not db.has_own("attn_mla_decode", key) or timing.source not in ("measured", "interpolated"):
                missing.append((backend, kv_dtype, page, heads, timing.source))
    assert not missing, f"{db.gpu.key}: verify keys without their own table at q_len {q_len}: {missing}"


def test_eight_head_deepseek_prefill_has_its_own_table(db):
    key = dict(backend="flashinfer_fa3", dtype="bf16", num_heads=8, num_kv_heads=8,
               head_dim=192, head_dim_v=128)  # fmt: skip
    assert db.has_own("attn_mha_prefill", key)
    timing = db.lookup("attn_mha_prefill", key, batch=2, q_len=700, kv_len=2700)
    assert timing.source in ("measured", "interpolated")
