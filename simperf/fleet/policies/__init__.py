"""The gateway's routing policies, built from a scenario's `fleet.router` section."""

from __future__ import annotations

from simperf.fleet.policies.base import RoutingPolicy
from simperf.fleet.policies.bucket import Bucket
from simperf.fleet.policies.cache_aware import CacheAware
from simperf.fleet.policies.consistent_hashing import ConsistentHashing
from simperf.fleet.policies.power_of_two import PowerOfTwo
from simperf.fleet.policies.prefix_hash import PrefixHash
from simperf.fleet.policies.random_choice import RandomChoice
from simperf.fleet.policies.round_robin import RoundRobin
from simperf.scenario.fleet import RouterSpec

__all__ = ["RoutingPolicy", "make_policy"]


def make_policy(
    name: str, router: RouterSpec, num_workers: int, block_tokens: int, seed: int
) -> RoutingPolicy:
    """`name` with the router's parameters, for `num_workers` workers; `block_tokens` is the requests' block size."""
    if name == "round_robin":
        return RoundRobin(num_workers)
    if name == "random":
        return RandomChoice(num_workers, seed)
    if name == "power_of_two":
        return PowerOfTwo(num_workers, seed)
    if name == "consistent_hashing":
        return ConsistentHashing(num_workers, seed)
    if name == "prefix_hash":
        return PrefixHash(num_workers, router.prefix_token_count, router.load_factor)
    if name == "cache_aware":
        return CacheAware(
            num_workers,
            block_tokens,
            router.cache_threshold,
            router.balance_abs_threshold,
            router.balance_rel_threshold,
            float(router.eviction_interval_secs),
            int(router.max_tree_size / router.chars_per_token),
        )
    if name == "bucket":
        return Bucket(
            num_workers,
            router.balance_abs_threshold,
            router.balance_rel_threshold,
            float(router.bucket_adjust_interval_secs),
            router.chars_per_token,
            seed,
        )
    raise ValueError(
        f"fleet.router policy {name!r}: allowed values: round_robin, random, power_of_two, "
        "cache_aware, consistent_hashing, prefix_hash, bucket (PD prefill only)"
    )
