"""The triton_fused_moe calibration backend: block-config rule and grid wiring (plain Python, always run),
and the Triton kernels against a float64 torch reference under Triton's CPU interpreter (skipped where
torch or triton is missing, as in CI)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from simperf.calibrate import grid as gridmod
from simperf.calibrate.backends import group_for
from simperf.calibrate.measure import Unsupported

# Triton decides at decoration time (the backend module's import) whether a kernel runs in its CPU
# interpreter; the variable is put back afterwards so that nothing else in this process (e.g. GPU workers
# started by other tests) inherits it.
_saved_interpret = os.environ.get("TRITON_INTERPRET")
os.environ["TRITON_INTERPRET"] = "1"
try:
    from simperf.calibrate.backends import moe_triton as mt
finally:
    if _saved_interpret is None:
        del os.environ["TRITON_INTERPRET"]
    else:
        os.environ["TRITON_INTERPRET"] = _saved_interpret


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


HAVE_GPU_STACK = _importable("torch") and _importable("triton") and mt.HAVE_TRITON
needs_stack = pytest.mark.skipif(not HAVE_GPU_STACK, reason="torch and triton are not installed")
GRID_FILE = Path(__file__).resolve().parents[1] / "calibration" / "grids" / "moe_triton.yaml"


# ---------------------------------------------------------------- plain Python


def test_block_config_rule_grows_tiles_with_rows_per_expert() -> None:
    # DeepSeek-V3: 256 experts, top-8 -> m / 32 rows per expert
    assert mt.block_config(16, 8, 256, "fp8_block").block_m == 16
    assert mt.block_config(1024, 8, 256, "fp8_block").block_m == 64
    assert mt.block_config(16384, 8, 256, "fp8_block").block_m == 128
    for m in (1, 64, 1024, 16384):
        cfg = mt.block_config(m, 8, 256, "fp8_block")
        assert cfg.block_k == mt.SCALE_GROUP  # K blocks meet exactly one scale
        assert cfg.block_n == 128
    assert mt.block_config(1, 8, 256, "bf16").block_n == 64


def test_compile_signature_is_shared_across_m_with_the_same_config() -> None:
    point = {"m": 1, "topk": 8, "num_experts": 256, "dtype": "bf16"}
    assert mt.compile_signature(point) == mt.compile_signature({**point, "m": 64})
    assert mt.compile_signature(point) != mt.compile_signature({**point, "m": 16384})


def test_tuning_tries_the_untuned_rule_first_and_no_config_twice() -> None:
    for m in (1, 8, 64, 1024, 16384):
        for dtype in ("bf16", "fp8_block"):
            cfgs = mt.candidate_configs(m, 8, 256, dtype)
            assert cfgs[0] == mt.block_config(m, 8, 256, dtype)
            assert len(set(cfgs)) == len(cfgs) > 1
            # fp8 K blocks must meet exactly one activation and one weight scale
            if dtype == "fp8_block":
                assert all(c.block_k == mt.SCALE_GROUP for c in cfgs)
            assert all(mt.SCALE_GROUP % c.block_n == 0 or c.block_n % mt.SCALE_GROUP == 0 for c in cfgs)


def test_decode_sized_m_tries_narrower_n_tiles_than_the_rule() -> None:
    # one token on DeepSeek's 256 experts: the rule's BLOCK_N 128 leaves 8 experts x 4 programs per GEMM
    widths = {c.block_n for c in mt.candidate_configs(1, 8, 256, "fp8_block")}
    assert min(widths) < mt.block_config(1, 8, 256, "fp8_block").block_n
    assert {c.block_m for c in mt.candidate_configs(1, 8, 256, "fp8_block")} == {16}
    assert max(c.block_m for c in mt.candidate_configs(16384, 8, 256, "fp8_block")) == 128


def test_config_label_names_every_tile_parameter() -> None:
    label = mt.config_label(mt.BlockConfig(16, 64, 128, 1, 4, 3))
    assert label == "BM16_BN64_BK128_G1_W4_S3"


def test_config_label_round_trips_for_every_candidate() -> None:
    for m in (1, 64, 1024, 16384):
        for dtype in mt.DTYPES:
            for cfg in mt.candidate_configs(m, 9, 257, dtype):
                assert mt.parse_config_label(mt.config_label(cfg)) == cfg
    for bad in (
        "",
        "BM16_BN64",
        "BM16_BN64_BK128_G1_W4_S3 ",
        "bm16_BN64_BK128_G1_W4_S3",
        "BMx_BN64_BK128_G1_W4_S3",
    ):
        with pytest.raises(ValueError):
            mt.parse_config_label(bad)


def test_recorded_config_is_read_back_from_the_timing_method() -> None:
    cfg = mt.BlockConfig(64, 128, 128, 8, 4, 4)
    method = mt.tuned_timing_method("cuda_graph_replay", cfg, 8)
    assert method == "cuda_graph_replay tuned BM64_BN128_BK128_G8_W4_S4 (best of 8)"  # as the tables hold it
    assert mt.recorded_config(method) == cfg
    # untuned rows (the rule), rows of other timers and third-party rows record no configuration
    for untuned in (None, "", "cuda_graph_replay", "cuda_events", "third-party"):
        assert mt.recorded_config(untuned) is None
    with pytest.raises(ValueError):
        mt.recorded_config("cuda_graph_replay tuned BM64_BN128 (best of 8)")


def _validation_op(**point):  # type: ignore[no-untyped-def]
    from simperf.validate.program import ProgramOp

    base = {"op": "moe", "backend": "triton_fused_moe", "dtype": "fp8_block", "num_experts": 257}
    base.update(experts_per_rank=257, topk=9, n=256, k=7168, routing="balanced+shared1", m=700)
    return ProgramOp("moe.experts", "moe", {**base, **point}, "moe", 58, 500.0, "interpolated", True)


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> list:
    """The backend's GPU work replaced by records: which configurations get launchers built, on how many
    routing draws. A timing that is not a collection (a tile search) fails the test."""
    from simperf.calibrate import timing

    built: list = []

    def launchers(point, weights, routings, cfg):  # type: ignore[no-untyped-def]
        built.append((cfg, len(routings)))
        return [lambda: cfg for _ in routings]

    def replay(launchers, cfg):  # type: ignore[no-untyped-def]
        assert cfg.collect is not None, "a candidate was timed: validation searched for a configuration"
        cfg.collect.append(launchers[0])

    monkeypatch.setattr(mt, "HAVE_TRITON", True)
    monkeypatch.setattr(mt, "_cached_weights", lambda point, ctx: "weights")
    monkeypatch.setattr(mt, "_routing_sets", lambda point, weights, max_sets=8: ["routing"] * max_sets)
    monkeypatch.setattr(mt, "_launchers", launchers)
    monkeypatch.setattr(timing, "time_graph_replay", replay)
    return built


def test_validation_runs_the_carried_configuration_without_searching(fake_gpu: list) -> None:
    from types import SimpleNamespace

    from simperf.validate.gpu import BuildContext, build_launcher

    carried = mt.BlockConfig(32, 64, 128, 8, 4, 4)
    assert carried != mt.block_config(700, 9, 257, "fp8_block")  # not what the rule would pick
    ctx = BuildContext(SimpleNamespace(sm_major=9))  # type: ignore[arg-type]
    launch = build_launcher(_validation_op(**{mt.VALIDATION_CONFIG: mt.config_label(carried)}), ctx)
    assert fake_gpu == [(carried, 1)]  # that configuration only, on one routing draw
    assert launch() == carried


def test_validation_without_a_carried_configuration_runs_the_untuned_rule(fake_gpu: list) -> None:
    from types import SimpleNamespace

    from simperf.validate.gpu import BuildContext, build_launcher

    build_launcher(_validation_op(m=3), BuildContext(SimpleNamespace(sm_major=9)))  # type: ignore[arg-type]
    assert fake_gpu == [(mt.block_config(3, 9, 257, "fp8_block"), 1)]


def test_shared_routing_suffix_names_the_fused_experts() -> None:
    from simperf.perfdb.schema import fused_shared_routing, split_shared_routing

    assert split_shared_routing("zipf+shared1") == ("zipf", 1)
    assert split_shared_routing(fused_shared_routing("zipf", 2)) == ("zipf", 2)
    assert (
        split_shared_routing("balanced") == ("balanced", 0)
        and fused_shared_routing("balanced", 0) == "balanced"
    )
    with pytest.raises(ValueError):
        split_shared_routing("balanced+sharedx")


@needs_stack
def test_fused_shared_routing_appends_the_shared_expert_to_every_token() -> None:
    from simperf.calibrate.backends.moe import route

    ids = route(6, 257, 9, "zipf+shared1", seed=2)
    assert tuple(ids.shape) == (6, 9)
    assert (ids[:, -1] == 256).all() and (ids[:, :-1] < 256).all()
    assert all(len(set(row.tolist())) == 9 for row in ids)
    with pytest.raises(Unsupported):  # a malformed key is reported like any shape the backend cannot run
        route(2, 257, 9, "balanced+sharedx")


def test_fp8_block_needs_128_aligned_dims() -> None:
    mt.check_supported("fp8_block", 256, 7168)
    mt.check_supported("bf16", 96, 2048)
    with pytest.raises(Unsupported):
        mt.check_supported("fp8_block", 96, 2048)
    with pytest.raises(Unsupported):
        mt.check_supported("fp8_rowwise", 256, 7168)


def test_grid_file_selects_the_triton_backend() -> None:
    assert group_for("moe", "triton_fused_moe").name == "moe_triton"
    grid = gridmod.load_grid(GRID_FILE)
    points = [p for p in gridmod.grid_points(grid) if p["op"] == "moe"]
    assert points and {p["backend"] for p in points} == {"triton_fused_moe"}
    assert {p["dtype"] for p in points} == {"bf16", "fp8_block"}
    assert {p["routing"] for p in points} == {"balanced", "zipf"}
    assert {(p["num_experts"], p["experts_per_rank"], p["n"]) for p in points} >= {
        (256, 256, 2048),  # EP1
        (256, 32, 2048),  # EP8
        (256, 256, 256),  # TP8 (n = 2048 / 8)
    }
    assert max(p["m"] for p in points) == 16384 and min(p["m"] for p in points) == 1


def test_default_grid_keeps_the_proxy() -> None:
    points = [p for p in gridmod.grid_points(gridmod.load_grid(None)) if p["op"] == "moe"]
    assert {p["backend"] for p in points} == {"torch_grouped_mm"}


# ---------------------------------------------------------------- kernels under the CPU interpreter


@pytest.fixture
def interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the kernels in Triton's CPU interpreter. Its 3.6 release turns scalar arguments (1-element
    arrays) into loop bounds with int(), which numpy >= 2.4 refuses: convert through the element instead."""
    from triton.runtime import interpreter as interp

    if not isinstance(mt._grouped_gemm_kernel, interp.InterpretedFunction):
        pytest.skip("the backend was imported before this module, outside Triton's interpreter")
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the launch wrappers read it to upcast dots (DOT_F32)
    original = interp._patch_lang_tensor

    def patched(tensor, scope) -> None:  # type: ignore[no-untyped-def]
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    monkeypatch.setattr(interp, "_patch_lang_tensor", patched)


