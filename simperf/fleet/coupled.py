"""A regular fleet whose router reads replica state: router and replicas advance together, request by request.

At each arrival (time t) the router asks the policy for a worker. Whenever the policy reads a worker's load, that
replica is first simulated up to t (`ReplicaSimulator.advance`) and the responses it ended by t are counted, so a
load is exact at the moment of the decision; replicas the policy does not read are not touched. The chosen replica
is advanced to t and receives the request. At the end every replica runs to completion.

Cost: a policy that reads every load (cache_aware, prefix_hash) advances every busy replica at every arrival,
which cuts its current decode run there; power_of_two reads two.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from simperf.fleet.autoscale import Membership, MembershipCursor
from simperf.fleet.inflight import InFlight
from simperf.fleet.policies.base import RoutingPolicy
from simperf.fleet.progress import progress_bar
from simperf.fleet.replica import ReplicaSimulator
from simperf.fleet.route import RouteRequest
from simperf.fleet.stream import RouteStream
from simperf.sim.engine import _cyclic_gc_paused

# (request, loads the policy read by worker, chosen worker): a hook for tests and decision logs
DecisionObserver = Callable[[RouteRequest, dict[int, int], int], None]


class LazyLoads:
    """`WorkerLoads` over live replicas: a read advances that replica to the router's time first."""

    def __init__(self, replicas: list[ReplicaSimulator], inflight: InFlight) -> None:
        self.replicas = replicas
        self.inflight = inflight
        self.now = 0.0
        self.read: dict[int, int] = {}

    def at(self, now: float) -> None:
        self.now = now
        self.read = {}

    def sync(self, worker: int) -> None:
        replica = self.replicas[worker]
        replica.advance(self.now)
        for _, end_s, _ in replica.drain():
            self.inflight.end(worker, end_s)

    def of(self, worker: int) -> int:
        load = self.read.get(worker)
        if load is None:
            self.sync(worker)
            load = self.read[worker] = self.inflight.load(worker, self.now)
        return load

    def all(self) -> list[int]:
        return [self.of(w) for w in range(len(self.replicas))]


@dataclass
class CoupledRun:
    assignment: np.ndarray  # worker per request
    replicas: list[ReplicaSimulator]


def run_coupled(
    replicas: list[ReplicaSimulator],
    policy: RoutingPolicy,
    stream: RouteStream,
    observer: DecisionObserver | None = None,
    membership: Membership | None = None,
) -> CoupledRun:
    """Route `stream` over opened replicas (closing them is left to the caller)."""
    inflight = InFlight(len(replicas))
    loads = LazyLoads(replicas, inflight)
    assignment = np.full(stream.n, -1, dtype=np.int64)
    cursor = MembershipCursor(membership, policy)
    with _cyclic_gc_paused(), progress_bar("routing and simulating", stream.n, every=500) as ticker:
        for k in range(stream.n):
            request = stream.request(k)
            cursor.advance(request.time_s)
            loads.at(request.time_s)
            worker = policy.select(request, loads)
            if observer is not None:
                observer(request, dict(loads.read), worker)
            loads.sync(worker)
            replicas[worker].push(
                k, stream.input_len[k], stream.output_len[k], stream.block_hashes(k), request.time_s
            )
            inflight.route(worker)
            assignment[k] = worker
            ticker.tick()
    return CoupledRun(assignment, replicas)
