"""A speculative verify's and draft extend's attention as SGLang's flashinfer backend runs it, against the decode
kernel the `attn_gqa_decode` tables time.

SGLang 0.5.17 (`srt/layers/attention/flashinfer_backend.py`): a target verify (`is_target_verify`) and a draft
extend (`is_draft_extend_v2`) run `BatchPrefillWithPagedKVCacheWrapper` (`self.prefill_backend = "fa2"`,
`use_ragged=False`): one paged FA2 prefill kernel per layer over each request's whole KV, num_draft_tokens query
tokens per request; the verify with the draft tree's custom mask, the draft extend causal. `benchmarks/
spec_verify_attention.py` times both beside the decode kernel (tensor cores and CUDA cores) at the same batch and
KV length. Their ratio to the decode kernel SGLang runs for that GQA group (tensor cores from a group of 4) is what
a decode table's time is multiplied by (costmodel/spec_verify.py).

Measured on the H200 (`calibration/h200/spec_verify.jsonl`, 2026-11-28, flashinfer 0.6.15 as SGLang 0.5.17 ships
it): the masked verify costs 1.2-1.5x the decode when a request's query rows per KV head (q_len x group) are 16, and
2.2-3.1x at 32 and 64 (the kernel's query tile grows past 16 rows); the causal draft extend 1.0-1.6x. A Hopper GPU
without its own file takes the H200's, labelled an estimate; the ratio is clamped to the measured grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simperf.perfdb.ratiogrid import bilinear, full_grid, read_own_or_borrowed

PATH_FILE = "spec_verify.jsonl"
BORROW_FROM = "h200"  # the GPU whose measurement stands in for another Hopper GPU without one
KINDS = ("verify", "draft_extend")
# SGLang's flashinfer backend decodes with tensor cores from this GQA group size (bf16 KV; utils.py
# should_use_tensor_core), so the decode table of such a model times the tensor-core kernel
TENSOR_CORE_GROUP = 4


@dataclass(frozen=True)
class _Variant:
    kind: str
    heads: int
    kv_heads: int
    q_len: int
    log_batch: np.ndarray
    log_kv: np.ndarray
    ratio: np.ndarray  # [batch, kv]: the kind's kernel over the decode kernel SGLang runs for this group

    @property
    def rows(self) -> int:
        """Query rows one KV head's tile holds per request: what sets the kernel's query tile."""
        return self.q_len * self.heads // self.kv_heads


@dataclass(frozen=True)
class SpecVerifyRatios:
    variants: tuple[_Variant, ...]
    provenance: str

    def _variant(self, kind: str, heads: int, kv_heads: int, q_len: int) -> _Variant:
        """The measured variant of this kind nearest in query rows per KV head, then in GQA group."""
        rows = q_len * heads / max(kv_heads, 1)
        group = heads / max(kv_heads, 1)
        return min(
            (v for v in self.variants if v.kind == kind),
            key=lambda v: (abs(math.log2(v.rows / rows)), abs(math.log2(v.heads / v.kv_heads / group))),
        )

    def ratio(self, kind: str, heads: int, kv_heads: int, q_len: int, batch, kv_len) -> np.ndarray:
        v = self._variant(kind, heads, kv_heads, q_len)
        lb = np.clip(
            np.log2(np.maximum(np.asarray(batch, dtype=np.float64), 1.0)), v.log_batch[0], v.log_batch[-1]
        )
        lk = np.clip(
            np.log2(np.maximum(np.asarray(kv_len, dtype=np.float64), 1.0)), v.log_kv[0], v.log_kv[-1]
        )
        return bilinear(v.log_batch, v.log_kv, v.ratio, lb, lk)


def ratios_from_records(records: list[dict], provenance: str) -> SpecVerifyRatios:
    points: dict[tuple[str, int, int, int], dict[tuple[int, int], float]] = {}
    for r in records:
        if "error" in r:
            continue
        heads, kv_heads = int(r["heads"]), int(r["kv_heads"])
        decode = r["decode_tc_us" if heads // kv_heads >= TENSOR_CORE_GROUP else "decode_cc_us"]
        for name, value in r.items():
            kind, _, q = name.removesuffix("_us").rpartition("_q")
            if kind not in KINDS or not q.isdigit():
                continue
            ratio = float(value) / float(decode) if float(decode) > 0 else np.nan
            if not 0 < ratio < np.inf:  # a NaN or zero time scaled every verify by it
                raise ValueError(
                    f"heads {heads}/{kv_heads}, {name}: {value} / decode {decode} is not a positive ratio"
                )
            points.setdefault((kind, heads, kv_heads, int(q)), {})[(int(r["batch"]), int(r["kv_len"]))] = (
                ratio
            )
    variants = []
    for (kind, heads, kv_heads, q_len), grid_points in sorted(points.items()):
        what = f"{provenance}: {kind} q_len {q_len} at heads {heads}/{kv_heads} (batch x KV length)"
        variants.append(_Variant(kind, heads, kv_heads, q_len, *full_grid(grid_points, what)))
    if {v.kind for v in variants} != set(KINDS):
        raise ValueError(f"{provenance}: needs records of both {' and '.join(KINDS)}")
    return SpecVerifyRatios(tuple(variants), provenance)


def read_spec_verify(directory: Path | None, sm_major: int) -> SpecVerifyRatios | None:
    """The directory's own measurement, else (a Hopper GPU without one) the H200's, labelled an estimate
    (ratiogrid.own_or_borrowed)."""
    return read_own_or_borrowed(directory, sm_major, PATH_FILE, BORROW_FROM, ratios_from_records)
