"""SGLang's own FA3 kernel (sgl-kernel's `flash_attn_with_kvcache`), called the way SGLang 0.5.17's `fa3` backend
calls it (srt/layers/attention/flashattention_backend.py): table backend `sgl_fa3` for `attn_gqa_decode` and
`attn_mha_prefill` (extend over a paged cache).

The KV cache is SGLang's MHATokenToKVPool: one K and one V buffer per layer, [slots, kv_heads, head_dim], viewed
by the backend as [-1, page_size, kv_heads, head_dim]; slot (page) 0 is the pool's padding slot, requests' slots
come from a free list (a random permutation here). `page_table` [batch, width] int32 holds each request's token
slots (page_size 1) or page ids (page_size > 1: SGLang takes every page_size-th slot and divides by page_size).

Decode (`forward_decode`, run in SGLang's CUDA graph): q [B, H, D] with `cu_seqlens_q` = arange(B + 1),
`max_seqlen_q` 1, `cache_seqlens` = KV lengths (including the new token), causal, `num_splits` 0 (FA3's
heuristic; 1 only under --enable-deterministic-inference), `pack_gqa` left to FA3, and the precomputed
`scheduler_metadata` (`get_scheduler_metadata`, computed once per step outside the layers, so outside the timed
region here). Inside SGLang's decode graph the page table is its full preallocated width, ceil(context_len /
page_size) columns, and the scheduler metadata's `max_seqlen_k` is the model's context length (the graph path
publishes no CPU seq lens): both are `DECODE_CONTEXT_LEN` here (Qwen3's 40960; Llama-3.1's is 131072).

Extend (`forward_extend`, eager in SGLang): q [sum(q_lens), H, D], `cache_seqlens` = prefix + new tokens,
`cu_seqlens_q` over the new tokens, `cu_seqlens_k_new` over the full lengths (SGLang passes it although no new k/v
go in), `max_seqlen_q` = the longest extend, causal, `num_splits` 0, no scheduler metadata; the page table is
`req_to_token[:, :max_seq_len]`. The new tokens' K/V are already in the cache (SGLang writes them first, in a
separate kernel that is not timed here). Page size 1 (SGLang's default; the op has no page column).

Both are timed by CUDA-graph replay (timing.time_graph_replay / time_gpu); the timing method names the kernel and
the sgl-kernel version. torch and sgl_kernel are imported inside functions only: without sgl_kernel's `flash_ops`
extension every point becomes a `failed` row with a one-line reason.
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from simperf.calibrate.backends.common import (
    PrefixGroups,
    indptr,
    kv_lengths,
    probed_once,
    q_lengths,
    shared_page_lists,
    torch_dtype,
)
from simperf.calibrate.measure import Measurement, Unsupported
from simperf.calibrate.timing import random_tensor, rotation_sets, time_gpu, time_graph_replay

BACKEND = "sgl_fa3"
# SGLang's max_context_len (model_config.context_len) as its decode CUDA graph sees it: Qwen3-8B/32B/30B-A3B 40960
DECODE_CONTEXT_LEN = 40960
_CACHE_KEY = "sgl_fa3_kernel"


class KernelUnavailable(RuntimeError):
    """sgl_kernel.flash_attn did not import (e.g. the flash_ops extension is absent): the point failed."""


# the arguments SGLang 0.5.17's flashattention_backend.py passes the same way on both paths: causal, no sliding
# window, no softcap, no LSE, FA3's own choice of KV splits
SGLANG_CALL_DEFAULTS: dict[str, Any] = dict(
    causal=True, window_size=(-1, -1), softcap=0.0, return_softmax_lse=False, num_splits=0
)


def load_kernel(ctx: Any | None = None) -> tuple[Any, Any, str]:
    """(flash_attn_with_kvcache, get_scheduler_metadata, version label); KernelUnavailable with a one-line reason
    if sgl_kernel's FA3 does not import. The outcome is remembered in ctx.cache (one import attempt per worker)."""

    def load() -> tuple[Any, Any, str]:
        from sgl_kernel.flash_attn import flash_attn_with_kvcache, get_scheduler_metadata

        return flash_attn_with_kvcache, get_scheduler_metadata, f"sgl-kernel {_sgl_kernel_version()}"

    return probed_once(
        ctx if ctx is not None else SimpleNamespace(cache={}),
        _CACHE_KEY,
        load,
        "sgl_kernel.flash_attn does not import; needs SGLang's kit on PYTHONPATH with sgl_kernel/flash_ops*.so in "
        "place",
        KernelUnavailable,
    )


def _sgl_kernel_version() -> str:
    try:
        from sgl_kernel.version import __version__

        return str(__version__)
    except Exception:  # noqa: BLE001
        return "unknown"


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    if point["backend"] != BACKEND:
        raise Unsupported(f"fa3_sgl group does not measure backend {point['backend']!r}")
    kernel, scheduler_metadata, version = load_kernel(ctx)
    if ctx.sm_major is not None and ctx.sm_major != 9:
        raise Unsupported("sgl-kernel FA3 (SGLang's fa3 backend) runs on Hopper (SM90) only")
    if point["op"] == "attn_gqa_decode":
        measured = _decode(point, ctx, kernel, scheduler_metadata)
        what = "flash_attn_with_kvcache decode+scheduler_metadata"
    elif point["op"] == "attn_mha_prefill":
        measured = _extend(point, ctx, kernel)
        what = "flash_attn_with_kvcache extend"
    else:
        raise Unsupported(f"fa3_sgl group does not measure {point['op']}")
    if measured is None:
        return None
    return replace(measured, timing_method=f"{measured.timing_method} {version} {what}")


