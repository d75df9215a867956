"""The key values a calibration table may hold, per op and string key column.

A row keyed with a well-formed but unknown value (dtype 'bf17', backend 'flashinfr', variant 'rmsnrom') loaded
without a word, matched no query, and the key it was meant to time was priced from another key, another GPU or the
roofline. PerfDB.load refuses such a row (db.check_key_vocabulary), naming the nearest allowed values.

The vocabulary is the union of
  - what simperf queries: the candidate keys of simperf/models/kernels.py and models/ops.py, whose attention
    backends come from the capability table (simperf/capabilities.py);
  - what `simperf calibrate` writes: the (op, backend) pairs of its worker groups (calibrate/backends/__init__.py)
    and the dtypes, variants and routings of its grid (calibrate/grid.py);
  - what the AIConfigurator importer writes (perfdb/importers/aiconfigurator_tables.py): its backend maps, and the
    dtype and routing names it passes through from AIConfigurator's tables as the shipped tables
    (calibration/h200, calibration/b200) hold them.
A value none of them names is a typo, or a kernel simperf would never ask for. KEY_VOCABULARY below is that union,
computed by tests/vocabulary_sources.py (which calls the same functions); adding a kernel means adding its name where
it is queried or written (for a name only a third-party table holds, to IMPORTED there), then pasting the literal the
failing test prints.
"""

from __future__ import annotations

import difflib
import re

from simperf.perfdb.schema import OP_SPECS, STRING_KEY_COLUMNS, split_shared_routing

# The string key columns a vocabulary covers ("op" is checked against OP_SPECS).
VOCABULARY_COLUMNS: tuple[str, ...] = tuple(c for c in STRING_KEY_COLUMNS if c != "op")


# MoE routing: a base distribution, optionally with fused shared experts (schema.fused_shared_routing). simperf
# queries 'balanced'; calibrate routes 'balanced' and 'zipf' (calibrate/grid.py CHOICES); AIConfigurator's tables
# hold 'balanced' and 'power_law_<alpha>' (its `distribution` column, passed through by the importer).
ROUTING_BASES: tuple[str, ...] = ("balanced", "zipf")
_POWER_LAW = re.compile(r"power_law_\d+(\.\d+)?")
# spelled-out examples for the nearest-value hint (the pattern admits any alpha)
_ROUTING_EXAMPLES = (
    "balanced",
    "zipf",
    "power_law_1.01",
    "power_law_1.2",
    "balanced+shared1",
    "zipf+shared1",
)


