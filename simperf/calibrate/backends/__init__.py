"""Which worker module measures which (op, backend) pair. No torch here: the runner imports this.

A *worker group* is the unit of isolation: one subprocess per group, restarted after a crash. Each group is
one module under simperf.calibrate.backends with a `run_point(point, ctx)` function (and an optional
`warm_up(points, ctx)` that JIT-compiles what the group will need).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkerGroup:
    name: str
    module: str
    members: tuple[tuple[str, str], ...]  # (op, table backend label)
    requires_sm_major: int | None = None  # e.g. 10: the kernels exist only on SM100-family GPUs
    jit: bool = False  # compiles modules at first use (flashinfer): worth precompiling in parallel
    needs_gpu: bool = True  # False only for the CPU test stand-in (its worker skips importing torch)


_PKG = "simperf.calibrate.backends"

WORKER_GROUPS: tuple[WorkerGroup, ...] = (
    WorkerGroup(
        "mla_flashinfer",
        f"{_PKG}.mla_flashinfer",
        (
            ("attn_mla_decode", "flashinfer_fa2"),
            ("attn_mla_decode", "flashinfer_fa3"),
            ("attn_mla_extend", "flashinfer_fa2"),
            ("attn_mla_extend", "flashinfer_fa3"),
        ),
        jit=True,
    ),
    WorkerGroup(
        "flashmla",
        f"{_PKG}.flashmla",
        (
            ("attn_mla_decode", "flashmla"),
            ("attn_nsa_prefill", "flashmla_sparse"),
            ("attn_nsa_decode", "flashmla_kv"),
        ),
    ),
    WorkerGroup(
        "gqa_flashinfer",
        f"{_PKG}.gqa_flashinfer",
        (("attn_gqa_decode", "flashinfer"),),
        jit=True,
    ),
    WorkerGroup(
        "prefill_flashinfer",
        f"{_PKG}.prefill_flashinfer",
        (("attn_mha_prefill", "flashinfer_fa3"), ("attn_mha_prefill", "flashinfer_fa2")),
        jit=True,
    ),
    # SGLang's own FA3 (sgl-kernel flash_attn_with_kvcache, as its `fa3` backend calls it); needs SGLang's kit
    WorkerGroup(
        "fa3_sgl",
        f"{_PKG}.fa3_sgl",
        (("attn_gqa_decode", "sgl_fa3"), ("attn_mha_prefill", "sgl_fa3")),
    ),
    WorkerGroup(
        "sm100",
        f"{_PKG}.sm100",
        (
            ("attn_mla_decode", "trtllm_gen"),
            ("attn_mla_decode", "cutlass"),
            ("attn_nsa_decode", "trtllm"),
            ("attn_mha_prefill", "trtllm"),
        ),
        requires_sm_major=10,
    ),
    WorkerGroup("nsa_indexer", f"{_PKG}.nsa_indexer", (("nsa_indexer", "deep_gemm"),)),
    WorkerGroup(
        "gemm",
        f"{_PKG}.gemm",
        (
            ("gemm", "torch"),
            ("gemm", "torch_scaled_mm"),
            ("gemm", "deep_gemm"),
            ("bmm", "torch"),
        ),
    ),
    WorkerGroup(
        "moe",
        f"{_PKG}.moe",
        (("moe", "torch_grouped_mm"), ("moe", "torch_loop")),
    ),
    # simperf's Triton fused MoE (SGLang's kernel structure); jit: warm-up compiles one point per config.
    WorkerGroup(
        "moe_triton",
        f"{_PKG}.moe_triton",
        (("moe", "triton_fused_moe"), ("moe", "triton_fused_moe_default")),
        jit=True,
    ),
    # SGLang's own Triton fused MoE with the tiles SGLang picks (needs SGLang's kit on PYTHONPATH)
    WorkerGroup("moe_sglang", f"{_PKG}.moe_sglang", (("moe", "sglang_fused_moe"),)),
    WorkerGroup("elementwise", f"{_PKG}.elementwise", (("elementwise", "flashinfer"),), jit=True),
    # fp8 activation quantisation before fp8 linears (simperf's Triton per-token-group kernel)
    WorkerGroup("quant_triton", f"{_PKG}.quant_triton", (("elementwise", "triton"),), jit=True),
    # CPU-only stand-in used by the tests (sleeps, raises or crashes on chosen points).
    WorkerGroup("fake", f"{_PKG}.fake", (("gemm", "fake"), ("elementwise", "fake")), needs_gpu=False),
)

_BY_MEMBER = {member: group for group in WORKER_GROUPS for member in group.members}
_BY_NAME = {group.name: group for group in WORKER_GROUPS}


def group_for(op: str, backend: str) -> WorkerGroup:
    try:
        return _BY_MEMBER[(op, backend)]
    except KeyError:
        raise KeyError(f"no worker measures op={op!r} backend={backend!r}") from None


def group_by_name(name: str) -> WorkerGroup:
    return _BY_NAME[name]


# the collectives (allreduce, ...) are timed by the runner's own NCCL launcher, no worker group: their backend
# label is also the name their points run under (runner.py)
COMM_BACKEND = "nccl"


def backend_selectors() -> tuple[list[str], list[str]]:
    """What --backends accepts: (table backend labels, worker group names)."""
    labels = sorted({backend for group in WORKER_GROUPS for _, backend in group.members} | {COMM_BACKEND})
    return labels, sorted(_BY_NAME)


def backend_matches(selector: str, op: str, backend: str) -> bool:
    """A --backends selector names a table backend label or a worker group."""
    if selector == backend:
        return True
    # a collective's point has no worker group: group_for raised KeyError for it (--backends gemm on 2+ GPUs)
    group = _BY_MEMBER.get((op, backend))
    return group is not None and selector == group.name
