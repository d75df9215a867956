"""Following one request: the `Request` view of the scheduler's per-request arrays, and `--trace-request`."""

from __future__ import annotations

import numpy as np
import pytest
from simfakes import NO_OVERHEADS, LinearCost, make_serving

from simperf.sim.engine import Simulator
from simperf.sim.trace import RequestTrace, format_trace

QUIET = NO_OVERHEADS


def test_the_request_view_names_a_requests_row():
    sim = Simulator(make_serving(), LinearCost(), QUIET)
    sim.run(np.array([40, 70]), np.array([3, 5]), np.array([0.0, 0.001]))
    r = sim.request(1)
    assert (r.input_len, r.output_len, r.rank, r.retractions) == (70, 5, 0, 0)
    assert r.prefilled == r.prefill_target == 70
    assert r.tokens_committed == 5  # finished: every token counted
    assert "70 in / 5 out" in repr(r)
    with pytest.raises(IndexError):
        sim.request(2)


def test_a_trace_shows_each_chunk_and_the_records_timing():
    # chunked_prefill_size 100, page 16: a 250-token prompt runs as 96 + 96 + 58 (tests/test_sim_scheduler.py)
    trace = RequestTrace(frozenset({0}))
    serving = make_serving(page_size=16, chunked_prefill_size=100, overlap_schedule=False)
    sim = Simulator(serving, LinearCost(base_us=1000, per_token_us=0), QUIET, trace=trace)
    records, _ = sim.run(np.array([250]), np.array([3]), np.zeros(1))
    kinds = [e.what for e in trace.events[0]]
    assert kinds == ["queued", "admitted", "chunk", "chunk", "chunk", "token", "finished"]
    chunks = [e.detail for e in trace.events[0] if e.what == "chunk"]
    assert chunks[0].startswith("96 tokens after 0") and chunks[2].startswith("58 tokens after 192")
    assert "last chunk" in chunks[2] and "more chunks follow" in chunks[0]
    text = format_trace(trace, 0, records)
    assert "TTFT 3.000 ms" in text  # three 1 ms chunk iterations
    assert "3 tokens in 3 chunks" in text


def test_a_trace_shows_retractions_and_the_re_admission():
    # the over-admitting case of tests/test_sim_scheduler.py (requests arriving one by one, each admitted against
    # new_token_ratio x the running requests' outputs): the pool fills while decoding and requests retract
    serving = make_serving(max_total_tokens=400, max_running_requests=64, init_new_token_ratio=0.1)
    trace = RequestTrace(frozenset(range(8)))
    sim = Simulator(serving, LinearCost(), QUIET, trace=trace)
    records, stats = sim.run(np.full(8, 40), np.full(8, 100), 0.005 * np.arange(8), ignore_eos=False)
    assert stats.retractions > 0
    retracted = [r for r in range(8) if any(e.what == "retracted" for e in trace.events[r])]
    assert len(retracted) == len({int(i) for i in np.flatnonzero(records.retractions)})
    r = retracted[0]
    kinds = [e.what for e in trace.events[r]]
    after = kinds[kinds.index("retracted") + 1 :]
    assert after[:2] == ["admitted", "chunk"]  # re-prefilled over prompt + generated tokens
    assert sim.request(r).retractions == int(records.retractions[records.request_id == r][0])


def test_untraced_requests_cost_nothing_and_rejections_are_traced():
    trace = RequestTrace(frozenset({1}))
    serving = make_serving(max_total_tokens=200)
    sim = Simulator(serving, LinearCost(), QUIET, trace=trace)
    records, stats = sim.run(np.array([10, 5000]), np.array([2, 2]), np.zeros(2))
    assert set(trace.events) == {1}
    assert trace.events[1][-1].what == "rejected"
    assert "no record" in format_trace(trace, 1, records)
