"""round_robin: worker = counter mod workers, the counter advancing once per request (gateway
`policies/round_robin.rs`; every worker healthy)."""

from __future__ import annotations

from simperf.fleet.policies.base import RoutingPolicy
from simperf.fleet.route import RouteRequest, WorkerLoads


class RoundRobin(RoutingPolicy):
    name = "round_robin"

    def __init__(self, num_workers: int) -> None:
        super().__init__(num_workers)
        self._count = 0

    def select(self, request: RouteRequest, loads: WorkerLoads) -> int:
        worker = self.active[self._count % len(self.active)]
        self._count += 1
        return worker
