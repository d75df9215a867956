"""The calibration table schema: the contract between `simperf calibrate` (writer) and the perf database (reader).

One Parquet file per op, `calibration/<gpu>/<op>.parquet`, every row one measured point (or one recorded failure).
All tables share the same columns (shape columns that an op does not use are null), so one reader serves all.
An op's *key columns* must match a query exactly; its *axis columns* are interpolated over.
See docs/perfdb.md for the prose version of this file.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

SCHEMA_VERSION = 1

# Where a timing came from. Reports aggregate step time by these labels. "constant" marks the named constant costs
# of a step that are not kernel timings (CUDA-graph replay, eager launch gaps): never in a table, set in Overheads.
# "scaled_key": a key without a table of its own, priced from the nearest measured key of the op (nearest.py).
SOURCES: tuple[str, ...] = (
    "measured",
    "interpolated",
    "extrapolated",
    "roofline",
    "third_party",
    "constant",
    "scaled_key",
)
SOURCE_INDEX = {name: i for i, name in enumerate(SOURCES)}

# Integer shape columns; which ones an op uses is given by its OpSpec.
SHAPE_COLUMNS: tuple[str, ...] = (
    "batch",  # requests in the batch (attention), or bmm batch (heads)
    "q_len",  # query tokens per request
    "kv_len",  # KV tokens per request, including the new ones
    "num_heads",  # query heads per rank (as run: padded count where the backend pads)
    "num_kv_heads",
    "head_dim",  # q/k head dim
    "head_dim_v",
    "page_size",
    "m",  # GEMM rows / tokens
    "n",
    "k",
    "num_experts",  # total routed experts of the model
    "experts_per_rank",
    "topk",  # MoE top-k, or NSA index_topk
    "group_size",  # collective group size (GPUs)
    "message_bytes",  # collective payload per rank
)

STRING_KEY_COLUMNS: tuple[str, ...] = ("op", "backend", "dtype", "kv_dtype", "routing", "variant")

_SHARED_SUFFIX = "+shared"


def fused_shared_routing(routing: str, shared_experts: int) -> str:
    """The `routing` key of a MoE layer whose shared experts ride in it as always-chosen experts (SGLang's
    shared-expert fusion at EP 1): 'balanced' with 1 shared expert -> 'balanced+shared1'."""
    return f"{routing}{_SHARED_SUFFIX}{shared_experts}" if shared_experts else routing


def split_shared_routing(routing: str) -> tuple[str, int]:
    """Inverse of fused_shared_routing: ('balanced', 1) for 'balanced+shared1', (routing, 0) for a plain name."""
    base, sep, shared = routing.partition(_SHARED_SUFFIX)
    if not sep:
        return routing, 0
    if not shared.isdigit() or int(shared) < 1:
        raise ValueError(f"routing {routing!r}: expected '<routing>{_SHARED_SUFFIX}<N>' with N >= 1")
    return base, int(shared)


MEASUREMENT_COLUMNS: tuple[str, ...] = (
    "time_us",  # median of repeats
    "time_us_p10",
    "time_us_p90",
    "repeats",
    "timing_method",  # cuda_graph_replay | cuda_events | cuda_events_rotating | nccl_events
    "status",  # ok | failed | unsupported
    "error",  # reason when status != ok
    "sample",  # grid | heldout | ragged
    "kv_lens",  # JSON list of per-request KV lengths for ragged samples, else null
)

PROVENANCE_COLUMNS: tuple[str, ...] = (
    "gpu",  # catalogue key: h100 | h200 | b200 | ...
    "gpu_name",  # as the driver reports it
    "sm",  # compute capability, e.g. "9.0"
    "driver",
    "cuda",
    "torch",
    "flashinfer",
    "flash_mla",
    "deep_gemm",
    "date",  # ISO 8601 UTC of the measurement
    "sm_clock_mhz",  # clocks seen right after the point was timed
    "mem_clock_mhz",
    "source",  # "measured" or "third-party:<tool> <version>"
    "simperf_version",
)

_INT_COLUMNS = set(SHAPE_COLUMNS) | {"repeats", "sm_clock_mhz", "mem_clock_mhz"}
_FLOAT_COLUMNS = {"time_us", "time_us_p10", "time_us_p90"}


def arrow_schema() -> pa.Schema:
    fields = []
    for name in STRING_KEY_COLUMNS + SHAPE_COLUMNS + MEASUREMENT_COLUMNS + PROVENANCE_COLUMNS:
        if name in _INT_COLUMNS:
            fields.append(pa.field(name, pa.int64()))
        elif name in _FLOAT_COLUMNS:
            fields.append(pa.field(name, pa.float64()))
        else:
            fields.append(pa.field(name, pa.string()))
    return pa.schema(fields, metadata={"simperf_schema_version": str(SCHEMA_VERSION)})


ALL_COLUMNS: tuple[str, ...] = tuple(arrow_schema().names)


@dataclass(frozen=True)
class OpSpec:
    name: str
    key_columns: tuple[str, ...]  # must match exactly (besides "op")
    axis_columns: tuple[str, ...]  # interpolated over, in log space
    description: str


OP_SPECS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec(
            "attn_mla_decode",
            ("backend", "kv_dtype", "num_heads", "page_size", "q_len"),
            ("batch", "kv_len"),
            "MLA absorbed attention over a paged latent KV cache (576/512); q_len=1 decode, >1 for verify",
        ),
        OpSpec(
            "attn_mla_extend",
            ("backend", "kv_dtype", "num_heads", "page_size"),
            ("batch", "q_len", "kv_len"),
            "MLA absorbed attention for an extend batch (q_len new tokens over kv_len total per request)",
        ),
        OpSpec(
            "attn_mha_prefill",
            ("backend", "dtype", "num_heads", "num_kv_heads", "head_dim", "head_dim_v"),
            ("batch", "q_len", "kv_len"),
            "causal ragged prefill attention (MLA's MHA path 192/128, or GQA prefill)",
        ),
        OpSpec(
            "attn_gqa_decode",
            ("backend", "kv_dtype", "num_heads", "num_kv_heads", "head_dim", "page_size"),
            ("batch", "kv_len"),
            "GQA paged decode attention for dense models",
        ),
        OpSpec(
            "attn_nsa_prefill",
            ("backend", "kv_dtype", "num_heads", "topk"),
            ("m", "kv_len"),
            "NSA sparse prefill: m query tokens, each attending topk selected tokens of kv_len",
        ),
        OpSpec(
            "attn_nsa_decode",
            ("backend", "kv_dtype", "num_heads", "topk", "page_size"),
            ("batch", "kv_len"),
            "NSA sparse decode over the paged KV layout of the backend",
        ),
        OpSpec(
            "nsa_indexer",
            ("backend", "variant", "num_heads", "head_dim", "topk"),
            ("m", "kv_len"),
            "NSA lightning indexer: fp8 MQA logits over kv_len plus top-k (variant: prefill | decode)",
        ),
        OpSpec("gemm", ("backend", "dtype", "n", "k"), ("m",), "dense linear layer [m,k] x [k,n]"),
        OpSpec("bmm", ("backend", "dtype", "batch", "n", "k"), ("m",), "batched matmul (MLA w_kc / w_vc)"),
        OpSpec(
            "moe",
            ("backend", "dtype", "num_experts", "experts_per_rank", "topk", "n", "k", "routing"),
            ("m",),
            "routed-expert compute of one MoE layer on one rank (m tokens before routing; n = expert intermediate per rank)",
        ),
        OpSpec(
            "elementwise",
            ("backend", "variant", "n"),
            ("m",),
            "memory-bound per-token kernels (variant: rmsnorm | silu_mul | rope | ...), width n",
        ),
        OpSpec("allreduce", ("backend", "dtype", "group_size"), ("message_bytes",), "all-reduce"),
        OpSpec("allgather", ("backend", "dtype", "group_size"), ("message_bytes",), "all-gather"),
        OpSpec("reducescatter", ("backend", "dtype", "group_size"), ("message_bytes",), "reduce-scatter"),
        OpSpec("alltoall", ("backend", "dtype", "group_size"), ("message_bytes",), "all-to-all"),
    )
}


def table_path_name(op: str) -> str:
    """File name of an op's table inside calibration/<gpu>/."""
    if op not in OP_SPECS:
        raise KeyError(f"unknown op {op!r}; known: {sorted(OP_SPECS)}")
    return f"{op}.parquet"


_FAMILIES = {
    "gemm": "gemm",
    "bmm": "gemm",
    "moe": "moe",
    "elementwise": "elementwise",
    "allreduce": "comm",
    "allgather": "comm",
    "reducescatter": "comm",
    "alltoall": "comm",
}


def op_family(op: str) -> str:
    """attention (attn_* and the NSA indexer), gemm (gemm, bmm), moe, elementwise, comm (collectives)."""
    return _FAMILIES.get(op, "attention" if op.startswith(("attn_", "nsa_")) else "other")
