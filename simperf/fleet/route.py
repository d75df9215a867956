"""What a routing policy sees of one request, and of the workers' load, at the moment it routes.

The gateway routes on the request's text (cache_aware, bucket), its token ids (prefix_hash), a routing-key header
(consistent_hashing) and the workers' in-flight request counts (`Worker::load()`, incremented when the router
sends a request and decremented when its response ends). simperf's requests name their prompt's content by prefix
block ids instead of text, so the text-based rules are applied to blocks (docs/fleet.md, "Approximations").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class RouteRequest:
    index: int  # request id in the client's stream
    time_s: float  # when the router receives it
    input_len: int  # prompt tokens
    prompt_blocks: tuple[int, ...]  # ids of the prompt's whole prefix blocks (empty: no content identity)
    block_tokens: int  # tokens per block id
    session: int | None  # routing key (conversation id), None when the request carries none


class WorkerLoads(Protocol):
    """In-flight requests per worker at the routing time, read lazily (each read may advance a replica)."""

    def of(self, worker: int) -> int: ...

    def all(self) -> list[int]: ...


class NoLoads:
    """For policies that never look at the workers: reading a load is a bug in the policy's declaration."""

    def of(self, worker: int) -> int:
        raise RuntimeError("a state-independent routing policy asked for a worker's load")

    def all(self) -> list[int]:
        raise RuntimeError("a state-independent routing policy asked for the workers' loads")


class StaticLoads:
    """Loads given as a list (tests, and the PD decode side where they are computed beforehand)."""

    def __init__(self, loads: list[int]) -> None:
        self._loads = loads

    def of(self, worker: int) -> int:
        return self._loads[worker]

    def all(self) -> list[int]:
        return list(self._loads)


def first_min(loads: list[int]) -> int:
    """Index of the smallest load, the first one among equals (Rust's `Iterator::min_by_key`)."""
    best = 0
    for i in range(1, len(loads)):
        if loads[i] < loads[best]:
            best = i
    return best
