"""Autoscaling what-if: servers join the router after their start-up, leave it at once, and the router never sends
a request to a server that is not registered."""

from __future__ import annotations

import numpy as np
import pytest

from simperf.fleet.autoscale import membership
from simperf.fleet.predict import predict_fleet
from simperf.scenario.fleet import AutoscaleSpec
from simperf.scenario.load import ScenarioError, parse_scenario


def test_membership_follows_the_schedule_with_start_up_delays():
    spec = AutoscaleSpec(
        schedule=[
            {"at_s": 0, "replicas": 2},
            {"at_s": 100, "replicas": 4},  # 2 and 3 boot until 160 ...
            {"at_s": 150, "replicas": 1},  # ... but are cancelled at 150, and 1 leaves
            {"at_s": 300, "replicas": 3},  # 1 and 2 boot until 360
        ],
        startup_s=60,
    )
    m = membership(spec)
    assert m.change_s == [0.0, 150.0, 360.0]
    assert m.registered == [[0, 1], [0], [0, 1, 2]]
    assert m.provisioned_from == {0: [0.0], 1: [0.0, 300.0], 2: [100.0, 300.0], 3: [100.0]}


BASE = {
    "model": {"name": "qwen3-8b"},
    "hardware": {"gpu": "h100", "count": 1},
    "workload": {
        "dataset": {"kind": "random", "input_len": 600, "output_len": 80, "range_ratio": 0.5},
        "num_prompts": 240,
        "request_rate": 8,
        "seed": 2,
    },
}
SCHEDULE = {"schedule": [{"at_s": 0, "replicas": 1}, {"at_s": 8, "replicas": 3}, {"at_s": 20, "replicas": 2}],
            "startup_s": 4}  # fmt: skip


@pytest.mark.parametrize("policy", ["round_robin", "cache_aware", "power_of_two", "consistent_hashing"])
def test_requests_only_reach_registered_servers(policy):
    fleet = {"replicas": [{"count": 4}], "router": {"policy": policy}, "autoscale": SCHEDULE}
    prediction = predict_fleet(parse_scenario({**BASE, "fleet": fleet}))
    routed = prediction.assignment
    assert len(prediction.rows) == 240
    send = np.empty(240)  # no client limit: a request's send time is its arrival at the router
    send[prediction.rows.request_id] = prediction.rows.send_s
    expected = np.where(send < 12, 1, np.where(send < 20, 3, 2))  # 1 until 8 + 4 s of start-up, 3, then 2
    assert (routed < expected).all()
    assert (routed[send >= 12] > 0).any() and not (routed == 3).any()
    scaled = prediction.autoscale
    assert 0 < scaled["replica_seconds"] < scaled["static_replica_seconds"]
    assert prediction.timelines["registered"][0] == 1


def test_schedules_beyond_the_pool_or_on_pd_fleets_are_refused():
    too_many = {"replicas": [{"count": 2}], "autoscale": SCHEDULE}
    with pytest.raises(ScenarioError, match="asks for 3 replicas; the replica groups hold 2"):
        parse_scenario({**BASE, "fleet": too_many})
    late_start = {"replicas": [{"count": 4}], "autoscale": {"schedule": [{"at_s": 5, "replicas": 1}]}}
    with pytest.raises(ScenarioError, match="first step"):
        parse_scenario({**BASE, "fleet": late_start})


def test_startup_s_without_a_scale_up_is_refused():
    # no step raises the count, so no server boots: startup_s was accepted and changed nothing
    down_only = {"startup_s": 30, "schedule": [{"at_s": 0, "replicas": 3}, {"at_s": 5, "replicas": 2}]}
    with pytest.raises(ScenarioError, match="startup_s: delays scale-ups, and this schedule never raises"):
        parse_scenario({**BASE, "fleet": {"replicas": [{"count": 3}], "autoscale": down_only}})
    parse_scenario({**BASE, "fleet": {"replicas": [{"count": 4}], "autoscale": SCHEDULE}})  # scales up: kept


def test_a_step_after_the_last_request_is_refused():
    # 240 requests at 8 req/s arrive within ~30 s: a step at 100 s routed nothing differently, and its scale-up,
    # starting after the run, was billed negative server time
    late = {"schedule": [*SCHEDULE["schedule"], {"at_s": 100, "replicas": 4}], "startup_s": 4}
    with pytest.raises(ValueError, match=r"schedule\[3\]: at_s 100 comes after the last request arrives"):
        predict_fleet(parse_scenario({**BASE, "fleet": {"replicas": [{"count": 4}], "autoscale": late}}))


def test_a_step_that_keeps_the_count_is_refused():
    same = {"schedule": [{"at_s": 0, "replicas": 2}, {"at_s": 5, "replicas": 2}]}
    with pytest.raises(ScenarioError, match=r"schedule\[1\]: replicas 2 repeats the previous step's count"):
        parse_scenario({**BASE, "fleet": {"replicas": [{"count": 2}], "autoscale": same}})
