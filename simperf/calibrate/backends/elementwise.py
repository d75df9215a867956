"""Memory-bound per-token kernels SGLang runs between the GEMMs, through flashinfer's kernels.

variant rmsnorm / add_rmsnorm: hidden width n; silu_mul: output width n (input 2n); rope: query width n =
heads x 64 (DeepSeek's rope dim, non-neox) with a 64-wide key. m tokens. Timed by CUDA-graph replay.
"""

from __future__ import annotations

from typing import Any

from simperf.calibrate.measure import Measurement, Unsupported
from simperf.calibrate.timing import random_tensor, rotation_sets, time_graph_replay

ROPE_DIM = 64
EPS = 1e-6


def compile_signature(point: dict[str, Any]) -> tuple[Any, ...]:
    return (point["variant"],)


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import flashinfer
    import torch

    variant, m, n = point["variant"], int(point["m"]), int(point["n"])
    bf16 = torch.bfloat16
    per_set = {"rmsnorm": 2, "add_rmsnorm": 3, "silu_mul": 3, "rope": 2}.get(variant, 2) * m * n * 2
    sets = rotation_sets(per_set, ctx.l2_bytes, max_sets=256)
    if variant == "rmsnorm":
        xs = random_tensor((sets, m, n), bf16)
        w = random_tensor((n,), bf16)
        out = torch.empty(m, n, dtype=bf16, device="cuda")
        make = lambda s: lambda: flashinfer.rmsnorm(xs[s], w, EPS, out=out)  # noqa: E731
    elif variant == "add_rmsnorm":
        xs = random_tensor((sets, m, n), bf16)
        rs = random_tensor((sets, m, n), bf16)
        w = random_tensor((n,), bf16)
        make = lambda s: lambda: flashinfer.fused_add_rmsnorm(xs[s], rs[s], w, EPS)  # noqa: E731
    elif variant == "silu_mul":
        xs = random_tensor((sets, m, 2 * n), bf16)
        out = torch.empty(m, n, dtype=bf16, device="cuda")
        make = lambda s: lambda: flashinfer.silu_and_mul(xs[s], out=out)  # noqa: E731
    elif variant == "rope":
        if n % ROPE_DIM:
            raise Unsupported(f"rope width {n} is not a multiple of {ROPE_DIM}")
        qs = random_tensor((sets, m, n), bf16)
        ks = random_tensor((sets, m, ROPE_DIM), bf16)
        positions = torch.randint(0, 32768, (m,), device="cuda", dtype=torch.int64)
        cos_sin = random_tensor((32768, ROPE_DIM), torch.float32)
        make = lambda s: (  # noqa: E731
            lambda: flashinfer.apply_rope_with_cos_sin_cache_inplace(
                positions, qs[s], ks[s], ROPE_DIM, cos_sin, is_neox=False
            )
        )
    else:
        raise Unsupported(f"elementwise variant {variant!r}")
    return time_graph_replay([make(s) for s in range(sets)], ctx.timing)