def _paged_cache(
    lens: list[int], page: int, width_tokens: int, shared: PrefixGroups | None = None
) -> tuple[Any, int]:
    """SGLang's page table for these requests: [B, ceil(width_tokens / page)] int32 of page ids drawn at random
    from pages 1..total (page 0 is the pool's padding slot); columns past a request's length stay 0, as in
    req_to_token. With `shared`, a group's requests hold the same prefix pages (a radix-cache hit). Returns
    (table, pages in the pool including page 0)."""
    import torch

    pages = [math.ceil(n / page) for n in lens]
    width = max(math.ceil(width_tokens / page), max(pages))
    table = torch.zeros(len(lens), width, dtype=torch.int32, device="cuda")
    if shared is not None:
        rows, total = shared_page_lists(lens, page, shared)
        for i, row in enumerate(rows):
            table[i, : len(row)] = torch.tensor(row, dtype=torch.int32, device="cuda") + 1
        return table, total + 1
    total = sum(pages)
    perm = (torch.randperm(total, device="cuda") + 1).to(torch.int32)
    start = 0
    for i, p in enumerate(pages):
        table[i, :p] = perm[start : start + p]
        start += p
    return table, total + 1


def _decode(point: dict[str, Any], ctx: Any, kernel: Any, scheduler_metadata: Any) -> Measurement | None:
    import torch

    lens = kv_lengths(point)
    batch = len(lens)
    heads, kv_heads, dim = int(point["num_heads"]), int(point["num_kv_heads"]), int(point["head_dim"])
    page = int(point["page_size"])
    kv_dtype = torch_dtype(point["kv_dtype"])
    if kv_dtype != torch.bfloat16:
        raise Unsupported("sgl_fa3 decode is wired for a bf16 KV cache only (fp8 needs q cast and descales)")
    context = max(DECODE_CONTEXT_LEN, max(lens))
    table, pool_pages = _paged_cache(lens, page, context, PrefixGroups.of(point))
    seqlens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    cu_q = torch.arange(0, batch + 1, dtype=torch.int32, device="cuda")
    sched = scheduler_metadata(
        batch_size=batch,
        max_seqlen_q=1,
        max_seqlen_k=context,
        num_heads=heads,
        num_heads_k=kv_heads,
        headdim=dim,
        cache_seqlens=seqlens,
        qkv_dtype=kv_dtype,
        cu_seqlens_q=cu_q,
        page_size=page,
        causal=True,
        has_softcap=False,
        num_splits=0,
    )
    per_set = pool_pages * page * kv_heads * dim * 2 * kv_dtype.itemsize + batch * heads * dim * 2
    sets = rotation_sets(per_set, ctx.l2_bytes)
    q_all = random_tensor((sets, batch, heads, dim), torch.bfloat16)
    k_all = random_tensor((sets, pool_pages, page, kv_heads, dim), kv_dtype)
    v_all = random_tensor((sets, pool_pages, page, kv_heads, dim), kv_dtype)
    out = torch.empty(batch, heads, dim, dtype=torch.bfloat16, device="cuda")
    scale = dim**-0.5

    def launcher(s: int) -> Any:
        call = dict(q=q_all[s], k_cache=k_all[s], v_cache=v_all[s], page_table=table, cache_seqlens=seqlens)
        call.update(cu_seqlens_q=cu_q, max_seqlen_q=1, softmax_scale=scale, out=out, scheduler_metadata=sched)
        return lambda: kernel(**call, **SGLANG_CALL_DEFAULTS)

    return time_graph_replay([launcher(s) for s in range(sets)], ctx.timing)


def _extend(point: dict[str, Any], ctx: Any, kernel: Any) -> Measurement | None:
    import torch

    q_lens, kv_lens = q_lengths(point), kv_lengths(point)
    if any(q > kv for q, kv in zip(q_lens, kv_lens, strict=True)):
        raise ValueError(f"extend needs q_len <= kv_len per request, got q {q_lens} kv {kv_lens}")
    heads, kv_heads = int(point["num_heads"]), int(point["num_kv_heads"])
    d_qk, d_v = int(point["head_dim"]), int(point["head_dim_v"])
    if d_qk != d_v:
        raise Unsupported("sgl_fa3 extend is wired for GQA/MHA with equal q/k and v head dims")
    page = 1
    table, pool_pages = _paged_cache(kv_lens, page, max(kv_lens))
    seqlens = torch.tensor(kv_lens, dtype=torch.int32, device="cuda")
    cu_q, cu_k = indptr(q_lens), indptr(kv_lens)
    max_q = max(q_lens)
    q_tokens = sum(q_lens)
    per_set = (q_tokens * heads * d_qk + pool_pages * page * kv_heads * (d_qk + d_v)) * 2
    sets = rotation_sets(per_set, ctx.l2_bytes, max_sets=16)
    q_all = random_tensor((sets, q_tokens, heads, d_qk), torch.bfloat16)
    k_all = random_tensor((sets, pool_pages, page, kv_heads, d_qk), torch.bfloat16)
    v_all = random_tensor((sets, pool_pages, page, kv_heads, d_v), torch.bfloat16)
    out = torch.empty(q_tokens, heads, d_v, dtype=torch.bfloat16, device="cuda")
    scale = d_qk**-0.5

    def launcher(s: int) -> Any:
        call = dict(q=q_all[s], k_cache=k_all[s], v_cache=v_all[s], page_table=table, cache_seqlens=seqlens)
        call.update(
            cu_seqlens_q=cu_q, cu_seqlens_k_new=cu_k, max_seqlen_q=max_q, softmax_scale=scale, out=out
        )
        return lambda: kernel(**call, **SGLANG_CALL_DEFAULTS)

    return time_gpu([launcher(s) for s in range(sets)], ctx.timing)
