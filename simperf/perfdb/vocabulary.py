"""The key values a calibration table may hold, per op and string key column.

A row keyed with a well-formed but unknown value (dtype 'bf17', backend 'flashinfr', variant 'rmsnrom') loaded
without a word, matched no query, and the key it was meant to time was priced from another key, another GPU or the
roofline. PerfDB.load refuses such a row (db.check_key_vocabulary), naming the nearest allowed values.

The vocabulary is the union of
  - what simperf queries: the candidate keys of simperf/models/kernels.py and models/ops.py, whose attention
    backends come from the capability table (simperf/capabilities.py), computed here by calling the same functions;
  - what `simperf calibrate` writes: the (op, backend) pairs of its worker groups (calibrate/backends/__init__.py)
    and the dtypes, variants and routings of its grid (calibrate/grid.py);
  - what the AIConfigurator importer writes (perfdb/importers/aiconfigurator_tables.py): its backend maps, and the
    dtype and routing names it passes through from AIConfigurator's tables as the shipped tables
    (calibration/h200, calibration/b200) hold them.
A value none of them names is a typo, or a kernel simperf would never ask for: adding a kernel means adding its
name where it is queried or written (and, for a name only a third-party table holds, to _IMPORTED below).
"""

from __future__ import annotations

import difflib
import functools
import re

from simperf.perfdb.schema import OP_SPECS, STRING_KEY_COLUMNS, split_shared_routing

# The string key columns a vocabulary covers ("op" is checked against OP_SPECS).
VOCABULARY_COLUMNS: tuple[str, ...] = tuple(c for c in STRING_KEY_COLUMNS if c != "op")

_ATTENTION_OPS = ("attn_mla_decode", "attn_mla_extend", "attn_nsa_decode", "attn_nsa_prefill")
_COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall")

# KV dtypes: the scenario's kv_cache_dtype (bf16 | fp8_e4m3, "auto" resolved to one of them) through
# kernels.kv_dtype_names, plus fp16, a KV dtype calibrate's workers build (calibrate/backends/common.py torch_dtype)
_KV_DTYPES = ("bf16", "fp16", "fp8", "fp8_e4m3")

# Names only third-party tables hold: AIConfigurator's dtype names that the importer passes through unmapped
# (_dtype_name), as the shipped b200/h200 tables hold them.
_IMPORTED: dict[tuple[str, str], tuple[str, ...]] = {
    ("bmm", "dtype"): ("fp8",),
    ("moe", "dtype"): ("fp8", "fp8_block", "int4_wo", "nvfp4", "w4a16_mxfp4", "w4a8_mxfp4_mxfp8"),
}

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


def _queried() -> dict[tuple[str, str], set[str]]:
    """(op, column) -> every value of the candidate keys simperf builds for any backend, family and GPU."""
    from simperf import capabilities
    from simperf.models import kernels

    out: dict[tuple[str, str], set[str]] = {}

    def add(op: str, column: str, *values: str) -> None:
        out.setdefault((op, column), set()).update(values)

    def add_keys(op: str, keys: tuple[kernels.Key, ...]) -> None:
        for key in keys:
            for column, value in key:
                if column in VOCABULARY_COLUMNS:
                    add(op, column, value)

    kv_dtypes = {name for kv in ("bf16", "fp8_e4m3") for name in kernels.kv_dtype_names(kv)}
    for sm_major in (9, 10):
        for name in capabilities.BACKENDS:
            tables = kernels.table_attention_backends(name, sm_major)
            for op in _ATTENTION_OPS:
                add(op, "backend", *tables)
            add("attn_gqa_decode", "backend", *capabilities.gqa_decode_tables(name, sm_major))
            for family in capabilities.FAMILIES:
                add("attn_mha_prefill", "backend", *capabilities.mha_prefill_tables(name, family, sm_major))
        for weight_dtype in ("bf16", "fp8"):
            for default_tiles in (False, True):
                for shared in (0, 1):
                    add_keys(
                        "moe",
                        kernels.moe_keys(weight_dtype, 8, 8, 2, 1, 1, shared, sm_major, default_tiles),
                    )
    # ops.attention_ops: MLA extend falls back to flashinfer's kernels; the NSA indexer is DeepGEMM's
    add("attn_mla_extend", "backend", "flashinfer_fa3", "flashinfer_fa2")
    for op in (*_ATTENTION_OPS, "attn_gqa_decode"):
        add(op, "kv_dtype", *kv_dtypes)
    add("attn_mha_prefill", "dtype", "bf16")
    add("nsa_indexer", "backend", "deep_gemm")
    add("nsa_indexer", "variant", "prefill", "decode")
    for weight_dtype in ("bf16", "fp8"):
        for deep_gemm in (False, True):
            add_keys("gemm", kernels.gemm_keys(weight_dtype, 1, 1, deep_gemm))
    add_keys("bmm", kernels.bmm_keys(1, 1, 1))
    # ops.py's norms and activations, the fp8 activation quantisation, costmodel/step.py's KV layout conversion
    for variant in ("rmsnorm", "add_rmsnorm", "rope", "silu_mul", "fp8_group_quant", "kv_convert"):
        add_keys("elementwise", kernels.elementwise_keys(variant, 1))
    for op in _COLLECTIVES:
        add_keys(op, kernels.collective_keys(op, 2))
    return out


