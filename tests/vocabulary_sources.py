"""What simperf queries and writes as calibration-table key values: the sources of simperf/perfdb/vocabulary.py's
KEY_VOCABULARY (perfdb sits below models and calibrate, so it holds the result and this computes it for the test)."""

from __future__ import annotations

from simperf.perfdb.schema import OP_SPECS
from simperf.perfdb.vocabulary import VOCABULARY_COLUMNS

_ATTENTION_OPS = ("attn_mla_decode", "attn_mla_extend", "attn_nsa_decode", "attn_nsa_prefill")
_COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall")

# KV dtypes: the scenario's kv_cache_dtype (bf16 | fp8_e4m3, "auto" resolved to one of them) through
# kernels.kv_dtype_names, plus fp16, a KV dtype calibrate's workers build (calibrate/backends/common.py torch_dtype)
_KV_DTYPES = ("bf16", "fp16", "fp8", "fp8_e4m3")

# Names only third-party tables hold: AIConfigurator's dtype names that the importer passes through unmapped
# (_dtype_name), as the shipped b200/h200 tables hold them.
IMPORTED: dict[tuple[str, str], tuple[str, ...]] = {
    ("bmm", "dtype"): ("fp8",),
    ("moe", "dtype"): ("fp8", "fp8_block", "int4_wo", "nvfp4", "w4a16_mxfp4", "w4a8_mxfp4_mxfp8"),
}


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
    for (op, column), values in IMPORTED.items():
        add(op, column, *values)
    return out


def computed_vocabulary() -> dict[str, dict[str, frozenset[str]]]:
    """op -> string key column -> the union of what simperf queries and writes ('routing' left to its pattern)."""
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


def literal(vocabulary: dict[str, dict[str, frozenset[str]]]) -> str:
    """KEY_VOCABULARY as Python source, to paste into simperf/perfdb/vocabulary.py."""
    lines = ["KEY_VOCABULARY: dict[str, dict[str, frozenset[str]]] = {"]
    for op in sorted(vocabulary):
        lines.append(f"    {op!r}: {{")
        for column in sorted(vocabulary[op]):
            values = ", ".join(repr(v) for v in sorted(vocabulary[op][column]))
            lines.append(f"        {column!r}: frozenset({{{values}}}),")
        lines.append("    },")
    return "\n".join([*lines, "}"])
