"""Dense GEMM (x[m,k] @ w[n,k]^T, as nn.Linear) and MLA's batched w_kc / w_vc matmuls.

bf16: torch.mm (cuBLAS). fp8_rowwise: torch._scaled_mm with per-token activation scales and per-channel
weight scales. fp8_block: 1x128 activation / 128x128 weight block scales as SGLang uses for DeepSeek FP8,
through torch._scaled_mm's blockwise path (cuBLASLt; table backend `torch_scaled_mm`) when this torch supports it
on the device, else recorded unsupported with the reasons; and through DeepGEMM's `fp8_gemm_nt` (table backend
`deep_gemm`), the kernel SGLang itself runs for these layers on Hopper (below). Activation quantization is not
included (SGLang runs it as a separate kernel). All timed by CUDA-graph replay, cycling weight sets past L2.

Why DeepGEMM: SGLang 0.5.17 dispatches a block-fp8 linear layer (srt/layers/quantization/fp8_utils.py,
`_dispatch_auto_backend`) to `deepgemm_w8a8_block_fp8_linear_with_fallback` whenever `deep_gemm` imports on an
SM90+ GPU (deep_gemm_wrapper/configurer.py, SGLANG_ENABLE_JIT_DEEPGEMM defaults on), and that function runs
`deep_gemm.fp8_gemm_nt` when n % 64 == 0 and k % 128 == 0, else falls back to its Triton kernel. The activation
scales reach the kernel MN-major and TMA-aligned (per_token_group_quant_fp8 with column_major_scales and
scale_tma_aligned), which is how they are laid out here, so DeepGEMM runs no layout transform of its own; and
SGLang launches DeepGEMM with programmatic dependent launch on, as here.
"""

from __future__ import annotations

from typing import Any

from simperf.calibrate.backends.common import probed_once
from simperf.calibrate.measure import Measurement, Unsupported
from simperf.calibrate.timing import random_tensor, rotation_sets, time_graph_replay


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    if point["op"] == "bmm":
        return _bmm(point, ctx)
    dtype = point["dtype"]
    if dtype == "bf16":
        return _bf16(point, ctx)
    if dtype == "fp8_rowwise":
        return _fp8_rowwise(point, ctx)
    if dtype == "fp8_block":
        if point["backend"] == "deep_gemm":
            return _fp8_block_deep_gemm(point, ctx)
        return _fp8_block(point, ctx)
    raise Unsupported(f"gemm dtype {dtype!r}")


def _sets(m: int, n: int, k: int, itemsize: int, ctx: Any) -> int:
    return rotation_sets((m * k + n * k) * itemsize + m * n * 2, ctx.l2_bytes, max_sets=256)


