"""What the router counts as a worker's load: requests it sent there whose response has not ended yet.

The gateway increments a worker's load when it forwards a request and decrements it when the response ends
(`Worker::load`, a `WorkerLoadGuard` dropped with the response stream). Response ends are learnt from the replicas
as they are simulated, possibly ahead of the router's clock, so they are kept in a heap and counted once the
router's time passes them.
"""

from __future__ import annotations

import heapq


class InFlight:
    def __init__(self, num_workers: int) -> None:
        self.routed = [0] * num_workers
        self._ended = [0] * num_workers
        self._pending: list[list[float]] = [[] for _ in range(num_workers)]

    def route(self, worker: int) -> None:
        self.routed[worker] += 1

    def end(self, worker: int, at_s: float) -> None:
        heapq.heappush(self._pending[worker], at_s)

    def load(self, worker: int, now_s: float) -> int:
        pending = self._pending[worker]
        while pending and pending[0] <= now_s:
            heapq.heappop(pending)
            self._ended[worker] += 1
        return self.routed[worker] - self._ended[worker]
