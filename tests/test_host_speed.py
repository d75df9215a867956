"""The host's CPU speed (hardware.host_speed): SGLang's host-side costs are single-threaded Python, and the same
served prefill took 1.6x longer on one of our hosts than on another. Each default host cost carries the speed of the
host it was measured on and is scaled to the scenario's host (Overheads.on_host); given values and GPU time are
not. The speed itself is recomputed from the committed runs (docs/overheads.md "Hosts")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simperf.accuracy.corpus import scenario_of
from simperf.accuracy.hostcosts import HOST_SPEED_CHECKS, host_speed_ratio, single_h100_host_speed
from simperf.groundtruth.hosts import host_speed_of
from simperf.pipeline import predict
from simperf.report.breakdown import _overhead_source
from simperf.scenario.models import (
    GPU_OVERHEADS,
    OVERHEAD_HOST_SPEED,
    SINGLE_H100_HOST_SPEED,
    Overheads,
    Scenario,
)

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "groundtruth"
SINGLE_H100_RUNS = CORPUS / "experiments/extend-host-h100/h100"


def test_the_single_h100_host_speed_is_the_same_prefill_timed_on_both_hosts():
    measured = single_h100_host_speed(CORPUS)
    assert SINGLE_H100_HOST_SPEED == pytest.approx(measured.value, abs=5e-4), measured.detail


def test_another_model_and_a_third_host_agree_with_it():
    # held out: Qwen3-0.6B's breakable-graph prefill (not eager) on the same two hosts; a 4-GPU H200 host
    speeds = {name: host_speed_ratio(CORPUS, *pair).value for name, pair in HOST_SPEED_CHECKS.items()}
    assert speeds["Qwen3-0.6B, 128-token prompt, single-H100 host"] == pytest.approx(
        SINGLE_H100_HOST_SPEED, rel=0.05
    )
    for name in (
        "DeepSeek-V2-Lite, 1,024-token prompt, 4-GPU H200 host",
        "Qwen3-0.6B, 128-token prompt, 4-GPU H200 host",
    ):
        assert speeds[name] == pytest.approx(1.0, rel=0.15), name


def test_on_host_scales_each_default_from_the_host_it_was_measured_on():
    defaults = Overheads()
    slow = defaults.on_host(SINGLE_H100_HOST_SPEED)
    # measured on the H200 host (speed 1): 1 / 0.6185 as long on the single-H100 host
    assert slow.eager_extend_us_per_kernel == pytest.approx(
        defaults.eager_extend_us_per_kernel / SINGLE_H100_HOST_SPEED
    )
    assert slow.process_us_per_running_request == pytest.approx(
        defaults.process_us_per_running_request / 0.6185, rel=1e-3
    )
    # measured on the single-H100 host: unchanged there, 0.6185 as long on the H200 host
    assert slow.extend_launch_us_per_kernel == defaults.extend_launch_us_per_kernel
    fast = defaults.on_host(1.0)
    assert fast.extend_launch_us_per_kernel == pytest.approx(
        defaults.extend_launch_us_per_kernel * 0.6185, rel=1e-3
    )
    assert fast.frontend_us_per_chunk == defaults.frontend_us_per_chunk
    # medians over both hosts, and GPU time, belong to no host
    for name in [n for n, v in OVERHEAD_HOST_SPEED.items() if v is None] + sorted(GPU_OVERHEADS):
        assert getattr(slow, name) == getattr(defaults, name) == getattr(fast, name), name


def test_a_value_the_scenario_gives_is_its_hosts_own_and_stays_given():
    given = Overheads(extend_launch_us_per_kernel=50.0).on_host(2.0)
    assert given.extend_launch_us_per_kernel == 50.0
    assert given.model_fields_set == {"extend_launch_us_per_kernel"}
    assert _overhead_source(given, "extend_launch_us_per_kernel") == "given in the scenario"
    assert (
        _overhead_source(given, "eager_extend_us_per_kernel")
        == "measured (docs/overheads.md) x0.5 host speed"
    )
    # a median over both hosts is not scaled
    assert _overhead_source(given, "scheduler_us_per_iteration") == "measured (docs/overheads.md)"


def test_the_corpus_predicts_each_run_on_the_host_it_ran_on():
    assert host_speed_of(CORPUS / "h100/qwen3-8b-flashinfer/c1-128-128") == SINGLE_H100_HOST_SPEED
    assert host_speed_of(CORPUS / "h200/qwen3-0.6b-flashinfer/c1-128-512") == 1.0
    # the 4-GPU H100 host of the tensor-parallel runs was not measured: taken as the measured 4-GPU host's (1)
    assert host_speed_of(CORPUS / "h100/llama-3.1-8b-tp4/c1-1k-256") == 1.0
    assert (
        scenario_of(SINGLE_H100_RUNS / "qwen3-8b-flashinfer/c1-128-16").hardware.host_speed
        == SINGLE_H100_HOST_SPEED
    )


@pytest.mark.parametrize("model", ["qwen3-8b", "qwen3-0.6b", "llama-3.1-8b"])
def test_a_short_prefill_on_an_idle_server_follows_the_hosts_speed(model):
    """Real cost model, shipped tables: the single-H100 host's 128-token c1 runs (one host, three models; the
    per-kernel launch cost was measured on Qwen3-8B's) within 30% of their measured TTFT at that host's speed
    (Llama-3.1-8B's is +26%: the per-kernel form's residual, docs/overheads.md "Hosts"), and a faster host predicts
    a shorter TTFT."""
    run = SINGLE_H100_RUNS / f"{model}-flashinfer/c1-128-16"
    scenario = scenario_of(run)
    measured = json.loads((run / "bench.json").read_text())["median_ttft_ms"]
    on_host = predict(scenario).result["median_ttft_ms"]
    assert on_host == pytest.approx(measured, rel=0.30)
    faster = Scenario.model_validate(
        scenario.model_dump(mode="json", exclude_unset=True)
        | {"hardware": {"gpu": "h100", "host_speed": 1.0}}
    )
    assert predict(faster).result["median_ttft_ms"] < on_host


def test_docs_hosts_block_is_the_commands_output():
    from simperf.accuracy.hostcosts import hosts_markdown
    from simperf.accuracy.run import generated_block
    from simperf.groundtruth.cli import HOSTS_BEGIN, HOSTS_END

    assert generated_block(REPO / "docs" / "overheads.md", HOSTS_BEGIN, HOSTS_END) == hosts_markdown(
        CORPUS
    ), (
        "docs/overheads.md is stale: run `python -m simperf.groundtruth overheads groundtruth --update-doc "
        "docs/overheads.md`"
    )


def test_without_a_host_speed_a_scenario_runs_on_the_host_measured_with_its_gpu():
    from simperf.scenario.models import HardwareSpec

    assert HardwareSpec(gpu="h100").resolved_host_speed == SINGLE_H100_HOST_SPEED
    assert HardwareSpec(gpu="h200").resolved_host_speed == 1.0
    assert HardwareSpec(gpu="h100", host_speed=2.0).resolved_host_speed == 2.0
    base = {
        "model": {"name": "qwen3-8b"},
        "workload": {"dataset": {"kind": "fixed", "input_len": 128, "output_len": 4}},
    }
    h100 = Scenario.model_validate(base | {"hardware": {"gpu": "h100"}})
    assert h100.host_overheads.extend_launch_us_per_kernel == Overheads().extend_launch_us_per_kernel


@pytest.mark.parametrize("value", ["0", "1e-9", "11", "fast"])
def test_an_implausible_host_speed_is_one_error_line_naming_the_field(value):
    from typer.testing import CliRunner

    from simperf.cli import app

    scenario = REPO / "scenarios/published/gpustack-qwen3-8b-bf16-fa3-c4.yaml"
    result = CliRunner().invoke(app, ["predict", str(scenario), "--set", f"hardware.host_speed={value}"])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "hardware.host_speed" in errors[0] and "Traceback" not in result.output


def test_every_prediction_says_which_host_speed_it_used():
    base = {
        "model": {"name": "qwen3-8b"},
        "workload": {"dataset": {"kind": "fixed", "input_len": 128, "output_len": 4}},
    }
    default = predict(Scenario.model_validate(base | {"hardware": {"gpu": "h100"}}))
    assert default.extra()["host_speed"] == SINGLE_H100_HOST_SPEED and not default.extra()["host_speed_given"]
    assert (
        default.notes["Host CPU speed (hardware.host_speed)"]
        == "0.6185 (default: our host measured with h100)"
    )
    given = predict(Scenario.model_validate(base | {"hardware": {"gpu": "h100", "host_speed": 1.0}}))
    assert given.extra()["host_speed"] == 1.0 and given.extra()["host_speed_given"]
    assert given.notes["Host CPU speed (hardware.host_speed)"] == "1 (given)"