def _bf16(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch

    m, n, k = int(point["m"]), int(point["n"]), int(point["k"])
    sets = _sets(m, n, k, 2, ctx)
    xs = random_tensor((sets, m, k), torch.bfloat16)
    ws = random_tensor((sets, n, k), torch.bfloat16, scale=0.05)
    out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")

    def launcher(s: int) -> Any:
        x, w = xs[s], ws[s]
        return lambda: torch.mm(x, w.t(), out=out)

    return time_graph_replay([launcher(s) for s in range(sets)], ctx.timing)


def _fp8_rowwise(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch

    m, n, k = int(point["m"]), int(point["n"]), int(point["k"])
    if k % 16 or n % 16:
        raise Unsupported(f"torch._scaled_mm needs n and k divisible by 16 (n={n}, k={k})")
    sets = _sets(m, n, k, 1, ctx)
    xs = random_tensor((sets, m, k), torch.float8_e4m3fn)
    ws = random_tensor((sets, n, k), torch.float8_e4m3fn)
    sa = torch.rand(m, 1, device="cuda", dtype=torch.float32) + 0.5
    sb = torch.rand(1, n, device="cuda", dtype=torch.float32) + 0.5

    def launcher(s: int) -> Any:
        x, w = xs[s], ws[s]
        return lambda: torch._scaled_mm(x, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

    return time_graph_replay([launcher(s) for s in range(sets)], ctx.timing)


def _fp8_block(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch

    m, n, k = int(point["m"]), int(point["n"]), int(point["k"])
    if k % 128 or n % 128:
        raise Unsupported(f"128x128 block scales need n and k divisible by 128 (n={n}, k={k})")
    # cuBLASLt's blockwise path needs the outer-dim-major activation scales 16-byte aligned (m % 4 == 0);
    # other m run with up to 3 extra rows, as a caller padding its scale buffer would (negligible work).
    m = -(-m // 4) * 4
    layout = _blockwise_layout(ctx)
    sets = _sets(m, n, k, 1, ctx)
    xs = random_tensor((sets, m, k), torch.float8_e4m3fn)
    ws = random_tensor((sets, n, k), torch.float8_e4m3fn)
    sa, sb = _block_scales(m, n, k, layout)

    def launcher(s: int) -> Any:
        x, w = xs[s], ws[s]
        return lambda: torch._scaled_mm(x, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

    return time_graph_replay([launcher(s) for s in range(sets)], ctx.timing)


def _deep_gemm(ctx: Any) -> Any:
    """The deep_gemm module, once per worker, after one fp8_gemm_nt result matched a dequantized fp32 reference;
    Unsupported (with the reason) if it does not load or does not match."""
    return probed_once(ctx, "deep_gemm_gemm", _verified_deep_gemm, "deep_gemm.fp8_gemm_nt")


def _verified_deep_gemm() -> Any:
    import deep_gemm
    import torch

    # SGLang 0.5.17 turns on programmatic dependent launch for DeepGEMM in every worker
    # (deep_gemm_wrapper/entrypoint.py, update_deep_gemm_config; SGLANG_DEEPGEMM_PDL defaults on)
    if hasattr(deep_gemm, "set_pdl"):
        deep_gemm.set_pdl(True)
    pm, pn, pk = 64, 256, 512
    x = random_tensor((pm, pk), torch.float8_e4m3fn)
    w = random_tensor((pn, pk), torch.float8_e4m3fn)
    sa, sb = _deep_gemm_scales(pm, pn, pk)
    out = torch.empty(pm, pn, dtype=torch.bfloat16, device="cuda")
    deep_gemm.fp8_gemm_nt((x, sa), (w, sb), out)
    # scales read as multipliers (DeepGEMM's convention) or as divisors: the kernel and its cost are the same
    err = min(
        float((out.float() - ref).norm() / ref.norm())
        for ref in (_dequant_ref(x, w, sa, sb), _dequant_ref(x, w, 1.0 / sa, 1.0 / sb))
    )
    if err >= 0.02:
        raise Unsupported(f"deep_gemm.fp8_gemm_nt: result off by {err:.3f} (relative)")
    return deep_gemm


def _deep_gemm_scales(m: int, n: int, k: int) -> tuple[Any, Any]:
    """(activation scales [m, k/128], MN-major with m padded to 4 rows for TMA as SGLang lays them out; weight
    scales [ceil(n/128), k/128] row-major); values in [0.5, 1.5)."""
    aligned_m = -(-m // 4) * 4
    sa = _scales_with_slack(k // 128, aligned_m).t()[:m]
    sb = _scales_with_slack(-(-n // 128), k // 128)
    return sa, sb


def _fp8_block_deep_gemm(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch

    m, n, k = int(point["m"]), int(point["n"]), int(point["k"])
    if n % 64 or k % 128:
        raise Unsupported(
            f"SGLang runs DeepGEMM only for n % 64 == 0 and k % 128 == 0 (n={n}, k={k}); it falls back to Triton"
        )
    dg = _deep_gemm(ctx)
    sets = _sets(m, n, k, 1, ctx)
    xs = random_tensor((sets, m, k), torch.float8_e4m3fn)
    ws = random_tensor((sets, n, k), torch.float8_e4m3fn)
    sa, sb = _deep_gemm_scales(m, n, k)
    out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")

    def launcher(s: int) -> Any:
        x, w = xs[s], ws[s]
        return lambda: dg.fp8_gemm_nt((x, sa), (w, sb), out)

    return time_graph_replay([launcher(s) for s in range(sets)], ctx.timing)


# Scale layouts to try for torch._scaled_mm's blockwise path: (activation scales [m, k/128] stored
# outer-dim-major or row-major) x (weight scales given as [k/128, n/128] or [n/128, k/128]).
_BLOCK_LAYOUTS = ("a_colmajor_b_kn", "a_rowmajor_b_kn", "a_colmajor_b_nk", "a_rowmajor_b_nk")


# Spare fp32 values after each scale tensor. `simperf validate` lost the CUDA context while launching fp8
# block-scaled GEMMs whose K / 128 is not a multiple of 4 (k = 256, 2304), and only when the scale tensor happened
# to end a caching-allocator segment: the blockwise kernels read past the end of the scales. The slack keeps such
# reads inside our own allocation; it changes no value the GEMM uses.
_SCALE_SLACK = 64


def _scales_with_slack(rows: int, cols: int) -> Any:
    """Contiguous [rows, cols] fp32 values in [0.5, 1.5), followed in memory by _SCALE_SLACK spare values."""
    import torch

    flat = torch.rand(rows * cols + _SCALE_SLACK, device="cuda") + 0.5
    return flat[: rows * cols].view(rows, cols)


def _block_scales(m: int, n: int, k: int, layout: str) -> tuple[Any, Any]:
    """(scale_a, scale_b) as `layout` passes them; values in [0.5, 1.5)."""
    a_col, b_kn = layout.startswith("a_colmajor"), layout.endswith("b_kn")
    sa = _scales_with_slack(k // 128, m).t() if a_col else _scales_with_slack(m, k // 128)
    sb = _scales_with_slack(n // 128, k // 128)
    sb = sb.t() if b_kn else sb
    return sa, sb


def _weight_scales_nk(sb: Any, layout: str) -> Any:
    return sb.t() if layout.endswith("b_kn") else sb


def _blockwise_layout(ctx: Any) -> str:
    """Find a scale layout for which blockwise _scaled_mm matches a dequantized fp32 reference, once per
    worker; Unsupported (with every attempt's outcome) if none does. deep_gemm is tried first."""
    import torch

    cached = ctx.cache.get("fp8_block_layout")
    if isinstance(cached, Exception):
        raise cached
    if cached is not None:
        return cached
    reasons = []
    try:
        import deep_gemm  # noqa: F401  (the prebuilt extension fails against torch 2.11: say so)

        reasons.append("deep_gemm imported but is not wired here")
    except Exception as exc:  # noqa: BLE001
        reasons.append(f"deep_gemm: {type(exc).__name__}: {str(exc)[:160]}")
    pm, pn, pk = 256, 384, 512
    x = random_tensor((pm, pk), torch.float8_e4m3fn)
    w = random_tensor((pn, pk), torch.float8_e4m3fn)
    for layout in _BLOCK_LAYOUTS:
        try:
            sa, sb = _block_scales(pm, pn, pk, layout)
            out = torch._scaled_mm(x, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
            sb_nk = _weight_scales_nk(sb, layout)
            # accept scales read as multipliers or as divisors: the kernel and its cost are the same
            err = min(
                float((out.float() - ref).norm() / ref.norm())
                for ref in (_dequant_ref(x, w, sa, sb_nk), _dequant_ref(x, w, 1.0 / sa, 1.0 / sb_nk))
            )
            if err < 0.02:
                ctx.cache["fp8_block_layout"] = layout
                return layout
            reasons.append(f"_scaled_mm blockwise ({layout}): result off by {err:.3f} (relative)")
        except Exception as exc:  # noqa: BLE001
            reasons.append(f"_scaled_mm blockwise ({layout}): {type(exc).__name__}: {str(exc)[:120]}")
    failure = Unsupported("no blockwise fp8 GEMM verified here; " + " | ".join(reasons))
    ctx.cache["fp8_block_layout"] = failure
    raise failure


def _dequant_ref(x: Any, w: Any, sa: Any, sb_nk: Any) -> Any:
    """fp32 reference: x * (1x128 scales) @ (w * (128x128 scales))^T, sb_nk indexed [n/128, k/128]."""
    xs = x.float() * sa.float().repeat_interleave(128, dim=1)
    ws = w.float() * sb_nk.float().repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)
    return xs @ ws.t()


def _bmm(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch

    heads, m, n, k = int(point["batch"]), int(point["m"]), int(point["n"]), int(point["k"])
    sets = rotation_sets(heads * (m * k + k * n + m * n) * 2, ctx.l2_bytes, max_sets=256)
    xs = random_tensor((sets, heads, m, k), torch.bfloat16)
    ws = random_tensor((sets, heads, k, n), torch.bfloat16, scale=0.05)
    out = torch.empty(heads, m, n, dtype=torch.bfloat16, device="cuda")

    def launcher(s: int) -> Any:
        x, w = xs[s], ws[s]
        return lambda: torch.bmm(x, w, out=out)

    return time_graph_replay([launcher(s) for s in range(sets)], ctx.timing)
