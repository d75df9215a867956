"""How many CTAs flashinfer's CUDA-core GQA decode kernel fits on an SM, per query group size (GPU; one command).

flashinfer's decode planner (attention/scheduler.cuh, BatchDecodeWithPagedKVCacheWorkEstimationDispatched) sizes
its grid as cudaOccupancyMaxActiveBlocksPerMultiprocessor(kernel, threads, smem) x num_SMs, and splits the KV only
where batch x kv_heads is below that grid. The kernel's shared memory and registers depend on the group size
(bdy = GROUP_SIZE, bdz = 128 / (bdx x bdy), tile_size_per_bdx = 4 for group 1, else 1), so the grid does too.
simperf's work plan (perfdb/workplan.py) needs that number; this reads it from the planner itself.

How: plan a CUDA-graph-mode wrapper (as SGLang captures decode) for one request on one KV head. The KV is then
split, and DecodePlan sets padded_batch_size = max_grid_size / gdy (gdy = the KV heads, here 1): the plan info's
first entry is the grid. Written as one JSON object: {"gpu", "num_sms", "flashinfer", "blocks_per_sm": {"<group>,
<head_dim>,<kv dtype>": n}}.

    python benchmarks/gqa_decode_occupancy.py OUT.json
"""

from __future__ import annotations

import json
import sys

GROUPS = (
    1,
    2,
    3,
)  # SGLang runs the CUDA-core kernel for bf16 KV below 4 q heads per KV head (keys.gqa_tensor_cores)
HEAD_DIMS = (64, 128, 256)
KV_DTYPES = ("bf16", "fp16")


def grid_size(group: int, head_dim: int, kv_dtype: str, ws) -> tuple[int, int]:
    """(max_grid_size, split_kv) the planner chose for one request of 4,096 tokens on one KV head."""
    import torch

    from simperf.calibrate.backends.common import paged_layout
    from simperf.calibrate.backends.gqa_flashinfer import graph_mode_wrapper

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[kv_dtype]
    indptr, indices, last_page_len, _ = paged_layout([4096], 1)
    indptr, indices, last_page_len = indptr.cuda(), indices.cuda(), last_page_len.cuda()
    wrapper = graph_mode_wrapper(ws, False, indptr, indices, last_page_len)
    wrapper.plan(indptr, indices, last_page_len, group, 1, head_dim, 1, q_data_type=dtype, kv_data_type=dtype)
    info = list(wrapper._plan_info)
    return int(info[0]), int(info[-1])


def main(out: str) -> int:
    import flashinfer
    import torch

    ws = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    found: dict[str, int] = {}
    for kv_dtype in KV_DTYPES:
        for head_dim in HEAD_DIMS:
            for group in GROUPS:
                grid, split = grid_size(group, head_dim, kv_dtype, ws)
                if not split:
                    raise RuntimeError(
                        f"group {group}, head_dim {head_dim}: the planner did not split one request"
                    )
                found[f"{group},{head_dim},{kv_dtype}"] = grid // num_sms
                print(
                    f"group {group} head_dim {head_dim} {kv_dtype}: grid {grid} = {grid / num_sms:g} per SM"
                )
    result = {
        "gpu": torch.cuda.get_device_name(0),
        "num_sms": num_sms,
        "flashinfer": flashinfer.__version__,
        "blocks_per_sm": found,
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
