"""cache_aware (gateway `policies/cache_aware.rs`, `select_worker`, at sglang commit 61c660a3).

For each request, with L the workers' in-flight loads:

1. imbalanced = max(L) - min(L) > balance_abs_threshold  and  max(L) > min(L) * balance_rel_threshold.
   If so: the least-loaded worker (first among equals); the request is still inserted into its tree.
2. Else: match the request against the approximate tree; rate = matched / request length. If
   rate > cache_threshold: the worker holding the deepest match; else the least-loaded worker. Insert the
   request for the chosen worker.

Every `eviction_interval_secs` of router time the trees are trimmed to `max_tree_size` characters per worker.
Rate is matched prompt tokens over prompt tokens here (characters in the gateway).
"""

from __future__ import annotations

import math

import numpy as np

from simperf.fleet.approx_tree import ApproxTree
from simperf.fleet.policies.base import RoutingPolicy, periodic_timer
from simperf.fleet.route import RouteRequest, WorkerLoads, first_min


def is_imbalanced(loads: list[int], abs_threshold: int, rel_threshold: float) -> bool:
    """The gateway's test: both the absolute gap and the ratio exceed their thresholds (the ratio in f32, as there)."""
    low, high = min(loads), max(loads)
    return high - low > abs_threshold and bool(np.float32(high) > np.float32(low) * np.float32(rel_threshold))


class CacheAware(RoutingPolicy):
    name = "cache_aware"
    uses_load = True

    def __init__(
        self,
        num_workers: int,
        block_tokens: int,
        cache_threshold: float,
        balance_abs_threshold: int,
        balance_rel_threshold: float,
        eviction_interval_s: float,
        max_tree_tokens: int,
    ) -> None:
        super().__init__(num_workers)
        self.tree = ApproxTree(num_workers, max(block_tokens, 1))
        self.cache_threshold = cache_threshold
        self.abs_threshold = balance_abs_threshold
        self.rel_threshold = balance_rel_threshold
        self.eviction_interval_s = eviction_interval_s
        self.max_tree_tokens = max_tree_tokens
        self._next_eviction = eviction_interval_s if eviction_interval_s > 0 else math.inf
        self.branches = {"imbalanced": 0, "cache_hit": 0, "min_load": 0}
        self.evicted_tokens = 0
        self._registered = set(self.active)

    def set_active(self, workers: list[int]) -> None:
        """Removed workers leave the tree (`remove_tenant`); added ones join it with nothing cached."""
        super().set_active(workers)
        for gone in self._registered - set(self.active):
            self.tree.remove_tenant(gone)
        for new in set(self.active) - self._registered:
            self.tree.add_tenant(new)
        self._registered = set(self.active)

    def select(self, request: RouteRequest, loads: WorkerLoads) -> int:
        fired, self._next_eviction = periodic_timer(
            request.time_s, self._next_eviction, self.eviction_interval_s
        )
        if fired:  # trims every tenant to the limit: a second trim with no insert between drops nothing
            self.evicted_tokens += self.tree.evict_tenant_by_size(self.max_tree_tokens)
        active = self.active
        current = [loads.of(w) for w in active]
        if is_imbalanced(current, self.abs_threshold, self.rel_threshold):
            worker = active[first_min(current)]
            self.branches["imbalanced"] += 1
        else:
            matched, holder = self.tree.prefix_match(request.prompt_blocks)
            rate = matched * request.block_tokens / request.input_len if request.input_len else 0.0
            if rate > self.cache_threshold and holder in self._registered:
                worker = holder
                self.branches["cache_hit"] += 1
            else:
                worker = active[first_min(current)]
                self.branches["min_load"] += 1
        self.tree.insert(request.prompt_blocks, worker)
        return worker

    def summary(self) -> dict:
        return {"branches": dict(self.branches), "tree_evicted_tokens": self.evicted_tokens}
