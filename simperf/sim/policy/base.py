"""The contract of a scheduling policy, its registry, and the fallback SGLang applies to cache-aware ones."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

from simperf.radix_cache import RadixCache
from simperf.sim.request import RequestTable


@dataclass(frozen=True)
class WaitingQueue:
    """What a policy may read to order a rank's waiting queue."""

    ids: list[int]  # request ids, current queue order (arrival order, or the order the last pass left)
    table: RequestTable
    cache: RadixCache | None  # the rank's prefix cache (None when the radix cache is off)


class SchedulePolicy(Protocol):
    """Orders a rank's waiting queue once per scheduler iteration, before admission.

    Contract: `order` returns a permutation of `queue.ids` (admission then takes from its head), or None to keep
    the current order; it must not change the table or the cache (matching is free: `RadixCache.match`).
    """

    name: ClassVar[str]  # SGLang's `--schedule-policy` value
    cache_aware: ClassVar[bool]  # reads the prefix cache: SGLang runs it as fcfs when the cache is disabled
    reorders: ClassVar[bool]  # False only for a policy that always keeps the order (the scheduler skips it)

    def order(self, queue: WaitingQueue) -> list[int] | None: ...


POLICIES: dict[str, Callable[[int], SchedulePolicy]] = {}


def register_policy(cls: type) -> type:
    """Class decorator: make `cls` (constructed with the run's seed) the policy named `cls.name`."""
    if cls.name in POLICIES:
        raise ValueError(f"schedule policy {cls.name!r} is registered twice")
    POLICIES[cls.name] = cls
    return cls


def make_policy(name: str, cache: RadixCache | None, seed: int = 0) -> SchedulePolicy:
    """The policy a rank runs. A cache-aware policy without a prefix cache runs as fcfs, as SGLang does
    (SGLang 0.5.17 managers/schedule_policy.py, SchedulePolicy._validate_and_adjust_policy)."""
    try:
        cls = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown schedule policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None
    policy = cls(seed)
    if policy.cache_aware and cache is None:
        return POLICIES["fcfs"](seed)
    return policy
