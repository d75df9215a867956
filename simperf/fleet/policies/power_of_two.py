"""power_of_two (gateway `policies/power_of_two.rs`): draw two distinct workers (the first uniformly, the second at
an offset of 1 + U{0..n-2} from it), send to the one with the lower load, the first on a tie.

The gateway compares token loads polled from the workers every `worker_load_check_interval` (10 s) when it has
them for both, else its own in-flight request counts; simperf uses the in-flight counts (docs/fleet.md).
"""

from __future__ import annotations

import numpy as np

from simperf.fleet.policies.base import RoutingPolicy
from simperf.fleet.route import RouteRequest, WorkerLoads


class PowerOfTwo(RoutingPolicy):
    name = "power_of_two"
    uses_load = True

    def __init__(self, num_workers: int, seed: int) -> None:
        super().__init__(num_workers)
        self._rng = np.random.default_rng(seed)

    def select(self, request: RouteRequest, loads: WorkerLoads) -> int:
        active = self.active
        n = len(active)
        if n == 1:
            return active[0]
        i = int(self._rng.integers(n))
        j = (i + 1 + int(self._rng.integers(n - 1))) % n
        first, second = active[i], active[j]
        return first if loads.of(first) <= loads.of(second) else second
