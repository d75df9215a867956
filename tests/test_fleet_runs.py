"""How a fleet runs: digests give bench_serving's metrics of the full records, a replica read more often than it is
fed runs the same iterations, and the three executors of independent replicas agree exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from simfakes import LinearCost, make_serving

from simperf.fleet import predict as fleet_predict
from simperf.fleet.metrics import weighted_median, weighted_percentile
from simperf.fleet.predict import UnsupportedFleet, predict_fleet
from simperf.fleet.replica import ReplicaSimulator
from simperf.scenario.load import ScenarioError, parse_scenario
from simperf.scenario.models import Overheads
from simperf.sim.engine import Simulator

FLEET = {
    "name": "qwen3-fleet",
    "model": {"name": "qwen3-8b"},
    "hardware": {"gpu": "h100", "count": 1},
    "fleet": {"replicas": [{"count": 3}], "router": {"policy": "round_robin"}},
    "workload": {
        "dataset": {"kind": "random", "input_len": 800, "output_len": 200, "range_ratio": 0.2},
        "num_prompts": 240,
        "request_rate": 12,
        "seed": 11,
    },
}


def test_weighted_percentiles_equal_numpys_on_the_expanded_list():
    rng = np.random.default_rng(0)
    for _ in range(50):
        values = np.sort(rng.choice(rng.random(30), size=rng.integers(1, 20), replace=False))
        counts = rng.integers(1, 6, size=values.size)
        full = np.repeat(values, counts)
        for q in (90.0, 95.0, 99.0, 50.0, 0.0, 100.0):
            assert weighted_percentile(values, counts, q) == np.percentile(full, q)
        assert weighted_median(values, counts) == np.median(full)


@pytest.mark.parametrize("policy", ["round_robin", "cache_aware"])
def test_digests_give_the_metrics_of_the_full_records(monkeypatch, policy):
    spec = {**FLEET, "fleet": {**FLEET["fleet"], "router": {"policy": policy}}}
    exact = predict_fleet(parse_scenario(spec))
    assert exact.records is not None
    monkeypatch.setattr(fleet_predict, "EXACT_TOKEN_LIMIT", 0)
    digested = predict_fleet(parse_scenario(spec))
    assert digested.records is None
    assert set(exact.result) == set(digested.result)
    for key, a in exact.result.items():
        b = digested.result[key]
        if key in ("mean_itl_ms", "std_itl_ms"):
            assert b == pytest.approx(a, rel=1e-12), key  # summation order differs
        elif isinstance(a, float) and math.isnan(a):
            assert math.isnan(b), key
        else:
            assert a == b, key


def _standalone_and_stepped(read_times):
    serving = make_serving(max_total_tokens=40_000)
    overheads = Overheads()
    rng = np.random.default_rng(4)
    n = 60
    arrival = np.sort(rng.uniform(0, 3.0, n))
    inp = rng.integers(50, 900, n)
    out = rng.integers(5, 120, n)
    single, _ = Simulator(serving, LinearCost(800.0, 4.0, 0.02), overheads).run(inp, out, arrival)
    replica = ReplicaSimulator(serving, LinearCost(800.0, 4.0, 0.02), overheads)
    replica.open(ignore_eos=True, seed=0, block_tokens=None)
    events = sorted([(t, 1, -1) for t in read_times] + [(float(a), 0, k) for k, a in enumerate(arrival)])
    for t, kind, k in events:
        replica.advance(t)  # a router reading this replica's load at t (kind 1) or routing to it (kind 0)
        if kind == 0:
            replica.push(k, int(inp[k]), int(out[k]), None, t)
    stepped, _ = replica.close()
    return single, stepped


def test_a_replica_read_between_its_requests_runs_the_same_iterations():
    """Reads cut the replica's decode runs where no request arrives; its requests' timelines do not move."""
    rng = np.random.default_rng(9)
    single, stepped = _standalone_and_stepped(np.sort(rng.uniform(0, 4.0, 300)).tolist())
    np.testing.assert_array_equal(single.request_id, stepped.request_id)
    np.testing.assert_array_equal(single.chunk_offsets, stepped.chunk_offsets)
    np.testing.assert_allclose(stepped.chunk_time_s, single.chunk_time_s, rtol=1e-12, atol=0)
    np.testing.assert_allclose(stepped.finish_s, single.finish_s, rtol=1e-12, atol=0)


def test_a_replica_fed_at_its_arrivals_only_is_the_single_server_run():
    single, stepped = _standalone_and_stepped([])
    np.testing.assert_array_equal(stepped.chunk_time_s, single.chunk_time_s)


def test_independent_replicas_give_identical_metrics_on_every_executor():
    serial = predict_fleet(parse_scenario({**FLEET, "fleet": {**FLEET["fleet"], "executor": "serial"}}))
    pooled = predict_fleet(
        parse_scenario({**FLEET, "fleet": {**FLEET["fleet"], "executor": "process", "workers": 2}})
    )
    assert pooled.result == serial.result
    np.testing.assert_array_equal(pooled.rows.ttft_s, serial.rows.ttft_s)


def test_ray_executor_gives_identical_metrics():
    ray = pytest.importorskip("ray")
    serial = predict_fleet(parse_scenario({**FLEET, "fleet": {**FLEET["fleet"], "executor": "serial"}}))
    try:
        on_ray = predict_fleet(
            parse_scenario({**FLEET, "fleet": {**FLEET["fleet"], "executor": "ray", "workers": 2}})
        )
    finally:
        if ray.is_initialized():
            ray.shutdown()
    assert on_ray.result == serial.result


def test_a_replica_without_requests_is_reported_idle():
    spec = {**FLEET, "fleet": {"replicas": [{"count": 4}], "router": {"policy": "round_robin"}}}
    spec["workload"] = {**FLEET["workload"], "num_prompts": 3}
    prediction = predict_fleet(parse_scenario(spec))
    idle = [s for s in prediction.servers if s["server"] == 3][0]
    assert idle["routed"] == 0 and idle["completed"] == 0 and prediction.result["completed"] == 3


@pytest.mark.parametrize(
    "fleet, message",
    [
        ({"replicas": [{"count": 2}], "prefill": [{"count": 1}]}, "not both"),
        ({"prefill": [{"count": 1}]}, "both prefill and decode"),
        ({"replicas": []}, "at least one group"),
        ({"replicas": [{"count": 2}], "router": {"decode_policy": "random"}}, "PD fleets"),
        ({"replicas": [{"count": 2}], "router": {"policy": "bucket"}}, "fleet.router.policy"),
        ({"prefill": [{"count": 1}], "decode": [{"count": 1}], "router": {"decode_policy": "bucket"}},
         "fleet.router.decode_policy"),
        ({"replicas": [{"count": 2, "serving": {"tp": 2}}]}, "fleet.replicas[0]: serving.tp (2)"),
        ({"replicas": [{"count": 2}], "router": {"cache_threshold": 1.5}}, "fleet.router.cache_threshold"),
    ],
)  # fmt: skip
def test_fleet_mistakes_are_named(fleet, message):
    with pytest.raises(
        ScenarioError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
    ):
        parse_scenario({**FLEET, "fleet": fleet})


def test_a_client_concurrency_limit_is_refused_with_the_reason():
    spec = {**FLEET, "workload": {**FLEET["workload"], "max_concurrency": 8}}
    with pytest.raises(UnsupportedFleet, match="workload.max_concurrency"):
        predict_fleet(parse_scenario(spec))
