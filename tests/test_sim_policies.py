"""Scheduling policies order the waiting queue (SGLang's SchedulePolicy.calc_priority); admission takes from it."""

from __future__ import annotations

import numpy as np
import pytest
from simfakes import NO_OVERHEADS, LinearCost, make_serving

from simperf.capabilities import SCHEDULE_POLICIES
from simperf.radix_cache import RadixCache
from simperf.sim.engine import Simulator
from simperf.sim.policy import POLICIES, WaitingQueue, make_policy, register_policy
from simperf.sim.request import RequestTable

QUIET = NO_OVERHEADS


def queue(inputs, outputs, cache=None, hashes=None):
    table = RequestTable(list(inputs), list(outputs), True)
    if hashes is not None:
        table.hashes = [None if h is None else np.asarray(h) for h in hashes]
    return WaitingQueue(list(range(len(inputs))), table, cache)


def test_every_policy_a_scenario_may_name_is_registered_and_nothing_else():
    assert set(POLICIES) == set(SCHEDULE_POLICIES)


def test_fcfs_keeps_the_queue_and_lof_puts_the_longest_output_first():
    q = queue([10, 10, 10, 10], [5, 50, 5, 20])
    assert make_policy("fcfs", None).order(q) is None
    assert make_policy("lof", None).order(q) == [1, 3, 0, 2]  # equal outputs keep arrival order


def test_random_shuffles_reproducibly_per_seed():
    q = queue([10] * 20, [5] * 20)
    first = make_policy("random", None, seed=7).order(q)
    assert sorted(first) == list(range(20)) and first != list(range(20))
    assert make_policy("random", None, seed=7).order(q) == first
    assert make_policy("random", None, seed=8).order(q) != first


def test_cache_aware_policies_run_as_fcfs_without_a_prefix_cache():
    for name in ("lpm", "dfs-weight"):
        assert make_policy(name, None).name == "fcfs"
        assert make_policy(name, RadixCache(1000, 4)).name == name


def test_dfs_weight_serves_the_subtree_with_most_waiting_requests_first():
    cache = RadixCache(10_000, 4)
    cache.insert([1, 2], 8)  # prefix A: blocks 1, 2
    cache.insert([7], 4)  # prefix B: block 7
    # requests 0 and 3 match B, 1, 2 and 4 extend A; 5 matches nothing (root)
    hashes = [[7, 8], [1, 2, 3], [1, 2, 5], [7, 9], [1, 2, 6], [4]]
    q = queue([12] * 6, [5] * 6, cache, hashes)
    order = make_policy("dfs-weight", cache).order(q)
    # A's subtree holds three requests, B's two: A first, then B, then what ends at the root
    assert order == [1, 2, 4, 0, 3, 5]


def test_the_scheduler_admits_in_the_policy_order():
    # one slot at a time (max_running_requests=1): requests run in the order the policy puts them
    serving = make_serving(max_running_requests=1, schedule_policy="lof")
    fcfs = Simulator(make_serving(max_running_requests=1), LinearCost(), QUIET)
    arrival_order, _ = fcfs.run(np.array([10, 10, 10]), np.array([3, 30, 10]), np.zeros(3))
    assert np.all(np.diff(arrival_order.first_token_s) > 0)
    sim = Simulator(serving, LinearCost(), QUIET)
    records, _ = sim.run(np.array([10, 10, 10]), np.array([3, 30, 10]), np.zeros(3))
    first = dict(zip(records.request_id.tolist(), records.first_token_s.tolist(), strict=True))
    # all three wait at the first iteration: lof puts 1 (30 out) before 2 (10 out) before 0 (3 out)
    assert first[1] < first[2] < first[0]


@pytest.fixture
def shortest_prompt_first():
    """A policy that is not SGLang's: what adding one takes (docs/extending.md) — one class, registered."""

    @register_policy
    class ShortestPromptFirst:
        name = "test-spf"
        cache_aware = False
        reorders = True

        def __init__(self, seed: int = 0) -> None:
            pass

        def order(self, q: WaitingQueue) -> list[int] | None:
            return sorted(q.ids, key=lambda r: q.table.input_len[r])

    yield ShortestPromptFirst
    del POLICIES["test-spf"]


def test_a_new_policy_is_one_registered_class(shortest_prompt_first):
    serving = make_serving(max_running_requests=1, schedule_policy="test-spf")
    sim = Simulator(serving, LinearCost(), QUIET)
    records, _ = sim.run(np.array([500, 300, 100]), np.array([5, 5, 5]), np.zeros(3))
    first = dict(zip(records.request_id.tolist(), records.first_token_s.tolist(), strict=True))
    assert first[2] < first[1] < first[0]  # shortest prompt first
    assert isinstance(sim.ranks[0].policy, shortest_prompt_first)
