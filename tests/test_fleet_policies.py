"""The gateway's routing rules, one policy at a time, on hand-built requests and loads (docs/fleet.md)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simperf.fleet.approx_tree import ApproxTree
from simperf.fleet.policies import make_policy
from simperf.fleet.policies.bucket import OPEN, Bucket, _split
from simperf.fleet.policies.cache_aware import CacheAware, is_imbalanced
from simperf.fleet.route import NoLoads, RouteRequest, StaticLoads
from simperf.scenario.fleet import RouterSpec


def req(index=0, blocks=(), input_len=None, time_s=0.0, session=None, block_tokens=64):
    length = input_len if input_len is not None else max(len(blocks) * block_tokens, 1)
    return RouteRequest(index, time_s, length, tuple(blocks), block_tokens, session)


def cache_aware(n=3, threshold=0.3, abs_t=64, rel_t=1.5, interval=0.0, max_tokens=10**9):
    return CacheAware(n, 64, threshold, abs_t, rel_t, interval, max_tokens)


def test_round_robin_cycles_without_reading_loads():
    policy = make_policy("round_robin", RouterSpec(), 3, 64, 0)
    assert [policy.select(req(i), NoLoads()) for i in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_random_is_reproducible_and_spreads():
    a = make_policy("random", RouterSpec(), 4, 64, seed=7)
    b = make_policy("random", RouterSpec(), 4, 64, seed=7)
    picks = [a.select(req(i), NoLoads()) for i in range(400)]
    assert picks == [b.select(req(i), NoLoads()) for i in range(400)]
    assert set(picks) == {0, 1, 2, 3}


class SpyLoads:
    """Loads that remember which workers were read."""

    def __init__(self, loads):
        self.loads = loads
        self.read = {}

    def of(self, worker):
        self.read[worker] = self.loads[worker]
        return self.loads[worker]

    def all(self):
        return [self.of(w) for w in range(len(self.loads))]


def test_power_of_two_takes_the_lighter_of_two_distinct_workers():
    policy = make_policy("power_of_two", RouterSpec(), 4, 64, seed=1)
    loads = [5, 0, 9, 3]
    pairs = set()
    for i in range(200):
        spy = SpyLoads(loads)
        choice = policy.select(req(i), spy)
        assert len(spy.read) == 2, "reads exactly two distinct workers"
        assert loads[choice] == min(spy.read.values())
        pairs.add(frozenset(spy.read))
    assert len(pairs) == 6  # every pair of four workers gets drawn
    # the heaviest worker is never chosen against anyone lighter
    assert all(policy.select(req(i), StaticLoads(loads)) != 2 for i in range(200))


def test_power_of_two_with_one_worker_reads_nothing():
    policy = make_policy("power_of_two", RouterSpec(), 1, 64, seed=1)
    assert policy.select(req(), NoLoads()) == 0


def test_imbalance_needs_both_thresholds():
    assert not is_imbalanced([0, 64], 64, 1.5)  # gap not above 64
    assert is_imbalanced([0, 65], 64, 1.5)
    assert not is_imbalanced([200, 290], 64, 1.5)  # 290 > 200 + 64 but not > 1.5 x 200
    assert is_imbalanced([200, 301], 64, 1.5)


def test_cache_aware_follows_the_prefix_when_balanced():
    policy = cache_aware()
    system = list(range(10))
    first = policy.select(req(0, system + [100]), StaticLoads([3, 0, 0]))
    assert first == 1  # nothing matched: least loaded (first among equals)
    # 10 of 11 blocks match the tree's worker 1: above the 0.3 threshold, even though worker 2 is lighter
    assert policy.select(req(1, system + [200]), StaticLoads([5, 4, 0])) == 1
    # a match of 1 block in 11 is below the threshold: least loaded
    assert policy.select(req(2, [0] + list(range(300, 310))), StaticLoads([5, 4, 0])) == 2
    assert policy.branches == {"imbalanced": 0, "cache_hit": 1, "min_load": 2}


def test_cache_aware_ignores_the_prefix_when_imbalanced():
    policy = cache_aware()
    blocks = list(range(8))
    assert policy.select(req(0, blocks), StaticLoads([0, 0, 0])) == 0
    # worker 0 holds the whole prefix but is 100 requests ahead of worker 2 (> 64 and > 1.5x): least loaded
    assert policy.select(req(1, blocks), StaticLoads([100, 50, 0])) == 2
    # the imbalanced branch still inserts: worker 2 now holds the prefix too
    assert policy.tree.holders(blocks) == [0, 2]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 300), min_size=3, max_size=3), min_size=1, max_size=40),
    st.integers(0, 100),
    st.floats(1.0, 3.0),
)
def test_cache_aware_never_picks_a_heavy_worker_when_imbalanced(load_rows, abs_t, rel_t):
    """Whatever it holds in its tree, when the loads are imbalanced cache_aware sends to a least-loaded worker."""
    policy = cache_aware(abs_t=abs_t, rel_t=rel_t)
    for i, loads in enumerate(load_rows):
        choice = policy.select(req(i, [0, 1, 2, i % 3]), StaticLoads(loads))
        if is_imbalanced(loads, abs_t, rel_t):
            assert loads[choice] == min(loads)


def test_approx_tree_match_and_eviction_follow_recency():
    tree = ApproxTree(2, 64)
    tree.insert([1, 2, 3], 0)
    tree.insert([1, 2, 4], 0)
    tree.insert([1, 2, 3], 1)
    assert tree.prefix_match([1, 2, 3, 9]) == (3, 0)  # the node's creator holds the full match
    assert tree.prefix_match([1, 2, 4]) == (3, 0)
    assert tree.tenant_tokens == [4 * 64, 3 * 64]
    tree.insert([1, 2, 3], 0)  # refreshes [1,2,3] for tenant 0: [1,2,4] is now its oldest leaf
    dropped = tree.evict_tenant_by_size(3 * 64)
    assert dropped == 64 and tree.tenant_tokens == [3 * 64, 3 * 64]
    assert tree.holders([1, 2, 4]) == [] and tree.holders([1, 2, 3]) == [0, 1]
    tree.evict_tenant_by_size(0)
    assert tree.tenant_tokens == [0, 0] and tree.prefix_match([1])[0] == 0


def _tree_state(tree: ApproxTree) -> tuple:
    def walk(node):
        return tuple(
            sorted((key, tuple(sorted(c.tenants.items())), walk(c)) for key, c in node.children.items())
        )

    return tuple(tree.tenant_tokens), walk(tree._root)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.lists(st.integers(0, 5), min_size=1, max_size=6), st.integers(0, 2)), max_size=25),
    st.integers(0, 12),
)
def test_eviction_that_finds_every_tenant_under_its_limit_matches_the_full_trim(inserts, limit_blocks):
    # the fast path: no tenant over the limit returns at once; the full trim must then drop nothing either
    import copy

    fast = ApproxTree(3, 64)
    for blocks, tenant in inserts:
        fast.insert(blocks, tenant)
    general = copy.deepcopy(fast)
    assert fast.evict_tenant_by_size(limit_blocks * 64) == general.trim(limit_blocks * 64)
    assert _tree_state(fast) == _tree_state(general)


def test_a_timer_due_many_periods_ago_fires_once_and_is_next_due_after_the_request():
    from simperf.fleet.policies.base import periodic_timer

    assert periodic_timer(5.0, 10.0, 10.0) == (False, 10.0)
    assert periodic_timer(10.0, 10.0, 10.0) == (True, 20.0)
    # a conversation's turns 10^9 s apart: one firing, not 10^8 (the loop that ran them one by one never ended)
    assert periodic_timer(1e9 + 5.0, 10.0, 10.0) == (True, 1e9 + 10.0)


def test_cache_aware_trims_once_for_requests_far_apart(monkeypatch):
    policy = cache_aware(n=2, interval=10.0, max_tokens=2 * 64)
    calls = []
    trim = policy.tree.evict_tenant_by_size
    monkeypatch.setattr(policy.tree, "evict_tenant_by_size", lambda limit: calls.append(limit) or trim(limit))
    policy.select(req(0, [1, 2, 3, 4], time_s=0.0), StaticLoads([0, 0]))
    policy.select(req(1, [9], time_s=1e9), StaticLoads([1, 0]))
    assert calls == [2 * 64] and policy.evicted_tokens == 2 * 64


def test_cache_aware_evicts_its_trees_on_its_interval():
    policy = cache_aware(n=2, interval=10.0, max_tokens=2 * 64)
    policy.select(req(0, [1, 2, 3, 4], time_s=0.0), StaticLoads([0, 0]))
    assert policy.tree.tenant_tokens[0] == 4 * 64
    policy.select(req(1, [9], time_s=10.0), StaticLoads([1, 0]))  # the first request at or after t = 10 s
    assert policy.tree.tenant_tokens[0] <= 2 * 64 and policy.evicted_tokens == 2 * 64


def test_consistent_hashing_keeps_sessions_together_and_falls_back_to_random():
    policy = make_policy("consistent_hashing", RouterSpec(), 8, 64, seed=3)
    homes = {s: policy.select(req(s, session=s), NoLoads()) for s in range(200)}
    assert all(policy.select(req(1000 + s, session=s), NoLoads()) == homes[s] for s in range(200))
    assert len(set(homes.values())) == 8  # 150 virtual nodes per worker spread 200 sessions over all 8
    picks = {policy.select(req(i), NoLoads()) for i in range(100)}
    assert len(picks) > 1 and policy.random_fallback == 100


def test_prefix_hash_keeps_a_prefix_on_its_worker_unless_overloaded():
    policy = make_policy("prefix_hash", RouterSpec(), 4, 64, seed=0)
    prefix = list(range(4))  # 4 x 64 = 256 tokens: the whole hashed prefix
    home = policy.select(req(0, prefix + [50]), StaticLoads([0, 0, 0, 0]))
    assert policy.select(req(1, prefix + [60, 61]), StaticLoads([1, 1, 1, 1])) == home
    loads = [2, 2, 2, 2]
    loads[home] = 9  # above 1.25 x (17 + 1) / 4 = 5.6
    other = policy.select(req(2, prefix + [70]), StaticLoads(loads))
    assert other != home and other == min(w for w in range(4) if w != home)


def test_bucket_boundaries_follow_the_gateway():
    policy = Bucket(3, abs_threshold=300, rel_threshold=1.0001, interval_s=3.0, chars_per_token=1.0, seed=0)
    assert policy.bounds == [(0, 1364), (1365, 2729), (2730, OPEN)]
    for i, n in enumerate([5, 10, 15, 20, 24, 26]):
        policy.select(req(i, input_len=n, time_s=0.1 * i), NoLoads())
    policy.select(req(6, input_len=1, time_s=3.0), NoLoads())  # the adjustment runs before this request
    # the gateway's own test (bucket.rs, test_adjust_boundary_1) expects [0, 20] [21, 26] [27, MAX]
    assert policy.bounds == [(0, 20), (21, 26), (27, OPEN)]


def test_bucket_sends_to_the_emptiest_window_when_imbalanced():
    policy = Bucket(3, abs_threshold=32, rel_threshold=1.0001, interval_s=10.0, chars_per_token=1.0, seed=0)
    assert policy.select(req(0, input_len=33), NoLoads()) == 0
    # window loads [33, 0, 0]: gap 33 > 32 and 33 > 0: imbalanced, so the least-loaded worker (1, then 2)
    assert policy.select(req(1, input_len=34), NoLoads()) == 1
    assert policy.select(req(2, input_len=34), NoLoads()) == 2


def test_split_gives_each_bucket_its_share_and_leaves_the_last_open():
    # 4 workers, 100 characters each: the sorted window is cut where each bucket's sum reaches its share
    assert _split([10, 20, 30, 40, 50, 60, 90, 100], 4, 100) == [(0, 40), (41, 60), (61, 100), (101, OPEN)]


def test_unknown_policy_names_the_allowed_ones():
    with pytest.raises(ValueError, match="allowed values: round_robin"):
        make_policy("least_load", RouterSpec(), 2, 64, 0)