# Generated from what simperf queries and writes (tests/vocabulary_sources.py, whose test fails with the new literal
# when the two drift apart): perfdb is below models and calibrate, so it holds the result, not the computation.
KEY_VOCABULARY: dict[str, dict[str, frozenset[str]]] = {
    "allgather": {
        "backend": frozenset({"nccl"}),
        "dtype": frozenset({"bf16", "int8"}),
    },
    "allreduce": {
        "backend": frozenset({"nccl", "sglang_custom_ar", "sglang_custom_ar_eager"}),
        "dtype": frozenset({"bf16", "int8"}),
    },
    "alltoall": {
        "backend": frozenset({"nccl"}),
        "dtype": frozenset({"bf16", "int8"}),
    },
    "attn_gqa_decode": {
        "backend": frozenset(
            {
                "cutlass",
                "cutlass_mla",
                "flashinfer",
                "flashinfer_fa2",
                "flashinfer_fa3",
                "flashmla",
                "flashmla_kv",
                "flashmla_sparse",
                "sgl_fa3",
                "trtllm",
                "trtllm_gen",
                "trtllm_mla",
            }
        ),
        "kv_dtype": frozenset({"bf16", "fp16", "fp8", "fp8_e4m3"}),
    },
    "attn_mha_prefill": {
        "backend": frozenset({"flashinfer_fa2", "flashinfer_fa3", "sgl_fa3", "trtllm"}),
        "dtype": frozenset({"bf16"}),
    },
    "attn_mla_decode": {
        "backend": frozenset(
            {
                "cutlass",
                "cutlass_mla",
                "fa3",
                "flashinfer_fa2",
                "flashinfer_fa3",
                "flashmla",
                "flashmla_kv",
                "flashmla_sparse",
                "sgl_fa3",
                "trtllm",
                "trtllm_gen",
                "trtllm_mla",
            }
        ),
        "kv_dtype": frozenset({"bf16", "fp16", "fp8", "fp8_e4m3"}),
    },
    "attn_mla_extend": {
        "backend": frozenset(
            {
                "cutlass",
                "cutlass_mla",
                "fa3",
                "flashinfer_fa2",
                "flashinfer_fa3",
                "flashmla",
                "flashmla_kv",
                "flashmla_sparse",
                "sgl_fa3",
                "trtllm",
                "trtllm_gen",
                "trtllm_mla",
            }
        ),
        "kv_dtype": frozenset({"bf16", "fp16", "fp8", "fp8_e4m3"}),
    },
    "attn_nsa_decode": {
        "backend": frozenset(
            {
                "cutlass",
                "cutlass_mla",
                "flashinfer_fa2",
                "flashinfer_fa3",
                "flashmla",
                "flashmla_kv",
                "flashmla_sparse",
                "sgl_fa3",
                "trtllm",
                "trtllm_gen",
                "trtllm_mla",
            }
        ),
        "kv_dtype": frozenset({"bf16", "fp16", "fp8", "fp8_e4m3"}),
    },
    "attn_nsa_prefill": {
        "backend": frozenset(
            {
                "cutlass",
                "cutlass_mla",
                "flashinfer_fa2",
                "flashinfer_fa3",
                "flashmla",
                "flashmla_kv",
                "flashmla_sparse",
                "sgl_fa3",
                "trtllm",
                "trtllm_gen",
                "trtllm_mla",
            }
        ),
        "kv_dtype": frozenset({"bf16", "fp16", "fp8", "fp8_e4m3"}),
    },
    "bmm": {
        "backend": frozenset({"sgl_kernel", "torch"}),
        "dtype": frozenset({"bf16", "fp8"}),
    },
    "elementwise": {
        "backend": frozenset({"fake", "flashinfer", "torch", "triton"}),
        "variant": frozenset({"add_rmsnorm", "fp8_group_quant", "kv_convert", "rmsnorm", "rope", "silu_mul"}),
    },
    "gemm": {
        "backend": frozenset(
            {"deep_gemm", "fake", "flashinfer_cutedsl", "sgl_kernel", "torch", "torch_scaled_mm"}
        ),
        "dtype": frozenset({"bf16", "fp8_block", "fp8_rowwise", "nvfp4"}),
    },
    "moe": {
        "backend": frozenset(
            {
                "flashinfer_trtllm",
                "flashinfer_trtllm_mxfp4",
                "sglang_fused_moe",
                "torch_grouped_mm",
                "torch_loop",
                "triton_fused_moe",
                "triton_fused_moe_default",
            }
        ),
        "dtype": frozenset(
            {"bf16", "fp8", "fp8_block", "fp8_rowwise", "int4_wo", "nvfp4", "w4a16_mxfp4", "w4a8_mxfp4_mxfp8"}
        ),
    },
    "nsa_indexer": {
        "backend": frozenset({"deep_gemm"}),
        "variant": frozenset({"decode", "prefill"}),
    },
    "reducescatter": {
        "backend": frozenset({"nccl"}),
        "dtype": frozenset({"bf16", "int8"}),
    },
}


def key_vocabulary() -> dict[str, dict[str, frozenset[str]]]:
    """op -> string key column -> the values a table may hold there ('routing' is a pattern: see routing_ok)."""
    return KEY_VOCABULARY


def routing_ok(value: str) -> bool:
    """A MoE routing name: balanced | zipf | power_law_<alpha>, optionally '+shared<N>'."""
    try:
        base, _ = split_shared_routing(value)
    except ValueError:
        return False
    return base in ROUTING_BASES or _POWER_LAW.fullmatch(base) is not None


def allowed(op: str, column: str, value: str) -> bool:
    """A table row of `op` may hold `value` in key column `column` (True for a column that is not its key)."""
    if column == "routing" and "routing" in OP_SPECS[op].key_columns:
        return routing_ok(value)
    values = key_vocabulary().get(op, {}).get(column)
    return values is None or value in values


def allowed_values(op: str, column: str) -> tuple[str, ...]:
    """The allowed values, sorted (for routing: spelled-out examples of its pattern)."""
    if column == "routing":
        return _ROUTING_EXAMPLES
    return tuple(sorted(key_vocabulary().get(op, {}).get(column, ())))


def nearest_allowed(op: str, column: str, value: str, count: int = 3) -> list[str]:
    """The allowed values closest to `value` in spelling (difflib), best first; may be empty."""
    return difflib.get_close_matches(value, allowed_values(op, column), n=count, cutoff=0.5)


def describe_refusal(op: str, column: str, value: str) -> str:
    """Why `value` is refused, with the nearest allowed values (or all of them where none is near)."""
    near = nearest_allowed(op, column, value)
    if column == "routing":
        options = "balanced, zipf or power_law_<alpha>, optionally +shared<N>"
    else:
        options = ", ".join(allowed_values(op, column))
    hint = f"nearest: {', '.join(near)}; " if near else ""
    return f"not a {column} simperf knows for {op} ({hint}allowed: {options})"
