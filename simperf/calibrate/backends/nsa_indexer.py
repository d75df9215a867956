"""NSA lightning indexer: fp8 MQA logits over the context plus top-k, through sgl-deep-gemm.

Only deep_gemm provides these kernels for SM90 in the kit (flashinfer's fp8_mqa_logits is an SM100
catalogue and its sources are not shipped). If deep_gemm's extension does not load, every point is
recorded unsupported with the loader's error; nothing is estimated here.
"""

from __future__ import annotations

from typing import Any

from simperf.calibrate.backends.common import probed_once
from simperf.calibrate.measure import Measurement
from simperf.calibrate.timing import random_tensor, time_gpu, time_graph_replay


def _deep_gemm(ctx: Any) -> Any:
    return probed_once(ctx, "deep_gemm", _indexer_deep_gemm, "sgl-deep-gemm does not load on this torch")


def _indexer_deep_gemm() -> Any:
    import deep_gemm

    for name in ("fp8_mqa_logits", "fp8_paged_mqa_logits", "get_paged_mqa_logits_metadata"):
        getattr(deep_gemm, name)
    return deep_gemm


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch

    dg = _deep_gemm(ctx)
    m, kv_len = int(point["m"]), int(point["kv_len"])
    heads, dim, topk = int(point["num_heads"]), int(point["head_dim"]), int(point["topk"])
    q = random_tensor((m, heads, dim), torch.float8_e4m3fn)
    kv = random_tensor((kv_len, dim), torch.float8_e4m3fn)
    kv_scale = torch.rand(kv_len, device="cuda", dtype=torch.float32) + 0.5
    weights = torch.rand(m, heads, device="cuda", dtype=torch.float32)
    # queries are the last m positions: each sees the keys up to itself
    ks = torch.zeros(m, dtype=torch.int32, device="cuda")
    ke = torch.arange(kv_len - m + 1, kv_len + 1, dtype=torch.int32, device="cuda")
    k = min(topk, kv_len)

    def launch() -> Any:
        logits = dg.fp8_mqa_logits(q, (kv, kv_scale), weights, ks, ke)
        return logits.topk(k, dim=-1).indices

    if point["variant"] == "decode":
        return time_graph_replay([launch], ctx.timing)
    return time_gpu([launch], ctx.timing)
