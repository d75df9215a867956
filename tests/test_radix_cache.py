"""The radix cache data structure: hit accounting, page alignment, locks, LRU eviction, lpm ordering."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simperf.radix_cache import RadixCache
from simperf.sglang_defaults import LPM_MAX_QUEUE
from simperf.sim.policy.lpm import lpm_order

BIG = 1 << 40


def ids(*xs: int) -> np.ndarray:
    return np.asarray(xs, dtype=np.int64)


def test_shared_system_prompt_hits_after_the_first_request():
    cache = RadixCache(BIG, block_tokens=4)
    system = [100, 101]  # two 4-token blocks shared by every request
    hits = []
    for r in range(4):
        hashes = ids(*system, 200 + 10 * r, 201 + 10 * r)
        lease = cache.acquire(hashes, prompt_tokens=16)
        hits.append(lease.tokens)
        cache.insert(hashes, 16 + 3)  # prompt + generated tokens; ids cover only the prompt
        cache.release(lease)
    assert hits == [0, 8, 8, 8]
    stats = cache.stats
    assert (stats.lookups, stats.hit_requests, stats.hit_tokens, stats.prompt_tokens) == (4, 3, 24, 64)
    assert stats.hit_rate == 24 / 64
    assert cache.cached_tokens == 8 + 4 * 8 and cache.evictable_tokens == cache.cached_tokens


def test_identical_prompt_recomputes_its_last_token_and_hits_are_page_aligned():
    cache = RadixCache(BIG, block_tokens=8, page_size=4)
    hashes = ids(1, 2)
    cache.insert(hashes, 16)
    assert cache.acquire(hashes, 16).tokens == 12  # <= 15, floored to the 4-token page
    assert cache.match(hashes, 15) == 12 and cache.match(hashes) == 16
    assert cache.match(ids(1, 3)) == 8 and cache.match(ids(9)) == 0 and cache.match(None) == 0


def test_insert_is_page_aligned_and_returns_only_new_tokens():
    cache = RadixCache(BIG, block_tokens=8, page_size=4)
    assert cache.insert(ids(1, 2), 14) == 12  # the 2-token unaligned tail is freed, not cached
    assert cache.insert(ids(1, 2), 16) == 4  # the partial block grows
    assert cache.insert(ids(1, 2, 3), 24) == 8
    assert cache.insert(ids(1, 2, 3), 24) == 0
    assert cache.cached_tokens == 24


def test_partial_block_stops_the_match():
    cache = RadixCache(BIG, block_tokens=8)
    cache.insert(ids(1, 2), 11)  # block 2 holds 3 of its 8 tokens
    assert cache.match(ids(1, 2, 3)) == 11


def test_eviction_under_a_small_kv_budget_takes_the_least_recently_used_leaf():
    cache = RadixCache(capacity_tokens=12, block_tokens=4)
    for root in (10, 20, 30):
        cache.insert(ids(root), 4)
    cache.release(cache.acquire(ids(10, 99), 8))  # touches block 10
    assert cache.evictable_leaf_order() == [(20,), (30,), (10,)]
    assert cache.insert(ids(40), 4) == 4  # full: evicts 20, the least recently used
    assert cache.match(ids(20)) == 0 and cache.match(ids(10)) == 4 and cache.match(ids(30)) == 4
    assert cache.cached_tokens == 12 and cache.stats.evicted_tokens == 4


def test_leaves_go_before_their_parents():
    cache = RadixCache(BIG, block_tokens=4)
    cache.insert(ids(1, 2, 3), 12)
    cache.insert(ids(7), 4)  # more recent than the whole 1-2-3 path
    assert cache.evict(4) == 4 and cache.match(ids(1, 2, 3)) == 8
    assert cache.evict(8) == 8 and cache.match(ids(1, 2, 3)) == 0 and cache.match(ids(7)) == 4


def test_locked_blocks_are_never_evicted():
    cache = RadixCache(capacity_tokens=8, block_tokens=4)
    cache.insert(ids(1, 2), 8)
    lease = cache.acquire(ids(1, 2, 3), 12)
    assert lease.tokens == 8 and cache.evictable_tokens == 0 and cache.locked_tokens == 8
    assert cache.evict(100) == 0
    assert cache.insert(ids(5), 4) == 0  # no room: the locked path stays
    cache.release(lease)
    assert cache.evictable_tokens == 8
    assert cache.insert(ids(5), 4) == 4 and cache.match(ids(1, 2)) == 4


def test_lpm_orders_by_cached_prefix_and_fcfs_does_not():
    cache = RadixCache(BIG, block_tokens=4)
    cache.insert(ids(1, 2, 3), 12)
    hashes = [ids(9, 9), ids(1, 8), ids(1, 2, 3, 4), ids(1, 2, 7)]
    fill = [8, 8, 16, 12]
    queue = [0, 1, 2, 3]  # FCFS: arrival order
    assert lpm_order(queue, hashes, fill, cache) == [2, 3, 1, 0]


def test_lpm_deprioritises_requests_sharing_an_uncached_prefix_with_an_earlier_one():
    cache = RadixCache(BIG, block_tokens=32)
    hashes = [ids(5, 6), ids(7), ids(5, 6, 8)]
    assert lpm_order([0, 1, 2], hashes, [64, 32, 96], cache) == [0, 1, 2]
    hashes = [ids(5, 6), ids(5, 6, 8), ids(7)]  # 1 shares 64 tokens with 0, which is still waiting
    assert lpm_order([0, 1, 2], hashes, [64, 96, 32], cache) == [0, 2, 1]


def test_lpm_falls_back_to_fcfs_on_long_queues():
    cache = RadixCache(BIG, block_tokens=4)
    cache.insert(ids(1), 4)
    n = LPM_MAX_QUEUE + 1
    hashes = [ids(0)] * (n - 1) + [ids(1, 2)]
    assert lpm_order(list(range(n)), hashes, [8] * n, cache) == list(range(n))


operation = st.tuples(
    st.sampled_from(["acquire", "release", "insert", "evict"]),
    st.lists(st.integers(0, 3), min_size=1, max_size=5),  # a path over a small alphabet: many shared prefixes
    st.integers(1, 24),
)


@settings(max_examples=150, deadline=None)
@given(
    ops=st.lists(operation, max_size=60),
    capacity=st.integers(0, 40),
    block=st.sampled_from([1, 2, 4]),
    page=st.sampled_from([1, 2, 4]),
)
def test_invariants_hold_under_any_sequence_of_operations(ops, capacity, block, page):
    cache = RadixCache(capacity, block, page)
    leases = []
    for kind, path, n in ops:
        hashes = np.asarray(path, dtype=np.int64)
        if kind == "acquire":
            lease = cache.acquire(hashes, n)
            assert lease.tokens <= max(n - 1, 0) and lease.tokens % page == 0
            leases.append((hashes, lease))
        elif kind == "release" and leases:
            cache.release(leases.pop(0)[1])
        elif kind == "insert":
            new = cache.insert(hashes, n)
            aligned = min(n, len(path) * block) // page * page
            assert 0 <= new <= aligned
        elif kind == "evict":
            cache.evict(n)
        assert 0 <= cache.evictable_tokens <= cache.cached_tokens <= capacity
        # a leased prefix is still cached in full
        for h, lease in leases:
            assert cache.match(h) >= lease.tokens
    for _, lease in leases:
        cache.release(lease)
    assert cache.evictable_tokens == cache.cached_tokens
    cache.evict(capacity + 1)
    assert cache.cached_tokens == 0


@settings(max_examples=100, deadline=None)
@given(
    paths=st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=6), min_size=1, max_size=10),
    page=st.sampled_from([1, 2, 4]),
)
def test_match_after_insert_returns_the_inserted_prefix(paths, page):
    cache = RadixCache(BIG, block_tokens=4, page_size=page)
    for path in paths:
        hashes = np.asarray(path, dtype=np.int64)
        n = 4 * len(path) - 1
        cache.insert(hashes, n)
        assert cache.match(hashes) >= n // page * page
        assert cache.match(hashes, n - 1) == (n - 1) // page * page


@settings(max_examples=100, deadline=None)
@given(order=st.permutations(list(range(6))), evict_n=st.integers(1, 6))
def test_eviction_follows_least_recent_use(order, evict_n):
    cache = RadixCache(BIG, block_tokens=1)
    for k in range(6):
        cache.insert(ids(k), 1)
    for k in order:  # touch every block once, in this order
        cache.release(cache.acquire(ids(k, 99), 2))
    cache.evict(evict_n)
    survivors = [k for k in range(6) if cache.match(ids(k))]
    assert survivors == sorted(order[evict_n:])
