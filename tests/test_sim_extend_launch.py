"""An extend's launch occupies the scheduler's CPU (sim/engine.py `_launch`, docs/simulator.md invariant 9).

SGLang's scheduler launches an extend's kernels from Python: for its host time (the kernels times the measured host
time per kernel, `ExtendHostTime`) it neither receives requests nor processes the previous batch. With the overlap
scheduler that delays the previous batch's first tokens by the launch; on flashinfer, whose prefill plan copies to
the host and so waits for the GPU, the launch starts only after the previous batch's GPU work. Run with the real
cost model and the shipped H100 tables (Qwen3-8B), against the same costs without a launch time.

The bug this guards: a served c16 V2-Lite wave's first request waited 155 ms for its first token where simperf said
~120 ms; the first tokens of a batch are processed only after the next batch's eager launch (~58-74 ms) ends.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from realcost import real_cost, real_setup

from simperf.sim.engine import Simulator


class NoLaunchTime:
    """The same cost model without ExtendHostTime: launches take no CPU time (the simulator before this rule)."""

    def __init__(self, cost) -> None:
        self._cost = cost

    def extend_step(self, *args, **kwargs):
        return self._cost.extend_step(*args, **kwargs)

    def decode_steps(self, *args, **kwargs):
        return self._cost.decode_steps(*args, **kwargs)


def first_token_times(serving, cost, overheads) -> np.ndarray:
    # two 1,024-token prompts; the second reaches the scheduler while the first is being launched
    records, _ = Simulator(serving, cost, overheads).run(
        np.array([1024, 1024]), np.array([3, 3]), np.array([0.0, 0.001])
    )
    order = np.argsort(records.request_id)
    return records.chunk_time_s[records.chunk_offsets[:-1]][order]


@pytest.mark.parametrize("backend", ["flashinfer", "fa3"])
def test_the_previous_batch_waits_for_the_next_extends_launch(backend):
    scenario, resolved, _, _ = real_setup("qwen3-8b-h100")
    serving = replace(resolved, prefill_backend=backend, overlap_schedule=True)
    cost = real_cost("qwen3-8b-h100", serving)
    # the API server's per-chunk growth with open requests is another mechanism: whether the second request is
    # already open when the first one's chunk is written moves its first token by ~25 ns (tested elsewhere)
    overheads = scenario.overheads.model_copy(update={"frontend_share_per_open_request": 0.0})
    launch_s = cost.extend_host_us(np.array([1024]), np.array([0])) * 1e-6
    step_s = float(cost.extend_step(np.array([1024]), np.array([0])).sum()) * 1e-6
    sched_s = overheads.scheduler_us_per_iteration * 1e-6
    assert launch_s > 0.005 and step_s > launch_s + sched_s  # the case under test: GPU-bound, long launch
    with_launch = first_token_times(serving, cost, overheads)
    without = first_token_times(serving, NoLaunchTime(real_cost("qwen3-8b-h100", serving)), overheads)
    if backend == "flashinfer":
        # the second launch starts once the first batch's GPU work ends and lasts launch_s
        delay = launch_s
    else:
        # it starts as soon as the CPU is free (after the first launch) and may end before the first batch's GPU
        delay = max(0.0, sched_s + 2 * launch_s - step_s)
    assert with_launch[0] - without[0] == pytest.approx(delay, abs=1e-9)
    # the second request is in the scheduler's queue when the first launch ends, so it is launched right after it
    # (without a launch time the idle CPU first waited for the first batch's result): no later than before
    assert with_launch[1] <= without[1] + 1e-9


def test_a_request_alone_is_not_delayed_by_its_own_launch():
    """At concurrency 1 the launch hides inside the step (extend_step already lasts at least the launch): the
    measured single-request TTFTs the host costs were taken from keep their prediction."""
    scenario, resolved, _, _ = real_setup("qwen3-8b-h100")
    serving = replace(resolved, prefill_backend="flashinfer")
    cost = real_cost("qwen3-8b-h100", serving)
    args = (np.array([1024]), np.array([3]), np.array([0.0]))
    alone, _ = Simulator(serving, cost, scenario.overheads).run(*args)
    bare, _ = Simulator(serving, NoLaunchTime(real_cost("qwen3-8b-h100", serving)), scenario.overheads).run(
        *args
    )
    # equal up to float summation order
    np.testing.assert_allclose(alone.chunk_time_s, bare.chunk_time_s, rtol=1e-12, atol=0)


def test_the_stats_count_the_launches_cpu_time_against_the_extends_step_time():
    """SimStats.extend_host_share: the scheduler's CPU time launching the extends over their priced step time, what
    the prediction's host-bound note reads (real cost model, shipped H100 tables, Qwen3-8B)."""
    scenario, resolved, _, _ = real_setup("qwen3-8b-h100")
    serving = replace(resolved, prefill_backend="flashinfer")
    cost = real_cost("qwen3-8b-h100", serving)
    sim = Simulator(serving, cost, scenario.overheads)
    sim.run(np.array([1024, 300]), np.array([3, 3]), np.array([0.0, 1.0]))
    launches = [cost.extend_host_us(np.array([n]), np.array([0])) for n in (1024, 300)]
    steps = [float(cost.extend_step(np.array([n]), np.array([0])).sum()) for n in (1024, 300)]
    assert sim.stats.extend_host_s == pytest.approx(sum(launches) * 1e-6, rel=1e-9)
    assert sim.stats.extend_step_s == pytest.approx(sum(steps) * 1e-6, rel=1e-9)
    assert 0 < sim.stats.extend_host_share() < 1


