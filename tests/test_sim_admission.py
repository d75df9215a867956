"""PrefillAdder's KV budget, checked directly on one rank (SGLang 0.5.17 managers/schedule_policy.py)."""

from __future__ import annotations

import numpy as np
from simfakes import make_serving

from simperf.radix_cache import RadixCache
from simperf.sim.admission import AddResult, PrefillAdder
from simperf.sim.rank import RankState
from simperf.sim.request import RequestTable


def rank_with(inputs, outputs, capacity, used=0, page=16, chunk=128, cache=None, hashes=None):
    table = RequestTable(list(inputs), list(outputs), True)
    if hashes is not None:
        table.hashes = [np.asarray(h) for h in hashes]
    rank = RankState(
        0, make_serving(page_size=page, max_total_tokens=capacity, chunked_prefill_size=chunk), table
    )
    rank.used = used
    rank.cache = cache
    return rank


def never_rejects(r, reason):
    raise AssertionError(f"request {r} rejected: {reason}")


def test_locking_an_admitted_prefix_takes_it_out_of_the_kv_budget():
    # 32 cached tokens (blocks 1, 2), unlocked: free = 400 - 200 used - 32 cached + 32 evictable = 200
    cache = RadixCache(400, 16, 16)
    cache.insert([1, 2], 32)
    rank = rank_with([182], [10], capacity=400, used=200, cache=cache, hashes=[[1, 2, 50]])
    rank.waiting.append(0)
    adder = PrefillAdder(rank)
    assert adder.rem_total == 200
    # the request needs 150 new + 10 output + a page = 176 < 200, but locking its 32-token prefix leaves 168:
    # SGLang re-checks inside _lock_node and refuses it (NO_TOKEN), taking no lock
    assert adder.add_one_req(0, never_rejects) is AddResult.NO_TOKEN
    assert list(rank.waiting) == [0] and cache.evictable_tokens == 32 and not adder.plan.reqs


def test_the_kv_budget_is_read_live_after_each_admission():
    # two requests share the evictable prefix [1]; admitting the first locks it, and the budget the second sees
    # is lower by those 16 tokens as well as by the first's own reservation (rem_total_tokens is a property)
    cache = RadixCache(1000, 16, 16)
    cache.insert([1], 16)
    rank = rank_with([40, 40], [4, 4], capacity=1000, cache=cache, hashes=[[1, 50], [1, 51]])
    rank.waiting.extend([0, 1])
    adder = PrefillAdder(rank)
    before = adder.rem_total
    assert adder.add_one_req(0, never_rejects) is AddResult.CONTINUE
    # the first: 24 new tokens (one 32-token page-rounded extend), a page and 4 output tokens; 16 locked
    assert adder.rem_total == before - (32 + 16 + 4) - 16


def test_a_chunk_is_capped_by_the_kv_budget_in_whole_pages():
    # request 0 has 128 of its 241 tokens prefilled; 113 remain, 128 once rounded to pages, and only 120 are free
    rank = rank_with([241], [1], capacity=600, used=480)
    rank.t.prefilled[0] = 128
    rank.t.kv_alloc[0] = 128
    rank.chunked = 0
    adder = PrefillAdder(rank)
    assert adder.rem_chunk == 128 and adder.rem_total == 120
    # SGLang caps the chunk at min(rem_chunk_tokens, rem_total_tokens); in pages that is 112 tokens, not the last
    assert adder.add_chunked_req(0) is False
    assert adder.plan.extend_lens == [112] and adder.plan.last_chunk == [False]
    rank.commit_extend(adder.plan, 0)
    assert rank.used <= rank.capacity


def test_a_chunk_takes_the_rest_when_its_pages_fit_and_runs_even_when_the_budget_is_spent():
    rank = rank_with([241], [1], capacity=600, used=472)  # 128 free: the last 113 tokens fit in 8 pages
    rank.t.prefilled[0] = 128
    rank.chunked = 0
    adder = PrefillAdder(rank)
    assert adder.add_chunked_req(0) is True and adder.plan.extend_lens == [113]
    # a spent KV budget falls back to the chunk budget: the chunked request always runs (add_chunked_req)
    rank = rank_with([1000], [1], capacity=2000, used=2000)
    rank.t.prefilled[0] = 128
    rank.chunked = 0
    adder = PrefillAdder(rank)
    assert adder.add_chunked_req(0) is False and adder.plan.extend_lens == [128]