def _dequant_blocks(w, s):  # type: ignore[no-untyped-def]
    g = mt.SCALE_GROUP
    return w.double() * s.double().repeat_interleave(g, 1).repeat_interleave(g, 2)


def _kernel_quantised(q, scale):  # type: ignore[no-untyped-def]
    """float64 value of the kernel's own 1x128 fp8 tensor."""
    return q.double() * scale.double().repeat_interleave(mt.SCALE_GROUP, 1)


def reference_moe(x, weights, router_weights, slot_expert, topk, buf):  # type: ignore[no-untyped-def]
    """Token-by-token float64 MoE with the kernel's storage roundings (bf16 between GEMMs).

    fp8: the reference takes the kernel's own quantised activations (checked separately against the
    e4m3 rounding bound) and verifies the rest: gathers, block scales, GEMMs, router weights, top-k sum.
    """
    import torch
    import torch.nn.functional as F

    fp8 = weights.s13 is not None
    n = weights.w2.shape[2]
    xs = _kernel_quantised(buf.xq, buf.x_scale) if fp8 else x.double()
    w13 = _dequant_blocks(weights.w13, weights.s13) if fp8 else weights.w13.double()
    w2 = _dequant_blocks(weights.w2, weights.s2) if fp8 else weights.w2.double()
    out = torch.zeros(x.shape, dtype=torch.float64)
    for slot, expert in enumerate(slot_expert.tolist()):
        if expert < 0:
            continue  # routed to another rank
        token = slot // topk
        h = (xs[token] @ w13[expert].T).to(torch.bfloat16).float()
        a = F.silu(h[:n]) * h[n:]
        if fp8:
            kernel_a = _kernel_quantised(buf.act[slot][None], buf.act_scale[slot][None])[0]
            _assert_within_fp8_step(kernel_a, a.double())
            a = kernel_a
        else:
            a = a.to(torch.bfloat16).double()
        y = (a @ w2[expert].T) * float(router_weights[slot])
        out[token] += y.to(torch.bfloat16).double()
    return out


