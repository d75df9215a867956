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


@pytest.mark.parametrize(
    ("model", "tp", "factor_field"),
    [
        ("deepseek-v2-lite", 1, None),
        ("deepseek-v2-lite", 2, "eager_extend_rank_factor_tp2"),  # served at 2 ranks: 1.50 (one_batch: 0.97)
        ("qwen3-8b", 2, None),  # a dense model at 2 ranks: not measured, 1
        ("deepseek-v2-lite", 4, "eager_extend_rank_factor"),
        ("deepseek-v2-lite", 8, "eager_extend_rank_factor"),  # 8 ranks take 4's value (an estimate)
        ("qwen3-8b", 4, "eager_extend_rank_factor_dense"),
    ],
)
def test_an_eager_extend_on_more_tensor_parallel_ranks_takes_the_measured_rank_factor(
    model, tp, factor_field
):
    """Four ranks launching the same eager forward and meeting at each collective ran 1.5-1.9x (MoE / MLA) and 1.2x
    (dense) longer per kernel than one on the same host (groundtruth/forwards/h200x4/): the prefill step and the
    scheduler's CPU for it take that factor, and the breakdown names it."""
    serving = {"tp": tp} | ({"disable_cuda_graph": True} if model == "qwen3-8b" else {})
    prediction = predict(
        _scenario(model, "h200", prompts=1, hardware={"gpu": "h200", "count": tp}, serving=serving)
    )
    assert not prediction.serving.prefill_cuda_graph
    o = (
        prediction.cost.overheads
    )  # on this GPU's default host; the factors are ratios, the same on every host
    assert o.eager_extend_rank_factor == Overheads().eager_extend_rank_factor
    dense = model == "qwen3-8b"
    base = o.eager_extend_us_per_kernel_dense if dense else o.eager_extend_us_per_kernel
    factor = 1.0 if factor_field is None else getattr(o, factor_field)
    extend_host = prediction.cost.extend_host_us_per_kernel
    per_kernel_us = extend_host.us
    assert per_kernel_us == pytest.approx(base * factor)
    # the field is named, not parsed out of the label the reports show
    assert extend_host.field == (
        "eager_extend_us_per_kernel_dense" if dense else "eager_extend_us_per_kernel"
    )
    assert extend_host.label.startswith(extend_host.field) and (
        (factor_field or extend_host.field) in extend_host.label
    )
    rows = _host_rows(prediction)
    assert (factor_field in rows) if factor_field else not any("rank_factor" in name for name in rows)
    prefill = breakdown_tables(prediction)[0]
    overhead = next(r for r in prefill.rows if r["kind"] == "overhead")
    assert (factor_field or "rank_factor") in overhead["detail"] or factor_field is None
    kernels_us = sum(r["total_us"] for r in prefill.rows if r["kind"] != "overhead")
    # a short prompt's eager extend is the host's: kernels x the per-kernel time, the factor included
    assert kernels_us + overhead["total_us"] == pytest.approx(overhead["count"] * base * factor)


def test_a_graphed_extend_on_four_ranks_keeps_one_ranks_host_time():
    """The rank factor was measured on eager forwards only; a breakable prefill graph's host time is not grown."""
    prediction = predict(
        _scenario("qwen3-8b", "h200", hardware={"gpu": "h200", "count": 4}, serving={"tp": 4})
    )
    assert prediction.serving.prefill_cuda_graph
    one_rank = prediction.cost.overheads.extend_launch_us(prediction.serving.prefill_backend)
    assert prediction.cost.extend_host_us_per_kernel == one_rank
    assert not any("rank_factor" in name for name in _host_rows(prediction))


def test_a_pd_pairs_prefill_step_is_the_prefill_servers():
    """--breakdown of a PD pair priced its 'representative prefill' from the decode server: the mean of the KV
    transfers that server receives (rank 0 of its DP attention), on the decode server's layout, while the prompts
    are prefilled on the prefill server. The prefill table is now the prefill server's."""
    scenario = Scenario.model_validate(
        {
            "model": {"name": "qwen3-30b-a3b"},
            "hardware": {"gpu": "h100", "count": 6},
            "disaggregation": {"prefill": {"tp": 2}, "decode": {"tp": 4, "dp_attention": 4}},
            "workload": {
                "dataset": {"kind": "fixed", "input_len": 1024, "output_len": 8},
                "num_prompts": 8,
            },
        }
    )
    prediction = predict(scenario)
    cost, stats = prediction.prefill_step
    assert cost is not prediction.cost and cost.serving.layout.tp == 2
    tokens = round(stats.extend_tokens / stats.extend_iterations)
    prefill = breakdown_json(prediction)["prefill"]
    assert prefill["title"].startswith("Representative prefill step on the prefill server: one request of "
                                       f"{tokens} new tokens")  # fmt: skip
    assert tokens >= 1024  # whole prompts, not the decode server's received KV per DP rank
