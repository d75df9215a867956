"""The SGLang scheduler model, checked with a cost model simple enough to compute by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from simfakes import NO_OVERHEADS, LinearCost, make_serving

from simperf.scenario.models import Overheads
from simperf.sim.engine import Simulator

NO_OVERHEAD = NO_OVERHEADS


def simulate(inputs, outputs, arrivals=None, serving=None, cost=None, overheads=NO_OVERHEAD, **kw):
    inputs = np.asarray(inputs)
    outputs = np.asarray(outputs)
    arrivals = np.zeros(len(inputs)) if arrivals is None else np.asarray(arrivals, dtype=float)
    sim = Simulator(serving or make_serving(), cost or LinearCost(), overheads, **kw.pop("sim_kw", {}))
    records, stats = sim.run(inputs, outputs, arrivals, **kw)
    return sim, records, stats


def token_times(records, i):
    return records.chunk_time_s[records.chunk_offsets[i] : records.chunk_offsets[i + 1]]


def test_chunked_prefill_splits_long_prompt_at_page_boundary():
    cost = LinearCost()
    serving = make_serving(page_size=16, chunked_prefill_size=100)
    simulate([250], [2], serving=serving, cost=cost)
    # floor_P(100) = 96 per chunk, the last chunk takes the rest
    assert [c[0] for c in cost.extend_calls] == [[96], [96], [58]]
    assert [c[1] for c in cost.extend_calls] == [[0], [96], [192]]


def test_first_token_comes_after_last_prefill_chunk():
    cost = LinearCost(base_us=1000, per_token_us=0)
    serving = make_serving(chunked_prefill_size=100, overlap_schedule=False)
    _, rec, _ = simulate([250], [3], serving=serving, cost=cost)
    # three 1 ms chunk iterations, then the first token; two 1 ms decode steps follow
    assert token_times(rec, 0) == pytest.approx([0.003, 0.004, 0.005])


def test_prefill_preempts_decode_so_running_requests_see_an_itl_gap():
    cost = LinearCost(base_us=1000, per_token_us=10)
    serving = make_serving(overlap_schedule=False)
    # request 1 arrives while request 0 decodes: its 1000-token prefill (11 ms) runs instead of a decode step, so
    # request 0 waits for the prefill plus the next decode step, now of two rows (1.02 ms)
    _, rec, _ = simulate([10, 1000], [50, 5], arrivals=[0.0, 0.0205], serving=serving, cost=cost)
    gaps = np.diff(token_times(rec, 0))
    assert gaps.max() == pytest.approx(0.011 + 0.00102, rel=1e-6)
    assert np.median(gaps) == pytest.approx(0.00101, rel=1e-6)


def test_admission_stops_at_max_running_requests():
    seen_bs = []

    class Spy(LinearCost):
        def decode_steps(self, bs, padded_bs, kv_total, graph, shared_kv=0.0):
            seen_bs.append(bs)
            return super().decode_steps(bs, padded_bs, kv_total, graph)

    _, rec, _ = simulate([10] * 20, [30] * 20, serving=make_serving(max_running_requests=4), cost=Spy())
    assert max(seen_bs) == 4
    assert len(rec) == 20


def test_decode_pads_to_cuda_graph_bucket_and_runs_eager_past_max_bs():
    seen = []

    class Spy(LinearCost):
        def decode_steps(self, bs, padded_bs, kv_total, graph, shared_kv=0.0):
            seen.append((bs, padded_bs, graph))
            return super().decode_steps(bs, padded_bs, kv_total, graph)

    serving = make_serving(cuda_graph_bs=(1, 2, 4, 8), cuda_graph_max_bs=8)
    simulate([10] * 5, [4] * 5, serving=serving, cost=Spy())
    assert (5, 8, True) in seen
    simulate([10] * 9, [4] * 9, serving=serving, cost=Spy())
    assert (9, 9, False) in seen


def test_retraction_frees_kv_and_every_request_still_gets_all_its_tokens():
    # without ignore_eos SGLang reserves only new_token_ratio x the remaining output of running requests, so
    # requests arriving one by one are over-admitted and must be retracted when decoding fills the pool
    serving = make_serving(max_total_tokens=400, max_running_requests=64, init_new_token_ratio=0.1)
    peak = []
    sim, rec, stats = simulate(
        [40] * 8,
        [100] * 8,
        arrivals=[0.005 * i for i in range(8)],
        serving=serving,
        ignore_eos=False,
        sim_kw={"kv_observer": lambda ranks: peak.append(ranks[0].used)},
    )
    assert stats.retractions > 0
    assert len(rec) == 8
    assert np.array_equal(np.diff(rec.chunk_offsets), rec.output_len)
    assert max(peak) <= 400
    assert rec.retractions.sum() == stats.retractions


def test_request_larger_than_kv_pool_or_context_is_rejected_with_reason():
    serving = make_serving(max_total_tokens=500)
    _, rec, stats = simulate([100, 300, 900], [10, 400, 10], serving=serving)
    assert list(rec.request_id) == [0]
    reasons = dict(stats.rejected)
    assert "KV" in reasons[1]
    assert "max_req_input_len" in reasons[2]


def test_overlap_hides_cpu_scheduling_behind_gpu_time():
    cost = LinearCost(base_us=1000, per_token_us=0)
    overheads = NO_OVERHEAD.model_copy(
        update={"scheduler_us_per_iteration": 300, "process_us_per_iteration": 200}
    )
    _, normal, _ = simulate(
        [10], [200], serving=make_serving(overlap_schedule=False), cost=cost, overheads=overheads
    )
    _, overlap, _ = simulate(
        [10], [200], serving=make_serving(overlap_schedule=True), cost=cost, overheads=overheads
    )
    # normal loop: period = sched + GPU + process; overlap: period = max(GPU, sched + process)
    assert np.median(np.diff(token_times(normal, 0))) == pytest.approx(0.0015)
    assert np.median(np.diff(token_times(overlap, 0))) == pytest.approx(0.0010)


def test_the_cpu_pays_per_running_request_and_the_overlap_hides_it_only_behind_a_longer_gpu_step():
    """Overheads.process_us_per_running_request: each processed batch costs the CPU this much per request. Without
    the overlap it adds to every iteration; with it the iteration is the longer of the GPU step and the CPU's."""
    overheads = NO_OVERHEAD.model_copy(
        update={
            "scheduler_us_per_iteration": 300,
            "process_us_per_iteration": 200,
            "process_us_per_running_request": 10,
        }
    )
    n = 40  # requests decoding together (same lengths, sent at once): the CPU's work is 300 + 200 + 10 x 40 = 900 µs
    for gpu_us, overlap, period_us in [
        (1000, False, 1900),  # normal loop: in series
        (1000, True, 1000),  # overlap, GPU-bound: hidden
        (500, True, 900),  # overlap, CPU-bound: the iteration is the CPU's
    ]:
        cost = LinearCost(base_us=gpu_us, per_token_us=0)
        _, rec, _ = simulate(
            [10] * n,
            [100] * n,
            serving=make_serving(overlap_schedule=overlap),
            cost=cost,
            overheads=overheads,
        )
        assert np.median(np.diff(token_times(rec, 0))) == pytest.approx(period_us * 1e-6), (gpu_us, overlap)


