"""`attn_mha_prefill` priced as SGLang's flashinfer backend runs an extend over a cached prefix (perfdb/prefix_path.py):
the tables' one-kernel time times the measured ratio of SGLang's three kernels (ragged FA3 over the new tokens,
paged FA2 over the prefix, merge_state) to it. Without a prefix the curve is the table's own."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simperf.perfdb.db import OpCurve, Timing
from simperf.perfdb.prefix_path import PrefixPathRatios

# the table backend of flashinfer's ragged prefill on Hopper, the one whose extends over a prefix SGLang splits
RAGGED_TABLE_BACKEND = "flashinfer_fa3"


def applies(op: str, key: dict, prefill_backend: str, is_mla: bool) -> bool:
    """SGLang's flashinfer attention backend (not its MLA one) pricing a GQA/MHA extend from the FA3 ragged table."""
    return (
        op == "attn_mha_prefill"
        and prefill_backend == "flashinfer"
        and not is_mla
        and key.get("backend") == RAGGED_TABLE_BACKEND
    )


class PrefixPathCurve(OpCurve):
    """The base curve, its time multiplied where the extend reads a cached prefix (kv_len > q_len)."""

    def __init__(self, base: OpCurve, ratios: PrefixPathRatios) -> None:
        super().__init__(*base.constructor_args())
        self._base = base
        self._ratios = ratios
        self._heads = int(base.key["num_heads"])
        self._kv_heads = int(base.key["num_kv_heads"])

    def _factor(self, q_len, kv_len) -> np.ndarray:
        q = np.asarray(q_len, dtype=np.float64)
        prefix = np.maximum(np.asarray(kv_len, dtype=np.float64) - q, 0.0)
        return self._ratios.ratio(self._heads, self._kv_heads, q, prefix)

    def __call__(self, **axes):
        us, source = self._base(**axes)
        return us * self._factor(axes["q_len"], axes["kv_len"]), source

    def timing(self, **axes) -> Timing:
        t = self._base.timing(**axes)
        factor = float(self._factor(axes["q_len"], axes["kv_len"]))
        if factor == 1.0:
            return t
        prefix = float(axes["kv_len"]) - float(axes["q_len"])
        return replace(
            t,
            us=t.us * factor,
            detail=f"{t.detail}; x{factor:.3g}: SGLang's flashinfer extend over a cached prefix of {prefix:.0f} "
            f"runs ragged FA3 + paged FA2 + merge_state, not this one kernel ({self._ratios.provenance}, "
            "benchmarks/extend_prefix_path.py)",
        )
