"""Generators with shared prefixes (bench_serving's generated-shared-prefix, multi-turn chats) and gamma arrivals."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from simperf.radix_cache import RadixCache
from simperf.scenario.models import WorkloadSpec
from simperf.workload.arrivals import gamma_arrivals, poisson_arrivals
from simperf.workload.requests import build_requests


def gsp(**kw) -> WorkloadSpec:
    dataset = {"kind": "shared_prefix", **kw.pop("dataset", {})}
    return WorkloadSpec(dataset=dataset, **kw)


def test_shared_prefix_lengths_and_gaps_follow_bench_serving_numpy_calls():
    spec = gsp(
        dataset={"num_groups": 4, "prompts_per_group": 3, "range_ratio": 0.5, "ordered": True},
        request_rate=2.0,
        seed=7,
    )
    got = build_requests(spec)
    state = np.random.RandomState(7)
    system = state.randint(1024, 2049, size=4)
    question = state.randint(64, 129, size=12).reshape(4, 3)
    output = state.randint(128, 257, size=12)
    gaps = state.exponential(0.5, size=12)
    np.testing.assert_array_equal(got.input_len, (system[:, None] + question).ravel())
    np.testing.assert_array_equal(got.output_len, output)
    np.testing.assert_allclose(got.arrival_s[1:], np.cumsum(gaps)[:-1])


def test_shared_prefix_groups_share_their_system_prompt_blocks_only():
    got = build_requests(gsp(dataset={"num_groups": 3, "prompts_per_group": 4, "system_prompt_len": 1000}))
    assert len(got) == 12 and got.hash_block_tokens == 64
    cache = RadixCache(1 << 40, got.hash_block_tokens)
    hits = []
    for hashes, prompt in zip(got.block_hashes, got.input_len.tolist(), strict=True):
        assert hashes.size == -(-prompt // 64)
        hits.append(cache.acquire(hashes, prompt).tokens)
        cache.insert(hashes, prompt)
    # 1000-token system prompts: 15 whole 64-token blocks (960 tokens) are shared; the first of each group misses
    assert sorted(hits) == [0] * 3 + [960] * 9


def test_shared_prefix_shuffle_is_a_permutation_of_the_ordered_requests():
    kw = {"num_groups": 5, "prompts_per_group": 5, "range_ratio": 0.5}
    ordered = build_requests(gsp(dataset={**kw, "ordered": True}))
    shuffled = build_requests(gsp(dataset=kw))
    assert sorted(ordered.input_len.tolist()) == sorted(shuffled.input_len.tolist())
    groups = [int(h[0]) for h in ordered.block_hashes]
    assert groups == sorted(groups)  # group by group
    assert [int(h[0]) for h in shuffled.block_hashes] != groups


def test_num_prompts_must_agree_with_a_generated_dataset_size():
    with pytest.raises(ValidationError, match=r"num_groups x prompts_per_group \(1024\)"):
        gsp(num_prompts=1000)
    assert len(build_requests(gsp(num_prompts=1024))) == 1024


def multi_turn(**kw) -> WorkloadSpec:
    dataset = {"kind": "multi_turn", "input_len": 100, "output_len": 50, **kw.pop("dataset", {})}
    return WorkloadSpec(dataset=dataset, **kw)


def test_each_turn_resends_the_previous_turns_and_hits_them():
    spec = multi_turn(
        dataset={"num_conversations": 1, "turns": 3, "system_prompt_len": 128, "block_tokens": 16},
        request_rate=1.0,
    )
    got = build_requests(spec)
    assert got.input_len.tolist() == [228, 378, 528]  # 128 + 100; + 50 + 100; + 50 + 100
    assert got.follows.tolist() == [-1, 0, 1]
    cache = RadixCache(1 << 40, 16)
    hits = []
    for r in range(3):
        lease = cache.acquire(got.block_hashes[r], int(got.input_len[r]))
        hits.append(lease.tokens)
        cache.insert(got.block_hashes[r], int(got.input_len[r] + got.output_len[r] - 1))
        cache.release(lease)
    # turn 2 re-sends 278 tokens of turn 1 (its 228-token prompt and 50-token answer): 17 whole 16-token blocks;
    # the block holding the answer's last token only partly (277 KV tokens cached) is not reused
    assert hits == [0, 272, 416]


def test_conversations_share_the_system_prompt_and_turns_stay_in_order():
    spec = multi_turn(
        dataset={"num_conversations": 20, "turns": 4, "system_prompt_len": 256, "turn_interval_s": 5.0},
        request_rate=4.0,
        seed=3,
    )
    got = build_requests(spec)
    assert len(got) == 80 and np.all(np.diff(got.arrival_s) >= 0)
    first_turns = [h for h, f in zip(got.block_hashes, got.follows, strict=True) if f < 0]
    assert len(first_turns) == 20 and all(np.array_equal(h[:4], first_turns[0][:4]) for h in first_turns)
    later = np.flatnonzero(got.follows >= 0)
    assert np.all(got.arrival_s[later] >= got.arrival_s[got.follows[later]])
    assert np.all(got.input_len[later] > got.input_len[got.follows[later]])


def test_gamma_arrivals_have_the_mean_rate_and_the_burstiness_cv():
    rng = np.random.RandomState(0)
    arrivals = gamma_arrivals(rng, 200_000, rate=5.0, burstiness=0.25)
    gaps = np.diff(np.append(arrivals.send_s, arrivals.sender_done_s))
    assert gaps.mean() == pytest.approx(0.2, rel=0.02)
    assert gaps.std() / gaps.mean() == pytest.approx(1 / math.sqrt(0.25), rel=0.03)


def test_gamma_with_burstiness_one_is_bench_serving_poisson():
    a = gamma_arrivals(np.random.RandomState(5), 100, 3.0, 1.0)
    b = poisson_arrivals(np.random.RandomState(5), 100, 3.0)
    np.testing.assert_array_equal(a.send_s, b.send_s)
    spec = WorkloadSpec(
        dataset={"kind": "random", "input_len": 10, "output_len": 10},
        arrival_process="gamma",
        burstiness=0.5,
        request_rate=2.0,
    )
    assert len(build_requests(spec)) == 1000


def test_burstiness_needs_the_gamma_process():
    with pytest.raises(ValidationError, match="burstiness applies to arrival_process: gamma"):
        WorkloadSpec(dataset={"kind": "fixed", "input_len": 1, "output_len": 1}, burstiness=0.5)


def test_generating_ten_thousand_requests_is_fast():
    started = time.perf_counter()
    got = build_requests(gsp(dataset={"num_groups": 100, "prompts_per_group": 100}, request_rate=10.0))
    chats = build_requests(multi_turn(dataset={"num_conversations": 1000, "turns": 10}, request_rate=10.0))
    assert len(got) == 10_000 and len(chats) == 10_000
    assert time.perf_counter() - started < 5.0


GSP_RUNS = sorted(
    p
    for p in (Path(__file__).resolve().parents[1] / "groundtruth").glob("*/*/gsp-*")
    if "radix-off" not in p.parent.name
)


@pytest.mark.parametrize("run", GSP_RUNS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shared_prefix_order_is_bench_serving_s_permutation_on_the_corpus(run):
    """bench_serving (SGLang 0.5.17) shuffles the gsp prompts with Python's `random` after drawing the prompt text
    from it; the server's cached tokens show which group each request belongs to. At concurrency 16 the first
    wave of 16 requests holds all 8 groups, so every later request hits its group's 2048-token system prompt;
    within the first wave a request hits only if its group came earlier, and a group's first request never hits."""
    import polars as pl

    from simperf.accuracy.corpus import scenario_of

    scenario = scenario_of(run)
    made = build_requests(scenario.workload)
    groups = [int(h[0]) for h in made.block_hashes]  # a group's system prompt blocks start with its own id
    measured = (
        pl.read_parquet(run / "requests.parquet").sort("client_send_s")["server_cached_tokens"].to_list()
    )
    assert len(groups) == len(measured) == 64
    wave = scenario.workload.max_concurrency
    assert set(groups[:wave]) == set(groups)  # all 8 groups in the first wave, as the server saw
    assert all(c >= 2048 for c in measured[wave:])  # Llama's tokenizer at times matches one more token
    for i, cached in enumerate(measured[:wave]):
        if groups[i] not in groups[:i]:
            assert cached == 0, i
        if cached:
            assert groups[i] in groups[:i], i
