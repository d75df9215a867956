"""Step prices for the simulator: the one place that calls the cost model and decides whether its fast forms apply.

The cost model's contract is `costmodel.api.StepCostModel`; a model that also implements `FastStepCost` is asked
through it where the batch allows (one rank decoding; one fresh prompt on a single-rank server without step
logging), with the same numbers (the protocol's contract). Everything else — DP lock-step, mixed batches,
prefixes, PD decode servers — takes the protocol methods.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simperf.costmodel.api import (
    AddBySource,
    ExtendHostTime,
    FastStepCost,
    RaggedDecodeCost,
    StepCostModel,
    is_single_fresh_prompt,
)
from simperf.sim.admission import ExtendPlan

# decode segments up to this many iterations are priced on Python floats, longer ones on arrays: half the
# segments are 1-3 iterations long, where numpy's per-call set-up costs more than the arithmetic
SMALL_SEGMENT = 16


class StepPricer:
    def __init__(self, cost: StepCostModel, *, single_rank: bool, step_log: bool, prebuilt: bool) -> None:
        self.cost = cost
        fast = cost if isinstance(cost, FastStepCost) else None
        self._fast_decode = fast
        # a logged step needs the general path's per-rank arrays; a PD decode server runs no prefill forward
        self._fast_fresh = fast if single_rank and not step_log and not prebuilt else None
        self._offsets = np.arange(4096, dtype=np.float64)
        # a PD decode server's extends are KV arrivals, not forwards: nothing to launch
        self._host = cost if isinstance(cost, ExtendHostTime) and not prebuilt else None
        self._ragged = cost if isinstance(cost, RaggedDecodeCost) else None

    # ---------------------------------------------------------------- extend
    def fresh_prompt(
        self, plans: Sequence[ExtendPlan | None], decode_rows: int
    ) -> tuple[float, list[float]] | None:
        """(step µs, µs per source) when this iteration is one fresh prompt on the only rank and the cost model
        prices it from its per-length table; None otherwise. decode_rows: running requests riding along."""
        if self._fast_fresh is None or len(plans) != 1:
            return None
        plan = plans[0]
        if plan is None or not is_single_fresh_prompt(
            plan.extend_lens, plan.prefix_lens, decode_rows if plan.mixed_decode else 0, False
        ):
            return None
        return self._fast_fresh.fresh_prefill_totals(plan.extend_lens[0])

    def extend(
        self,
        extend_lens: np.ndarray,
        prefix_lens: np.ndarray,
        decode_kv_lens: np.ndarray | None,
        gathered_rows: int | None,
        gathered_logit_rows: int | None,
    ) -> np.ndarray:
        return self.cost.extend_step(
            extend_lens, prefix_lens, decode_kv_lens, gathered_rows, gathered_logit_rows
        )

    def extend_host(
        self,
        extend_lens: np.ndarray,
        prefix_lens: np.ndarray,
        decode_kv_lens: np.ndarray | None,
        gathered_rows: int | None,
        gathered_logit_rows: int | None,
    ) -> float:
        """µs the scheduler's CPU spends launching this extend (0 for a cost model that does not say)."""
        if self._host is None:
            return 0.0
        return self._host.extend_host_us(
            extend_lens, prefix_lens, decode_kv_lens, gathered_rows, gathered_logit_rows
        )

    # ---------------------------------------------------------------- decode
    def decode(
        self, ranks: Sequence, max_bs: int, padded_bs: int, graph: bool, k: int, kv0: float
    ) -> tuple[list[float], AddBySource]:
        """Per-iteration totals (µs) of k decode iterations of the decoding `ranks`, and the function that books
        the first n iterations' time per source. DP ranks run in lock-step: each iteration lasts as long as its
        slowest rank. kv0: the first rank's `decode_kv_now()`, which the caller has at hand."""
        if self._fast_decode is not None and len(ranks) == 1:
            rank = ranks[0]
            kv_step = len(rank.running) * rank.tokens_per_step
            if k <= SMALL_SEGMENT:
                # the same sums as decode_kv_totals, on Python floats
                kv_totals: list[float] | np.ndarray = [kv0 + kv_step * j for j in range(k)]
            else:
                kv_totals = kv0 + kv_step * self._offset_array(k)
            return self._fast_decode.decode_totals(
                max_bs,
                padded_bs,
                kv_totals,
                graph,
                rank.shared_prefix_reads(),
                *self._straggler_arg(rank, max_bs, padded_bs, graph),
            )
        steps = self._lockstep_decode(ranks, padded_bs, graph, k)

        def add_by_source(acc: list[float], n: int) -> None:
            for i, v in enumerate(steps[:n].sum(axis=0).tolist()):
                acc[i] += v

        return steps.sum(axis=1).tolist(), add_by_source

    def _lockstep_decode(self, ranks: Sequence, padded_bs: int, graph: bool, k: int) -> np.ndarray:
        step = None
        offsets = self._offset_array(k)
        for rank in ranks:
            bs = len(rank.running)
            cost = self.cost.decode_steps(
                bs,
                padded_bs,
                rank.decode_kv_totals(offsets),
                graph,
                rank.shared_prefix_reads(),
                *self._straggler_arg(rank, bs, padded_bs, graph),
            )
            if step is None:
                step = cost
            else:
                step = np.where((cost.sum(axis=1) > step.sum(axis=1))[:, None], cost, step)
        return step

    def _straggler_arg(self, rank, bs: int, padded_bs: int, graph: bool) -> tuple[float, ...]:
        """decode_steps' / decode_totals' `straggler_us`: the running batch's time per decode step beyond its mean-KV
        price (RaggedDecodeCost), at the run's first step, held over the run (every request's KV grows alike);
        empty where it is 0, so a cost model without the argument is called as before."""
        if self._ragged is None or bs < 1:
            return ()
        total, longest = rank.decode_kv_extent()
        if not self._ragged.straggler_possible(bs, padded_bs, graph, total, longest):
            return ()  # decode_straggler_us would say 0: the O(1) test spares building the KV list
        straggler = self._ragged.decode_straggler_us(bs, padded_bs, graph, rank.decode_kv_lens())
        return (straggler,) if straggler else ()

    def _offset_array(self, k: int) -> np.ndarray:
        return self._offsets[:k] if k <= len(self._offsets) else np.arange(k, dtype=np.float64)
