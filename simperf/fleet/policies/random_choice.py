"""random: a uniformly drawn worker per request (gateway `policies/random.rs`). simperf draws from its own seeded
generator so a run is reproducible; the gateway's thread RNG is not."""

from __future__ import annotations

import numpy as np

from simperf.fleet.policies.base import RoutingPolicy
from simperf.fleet.route import RouteRequest, WorkerLoads


class RandomChoice(RoutingPolicy):
    name = "random"

    def __init__(self, num_workers: int, seed: int) -> None:
        super().__init__(num_workers)
        self._rng = np.random.default_rng(seed)

    def select(self, request: RouteRequest, loads: WorkerLoads) -> int:
        return self.active[int(self._rng.integers(len(self.active)))]
