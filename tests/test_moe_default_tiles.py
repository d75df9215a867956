"""SGLang runs its Triton fused MoE with a tuned configuration only where it ships one for the shape and GPU; for any
other shape it runs `get_default_config`'s tiles (0.5.17 fused_moe_triton_config.py). simperf prices that case from
tables measured with those tiles (backend triton_fused_moe_default), where measured."""

from __future__ import annotations

import pytest

from simperf.calibrate.backends import moe_triton as mt
from simperf.models.kernels import moe_keys, sglang_tunes_moe


def test_which_shapes_sglang_ships_tuned_configs_for():
    # DeepSeek-V2-Lite's routed MoE (64 experts, n 1408) has none on the H200 or H100: it runs the default tiles
    assert not sglang_tunes_moe(64, 1408, "NVIDIA_H200", "bf16")
    assert not sglang_tunes_moe(64, 1408, "NVIDIA_H100_80GB_HBM3", "bf16")
    # Qwen3-30B-A3B (128 x 768, bf16) and DeepSeek-V3 at TP 8 with the shared expert fused (257 x 256, block fp8)
    assert sglang_tunes_moe(128, 768, "NVIDIA_H200", "bf16")
    assert sglang_tunes_moe(257, 256, "NVIDIA_H200", "fp8")
    assert sglang_tunes_moe(64, 1408, "", "bf16")  # a GPU SGLang has no name for keeps the tuned tables


def test_sglang_default_tiles_follow_get_default_config():
    assert mt.sglang_default_config(16, 64, "bf16") == mt.BlockConfig(16, 32, 64, 1, 4, 3)  # m <= E
    assert mt.sglang_default_config(64, 64, "bf16") == mt.BlockConfig(16, 32, 64, 1, 4, 3)
    assert mt.sglang_default_config(65, 64, "bf16") == mt.BlockConfig(64, 64, 32, 8, 4, 3)
    assert mt.sglang_default_config(8, 64, "fp8_block") == mt.BlockConfig(64, 128, 128, 32, 4, 3)
    point = {"m": 256, "topk": 6, "num_experts": 64, "experts_per_rank": 64, "dtype": "bf16"}
    assert mt.point_candidates({**point, "backend": mt.SGLANG_DEFAULT_TILES_BACKEND}) == (
        mt.BlockConfig(64, 64, 32, 8, 4, 3),
    )  # nothing tuned
    assert len(mt.point_candidates({**point, "backend": "triton_fused_moe"})) > 1


def test_default_tiles_are_preferred_only_where_sglang_has_no_tuned_config():
    """SGLang's own kernel (whatever tiles it picks) comes first; of simperf's own tables, the default-tiles one
    comes before the tuned one only where SGLang ships no configuration."""
    tuned = moe_keys("bf16", 64, 64, 6, 1408, 2048)
    untuned = moe_keys("bf16", 64, 64, 6, 1408, 2048, default_tiles=True)
    assert [dict(k)["backend"] for k in tuned[:2]] == ["sglang_fused_moe", "triton_fused_moe"]
    assert [dict(k)["backend"] for k in untuned[:3]] == [
        "sglang_fused_moe",
        "triton_fused_moe_default",
        "triton_fused_moe",
    ]
    assert untuned[2:] == tuned[1:]


@pytest.mark.parametrize(
    ("model", "tp", "ep", "backend"),
    [
        ("deepseek-v2-lite", 1, 1, "sglang_fused_moe"),
        ("qwen3-30b-a3b", 2, 1, "sglang_fused_moe"),
        ("deepseek-v2-lite", 2, 2, "triton_fused_moe_default"),
        ("qwen3-30b-a3b", 2, 2, "triton_fused_moe"),
    ],
)
def test_h200_decode_prices_the_moe_sglang_runs(model, tp, ep, backend):
    """With the shipped H200 tables: at EP 1 the MoE of both models from SGLang's own kernel (timed at every EP-1
    layout); under expert parallelism (EP 2, where SGLang's kernel was not timed) from simperf's: V2-Lite's with the
    default tiles SGLang runs for its 32 local experts, Qwen3-30B-A3B's tuned."""
    from simperf.pipeline import predict
    from simperf.scenario.models import Scenario

    scenario = Scenario.model_validate(
        {
            "model": {"name": model},
            "hardware": {"gpu": "h200", "count": tp},
            "serving": {"attention_backend": "flashinfer", "tp": tp, "ep": ep},
            "workload": {"dataset": {"kind": "fixed", "input_len": 128, "output_len": 2}, "num_prompts": 1},
        }
    )
    cost = predict(scenario).cost
    rows = cost.breakdown_decode(64, 64, 64 * 1024, True)
    moe = next(r for r in rows if r.name == "moe.experts")
    assert moe.key["backend"] == backend and moe.source == "measured"
