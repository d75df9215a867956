"""The simulator's invariants (docs/simulator.md) on random workloads with the REAL cost model: SGLangStepCost on
the shipped tables, so every fast path a real `predict` takes (single fresh prefills, decode segments on Python
floats, shared CUDA-graph entries) is under the same properties as the fake-cost tests in test_sim_scheduler.py.

KV pools are shrunk (the shipped ones never fill with a few dozen requests) so that admission limits and
retraction run too; everything else is the scenario's resolved settings.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from realcost import real_cost, real_setup

from simperf.perfdb.schema import SOURCES
from simperf.sim.engine import Simulator

workloads = st.integers(min_value=1, max_value=24).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 5000), min_size=n, max_size=n),
        st.lists(st.integers(1, 200), min_size=n, max_size=n),
        st.lists(st.floats(0, 0.3), min_size=n, max_size=n),
        st.sampled_from([None, 2, 6]),  # --max-concurrency
        st.sampled_from([6000, 20000, None]),  # KV pool per rank (None: the resolved one)
        st.booleans(),  # overlap scheduling
        st.sampled_from([1, 1, 3]),  # --stream-interval (1 where the model decodes speculatively)
    )
)


def check_invariants(name: str, case) -> None:
    inputs, outputs, gaps, concurrency, pool, overlap, interval = case
    arrivals = np.cumsum(gaps) - gaps[0]
    _, serving, _, _ = real_setup(name)
    page = serving.page_size
    changes = {"overlap_schedule": overlap}
    if serving.speculative is None:
        changes["stream_interval"] = interval
    if pool is not None:
        changes["max_total_tokens"] = pool // page * page
    serving = replace(serving, **changes)
    cost = real_cost(name, serving)
    used_ok: list[bool] = []
    steps_ok: list[bool] = []

    class Watched:
        """The real cost model, fast paths included, with every step it prices checked: positive, split by
        source, the split adding up to the step."""

        def fresh_prefill_totals(self, tokens):
            got = cost.fresh_prefill_totals(tokens)
            if got is not None:
                total, by_source = got
                steps_ok.append(total > 0 and min(by_source) >= 0 and sum(by_source) == pytest.approx(total))
            return got

        def decode_totals(self, *args, **kwargs):
            totals, add_by_source = cost.decode_totals(*args, **kwargs)
            steps_ok.append(min(totals) > 0)
            acc = [0.0] * len(SOURCES)
            add_by_source(acc, len(totals))
            steps_ok.append(min(acc) >= 0 and sum(acc) == pytest.approx(sum(totals), rel=1e-9))
            return totals, add_by_source

        def extend_step(self, *args, **kwargs):
            step = cost.extend_step(*args, **kwargs)
            steps_ok.append(bool(step.sum() > 0 and (step >= 0).all()))
            return step

        def decode_steps(self, *args, **kwargs):
            steps = cost.decode_steps(*args, **kwargs)
            steps_ok.append(bool((steps.sum(axis=1) > 0).all() and (steps >= 0).all()))
            return steps

        def extend_host_us(self, *args, **kwargs):
            # ExtendHostTime's contract: the launch takes >= 0 and never outlasts the step it launches
            host = cost.extend_host_us(*args, **kwargs)
            steps_ok.append(0 <= host <= float(cost.extend_step(*args, **kwargs).sum()) + 1e-9)
            return host

        # the ragged-decode cost (a long request's lone stream) is the real model's too
        def decode_straggler_us(self, *args, **kwargs):
            return cost.decode_straggler_us(*args, **kwargs)

        def straggler_possible(self, *args, **kwargs):
            return cost.straggler_possible(*args, **kwargs)

    observer = lambda ranks: used_ok.append(all(0 <= r.used <= r.capacity for r in ranks))  # noqa: E731
    sim = Simulator(serving, Watched(), serving_overheads(name), kv_observer=observer)
    rec, stats = sim.run(np.asarray(inputs), np.asarray(outputs), arrivals, max_concurrency=concurrency)
    # 3. KV in use never exceeds the pool on any rank, and all of it is returned at the end
    assert all(used_ok) and all(r.used == 0 for r in sim.ranks)
    # 4. every request finishes with exactly its tokens, or is rejected with a reason
    assert len(rec) + len(stats.rejected) == len(inputs)
    assert all(reason for _, reason in stats.rejected)
    counts = np.add.reduceat(rec.chunk_num_tokens, rec.chunk_offsets[:-1]) if len(rec) else np.zeros(0)
    assert np.array_equal(counts, rec.output_len)
    assert np.array_equal(rec.output_len, np.asarray(outputs)[rec.request_id])
    # 5. first token after the send, token times strictly increasing, the last one is the finish
    for i in range(len(rec)):
        times = rec.chunk_time_s[rec.chunk_offsets[i] : rec.chunk_offsets[i + 1]]
        assert times[0] > rec.send_s[i] and np.all(np.diff(times) > 0)
        assert times[-1] == pytest.approx(rec.finish_s[i])
    # 6. every step positive and split by source; the split of all steps adds up to the GPU's busy time
    assert steps_ok and all(steps_ok)
    assert stats.time_by_source_us.sum() * 1e-6 == pytest.approx(stats.gpu_busy_s, rel=1e-9)
    # 10. every request the API server held open was closed by its last chunk: none is open after the run; and
    # it wrote exactly the chunks the clients received (at a stream interval too)
    assert sim.frontend.open_requests(float("inf")) == 0
    assert sim.frontend.chunks_written == len(rec.chunk_time_s)
    # --max-concurrency is never exceeded
    if concurrency is not None and len(rec):
        for t in rec.send_s:
            assert ((rec.send_s <= t) & (rec.finish_s > t)).sum() <= concurrency
    # 2. determinism
    again, _ = Simulator(serving, real_cost(name, serving), serving_overheads(name)).run(
        np.asarray(inputs), np.asarray(outputs), arrivals, max_concurrency=concurrency
    )
    assert np.array_equal(again.chunk_time_s, rec.chunk_time_s) and np.array_equal(again.send_s, rec.send_s)


def serving_overheads(name: str):
    return real_setup(name)[0].overheads


@pytest.mark.parametrize("name", ["qwen3-8b-h100", "r1-tp8-h200", "r1-tp8-dp8-h200", "r1-tp8-mtp-h200"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=workloads)
def test_scheduler_invariants_hold_with_the_real_cost_model(name, case):
    check_invariants(name, case)


def test_a_retracted_requests_re_prefill_token_is_written_only_at_a_send_point():
    """Invariant 10's case that hypothesis found: with a 6,000-token pool the long prompt is retracted, and at stream
    interval 3 the token its re-prefill produces is not a send point; the API server wrote a chunk for it anyway."""
    case = (
        [2218, 1, 1, 1, 1, 1, 1, 1, 3599, 1, 1],
        [93, 1, 1, 1, 1, 1, 1, 1, 94, 1, 1],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25, 0.28125, 0.0, 0.0],
        None,
        6000,
        False,
        3,
    )
    check_invariants("r1-tp8-dp8-h200", case)