def test_dp_ranks_pay_the_per_request_cpu_cost_in_parallel():
    """Each DP rank's scheduler processes its own requests: the iteration pays the busiest rank's share."""
    from simperf.scenario.resolved import ParallelLayout

    overheads = NO_OVERHEAD.model_copy(update={"process_us_per_running_request": 10})
    cost = LinearCost(base_us=1000, per_token_us=0)
    n = 40  # 20 per rank
    serving = make_serving(layout=ParallelLayout(2, 2, 1), overlap_schedule=False)
    _, rec, _ = simulate([10] * n, [100] * n, serving=serving, cost=cost, overheads=overheads)
    assert np.median(np.diff(token_times(rec, 0))) == pytest.approx((1000 + 10 * n / 2) * 1e-6)


def test_max_concurrency_delays_sends_until_a_request_finishes():
    _, rec, _ = simulate([10] * 6, [20] * 6, max_concurrency=2)
    order = np.argsort(rec.send_s)
    sends = rec.send_s[order]
    finishes = rec.finish_s[order]
    for i in range(2, 6):
        # request i is sent no earlier than the (i-2)-th finish
        assert sends[i] >= np.sort(finishes)[i - 2] - 1e-12
    # at most two requests in flight at any send time
    for t in sends:
        assert ((rec.send_s <= t) & (rec.finish_s > t)).sum() <= 2


