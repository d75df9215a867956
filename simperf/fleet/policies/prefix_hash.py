"""prefix_hash (gateway `policies/prefix_hash.rs`): hash the request's first `prefix_token_count` tokens onto the
hash ring; keep that worker if its load is at most load_factor x (total load + 1) / workers, else take the
least-loaded worker under that bound (the ring's worker when none is).

Requests carry block ids, not token ids: the hashed prefix is the blocks covering the first prefix_token_count
tokens (with the prompt length when the prompt is shorter). A request without block ids stands for distinct
content, hashed by its index.
"""

from __future__ import annotations

from simperf.fleet.hash_ring import HashRing
from simperf.fleet.policies.base import RoutingPolicy
from simperf.fleet.route import RouteRequest, WorkerLoads


def prefix_key(request: RouteRequest, prefix_tokens: int) -> str:
    if not request.prompt_blocks:
        return f"request-{request.index}"
    if request.input_len <= prefix_tokens:
        return f"{request.input_len}:{','.join(map(str, request.prompt_blocks))}"
    need = -(-prefix_tokens // request.block_tokens)
    return ",".join(map(str, request.prompt_blocks[:need]))


class PrefixHash(RoutingPolicy):
    name = "prefix_hash"
    uses_load = True

    def __init__(self, num_workers: int, prefix_token_count: int, load_factor: float) -> None:
        super().__init__(num_workers)
        self._ring = HashRing(num_workers)
        self.prefix_token_count = prefix_token_count
        self.load_factor = load_factor
        self.branches = {"ring_hit": 0, "load_balance_walk": 0}

    def set_active(self, workers: list[int]) -> None:
        super().set_active(workers)
        self._ring = HashRing(self.active)

    def _load_ok(self, load: int, total: int) -> bool:
        if total == 0:
            return True
        return load <= (total + 1) / len(self.active) * self.load_factor

    def select(self, request: RouteRequest, loads: WorkerLoads) -> int:
        current = {w: loads.of(w) for w in self.active}
        total = sum(current.values())
        initial = self._ring.find(prefix_key(request, self.prefix_token_count))
        if self._load_ok(current[initial], total):
            self.branches["ring_hit"] += 1
            return initial
        self.branches["load_balance_walk"] += 1
        best = None
        for worker, load in current.items():
            if self._load_ok(load, total) and (best is None or load < current[best]):
                best = worker
        return initial if best is None else best

    def summary(self) -> dict:
        return {"branches": dict(self.branches)}
