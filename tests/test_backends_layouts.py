"""Attention-backend combinations: what SGLang refuses, KV bytes per layout, and layout conversion at prefill."""

from __future__ import annotations

import numpy as np
import pytest

from simperf.costmodel.step import SGLangStepCost
from simperf.hardware.catalog import get_gpu
from simperf.models.ops import plan_extend
from simperf.perfdb.db import PerfDB
from simperf.scenario.backends import BackendError
from simperf.scenario.load import parse_scenario
from simperf.scenario.models import Overheads
from simperf.scenario.resolve import resolve


def scenario(model="deepseek-v3.2", gpu="h200", count=8, **serving):
    return parse_scenario(
        {
            "model": {"name": model},
            "hardware": {"gpu": gpu, "count": count},
            "serving": {"tp": count, **serving},
            "workload": {"dataset": {"kind": "random", "input_len": 16, "output_len": 4}, "num_prompts": 2},
        }
    )


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"model": "deepseek-v3", "attention_backend": "trtllm_mla"}, "requires a Blackwell GPU"),
        ({"model": "deepseek-v3", "gpu": "b200", "attention_backend": "fa3"}, r"Hopper \(SM90\) only"),
        ({"model": "llama-3.1-70b", "attention_backend": "flashmla"}, "is an MLA backend"),
        ({"model": "deepseek-v3", "attention_backend": "flashmla_sparse"}, "not a DSA model"),
        (
            {"prefill_attention_backend": "flashmla_kv", "kv_cache_dtype": "bf16"},
            "set kv_cache_dtype: fp8_e4m3",
        ),
    ],
)
def test_backend_combinations_sglang_refuses_are_refused_with_the_reason(kwargs, reason):
    with pytest.raises(BackendError, match=reason):
        resolve(scenario(**kwargs))


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "qwen3-8b", "deepseek-v3", "deepseek-v3.2"])
@pytest.mark.parametrize("gpu", ["h200", "b200"])
def test_every_family_resolves_with_the_backends_sglang_defaults_to(model, gpu):
    # Qwen3-MoE on B200 without --attention-backend was refused: SGLang's SM100 default trtllm did not list gqa_moe
    serving, _, _ = resolve(scenario(model=model, gpu=gpu))
    assert serving.prefill_backend and serving.decode_backend


def test_kv_pool_counts_each_layout_bytes_per_token():
    fp8, arch, _ = resolve(scenario(kv_cache_dtype="fp8_e4m3"))
    bf16, _, _ = resolve(scenario(kv_cache_dtype="bf16"))
    assert arch.kv_bytes_per_token_per_rank(fp8.layout, "fp8_e4m3", "flashmla_kv") == 61 * (656 + 132)
    assert arch.kv_bytes_per_token_per_rank(bf16.layout, "bf16", "fa3") == 61 * (1152 + 132)
    # the same memory holds ~1.63x more tokens in FlashMLA's fp8 layout than in bf16
    assert fp8.max_total_tokens / bf16.max_total_tokens == pytest.approx((1152 + 132) / (656 + 132), rel=0.01)


def _nsa_plan(extend_lens, prefix_lens, **serving):
    s, arch, gpu = resolve(scenario(**serving))
    cost = SGLangStepCost(arch, s, PerfDB.empty(gpu), Overheads())
    return plan_extend(arch, cost.settings, np.array(extend_lens), np.array(prefix_lens))


def _nsa_method(extend_lens, prefix_lens, **serving) -> str:
    return _nsa_plan(extend_lens, prefix_lens, **serving).method


def test_nsa_prefill_switches_from_dense_mha_to_sparse_at_2048_tokens():
    # an eager server (no prefill CUDA graph): the length alone decides
    assert _nsa_method([2048], [0], disable_cuda_graph=True) == "mha"
    assert _nsa_method([2049], [0], disable_cuda_graph=True) == "sparse"


def test_nsa_prefill_under_the_breakable_prefill_graph_is_sparse():
    """SGLang 0.5.17 (layers/attention/dsa_backend.py, set_dsa_prefill_impl) forces use_mha off inside the breakable
    prefill CUDA graph, which a DSA server captures up to 2048 tokens: a short prompt there runs sparse, not dense
    MHA. Extends the graph does not take keep the length rule: more tokens than it captures, or a single token
    (its 4-token bucket pads it more than twice). In the graph the indexer computes its logits and top-k at any
    length (dsa/dsa_indexer.py: the k-only skip runs only outside a graph)."""
    assert not _nsa_plan([2048], [0]).skip_indexer_logits
    assert _nsa_plan([2048], [0], disable_cuda_graph=True).skip_indexer_logits
    assert _nsa_method([2048], [0]) == "sparse"
    assert _nsa_method([1000], [500]) == "sparse"
    assert _nsa_method([1500, 1500], [0, 0]) == "mha"  # 3,000 tokens: eager, each sequence short
    assert _nsa_method([1], [100]) == "mha"
    assert _nsa_method([2049], [0]) == "sparse"
    # before the breakable rule simperf read (0.5.17), the earlier releases' graphs are not modelled; nor is the
    # DP-attention vote (the graph runs only when every rank holds tokens and fits): the length rule stays there
    assert _nsa_method([2048], [0], sglang_version="0.5.8") == "mha"
    assert _nsa_method([2048], [0], dp_attention=8) == "mha"


def _b200_mixed_kv_layouts():
    # B200, fp8 KV: trtllm stores the raw 576-byte layout; FlashMLA's sparse prefill reads the 656-byte one
    return resolve(
        scenario(
            gpu="b200",
            kv_cache_dtype="fp8_e4m3",
            prefill_attention_backend="flashmla_sparse",
            decode_attention_backend="trtllm",
        )
    )


def test_prefill_reading_another_kv_layout_pays_a_conversion():
    mixed, arch, gpu = _b200_mixed_kv_layouts()
    same, _, _ = resolve(scenario(gpu="b200", kv_cache_dtype="fp8_e4m3", attention_backend="trtllm"))
    db = PerfDB.empty(get_gpu("b200"))
    with_conversion = SGLangStepCost(arch, mixed, db, Overheads())
    without = SGLangStepCost(arch, same, db, Overheads())
    ext, pre = np.array([4096]), np.array([0])
    names = [
        op.name
        for op in [with_conversion._kv_conversion_op(plan_extend(arch, with_conversion.settings, ext, pre))]
    ]
    assert names == ["kv_layout_convert"]
    assert without._kv_conversion_op(plan_extend(arch, without.settings, ext, pre)) is None


def test_launch_bound_extend_counts_the_conversion_kernels_like_its_breakdown():
    mixed, arch, _ = _b200_mixed_kv_layouts()
    # launches far slower than the kernels: the step is its kernel count times the launch cost
    launch_bound = Overheads(eager_launch_us_per_kernel=1000.0)
    cost = SGLangStepCost(arch, mixed, PerfDB.empty(get_gpu("b200")), launch_bound)
    ext, pre = np.array([4096, 3000]), np.array([0, 0])
    breakdown = cost.breakdown_extend(ext, pre)
    assert "kv_layout_convert" in {row.name for row in breakdown}
    assert float(cost.extend_step(ext, pre).sum()) == pytest.approx(
        sum(r.total_us for r in breakdown), rel=1e-9
    )