def _host_bound_note(model: str) -> str | None:
    from simperf.pipeline import HOST_BOUND_EXTENDS, predict
    from simperf.scenario.models import Scenario

    spec = {
        "model": {"name": model},
        "hardware": {"gpu": "h200"},
        "serving": {"attention_backend": "flashinfer"},
        "workload": {
            "dataset": {"kind": "fixed", "input_len": 1024, "output_len": 8},
            "num_prompts": 4,
            "max_concurrency": 1,
        },
    }
    return predict(Scenario.model_validate(spec)).notes.get(HOST_BOUND_EXTENDS)


def test_a_prediction_says_when_its_extends_are_bound_by_the_hosts_cpu():
    """DeepSeek-V2-Lite's extends run eagerly and are the scheduler's CPU (their launch is the step: the note, with
    the host's measured spread); Qwen3-8B's 1,024-token prefill graph is GPU-bound (no note)."""
    note = _host_bound_note("deepseek-v2-lite")
    assert note is not None and note.startswith("100% of the extend iterations' time")
    assert "Slow launches" in note
    assert _host_bound_note("qwen3-8b") is None


def test_a_pd_pairs_note_reads_its_prefill_servers_launches():
    """A PD pair's extends run on its prefill server; the note read the decode server's stats, which hold none of
    them, so an eagerly prefilled DeepSeek-V2-Lite pair said nothing. The pair now counts its prefill server's."""
    from simperf.pipeline import HOST_BOUND_EXTENDS, predict
    from simperf.scenario.models import Scenario

    spec = {
        "model": {"name": "deepseek-v2-lite"},
        "hardware": {"gpu": "h200", "count": 2},
        "disaggregation": {
            "prefill": {"tp": 1, "attention_backend": "flashinfer"},
            "decode": {"tp": 1, "attention_backend": "flashinfer"},
        },
        "workload": {
            "dataset": {"kind": "fixed", "input_len": 1024, "output_len": 8},
            "num_prompts": 4,
            "max_concurrency": 1,
        },
    }
    prediction = predict(Scenario.model_validate(spec))
    _, prefill = prediction.prefill_server
    assert prefill.extend_host_share() == pytest.approx(1.0)
    assert prediction.stats.extend_host_s >= prefill.extend_host_s > 0
    assert HOST_BOUND_EXTENDS in prediction.notes


def test_a_fleet_of_host_bound_servers_says_so_as_one_server_does():
    """A fleet's notes are its own (fleet/predict.py fleet_notes): the note reads the servers' counters added up,
    so one replica says what the single server says."""
    from simperf.pipeline import HOST_BOUND_EXTENDS, predict
    from simperf.scenario.load import parse_scenario

    base = {
        "model": {"name": "deepseek-v2-lite"},
        "hardware": {"gpu": "h200"},
        "serving": {"attention_backend": "flashinfer"},
        "workload": {"dataset": {"kind": "fixed", "input_len": 1024, "output_len": 8}, "num_prompts": 4,
                     "request_rate": 1},
    }  # fmt: skip
    single = predict(parse_scenario(base))
    fleet = predict(parse_scenario({**base, "fleet": {"replicas": [{"count": 1}]}}))
    assert fleet.notes[HOST_BOUND_EXTENDS] == single.notes[HOST_BOUND_EXTENDS]
