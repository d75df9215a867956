"""Time an extend over a cached prefix the way SGLang 0.5.17's flashinfer backend runs it, beside the kernel the
`attn_mha_prefill` tables time for it (GPU; docs/perfdb.md "Extends over a cached prefix").

SGLang (`layers/attention/flashinfer_backend.py`, `forward_extend` with `use_ragged` and a prefix) runs three
kernels per layer: the ragged wrapper (backend "auto": FA3 on Hopper) over the new tokens alone, causal, returning
the log-sum-exp; the paged wrapper (`self.prefill_backend = "fa2"`) over the cached prefix, non-causal, from the
token pool (page size 1); and `merge_state` of the two. The tables time one ragged FA3 kernel over prefix + new
tokens with the causal mask aligned to the end: the same attention, one kernel, FA3 throughout.

usage (GPU host, the GPU kit on PYTHONPATH):
    python benchmarks/extend_prefix_path.py OUT.jsonl
Writes one record per (heads, q_len, prefix): both times in µs, CUDA-graph replay, inputs rotated past the L2.
"""

from __future__ import annotations

import math
import sys

# (q heads, kv heads) per rank at head dim 128: Qwen3-8B / Llama-3.1-8B at TP 1, Qwen3-32B at TP 1
HEADS = ((32, 8), (64, 8))
Q_LENS = (512, 2048, 8192)
PREFIXES = (1024, 4096, 8192, 16384, 24576)
HEAD_DIM = 128


def _time(launchers):
    from simperf.calibrate.timing import TimingConfig, time_gpu

    measured = time_gpu(launchers, TimingConfig(target_ms=40.0, min_repeats=5, max_repeats=30))
    return None if measured is None else measured.time_us


def _case(heads: int, kv_heads: int, q_len: int, prefix: int, workspace) -> dict:
    import torch
    from flashinfer import merge_state
    from flashinfer.prefill import BatchPrefillWithPagedKVCacheWrapper, BatchPrefillWithRaggedKVCacheWrapper

    from simperf.calibrate.timing import random_tensor, rotation_sets

    d = HEAD_DIM
    i32 = {"dtype": torch.int32, "device": "cuda"}
    scale = 1.0 / math.sqrt(d)
    bf16 = torch.bfloat16
    sets = rotation_sets((q_len * heads + (prefix + q_len) * kv_heads * 2) * d * 2, 50 * 2**20, max_sets=8)
    q = random_tensor((sets, q_len, heads, d), bf16)
    k_new = random_tensor((sets, q_len, kv_heads, d), bf16)
    v_new = random_tensor((sets, q_len, kv_heads, d), bf16)
    # the token pool: one page per token, the prefix's tokens scattered as a served pool's are
    pool_k = random_tensor((sets, prefix, 1, kv_heads, d), bf16)
    pool_v = random_tensor((sets, prefix, 1, kv_heads, d), bf16)
    pages = torch.randperm(prefix, device="cuda").to(torch.int32)

    # what the tables time: one ragged FA3 kernel, causal, over prefix + new tokens
    table = BatchPrefillWithRaggedKVCacheWrapper(workspace[0], "NHD", backend="fa3")
    table.plan(torch.tensor([0, q_len], **i32), torch.tensor([0, prefix + q_len], **i32), heads, kv_heads, d,
               causal=True, sm_scale=scale, q_data_type=bf16, kv_data_type=bf16)  # fmt: skip
    k_all = random_tensor((sets, prefix + q_len, kv_heads, d), bf16)
    v_all = random_tensor((sets, prefix + q_len, kv_heads, d), bf16)
    out = torch.empty(q_len, heads, d, dtype=bf16, device="cuda")

    def table_launch(s):
        return lambda: table.run(q[s], k_all[s], v_all[s], out=out)

    # what SGLang runs
    ragged = BatchPrefillWithRaggedKVCacheWrapper(workspace[1], "NHD", backend="auto")
    ragged.plan(torch.tensor([0, q_len], **i32), torch.tensor([0, q_len], **i32), heads, kv_heads, d,
                causal=True, sm_scale=scale, q_data_type=bf16, kv_data_type=bf16)  # fmt: skip
    paged = BatchPrefillWithPagedKVCacheWrapper(workspace[2], "NHD", backend="fa2")
    paged.plan(torch.tensor([0, q_len], **i32), torch.tensor([0, prefix], **i32), pages,
               torch.ones(1, **i32), heads, kv_heads, d, 1, causal=False, sm_scale=scale,
               q_data_type=bf16, kv_data_type=bf16)  # fmt: skip

    def sglang_launch(s):
        def run():
            o1, s1 = ragged.run_return_lse(q[s], k_new[s], v_new[s])
            o2, s2 = paged.run_return_lse(q[s], (pool_k[s], pool_v[s]))
            merge_state(o1, s1, o2, s2)

        return run

    def parts(s):
        return (
            lambda: ragged.run_return_lse(q[s], k_new[s], v_new[s]),
            lambda: paged.run_return_lse(q[s], (pool_k[s], pool_v[s])),
        )

    record = {"head_dim": d}
    record["table_kernel_us"] = _time([table_launch(s) for s in range(sets)])
    record["sglang_path_us"] = _time([sglang_launch(s) for s in range(sets)])
    record["ragged_new_us"] = _time([parts(s)[0] for s in range(sets)])
    record["paged_prefix_fa2_us"] = _time([parts(s)[1] for s in range(sets)])
    return record


def main(path: str) -> None:
    import torch

    from simperf.calibrate.timing import write_shape_records

    workspace = [torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda") for _ in range(3)]
    shapes = [
        {"heads": h, "kv_heads": kv, "q_len": q, "prefix": p}
        for h, kv in HEADS
        for q in Q_LENS
        for p in PREFIXES
    ]
    write_shape_records(
        path,
        shapes,
        lambda s: _case(s["heads"], s["kv_heads"], s["q_len"], s["prefix"], workspace),
        {},
    )


if __name__ == "__main__":
    main(sys.argv[1])
