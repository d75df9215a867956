"""Autoscaling what-if: which servers the router knows over time, from a replica-count schedule.

Servers 0..n-1 form the fleet while n is scheduled. At a step that raises the count, each missing server starts
booting and joins the router `startup_s` later; at a step that lowers it, the highest-numbered servers (booting or
serving) leave the router at once and finish the requests they hold. The router's policies then choose among the
registered servers only (`RoutingPolicy.set_active`), as the gateway chooses among its registered workers.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from simperf.scenario.fleet import AutoscaleSpec


@dataclass
class Membership:
    change_s: list[float]  # times the registered set changes, increasing
    registered: list[list[int]]  # the set from each change on
    provisioned_from: dict[int, list[float]] = field(default_factory=dict)  # server -> boot start times
    removed_at: dict[int, list[float]] = field(default_factory=dict)  # server -> times it left the router


def membership(spec: AutoscaleSpec) -> Membership:
    steps = [(s.at_s, s.replicas) for s in spec.schedule]
    first = steps[0][1]
    registered = set(range(first))
    booting: dict[int, float] = {}  # server -> time it joins
    out = Membership([0.0], [sorted(registered)], {w: [0.0] for w in range(first)}, {})
    ready: list[tuple[float, int]] = []
    for at, target in steps[1:] + [(float("inf"), -1)]:
        while ready and ready[0][0] <= at:  # boots finishing before this step
            t, w = heapq.heappop(ready)
            if booting.get(w) == t:
                del booting[w]
                registered.add(w)
                _record(out, t, registered)
        if target < 0:
            break
        for w in sorted(registered | set(booting)):
            if w >= target:
                registered.discard(w)
                booting.pop(w, None)
                out.removed_at.setdefault(w, []).append(at)
        for w in range(target):
            if w not in registered and w not in booting:
                booting[w] = at + spec.startup_s
                heapq.heappush(ready, (booting[w], w))
                out.provisioned_from.setdefault(w, []).append(at)
        _record(out, at, registered)
    return out


def check_schedule_reached(spec: AutoscaleSpec, arrival_s: np.ndarray) -> None:
    """Every step is reached by a request: a step after the last arrival routed nothing differently, and its
    provisioning, starting after the run, was billed a negative server time (run end - start)."""
    last = float(arrival_s.max()) if len(arrival_s) else 0.0
    for i, step in enumerate(spec.schedule):
        if step.at_s > last:
            raise ValueError(
                f"fleet.autoscale.schedule[{i}]: at_s {step.at_s:g} comes after the last request arrives "
                f"({last:.4g} s), so no request is routed under it; drop the steps from there on or send more "
                "requests (workload.num_prompts)"
            )
        joins = step.at_s + spec.startup_s
        if i > 0 and step.replicas > spec.schedule[i - 1].replicas and joins > last:
            # the added servers boot past the run: the step was priced and routed exactly as if it were absent
            raise ValueError(
                f"fleet.autoscale.startup_s: the servers schedule[{i}] adds join the router at {joins:g} s (at_s "
                f"{step.at_s:g} + startup_s {spec.startup_s:g}), after the last request arrives ({last:.4g} s), so "
                "no request is routed to them; lower startup_s, drop the step or send more requests "
                "(workload.num_prompts)"
            )


def _record(out: Membership, t: float, registered: set[int]) -> None:
    current = sorted(registered)
    if current == out.registered[-1]:
        return
    if out.change_s[-1] == t:
        out.registered[-1] = current
    else:
        out.change_s.append(t)
        out.registered.append(current)


class MembershipCursor:
    """Applies the membership changes to a policy as the router's clock passes them."""

    def __init__(self, membership: Membership | None, policy) -> None:
        self._m = membership
        self._policy = policy
        self._next = 0
        if membership is not None:
            self.advance(0.0)

    def advance(self, now_s: float) -> None:
        m = self._m
        if m is None:
            return
        latest = None
        while self._next < len(m.change_s) and m.change_s[self._next] <= now_s:
            latest = m.registered[self._next]
            self._next += 1
        if latest is not None:
            if not latest:
                raise ValueError(f"autoscale: no server is registered with the router at t = {now_s:g} s")
            self._policy.set_active(latest)


def replica_seconds(
    m: Membership, server: np.ndarray, send_s: np.ndarray, end_s: np.ndarray, run_end_s: float
) -> float:
    """Server time paid for: each provisioning lasts from its boot start until the server leaves the router, or
    until the last request it took in that time ends if later (draining), or until the run ends."""
    total = 0.0
    for w, starts in m.provisioned_from.items():
        removals = sorted(m.removed_at.get(w, []))
        for start in starts:
            stop = next((r for r in removals if r >= start), run_end_s)
            mine = (server == w) & (send_s >= start) & (send_s < stop)
            drained = float(end_s[mine].max()) if mine.any() else stop
            total += max(stop, drained) - start if stop < run_end_s else run_end_s - start
    return total


def registered_over_time(m: Membership, edges: list[float]) -> list[int]:
    """Servers registered at each bin's middle."""
    mids = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:], strict=True)]
    out = []
    for t in mids:
        i = max(j for j, c in enumerate(m.change_s) if c <= t) if t >= 0 else 0
        out.append(len(m.registered[i]))
    return out
