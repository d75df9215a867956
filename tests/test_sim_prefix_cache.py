"""The radix prefix cache inside the scheduler: hits shorten prefills, finished KV is cached, LRU eviction under
pressure, and the lpm policy."""

from __future__ import annotations

import numpy as np
from simfakes import LinearCost, make_serving
from test_sim_scheduler import NO_OVERHEAD

from simperf.sim.engine import Simulator


def run(inputs, outputs, arrivals, hashes, block=16, serving=None, cost=None, observer=None):
    sim = Simulator(serving or make_serving(), cost or LinearCost(), NO_OVERHEAD, kv_observer=observer)
    rec, stats = sim.run(
        np.asarray(inputs),
        np.asarray(outputs),
        np.asarray(arrivals, dtype=float),
        block_hashes=[np.asarray(h) for h in hashes],
        block_tokens=block,
    )
    return sim, rec, stats


def test_shared_system_prompt_hits_after_the_first_request():
    cost = LinearCost()
    # a 32-token system prompt (blocks 1, 2) and a private 16-token question each
    hashes = [[1, 2, 10], [1, 2, 20], [1, 2, 30]]
    _, rec, _ = run([48, 48, 48], [4, 4, 4], [0.0, 1.0, 2.0], hashes, cost=cost)
    assert list(rec.cached_tokens) == [0, 32, 32]
    assert [c[0] for c in cost.extend_calls] == [[48], [16], [16]]
    assert [c[1] for c in cost.extend_calls] == [[0], [32], [32]]


def test_hit_never_covers_the_last_prompt_token():
    cost = LinearCost()
    _, rec, _ = run([32, 32], [2, 2], [0.0, 1.0], [[1, 2], [1, 2]], cost=cost)
    # the same 32-token prompt again: with page size 1 SGLang matches token by token but always recomputes the
    # prompt's last token
    assert list(rec.cached_tokens) == [0, 31]
    assert cost.extend_calls[1] == ([1], [31])


def test_hit_is_page_aligned():
    cost = LinearCost()
    _, rec, _ = run(
        [32, 32], [2, 2], [0.0, 1.0], [[1, 2], [1, 2]], serving=make_serving(page_size=8), cost=cost
    )
    assert list(rec.cached_tokens) == [0, 24]


def test_cache_evicts_lru_under_a_small_kv_pool_and_never_exceeds_it():
    peaks = []
    observer = lambda ranks: peaks.append(ranks[0].used + ranks[0].cache.cached_tokens)  # noqa: E731
    serving = make_serving(max_total_tokens=200)
    # five distinct 64-token prompts fill the pool with cached blocks; the sixth repeats the first, long evicted
    hashes = [[i * 10 + b for b in range(4)] for i in range(5)] + [[0, 1, 2, 3]]
    sim, rec, _ = run([64] * 6, [2] * 6, [0.0, 1, 2, 3, 4, 5], hashes, serving=serving, observer=observer)
    assert max(peaks) <= 200
    assert rec.cached_tokens[-1] == 0
    assert sim.ranks[0].cache.stats.evicted_tokens > 0


def test_lpm_admits_the_request_with_the_longest_cached_prefix_first():
    orders = {}
    for policy in ("fcfs", "lpm"):
        cost = LinearCost(base_us=1000, per_token_us=0)
        serving = make_serving(schedule_policy=policy, max_running_requests=1, overlap_schedule=False)
        # request 0 caches blocks 1-4; requests 1 and 2 wait behind it; request 2 shares its prefix
        hashes = [[1, 2, 3, 4, 5], [7, 8, 9, 10, 11], [1, 2, 3, 4, 6]]
        _, rec, _ = run([80, 80, 80], [3, 3, 3], [0.0, 0.0001, 0.0002], hashes, serving=serving, cost=cost)
        orders[policy] = list(rec.request_id[np.argsort(rec.first_token_s)])
    assert orders["fcfs"] == [0, 1, 2]
    assert orders["lpm"] == [0, 2, 1]


def test_disable_radix_cache_turns_hits_off():
    serving = make_serving(disable_radix_cache=True)
    _, rec, _ = run([48, 48], [4, 4], [0.0, 1.0], [[1, 2, 10], [1, 2, 20]], serving=serving)
    assert list(rec.cached_tokens) == [0, 0]


def test_a_prompt_is_cached_when_its_prefill_is_processed_not_when_it_finishes(tmp_path):
    """SGLang's cache_unfinished_req (0.5.17) inserts a prompt into the radix tree when its prefill result is
    processed: a second request with the same prefix, sent while the first still decodes, hits it."""
    import json

    from simperf.pipeline import predict
    from simperf.scenario.models import Scenario

    trace = tmp_path / "t.jsonl"
    rows = [
        {"arrival_s": 0.0, "input_len": 2048, "output_len": 400, "hash_ids": [1, 2, 3, 4]},
        {"arrival_s": 0.5, "input_len": 2048, "output_len": 8, "hash_ids": [1, 2, 3, 4]},
    ]
    trace.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    scenario = Scenario.model_validate(
        {
            "model": {"name": "qwen3-8b"},
            "hardware": {"gpu": "h100"},
            "workload": {"dataset": {"kind": "trace", "path": str(trace)}, "num_prompts": 2},
        }
    )
    records = predict(scenario).records
    # the first request decodes 400 tokens (~3 s): still running when the second arrives at 0.5 s
    assert records.finish_s[0] > 1.0
    assert records.cached_tokens[1] == 2047  # the whole prompt but its last token, recomputed
