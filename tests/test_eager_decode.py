"""A decode step outside CUDA graphs is priced at an eager forward's measured host time per kernel
(Overheads.eager_decode_us), checked against the decode steps SGLang's one_batch ran in the same eager records.

The constant (eager_extend_us_per_kernel_dense, 64.5 us) comes from those records' 128-token prefill lines; their
decode lines were not used for it, so they check it.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import numpy as np
import pytest

from simperf.groundtruth.hosts import SINGLE_H100_HOST_SPEED
from simperf.pipeline import predict
from simperf.scenario.models import Scenario

RECORD = Path(__file__).resolve().parents[1] / "groundtruth" / "forwards" / "h100" / "qwen3-8b-eager-prefill"


def _measured_decode_s() -> float:
    """Median of one_batch's per-run decode medians (batch 1, --disable-cuda-graph, flashinfer)."""
    text = (RECORD / "one_batch_clean.log").read_text(encoding="utf-8")
    return statistics.median(float(x) for x in re.findall(r"Decode\.\s+median latency: ([0-9.]+) s", text))


def _eager_cost(eager_launch_us: float | None = None):
    overheads = {} if eager_launch_us is None else {"eager_launch_us_per_kernel": eager_launch_us}
    scenario = Scenario.model_validate(
        {
            "name": "eager-decode",
            "model": {"name": "qwen3-8b"},
            "hardware": {"gpu": "h100", "count": 1, "host_speed": SINGLE_H100_HOST_SPEED},
            "serving": {"attention_backend": "flashinfer", "disable_cuda_graph": True},
            "workload": {"dataset": {"kind": "random", "input_len": 1024, "output_len": 4}, "num_prompts": 1},
            "overheads": overheads,
        }
    )
    return predict(scenario).cost


def test_an_eager_decode_step_takes_what_sglangs_eager_decode_took():
    measured_us = _measured_decode_s() * 1e6
    step_us = float(_eager_cost().decode_steps(1, 1, np.array([1100.0]), False).sum())
    assert 25_000 < measured_us < 29_000  # the record: 26.8 ms
    assert step_us == pytest.approx(measured_us, rel=0.10)


def test_a_scenarios_own_launch_time_overrides_the_measured_one():
    step_us = float(_eager_cost(5.0).decode_steps(1, 1, np.array([1100.0]), False).sum())
    assert step_us < 10_000  # kernels' own time: the 5 us launches no longer bind
