"""random: the waiting queue shuffled every iteration (SGLang 0.5.17 managers/schedule_policy.py,
`_sort_randomly`). SGLang shuffles with Python's global generator; here each rank has its own, seeded from the
scenario's seed, so runs are reproducible."""

from __future__ import annotations

import random as _random

from simperf.sim.policy.base import WaitingQueue, register_policy


@register_policy
class RandomOrder:
    name = "random"
    cache_aware = False
    reorders = True

    def __init__(self, seed: int = 0) -> None:
        self._rng = _random.Random(seed)

    def order(self, queue: WaitingQueue) -> list[int] | None:
        ids = list(queue.ids)
        self._rng.shuffle(ids)
        return ids
