"""FlashMLA (sgl-flash-mla) kernels: dense MLA decode, NSA sparse prefill, NSA sparse decode (fp8, 656 B).

On SM90 these are the fork's legacy kernels (`use_legacy=True`), which is how SGLang reaches them on
Hopper. Dense decode: q [B, q_len, H, 576] over a paged [pages, 64, 1, 576] latent cache. Sparse decode
reads the DeepSeek-V3.2 fp8 layout: per token 512 fp8 values, 4 fp32 scales, 64 bf16 rope values
(656 bytes), attending `topk` (2048) selected tokens. Sparse prefill: q [m, H, 576] over kv [S, 1, 576]
bf16 with per-query top-k indices. All timed by CUDA-graph replay (GPU time).
"""

from __future__ import annotations

import math
from typing import Any

from simperf.calibrate.backends.common import block_table, kv_lengths
from simperf.calibrate.measure import Measurement, Unsupported
from simperf.calibrate.timing import random_tensor, rotation_sets, time_gpu, time_graph_replay

D_QK = 576
D_V = 512
PAGE = 64
SM_SCALE = 1.0 / math.sqrt(192)


def _legacy_or_unsupported() -> Any:
    import flash_mla

    if not flash_mla.has_legacy():
        raise Unsupported("sgl-flash-mla built without its SM90 legacy kernels")
    return flash_mla


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    if ctx.sm_major is not None and ctx.sm_major != 9 and point["backend"] == "flashmla":
        raise Unsupported("FlashMLA dense decode exists only in the SM90 legacy kernels")
    if point["op"] == "attn_mla_decode":
        return _dense_decode(point, ctx)
    if point["op"] == "attn_nsa_decode":
        return _sparse_decode(point, ctx)
    if point["op"] == "attn_nsa_prefill":
        return _sparse_prefill(point, ctx)
    raise Unsupported(f"flashmla group does not measure {point['op']}")


