"""Routed-expert compute of one MoE layer on one rank, as a proxy for SGLang's fused MoE kernels.

Hopper has no fused MoE kernel in the kit, so this times torch 2.11's grouped GEMM (CUTLASS):
permute (gather tokens by expert) -> gate_up grouped GEMM -> SiLU*mul -> down grouped GEMM -> weighted
scatter-add back to tokens. bf16 uses torch._grouped_mm; fp8 uses torch._scaled_grouped_mm with rowwise
scales (activations quantized per token inside the timed region). Without grouped GEMM it falls back to a
per-expert loop (backend torch_loop).

m is the number of tokens routed together (the EP group's tokens under EP); the rank measured is the one
that receives the most assignments, since the slowest rank sets the layer time. Routing is either
balanced (uniform top-k) or zipf (expert popularity ~ 1/rank, a skewed load). Timed by CUDA-graph replay.
"""

from __future__ import annotations

from typing import Any

from simperf.calibrate.measure import Measurement, Unsupported
from simperf.calibrate.timing import random_tensor, time_graph_replay
from simperf.perfdb.schema import split_shared_routing

FP8_MAX = 448.0


def route(m: int, num_experts: int, topk: int, routing: str, seed: int = 0) -> Any:
    """[m, topk] expert ids, distinct per token (Gumbel top-k over the popularity logits). With fused shared
    experts ('<routing>+sharedN'), topk - N routed experts are drawn from the first num_experts - N and the
    N shared ones (the last ids) are appended to every token."""
    import torch

    try:
        routing, shared = split_shared_routing(routing)
    except ValueError as exc:
        raise Unsupported(str(exc)) from None
    if shared:
        if topk <= shared or num_experts <= shared:
            raise Unsupported(f"{shared} shared experts need topk and num_experts above {shared}")
        routed = route(m, num_experts - shared, topk - shared, routing, seed)
        fused = torch.arange(num_experts - shared, num_experts).expand(m, shared)
        return torch.cat([routed, fused], dim=1)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    if routing == "balanced":
        logits = torch.zeros(num_experts)
    elif routing == "zipf":
        popularity = 1.0 / torch.arange(1, num_experts + 1, dtype=torch.float64)
        logits = popularity.log()[torch.randperm(num_experts, generator=gen)].float()
    else:
        raise Unsupported(f"routing {routing!r}")
    gumbel = -torch.log(-torch.log(torch.rand(m, num_experts, generator=gen).clamp_min(1e-20)))
    return (logits + gumbel).topk(topk, dim=1).indices


def busiest_rank_assignments(topk_ids: Any, experts_per_rank: int) -> tuple[Any, Any, Any]:
    """(token index, local expert id, weight slot) of the busiest rank's assignments, sorted by expert."""
    import torch

    ranks = topk_ids // experts_per_rank
    load = torch.bincount(ranks.flatten(), minlength=int(ranks.max()) + 1)
    rank = int(load.argmax())
    token, slot = torch.nonzero(ranks == rank, as_tuple=True)
    local = topk_ids[token, slot] - rank * experts_per_rank
    order = torch.argsort(local, stable=True)
    return token[order], local[order], slot[order]


def _weights(point: dict[str, Any], ctx: Any) -> tuple[Any, Any, Any, Any]:
    """(w13 [E, 2n, k], w2 [E, k, n], scales13, scales2), cached across points of the same shape."""
    import torch

    experts, n, k = int(point["experts_per_rank"]), int(point["n"]), int(point["k"])
    fp8 = point["dtype"] != "bf16"
    key = (experts, n, k, fp8)
    cached = ctx.cache.get("moe_weights")
    if cached is not None and cached[0] == key:
        return cached[1]
    ctx.cache.pop("moe_weights", None)
    torch.cuda.empty_cache()
    dtype = torch.float8_e4m3fn if fp8 else torch.bfloat16
    w13 = random_tensor((experts, 2 * n, k), dtype, scale=1.0 if fp8 else 0.05)
    w2 = random_tensor((experts, k, n), dtype, scale=1.0 if fp8 else 0.05)
    s13 = torch.rand(experts, 2 * n, device="cuda") + 0.5 if fp8 else None
    s2 = torch.rand(experts, k, device="cuda") + 0.5 if fp8 else None
    value = (w13, w2, s13, s2)
    ctx.cache["moe_weights"] = (key, value)
    return value


def _quant_rows(x: Any) -> tuple[Any, Any]:
    import torch

    scale = x.abs().amax(dim=-1).float().clamp_min(1e-6) / FP8_MAX
    return (x / scale.unsqueeze(1).to(x.dtype)).to(torch.float8_e4m3fn), scale


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch
    import torch.nn.functional as F

    m, n, k = int(point["m"]), int(point["n"]), int(point["k"])
    experts, topk = int(point["experts_per_rank"]), int(point["topk"])
    fp8 = point["dtype"] != "bf16"
    topk_ids = route(m, int(point["num_experts"]), topk, point["routing"], seed=m)
    token, local, slot = busiest_rank_assignments(topk_ids, experts)
    counts = torch.bincount(local, minlength=experts)
    offs = torch.cumsum(counts, 0).to(torch.int32).cuda()
    token, slot = token.cuda(), slot.cuda()
    weights = torch.rand(m, topk, device="cuda", dtype=torch.bfloat16)[token, slot].unsqueeze(1)
    w13, w2, s13, s2 = _weights(point, ctx)
    x = random_tensor((m, k), torch.bfloat16)
    out = torch.empty(m, k, dtype=torch.bfloat16, device="cuda")
    w13_t, w2_t = w13.transpose(-2, -1), w2.transpose(-2, -1)

    if point["backend"] == "torch_loop":
        return time_graph_replay(
            [_loop_launcher(x, out, token, weights, counts, w13, w2, n, fp8)], ctx.timing
        )

    def launch() -> None:
        xs = x.index_select(0, token)
        if fp8:
            xq, sx = _quant_rows(xs)
            h = torch._scaled_grouped_mm(xq, w13_t, sx, s13, offs=offs, out_dtype=torch.bfloat16)
        else:
            h = torch._grouped_mm(xs, w13_t, offs=offs)
        a = F.silu(h[:, :n]) * h[:, n:]
        if fp8:
            aq, sa = _quant_rows(a)
            y = torch._scaled_grouped_mm(aq, w2_t, sa, s2, offs=offs, out_dtype=torch.bfloat16)
        else:
            y = torch._grouped_mm(a, w2_t, offs=offs)
        out.zero_()
        out.index_add_(0, token, y * weights)

    return time_graph_replay([launch], ctx.timing)


def _loop_launcher(
    x: Any, out: Any, token: Any, weights: Any, counts: Any, w13: Any, w2: Any, n: int, fp8: bool
):
    import torch.nn.functional as F

    if fp8:
        raise Unsupported("torch_loop fallback is bf16 only")
    bounds = [0] + counts.cumsum(0).tolist()

    def launch() -> None:
        out.zero_()
        for e in range(len(bounds) - 1):
            lo, hi = bounds[e], bounds[e + 1]
            if hi == lo:
                continue
            rows = token[lo:hi]
            h = x.index_select(0, rows) @ w13[e].t()
            y = (F.silu(h[:, :n]) * h[:, n:]) @ w2[e].t()
            out.index_add_(0, rows, y * weights[lo:hi])

    return launch
