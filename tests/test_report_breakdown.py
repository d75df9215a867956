"""`simperf predict --breakdown`: the host-side costs around the steps are listed with where each number comes from,
and an MLA model's extends are priced as SGLang runs them, without a prefill CUDA graph."""

from __future__ import annotations

import pytest

from simperf.pipeline import predict
from simperf.report.breakdown import breakdown_json, breakdown_tables
from simperf.scenario.models import MEASURED_OVERHEADS, Overheads, Scenario


def _scenario(model: str, gpu: str, prompts: int = 8, **extra) -> Scenario:
    return Scenario.model_validate(
        {
            "model": {"name": model},
            "hardware": {"gpu": gpu},
            "workload": {
                "dataset": {"kind": "fixed", "input_len": 512, "output_len": 16},
                "num_prompts": prompts,
            },
            **extra,
        }
    )


def _host_rows(prediction) -> dict[str, dict]:
    host = breakdown_tables(prediction)[-1]
    assert host.name == "host"
    return {row["cost"]: row for row in host.rows}


def test_every_host_cost_is_listed_with_its_source():
    prediction = predict(_scenario("qwen3-8b", "h100"))
    rows = _host_rows(prediction)
    overheads = prediction.cost.overheads  # on the H100's default host (hardware.host_speed)
    for name, row in rows.items():
        source = "measured (docs/overheads.md)" if name in MEASURED_OVERHEADS else "estimate"
        factor = overheads.host_factor(name)
        # a default measured on another host says by how much it was scaled to this one
        assert row["source"] == (source if factor == 1.0 else f"{source} x{factor:.3g} host speed"), name
    assert rows["process_us_per_running_request"]["source"].endswith(
        "x1.62 host speed"
    )  # measured on the H200 host
    assert rows["extend_launch_us_per_kernel_fa3"]["source"] == "measured (docs/overheads.md)"  # on this host
    assert "extend_launch_us_per_kernel_fa3" in rows  # fa3 on Hopper, breakable prefill graph
    per_request = rows["process_us_per_running_request"]
    assert per_request["here_us"] > per_request["us"]  # paid once per request of the representative batch


def test_a_cost_given_in_the_scenario_is_labelled_so():
    rows = _host_rows(predict(_scenario("qwen3-8b", "h100", overheads={"ingress_us": 1000.0})))
    assert rows["ingress_us"]["us"] == 1000.0 and rows["ingress_us"]["source"] == "given in the scenario"


def test_an_mla_model_prefills_eagerly_at_the_measured_eager_host_cost():
    prediction = predict(_scenario("deepseek-v2-lite", "h200"))
    assert not prediction.serving.prefill_cuda_graph
    assert any("MLA attention (non-DSA)" in note for note in prediction.serving.notes)
    host = breakdown_tables(prediction)[-1]
    assert "off" in host.caption
    row = {r["cost"]: r for r in host.rows}["eager_extend_us_per_kernel"]
    assert row["us"] == Overheads().eager_extend_us_per_kernel
    assert breakdown_json(prediction)["host"]["costs"]


def test_the_eager_host_cost_sets_a_short_mla_prefill():
    """A 512-token V2-Lite prefill: its kernels take less than its launches, so the step is the host's time."""
    prediction = predict(_scenario("deepseek-v2-lite", "h200", prompts=1))
    prefill = breakdown_tables(prediction)[0]
    kernels_us = sum(r["total_us"] for r in prefill.rows if r["kind"] != "overhead")
    overhead = next(r for r in prefill.rows if r["kind"] == "overhead")
    step_us = kernels_us + overhead["total_us"]
    assert kernels_us < step_us
    assert step_us == pytest.approx(overhead["count"] * Overheads().eager_extend_us_per_kernel)


def test_a_dense_model_without_cuda_graphs_prefills_at_the_dense_eager_cost():
    prediction = predict(_scenario("qwen3-8b", "h100", serving={"disable_cuda_graph": True}))
    assert not prediction.serving.prefill_cuda_graph
    rows = _host_rows(prediction)
    assert rows["eager_extend_us_per_kernel_dense"]["us"] == Overheads().eager_extend_us_per_kernel_dense
