"""Fail-fast check of SGLang's FA3 kernel on a GPU host, before `simperf calibrate` runs the sgl_fa3 grid.

Imports sgl_kernel.flash_attn (SGLang's kit, with its flash_ops .so placed in sgl_kernel/), runs one GQA decode and
one extend call shaped as SGLang 0.5.17's fa3 backend calls them (simperf/calibrate/backends/fa3_sgl.py), checks
the outputs against a float32 reference, and prints shapes and an event-timed mean per call (a smoke number, not a
table row):

    PYTHONPATH=/tmp/site:/tmp/sgsite:$PWD python benchmarks/fa3_sgl_smoke.py

Exit status 0 when both calls ran and matched the reference, 1 otherwise (the reason on one line).
"""

from __future__ import annotations

import sys
import time


def _reference(q, k_cache, v_cache, table, lens, q_lens, scale):  # noqa: ANN001 - torch tensors
    """Causal attention per request in float32, the cache read through the page table (page size 1)."""
    import torch

    outs, start = [], 0
    heads, kv_heads = q.shape[1], k_cache.shape[2]
    for i, (n, m) in enumerate(zip(lens, q_lens, strict=True)):
        slots = table[i, :n].long()
        k = k_cache[slots, 0].float().repeat_interleave(heads // kv_heads, dim=1)  # [n, H, D]
        v = v_cache[slots, 0].float().repeat_interleave(heads // kv_heads, dim=1)
        qi = q[start : start + m].float()  # [m, H, D]
        s = torch.einsum("mhd,nhd->hmn", qi, k) * scale
        pos_q = torch.arange(n - m, n, device=q.device)[:, None]
        s = s.masked_fill(torch.arange(n, device=q.device)[None, :] > pos_q, float("-inf"))
        outs.append(torch.einsum("hmn,nhd->mhd", s.softmax(-1), v))
        start += m
    return torch.cat(outs)


def _time_us(fn, repeats: int = 20) -> float:  # noqa: ANN001
    import torch

    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / repeats


def main() -> int:
    t0 = time.perf_counter()
    try:
        import torch
        from sgl_kernel.flash_attn import flash_attn_with_kvcache, get_scheduler_metadata
        from sgl_kernel.version import __version__
    except Exception as exc:  # noqa: BLE001
        print(f"FAIL import: {type(exc).__name__}: {' '.join(str(exc).split())}")
        return 1
    print(f"sgl-kernel {__version__}, torch {torch.__version__}, {torch.cuda.get_device_name(0)}, "
          f"import {time.perf_counter() - t0:.1f} s")  # fmt: skip

    torch.manual_seed(0)
    heads, kv_heads, dim, context = 32, 8, 128, 40960
    scale = dim**-0.5
    ok = True

    # decode: 4 requests, ragged KV lengths, page size 1, scheduler metadata as SGLang precomputes it
    lens = [100, 257, 1024, 3000]
    batch, total = len(lens), sum(lens)
    k_cache = torch.randn(total + 1, 1, kv_heads, dim, device="cuda", dtype=torch.bfloat16)
    v_cache = torch.randn_like(k_cache)
    perm = (torch.randperm(total, device="cuda") + 1).to(torch.int32)
    table = torch.zeros(batch, context, dtype=torch.int32, device="cuda")
    start = 0
    for i, n in enumerate(lens):
        table[i, :n] = perm[start : start + n]
        start += n
    seqlens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    cu_q = torch.arange(0, batch + 1, dtype=torch.int32, device="cuda")
    q = torch.randn(batch, heads, dim, device="cuda", dtype=torch.bfloat16)
    sched = get_scheduler_metadata(
        batch_size=batch, max_seqlen_q=1, max_seqlen_k=context, num_heads=heads, num_heads_k=kv_heads,
        headdim=dim, cache_seqlens=seqlens, qkv_dtype=torch.bfloat16, cu_seqlens_q=cu_q, page_size=1,
        causal=True, has_softcap=False, num_splits=0,
    )  # fmt: skip

    def decode():
        return flash_attn_with_kvcache(
            q=q, k_cache=k_cache, v_cache=v_cache, page_table=table, cache_seqlens=seqlens, cu_seqlens_q=cu_q,
            max_seqlen_q=1, softmax_scale=scale, causal=True, num_splits=0, scheduler_metadata=sched,
        )  # fmt: skip

    out = decode()
    err = (out.float() - _reference(q, k_cache, v_cache, table, lens, [1] * batch, scale)).abs().max().item()
    us = _time_us(decode)
    ok &= err < 2e-2
    print(
        f"decode  q {tuple(q.shape)} -> out {tuple(out.shape)}  max|err| {err:.2e}  {us:.1f} us/call (events)"
    )

    # extend: 2 requests, 512 and 200 new tokens over prefixes of 1024 and 0 (kv = prefix + new), causal
    q_lens, lens = [512, 200], [1536, 200]
    total = sum(lens)
    k_cache = torch.randn(total + 1, 1, kv_heads, dim, device="cuda", dtype=torch.bfloat16)
    v_cache = torch.randn_like(k_cache)
    perm = (torch.randperm(total, device="cuda") + 1).to(torch.int32)
    table = torch.zeros(len(lens), max(lens), dtype=torch.int32, device="cuda")
    start = 0
    for i, n in enumerate(lens):
        table[i, :n] = perm[start : start + n]
        start += n
    seqlens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    cu_q = torch.tensor([0, q_lens[0], sum(q_lens)], dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0, lens[0], sum(lens)], dtype=torch.int32, device="cuda")
    q = torch.randn(sum(q_lens), heads, dim, device="cuda", dtype=torch.bfloat16)

    def extend():
        return flash_attn_with_kvcache(
            q=q, k_cache=k_cache, v_cache=v_cache, page_table=table, cache_seqlens=seqlens, cu_seqlens_q=cu_q,
            cu_seqlens_k_new=cu_k, max_seqlen_q=max(q_lens), softmax_scale=scale, causal=True, num_splits=0,
        )  # fmt: skip

    out = extend()
    err = (out.float() - _reference(q, k_cache, v_cache, table, lens, q_lens, scale)).abs().max().item()
    us = _time_us(extend)
    ok &= err < 2e-2
    print(
        f"extend  q {tuple(q.shape)} -> out {tuple(out.shape)}  max|err| {err:.2e}  {us:.1f} us/call (events)"
    )
    print("OK" if ok else "FAIL: output differs from the float32 reference")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
