import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simperf.hardware import get_gpu
from simperf.perfdb.keys import PerfDBError
from simperf.perfdb.roofline import (
    DEFAULT_CONSTANTS,
    CollectiveWork,
    KernelWork,
    Roofline,
    op_work,
    roofline_us,
)
from simperf.perfdb.schema import OP_SPECS

H100 = get_gpu("h100")
H200 = get_gpu("h200")

# One plausible key per op (DeepSeek-V3-like shapes where it matters).
KEYS: dict[str, dict] = {
    "attn_mla_decode": dict(backend="flashmla", kv_dtype="bf16", num_heads=128, page_size=64, q_len=1),
    "attn_mla_extend": dict(backend="fa3", kv_dtype="bf16", num_heads=128, page_size=1),
    "attn_mha_prefill": dict(
        backend="fa3", dtype="bf16", num_heads=128, num_kv_heads=128, head_dim=192, head_dim_v=128
    ),
    "attn_gqa_decode": dict(
        backend="flashinfer", kv_dtype="bf16", num_heads=32, num_kv_heads=8, head_dim=128, page_size=1
    ),
    "attn_nsa_prefill": dict(backend="flashmla_sparse", kv_dtype="bf16", num_heads=128, topk=2048),
    "attn_nsa_decode": dict(
        backend="flashmla_sparse", kv_dtype="fp8_e4m3", num_heads=128, topk=2048, page_size=64
    ),
    "nsa_indexer": dict(backend="deep_gemm", variant="decode", num_heads=64, head_dim=128, topk=2048),
    "gemm": dict(backend="cublas", dtype="bf16", n=8192, k=8192),
    "bmm": dict(backend="cublas", dtype="bf16", batch=128, n=512, k=128),
    "moe": dict(
        backend="triton",
        dtype="fp8_e4m3",
        num_experts=256,
        experts_per_rank=256,
        topk=8,
        n=256,
        k=7168,
        routing="uniform",
    ),
    "elementwise": dict(backend="sgl_kernel", variant="rmsnorm", n=7168),
    "allreduce": dict(backend="custom", dtype="bf16", group_size=8),
    "allgather": dict(backend="nccl", dtype="bf16", group_size=8),
    "reducescatter": dict(backend="nccl", dtype="bf16", group_size=8),
    "alltoall": dict(backend="nccl", dtype="bf16", group_size=8),
}
AXIS_RANGES = {
    "batch": (1, 256),
    "kv_len": (128, 131072),
    "q_len": (1, 8192),
    "m": (1, 32768),
    "message_bytes": (1024, 2**28),
}


def test_every_op_in_the_schema_has_a_roofline():
    assert set(KEYS) == set(OP_SPECS)


@pytest.mark.parametrize("op", sorted(OP_SPECS))
def test_roofline_is_positive_and_non_decreasing_along_each_axis(op):
    spec = OP_SPECS[op]
    roof = Roofline(op, KEYS[op], H100)
    middle = {a: float(np.sqrt(AXIS_RANGES[a][0] * AXIS_RANGES[a][1])) for a in spec.axis_columns}
    for axis in spec.axis_columns:
        lo, hi = AXIS_RANGES[axis]
        sweep = np.geomspace(lo, hi, 25)
        axes = {a: (sweep if a == axis else np.full_like(sweep, middle[a])) for a in spec.axis_columns}
        us = roof.time_us(axes)
        assert np.all(np.isfinite(us)) and np.all(us > 0)
        assert np.all(np.diff(us) >= -1e-9 * us[:-1]), f"{op} not monotone in {axis}"


def test_big_bf16_gemm_on_h100_is_compute_bound_near_a_millisecond():
    us, detail = roofline_us("gemm", KEYS["gemm"], {"m": 8192}, H100)
    flops = 2 * 8192**3
    assert us == pytest.approx(flops / 798e12 * 1e6 + DEFAULT_CONSTANTS.kernel_floor_us)
    assert 1000 < us < 2000
    assert "compute-bound" in detail and "989" in detail


def test_fp8_gemm_uses_the_fp8_peak():
    bf16, _ = roofline_us("gemm", KEYS["gemm"], {"m": 8192}, H100)
    fp8, detail = roofline_us("gemm", {**KEYS["gemm"], "dtype": "fp8_e4m3"}, {"m": 8192}, H100)
    assert fp8 == pytest.approx((bf16 - 3) / 2 + 3, rel=0.01)
    assert "fp8" in detail


def test_skinny_gemm_is_memory_bound_on_the_weights():
    us, detail = roofline_us("gemm", KEYS["gemm"], {"m": 1}, H100)
    weight_bytes = 8192 * 8192 * 2
    assert us == pytest.approx(weight_bytes / 3.0e12 * 1e6 + 3, rel=0.01)
    assert "memory-bound" in detail


def test_mla_decode_reads_the_latent_cache_once():
    work = op_work(
        "attn_mla_decode", KEYS["attn_mla_decode"], {"batch": np.array(4.0), "kv_len": np.array(1000.0)}
    )
    assert isinstance(work, KernelWork)
    kv_bytes = 4 * 1000 * 576 * 2
    q_o_bytes = 4 * 1 * 128 * (576 + 512) * 2
    assert float(work.bytes) == kv_bytes + q_o_bytes
    assert float(work.flops) == 4 * 2 * 128 * 1 * 1000 * (576 + 512)
    fp8 = op_work(
        "attn_mla_decode",
        {**KEYS["attn_mla_decode"], "kv_dtype": "fp8_e4m3"},
        {"batch": np.array(4.0), "kv_len": np.array(1000.0)},
    )
    assert float(fp8.bytes) == kv_bytes / 2 + q_o_bytes


