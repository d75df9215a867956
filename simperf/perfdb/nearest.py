"""A key without a table of its own: the nearest measured key of the same op, scaled by the roofline ratio.

SGLang runs keys no calibration can list in full (page sizes, head counts per TP degree, KV dtypes, GEMM shapes of
every model). Before, such a key fell to the bare roofline, 55-65% too fast for small decode kernels whose real
time is mostly latency (issue 19). Now a key without rows takes the measured key of the same op that is nearest
(`key_distance`), and its time there is scaled by roofline(key) / roofline(nearest key) at the same axes: what the
key changes (heads, pages, bytes per element, GEMM n and k) moves the time as it moves the work, while the
latency and efficiency the nearest key measured carry over. The answer is clamped below by the op's floor on this
GPU: the smallest time any measured row of that op and backend took (`measured_floors`; the rows at the smallest
shapes of the shipped tables, which are measured), because no kernel of that backend ran faster than that.

Distances: a numeric key column costs its weight per octave of difference, a string column its weight when it
differs, `fixed` columns must match. Ties go to the key that sorts first. Collectives are not handled here (their
group sizes are bridged by the alpha-beta model, alphabeta.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from simperf.perfdb.keys import gqa_tensor_cores


@dataclass(frozen=True)
class KeyPolicy:
    numeric: Mapping[str, float]  # column -> cost per octave
    strings: Mapping[str, float]  # column -> cost when different
    fixed: tuple[str, ...] = ()  # columns that must match exactly
    extra: tuple[str, ...] = field(default=())  # named extra penalties (see _extra_penalty)


_BACKEND = 8.0  # another kernel altogether: only when no key of this backend exists
_DTYPE = 6.0  # another GEMM/MoE data type (another kernel family)
_KV_DTYPE = 3.0  # another KV-cache element type: the roofline ratio carries the bytes, not the dequantisation
_PAGE = 0.25  # page sizes change index loads, little else

POLICIES: dict[str, KeyPolicy] = {
    "attn_mla_decode": KeyPolicy(
        {"num_heads": 1.0, "page_size": _PAGE, "q_len": 1.5}, {"backend": _BACKEND, "kv_dtype": _KV_DTYPE}
    ),
    "attn_mla_extend": KeyPolicy(
        {"num_heads": 1.0, "page_size": _PAGE}, {"backend": _BACKEND, "kv_dtype": _KV_DTYPE}
    ),
    "attn_mha_prefill": KeyPolicy(
        {"num_heads": 1.0, "num_kv_heads": 1.0, "head_dim": 4.0, "head_dim_v": 4.0},
        {"backend": _BACKEND, "dtype": _KV_DTYPE},
    ),
    "attn_gqa_decode": KeyPolicy(
        {"num_heads": 1.0, "num_kv_heads": 1.0, "head_dim": 4.0, "page_size": _PAGE},
        {"backend": _BACKEND, "kv_dtype": _KV_DTYPE},
        extra=("tensor_cores",),
    ),
    "attn_nsa_prefill": KeyPolicy(
        {"num_heads": 1.0, "topk": 2.0}, {"backend": _BACKEND, "kv_dtype": _KV_DTYPE}
    ),
    "attn_nsa_decode": KeyPolicy(
        {"num_heads": 1.0, "topk": 2.0, "page_size": _PAGE}, {"backend": _BACKEND, "kv_dtype": _KV_DTYPE}
    ),
    "nsa_indexer": KeyPolicy(
        {"num_heads": 1.0, "head_dim": 2.0, "topk": 2.0}, {"backend": _BACKEND}, fixed=("variant",)
    ),
    "gemm": KeyPolicy({"n": 1.0, "k": 1.0}, {"backend": 4.0, "dtype": _DTYPE}),
    "bmm": KeyPolicy({"batch": 1.0, "n": 1.0, "k": 1.0}, {"backend": _BACKEND, "dtype": _DTYPE}),
    "moe": KeyPolicy(
        {"num_experts": 1.0, "experts_per_rank": 1.0, "topk": 1.0, "n": 1.0, "k": 1.0},
        {"backend": _BACKEND, "dtype": _DTYPE, "routing": 2.0},
    ),
    "elementwise": KeyPolicy({"n": 1.0}, {"backend": _BACKEND}, fixed=("variant",)),
}

# flashinfer's GQA decode runs another kernel (tensor-core prefill-style) for an fp8 cache or a group of 4+ q heads
# per kv head: SGLang 0.5.17 should_use_tensor_core (calibrate/backends/gqa_flashinfer.py).
_TENSOR_CORE_MISMATCH = 2.0


def _extra_penalty(name: str, wanted: Mapping[str, object], other: Mapping[str, object]) -> float:
    if name == "tensor_cores":
        return _TENSOR_CORE_MISMATCH if gqa_tensor_cores(wanted) != gqa_tensor_cores(other) else 0.0
    raise ValueError(f"unknown key penalty {name!r}")


def key_distance(op: str, wanted: Mapping[str, object], other: Mapping[str, object]) -> float | None:
    """How far `other` is from `wanted` (0 = the same key); None when they cannot stand for each other."""
    policy = POLICIES.get(op)
    if policy is None:
        return None
    if any(wanted[c] != other[c] for c in policy.fixed):
        return None
    distance = 0.0
    for column, weight in policy.numeric.items():
        a, b = wanted[column], other[column]
        if a != b:
            if a is None or b is None or float(a) <= 0 or float(b) <= 0:  # type: ignore[arg-type]
                return None
            distance += weight * abs(math.log2(float(a) / float(b)))  # type: ignore[arg-type]
    for column, weight in policy.strings.items():
        if wanted[column] != other[column]:
            distance += weight
    return distance + sum(_extra_penalty(name, wanted, other) for name in policy.extra)


def nearest_key(
    op: str, wanted: Mapping[str, object], measured: Iterable[Mapping[str, object]]
) -> tuple[dict[str, object], float] | None:
    """The measured key nearest to `wanted` and its distance, or None when no measured key can stand for it."""
    best: tuple[float, str, dict[str, object]] | None = None
    for other in measured:
        distance = key_distance(op, wanted, other)
        if distance is None:
            continue
        candidate = (distance, repr(sorted(other.items(), key=lambda kv: kv[0])), dict(other))
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    return None if best is None else (best[2], best[0])


def describe_substitution(wanted: Mapping[str, object], used: Mapping[str, object]) -> str:
    """'page_size=64' for a key that stands in with another page size (the columns that differ, as used)."""
    diff = [f"{c}={used[c]}" for c in wanted if wanted[c] != used[c]]
    return ",".join(diff)
