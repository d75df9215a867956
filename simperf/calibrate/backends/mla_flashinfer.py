"""flashinfer MLA paged attention (BatchMLAPagedAttentionWrapper, backends fa2 / fa3): decode, verify, extend.

Shapes as SGLang's flashinfer MLA backend runs them: absorbed query [tokens, H, 512 + 64], latent KV cache
[pages, page_size, 512 + 64] passed as two adjacent views (ckv, kpe) of one buffer, pages scattered at
random. All timed by CUDA-graph replay (extend too: GPU time, launch cost is charged by the cost model).
"""

from __future__ import annotations

import math
from typing import Any

from simperf.calibrate.backends.common import (
    PrefixGroups,
    indptr,
    kv_lengths,
    paged_layout,
    q_lengths,
    torch_dtype,
    workspace,
)
from simperf.calibrate.measure import Measurement
from simperf.calibrate.timing import random_tensor, rotation_sets, time_gpu, time_graph_replay

CKV = 512
KPE = 64
BACKENDS = {"flashinfer_fa2": "fa2", "flashinfer_fa3": "fa3"}


def compile_signature(point: dict[str, Any]) -> tuple[Any, ...]:
    return (point["backend"], point["kv_dtype"], point["op"])


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch
    from flashinfer.mla import BatchMLAPagedAttentionWrapper, MLAPlanMetadata

    lens = kv_lengths(point)
    q_lens = q_lengths({**point, "batch": len(lens)})
    heads = int(point["num_heads"])
    page = int(point["page_size"])
    fp8 = point["kv_dtype"] == "fp8"
    kv_dtype = torch_dtype(point["kv_dtype"])

    kv_indptr, kv_indices, _, total_pages = paged_layout(lens, page, PrefixGroups.of(point))
    qo_indptr = indptr(q_lens)
    kv_len_arr = torch.tensor(lens, dtype=torch.int32, device="cuda")

    wrapper = BatchMLAPagedAttentionWrapper(workspace(ctx), backend=BACKENDS[point["backend"]])
    wrapper.plan(
        metadata=MLAPlanMetadata.csr(qo_indptr, kv_indptr, kv_indices, kv_len_arr),
        num_heads=heads,
        head_dim_ckv=CKV,
        head_dim_kpe=KPE,
        page_size=page,
        causal=max(q_lens) > 1,
        sm_scale=1.0 / math.sqrt(128 + 64),
        q_data_type=torch.bfloat16,
        kv_data_type=kv_dtype,
        query_layout="split",
        kv_cache_layout="split",
        scale_mode="kv-per-tensor" if fp8 else "default",
    )

    tokens = sum(q_lens)
    q_bytes = tokens * heads * (CKV + KPE) * 2
    kv_bytes = total_pages * page * (CKV + KPE) * kv_dtype.itemsize
    sets = rotation_sets(q_bytes + kv_bytes, ctx.l2_bytes)
    q_all = random_tensor((sets, tokens, heads, CKV + KPE), torch.bfloat16)
    kv_all = random_tensor((sets, total_pages, page, CKV + KPE), kv_dtype)
    out = torch.empty(tokens, heads, CKV, dtype=torch.bfloat16, device="cuda")
    scales = {"ckv_scale": 1.0, "kpe_scale": 1.0} if fp8 else {}

    def launcher(s: int) -> Any:
        query = (q_all[s, ..., :CKV], q_all[s, ..., CKV:])
        kv_cache = (kv_all[s, ..., :CKV], kv_all[s, ..., CKV:])
        return lambda: wrapper.run(query=query, kv_cache=kv_cache, out=out, **scales)

    launchers = [launcher(s) for s in range(sets)]
    if point["op"] == "attn_mla_decode":
        return time_graph_replay(launchers, ctx.timing)
    return time_gpu(launchers, ctx.timing)