def _dense_decode(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch

    flash_mla = _legacy_or_unsupported()
    if int(point["page_size"]) != PAGE:
        raise Unsupported("FlashMLA uses page size 64 only")
    lens = kv_lengths(point)
    batch, q_len, heads = len(lens), int(point["q_len"]), int(point["num_heads"])
    fp8 = point["kv_dtype"] == "fp8"
    table, total_pages = block_table(lens, PAGE)
    seqlens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    kv_dtype = torch.float8_e4m3fn if fp8 else torch.bfloat16
    per_set = total_pages * PAGE * D_QK * kv_dtype.itemsize + batch * q_len * heads * D_QK * 2
    sets = rotation_sets(per_set, ctx.l2_bytes)
    q_all = random_tensor((sets, batch, q_len, heads, D_QK), torch.bfloat16)
    kv_all = random_tensor((sets, total_pages, PAGE, 1, D_QK), kv_dtype)
    causal = q_len > 1

    sched, _ = flash_mla.get_mla_metadata()
    extra: dict[str, Any] = {}
    if fp8:
        tile_md, num_splits = flash_mla.get_mla_decoding_metadata(
            seqlens, q_len * heads, 1, is_fp8_kvcache=True, use_legacy=True
        )
        sched.tile_scheduler_metadata = tile_md
        sched.num_splits = num_splits
        one = torch.ones(1, dtype=torch.float32, device="cuda")
        # SGLang's flashmla backend casts q to fp8 for an fp8 cache and passes unit descales.
        q_all = q_all.to(torch.float8_e4m3fn)
        extra = {"is_fp8_kvcache": True, "descale_q": one, "descale_k": one}

    def launcher(s: int) -> Any:
        q, kv = q_all[s], kv_all[s]
        return lambda: flash_mla.flash_mla_with_kvcache(
            q, kv, table, seqlens, D_V, sched, causal=causal, use_legacy=True, **extra
        )

    return time_graph_replay([launcher(s) for s in range(sets)], ctx.timing)


def _fp8_656_cache(num_pages: int, sets: int) -> Any:
    """Random cache in the V3.2 FlashMLA fp8 layout: 512 e4m3 | 4 fp32 scales | 64 bf16 rope = 656 bytes."""
    import torch

    shape = (sets, num_pages, PAGE, 1)
    nope = random_tensor((*shape, 512), torch.float8_e4m3fn).view(torch.uint8)
    scales = (torch.rand(*shape, 4, device="cuda", dtype=torch.float32) + 0.5).view(torch.uint8)
    rope = random_tensor((*shape, 64), torch.bfloat16).view(torch.uint8)
    return torch.cat([nope, scales, rope], dim=-1).contiguous()


def _sparse_decode(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch

    flash_mla = _legacy_or_unsupported()
    lens = kv_lengths(point)
    batch, heads, topk = len(lens), int(point["num_heads"]), int(point["topk"])
    table, total_pages = block_table(lens, PAGE)
    indices = _decode_topk_indices(lens, topk, table)
    per_set = total_pages * PAGE * 656 + batch * heads * D_QK * 2
    sets = rotation_sets(per_set, ctx.l2_bytes)
    q_all = random_tensor((sets, batch, 1, heads, D_QK), torch.bfloat16)
    kv_all = _fp8_656_cache(total_pages, sets)
    seqlens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    sched, _ = flash_mla.get_mla_metadata()

    def launcher(s: int) -> Any:
        q, kv = q_all[s], kv_all[s]
        return lambda: flash_mla.flash_mla_with_kvcache(
            q, kv, table, seqlens, D_V, sched, is_fp8_kvcache=True, indices=indices, use_legacy=True
        )

    return time_graph_replay([launcher(s) for s in range(sets)], ctx.timing)


def _decode_topk_indices(lens: list[int], topk: int, table: Any) -> Any:
    """[B, 1, topk] physical token slots (page * 64 + offset) of topk distinct tokens; -1 pads short ones."""
    import torch

    rows = []
    for i, n in enumerate(lens):
        if n <= topk:
            tok = torch.arange(topk, device="cuda")
            valid = tok < n
        else:
            tok = torch.randperm(n, device="cuda")[:topk].sort().values
            valid = torch.ones(topk, dtype=torch.bool, device="cuda")
        tok = tok.clamp(max=n - 1)
        phys = table[i, tok // PAGE].to(torch.int64) * PAGE + tok % PAGE
        rows.append(torch.where(valid, phys, torch.full_like(phys, -1)))
    return torch.stack(rows).to(torch.int32).unsqueeze(1).contiguous()


def _sparse_prefill(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch

    flash_mla = _legacy_or_unsupported()
    m, kv_len, heads, topk = (
        int(point["m"]),
        int(point["kv_len"]),
        int(point["num_heads"]),
        int(point["topk"]),
    )
    # the m queries are the last m positions of a kv_len context; each sees only earlier tokens
    pos = torch.arange(kv_len - m, kv_len, device="cuda")
    visible = (pos + 1).unsqueeze(1)
    slot = torch.arange(topk, device="cuda").unsqueeze(0)
    drawn = (torch.rand(m, topk, device="cuda") * visible).long()
    indices = torch.where(visible <= topk, torch.where(slot < visible, slot, -1), drawn)
    indices = indices.to(torch.int32).unsqueeze(1).contiguous()
    per_set = kv_len * D_QK * 2 + m * heads * D_QK * 2
    sets = rotation_sets(per_set, ctx.l2_bytes, max_sets=16)
    q_all = random_tensor((sets, m, heads, D_QK), torch.bfloat16)
    kv_all = random_tensor((sets, kv_len, 1, D_QK), torch.bfloat16)

    def launcher(s: int) -> Any:
        q, kv = q_all[s], kv_all[s]
        return lambda: flash_mla.flash_mla_sparse_fwd(q, kv, indices, SM_SCALE, D_V, use_legacy=True)

    return time_gpu([launcher(s) for s in range(sets)], ctx.timing)