def _written() -> dict[tuple[str, str], set[str]]:
    """(op, column) -> the values `simperf calibrate` and the AIConfigurator importer write."""
    from simperf.calibrate import grid
    from simperf.calibrate.backends import COMM_BACKEND, WORKER_GROUPS
    from simperf.perfdb.importers import aiconfigurator_tables as aic

    out: dict[tuple[str, str], set[str]] = {}

    def add(op: str, column: str, *values: str) -> None:
        out.setdefault((op, column), set()).update(values)

    for group in WORKER_GROUPS:
        for op, backend in group.members:
            add(op, "backend", backend)
    for op in _COLLECTIVES:
        add(op, "backend", COMM_BACKEND)
        add(op, "dtype", "bf16")
    for op in _ATTENTION_OPS + ("attn_gqa_decode",):
        add(op, "kv_dtype", *_KV_DTYPES)
    add("gemm", "dtype", *grid.GEMM_DTYPE_BACKENDS)
    add("bmm", "dtype", "bf16")
    add("moe", "dtype", *grid.DEFAULT_GRID["moe"]["dtypes"], "fp8_block")  # fp8_block: moe_sglang's grids
    elementwise = {k for k in grid.DEFAULT_GRID["elementwise"] if k not in ("m", "enabled")}
    add("elementwise", "variant", *elementwise)
    add("nsa_indexer", "variant", *grid.DEFAULT_GRID["nsa_indexer"]["variants"])
    # the importer
    for op in ("attn_mla_decode", "attn_mla_extend"):
        add(op, "backend", *aic.MLA_DECODE_BACKENDS.values())
    add("attn_mha_prefill", "backend", "trtllm")
    add("attn_mha_prefill", "dtype", "bf16")
    for backend, dtype in aic.GEMM_BACKENDS.values():
        add("gemm", "backend", backend)
        add("gemm", "dtype", dtype)
    add("bmm", "backend", *aic.BMM_BACKENDS.values())
    add("moe", "backend", *aic.MOE_BACKENDS.values())
    add("allreduce", "backend", *aic.CUSTOM_ALLREDUCE_BACKENDS.values())
    for op in aic.NCCL_OPS.values():
        add(op, "dtype", *(dtype for dtype, _ in aic.NCCL_DTYPES.values()))
    for (op, column), values in _IMPORTED.items():
        add(op, column, *values)
    return out


@functools.cache
def key_vocabulary() -> dict[str, dict[str, frozenset[str]]]:
    """op -> string key column -> the values a table may hold there ('routing' is a pattern: see routing_ok)."""
    merged: dict[tuple[str, str], set[str]] = {}
    for source in (_queried(), _written()):
        for where, values in source.items():
            merged.setdefault(where, set()).update(values)
    vocabulary: dict[str, dict[str, frozenset[str]]] = {}
    for op, spec in OP_SPECS.items():
        columns = {c: frozenset(merged.get((op, c), ())) for c in spec.key_columns if c in VOCABULARY_COLUMNS}
        columns.pop("routing", None)
        vocabulary[op] = columns
    return vocabulary


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
