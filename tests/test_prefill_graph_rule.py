"""SGLang 0.5.17's rule for running extends without its breakable prefill CUDA graph, as simperf resolves it: the
reason lands in the notes, and a PD pair's servers follow it whether they come from `disaggregation:` or a fleet."""

from __future__ import annotations

import pytest

from simperf.fleet.servers import build_groups
from simperf.scenario.load import parse_scenario
from simperf.scenario.resolve import resolve

WORKLOAD = {"dataset": {"kind": "fixed", "input_len": 256, "output_len": 8}, "num_prompts": 4}


def _resolve(model: str, gpu: str = "h200", count: int = 1, **serving):
    spec = {"model": {"name": model}, "hardware": {"gpu": gpu, "count": count}, "workload": WORKLOAD}
    if serving:
        spec["serving"] = serving
    return resolve(parse_scenario(spec))[0]


@pytest.mark.parametrize(
    "model, count, serving, reason",
    [
        ("qwen3-8b", 1, {}, None),
        ("deepseek-v2-lite", 1, {}, "MLA attention (non-DSA)"),
        ("deepseek-v3.2", 8, {"tp": 8}, None),  # DSA keeps the graph
        ("deepseek-v3.2", 8, {"tp": 8, "dp_attention": 8}, "DP attention"),
        ("qwen3-8b", 1, {"disable_cuda_graph": True}, "--disable-cuda-graph"),
    ],
)
def test_the_reason_sglang_runs_extends_eagerly_is_in_the_notes(model, count, serving, reason):
    resolved = _resolve(model, count=count, **serving)
    assert resolved.prefill_cuda_graph is (reason is None)
    eager_notes = [n for n in resolved.notes if "extends run eagerly" in n]
    assert eager_notes == ([] if reason is None else [eager_notes[0]])
    if reason is not None:
        assert reason in eager_notes[0]


def test_a_pd_pair_prefills_eagerly_as_a_pipeline_pair_and_as_fleet_pools():
    base = {"model": {"name": "qwen3-8b"}, "hardware": {"gpu": "h100", "count": 2}, "workload": WORKLOAD}
    pair = parse_scenario({**base, "disaggregation": {"prefill": {"tp": 1}, "decode": {"tp": 1}}})
    prefill, _, _ = resolve(pair.model_copy(update={"disaggregation": None}), "disaggregation.prefill")
    assert not prefill.prefill_cuda_graph
    fleet = parse_scenario(
        {
            **base,
            "fleet": {
                "prefill": [{"count": 1}],
                "decode": [{"count": 1}],
                "router": {"policy": "round_robin"},
            },
        }
    )
    (group,) = build_groups(fleet, "prefill", fleet.fleet.prefill, None)
    assert not group.serving.prefill_cuda_graph
    replicas = parse_scenario({**base, "fleet": {"replicas": [{"count": 2}]}})
    (group,) = build_groups(replicas, "replicas", replicas.fleet.replicas, None)
    assert group.serving.prefill_cuda_graph  # replicas serve whole requests: the graph stays
