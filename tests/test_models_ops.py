"""Per-step op lists: shapes, multiplicities, table keys, and SGLang's attention-path selection rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simperf.models.ops import (
    StepSettings,
    decode_ops,
    extend_group,
    extend_ops,
    nsa_padded_heads,
    plan_extend,
    select_mla_method,
)
from simperf.models.zoo import load_arch, zoo_names
from simperf.perfdb.schema import OP_SPECS
from simperf.scenario.resolved import ParallelLayout


def settings_for(tp=8, dp=1, ep=1, weight="fp8", kv="bf16", page=1, prefill="fa3", decode="fa3", sm=9):
    return StepSettings(ParallelLayout(tp, dp, ep), weight, kv, page, prefill, decode, sm_major=sm)


def by_name(ops):
    out = {}
    for op in ops:
        assert op.name not in out, f"duplicate op name {op.name}"
        out[op.name] = op
    return out


def test_deepseek_v3_tp8_decode_shapes():
    arch = load_arch("deepseek-v3")
    ops = by_name(decode_ops(arch, settings_for(), bs=50, padded_bs=56, kv_len=1000.0))
    q_b = ops["q_b_proj"]
    assert (q_b.key["n"], q_b.key["k"], q_b.count, q_b.axes["m"]) == (128 * 192 // 8, 1536, 61, 56)
    assert ops["fused_qkv_a_proj"].key["n"] == 1536 + 512 + 64
    assert ops["o_proj"].key["k"] == 16 * 128
    attn = ops["attention"]
    assert attn.op == "attn_mla_decode" and attn.key["num_heads"] == 16 and attn.count == 61
    assert attn.axes["batch"] == 50  # attention at the real batch, GEMMs at the padded one
    assert ops["w_kc"].key["batch"] == 16 and ops["w_vc"].key == {
        "backend": "torch", "dtype": "bf16", "batch": 16, "n": 128, "k": 512,
    }  # fmt: skip
    assert ops["moe.experts"].count == 58 and ops["mlp.gate_up_proj"].count == 3
    assert ops["mlp.gate_up_proj"].key["n"] == 2 * 18432 // 8
    assert ops["moe.experts"].key["n"] == 2048 // 8 and ops["moe.experts"].axes["m"] == 56
    ar = ops["attn_allreduce"]
    assert ar.key == {"backend": "sglang_custom_ar", "dtype": "bf16", "group_size": 8} and ar.count == 61
    assert ar.axes["message_bytes"] == 56 * 7168 * 2
    assert ops["lm_head"].key["n"] == 129280 // 8 and ops["lm_head"].key["dtype"] == "bf16"
    assert ops["lm_head"].axes["m"] == 56
    assert "kv_b_proj" not in ops  # decode is always the absorbed MLA path


def test_dp_attention_decode_gathers_and_reduce_scatters_instead_of_two_all_reduces():
    """SGLang 0.5.17 runs a DP-attention decode in MAX_LEN padding: one NCCL all-gather of every rank's (padded)
    rows before each MLP and one reduce-scatter after it (what the served DeepSeek-V2-Lite DP2 decode's trace
    launches, groundtruth/forwards/h200x2/). They were priced as two custom all-reduces, 0.45 ms short of the served
    3.89 ms iteration at one request; an extend (SUM_LEN) keeps the two all-reduces."""
    arch = load_arch("deepseek-v2-lite")
    s = settings_for(tp=2, dp=2, weight="bf16", prefill="flashinfer", decode="flashinfer")
    ops = by_name(decode_ops(arch, s, bs=1, padded_bs=1, kv_len=1024.0))
    assert "attn_allreduce" not in ops and "mlp_allreduce" not in ops
    gather, scatter = ops["dp_gather"], ops["dp_reduce_scatter"]
    assert (gather.op, scatter.op) == ("allgather", "reducescatter")
    assert (
        gather.key == {"backend": "nccl", "dtype": "bf16", "group_size": 2}
        and gather.count == arch.num_layers
    )
    # both carry the gathered rows: DP x the padded batch, hidden 2,048, bf16
    assert gather.axes["message_bytes"] == scatter.axes["message_bytes"] == 2 * 1 * 2048 * 2
    extend = by_name(extend_ops(arch, s, np.array([512]), np.array([0])))
    assert "dp_gather" not in extend and extend["attn_allreduce"].count == arch.num_layers


def test_dp_attention_with_attention_tp_adds_the_attention_groups_collectives():
    arch = load_arch("deepseek-v3")
    ops = by_name(decode_ops(arch, settings_for(tp=8, dp=4), bs=4, padded_bs=4, kv_len=1000.0))
    # attention TP 2 inside each DP rank: its rows are reduce-scattered in the attention group before the
    # all-gather over all 8, and all-gathered back after the reduce-scatter (layers/dp_attention.py)
    inner_in, inner_out = ops["dp_gather.attn_tp"], ops["dp_reduce_scatter.attn_tp"]
    assert (inner_in.op, inner_out.op) == ("reducescatter", "allgather")
    assert inner_in.key["group_size"] == inner_out.key["group_size"] == 2
    assert inner_in.axes["message_bytes"] == 4 * 7168 * 2
    assert (
        ops["dp_gather"].key["group_size"] == 8 and ops["dp_gather"].axes["message_bytes"] == 4 * 4 * 7168 * 2
    )


def test_fp8_gemm_prefers_block_scaled_deep_gemm_then_rowwise_proxy():
    ops = by_name(decode_ops(load_arch("deepseek-v3"), settings_for(), 8, 8, 100.0))
    candidates = [(dict(k)["backend"], dict(k)["dtype"]) for k in ops["q_b_proj"].candidates]
    assert candidates[0] == ("deep_gemm", "fp8_block") and ("torch_scaled_mm", "fp8_rowwise") in candidates


def test_backend_mapping_to_table_backends():
    arch = load_arch("deepseek-v3")
    fa3 = by_name(decode_ops(arch, settings_for(decode="fa3"), 8, 8, 100.0))["attention"]
    fi = by_name(decode_ops(arch, settings_for(decode="flashinfer"), 8, 8, 100.0))["attention"]
    mla = by_name(decode_ops(arch, settings_for(decode="flashmla", page=64), 8, 8, 100.0))["attention"]
    # SGLang's flashinfer MLA backend asks flashinfer for backend="auto": its fa3 kernels on SM90, fa2 on SM100;
    # SGLang's fa3 runs sgl-kernel's FA3 (`sgl_fa3`, preferred), priced by flashinfer's FA3 where it has no table
    assert (fa3.key["backend"], fi.key["backend"], mla.key["backend"]) == (
        "sgl_fa3",
        "flashinfer_fa3",
        "flashmla",
    )
    assert [dict(k)["backend"] for k in fa3.candidates] == ["sgl_fa3", "flashinfer_fa3"]
    blackwell = settings_for(decode="flashinfer", sm=10)
    assert by_name(decode_ops(arch, blackwell, 8, 8, 100.0))["attention"].key["backend"] == "flashinfer_fa2"
    assert mla.key["page_size"] == 64
    gqa = by_name(decode_ops(load_arch("llama-3.1-8b"), settings_for(tp=1, weight="bf16"), 8, 8, 100.0))
    # fa3 GQA decode: sgl-kernel's own table first, then flashinfer's decode (what prices it without one)
    assert [dict(k)["backend"] for k in gqa["attention"].candidates] == ["sgl_fa3", "flashinfer"]
    prefill = by_name(extend_ops(load_arch("llama-3.1-8b"), settings_for(tp=1, weight="bf16"), [100], [0]))
    assert prefill["attention"].op == "attn_mha_prefill"
    assert [dict(k)["backend"] for k in prefill["attention"].candidates] == ["sgl_fa3", "flashinfer_fa3"]
    fi_gqa = by_name(
        decode_ops(load_arch("llama-3.1-8b"), settings_for(tp=1, decode="flashinfer"), 8, 8, 100.0)
    )
    assert fi_gqa["attention"].key["backend"] == "flashinfer"


def test_mla_method_selection_rules():
    assert select_mla_method(0) == "mha"
    assert select_mla_method(1) == "absorb"
    assert select_mla_method(8191) == "absorb"
    assert select_mla_method(8192) == "mha"
    assert select_mla_method(100_000) == "mha"
    assert select_mla_method(0, captured_graph=True) == "absorb"


def test_extend_op_lists_follow_the_selected_path():
    arch, s = load_arch("deepseek-v3"), settings_for()
    fresh = by_name(extend_ops(arch, s, [4096], [0]))
    assert fresh["attention"].op == "attn_mha_prefill" and "kv_b_proj" in fresh and "w_kc" not in fresh
    assert fresh["attention"].key["head_dim"] == 192 and fresh["attention"].key["head_dim_v"] == 128
    assert fresh["kv_b_proj"].axes["m"] == 4096 and fresh["kv_b_proj"].key["n"] == 16 * 256
    chunk2 = by_name(extend_ops(arch, s, [1024], [1024]))
    assert chunk2["attention"].op == "attn_mla_extend" and "w_kc" in chunk2 and "kv_b_proj" not in chunk2
    long_prefix = by_name(extend_ops(arch, s, [1024], [9000]))
    assert long_prefix["kv_b_proj"].axes["m"] == 10024  # MHA decompresses prefix + new tokens
    # mixed chunked prefill: the decode rows' prefixes count in sum_prefix
    assert plan_extend(arch, s, np.array([512]), np.array([0]), np.array([3000])).method == "absorb"
    assert plan_extend(arch, s, np.array([512]), np.array([0]), np.array([9000])).method == "mha"


def test_extend_rows_and_logits_rows():
    arch, s = load_arch("deepseek-v3"), settings_for()
    ops = by_name(extend_ops(arch, s, [300, 200], [0, 0], np.array([50, 60, 70])))
    assert ops["q_b_proj"].axes["m"] == 503
    assert ops["lm_head"].axes["m"] == 5
    assert ops["attention[1]"].axes["batch"] == 3  # decode rows are a second attention group


def test_deepseek_v32_sparse_attention_indexer_and_head_padding():
    arch = load_arch("deepseek-v3.2")
    s = settings_for(kv="fp8_e4m3", page=64, prefill="flashmla_kv", decode="flashmla_kv")
    dec = by_name(decode_ops(arch, s, 32, 32, 5000.0))
    assert dec["attention"].op == "attn_nsa_decode" and dec["attention"].key["num_heads"] == 64
    assert dec["attention"].key["topk"] == 2048 and dec["attention"].key["kv_dtype"] == "fp8_e4m3"
    assert (
        dec["indexer.logits_topk"].key["variant"] == "decode" and dec["indexer.logits_topk"].axes["m"] == 32
    )
    assert dec["indexer.wq_b"].key["n"] == 64 * 128
    short = by_name(extend_ops(arch, s, [1500], [0]))
    assert short["attention"].op == "attn_mha_prefill" and "indexer.logits_topk" not in short
    long = by_name(extend_ops(arch, s, [4096], [0]))
    assert (
        long["attention"].op == "attn_nsa_prefill" and long["indexer.logits_topk"].key["variant"] == "prefill"
    )
    assert long["attention"].axes["m"] == 4096
    assert (
        nsa_padded_heads(16, "flashmla_sparse", 9) == 64
        and nsa_padded_heads(16, "flashmla_sparse", 10) == 128
    )
    assert nsa_padded_heads(128, "flashmla_kv", 9) == 128 and nsa_padded_heads(16, "flashinfer_fa3", 9) == 16


def test_single_tp_rank_has_no_collectives():
    ops = decode_ops(load_arch("llama-3.1-8b"), settings_for(tp=1, weight="bf16"), 4, 4, 100.0)
    assert not [o for o in ops if o.op in ("allreduce", "allgather")]


def test_expert_parallel_moe_key_and_separate_shared_expert():
    ops = by_name(decode_ops(load_arch("deepseek-v3"), settings_for(ep=8), 8, 8, 100.0))
    moe = ops["moe.experts"].key
    assert (moe["num_experts"], moe["experts_per_rank"], moe["topk"], moe["n"]) == (256, 32, 8, 2048)
    assert ops["moe.shared.gate_up_proj"].key["n"] == 2 * 2048 // 8


def test_unmeasured_fused_shared_expert_falls_back_to_measured_plain_moe():
    arch, s = load_arch("deepseek-v3"), settings_for()

    def has(op, key):
        return op == "moe" and key["num_experts"] == 256 and key["dtype"] == "fp8_rowwise"

    ops = by_name(decode_ops(arch, s, 8, 8, 100.0, has=has))
    assert ops["moe.experts"].key["num_experts"] == 256 and "moe.shared.down_proj" in ops
    default = by_name(decode_ops(arch, s, 8, 8, 100.0))
    assert default["moe.experts"].key["num_experts"] == 257 and default["moe.experts"].key["topk"] == 9


def test_measured_fused_shared_expert_replaces_the_separate_shared_mlp():
    arch, s = load_arch("deepseek-v3"), settings_for()

    def has(op, key):
        return op == "moe" and key["num_experts"] == 257 and key["routing"] == "balanced+shared1"

    ops = by_name(decode_ops(arch, s, 8, 8, 100.0, has=has))
    moe = ops["moe.experts"].key
    assert (moe["num_experts"], moe["topk"], moe["routing"]) == (257, 9, "balanced+shared1")
    assert not [name for name in ops if name.startswith("moe.shared")]


def test_every_fp8_linear_is_preceded_by_its_activation_quantisation():
    ops = by_name(decode_ops(load_arch("deepseek-v3"), settings_for(), 8, 8, 100.0))
    fp8_gemms = [o for o in ops.values() if o.op == "gemm" and o.key["dtype"] != "bf16"]
    assert fp8_gemms
    for gemm in fp8_gemms:
        quant = ops[f"{gemm.name}.act_quant"]
        assert quant.key["variant"] == "fp8_group_quant" and quant.key["n"] == gemm.key["k"]
        assert quant.count == gemm.count and quant.axes["m"] == gemm.axes["m"]
    assert "lm_head.act_quant" not in ops and "moe.gate.act_quant" not in ops  # bf16 layers
    bf16 = decode_ops(load_arch("llama-3.1-8b"), settings_for(tp=1, weight="bf16"), 4, 4, 100.0)
    assert not [o for o in bf16 if o.name.endswith(".act_quant")]


def test_dense_gqa_shapes_llama_70b_tp8():
    ops = by_name(decode_ops(load_arch("llama-3.1-70b"), settings_for(weight="bf16"), 16, 16, 2048.0))
    assert ops["qkv_proj"].key["n"] == (8 + 2 * 1) * 128 and ops["qkv_proj"].count == 80
    assert ops["attention"].key["num_kv_heads"] == 1 and ops["attention"].key["num_heads"] == 8
    assert ops["mlp.down_proj"].key["k"] == 28672 // 8


def test_qwen3_has_qk_norm_and_moe_variant_has_no_dense_mlp():
    q8 = by_name(decode_ops(load_arch("qwen3-8b"), settings_for(tp=1, weight="bf16"), 4, 4, 100.0))
    assert q8["q_norm"].axes["m"] == 4 * 32 and q8["k_norm"].axes["m"] == 4 * 8
    moe = by_name(decode_ops(load_arch("qwen3-30b-a3b"), settings_for(tp=4, weight="bf16"), 4, 4, 100.0))
    assert "mlp.gate_up_proj" not in moe and moe["moe.experts"].count == 48
    assert moe["moe.experts"].key["num_experts"] == 128 and moe["moe.experts"].key["n"] == 768 // 4


LAYOUTS = [(1, 1, 1), (8, 1, 1), (8, 1, 8), (8, 8, 1), (4, 2, 1)]


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(zoo_names()),
    layout=st.sampled_from(LAYOUTS),
    extend=st.lists(st.integers(1, 9000), min_size=1, max_size=4),
    prefix=st.integers(0, 20000),
    bs=st.integers(1, 64),
)
def test_every_op_key_and_axes_match_the_schema(name, layout, extend, prefix, bs):
    arch = load_arch(name)
    s = settings_for(*layout, weight=arch.default_weight_dtype)
    for ops in (
        decode_ops(arch, s, bs, bs, 1000.0),
        extend_ops(arch, s, extend, [prefix] * len(extend)),
    ):
        for op in ops:
            spec = OP_SPECS[op.op]
            assert op.count >= 1
            for key in op.candidates:
                assert tuple(c for c, _ in key) == spec.key_columns
            assert set(op.axes) == set(spec.axis_columns), op.name
            assert all(float(np.min(v)) > 0 for v in op.axes.values()), op.name


@given(st.lists(st.tuples(st.integers(1, 5000), st.integers(0, 50000)), min_size=1, max_size=8))
def test_work_equivalent_group_keeps_tokens_and_causal_pairs(requests):
    ext = np.array([e for e, _ in requests])
    pre = np.array([p for _, p in requests])
    g = extend_group(ext, pre, topk=0)
    assert g.batch * g.q_len == pytest.approx(ext.sum())
    pairs = float((ext * pre + ext * (ext + 1) / 2).sum())
    # a uniform request of q new tokens at the end of kv has q*kv - q*(q-1)/2 causal pairs
    uniform = g.batch * (g.q_len * g.kv_len - g.q_len * (g.q_len - 1) / 2)
    assert uniform == pytest.approx(pairs, rel=1e-9)
    if len(requests) == 1:
        assert g.kv_len == pytest.approx(ext[0] + pre[0])
    if not pre.any():  # a fresh batch stays fresh: no made-up prefix to match the pairs
        assert g.kv_len == pytest.approx(g.q_len)
    assert 1.0 - 1e-9 <= g.batch <= len(requests) + 1e-9


def test_uniform_extend_batch_is_its_own_work_equivalent():
    g = extend_group(np.array([300, 300, 300]), np.array([1000, 1000, 1000]), topk=0)
    assert (g.batch, g.q_len, g.kv_len) == (3, 300.0, 1300.0)
    ragged = extend_group(np.array([100, 3000]), np.array([0, 0]), topk=0)
    # token-weighted: the long request dominates, the short one adds a fraction of a request
    assert ragged.q_len == pytest.approx((100**2 + 3000**2) / 3100) and ragged.kv_len == ragged.q_len
    assert ragged.batch == pytest.approx(3100 / ragged.q_len)
