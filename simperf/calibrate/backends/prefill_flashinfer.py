"""flashinfer ragged causal prefill (BatchPrefillWithRaggedKVCacheWrapper), backends fa3 / fa2.

DeepSeek's MHA prefill path runs qk head dim 192, v head dim 128, kv heads = q heads; the dense models run
GQA with head dim 128. kv_len > q_len means a cached prefix (causal mask aligned to the end). Ragged
batches (`q_lens` / `kv_lens` as JSON lists, as `simperf validate` passes them) run per-request lengths.
Timed by CUDA-graph replay although SGLang runs prefill eagerly: the table holds GPU time, and the cost
model charges the eager launch cost separately (timing.time_gpu).
"""

from __future__ import annotations

import math
from typing import Any

from simperf.calibrate.backends.common import indptr, kv_lengths, q_lengths, workspace
from simperf.calibrate.measure import Measurement
from simperf.calibrate.timing import random_tensor, rotation_sets, time_gpu

BACKENDS = {"flashinfer_fa3": "fa3", "flashinfer_fa2": "fa2"}


def compile_signature(point: dict[str, Any]) -> tuple[Any, ...]:
    return (point["backend"], point["head_dim"], point["head_dim_v"])


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch
    from flashinfer.prefill import BatchPrefillWithRaggedKVCacheWrapper

    q_lens, kv_lens = q_lengths(point), kv_lengths(point)
    heads, kv_heads = int(point["num_heads"]), int(point["num_kv_heads"])
    d_qk, d_v = int(point["head_dim"]), int(point["head_dim_v"])
    qo_indptr, kv_indptr = indptr(q_lens), indptr(kv_lens)
    wrapper = BatchPrefillWithRaggedKVCacheWrapper(workspace(ctx), "NHD", backend=BACKENDS[point["backend"]])
    wrapper.plan(
        qo_indptr,
        kv_indptr,
        heads,
        kv_heads,
        d_qk,
        head_dim_vo=d_v,
        causal=True,
        sm_scale=1.0 / math.sqrt(d_qk),
        q_data_type=torch.bfloat16,
        kv_data_type=torch.bfloat16,
    )
    q_tokens, kv_tokens = sum(q_lens), sum(kv_lens)
    per_set = (q_tokens * heads * d_qk + kv_tokens * kv_heads * (d_qk + d_v)) * 2
    sets = rotation_sets(per_set, ctx.l2_bytes, max_sets=16)
    q_all = random_tensor((sets, q_tokens, heads, d_qk), torch.bfloat16)
    k_all = random_tensor((sets, kv_tokens, kv_heads, d_qk), torch.bfloat16)
    v_all = random_tensor((sets, kv_tokens, kv_heads, d_v), torch.bfloat16)
    out = torch.empty(q_tokens, heads, d_v, dtype=torch.bfloat16, device="cuda")

    def launcher(s: int) -> Any:
        q, k, v = q_all[s], k_all[s], v_all[s]
        return lambda: wrapper.run(q, k, v, out=out)

    return time_gpu([launcher(s) for s in range(sets)], ctx.timing)