def test_mla_decode_with_few_heads_is_memory_bound_and_with_128_compute_bound():
    # 16 heads per rank (TP8): the latent KV read dominates; 128 heads: 242 FLOP/byte, past H200's ridge.
    few = {**KEYS["attn_mla_decode"], "num_heads": 16}
    us, detail = roofline_us("attn_mla_decode", few, {"batch": 64, "kv_len": 32768}, H200)
    assert "memory-bound" in detail and "4.8 TB/s" in detail
    assert us == pytest.approx(64 * 32768 * 576 * 2 / 4.3e12 * 1e6 + 3, rel=0.02)
    _, detail = roofline_us("attn_mla_decode", KEYS["attn_mla_decode"], {"batch": 64, "kv_len": 32768}, H200)
    assert "compute-bound" in detail


def test_causal_prefill_counts_half_the_square():
    key = KEYS["attn_mha_prefill"]
    full = op_work(
        "attn_mha_prefill",
        key,
        {"batch": np.array(1.0), "q_len": np.array(4096.0), "kv_len": np.array(4096.0)},
    )
    assert float(full.flops) == 2 * 128 * (4096 * 4096 / 2) * (192 + 128)


def test_nsa_attends_topk_not_kv():
    key = KEYS["attn_nsa_decode"]
    short = op_work("attn_nsa_decode", key, {"batch": np.array(1.0), "kv_len": np.array(10_000.0)})
    long = op_work("attn_nsa_decode", key, {"batch": np.array(1.0), "kv_len": np.array(100_000.0)})
    assert float(short.flops) == float(long.flops)


def test_moe_weight_bytes_grow_with_tokens_until_every_expert_is_active():
    key = KEYS["moe"]
    one = op_work("moe", key, {"m": np.array(1.0)})
    many = op_work("moe", key, {"m": np.array(4096.0)})
    expert_bytes = 3 * 7168 * 256 * 1
    assert float(one.bytes) == pytest.approx(8 * expert_bytes, rel=0.01)  # 8 experts for one token
    assert float(many.bytes) >= 255 * expert_bytes
    assert float(many.bytes) < 257 * expert_bytes + 4096 * 7168 * 2 * 9


def test_ring_allreduce_moves_2_g_minus_1_over_g_of_the_message():
    work = op_work("allreduce", KEYS["allreduce"], {"message_bytes": np.array(8e6)})
    assert isinstance(work, CollectiveWork)
    assert float(work.link_bytes) == pytest.approx(2 * 7 / 8 * 8e6)
    assert float(work.steps) == 14
    gather = op_work("allgather", KEYS["allgather"], {"message_bytes": np.array(8e6)})
    assert float(gather.link_bytes) == pytest.approx(7 / 8 * 8e6) and float(gather.steps) == 7


def test_collective_time_has_latency_floor_and_bandwidth_term():
    small, detail = roofline_us("allreduce", KEYS["allreduce"], {"message_bytes": 1024}, H100)
    assert small == pytest.approx(10 + 14 * 0.7, rel=0.01)
    assert "NVLink" in detail and "14 steps" in detail
    big, _ = roofline_us("allreduce", KEYS["allreduce"], {"message_bytes": 2**30}, H100)
    assert big == pytest.approx(10 + 14 * 0.7 + 2 * 7 / 8 * 2**30 / (0.8 * 450e9) * 1e6, rel=0.01)


def test_group_of_one_communicates_nothing():
    us, detail = roofline_us(
        "allreduce", {**KEYS["allreduce"], "group_size": 1}, {"message_bytes": 1e6}, H100
    )
    assert us == 0.0 and "no communication" in detail


def test_tiny_kernel_costs_the_launch_floor():
    us, _ = roofline_us("elementwise", KEYS["elementwise"], {"m": 1}, H100)
    assert 3.0 <= us < 3.1


def test_roofline_rejects_unknown_op_bad_key_and_bad_axes():
    with pytest.raises(PerfDBError, match="unknown op"):
        roofline_us("flash_decode", {}, {"m": 1}, H100)
    with pytest.raises(PerfDBError, match="missing \\['k'\\]"):
        roofline_us("gemm", dict(backend="x", dtype="bf16", n=1), {"m": 1}, H100)
    with pytest.raises(PerfDBError, match="axes"):
        roofline_us("gemm", KEYS["gemm"], {"batch": 1}, H100)


def test_roofline_is_vectorised():
    roof = Roofline("gemm", KEYS["gemm"], H100)
    ms = np.array([1.0, 64.0, 8192.0])
    vector = roof.time_us({"m": ms})
    scalar = [roofline_us("gemm", KEYS["gemm"], {"m": m}, H100)[0] for m in ms]
    assert np.allclose(vector, scalar) and not math.isnan(vector.sum())


@settings(max_examples=60, deadline=None)
@given(data=st.data(), op=st.sampled_from(sorted(KEYS)), gpu=st.sampled_from([H100, H200]))
def test_scalar_roofline_is_the_array_roofline_bit_for_bit(data, op, gpu):
    """time_us_scalar (the grids' scalar extrapolation) computes on Python floats what time_us computes on 0-d
    arrays: the same number exactly, not approximately, or predictions would move."""
    roof = Roofline(op, KEYS[op], gpu)
    axes = {
        a: data.draw(st.floats(AXIS_RANGES[a][0] / 2, AXIS_RANGES[a][1] * 4), label=a)
        for a in OP_SPECS[op].axis_columns
    }
    assert roof.time_us_scalar(axes) == float(roof.time_us({a: np.asarray(v) for a, v in axes.items()}))
