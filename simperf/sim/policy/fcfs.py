"""fcfs: first come, first served — the queue stays in arrival order (SGLang's default)."""

from __future__ import annotations

from simperf.sim.policy.base import WaitingQueue, register_policy


@register_policy
class FirstComeFirstServed:
    name = "fcfs"
    cache_aware = False
    reorders = False

    def __init__(self, seed: int = 0) -> None:
        pass

    def order(self, queue: WaitingQueue) -> list[int] | None:
        return None
