"""What each scheduler iteration ran on one rank, for `simperf validate` (which re-runs sampled steps' kernels).

Recording is opt-in (Simulator(step_log=...)): the hot loop pays one attribute check when it is off. Under DP
attention the rank recorded is the one that sets the iteration's length (most work); its gathered MLP rows
are kept so the step can be rebuilt exactly. A decode run of k unchanged iterations is recorded once, at its
first iteration, with how many iterations it stood for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STEP_KINDS = ("prefill", "mixed", "decode")


@dataclass(frozen=True)
class LoggedStep:
    index: int  # order in the run
    kind: str  # prefill (extend only) | mixed (extend with decode rows riding) | decode
    time_s: float  # CPU time the iteration was scheduled at
    predicted_us: float  # the simulator's step time for the whole iteration
    repeats: int  # iterations this entry stands for (a decode run's unchanged steps)
    extend_lens: np.ndarray  # int64 [n] new tokens per extending request (empty for decode; as the cost model
    prefix_lens: (
        np.ndarray
    )  # int64 [n] cached prefix per request        got them, so the step rebuilds exactly)
    decode_kv_lens: np.ndarray  # int64 [d] KV length incl. the new token of each decoding request
    padded_bs: int  # decode: the CUDA-graph bucket (== bs when eager)
    graph: bool  # decode ran a CUDA graph
    gathered_rows: int | None  # DP attention: token rows of all ranks this iteration (None: single rank)
    gathered_logit_rows: int | None

    @property
    def num_rows(self) -> int:
        return int(self.extend_lens.sum()) + int(self.decode_kv_lens.size)

    @property
    def mean_kv(self) -> float:
        kv = np.concatenate([self.extend_lens + self.prefix_lens, self.decode_kv_lens])
        return float(kv.mean()) if kv.size else 0.0


class StepLog:
    """Collects LoggedSteps; the Simulator calls extend() / decode() once per iteration / decode run."""

    def __init__(self) -> None:
        self.steps: list[LoggedStep] = []

    def extend(
        self,
        time_s: float,
        predicted_us: float,
        extend_lens: np.ndarray,
        prefix_lens: np.ndarray,
        decode_kv_lens: np.ndarray | None,
        gathered_rows: int | None,
        gathered_logit_rows: int | None,
        decode_as_extend: bool = False,
    ) -> None:
        ext = np.asarray(extend_lens, dtype=np.int64).copy()
        pre = np.asarray(prefix_lens, dtype=np.int64).copy()
        decode = np.zeros(0, dtype=np.int64) if decode_kv_lens is None else np.asarray(decode_kv_lens).copy()
        # a DP rank without a prefill decodes as 1-token extends over its KV (docs/serving-model.md §2.3): mixed work
        kind = "mixed" if decode.size or decode_as_extend else "prefill"
        self.steps.append(
            LoggedStep(
                len(self.steps), kind, time_s, predicted_us, 1, ext, pre, decode, 0, False,
                gathered_rows, gathered_logit_rows,
            )
        )  # fmt: skip

    def decode(
        self,
        time_s: float,
        predicted_us: float,
        repeats: int,
        kv_lens: np.ndarray,
        padded_bs: int,
        graph: bool,
        gathered_rows: int | None,
    ) -> None:
        empty = np.zeros(0, dtype=np.int64)
        self.steps.append(
            LoggedStep(
                len(self.steps), "decode", time_s, predicted_us, repeats, empty, empty,
                np.asarray(kv_lens, dtype=np.int64).copy(), padded_bs, graph, gathered_rows, None,
            )
        )  # fmt: skip
