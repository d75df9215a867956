"""How SGLang's FA3 decode splits each request's KV (GPU; SGLang's kit with its FA3 kernel file).

SGLang 0.5.17's fa3 backend computes the decode's tile schedule once per step (`get_scheduler_metadata`,
srt/layers/attention/flashattention_backend.py `_compute_scheduler_metadata`, with num_splits 0: FA3's heuristic).
The returned int32 tensor starts with, per virtual batch index (the batches sorted longest first), the number of
splits of that request's KV, then its number of query blocks, then the original batch index. This calls it exactly
as calibrate/backends/fa3_sgl.py times the decode (page size 1, causal, max_seqlen_k = max(40960, longest)) for
every batch of the FA3 straggler sets, and writes per batch the splits of each request in batch order.

    python benchmarks/fa3_split_probe.py OUT.json calibration/offgrid/straggler-dev-fa3.jsonl ...
"""

from __future__ import annotations

import json
import sys

DECODE_CONTEXT_LEN = 40960  # as calibrate/backends/fa3_sgl.py


def splits_of(lens: list[int], heads: int, kv_heads: int) -> dict:
    import torch
    from sgl_kernel.flash_attn import get_scheduler_metadata

    b = len(lens)
    seqlens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    cu_q = torch.arange(0, b + 1, dtype=torch.int32, device="cuda")
    meta = get_scheduler_metadata(
        batch_size=b, max_seqlen_q=1, max_seqlen_k=max(DECODE_CONTEXT_LEN, max(lens)), num_heads=heads,
        num_heads_k=kv_heads, headdim=128, cache_seqlens=seqlens, qkv_dtype=torch.bfloat16, cu_seqlens_q=cu_q,
        page_size=1, causal=True, has_softcap=False, num_splits=0,
    )  # fmt: skip
    raw = meta.cpu().tolist()
    rounded = -(-b // 4) * 4
    splits, m_blocks, order = raw[:b], raw[rounded : rounded + b], raw[2 * rounded : 2 * rounded + b]
    by_request = [0] * b
    if len(raw) >= 3 * rounded and sorted(order) == list(range(b)):
        for virtual, request in enumerate(order):
            by_request[request] = splits[virtual]
    else:  # no sort vector: in batch order
        by_request = splits
    return {"splits": by_request, "m_blocks_sorted": m_blocks, "order": order, "raw_len": len(raw)}


def main(out: str, sets: list[str]) -> int:
    import torch

    found = {"gpu": torch.cuda.get_device_name(0), "sets": {}}
    for path in sets:
        rows = [json.loads(line) for line in open(path, encoding="utf-8")][1:]
        found["sets"][path] = {}
        for row in rows:
            p = row["point"]
            lens = json.loads(p["kv_lens"])
            found["sets"][path][row["id"]] = splits_of(lens, int(p["num_heads"]), int(p["num_kv_heads"]))
        print(path, len(rows), "batches")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(found, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2:]))
