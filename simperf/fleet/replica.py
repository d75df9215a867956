"""One SGLang server of a fleet, simulated step-wise so the router can route on its state as it goes.

`ReplicaSimulator` is the single-server `Simulator` (same scheduler, same cost model, same event loop) with two
changes: requests are pushed as the router sends them instead of being known up front, and the SimPy environment
is advanced to a time given by the router (`advance(t)`) instead of run to the end.

Why this is exact. The scheduler only needs to know, when it plans a run of decode iterations, the earliest time a
new request can reach it (it cuts the run there). A replica's client answers with the earliest of its pending
requests and `horizon + ingress`, where the horizon is the router's current time: every request the router sends
later is sent at or after it. After `advance(t)` every event before t has happened, so every request that finished
by t has its finish time set (a finish assigned later lies after the CPU time that assigns it, which is >= t). With
one replica the horizon is always the next request's arrival, which is what the single-server client reports, so
the replica runs exactly the single-server simulation (tests/test_fleet_equivalence.py checks it bit for bit).
With several, a replica that the router reads but does not pick has its decode run cut at the router's time and
resumed at once: the same iterations, costed in two calls instead of one.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import fields

import numpy as np
import simpy

from simperf.records import RequestRecords
from simperf.sim.client import RequestSource
from simperf.sim.engine import US, Batch, SimStats, Simulator
from simperf.sim.request import RequestTable

# the request count of a replica whose router may still send it requests: its event loop must not end
_OPEN = 1 << 62


class FleetClient(RequestSource):
    """The replica's view of the router: requests arrive when routed; nothing earlier than `horizon` is still to come."""

    def __init__(self, ingress_s: float) -> None:
        self._ingress_s = ingress_s
        self._ready: list[tuple[float, int]] = []  # (time the scheduler can see it, local id)
        # (send time, prompt tokens, local id) of requests routed here whose intake is not taken yet: taken when
        # the replica's own time reaches the send, as the single server's client does (sim/client.py), so the
        # finishes its API server has before then are known (sim/frontend.py `receive`)
        self._routed: deque[tuple[float, int, int]] = deque()
        self.horizon = 0.0
        self.send_s = np.full(64, math.nan)

    def push(self, local: int, send_s: float, prompt_tokens: int = 0) -> None:
        if send_s < self.horizon:
            # the replica may already have run past this time believing nothing would arrive: a coupling bug
            raise RuntimeError(
                f"request sent at {send_s} s to a replica already promised nothing before {self.horizon} s"
            )
        if local >= len(self.send_s):
            self.send_s = np.concatenate((self.send_s, np.full(len(self.send_s), math.nan)))
        self.send_s[local] = send_s
        self._routed.append((send_s, prompt_tokens, local))

    def _take_in_until(self, now: float) -> None:
        while self._routed and self._routed[0][0] <= now:
            send_s, prompt_tokens, local = self._routed.popleft()
            # the router sends one request at a time: a burst of one
            written = send_s + self.burst_s
            heapq.heappush(self._ready, (self.handled_s(written, prompt_tokens) + self._ingress_s, local))

    def pop_ready(self, now: float) -> list[int]:
        self._take_in_until(now)
        out: list[int] = []
        while self._ready and self._ready[0][0] <= now:
            out.append(heapq.heappop(self._ready)[1])
        return out

    def next_ready_time(self) -> float:
        pending = self._ready[0][0] if self._ready else math.inf
        routed = self._routed[0][0] + self._ingress_s if self._routed else math.inf
        return min(pending, routed, self.horizon + self._ingress_s)

    def release(self, at_s: float, request: int = -1) -> None:  # no client-side concurrency limit in a fleet
        return None

    def reject(self, at_s: float, request: int = -1) -> None:
        return None


class ReplicaSimulator(Simulator):
    def open(self, *, ignore_eos: bool, seed: int, block_tokens: int | None) -> None:
        """Start an empty run; `block_tokens` (when requests carry prefix-block ids) turns the radix cache on."""
        self._ignore_eos = ignore_eos
        client = FleetClient(self.o.ingress_latency_us() * US)
        self.api_server_on(client)  # each push brings its prompt's length
        table = RequestTable([], [], ignore_eos)
        self._prepare(table, client, 0, seed, [] if block_tokens else None, block_tokens)
        client.frontend = self.frontend
        self.n = _OPEN
        self.pushed = 0
        self.global_ids: list[int] = []
        self.completions: list[
            tuple[int, float, bool]
        ] = []  # (local id, time, finished) since the last drain
        self._list_fields = [f.name for f in fields(RequestTable) if isinstance(getattr(table, f.name), list)]
        self.env = simpy.Environment()
        self.env.process(self._server())

    def push(self, global_id: int, input_len: int, output_len: int, hashes, send_s: float) -> None:
        """The router sends a request (at `send_s`, not before the replica's current horizon)."""
        local = self.pushed
        one = RequestTable([int(input_len)], [int(output_len)], self._ignore_eos)
        for name in self._list_fields:
            getattr(self.table, name).extend(getattr(one, name))
        if self._use_cache:
            self.table.hashes[local] = hashes
        if local >= len(self.finish_s):
            self.finish_s = np.concatenate((self.finish_s, np.full(max(len(self.finish_s), 64), math.nan)))
        self.client.push(local, send_s, int(input_len))
        self.global_ids.append(global_id)
        self.pushed += 1

    def advance(self, until: float) -> None:
        """Simulate every event before `until`; the router will send nothing before it from now on."""
        self.client.horizon = until
        if until > self.env.now:
            self.env.run(until=until)

    def drain(self) -> list[tuple[int, float, bool]]:
        """Requests whose end became known since the last call: (global id, time, finished; False = rejected)."""
        out = [(self.global_ids[local], t, ok) for local, t, ok in self.completions]
        self.completions.clear()
        return out

    def close(self) -> tuple[RequestRecords, SimStats]:
        """No more requests: run to the end. Records carry local ids; `global_ids` maps them."""
        self.client.horizon = math.inf
        self.n = self.pushed
        self.finish_s = self.finish_s[: self.pushed]
        self.client.send_s = self.client.send_s[: self.pushed]
        self.env.run()
        return self._collect()

    # ---------------------------------------------------------------- the engine's hooks, observed
    def _process(self, batch: Batch, wait_until: float) -> float:
        emit = super()._process(batch, wait_until)
        for _, r in batch.finished:
            self.completions.append((r, float(self.finish_s[r]), True))
        return emit

    def _reject(self, r: int, reason: str) -> None:
        super()._reject(r, reason)
        self.completions.append((r, self.env.now, False))
