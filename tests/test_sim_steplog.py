"""The step log (what `simperf validate` samples from) records exactly what the simulator priced: property tests
on random workloads with a hand-checkable cost model."""

from __future__ import annotations

import collections

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simfakes import LinearCost, make_serving

from simperf.scenario.models import Overheads
from simperf.sim.engine import Simulator
from simperf.sim.steplog import StepLog
from simperf.validate.sample import sample_steps

workloads = st.integers(min_value=1, max_value=20).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 300), min_size=n, max_size=n),
        st.lists(st.integers(1, 60), min_size=n, max_size=n),
        st.lists(st.floats(0, 0.05), min_size=n, max_size=n),
        st.booleans(),
        st.integers(1, 12),
    )
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads)
def test_step_log_records_every_iteration_as_it_was_priced(case):
    inputs, outputs, gaps, overlap, samples = case
    arrivals = np.cumsum(gaps) - gaps[0]
    cost = LinearCost(base_us=800.0, per_token_us=7.0, per_kv_us=0.5)
    serving = make_serving(chunked_prefill_size=128, overlap_schedule=overlap, max_running_requests=8)
    log = StepLog()
    sim = Simulator(serving, cost, Overheads(), step_log=log)
    _, stats = sim.run(np.asarray(inputs), np.asarray(outputs), arrivals)

    # every iteration is in the log exactly once: a decode run stands for `repeats` iterations
    assert sum(step.repeats for step in log.steps) == stats.iterations
    kinds = collections.Counter(step.kind for step in log.steps)
    assert kinds["prefill"] + kinds["mixed"] == stats.extend_iterations
    assert sum(s.repeats for s in log.steps if s.kind == "decode") == stats.decode_iterations

    for step in log.steps:
        if step.kind == "decode":
            bs = step.decode_kv_lens.size
            assert bs >= 1 and step.padded_bs >= bs and (step.decode_kv_lens >= 1).all()
            # the first iteration of the run, priced from the logged lengths, is what the simulator charged
            expected = cost.decode_steps(bs, step.padded_bs, [step.decode_kv_lens.sum()], step.graph)
            assert np.isclose(step.predicted_us, expected.sum())
        else:
            dec = step.decode_kv_lens if step.decode_kv_lens.size else None
            assert np.isclose(
                step.predicted_us, cost.extend_step(step.extend_lens, step.prefix_lens, dec).sum()
            )

    picked = sample_steps(log.steps, samples, seed=1)
    assert len(picked) <= samples
    identity = {
        (p.kind, p.step.extend_lens.tobytes(), p.step.prefix_lens.tobytes(), p.step.decode_kv_lens.tobytes())
        for p in picked
    }
    assert len(identity) == len(picked)  # no step is sampled twice
    if samples >= 2 * len(kinds):
        assert {p.kind for p in picked} == set(kinds)
