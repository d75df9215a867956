"""The seam between the simulator and the cost model.

The simulator asks for step times in two shapes:
* `extend_step`: one prefill/extend (or mixed) batch, per-request new tokens and cached prefix lengths;
* `decode_steps`: k consecutive decode steps of an unchanged batch, vectorised over the steps (the KV total grows
  by `bs` each step), so that a quiet stretch of decoding costs one call, not k.

Both return time split by source label (perfdb.schema.SOURCES): the last axis has one column per source and the
row sum is the step time in microseconds. The simulator aggregates these to report the measured share.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class StepCostModel(Protocol):
    def extend_step(
        self, extend_lens: np.ndarray, prefix_lens: np.ndarray, decode_kv_lens: np.ndarray | None = None
    ) -> np.ndarray:
        """Time of one extend batch -> array (len(SOURCES),) in µs.

        extend_lens[i]: new tokens of request i this step; prefix_lens[i]: tokens already in its KV cache.
        decode_kv_lens: KV lengths of decode rows riding along (mixed chunked prefill), or None.
        """
        ...

    def decode_steps(
        self, bs: int, padded_bs: int, kv_total: np.ndarray, kv_max: int, graph: bool
    ) -> np.ndarray:
        """Times of len(kv_total) decode steps of `bs` requests -> array (k, len(SOURCES)) in µs.

        padded_bs: CUDA-graph bucket the batch is padded to (== bs when eager); kv_total[j]: sum of the requests'
        KV lengths at step j (including the token being decoded); kv_max: longest KV length at the first step.
        graph: True when the step replays a CUDA graph, False when it runs eagerly.
        """
        ...
