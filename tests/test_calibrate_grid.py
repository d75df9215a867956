"""Grid expansion, held-out and ragged sampling, point identity (CPU only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simperf.calibrate import grid as gridmod
from simperf.calibrate import shapes
from simperf.calibrate.backends import WORKER_GROUPS, group_for
from simperf.calibrate.points import make_point, point_key
from simperf.calibrate.runner import collapse_unrunnable, group_runs_here
from simperf.perfdb.schema import OP_SPECS


@pytest.fixture(scope="module")
def default_points():
    return gridmod.grid_points(gridmod.load_grid(None))


def test_default_grid_points_fill_every_key_and_axis_column_of_their_op(default_points):
    assert len(default_points) > 5000
    for point in default_points:
        spec = OP_SPECS[point["op"]]
        missing = [c for c in spec.key_columns + spec.axis_columns if point.get(c) is None]
        assert not missing, (point, missing)


def test_every_grid_point_has_a_worker_group(default_points):
    for point in default_points:
        assert group_for(point["op"], point["backend"]).name in {g.name for g in WORKER_GROUPS}


def test_grid_expansion_is_deterministic_and_free_of_duplicates(default_points):
    again = gridmod.grid_points(gridmod.load_grid(None))
    assert [point_key(p) for p in again] == [point_key(p) for p in default_points]
    assert len({point_key(p) for p in default_points}) == len(default_points)


def test_decode_points_respect_the_kv_token_cap(default_points):
    cap = gridmod.DEFAULT_GRID["caps"]["max_kv_tokens"]
    decode = [p for p in default_points if p["op"] == "attn_mla_decode"]
    assert decode and all(p["batch"] * p["kv_len"] <= cap for p in decode)
    assert any(p["batch"] == 512 and p["kv_len"] == 8192 for p in decode)
    assert not any(p["batch"] == 512 and p["kv_len"] == 32768 for p in decode)


def test_mla_decode_grid_covers_heads_layouts_and_verify_widths(default_points):
    fa3 = [p for p in default_points if p["op"] == "attn_mla_decode" and p["backend"] == "flashinfer_fa3"]
    assert {p["num_heads"] for p in fa3} == {128, 64, 32, 16, 8}
    assert {p["page_size"] for p in fa3} == {1, 32, 64, 128}
    assert {p["kv_dtype"] for p in fa3} == {"bf16", "fp8"}
    assert {p["q_len"] for p in fa3} == {1, 2, 4}
    flashmla = [p for p in default_points if p["backend"] == "flashmla"]
    assert {p["page_size"] for p in flashmla} == {64}


def test_gemm_grid_has_every_deepseek_linear_per_tp(default_points):
    gemm = {(p["dtype"], p["n"], p["k"]) for p in default_points if p["op"] == "gemm"}
    for tp in shapes.TP_DEGREES:
        assert ("bf16", 128 * 192 // tp, 1536) in gemm  # q_b
        assert ("bf16", 7168, 128 * 128 // tp) in gemm  # o_proj
        assert ("bf16", 129280 // tp, 7168) in gemm  # lm_head
    assert ("fp8_block", 2 * 18432, 7168) in gemm
    assert ("fp8_rowwise", 6144, 4096) in gemm  # Llama-3.1-8B qkv, TP1


def test_gqa_heads_per_rank_are_deduplicated_over_models_and_tp():
    pairs = shapes.gqa_heads_per_rank()
    assert len(pairs) == len(set(pairs))
    assert (32, 8) in pairs and (8, 1) in pairs and (4, 4) in pairs  # Llama-8B TP1, 70B TP8, Llama-2 TP8


def test_moe_rank_shapes_cover_ep_and_tp_moe():
    ds = [s for s in shapes.moe_rank_shapes() if s.model.name == "DeepSeek-V3"]
    assert {(s.experts_per_rank, s.n) for s in ds} >= {(256, 2048), (32, 2048), (256, 256)}


def test_yaml_grid_replaces_the_named_family_keys(tmp_path: Path):
    path = tmp_path / "grid.yaml"
    path.write_text("mla_decode: {num_heads: [16], batch: [1], kv_len: [128]}\nmoe: {enabled: false}\n")
    grid = gridmod.load_grid(path)
    pts = gridmod.grid_points(grid)
    assert {p["num_heads"] for p in pts if p["backend"] == "flashmla" and p["q_len"] == 1} == {16}
    assert not [p for p in pts if p["op"] == "moe"]


def test_unknown_grid_family_is_rejected(tmp_path: Path):
    path = tmp_path / "grid.yaml"
    path.write_text("mla_decoed: {num_heads: [16]}\n")
    with pytest.raises(ValueError, match="unknown grid family"):
        gridmod.load_grid(path)


@pytest.mark.parametrize(("text", "field"), [("moe: {m: 4}", "moe.m"), ("moe: {ep: 1}", "moe.ep")])
def test_a_scalar_where_a_grid_takes_a_list_is_refused_naming_the_field(tmp_path: Path, text, field):
    path = tmp_path / "grid.yaml"
    path.write_text(text + "\n")
    with pytest.raises(ValueError, match=rf"{field}: expected a list"):
        gridmod.load_grid(path)


def test_the_moe_layout_filters_keep_only_the_named_degrees(tmp_path: Path):
    path = tmp_path / "grid.yaml"
    path.write_text(
        "moe: {models: [DeepSeek-V3], m: [4], dtypes: [fp8_block], routings: [balanced], ep: [1], tp: [8]}\n"
    )
    moe = [p for p in gridmod.grid_points(gridmod.load_grid(path)) if p["op"] == "moe"]
    assert moe and {(p["num_experts"] // p["experts_per_rank"], p["n"]) for p in moe} == {(1, 2048 // 8)}


def test_op_categories_expand_to_op_names():
    assert gridmod.expand_ops(["gemm"]) == {"gemm", "bmm"}
    assert "attn_nsa_decode" in gridmod.expand_ops(["attention"])
    assert gridmod.expand_ops(None) == set(OP_SPECS)
    with pytest.raises(ValueError):
        gridmod.expand_ops(["tensor_magic"])


@settings(max_examples=15, deadline=None)
@given(per_op=st.integers(min_value=1, max_value=25))
def test_heldout_points_are_off_grid_within_caps_and_count_per_op(per_op):
    grid = gridmod.load_grid(Path("calibration/grids/smoke.yaml"))
    pts = gridmod.grid_points(grid)
    held = gridmod.heldout_points(pts, per_op, grid["caps"])
    grid_axis_values = {}
    for p in pts:
        for axis in OP_SPECS[p["op"]].axis_columns:
            grid_axis_values.setdefault((p["op"], axis), set()).add(p[axis])
    by_op = {}
    for h in held:
        assert h["sample"] == "heldout"
        assert gridmod.within_caps(h, grid["caps"])
        by_op[h["op"]] = by_op.get(h["op"], 0) + 1
    assert all(n <= per_op for n in by_op.values())
    # each held-out point differs from the grid on at least one axis value
    grid_keys = {point_key({**p, "sample": "heldout"}) for p in pts}
    assert not any(point_key(h) in grid_keys for h in held)


def test_ragged_points_record_per_request_lengths_with_mean_and_count():
    grid = gridmod.load_grid(None)
    pts = gridmod.grid_points(grid)
    ragged = gridmod.ragged_points(pts, 5, grid["caps"])
    backends = {(p["op"], p["backend"]) for p in ragged}
    assert ("attn_mla_decode", "flashinfer_fa3") in backends and ("attn_gqa_decode", "flashinfer") in backends
    for p in ragged:
        lens = json.loads(p["kv_lens"])
        assert p["batch"] == len(lens)
        assert p["kv_len"] == round(sum(lens) / len(lens))
        assert len(set(lens)) > 1


def test_heldout_sampling_skips_keys_the_device_cannot_run():
    grid = gridmod.load_grid(None)
    pts = gridmod.all_points(grid, 20, 0, runnable=lambda p: group_runs_here(p, 9))
    held_backends = {p["backend"] for p in pts if p["sample"] == "heldout"}
    assert "trtllm_gen" not in held_backends and "flashinfer_fa3" in held_backends


def test_sm100_points_collapse_to_one_unsupported_row_per_key_on_hopper(default_points):
    kept = collapse_unrunnable(default_points, sm_major=9)
    trtllm = [p for p in kept if p["backend"] == "trtllm_gen"]
    keys = {(p["kv_dtype"], p["num_heads"], p["page_size"], p["q_len"]) for p in trtllm}
    assert len(trtllm) == len(keys) == 10
    on_b200 = collapse_unrunnable(default_points, sm_major=10)
    assert len([p for p in on_b200 if p["backend"] == "trtllm_gen"]) > 100


def test_make_point_rejects_columns_outside_the_identity():
    with pytest.raises(KeyError):
        make_point("gemm", "torch", time_us=3.0)
    point = make_point("attn_mla_decode", "flashmla", kv_lens=[3, 5], batch=2)
    assert point["kv_lens"] == "[3,5]" or json.loads(point["kv_lens"]) == [3, 5]


def test_fused_shared_grid_adds_deepseek_ep1_layouts_with_the_shared_expert_always_routed():
    grid = gridmod.load_grid(None)
    grid["moe"].update(
        {"backends": ["triton_fused_moe"], "dtypes": ["fp8_block"], "routings": ["balanced"], "m": [4],
         "models": ["DeepSeek-V3"], "fused_shared": True, "fused_shared_only": True}
    )  # fmt: skip
    pts = gridmod.FAMILIES["moe"](grid["moe"])
    assert {(p["num_experts"], p["experts_per_rank"], p["topk"], p["routing"]) for p in pts} == {
        (257, 257, 9, "balanced+shared1")
    }
    assert sorted(p["n"] for p in pts) == [256, 512, 1024, 2048]  # TP-MoE 8/4/2/1
    grid["moe"]["fused_shared"] = False
    assert all(p["num_experts"] == 256 for p in gridmod.FAMILIES["moe"](grid["moe"]))


def test_activation_quantisation_points_go_to_the_triton_backend():
    grid = gridmod.load_grid(None)
    pts = gridmod.FAMILIES["elementwise"](grid["elementwise"])
    quant = [p for p in pts if p["variant"] == "fp8_group_quant"]
    assert quant and {p["backend"] for p in quant} == {"triton"}
    assert all(p["n"] % 128 == 0 for p in quant)
    assert group_for("elementwise", "triton").name == "quant_triton"
    assert {p["backend"] for p in pts if p["variant"] != "fp8_group_quant"} == {"flashinfer"}
