"""bucket (gateway `policies/bucket.rs`; PD prefill only): requests are sorted into one length bucket per prefill
worker, the boundaries following the recent length distribution, unless the recent load is imbalanced.

State, all the router's own (it never reads the workers): each worker's characters routed in the last
`bucket_adjust_interval_secs` (the load window), the window's requests, and the boundaries. Rules:

* start: boundaries split [0, 4096) evenly, the last bucket open-ended;
* per request of c characters: imbalanced = max - min of the window loads > balance_abs_threshold and
  max > min x balance_rel_threshold -> the worker with the fewest window characters; else the bucket holding c
  (a random worker when none does). Then c is added to the chosen worker's load and requests older than the window
  leave it (and their characters leave their worker's load);
* every interval: unless the mean load per worker stayed within a factor 2 of the last adjustment's, re-split the
  sorted window lengths so each bucket holds about total / workers characters (`adjust_boundary`).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from simperf.fleet.policies.base import RoutingPolicy, periodic_timer
from simperf.fleet.policies.cache_aware import is_imbalanced
from simperf.fleet.route import RouteRequest, WorkerLoads, first_min

INITIAL_MAX_CHARS = 4096  # Bucket::new's l_max
OPEN = 2**64 - 1  # usize::MAX


class Bucket(RoutingPolicy):
    name = "bucket"

    def __init__(
        self,
        num_workers: int,
        abs_threshold: int,
        rel_threshold: float,
        interval_s: float,
        chars_per_token: float,
        seed: int,
    ) -> None:
        super().__init__(num_workers)
        self.abs_threshold = abs_threshold
        self.rel_threshold = rel_threshold
        self.interval_s = interval_s
        self.chars_per_token = chars_per_token
        self._rng = np.random.default_rng(seed)
        gap = INITIAL_MAX_CHARS // num_workers
        self.bounds = [
            (i * gap, OPEN if i == num_workers - 1 else (i + 1) * gap - 1) for i in range(num_workers)
        ]
        self.window_chars = [0] * num_workers
        self._window: deque[tuple[float, int, int]] = deque()  # (time, chars, worker)
        self._bucket_load = 0
        self._next_adjust = interval_s
        self.branches = {"bucket": 0, "imbalanced": 0, "no_bucket": 0}

    def _find(self, chars: int) -> int | None:
        for worker, (low, high) in enumerate(self.bounds):
            if low <= chars <= high:
                return worker
        return None

    def select(self, request: RouteRequest, loads: WorkerLoads) -> int:
        fired, self._next_adjust = periodic_timer(request.time_s, self._next_adjust, self.interval_s)
        if fired:  # a second adjustment over the same window keeps the bucket load it set: a no-op
            self._adjust()
        chars = int(request.input_len * self.chars_per_token)
        if is_imbalanced(self.window_chars, self.abs_threshold, self.rel_threshold):
            worker = first_min(self.window_chars)
            self.branches["imbalanced"] += 1
        else:
            found = self._find(chars)
            if found is None:
                worker = int(self._rng.integers(self.num_workers))
                self.branches["no_bucket"] += 1
            else:
                worker = found
                self.branches["bucket"] += 1
        self.window_chars[worker] += chars
        while self._window and request.time_s - self._window[0][0] > self.interval_s:
            _, old_chars, old_worker = self._window.popleft()
            self.window_chars[old_worker] = max(self.window_chars[old_worker] - old_chars, 0)
        self._window.append((request.time_s, chars, worker))
        return worker

    def _adjust(self) -> None:
        if not self._window:
            return
        n = self.num_workers
        total = sum(c for _, c, _ in self._window)
        new_load = total // n
        old_load = self._bucket_load
        if new_load <= 2 * old_load and old_load <= 2 * new_load and old_load != 0:
            return
        self._bucket_load = new_load
        history = sorted(c for _, c, _ in self._window)
        self.bounds = _split(history, n, new_load)

    def summary(self) -> dict:
        return {"branches": dict(self.branches), "bounds_chars": [list(b) for b in self.bounds]}


def _split(history: list[int], n: int, per_bucket: int) -> list[tuple[int, int]]:
    """The gateway's `adjust_boundary` walk over the sorted window lengths."""
    bounds: list[tuple[int, int]] = []
    upper = 0
    index = 0
    for worker in range(n):
        last = worker == n - 1
        if index >= len(history) and last:
            bounds.append((upper, OPEN))
            break
        accumulated = 0
        closed = False
        while index < len(history):
            load = history[index]
            accumulated += load
            if accumulated >= per_bucket:
                if last:
                    bounds.append((upper, OPEN))
                    closed = True
                    break
                if load <= upper:
                    bounds.append((upper, upper + per_bucket))
                    upper = upper + per_bucket + 1
                else:
                    bounds.append((upper, load))
                    upper = load + 1
                index += 1
                closed = True
                break
            index += 1
        if not closed:
            if last:
                bounds.append((upper, OPEN))
                break
            bounds.append((upper, upper + per_bucket))
            upper = upper + per_bucket + 1
    return bounds
