"""Calibration shapes come from the model zoo, so a zoo model is calibrated at its own shapes."""

from __future__ import annotations

from dataclasses import replace

from simperf.calibrate import shapes
from simperf.models.zoo import load_arch


def test_shapes_are_the_zoo_models_under_their_grid_names():
    dense = {m.name: m for m in shapes.DENSE_MODELS}
    # a zoo model without a grid name goes by its zoo name
    assert list(dense) == [
        "Llama-3.1-8B",
        "Llama-3.1-70B",
        "Llama-2-7B",
        "Qwen3-8B",
        "Qwen3-32B",
        "qwen3-0.6b",
    ]
    assert dense["Llama-3.1-8B"] == shapes.DenseModelShape("Llama-3.1-8B", 4096, 14336, 32, 8, 128, 128256)
    assert [m.name for m in shapes.QWEN3_MOE_ATTENTION] == ["Qwen3-30B-A3B", "Qwen3-235B-A22B"]
    # DeepSeek-R1 and V3.2 have V3's expert shape: one entry
    assert [(m.name, m.num_experts, m.shared_experts) for m in shapes.MOE_MODELS] == [
        ("DeepSeek-V3", 256, 1),
        ("Qwen3-30B-A3B", 128, 0),
        ("Qwen3-235B-A22B", 128, 0),
        ("deepseek-v2-lite", 64, 2),  # a zoo model without a grid name goes by its zoo name
    ]
    assert (shapes.DSV3_Q_LORA, shapes.DSV3_KV_LORA, shapes.DSV3_INDEX_TOPK) == (1536, 512, 2048)


def test_a_new_zoo_model_gets_gemm_shapes_without_editing_this_module(monkeypatch):
    new = replace(load_arch("qwen3-8b"), name="tiny-new", hidden_size=1536, intermediate_size=4608)
    real_names, real_load = shapes.zoo_architectures, shapes.load_arch
    monkeypatch.setattr(shapes, "zoo_architectures", lambda: [*real_names(), "tiny-new"])
    monkeypatch.setattr(shapes, "load_arch", lambda n: new if n == "tiny-new" else real_load(n))
    monkeypatch.setattr(shapes, "DENSE_MODELS", shapes._gqa_shapes(moe=False))
    by_name = {s.name: (s.n, s.k) for s in shapes.dense_gemm_shapes()}
    assert by_name["tiny-new.gate_up.tp1"] == (2 * 4608, 1536)
    assert by_name["tiny-new.down.tp2"] == (1536, 4608 // 2)
