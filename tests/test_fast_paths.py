"""Every fast path a real `predict` takes gives the general path's numbers on random batches, to 1e-9 relative,
with the real cost model on the shipped tables (Qwen3-8B/H100, DeepSeek-R1 TP8/H200):

- a single fresh prefill: `SGLangStepCost.fresh_prefill_totals` (and the per-length table behind it) against
  extend_step with every shortcut off;
- decode segments: `decode_totals` (Python-float path for short segments, `AxisSlice.values_list`, and its array
  path) against `decode_steps`, totals and per-source split, CUDA-graph and eager (launch-bound) steps;
- CUDA-graph decode entries shared by every batch size of a bucket, against an entry built for that batch alone
  and against the op-by-op breakdown;
- the simulator's own shortcuts (`Simulator._fresh_extend`, the fast decode-segment branch) against its general
  paths, on whole runs.

docs/testing.md lists the mutations tried against these paths and which test catches each.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from realcost import LAUNCH_BOUND, GeneralPathCost, padded_bs, real_cost, real_setup

from simperf.perfdb.schema import SOURCE_INDEX, SOURCES
from simperf.scenario.models import Overheads
from simperf.sim.engine import Simulator
from simperf.sim.pricing import SMALL_SEGMENT

RTOL = 1e-9
MODELS = ["qwen3-8b-h100", "r1-tp8-h200"]


def close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=RTOL, atol=0)


# ---------------------------------------------------------------------------------------------- fresh prefill


@pytest.mark.parametrize("name", MODELS)
def test_fresh_prefill_totals_equal_the_general_extend_path(name):
    fast, general = real_cost(name), GeneralPathCost(real_cost(name))
    limit = fast._row_table("gqa" if fast.arch.family == "dense" else "mha", "local").t_max
    rng = np.random.default_rng(11)
    lengths = sorted({1, 2, 3, limit - 1, limit, *rng.integers(1, limit, 60).tolist()})
    for tokens in lengths:
        total, by_source = fast.fresh_prefill_totals(tokens)
        step = general.extend_step(np.array([tokens]), np.array([0]))
        close(total, step.sum())
        close(by_source, step)
        close(fast.extend_step(np.array([tokens]), np.array([0])), step)  # extend_step's own shortcut


# ---------------------------------------------------------------------------------------------- decode segments


def _decode_cases(name: str, overheads: Overheads | None, seed: int):
    cost = real_cost(name, overheads=overheads)
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(40):
        if overheads is LAUNCH_BOUND:  # small eager steps, where the launches outlast the kernels
            bs, kv_mean = int(rng.integers(1, 9)), int(rng.integers(1, 2000))
            padded, graph = bs, False
        else:
            bs, kv_mean = (
                int(rng.integers(1, cost.serving.max_running_requests + 1)),
                int(rng.integers(1, 30000)),
            )
            padded, graph = padded_bs(cost.serving, bs)
        k = int(rng.choice([1, 2, 5, SMALL_SEGMENT, SMALL_SEGMENT + 1, 60]))
        kv0 = float(bs * kv_mean)
        cases.append((bs, padded, graph, [kv0 + bs * j for j in range(k)]))
    return cost, cases


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("overheads", [None, LAUNCH_BOUND], ids=["default", "launch-bound"])
def test_decode_totals_equal_decode_steps(name, overheads):
    """Short segments run on Python floats (values_list), long ones on arrays; both are decode_steps summed."""
    fast, cases = _decode_cases(name, overheads, seed=5)
    general = real_cost(name, overheads=overheads)
    launch_bound_steps = 0
    for bs, padded, graph, kv in cases:
        matrix = general.decode_steps(bs, padded, np.array(kv), graph)
        as_input = kv if len(kv) <= SMALL_SEGMENT else np.array(kv)  # what the simulator passes
        totals, add_by_source = fast.decode_totals(bs, padded, as_input, graph)
        close(totals, matrix.sum(axis=1))
        for n in sorted({1, len(kv) // 2 or 1, len(kv)}):
            acc = [0.0] * len(SOURCES)
            add_by_source(acc, n)
            close(acc, matrix[:n].sum(axis=0))
        launch_bound_steps += int(matrix[0, SOURCE_INDEX["constant"]] > 0 and not graph)
    if overheads is LAUNCH_BOUND:
        assert launch_bound_steps == len(cases)  # the eager-launch overhead is really exercised


@pytest.mark.parametrize("name", MODELS)
def test_shared_graph_bucket_entries_equal_an_entry_built_for_each_batch(name):
    """A graph entry is built by the first batch size of its bucket and reused by the others: each must get what
    a cost model that never saw another batch size gives, and what its op-by-op breakdown adds up to."""
    shared = real_cost(name)
    buckets = shared.serving.cuda_graph_bs
    rng = np.random.default_rng(3)
    checked = 0
    for lo, hi in zip((0, *buckets[:-1]), buckets, strict=True):
        members = list(range(lo + 1, hi + 1))
        for bs in rng.permutation(members)[:4].tolist():
            # inside the measured KV grid: there the slice is exact; beyond it the curve is sampled (perfdb docs)
            kv_mean = float(rng.integers(1024, 16384))
            kv = np.array([kv_mean * bs, kv_mean * bs + bs])
            got = shared.decode_steps(bs, hi, kv, True)
            alone = real_cost(name).decode_steps(bs, hi, kv, True)
            close(got, alone)
            rows = shared.breakdown_decode(bs, hi, int(kv[0]), True)
            by_source = np.zeros(len(SOURCES))
            for row in rows:
                by_source[SOURCE_INDEX[row.source]] += row.total_us
            close(by_source, got[0])
            checked += 1
        if checked > 60:
            break
    assert checked > 20


# ---------------------------------------------------------------------------------------------- whole runs

runs = st.integers(min_value=1, max_value=30).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 6000), min_size=n, max_size=n),
        st.lists(st.integers(1, 120), min_size=n, max_size=n),
        st.lists(st.floats(0, 0.2), min_size=n, max_size=n),
        st.sampled_from([None, 3, 8]),
        st.booleans(),  # launch-bound eager steps (a small CUDA-graph range makes big batches eager)
    )
)


@pytest.mark.parametrize("name", MODELS)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=runs)
def test_a_run_on_the_fast_paths_equals_the_run_on_the_general_paths(name, case):
    """The simulator with SGLangStepCost's shortcuts (fresh prefill totals, decode_totals) and its own
    (_fresh_extend, the fast decode-segment branch) against the same run through decode_steps / extend_step."""
    from dataclasses import replace

    inputs, outputs, gaps, concurrency, launch_bound = case
    arrivals = np.cumsum(gaps) - gaps[0]
    _, serving, _, _ = real_setup(name)
    if launch_bound:
        serving = replace(serving, cuda_graph_bs=(1, 2, 4), cuda_graph_max_bs=4)
    overheads = LAUNCH_BOUND if launch_bound else Overheads()
    results = []
    for cost in (real_cost(name, serving, overheads), GeneralPathCost(real_cost(name, serving, overheads))):
        sim = Simulator(serving, cost, overheads)
        results.append(sim.run(np.array(inputs), np.array(outputs), arrivals, max_concurrency=concurrency))
    (fast, fast_stats), (general, general_stats) = results
    assert np.array_equal(fast.request_id, general.request_id)
    for column in ("send_s", "first_token_s", "finish_s", "chunk_time_s"):
        close(getattr(fast, column), getattr(general, column))
    close(fast_stats.time_by_source_us, general_stats.time_by_source_us)
    assert fast_stats.iterations == general_stats.iterations