def _assert_within_fp8_step(quantised, exact) -> None:  # type: ignore[no-untyped-def]
    """e4m3 keeps 3 mantissa bits: a rounding error up to 1/8 of the value (plus the subnormal floor)."""
    rows = exact.reshape(-1, mt.SCALE_GROUP)
    floor = rows.abs().amax(-1, keepdim=True) / mt.FP8_MAX * 2.0**-6
    err = (quantised.reshape(rows.shape) - rows).abs()
    assert bool((err <= rows.abs() / 8 + floor + 1e-3 * rows.abs().amax(-1, keepdim=True)).all())


def _run_layer(dtype: str, n: int, experts_per_rank: int):  # type: ignore[no-untyped-def]
    import torch

    torch.manual_seed(0)
    m, num_experts, topk, k = 6, 8, 2, 256
    topk_ids = torch.stack([torch.randperm(num_experts)[:topk] for _ in range(m)])
    slot_expert = mt.busiest_rank_slots(topk_ids, experts_per_rank)
    weights = mt.make_weights(experts_per_rank, n, k, dtype == "fp8_block", device="cpu")
    router_weights = torch.rand(m * topk)
    x = torch.randn(m, k).to(torch.bfloat16)
    cfg = mt.block_config(m, topk, num_experts, dtype)
    buf = mt.alloc_buffers(x, weights, topk, cfg, fp8=dtype == "fp8_block")
    if dtype == "fp8_block":
        # Triton 3.6's interpreter casts float32 -> e4m3 wrongly when rounding carries into the exponent
        # (126.5 -> 64), so the quantised activations are kept in float32 here: the scale computation,
        # grouping and scale indexing are tested, the e4m3 rounding itself only runs on the GPU.
        buf.xq = torch.empty(buf.xq.shape, dtype=torch.float32)
        buf.act = torch.empty(buf.act.shape, dtype=torch.float32)
    out = mt.fused_moe(x, weights, router_weights, slot_expert, topk, buf, cfg)
    if buf.xq is not None:
        _assert_within_fp8_step(_kernel_quantised(buf.xq, buf.x_scale), x.double())
        group_max = buf.xq.abs().reshape(m, -1, mt.SCALE_GROUP).amax(-1)
        torch.testing.assert_close(group_max, torch.full_like(group_max, mt.FP8_MAX))  # scale = amax / 448
    return out, reference_moe(x, weights, router_weights, slot_expert, topk, buf), buf, slot_expert, cfg


