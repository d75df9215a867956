"""Validation and normalisation of an op's exact key (the OpSpec.key_columns a caller passes) and its axes."""

from __future__ import annotations

from collections.abc import Mapping

from simperf.perfdb.schema import OP_SPECS, SHAPE_COLUMNS, OpSpec

KeyTuple = tuple[
    object, ...
]  # values in OpSpec.key_columns order; ints for shape columns, str for the others

# Axes along which more work never takes less time; the grid is made monotone along these (docs/perfdb.md).
# Causal extend attention is gridded over prefix + 1 instead of kv_len (perfdb.db explains why).
PREFIX_AXIS = "prefix_plus_1"
MONOTONE_AXES: frozenset[str] = frozenset({"batch", "kv_len", "q_len", "m", "message_bytes", PREFIX_AXIS})
# GEMMs are not made monotone in m: the GEMM libraries choose their kernel by M, and the chosen kernel is at times
# slower at fewer rows, so a running max along m overruled measurements that repeat. DeepGEMM's block-fp8 GEMM
# picks its tiles by M: a served Qwen3-8B-FP8 decode (SGLang 0.5.17, H100;
# groundtruth/forwards/h100/served-qwen3-8b-fp8-decode) ran its down projection in 23.8 us at one row and 21.8 us
# at sixteen, as the table measures it (25.9 and 20.9 us). cuBLAS (bf16) and cuBLASLt (fp8) do the same: ~10% of
# their grid rows are > 5% slower than a larger M of the same key; timed again (lightest first, 2026-11-27) they
# repeat, and the held-out off-grid GEMMs are priced 4.3% -> 1.6% (H100) and 6.1% -> 1.9% (H200) median without
# the running max (docs/perfdb.md "GEMM M at the tile boundaries").
_NOT_MONOTONE_IN_M_OPS = frozenset({"gemm"})


def monotone_axes(op: str, key: Mapping[str, object]) -> frozenset[str]:
    """The axes an op's grid is made monotone along, for this key (MONOTONE_AXES, less m for GEMMs, whose
    libraries pick kernels by M that are at times slower at fewer rows)."""
    if op in _NOT_MONOTONE_IN_M_OPS:
        return MONOTONE_AXES - {"m"}
    return MONOTONE_AXES


_INT_COLUMNS = frozenset(SHAPE_COLUMNS)


class PerfDBError(ValueError):
    """A caller asked the perf database something it cannot answer (unknown op, malformed key or axes)."""


def gqa_tensor_cores(key: Mapping[str, object]) -> bool:
    """Whether flashinfer's GQA decode runs its tensor-core (prefill-style) kernel for this key: SGLang 0.5.17
    `should_use_tensor_core` — an fp8 KV cache, or 4+ q heads per KV head (as calibrate/backends/gqa_flashinfer.py
    times it; the key's kv_dtype and head counts say which kernel a row measured)."""
    kv_dtype, heads, kv_heads = str(key["kv_dtype"]), int(key["num_heads"]), int(key["num_kv_heads"])  # type: ignore[call-overload]
    return kv_dtype.startswith("fp8") or heads // max(kv_heads, 1) >= 4


def op_spec(op: str) -> OpSpec:
    try:
        return OP_SPECS[op]
    except KeyError:
        raise PerfDBError(f"unknown op {op!r}; known ops: {', '.join(sorted(OP_SPECS))}") from None


def normalize_key(spec: OpSpec, key: Mapping[str, object]) -> KeyTuple:
    """The caller's key as a tuple in key_columns order; raises naming missing or unexpected columns."""
    expected = set(spec.key_columns)
    given = set(key)
    missing = sorted(expected - given)
    extra = sorted(given - expected)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {missing}")
        if extra:
            parts.append(f"unexpected {extra}")
        raise PerfDBError(
            f"key for op {spec.name!r}: {'; '.join(parts)} (expected exactly {list(spec.key_columns)})"
        )
    return tuple(_normalize_value(spec, column, key[column]) for column in spec.key_columns)


def _normalize_value(spec: OpSpec, column: str, value: object) -> object:
    if value is None:
        return None
    if column in _INT_COLUMNS:
        try:
            as_float = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise PerfDBError(
                f"key column {column!r} of op {spec.name!r} must be an integer, got {value!r}"
            ) from None
        if not as_float.is_integer():
            raise PerfDBError(f"key column {column!r} of op {spec.name!r} must be an integer, got {value!r}")
        return int(as_float)
    return str(value)


def key_dict(spec: OpSpec, key: KeyTuple) -> dict[str, object]:
    return dict(zip(spec.key_columns, key, strict=True))


def format_key(spec: OpSpec, key: KeyTuple) -> str:
    return ", ".join(f"{column}={value}" for column, value in zip(spec.key_columns, key, strict=True))


def check_axes(spec: OpSpec, axes: Mapping[str, object]) -> None:
    if set(axes) != set(spec.axis_columns):
        missing = sorted(set(spec.axis_columns) - set(axes))
        extra = sorted(set(axes) - set(spec.axis_columns))
        raise PerfDBError(
            f"axes for op {spec.name!r}: missing {missing}, unexpected {extra} (expected {list(spec.axis_columns)})"
        )
