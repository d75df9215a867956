"""An overheads override no server of the scenario reads is refused (scenario/overheads_read.py); one that some
server reads passes, in a PD pair or a fleet as on one server."""

from __future__ import annotations

import pytest

from simperf.models.zoo import load_arch
from simperf.scenario.models import Overheads, Scenario
from simperf.scenario.overheads_read import READERS, check_overheads_read
from simperf.scenario.resolve import resolve

BASE = {
    "model": {"name": "qwen3-8b"},
    "hardware": {"gpu": "h100", "count": 1},
    "workload": {"dataset": {"kind": "random", "input_len": 64, "output_len": 4}, "num_prompts": 2},
}


def scenario(overheads: dict, **serving) -> Scenario:
    return Scenario.model_validate({**BASE, "serving": serving, "overheads": overheads})


def test_every_rule_names_an_overheads_field():
    assert set(READERS) <= set(Overheads.model_fields)


def test_the_extend_field_the_server_reads_passes_and_the_others_are_refused():
    s = scenario({"extend_launch_us_per_kernel_fa3": 30.0})
    serving, arch, _ = resolve(s)
    check_overheads_read(s, [(serving, arch)])  # qwen3-8b on the H100 runs fa3 in its prefill graph
    s = scenario({"extend_launch_us_per_kernel": 30.0})
    with pytest.raises(ValueError, match="overheads.extend_launch_us_per_kernel: not read"):
        check_overheads_read(s, [(serving, arch)])


def test_a_field_one_server_reads_passes():
    """flashinfer on one server, fa3 on another (a fleet's two groups): extend_launch_us_per_kernel is read."""
    s = scenario({"extend_launch_us_per_kernel": 30.0})
    fa3, arch, _ = resolve(s)
    flashinfer, _, _ = resolve(scenario({}, attention_backend="flashinfer"))
    check_overheads_read(s, [(fa3, arch), (flashinfer, arch)])
    with pytest.raises(ValueError, match="not read by this scenario"):
        check_overheads_read(s, [(fa3, arch)])


def test_the_router_cost_is_read_for_an_moe_model():
    s = Scenario.model_validate(
        {**BASE, "model": {"name": "qwen3-30b-a3b"}, "overheads": {"decode_moe_router_us": 3.0}}
    )
    serving, arch, _ = resolve(s)
    assert arch.is_moe and load_arch("qwen3-30b-a3b").is_moe
    check_overheads_read(s, [(serving, arch)])
