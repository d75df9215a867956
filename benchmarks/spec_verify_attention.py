"""Time a speculative verify's and draft extend's attention the way SGLang 0.5.17's flashinfer backend runs them,
beside the decode kernel the `attn_gqa_decode` tables time (GPU; docs/perfdb.md "Speculative verify attention").

SGLang (`layers/attention/flashinfer_backend.py`): a target verify (`is_target_verify`) and a draft extend
(`is_draft_extend_v2`) run `BatchPrefillWithPagedKVCacheWrapper` with `backend="fa2"` (`self.prefill_backend`) and
`use_ragged=False`: one paged FA2 prefill kernel per layer over each request's whole KV (page size 1), q_len =
num_draft_tokens query tokens per request; the verify with the draft tree's custom mask, the draft extend causal.
A decode step runs `BatchDecodeWithPagedKVCacheWrapper`, with tensor cores for a GQA group of 4 or more.

usage (GPU host, flashinfer on PYTHONPATH, e.g. the SGLang kit's):
    python benchmarks/spec_verify_attention.py OUT.jsonl [graph|eager]
One record per (heads, batch, kv_len): µs of the decode kernel (tensor cores and CUDA cores), and of the verify
and draft-extend kernels at each q_len, by CUDA-graph replay, inputs rotated past the L2. `graph` (the default)
builds and plans every wrapper as SGLang's captured forwards do (`use_cuda_graph=True` over buffers of the batch,
SGLang's workspace: flashinfer then forces split-KV and sizes the grid for the worst case, as the `attn_gqa_decode`
tables are timed, calibrate/backends/gqa_flashinfer.py); `eager` plans plain wrappers (what a first measurement did:
about a third of the served verify kernel at 48 requests, groundtruth/experiments/spec-verify-h200/).
"""

from __future__ import annotations

import math
import sys

# (q heads, kv heads) per rank at head dim 128: Llama-3.1-8B / Qwen3-8B, Qwen3-32B at TP 1
HEADS = ((32, 8), (64, 8))
BATCHES = (1, 4, 16, 48, 64, 128)
KV_LENS = (512, 1024, 2048, 4096)
Q_LENS = (4, 8)  # a chain of 3 steps (SGLang's DeepSeek/MTP default) and Llama's tree of 8 draft tokens
HEAD_DIM = 128


def _time(launchers):
    from simperf.calibrate.timing import TimingConfig, time_gpu

    measured = time_gpu(launchers, TimingConfig(target_ms=30.0, min_repeats=5, max_repeats=30))
    return None if measured is None else measured.time_us


def _verify_mask(batch: int, q_len: int, kv_len: int):
    """SGLang's verify mask for a chain: every draft token sees the prefix and the drafts before it (a tree masks
    more of the drafts, which the kernel reads all the same)."""
    import torch

    one = torch.ones(q_len, kv_len, dtype=torch.bool, device="cuda")
    one[:, kv_len - q_len :] = torch.tril(torch.ones(q_len, q_len, dtype=torch.bool, device="cuda"))
    return one.flatten().repeat(batch)


def _graph_prefill(workspace, qo_indptr, kv_indptr, pages, last_page, mask_bytes: int | None):
    """A paged prefill wrapper as SGLang builds it for a captured verify / draft extend: CUDA-graph mode over
    buffers of this batch's size (`_create_prefill_wrappers`; the verify's with a custom-mask buffer)."""
    import torch
    from flashinfer.prefill import BatchPrefillWithPagedKVCacheWrapper

    extra = (
        {}
        if mask_bytes is None
        else {
            "custom_mask_buf": torch.empty(mask_bytes, dtype=torch.uint8, device="cuda"),
            "mask_indptr_buf": torch.empty_like(qo_indptr),
        }
    )
    return BatchPrefillWithPagedKVCacheWrapper(
        workspace,
        "NHD",
        use_cuda_graph=True,
        backend="fa2",
        qo_indptr_buf=torch.empty_like(qo_indptr),
        paged_kv_indptr_buf=torch.empty_like(kv_indptr),
        paged_kv_indices_buf=torch.empty_like(pages),
        paged_kv_last_page_len_buf=torch.empty_like(last_page),
        **extra,
    )