@needs_stack
@pytest.mark.parametrize(
    ("dtype", "n", "experts_per_rank"),
    [("bf16", 32, 8), ("bf16", 32, 4), ("fp8_block", 128, 8), ("fp8_block", 128, 4)],
)
def test_fused_moe_matches_reference(interpreter: None, dtype: str, n: int, experts_per_rank: int) -> None:
    import torch

    out, ref, _, _, _ = _run_layer(dtype, n, experts_per_rank)
    assert out.dtype == torch.bfloat16
    assert ref.abs().max() > 0
    tol = 2e-2 * float(ref.abs().max())
    torch.testing.assert_close(out.double(), ref, rtol=2e-2, atol=tol)


@needs_stack
def test_align_pads_each_expert_to_block_m(interpreter: None) -> None:
    import torch

    _, _, buf, slot_expert, cfg = _run_layer("bf16", 32, 4)
    slots = slot_expert.numel()
    counts = torch.bincount(slot_expert[slot_expert >= 0].long(), minlength=4)
    padded = ((counts + cfg.block_m - 1) // cfg.block_m * cfg.block_m).sum()
    assert int(buf.total) == int(padded)
    ids = buf.sorted_ids[: int(padded)].view(-1, cfg.block_m)
    for block, owner in zip(ids, buf.block_expert[: ids.shape[0]].tolist(), strict=True):
        real = block[block < slots].long()
        assert real.numel() > 0 or owner < 4
        assert (slot_expert[real] == owner).all()  # every real row of a block belongs to its expert
    seen = sorted(buf.sorted_ids[buf.sorted_ids < slots].tolist())
    assert seen == torch.nonzero(slot_expert >= 0).flatten().tolist()  # each local slot exactly once
