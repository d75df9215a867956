"""The interface every routing policy implements (the gateway's `LoadBalancingPolicy::select_worker`)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

from simperf.fleet.route import RouteRequest, WorkerLoads


class RoutingPolicy(ABC):
    name: str = ""
    # True when the choice depends on replica state (in-flight loads): the replicas must then be simulated together
    # with the router; False lets the router decide every request first and the replicas run independently
    uses_load: bool = False

    def __init__(self, num_workers: int) -> None:
        if num_workers < 1:
            raise ValueError(f"a router needs at least one worker, got {num_workers}")
        self.num_workers = num_workers
        # the workers registered with the router now (all, unless an autoscaling schedule removed or has not yet
        # added some); policies choose among these only, as the gateway chooses among its registered workers
        self.active: list[int] = list(range(num_workers))

    def set_active(self, workers: list[int]) -> None:
        """Workers were added to or removed from the router (autoscaling)."""
        if not workers:
            raise ValueError("a router needs at least one registered worker")
        self.active = sorted(workers)

    @abstractmethod
    def select(self, request: RouteRequest, loads: WorkerLoads) -> int:
        """The worker (0-based) this request goes to; may update the policy's own state."""

    def summary(self) -> dict:
        """What the policy did, for reports (e.g. how often cache_aware took each branch)."""
        return {}


def periodic_timer(now_s: float, due_s: float, interval_s: float) -> tuple[bool, float]:
    """A gateway timer that fires every `interval_s` (cache_aware's eviction, bucket's boundary adjustment), seen at a
    request arriving at `now_s`: (whether it fired since it was last run, when it is next due after now_s).

    The policies run it once however many firings fell between two requests: each firing works on router state
    that only requests change, so every firing after the first in a quiet stretch changes nothing. Running each had
    a conversation spaced 10^9 s apart (`turn_interval_s`) loop 10^7 times per request."""
    if now_s < due_s:
        return False, due_s
    fired = math.floor((now_s - due_s) / interval_s) + 1
    return True, due_s + fired * interval_s
