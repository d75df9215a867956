"""Time a speculative verify's and draft extend's attention the way SGLang 0.5.17's flashinfer backend runs them,
beside the decode kernel the `attn_gqa_decode` tables time (GPU; docs/perfdb.md "Speculative verify attention").

SGLang (`layers/attention/flashinfer_backend.py`): a target verify (`is_target_verify`) and a draft extend
(`is_draft_extend_v2`) run `BatchPrefillWithPagedKVCacheWrapper` with `backend="fa2"` (`self.prefill_backend`) and
`use_ragged=False`: one paged FA2 prefill kernel per layer over each request's whole KV (page size 1), q_len =
num_draft_tokens query tokens per request; the verify with the draft tree's custom mask, the draft extend causal.
A decode step runs `BatchDecodeWithPagedKVCacheWrapper`, with tensor cores for a GQA group of 4 or more.

usage (GPU host, flashinfer on PYTHONPATH, e.g. the SGLang kit's):
    python benchmarks/spec_verify_attention.py OUT.jsonl
One record per (heads, batch, kv_len): µs of the decode kernel (tensor cores and CUDA cores), and of the verify
and draft-extend kernels at each q_len, by CUDA-graph replay, inputs rotated past the L2.
"""

from __future__ import annotations

import json
import math
import sys
import time

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


def _case(heads: int, kv_heads: int, batch: int, kv_len: int, workspace) -> dict:
    import torch
    from flashinfer.decode import BatchDecodeWithPagedKVCacheWrapper
    from flashinfer.prefill import BatchPrefillWithPagedKVCacheWrapper

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
    record: dict = {"heads": heads, "kv_heads": kv_heads, "head_dim": d, "batch": batch, "kv_len": kv_len}

    for tensor_cores in (True, False):
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
            wrapper = BatchPrefillWithPagedKVCacheWrapper(workspace, "NHD", backend="fa2")
            mask = _verify_mask(batch, q_len, kv_len) if kind == "verify" else None
            wrapper.plan(qo_indptr, kv_indptr, pages, last_page, heads, kv_heads, d, 1, custom_mask=mask,
                         causal=mask is None, sm_scale=scale, q_data_type=bf16, kv_data_type=bf16)  # fmt: skip
            record[f"{kind}_q{q_len}_us"] = _time(
                [(lambda s=s, w=wrapper, q=q: w.run(q[s], (pool_k[s], pool_v[s]))) for s in range(sets)]
            )
    return record


def main(path: str) -> None:
    import torch

    workspace = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    props = torch.cuda.get_device_properties(0)
    try:
        import flashinfer

        version = flashinfer.__version__
    except Exception:  # the version is a label only
        version = None
    with open(path, "a", encoding="utf-8") as f:
        for heads, kv_heads in HEADS:
            for batch in BATCHES:
                for kv_len in KV_LENS:
                    t0 = time.time()
                    try:
                        record = _case(heads, kv_heads, batch, kv_len, workspace)
                    except Exception as exc:  # one shape failing leaves the others
                        record = {"heads": heads, "batch": batch, "kv_len": kv_len, "error": repr(exc)[:300]}
                    record |= {"gpu": props.name, "flashinfer": version, "wall_s": round(time.time() - t0, 1)}
                    f.write(json.dumps(record) + "\n")
                    f.flush()
                    print(json.dumps(record), flush=True)
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1])
