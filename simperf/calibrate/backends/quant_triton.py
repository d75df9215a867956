"""The fp8 activation quantisation SGLang runs before every fp8 linear layer, timed with simperf's Triton kernel.

SGLang quantises a linear layer's bf16 input to fp8 in a separate kernel (1x128 per-token-group scales for
block-quantized checkpoints, `per_token_group_quant_fp8`), then runs the fp8 GEMM; the GEMM tables time the GEMM
alone. This backend times the quantisation as elementwise variant `fp8_group_quant` (width n = the layer's input
width, m tokens) with the per-token-group quantisation kernel of simperf's Triton fused MoE
(`moe_triton.act_quant`): a proxy for SGLang's CUDA kernel of the same job (read m x n bf16, write m x n fp8
and m x n/128 fp32 scales). Timed by CUDA-graph replay, cycling inputs past L2.
"""

from __future__ import annotations

from typing import Any

# one compiled kernel per variant, as for the flashinfer elementwise kernels (the runner looks it up here)
from simperf.calibrate.backends.elementwise import compile_signature  # noqa: F401
from simperf.calibrate.measure import Measurement, Unsupported
from simperf.calibrate.timing import random_tensor, rotation_sets, time_graph_replay

VARIANT = "fp8_group_quant"


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch

    from simperf.calibrate.backends import moe_triton as mt

    if not mt.HAVE_TRITON:
        raise Unsupported("triton is not installed")
    if point["variant"] != VARIANT:
        raise Unsupported(f"triton elementwise measures variant {VARIANT!r}, not {point['variant']!r}")
    m, n = int(point["m"]), int(point["n"])
    if n % mt.SCALE_GROUP:
        raise Unsupported(f"width {n} is not a multiple of the {mt.SCALE_GROUP}-wide quantisation group")
    sets = rotation_sets(m * n * 3, ctx.l2_bytes, max_sets=256)
    xs = random_tensor((sets, m, n), torch.bfloat16)
    out = torch.empty(m, n, dtype=torch.float8_e4m3fn, device="cuda")
    scale = torch.empty(m, n // mt.SCALE_GROUP, dtype=torch.float32, device="cuda")
    every_row_local = torch.zeros(m, dtype=torch.int32, device="cuda")

    def make(s: int):
        return lambda: mt.act_quant(xs[s], out, scale, every_row_local, n, act=False, skip_remote=False)

    return time_graph_replay([make(s) for s in range(sets)], ctx.timing)