def test_same_inputs_give_identical_records():
    rng = np.random.default_rng(3)
    inputs, outputs = rng.integers(10, 500, 50), rng.integers(1, 80, 50)
    arrivals = np.cumsum(rng.exponential(0.01, 50))
    arrivals[0] = 0
    _, a, _ = simulate(inputs, outputs, arrivals)
    _, b, _ = simulate(inputs, outputs, arrivals)
    assert np.array_equal(a.chunk_time_s, b.chunk_time_s) and np.array_equal(a.send_s, b.send_s)


workloads = st.integers(min_value=1, max_value=25).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 300), min_size=n, max_size=n),
        st.lists(st.integers(1, 60), min_size=n, max_size=n),
        st.lists(st.floats(0, 0.05), min_size=n, max_size=n),
        st.sampled_from([1, 4, 16]),
        st.integers(300, 3000),
        st.booleans(),
        st.sampled_from([None, 2, 5]),
    )
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads)
def test_scheduler_invariants_hold_on_random_workloads(case):
    inputs, outputs, gaps, page, pool, overlap, concurrency = case
    arrivals = np.cumsum(gaps) - gaps[0]
    serving = make_serving(
        page_size=page,
        max_total_tokens=pool,
        chunked_prefill_size=128,
        overlap_schedule=overlap,
        max_running_requests=8,
    )
    used_ok = []
    sim, rec, stats = simulate(
        inputs,
        outputs,
        arrivals,
        serving=serving,
        overheads=Overheads(),
        max_concurrency=concurrency,
        sim_kw={"kv_observer": lambda ranks: used_ok.append(all(0 <= r.used <= r.capacity for r in ranks))},
    )
    # KV in use never exceeds capacity
    assert all(used_ok)
    # every request finishes or is rejected with a reason
    assert len(rec) + len(stats.rejected) == len(inputs)
    # tokens out == tokens asked
    assert np.array_equal(np.diff(rec.chunk_offsets), rec.output_len)
    assert np.array_equal(rec.output_len, np.asarray(outputs)[rec.request_id])
    for i in range(len(rec)):
        times = token_times(rec, i)
        # the first token (end of prefill) comes after the request was sent; token times never go backwards
        assert times[0] > rec.send_s[i]
        assert np.all(np.diff(times) > 0)
        assert times[-1] == pytest.approx(rec.finish_s[i])
    # all KV is returned at the end
    assert all(r.used == 0 for r in sim.ranks)


def test_speculative_decoding_emits_accepted_tokens_per_iteration_as_bench_serving_sees_them():
    from simperf.report.metrics import summarize
    from simperf.scenario.resolved import SpecSettings

    # one draft step that is always accepted (mean 2 = num_steps + 1): every iteration yields 2 tokens
    spec = SpecSettings("mtp", 1, 1, 2, 2.0)
    serving = make_serving(speculative=spec, overlap_schedule=False)
    cost = LinearCost(base_us=1000, per_token_us=0)
    _, rec, _ = simulate([10], [9], serving=serving, cost=cost)
    chunks = rec.chunk_num_tokens[rec.chunk_offsets[0] : rec.chunk_offsets[1]]
    assert list(chunks) == [1, 2, 2, 2, 2]  # prefill token, then four verify iterations of two tokens
    times = token_times(rec, 0)
    assert np.diff(times) == pytest.approx([0.001] * 4)
    m = summarize(rec)
    # TPOT = (latency - ttft) / (output - 1) = 4 ms / 8; each 2-token chunk gives two ITL entries of 0.5 ms
    assert m["mean_tpot_ms"] == pytest.approx(0.5)
    assert m["mean_itl_ms"] == pytest.approx(0.5)


