"""`attn_mha_prefill` priced as SGLang's flashinfer backend runs an extend over a cached prefix (perfdb/prefix_path.py):
the tables' one-kernel time times the measured ratio of SGLang's three kernels (ragged FA3 over the new tokens,
paged FA2 over the prefix, merge_state) to it. Without a prefix the curve is the table's own."""

from __future__ import annotations

import numpy as np

from simperf.costmodel.ratiocurve import RatioCurve
from simperf.perfdb.db import OpCurve
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


class PrefixPathCurve(RatioCurve):
    """The base curve, its time multiplied where the extend reads a cached prefix (kv_len > q_len)."""

    def __init__(self, base: OpCurve, ratios: PrefixPathRatios) -> None:
        super().__init__(base)
        self._ratios = ratios
        self._heads = int(base.key["num_heads"])
        self._kv_heads = int(base.key["num_kv_heads"])

    def _factor(self, **axes) -> np.ndarray:
        q = np.asarray(axes["q_len"], dtype=np.float64)
        prefix = np.maximum(np.asarray(axes["kv_len"], dtype=np.float64) - q, 0.0)
        return self._ratios.ratio(self._heads, self._kv_heads, q, prefix)

    def _describe(self, factor: float, **axes) -> str | None:
        if factor == 1.0:  # no prefix: the ragged kernel alone, which is what the tables time
            return None
        prefix = float(axes["kv_len"]) - float(axes["q_len"])
        return (
            f"x{factor:.3g}: SGLang's flashinfer extend over a cached prefix of {prefix:.0f} runs ragged FA3 + "
            f"paged FA2 + merge_state, not this one kernel ({self._ratios.provenance}, "
            "benchmarks/extend_prefix_path.py)"
        )
