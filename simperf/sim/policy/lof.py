"""lof: longest output first — by max_new_tokens, descending, arrival order among equals
(SGLang 0.5.17 managers/schedule_policy.py, `_sort_by_longest_output`)."""

from __future__ import annotations

from simperf.sim.policy.base import WaitingQueue, register_policy


@register_policy
class LongestOutputFirst:
    name = "lof"
    cache_aware = False
    reorders = True

    def __init__(self, seed: int = 0) -> None:
        pass

    def order(self, queue: WaitingQueue) -> list[int] | None:
        output_len = queue.table.output_len
        return sorted(queue.ids, key=lambda r: -output_len[r])
