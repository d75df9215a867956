"""Why FlashMLA's ragged decode of short requests runs slower than the uniform batch at its mean KV (GPU).

docs/perfdb.md ("FlashMLA ragged decode of short requests") left this open: priced at mean KV, ragged FlashMLA
decode batches of few 64-token blocks a request are 9-31% low on every set that times them, and neither the
kernel's own plan (get_mla_metadata) nor a larger per-request overhead explained it from the tables alone. This
times, for every ragged FlashMLA decode batch of the off-grid sets, the same batch as

- `orig`: its lengths in the set's order (what the sets timed),
- `asc`, `desc`, `shuffled`: the same lengths in another order (does the plan's dealing order matter?),
- `blocks`: every length rounded up to whole 64-token blocks (does the last partial block cost a full one?),
- `uniform`: every request at the batch's mean KV (what the tables price),
- `uniform_blocks`: every request at 64 x the mean number of blocks (the blocks the kernel really reads),

by CUDA-graph replay as the tables are timed (calibrate/backends/flashmla.py), and for `orig` and `uniform` also
profiles a few eager calls to split the time between the split-KV kernel and the combine kernel, and records the
kernel's own plan (tile_scheduler_metadata, num_splits).

    python benchmarks/flashmla_ragged_probe.py OUT.jsonl calibration/offgrid/samples.jsonl ...
"""

from __future__ import annotations

import json
import math
import random
import sys
from typing import Any

VARIANTS = ("orig", "asc", "desc", "shuffled", "blocks", "uniform", "uniform_blocks")
PAGE = 64


def variant_lengths(lens: list[int], variant: str) -> list[int]:
    n = len(lens)
    if variant == "orig":
        return list(lens)
    if variant == "asc":
        return sorted(lens)
    if variant == "desc":
        return sorted(lens, reverse=True)
    if variant == "shuffled":
        out = list(lens)
        random.Random(20261128).shuffle(out)
        return out
    if variant == "blocks":
        return [math.ceil(x / PAGE) * PAGE for x in lens]
    if variant == "uniform":
        return [max(round(sum(lens) / n), 1)] * n
    if variant == "uniform_blocks":
        blocks = sum(math.ceil(x / PAGE) for x in lens) / n
        return [max(round(blocks * PAGE), 1)] * n
    raise ValueError(variant)


def ragged_flashmla_rows(paths: list[str]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        for line in open(path, encoding="utf-8").read().splitlines()[1:]:
            row = json.loads(line)
            p = row["point"]
            if p["op"] == "attn_mla_decode" and p["backend"] == "flashmla" and p.get("kv_lens"):
                rows.append({"set": path, "id": row["id"], "point": p})
    return rows


def short_kernel_name(name: str) -> str:
    """FlashMLA's two kernels by their function names (the full names are pages of template arguments)."""
    for kernel in ("flash_fwd_splitkv_mla_kernel", "flash_fwd_mla_combine_kernel"):
        if kernel.split("_kernel")[0].replace("flash_fwd_", "") in name:
            return kernel
    return name.split("<")[0][:60]


def plan_and_profile(point: dict[str, Any], lens: list[int]) -> dict[str, Any]:
    """The kernel's plan for these lengths and the per-kernel GPU time of eager calls (torch.profiler)."""
    import flash_mla
    import torch

    from simperf.calibrate.backends.common import block_table

    q_len, heads = int(point["q_len"]), int(point["num_heads"])
    fp8 = point["kv_dtype"] == "fp8"
    table, total_pages = block_table(lens, PAGE)
    seqlens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    kv_dtype = torch.float8_e4m3fn if fp8 else torch.bfloat16
    q = torch.randn(len(lens), q_len, heads, 576, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(total_pages, PAGE, 1, 576, device="cuda", dtype=torch.bfloat16).to(kv_dtype)
    sched, _ = flash_mla.get_mla_metadata()
    extra: dict[str, Any] = {}
    if fp8:
        sched.tile_scheduler_metadata, sched.num_splits = flash_mla.get_mla_decoding_metadata(
            seqlens, q_len * heads, 1, is_fp8_kvcache=True, use_legacy=True
        )
        one = torch.ones(1, dtype=torch.float32, device="cuda")
        q = q.to(torch.float8_e4m3fn)
        extra = {"is_fp8_kvcache": True, "descale_q": one, "descale_k": one}

    def call() -> Any:
        return flash_mla.flash_mla_with_kvcache(
            q, kv, table, seqlens, 512, sched, causal=q_len > 1, use_legacy=True, **extra
        )

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    calls = 10
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    kernels: dict[str, float] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            name = short_kernel_name(event.name)
            kernels[name] = round(kernels.get(name, 0.0) + event.device_time / calls, 3)
    return {
        "kernels_us": kernels,
        "num_splits": sched.num_splits.cpu().tolist() if sched.num_splits is not None else None,
        "tile_scheduler_metadata": sched.tile_scheduler_metadata.cpu().tolist()
        if sched.tile_scheduler_metadata is not None
        else None,
    }


def main(out: str, sets: list[str]) -> int:
    from simperf.calibrate.backends import flashmla
    from simperf.calibrate.provenance import detect_device
    from simperf.calibrate.worker import WorkerContext, timing_config

    ctx = WorkerContext(device=detect_device(use_torch=True), timing=timing_config(None))
    rows = ragged_flashmla_rows(sets)
    print(f"{len(rows)} ragged FlashMLA batches x {len(VARIANTS)} variants", flush=True)
    with open(out, "w", encoding="utf-8") as f:
        for i, row in enumerate(rows):
            base = json.loads(row["point"]["kv_lens"])
            for variant in VARIANTS:
                lens = variant_lengths(base, variant)
                point = dict(row["point"], kv_lens=json.dumps(lens), kv_len=round(sum(lens) / len(lens)))
                m = flashmla.run_point(point, ctx)
                rec = {"set": row["set"], "id": row["id"], "variant": variant}
                if variant == "orig":  # the other variants' lengths follow from these (variant_lengths)
                    rec["lens"] = lens
                rec.update(m.as_columns())
                if variant in ("orig", "uniform", "asc"):
                    rec.update(plan_and_profile(row["point"], lens))
                f.write(json.dumps(rec, separators=(",", ":")) + "\n")
                f.flush()
            print(f"{i + 1}/{len(rows)} {row['set']} id {row['id']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2:]))
