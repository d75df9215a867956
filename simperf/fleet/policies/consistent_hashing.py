"""consistent_hashing (gateway `policies/consistent_hashing.rs`): a request with a routing key (the
`X-SMG-Routing-Key` header; here the conversation a multi-turn request belongs to) goes to the key's worker on
the hash ring, so a session stays on one worker; a request without one goes to a uniformly random worker."""

from __future__ import annotations

import numpy as np

from simperf.fleet.hash_ring import HashRing
from simperf.fleet.policies.base import RoutingPolicy
from simperf.fleet.route import RouteRequest, WorkerLoads


class ConsistentHashing(RoutingPolicy):
    name = "consistent_hashing"

    def __init__(self, num_workers: int, seed: int) -> None:
        super().__init__(num_workers)
        self._ring = HashRing(num_workers)
        self._rng = np.random.default_rng(seed)
        self.keyed = 0
        self.random_fallback = 0

    def select(self, request: RouteRequest, loads: WorkerLoads) -> int:
        if request.session is None:
            self.random_fallback += 1
            return self.active[int(self._rng.integers(len(self.active)))]
        self.keyed += 1
        return self._ring.find(f"session-{request.session}")

    def set_active(self, workers: list[int]) -> None:
        super().set_active(workers)
        self._ring = HashRing(self.active)  # the registry rebuilds its ring when workers come and go

    def summary(self) -> dict:
        return {"branches": {"routing_key": self.keyed, "random_fallback": self.random_fallback}}