def test_speculative_last_chunk_is_cut_to_the_tokens_still_needed():
    from simperf.scenario.resolved import SpecSettings

    spec = SpecSettings("mtp", 3, 1, 4, 2.4, 1.5, 3.3)
    serving = make_serving(speculative=spec, max_running_requests=48)
    _, rec, _ = simulate([50] * 20, [37] * 20, serving=serving)
    counts = np.add.reduceat(rec.chunk_num_tokens, rec.chunk_offsets[:-1])
    assert (counts == 37).all()
    assert rec.chunk_num_tokens.max() <= 4
    # with a mean of 2.4 tokens per iteration, 36 decode tokens take about 15 iterations
    iterations = np.diff(rec.chunk_offsets) - 1
    assert 10 <= iterations.mean() <= 22


def test_dp_ranks_take_requests_round_robin_and_step_in_lock_step():
    from simperf.scenario.resolved import ParallelLayout

    seen = []

    class Spy(LinearCost):
        def decode_steps(self, bs, padded_bs, kv_total, graph, shared_kv=0.0):
            seen.append((bs, padded_bs))
            return super().decode_steps(bs, padded_bs, kv_total, graph)

    serving = make_serving(layout=ParallelLayout(2, 2, 1), cuda_graph_bs=(1, 2, 4, 8))
    _, rec, stats = simulate([10] * 4, [20, 20, 20, 5], serving=serving, cost=Spy())
    assert list(rec.dp_rank[np.argsort(rec.request_id)]) == [0, 1, 0, 1]
    assert stats.per_rank_requests == [2, 2]
    # rank 1's short request leaves first: from then on rank 1 has one row, rank 0 two, and both pad to the
    # largest rank's bucket (docs/serving-model.md §1.10, §2.4)
    assert (1, 2) in seen and (2, 2) in seen


def test_dp_idle_rank_still_steps_with_the_busy_one():
    from simperf.scenario.resolved import ParallelLayout

    serving = make_serving(layout=ParallelLayout(2, 2, 1))
    single = make_serving()
    cost = LinearCost(base_us=1000, per_token_us=0)
    _, dp_rec, dp_stats = simulate([10], [30], serving=serving, cost=cost)
    _, one_rec, one_stats = simulate(
        [10], [30], serving=single, cost=LinearCost(base_us=1000, per_token_us=0)
    )
    # one request on two DP ranks: rank 1 idles; the step is the busy rank's, so timing matches one rank
    assert dp_stats.per_rank_requests == [1, 0]
    assert np.allclose(dp_rec.chunk_time_s, one_rec.chunk_time_s)


def test_dp_extend_gathers_all_ranks_rows_for_the_mlp():
    from simperf.scenario.resolved import ParallelLayout

    gathered = []

    class Spy(LinearCost):
        def extend_step(
            self, extend_lens, prefix_lens, decode_kv_lens=None, gathered_rows=None, gathered_logit_rows=None
        ):
            gathered.append((list(extend_lens), gathered_rows, gathered_logit_rows))
            return super().extend_step(extend_lens, prefix_lens, decode_kv_lens)

    serving = make_serving(layout=ParallelLayout(4, 2, 1), overlap_schedule=False)
    # request 0 decodes on rank 0 when request 1 (rank 1) arrives: rank 0 runs its decode as a 1-token extend
    # and the MLP sees both ranks' rows, each padded to a multiple of the attention TP size (2)
    simulate([10, 100], [50, 5], arrivals=[0.0, 0.02], serving=serving, cost=Spy())
    assert ([100], 102, 2) in gathered and ([1], 102, 2) in gathered


