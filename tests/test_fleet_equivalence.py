"""A fleet is the single-server model plus a router: with one server every policy gives today's prediction bit for
bit, a 1P1D fleet gives the PD pair's, and every request is accounted for exactly once (docs/fleet.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simperf.fleet.predict import predict_fleet
from simperf.pipeline import predict
from simperf.scenario.load import parse_scenario

POLICIES = ["round_robin", "random", "power_of_two", "cache_aware", "consistent_hashing", "prefix_hash"]

RANDOM = {
    "name": "qwen3-random",
    "model": {"name": "qwen3-8b"},
    "hardware": {"gpu": "h100", "count": 1},
    "workload": {
        "dataset": {"kind": "random", "input_len": 1024, "output_len": 128},
        "num_prompts": 120,
        "request_rate": 6,
        "seed": 3,
    },
}
MULTI_TURN = {
    "name": "qwen3-chat",
    "model": {"name": "qwen3-8b"},
    "hardware": {"gpu": "h100", "count": 1},
    "workload": {
        "dataset": {
            "kind": "multi_turn",
            "num_conversations": 30,
            "turns": 3,
            "system_prompt_len": 1024,
            "input_len": 300,
            "output_len": 100,
            "turn_interval_s": 5,
        },
        "request_rate": 8,
        "seed": 5,
    },
}


def with_fleet(base: dict, fleet: dict) -> dict:
    return {**base, "fleet": fleet}


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def assert_same_records(single, fleet):
    for name in ("request_id", "send_s", "first_token_s", "finish_s", "chunk_offsets", "chunk_time_s",
                 "chunk_num_tokens", "cached_tokens", "retractions", "input_len", "output_len"):  # fmt: skip
        np.testing.assert_array_equal(getattr(single, name), getattr(fleet, name), err_msg=name)


@pytest.mark.parametrize("base", [RANDOM, MULTI_TURN], ids=["random", "multi_turn"])
@pytest.mark.parametrize("policy", POLICIES)
def test_one_replica_is_the_single_server_prediction(base, policy):
    single = predict(parse_scenario(base))
    fleet = predict(
        parse_scenario(with_fleet(base, {"replicas": [{"count": 1}], "router": {"policy": policy}}))
    )
    assert set(single.result) == set(fleet.result)
    different = {
        k: (single.result[k], fleet.result[k])
        for k in single.result
        if not same(single.result[k], fleet.result[k])
    }
    assert different == {}
    assert_same_records(single.records, fleet.records)


def test_one_prefill_one_decode_is_the_pd_pair():
    pair = {
        "model": {"name": "deepseek-r1"},
        "hardware": {"gpu": "h200", "count": 16},
        "workload": {
            "dataset": {"kind": "random", "input_len": 2048, "output_len": 128, "range_ratio": 1.0},
            "num_prompts": 80,
            "request_rate": 3,
        },
    }
    servers = {"prefill": {"tp": 8}, "decode": {"tp": 8, "dp_attention": 8}}
    single = predict(parse_scenario({**pair, "disaggregation": servers}))
    for policy in ("round_robin", "cache_aware"):
        fleet_spec = {
            "prefill": [{"count": 1, "serving": servers["prefill"]}],
            "decode": [{"count": 1, "serving": servers["decode"]}],
            "router": {"policy": policy},
        }
        fleet = predict(
            parse_scenario({**pair, "hardware": {"gpu": "h200", "count": 8}, "fleet": fleet_spec})
        )
        different = {k for k in single.result if not same(single.result[k], fleet.result[k])}
        assert different == set(), policy
        assert_same_records(single.records, fleet.records)


@pytest.mark.parametrize("policy", POLICIES)
def test_every_request_is_routed_once_and_answered_or_rejected(policy):
    spec = with_fleet(MULTI_TURN, {"replicas": [{"count": 3}, {"count": 1, "serving": {"tp": 1, "page_size": 16}}],
                                   "router": {"policy": policy}})  # fmt: skip
    prediction = predict_fleet(parse_scenario(spec))
    n = 90
    assert prediction.assignment.shape == (n,) and (prediction.assignment >= 0).all()
    assert sum(o.routed for o in prediction.outcomes) == n
    answered = prediction.rows.request_id.tolist()
    rejected = [r for o in prediction.outcomes for r, _ in o.rejected]
    assert sorted(answered + rejected) == list(range(n))
    for o in prediction.outcomes:  # each answered request came from the server the router chose
        mine = prediction.rows.request_id[prediction.rows.server == o.server]
        assert (prediction.assignment[mine] == o.server).all()


def test_cache_aware_never_routes_above_the_thresholds_when_a_lighter_worker_exists():
    """At fleet level, on the loads the router actually read from the simulated replicas."""
    abs_t, rel_t = 2, 1.2
    spec = with_fleet(
        {**MULTI_TURN, "workload": {**MULTI_TURN["workload"], "request_rate": 30}},
        {"replicas": [{"count": 4}],
         "router": {"policy": "cache_aware", "balance_abs_threshold": abs_t, "balance_rel_threshold": rel_t}},
    )  # fmt: skip
    decisions = []
    predict_fleet(
        parse_scenario(spec), observer=lambda request, loads, worker: decisions.append((loads, worker))
    )
    imbalanced = 0
    for loads, worker in decisions:
        values = [loads[w] for w in sorted(loads)]
        assert len(values) == 4  # cache_aware reads every worker
        if max(values) - min(values) > abs_t and max(values) > min(values) * rel_t:
            imbalanced += 1
            assert loads[worker] == min(values)
    assert imbalanced > 0, "the workload should make the fleet imbalanced at times"


def test_cache_aware_keeps_conversations_where_their_prefix_is():
    """Round robin spreads a conversation's turns; cache_aware sends later turns to the replica holding the
    earlier ones, so more prompt tokens hit the replicas' radix caches."""
    results = {}
    for policy in ("round_robin", "cache_aware"):
        spec = with_fleet(MULTI_TURN, {"replicas": [{"count": 4}], "router": {"policy": policy}})
        results[policy] = predict_fleet(parse_scenario(spec))
    hit = {p: r.rows.cached_tokens.sum() / r.rows.input_len.sum() for p, r in results.items()}
    assert hit["cache_aware"] > hit["round_robin"]


