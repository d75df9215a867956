"""SM100-only attention kernels (B200): trtllm-gen MLA decode, cutlass MLA decode, trtllm sparse (NSA)
decode and trtllm ragged prefill (DeepSeek MHA path), through flashinfer's public API.

On other GPUs every point is recorded unsupported ("requires SM100"); the runner keeps one such row per op
key. Written against flashinfer 0.7.2; not yet run on a B200 here, so a B200 run is its first test.
"""

from __future__ import annotations

import math
from typing import Any

from simperf.calibrate.backends.common import block_table, kv_lengths, torch_dtype, workspace
from simperf.calibrate.measure import Measurement, Unsupported
from simperf.calibrate.timing import random_tensor, rotation_sets, time_gpu, time_graph_replay

CKV, KPE = 512, 64
SM_SCALE = 1.0 / math.sqrt(192)


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    if ctx.sm_major is None or ctx.sm_major < 10:
        raise Unsupported("requires SM100")
    backend, op = point["backend"], point["op"]
    if op == "attn_mla_decode" and backend == "trtllm_gen":
        return _trtllm_mla_decode(point, ctx, sparse_topk=0)
    if op == "attn_nsa_decode" and backend == "trtllm":
        return _trtllm_mla_decode(point, ctx, sparse_topk=int(point["topk"]))
    if op == "attn_mla_decode" and backend == "cutlass":
        return _cutlass_mla_decode(point, ctx)
    if op == "attn_mha_prefill" and backend == "trtllm":
        return _trtllm_ragged_prefill(point, ctx)
    raise Unsupported(f"sm100 group does not measure {op}/{backend}")


def _trtllm_mla_decode(point: dict[str, Any], ctx: Any, sparse_topk: int) -> Measurement | None:
    import torch
    from flashinfer.mla import trtllm_batch_decode_with_kv_cache_mla

    lens = kv_lengths(point)
    batch, q_len, heads, page = (
        len(lens),
        int(point["q_len"]),
        int(point["num_heads"]),
        int(point["page_size"]),
    )
    kv_dtype = torch_dtype(point["kv_dtype"])
    table, total_pages = block_table(lens, page)
    seq_lens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    sets = rotation_sets(total_pages * page * (CKV + KPE) * kv_dtype.itemsize, ctx.l2_bytes)
    q_dtype = kv_dtype  # trtllm-gen runs q in the cache dtype (fp8 q for an fp8 cache)
    q_all = random_tensor((sets, batch, q_len, heads, CKV + KPE), q_dtype)
    kv_all = random_tensor((sets, total_pages, page, CKV + KPE), kv_dtype)
    ws = workspace(ctx)
    block_tables = table
    if sparse_topk:
        # sparse decode reads per-request token indices in place of the page table
        tok = torch.randint(0, min(lens), (batch, q_len, sparse_topk), device="cuda", dtype=torch.int32)
        block_tables = tok

    def launcher(s: int) -> Any:
        q, kv = q_all[s], kv_all[s]
        return lambda: trtllm_batch_decode_with_kv_cache_mla(
            query=q,
            kv_cache=kv,
            workspace_buffer=ws,
            qk_nope_head_dim=128,
            kv_lora_rank=CKV,
            qk_rope_head_dim=KPE,
            block_tables=block_tables,
            seq_lens=seq_lens,
            max_seq_len=max(lens),
            sparse_mla_top_k=sparse_topk,
            bmm1_scale=SM_SCALE,
            bmm2_scale=1.0,
            backend="trtllm-gen",
        )

    return time_graph_replay([launcher(s) for s in range(sets)], ctx.timing)


def _cutlass_mla_decode(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch
    from flashinfer.mla import BatchMLAPagedAttentionWrapper, MLAPlanMetadata

    lens = kv_lengths(point)
    batch, q_len, heads, page = (
        len(lens),
        int(point["q_len"]),
        int(point["num_heads"]),
        int(point["page_size"]),
    )
    kv_dtype = torch_dtype(point["kv_dtype"])
    table, total_pages = block_table(lens, page)
    seq_lens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    cum_q = (torch.arange(batch + 1, dtype=torch.int32) * q_len).cuda()
    wrapper = BatchMLAPagedAttentionWrapper(workspace(ctx), backend="cutlass")
    wrapper.plan(
        metadata=MLAPlanMetadata.dense(cum_q, table, seq_lens, max_q_len=q_len),
        num_heads=heads,
        head_dim_ckv=CKV,
        head_dim_kpe=KPE,
        page_size=page,
        causal=q_len > 1,
        sm_scale=SM_SCALE,
        q_data_type=torch.bfloat16,
        kv_data_type=kv_dtype,
        query_layout="split",
        kv_cache_layout="split",
        scale_mode="kv-per-tensor" if point["kv_dtype"] == "fp8" else "default",
    )
    sets = rotation_sets(total_pages * page * (CKV + KPE) * kv_dtype.itemsize, ctx.l2_bytes)
    q_all = random_tensor((sets, batch * q_len, heads, CKV + KPE), torch.bfloat16)
    kv_all = random_tensor((sets, total_pages, page, CKV + KPE), kv_dtype)
    scales = {"ckv_scale": 1.0, "kpe_scale": 1.0} if point["kv_dtype"] == "fp8" else {}

    def launcher(s: int) -> Any:
        query = (q_all[s, ..., :CKV], q_all[s, ..., CKV:])
        kv_cache = (kv_all[s, ..., :CKV], kv_all[s, ..., CKV:])
        return lambda: wrapper.run(query=query, kv_cache=kv_cache, **scales)

    return time_graph_replay([launcher(s) for s in range(sets)], ctx.timing)


def _trtllm_ragged_prefill(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch
    from flashinfer.prefill import trtllm_ragged_attention_deepseek

    batch, q_len, kv_len, heads = (int(point[c]) for c in ("batch", "q_len", "kv_len", "num_heads"))
    d_qk, d_v = int(point["head_dim"]), int(point["head_dim_v"])
    q = random_tensor((batch * q_len, heads, d_qk), torch.bfloat16)
    k = random_tensor((batch * kv_len, heads, d_qk), torch.bfloat16)
    v = random_tensor((batch * kv_len, heads, d_v), torch.bfloat16)
    seq_lens = torch.full((batch,), kv_len, dtype=torch.int32, device="cuda")
    cum_q = (torch.arange(batch + 1, dtype=torch.int32) * q_len).cuda()
    cum_kv = (torch.arange(batch + 1, dtype=torch.int32) * kv_len).cuda()
    ws = workspace(ctx)

    def launch() -> Any:
        return trtllm_ragged_attention_deepseek(
            query=q,
            key=k,
            value=v,
            workspace_buffer=ws,
            seq_lens=seq_lens,
            max_q_len=q_len,
            max_kv_len=kv_len,
            bmm1_scale=1.0 / math.sqrt(d_qk),
            bmm2_scale=1.0,
            o_sf_scale=1.0,
            batch_size=batch,
            window_left=-1,
            cum_seq_lens_q=cum_q,
            cum_seq_lens_kv=cum_kv,
            enable_pdl=False,
            is_causal=True,
            return_lse=False,
        )

    return time_gpu([launch], ctx.timing)
