"""flashinfer GQA paged decode (BatchDecodeWithPagedKVCacheWrapper) for the dense zoo models.

Paged NHD cache [pages, 2, page_size, kv_heads, 128], pages scattered at random (requests of a `prefix_groups`
group share their prefix pages, as after a radix-cache hit); tensor-core decode exactly
where SGLang's flashinfer backend chooses it (`use_tensor_cores`). Timed by CUDA-graph replay.

The wrapper is built and planned as SGLang captures its decode (`use_cuda_graph=True` over index buffers of the
batch's size: SGLang 0.5.17 srt/layers/attention/flashinfer_backend.py, `init_forward_metadata_capture_cuda_graph`),
not as an eager decode plans it: in graph mode flashinfer's planner sizes the grid for the captured batch's worst
case (`PrefillSplitQOKVIndptr` / `DecodePlan` with `enable_cuda_graph`), which costs a small batch up to a quarter
more (benchmarks/gqa_decode_plan_check.py: +25% at one request, KV 1,152, on an H100). Rows timed this way say
`graph-mode plan` in their timing_method; a decode batch above SGLang's CUDA-graph limit runs eager and is priced
with them too (+2...+9% there at 64 requests in that check).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from simperf.calibrate.backends.common import (
    PrefixGroups,
    kv_lengths,
    paged_layout,
    torch_dtype,
    workspace,
)
from simperf.calibrate.measure import Measurement
from simperf.calibrate.timing import random_tensor, rotation_sets, time_graph_replay

GRAPH_PLAN = "graph-mode plan"  # in a row's timing_method: planned as SGLang's captured decode
# SGLang 0.5.17's flashinfer workspace for Qwen2/Qwen3 (srt/layers/attention/flashinfer_backend.py; 384 MiB for
# other models, environ.py SGLANG_FLASHINFER_WORKSPACE_SIZE): a graph-mode plan at 256-512 requests and 8-16 q heads
# per kv head needs more than the calibration's 256 MiB default for its split-KV partials
SGLANG_WORKSPACE_BYTES = 512 * 1024 * 1024


def use_tensor_cores(kv_dtype: str, num_heads: int, num_kv_heads: int) -> bool:
    """SGLang 0.5.17 `should_use_tensor_core` (srt/layers/attention/flashinfer_backend.py, without its env
    override): always for an fp8 KV cache, else when the GQA group (q heads per kv head) is 4 or more. The table
    key (kv_dtype, num_heads, num_kv_heads) therefore says which kernel a row timed."""
    return kv_dtype.startswith("fp8") or num_heads // num_kv_heads >= 4


def _use_tensor_cores(point: dict[str, Any]) -> bool:
    return use_tensor_cores(str(point["kv_dtype"]), int(point["num_heads"]), int(point["num_kv_heads"]))


def compile_signature(point: dict[str, Any]) -> tuple[Any, ...]:
    return (point["kv_dtype"], point["head_dim"], _use_tensor_cores(point))


def graph_mode_wrapper(
    workspace_buffer: Any, tensor_cores: bool, indptr: Any, indices: Any, last_page_len: Any
) -> Any:
    """A decode wrapper as SGLang builds it for a captured batch: CUDA-graph mode over index buffers of this
    batch's size (its plan then copies the batch's page table into them)."""
    import torch
    from flashinfer.decode import BatchDecodeWithPagedKVCacheWrapper

    return BatchDecodeWithPagedKVCacheWrapper(
        workspace_buffer,
        "NHD",
        use_cuda_graph=True,
        use_tensor_cores=tensor_cores,
        paged_kv_indptr_buffer=torch.empty_like(indptr),
        paged_kv_indices_buffer=torch.empty_like(indices),
        paged_kv_last_page_len_buffer=torch.empty_like(last_page_len),
    )


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    import torch

    lens = kv_lengths(point)
    batch = len(lens)
    heads, kv_heads, dim = int(point["num_heads"]), int(point["num_kv_heads"]), int(point["head_dim"])
    page = int(point["page_size"])
    kv_dtype = torch_dtype(point["kv_dtype"])
    indptr, indices, last_page_len, total_pages = paged_layout(lens, page, PrefixGroups.of(point))
    wrapper = graph_mode_wrapper(
        workspace(ctx, nbytes=SGLANG_WORKSPACE_BYTES),
        _use_tensor_cores(point),
        indptr,
        indices,
        last_page_len,
    )
    wrapper.plan(
        indptr,
        indices,
        last_page_len,
        heads,
        kv_heads,
        dim,
        page,
        q_data_type=torch.bfloat16,
        kv_data_type=kv_dtype,
    )
    per_set = total_pages * 2 * page * kv_heads * dim * kv_dtype.itemsize + batch * heads * dim * 2
    sets = rotation_sets(per_set, ctx.l2_bytes)
    q_all = random_tensor((sets, batch, heads, dim), torch.bfloat16)
    kv_all = random_tensor((sets, total_pages, 2, page, kv_heads, dim), kv_dtype)
    out = torch.empty(batch, heads, dim, dtype=torch.bfloat16, device="cuda")

    def launcher(s: int) -> Any:
        q, kv = q_all[s], kv_all[s]
        return lambda: wrapper.run(q, kv, out=out)

    measured = time_graph_replay([launcher(s) for s in range(sets)], ctx.timing)
    return (
        None
        if measured is None
        else replace(measured, timing_method=f"{measured.timing_method} {GRAPH_PLAN}")
    )
