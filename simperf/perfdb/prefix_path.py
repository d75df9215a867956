"""An extend over a cached prefix as SGLang's flashinfer backend runs it, against the kernel the tables time.

SGLang 0.5.17 (`srt/layers/attention/flashinfer_backend.py`, `forward_extend` with `use_ragged` and any request
holding a cached prefix: chunked prefill after the first chunk, radix-cache hits) runs three kernels per layer: the
ragged wrapper over the new tokens alone (causal; backend "auto", FA3 on Hopper), the paged wrapper over the cached
prefix (non-causal, from the page-size-1 token pool; `self.prefill_backend = "fa2"`), and `merge_state`. The
`attn_mha_prefill` tables time one ragged FA3 kernel over prefix + new tokens (the same attention, one kernel, FA3
throughout). `benchmarks/extend_prefix_path.py` times both on a GPU; their ratio, per (query heads, KV heads) at
head dim 128, new tokens and prefix length, is what a table time of an extend over a prefix is multiplied by
(costmodel/step.py). Measured on the H100 (`calibration/h100/extend_prefix_path.jsonl`, 2026-11-27): 1.5-2.0x at
8,192 new tokens, 1.7-2.1x at 2,048, 2.2-3.9x at 512 (the FA2 kernel over the prefix is most of it); on the H200
(its own file, the same day) within -12...+11% of those. A GPU without its own measurement of the same architecture
(SM major) takes the H100's, labelled; the ratio is clamped to the measured grid (no extrapolation beyond its
corners).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simperf.jsonl import json_object_lines
from simperf.perfdb.ratiogrid import bilinear, full_grid, read_own_or_borrowed

PATH_FILE = "extend_prefix_path.jsonl"
# the GPU whose measurement stands in for another of its architecture without one
BORROW_FROM = "h100"


@dataclass(frozen=True)
class _Variant:
    heads: int
    kv_heads: int
    log_q: np.ndarray  # sorted log2 new-token counts of the grid
    log_prefix: np.ndarray  # sorted log2 prefix lengths
    ratio: np.ndarray  # [q, prefix]: SGLang's path over the table's kernel


@dataclass(frozen=True)
class PrefixPathRatios:
    """SGLang's extend-over-a-prefix time over the tables' single-kernel time, by variant; `provenance` says where
    it was measured (and that it is borrowed, on a GPU without its own)."""

    variants: tuple[_Variant, ...]
    provenance: str

    def _variant(self, heads: int, kv_heads: int) -> _Variant:
        """The measured variant nearest in query heads per KV head, then in query heads."""
        group = heads / max(kv_heads, 1)
        return min(
            self.variants,
            key=lambda v: (
                abs(math.log2(v.heads / v.kv_heads) - math.log2(group)),
                abs(math.log2(v.heads / heads)),
            ),
        )

    def ratio(self, heads: int, kv_heads: int, q_len: np.ndarray, prefix: np.ndarray) -> np.ndarray:
        """The factor for new tokens `q_len` over a prefix `prefix` (broadcast arrays); 1 where there is no prefix
        (SGLang then runs the ragged kernel alone, which is what the tables time)."""
        v = self._variant(heads, kv_heads)
        q = np.asarray(q_len, dtype=np.float64)
        p = np.asarray(prefix, dtype=np.float64)
        lq = np.clip(np.log2(np.maximum(q, 1.0)), v.log_q[0], v.log_q[-1])
        lp = np.clip(np.log2(np.maximum(p, 1.0)), v.log_prefix[0], v.log_prefix[-1])
        out = bilinear(v.log_q, v.log_prefix, v.ratio, lq, lp)
        return np.where(p >= 0.5, out, 1.0)


def parse_records(lines: list[str], source: str = "extend_prefix_path records") -> list[dict]:
    """The benchmark's records that timed both paths; ValueError naming the source and line of one that is not a
    JSON object."""
    return _timed_both([obj for _, obj in json_object_lines(lines, source, ValueError, "not a JSON record")])


def _timed_both(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("table_kernel_us") and r.get("sglang_path_us")]


def ratios_from_records(records: list[dict], provenance: str) -> PrefixPathRatios:
    by_variant: dict[tuple[int, int], dict[tuple[int, int], float]] = {}
    for r in records:
        ratio = float(r["sglang_path_us"]) / float(r["table_kernel_us"])
        if not 0 < ratio < np.inf:  # a NaN or negative time scaled every extend over a cached prefix by it
            raise ValueError(
                f"heads {r['heads']}/{r['kv_heads']}, q_len {r['q_len']}, prefix {r['prefix']}: sglang_path_us "
                f"{r['sglang_path_us']} / table_kernel_us {r['table_kernel_us']} is not a positive ratio"
            )
        by_variant.setdefault((int(r["heads"]), int(r["kv_heads"])), {})[
            (int(r["q_len"]), int(r["prefix"]))
        ] = ratio
    variants = []
    for (heads, kv_heads), points in sorted(by_variant.items()):
        what = f"{provenance}: heads {heads}/{kv_heads} (new tokens x prefix)"
        variants.append(_Variant(heads, kv_heads, *full_grid(points, what)))
    if not variants:
        raise ValueError(f"{provenance}: no record timed both paths")
    return PrefixPathRatios(tuple(variants), provenance)


def read_prefix_path(directory: Path | None, sm_major: int) -> PrefixPathRatios | None:
    """The directory's own measurement, else (a Hopper GPU without one) the H100's, labelled an estimate
    (ratiogrid.own_or_borrowed)."""
    return read_own_or_borrowed(
        directory,
        sm_major,
        PATH_FILE,
        BORROW_FROM,
        lambda records, p: ratios_from_records(_timed_both(records), p),
    )