def test_a_pd_fleet_answers_every_request_once():
    spec = {
        "model": {"name": "deepseek-r1"},
        "hardware": {"gpu": "h200", "count": 8},
        "fleet": {
            "prefill": [{"count": 2, "serving": {"tp": 8}}],
            "decode": [{"count": 3, "serving": {"tp": 8, "dp_attention": 8}}],
            "router": {"prefill_policy": "cache_aware", "decode_policy": "power_of_two"},
        },
        "workload": {
            "dataset": {"kind": "random", "input_len": 3000, "output_len": 64, "range_ratio": 0.5},
            "num_prompts": 90,
            "request_rate": 12,
        },
    }
    prediction = predict_fleet(parse_scenario(spec))
    decode = [o for o in prediction.outcomes if o.kind == "decode"]
    prefill = [o for o in prediction.outcomes if o.kind == "prefill"]
    assert len(decode) == 3 and len(prefill) == 2
    assert sum(o.routed for o in prefill) == 90 and sum(o.routed for o in decode) == 90
    rejected = [r for o in prediction.outcomes for r, _ in o.rejected]
    assert sorted(prediction.rows.request_id.tolist() + rejected) == list(range(90))
    assert (prediction.assignment[prediction.rows.request_id] == prediction.rows.server).all()
    # TTFT runs from the client's send: prefill, KV transfer and the decode server's first batch are all in it
    assert (prediction.rows.ttft_s > 0).all()
