"""The gateway's consistent-hash ring (`core/worker_registry.rs`, `HashRing`): 150 virtual nodes per worker, a key
goes to the first virtual node at or after its hash, clockwise, wrapping around.

The gateway hashes with blake3 over worker URLs; simperf's workers have no URLs, so positions come from blake2b over
"worker-<index>#<vnode>": which worker a given key lands on differs from a real deployment, the distribution's
shape (150 points per worker) does not.
"""

from __future__ import annotations

import bisect
import hashlib

VIRTUAL_NODES_PER_WORKER = 150


def ring_position(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


class HashRing:
    def __init__(self, workers: int | list[int]) -> None:
        """`workers`: a count (workers 0..n-1) or the worker indices on the ring."""
        members = range(workers) if isinstance(workers, int) else workers
        entries = sorted(
            (ring_position(f"worker-{w}#{v}"), w) for w in members for v in range(VIRTUAL_NODES_PER_WORKER)
        )
        self._positions = [p for p, _ in entries]
        self._workers = [w for _, w in entries]

    def find(self, key: str) -> int:
        start = bisect.bisect_left(self._positions, ring_position(key))
        return self._workers[start % len(self._workers)]
