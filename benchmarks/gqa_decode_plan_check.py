"""Does the way simperf times flashinfer's GQA decode match what SGLang's CUDA graph replays? (GPU; one command.)

The attn_gqa_decode tables (calibrate/backends/gqa_flashinfer.py) plan a BatchDecodeWithPagedKVCacheWrapper
without CUDA-graph mode, with the flashinfer of the GPU kit. SGLang 0.5.17 captures its decode with wrappers
built `use_cuda_graph=True` over preallocated index buffers (srt/layers/attention/flashinfer_backend.py,
`init_forward_metadata_capture_cuda_graph`), with the flashinfer SGLang pins. The served Qwen3-30B-A3B decode
(groundtruth/forwards/h100/served-qwen3-30b-a3b-decode) ran the paged prefill kernel plus a split-KV merge per
layer, 12.3 µs at one request, where the table says 9.15 µs.

This times the same decodes both ways, with whichever flashinfer is on PYTHONPATH (run it once with the GPU kit's,
once with SGLang's), by CUDA-graph replay over rotated KV sets like the tables, and lists the kernels one launch
runs (torch profiler). Writes one JSON line per point to OUT.

    python benchmarks/gqa_decode_plan_check.py OUT.jsonl
"""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

# (q heads, kv heads) per rank, head_dim 128, bf16 KV, page size 1: Qwen3-30B-A3B, Qwen3-8B / Llama-3.1-8B, Qwen3-32B
SHAPES = ((32, 4), (32, 8), (64, 8))
BATCHES = (1, 16, 64)
KV_LENS = (1152, 4096)
HEAD_DIM = 128


def _layout(batch: int, kv_len: int):
    from simperf.calibrate.backends.common import paged_layout

    return paged_layout([kv_len] * batch, 1)


def _wrapper(graph: bool, ws, indptr, indices, last_page_len, tensor_cores: bool):
    from flashinfer.decode import BatchDecodeWithPagedKVCacheWrapper

    from simperf.calibrate.backends.gqa_flashinfer import graph_mode_wrapper

    if not graph:
        return BatchDecodeWithPagedKVCacheWrapper(ws, "NHD", use_tensor_cores=tensor_cores)
    return graph_mode_wrapper(ws, tensor_cores, indptr, indices, last_page_len)


def _kernels(launch) -> list[tuple[str, float]]:
    """(name, µs) of the kernels one eager launch runs."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    launch()
    torch.cuda.synchronize()
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            launch()
            torch.cuda.synchronize()
        return [
            (e.name[:60], round(float(e.device_time), 2))
            for e in prof.events()
            if e.device_type == torch.autograd.DeviceType.CUDA
        ]
    except Exception as exc:  # noqa: BLE001 - the listing is a diagnostic; the timing stands without it
        return [(f"profiler failed: {type(exc).__name__}: {exc}"[:120], 0.0)]


def measure(heads: int, kv_heads: int, batch: int, kv_len: int, graph: bool, ws) -> dict:
    import torch

    from simperf.calibrate.backends.gqa_flashinfer import use_tensor_cores
    from simperf.calibrate.timing import TimingConfig, random_tensor, rotation_sets, time_graph_replay

    tensor_cores = use_tensor_cores("bf16", heads, kv_heads)
    kv_indptr, kv_indices, last_page_len, pages = _layout(batch, kv_len)
    wrapper = _wrapper(graph, ws, kv_indptr, kv_indices, last_page_len, tensor_cores)
    wrapper.plan(
        kv_indptr,
        kv_indices,
        last_page_len,
        heads,
        kv_heads,
        HEAD_DIM,
        1,
        q_data_type=torch.bfloat16,
        kv_data_type=torch.bfloat16,
    )
    per_set = pages * 2 * kv_heads * HEAD_DIM * 2 + batch * heads * HEAD_DIM * 2
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sets = rotation_sets(per_set, l2)
    q_all = random_tensor((sets, batch, heads, HEAD_DIM), torch.bfloat16)
    kv_all = random_tensor((sets, pages, 2, 1, kv_heads, HEAD_DIM), torch.bfloat16)
    out = torch.empty(batch, heads, HEAD_DIM, dtype=torch.bfloat16, device="cuda")

    def launcher(s: int):
        q, kv = q_all[s], kv_all[s]
        return lambda: wrapper.run(q, kv, out=out)

    timing = TimingConfig()
    measured = time_graph_replay([launcher(s) for s in range(sets)], timing)
    return {
        "heads": heads,
        "kv_heads": kv_heads,
        "batch": batch,
        "kv_len": kv_len,
        "cuda_graph_plan": graph,
        "tensor_cores": tensor_cores,
        "time_us": round(measured.time_us, 3),
        "kernels": _kernels(launcher(0)),
    }


def main(out_path: str) -> int:
    import flashinfer
    import torch

    ws = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    meta = {
        "flashinfer": flashinfer.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
    }
    print(meta, flush=True)
    with open(out_path, "w", encoding="utf-8") as out:
        out.write(json.dumps({"meta": meta}) + "\n")
        for heads, kv_heads in SHAPES:
            for batch in BATCHES:
                for kv_len in KV_LENS:
                    for graph in (False, True):
                        row = measure(heads, kv_heads, batch, kv_len, graph, ws)
                        out.write(json.dumps(row) + "\n")
                        out.flush()
                        print(SimpleNamespace(**{k: v for k, v in row.items() if k != "kernels"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