feature_cases = st.integers(min_value=1, max_value=20).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 300), min_size=n, max_size=n),
        st.lists(st.integers(1, 50), min_size=n, max_size=n),
        st.lists(st.floats(0, 0.03), min_size=n, max_size=n),
        st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=4), min_size=n, max_size=n),
        st.sampled_from([1, 2]),  # DP attention ranks
        st.booleans(),  # speculative decoding
        st.booleans(),  # prefix cache
        st.sampled_from([1, 16]),
        st.integers(600, 4000),
    )
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(feature_cases)
# found by hypothesis: request 0 is retracted and re-joins with the finishing index of its first join, so its
# stale finish-heap entry looked valid and the request finished twice
@example(
    (
        [193, 1, 1, 1, 129, 1, 1, 1, 1, 1, 1, 1, 49],
        [7, 1, 1, 1, 2, 1, 1, 1, 1, 2, 2, 2, 2],
        [0.0] * 13,
        [[0]] * 13,
        1,
        True,
        False,
        16,
        600,
    )
)
# found by hypothesis: requests 6 and 7 share an evictable cached prefix; the adder's KV budget was a snapshot, so
# locking their prefixes did not lower it, request 7 was admitted 32 tokens over it, and its last chunk (113
# tokens, 128 in pages) overfilled the pool by 8 (tests/test_sim_admission.py checks both mechanisms directly)
@example(
    case=(
        [1, 1, 1, 253, 292, 16, 33, 241] + [1] * 11,
        [1, 1, 34, 25, 30, 1, 2] + [1] * 12,
        [0.0] * 4 + [0.01953125, 0.01953125, 0.00390625] + [0.0] * 12,
        [[0]] * 3 + [[0, 0], [1], [0], [0], [0, 0]] + [[0]] * 11,
        1,
        True,
        True,
        16,
        600,
    ),
).via("discovered failure")
def test_invariants_hold_with_dp_ranks_speculation_and_prefix_cache(case):
    from simperf.scenario.resolved import ParallelLayout, SpecSettings

    inputs, outputs, gaps, hashes, dp, spec, cache, page, pool = case
    arrivals = np.cumsum(gaps) - gaps[0]
    serving = make_serving(
        layout=ParallelLayout(dp, dp, 1),
        page_size=page,
        max_total_tokens=pool,
        chunked_prefill_size=128,
        max_running_requests=8,
        speculative=SpecSettings("mtp", 3, 1, 4, 2.4, 1.8, 3.0) if spec else None,
        cuda_graph_bs=(1, 2, 3, 4, 6, 8) if spec else (1, 2, 4, 8),
        cuda_graph_max_bs=8,
    )
    in_pool = []
    observer = lambda ranks: in_pool.append(  # noqa: E731
        all(0 <= r.used + (r.cache.cached_tokens if r.cache else 0) <= r.capacity for r in ranks)
    )
    sim = Simulator(serving, LinearCost(), Overheads(), kv_observer=observer)
    # block ids: a request's prompt is named by its own blocks after a few shared ones (16 tokens each)
    block_ids = [np.asarray(h + [100 + i]) for i, h in enumerate(hashes)] if cache else None
    rec, stats = sim.run(
        np.asarray(inputs),
        np.asarray(outputs),
        arrivals,
        block_hashes=block_ids,
        block_tokens=16 if cache else None,
    )
    assert all(in_pool)
    assert len(rec) + len(stats.rejected) == len(inputs)
    counts = np.add.reduceat(rec.chunk_num_tokens, rec.chunk_offsets[:-1]) if len(rec) else np.zeros(0)
    assert np.array_equal(counts, rec.output_len)
    for i in range(len(rec)):
        times = token_times(rec, i)
        assert times[0] > rec.send_s[i] and np.all(np.diff(times) > 0)
    assert all(r.used == 0 for r in sim.ranks)
    assert set(rec.dp_rank.tolist()) <= set(range(dp))


def test_a_run_leaves_the_cyclic_garbage_collector_as_it_found_it():
    import gc

    assert gc.isenabled()
    simulate([50, 20], [5, 5])
    assert gc.isenabled()
    gc.disable()
    try:
        simulate([50, 20], [5, 5])
        assert not gc.isenabled()
    finally:
        gc.enable()

    class Failing(LinearCost):
        def extend_step(self, *args, **kwargs):
            raise RuntimeError("cost model failed")

    with pytest.raises(RuntimeError, match="cost model failed"):
        simulate([50], [5], cost=Failing())
    assert gc.isenabled()
