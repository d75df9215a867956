"""A speculative verify's or draft extend's attention on SGLang's flashinfer backend, priced from the decode tables
(perfdb/spec_verify.py): the decode kernel's time at the same batch and KV length times the measured ratio of the
paged prefill kernel SGLang runs for it (masked for a verify, causal for a draft extend) to that decode kernel."""

from __future__ import annotations

import numpy as np

from simperf.costmodel.ratiocurve import RatioCurve
from simperf.perfdb.db import OpCurve
from simperf.perfdb.spec_verify import SpecVerifyRatios

_WHAT = {"verify": "the draft tree's masked verify", "draft_extend": "the causal draft extend"}


class SpecVerifyCurve(RatioCurve):
    """The decode curve, its time multiplied by the measured kernel ratio of a verify / draft extend of q_len."""

    def __init__(self, base: OpCurve, ratios: SpecVerifyRatios, kind: str, q_len: int) -> None:
        super().__init__(base)
        self._ratios = ratios
        self._kind = kind
        self._q_len = int(q_len)
        self._heads = int(base.key["num_heads"])
        self._kv_heads = int(base.key["num_kv_heads"])

    def _factor(self, **axes) -> np.ndarray:
        return self._ratios.ratio(
            self._kind, self._heads, self._kv_heads, self._q_len, axes["batch"], axes["kv_len"]
        )

    def _describe(self, factor: float, **axes) -> str | None:
        return (
            f"x{factor:.3g}: {_WHAT[self._kind]} of {self._q_len} tokens per request runs flashinfer's paged FA2 "
            f"prefill kernel, not the decode kernel ({self._ratios.provenance}, benchmarks/spec_verify_attention.py)"
        )
