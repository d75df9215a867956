"""The benchmark client: when each request is sent and when the scheduler first sees it.

bench_serving sends request i at its arrival time, but under `--max-concurrency` only once a slot of its asyncio
semaphore is free; the send time (taken after the semaphore) is what TTFT is measured from. Sends are computed
lazily and in order, so the scheduler can ask "when does the next request reach me?" without simulating the client
token by token. A slot frees when its request's last chunk reaches the client.

What the scheduler (sim/engine.py) needs from where its requests come from — this client, or a PD decode server's
feed of KV transfers (sim/disagg.py) — is `pop_ready`, `next_ready_time` (a lower bound of the next time a request
can reach it: decode runs are cut there), `idle_wait`, `release` and `reject` (with the request), `all_sent`,
`dropped` (requests that will never come: another server rejected them) and `send_s`.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import simpy

from simperf.sim.frontend import FrontEnd

# (event to wait on, the time it fires or inf when it waits for another process), or None: nothing will come
IdleWait = tuple[simpy.Event, float] | None


class RequestSource:
    """The protocol's defaults, for sources that know every request's time once it is theirs: nothing dropped,
    an idle scheduler sleeps until the next request can reach it, releases and rejections ask nothing back."""

    dropped = 0  # requests that will never come (another server rejected them)
    # the server's API server (sim/frontend.py): a request sent while it is busy streaming waits its turn
    frontend: FrontEnd | None = None
    # its tokenisation of text prompts, per prompt token (0: token ids are sent); one request at a time
    tokenize_s_per_token = 0.0
    # the API server receives requests one at a time (Overheads.receive_us_per_request)
    receive_s_per_request = 0.0
    # the client's own set-up per request of a burst (Overheads.client_setup_us_per_request), and the time before
    # a burst of k reaches the API server, per request (Overheads.client_burst_us_per_request)
    setup_s = 0.0
    burst_s = 0.0

    def handled_s(self, send_s: float, prompt_tokens: int = 0) -> float:
        """When the API server has received a request sent at `send_s` and tokenised its prompt, after the requests
        sent before it (sim/frontend.py `receive`: its intake goes before the queued chunks, which wait for it, and
        takes turns with the finishing of earlier requests). Calls come in send order."""
        if self.frontend is None:
            self.frontend = FrontEnd(0.0)  # a source on its own: the intake alone
        return self.frontend.receive(
            send_s, self.receive_s_per_request + prompt_tokens * self.tokenize_s_per_token
        )

    def next_ready_time(self) -> float:
        raise NotImplementedError

    @property
    def all_sent(self) -> bool:
        return math.isinf(self.next_ready_time())

    def idle_wait(self, env: simpy.Environment) -> IdleWait:
        nxt = self.next_ready_time()
        return None if math.isinf(nxt) else (env.timeout(nxt - env.now), nxt)

    def release(self, at_s: float, request: int = -1) -> None:
        return None

    def reject(self, at_s: float, request: int = -1) -> None:
        self.release(at_s, request)


class Client(RequestSource):
    def __init__(self, arrival_s: np.ndarray, max_concurrency: int | None, ingress_s: float) -> None:
        self._arrival = [float(a) for a in arrival_s]
        self._n = len(self._arrival)
        self._ingress_s = ingress_s
        self._limited = max_concurrency is not None
        # times at which a concurrency slot is free; unknown release times are simply not in the heap yet
        self._free_slots: list[float] = [0.0] * (max_concurrency or 0)
        self._ready: list[tuple[float, int]] = []  # (time the scheduler can see it, request index)
        self._next = 0
        self.send_s = np.full(self._n, math.nan)
        # per request, where the API server tokenises (Simulator.api_server_on)
        self.prompt_tokens: list[int] | None = None
        # shared with another server (PD disaggregation): slots free when that server finishes a request, so a
        # scheduler idle for want of a slot waits for this event instead of giving up
        self.shared = False
        self._wake: simpy.Event | None = None

    def _next_send_time(self) -> float:
        if self._next >= self._n:
            return math.inf
        arrival = self._arrival[self._next]
        if not self._limited:
            return arrival
        if not self._free_slots:
            return math.inf
        return max(arrival, self._free_slots[0])

    def _send_until(self, t: float) -> None:
        while True:
            send = self._next_send_time()
            if send > t:
                return
            # a burst: every request sendable at this instant (the first wave of a closed loop, an all-at-once
            # open loop). bench_serving's asyncio loop sets each up in turn (their send times step by
            # setup_s) and writes none before all are set up and connected (burst_s each).
            burst: list[int] = []
            while self._next_send_time() == send:
                if self._limited:
                    heapq.heappop(self._free_slots)
                burst.append(self._next)
                self._next += 1
            # none is written before the last is set up either: a set-up slower than the measured burst time
            # (a scenario's own overheads) must not put a request's send time after its arrival
            written = send + len(burst) * max(self.burst_s, self.setup_s)
            for j, idx in enumerate(burst):
                self.send_s[idx] = send + j * self.setup_s
                tokens = 0 if self.prompt_tokens is None else self.prompt_tokens[idx]
                heapq.heappush(self._ready, (self.handled_s(written, tokens) + self._ingress_s, idx))

    def pop_ready(self, now: float) -> list[int]:
        """Requests the scheduler sees at `now`, in the order they reached it."""
        self._send_until(now)
        out: list[int] = []
        while self._ready and self._ready[0][0] <= now:
            out.append(heapq.heappop(self._ready)[1])
        return out

    def next_ready_time(self) -> float:
        pending = self._ready[0][0] if self._ready else math.inf
        return min(pending, self._next_send_time() + self._ingress_s)

    def idle_wait(self, env: simpy.Environment) -> IdleWait:
        """What an idle scheduler waits for: the next request reaching it, or (shared) a slot being released."""
        nxt = self.next_ready_time()
        if not math.isinf(nxt):
            return env.timeout(nxt - env.now), nxt
        if not self.shared or self.all_sent:
            return None
        if self._wake is None or self._wake.triggered:
            self._wake = env.event()
        return self._wake, math.inf

    def release(self, at_s: float, request: int = -1) -> None:
        """The request holding a slot received its last chunk at `at_s`."""
        if self._limited:
            heapq.heappush(self._free_slots, at_s)
            if self._wake is not None and not self._wake.triggered:
                self._wake.succeed()

    def reject(self, at_s: float, request: int = -1) -> None:
        self.release(at_s, request)

    @property
    def all_sent(self) -> bool:
        return self._next >= self._n and not self._ready