def _case(heads: int, kv_heads: int, batch: int, kv_len: int, workspace, graph: bool) -> dict:
    import torch
    from flashinfer.decode import BatchDecodeWithPagedKVCacheWrapper
    from flashinfer.prefill import BatchPrefillWithPagedKVCacheWrapper

    from simperf.calibrate.backends.gqa_flashinfer import graph_mode_wrapper
    from simperf.calibrate.timing import random_tensor, rotation_sets

    d, bf16 = HEAD_DIM, torch.bfloat16
    i32 = {"dtype": torch.int32, "device": "cuda"}
    scale = 1.0 / math.sqrt(d)
    tokens = batch * kv_len
    sets = rotation_sets(tokens * kv_heads * d * 2 * 2, 50 * 2**20, max_sets=4)
    # the token pool (page size 1), each request's tokens scattered as a served pool's are
    pool_k = random_tensor((sets, tokens, 1, kv_heads, d), bf16)
    pool_v = random_tensor((sets, tokens, 1, kv_heads, d), bf16)
    pages = torch.randperm(tokens, device="cuda").to(torch.int32)
    kv_indptr = torch.arange(0, tokens + 1, kv_len, **i32)
    last_page = torch.ones(batch, **i32)
    record: dict = {"head_dim": d, "plan": "graph-mode" if graph else "eager"}

    for tensor_cores in (True, False):
        if graph:
            wrapper = graph_mode_wrapper(workspace, tensor_cores, kv_indptr, pages, last_page)
        else:
            wrapper = BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD", use_tensor_cores=tensor_cores)
        wrapper.plan(kv_indptr, pages, last_page, heads, kv_heads, d, 1, q_data_type=bf16, kv_data_type=bf16,
                     sm_scale=scale)  # fmt: skip
        q = random_tensor((sets, batch, heads, d), bf16)
        record[f"decode_{'tc' if tensor_cores else 'cc'}_us"] = _time(
            [(lambda s=s, w=wrapper, q=q: w.run(q[s], (pool_k[s], pool_v[s]))) for s in range(sets)]
        )
    for q_len in Q_LENS:
        qo_indptr = torch.arange(0, batch * q_len + 1, q_len, **i32)
        q = random_tensor((sets, batch * q_len, heads, d), bf16)
        for kind in ("verify", "draft_extend"):
            mask = _verify_mask(batch, q_len, kv_len) if kind == "verify" else None
            if graph:
                mask_bytes = None if mask is None else (mask.numel() + 7) // 8 + batch + 64
                wrapper = _graph_prefill(workspace, qo_indptr, kv_indptr, pages, last_page, mask_bytes)
            else:
                wrapper = BatchPrefillWithPagedKVCacheWrapper(workspace, "NHD", backend="fa2")
            wrapper.plan(qo_indptr, kv_indptr, pages, last_page, heads, kv_heads, d, 1, custom_mask=mask,
                         causal=mask is None, sm_scale=scale, q_data_type=bf16, kv_data_type=bf16)  # fmt: skip
            record[f"{kind}_q{q_len}_us"] = _time(
                [(lambda s=s, w=wrapper, q=q: w.run(q[s], (pool_k[s], pool_v[s]))) for s in range(sets)]
            )
    return record


def main(path: str, plan: str = "graph") -> None:
    import torch

    from simperf.calibrate.backends.gqa_flashinfer import SGLANG_WORKSPACE_BYTES
    from simperf.calibrate.timing import write_shape_records

    workspace = torch.empty(SGLANG_WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
    try:
        import flashinfer

        version = flashinfer.__version__
    except Exception:  # the version is a label only
        version = None
    shapes = [
        {"heads": h, "kv_heads": kv, "batch": b, "kv_len": n}
        for h, kv in HEADS
        for b in BATCHES
        for n in KV_LENS
    ]
    write_shape_records(
        path,
        shapes,
        lambda s: _case(s["heads"], s["kv_heads"], s["batch"], s["kv_len"], workspace, plan == "graph"),
        {"flashinfer": version},
    )


if __name__ == "__main__":
    main(*sys.argv[1:3])
