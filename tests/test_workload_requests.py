"""Random/fixed datasets, Poisson arrivals, warm-up and context capping, as bench_serving generates them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simperf.scenario.models import WorkloadSpec
from simperf.workload.arrivals import poisson_arrivals
from simperf.workload.lengths import cap_to_context
from simperf.workload.requests import RequestSet, build_requests


def spec(**kw) -> WorkloadSpec:
    dataset = kw.pop("dataset", {"kind": "random", "input_len": 1000, "output_len": 500})
    return WorkloadSpec(dataset=dataset, **kw)


def bench_serving_stream(seed: int, n: int, in_len: int, out_len: int, ratio: float, rate: float):
    """The global-RNG calls bench_serving makes for --dataset-name random, in its order, one gap at a time."""
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        ins = np.random.randint(max(int(in_len * ratio), 1), in_len + 1, size=n)
        outs = np.random.randint(max(int(out_len * ratio), 1), out_len + 1, size=n)
        sends, t = [], 0.0
        for _ in range(n):
            sends.append(t)
            if rate != math.inf:
                t += np.random.exponential(1.0 / rate)
        return ins, outs, np.asarray(sends)
    finally:
        np.random.set_state(state)


@pytest.mark.parametrize(
    "seed,rate,ratio", [(42, 4.0, 0.0), (1, 0.5, 0.5), (7, math.inf, 1.0), (42, 100.0, 0.25)]
)
def test_same_seed_gives_bench_serving_lengths_and_send_times(seed, rate, ratio):
    w = spec(
        dataset={"kind": "random", "input_len": 1024, "output_len": 256, "range_ratio": ratio},
        num_prompts=200,
        seed=seed,
        request_rate="inf" if rate == math.inf else rate,
    )
    got = build_requests(w)
    ins, outs, sends = bench_serving_stream(seed, 200, 1024, 256, ratio, rate)
    np.testing.assert_array_equal(got.input_len, ins)
    np.testing.assert_array_equal(got.output_len, outs)
    np.testing.assert_allclose(got.arrival_s, sends, rtol=1e-12, atol=0)


@settings(max_examples=60, deadline=None)
@given(
    in_len=st.integers(1, 5000),
    out_len=st.integers(1, 5000),
    ratio=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_random_lengths_lie_in_the_range_ratio_interval(in_len, out_len, ratio, seed):
    got = build_requests(
        spec(
            dataset={"kind": "random", "input_len": in_len, "output_len": out_len, "range_ratio": ratio},
            num_prompts=50,
            seed=seed,
        )
    )
    for lens, full in ((got.input_len, in_len), (got.output_len, out_len)):
        assert lens.dtype == np.int64
        assert lens.min() >= max(int(full * ratio), 1)
        assert lens.max() <= full


def test_default_range_ratio_zero_means_about_half_the_nominal_length():
    got = build_requests(
        spec(dataset={"kind": "random", "input_len": 1000, "output_len": 1000}, num_prompts=5000)
    )
    assert got.input_len.mean() == pytest.approx(500.5, rel=0.03)
    assert got.input_len.min() >= 1


def test_fixed_dataset_is_range_ratio_one():
    fixed = build_requests(
        spec(dataset={"kind": "fixed", "input_len": 300, "output_len": 20}, request_rate=3.0)
    )
    ratio_one = build_requests(
        spec(
            dataset={"kind": "random", "input_len": 300, "output_len": 20, "range_ratio": 1.0},
            request_rate=3.0,
        )
    )
    assert (fixed.input_len == 300).all() and (fixed.output_len == 20).all()
    np.testing.assert_array_equal(fixed.arrival_s, ratio_one.arrival_s)


def test_special_tokens_are_subtracted_like_bench_serving():
    plain = build_requests(spec(num_prompts=50))
    bos = build_requests(spec(num_prompts=50), num_special_tokens=1)
    np.testing.assert_array_equal(bos.input_len, plain.input_len - 1)
    np.testing.assert_array_equal(bos.arrival_s, plain.arrival_s)
    assert bos.prompt_special_tokens == 1 and plain.prompt_special_tokens == 0


def test_poisson_arrivals_have_the_requested_mean_rate():
    got = build_requests(spec(num_prompts=20000, request_rate=8.0, seed=3))
    assert got.arrival_s[0] == 0.0
    assert np.all(np.diff(got.arrival_s) >= 0)
    gaps = np.diff(got.arrival_s)
    assert 1 / gaps.mean() == pytest.approx(8.0, rel=0.03)
    assert gaps.std() == pytest.approx(gaps.mean(), rel=0.05)  # exponential: std == mean


def test_infinite_rate_sends_everything_at_zero():
    got = build_requests(spec(num_prompts=100))
    assert got.arrival_s.dtype == np.float64
    assert (got.arrival_s == 0).all() and got.sender_done_s == 0.0


def test_client_keeps_sleeping_one_gap_after_the_last_request():
    arrivals = poisson_arrivals(np.random.RandomState(0), 5, 2.0)
    gaps = np.random.RandomState(0).exponential(0.5, size=5)
    np.testing.assert_allclose(arrivals.send_s, np.concatenate(([0.0], np.cumsum(gaps)[:-1])))
    assert arrivals.sender_done_s == pytest.approx(gaps.sum())


def test_warmup_is_the_first_request_with_at_most_32_outputs():
    got = build_requests(spec(num_prompts=10, warmup_requests=2))
    assert got.warmup == (int(got.input_len[0]), min(int(got.output_len[0]), 32))
    assert got.warmup_count == 2
    assert build_requests(spec(num_prompts=10, warmup_requests=0)).warmup is None


def test_context_cap_follows_sglangs_limits_and_counts_changes():
    capped = cap_to_context(np.array([100, 4000, 5000, 10, 4000]), np.array([50, 200, 10, 10, 95]), 4096)
    # max_req_len = 4095, max_req_input_len = 4090: prompts < 4090, outputs <= 4095 - prompt - 1
    np.testing.assert_array_equal(capped.input_len, [100, 4000, 4089, 10, 4000])
    np.testing.assert_array_equal(capped.output_len, [50, 94, 5, 10, 94])
    assert capped.num_capped == 3


def test_context_cap_also_keeps_below_a_small_kv_pool():
    capped = cap_to_context(np.array([3000, 100]), np.array([500, 500]), 131072, kv_pool_tokens=2049)
    # max_req_len = 2048 (pool - 1), max_req_input_len = 2043
    np.testing.assert_array_equal(capped.input_len, [2042, 100])
    np.testing.assert_array_equal(capped.output_len, [5, 500])


def test_build_requests_caps_to_the_context_length():
    uncapped = build_requests(spec(num_prompts=300))
    got = build_requests(spec(num_prompts=300), context_len=1200)
    assert (got.input_len + got.output_len < 1200).all()
    assert got.num_capped == int((uncapped.input_len + uncapped.output_len >= 1200).sum()) > 0


def test_request_set_rejects_decreasing_arrivals():
    with pytest.raises(ValueError):
        RequestSet(np.array([1, 2]), np.array([1, 1]), np.array([1.0, 0.5]))


def test_sample_random_requests_rule_reproduces_a_published_mid_2025_run():
    """sglang PR 8638 (bench_serving of 0.4.10, --dataset-name random, --random-input-len 8192,
    --random-output-len 1024, no range ratio, seed 1) printed 5158 / 263118 / 502881 input tokens for 1, 64 and
    128 prompts: the legacy rule draws exactly those, and outputs may start at 0."""
    from simperf.scenario.models import RandomDataset, WorkloadSpec
    from simperf.workload.requests import build_requests

    totals = {}
    for n in (1, 64, 128):
        ds = RandomDataset(input_len=8192, output_len=1024, length_rule="sample_random_requests")
        wl = WorkloadSpec(dataset=ds, num_prompts=n, request_rate="inf", seed=1)
        req = build_requests(wl, num_special_tokens=1)
        totals[n] = int(req.input_len.sum())
        assert req.output_len.min() >= 1
    assert totals == {1: 5158, 64: 263118, 128: 502881}
    first = build_requests(
        WorkloadSpec(
            dataset=RandomDataset(input_len=8192, output_len=1024, length_rule="sample_random_requests"),
            num_prompts=1,
            request_rate="inf",
            seed=1,
        )
    )
    assert int(first.output_len[0]) == 235  # the published run's 235 output tokens


def test_legacy_rule_can_draw_zero_outputs_and_prices_them_as_one_token():
    from simperf.scenario.models import RandomDataset, WorkloadSpec
    from simperf.workload.requests import build_requests

    ds = RandomDataset(input_len=16, output_len=2, length_rule="sample_random_requests")
    req = build_requests(WorkloadSpec(dataset=ds, num_prompts=200, request_rate="inf", seed=3))
    assert req.output_len.min() == 1
    assert any("output length 0" in note for note in req.notes)
    current = build_requests(
        WorkloadSpec(
            dataset=RandomDataset(input_len=16, output_len=2), num_prompts=200, request_rate="inf", seed=3
        )
    )
    assert not current.notes
