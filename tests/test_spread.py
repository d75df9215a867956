"""`simperf predict --spread` (simperf/spread.py): the prediction again with the request path +-1 ms and the host CPU
+-10%, with the real cost model and shipped tables (a small Qwen3-0.6B load on an H200)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simperf.cli import app
from simperf.pipeline import predict
from simperf.scenario.models import Scenario
from simperf.spread import SPREAD_HOST_SPEED, SPREAD_INGRESS_US, MetricSpread, spread, variants


def _scenario(**workload) -> Scenario:
    spec = {
        "model": {"name": "qwen3-0.6b"},
        "hardware": {"gpu": "h200"},
        "workload": {"dataset": {"kind": "random", "input_len": 512, "output_len": 16}, "num_prompts": 16,
                     "max_concurrency": 4, **workload},
    }  # fmt: skip
    return Scenario.model_validate(spec)


def test_the_variants_move_the_request_path_and_the_host_cpu_both_ways():
    sc = _scenario()
    base_ingress = sc.host_overheads.ingress_us
    moved = variants(sc)
    assert [v.scenario.host_overheads.ingress_us for v in moved[:2]] == pytest.approx(
        [base_ingress - SPREAD_INGRESS_US, base_ingress + SPREAD_INGRESS_US]
    )
    speed = sc.hardware.resolved_host_speed
    assert [v.scenario.hardware.resolved_host_speed for v in moved[2:]] == pytest.approx(
        [speed * (1 - SPREAD_HOST_SPEED), speed * (1 + SPREAD_HOST_SPEED)]
    )
    # a host-speed variant leaves the request path where the host puts it, the path variants leave the host alone
    assert moved[2].scenario.host_overheads.ingress_us != base_ingress
    assert moved[0].scenario.hardware.resolved_host_speed == speed


def test_a_longer_request_path_lengthens_ttft_and_the_range_holds_the_prediction():
    sc = _scenario(max_concurrency=1)
    base = predict(sc).result
    ranges = spread(sc, base, lambda s: predict(s).result)
    ttft = ranges["median_ttft_ms"]
    shorter, longer = (ttft.by_variant[v.name] for v in variants(sc)[:2])
    # one request at a time: its own path is in its TTFT, 1 ms each way (at 4 in flight the requests' meetings
    # move too, and the TTFT need not follow: that is what the range is for)
    assert longer - ttft.predicted == pytest.approx(1.0, abs=0.3)
    assert ttft.predicted - shorter == pytest.approx(1.0, abs=0.3)
    assert ttft.low <= ttft.predicted <= ttft.high


def test_a_metric_is_sensitive_when_its_range_reaches_20_percent_either_way():
    assert MetricSpread(100.0, {"a": 119.0, "b": 81.0}).sensitive is False
    assert MetricSpread(100.0, {"a": 120.0}).sensitive is True
    assert MetricSpread(100.0, {"a": 80.0}).sensitive is True


def test_predict_spread_prints_the_ranges_and_puts_them_in_the_json(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(_scenario().model_dump(mode="json", exclude_unset=True)))
    runner = CliRunner()
    text = runner.invoke(app, ["predict", str(path), "-q", "--spread"])
    assert text.exit_code == 0, text.output
    assert "[lowest .. highest]" in text.output and "request path 1 ms longer" in text.output
    out = runner.invoke(app, ["predict", str(path), "-q", "--spread", "-o", "json"])
    ranges = json.loads(out.stdout)["simperf"]["spread"]["median_ttft_ms"]
    assert ranges["low"] <= ranges["predicted"] <= ranges["high"] and len(ranges) == 8
