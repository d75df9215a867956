"""The benchmark client: when each request is sent and when the scheduler first sees it.

bench_serving sends request i at its arrival time, but under `--max-concurrency` only once a slot of its asyncio
semaphore is free; the send time (taken after the semaphore) is what TTFT is measured from. Sends are computed
lazily and in order, so the scheduler can ask "when does the next request reach me?" without simulating the client
token by token. A slot frees when its request's last chunk reaches the client.
"""

from __future__ import annotations

import heapq
import math

import numpy as np


class Client:
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
            if self._limited:
                heapq.heappop(self._free_slots)
            idx = self._next
            self.send_s[idx] = send
            heapq.heappush(self._ready, (send + self._ingress_s, idx))
            self._next += 1

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

    def release(self, at_s: float) -> None:
        """The request holding a slot received its last chunk at `at_s`."""
        if self._limited:
            heapq.heappush(self._free_slots, at_s)

    def reject(self, at_s: float) -> None:
        self.release(at_s)

    @property
    def all_sent(self) -> bool:
        return self._next >= self._n and not self._ready
