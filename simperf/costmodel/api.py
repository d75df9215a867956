"""The seam between the simulator and the cost model: what the simulator calls, and what it may rely on.

`StepCostModel` is the whole contract. `FastStepCost` is an optional second protocol a cost model may also
implement: the same numbers in the shapes the simulator's hot loop consumes cheapest. The simulator decides in one
place whether it uses them (simperf/sim/pricing.py); a cost model that only implements `StepCostModel` is priced
through it alone, with the same results.

Contract of every method (tests/test_costmodel_contract.py checks it on SGLangStepCost and the test doubles):

* Times are microseconds of one forward step on one rank, split by source label: the last axis has one column per
  `perfdb.schema.SOURCES`, every entry is >= 0, and a step's row sums to its time, which is > 0.
* Pure: equal arguments give equal results, so the caller may cache them, and calls may come in any order. The
  returned arrays are the caller's (a cost model that caches must hand out copies).
* Preconditions are the caller's: lengths are positive integers, `1 <= bs <= padded_bs`, `kv_total[j] >= bs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

# add_by_source(acc, n): add the per-source time of the first n steps of a decode_totals call to acc
AddBySource = Callable[[list[float], int], None]


class StepCostModel(Protocol):
    def extend_step(
        self,
        extend_lens: np.ndarray,
        prefix_lens: np.ndarray,
        decode_kv_lens: np.ndarray | None = None,
        gathered_rows: int | None = None,
        gathered_logit_rows: int | None = None,
    ) -> np.ndarray:
        """Time of one extend (prefill, or mixed) batch -> array (len(SOURCES),) in µs.

        extend_lens[i] >= 1: new tokens of request i this step; prefix_lens[i] >= 0: its tokens already in the KV
        cache (same length as extend_lens, at least one request). decode_kv_lens: KV lengths (incl. the new token)
        of decode rows riding along (mixed chunked prefill), or None. gathered_rows / gathered_logit_rows: under DP
        attention, the token rows and logit rows of all DP ranks this step (the MLP/MoE, the gathers and the LM
        head run on them); None means this rank's rows times the DP size.
        """
        ...

    def decode_steps(
        self, bs: int, padded_bs: int, kv_total: np.ndarray, graph: bool, shared_kv: float = 0.0
    ) -> np.ndarray:
        """Times of len(kv_total) consecutive decode steps of `bs` requests -> array (k, len(SOURCES)) in µs.

        padded_bs: the CUDA-graph bucket the batch is padded to (== bs when eager); kv_total[j]: the requests' KV
        tokens at step j, including the token being decoded; graph: the step replays a CUDA graph. shared_kv >= 0:
        of those, the reads of shared prefix pages that another running request also reads (each group's readers
        beyond the first, x the prefix; 0 without a prefix cache), the same at every step. Postcondition: a step
        costs no more with shared_kv > 0 than with 0 (sharing saves HBM reads, never adds work).
        """
        ...


@runtime_checkable
class FastStepCost(Protocol):
    """Optional: `StepCostModel`'s numbers on Python floats, for the simulator's hot loop.

    Contract: equal to the protocol methods' results up to floating-point summation order
    (tests/test_costmodel_step.py checks SGLangStepCost bit for bit where it claims so).
    """

    def decode_totals(
        self,
        bs: int,
        padded_bs: int,
        kv_total: Sequence[float] | np.ndarray,
        graph: bool,
        shared_kv: float = 0.0,
    ) -> tuple[list[float], AddBySource]:
        """decode_steps' per-step totals (µs) as a list, and `add_by_source(acc, n)`, which adds the per-source sum
        over the first n steps to `acc` (a list of len(SOURCES) floats)."""
        ...

    def fresh_prefill_totals(self, tokens: int) -> tuple[float, list[float]] | None:
        """extend_step of one request of `tokens` new tokens, nothing cached, nothing riding along, no DP
        gathering: (total µs, per-source µs list); None where the cost model has no such fast form."""
        ...


@runtime_checkable
class RaggedDecodeCost(Protocol):
    """Optional: what a decode step of requests with different KV lengths costs beyond its mean-KV price.

    Contract: >= 0 µs and pure; 0 for requests of one length. The simulator adds it to every step of a decode run
    (decode_steps / decode_totals `straggler_us`), computed from the run's first step: the running set does not
    change within a run and every request's KV grows alike.
    """

    def decode_straggler_us(self, bs: int, padded_bs: int, graph: bool, kv_lens: Sequence[int]) -> float: ...

    def straggler_possible(self, bs: int, padded_bs: int, graph: bool, kv_total: int, kv_max: int) -> bool:
        """False only where decode_straggler_us of any batch of this KV total and longest KV is 0 (O(1), so the
        simulator can skip building the KV list)."""
        ...


@runtime_checkable
class ExtendHostTime(Protocol):
    """Optional: how long the host's CPU is busy launching an extend (prefill) forward.

    Contract: >= 0 µs, pure, and no longer than `extend_step` of the same batch (the step cannot end before its last
    kernel is launched). A cost model without it is simulated with launches that take no CPU time.
    """

    def extend_host_us(
        self,
        extend_lens: np.ndarray,
        prefix_lens: np.ndarray,
        decode_kv_lens: np.ndarray | None = None,
        gathered_rows: int | None = None,
        gathered_logit_rows: int | None = None,
    ) -> float:
        """The CPU time of launching `extend_step`'s batch (same arguments), in µs."""
        ...


def is_single_fresh_prompt(
    extend_lens: Sequence[int], prefix_lens: Sequence[int], decode_rows: int, gathered: bool
) -> bool:
    """The batch shape `FastStepCost.fresh_prefill_totals` prices: one request, nothing cached, no decode rows
    riding along, no rows gathered from other DP ranks. Both sides of the seam ask this one question."""
    return len(extend_lens) == 1 and prefix_lens[0] == 0 and decode_rows == 0 and not gathered
