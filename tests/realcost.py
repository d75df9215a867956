"""The real cost model (SGLangStepCost on the shipped calibration tables) for simulator tests, and a view of it
without its fast paths, so that every shortcut can be checked against the general path it stands in for."""

from __future__ import annotations

import bisect
from functools import cache
from pathlib import Path

from simperf.costmodel.step import SGLangStepCost
from simperf.pipeline import open_perfdb
from simperf.scenario.load import load_scenario
from simperf.scenario.models import Overheads
from simperf.scenario.resolve import resolve

REPO = Path(__file__).resolve().parents[1]
# Qwen3-8B on one H100 (GQA, dense); DeepSeek-R1 on H200 (MLA, MoE): TP8, TP8 + DP-attention 8, TP8 with MTP
SCENARIOS = {
    "qwen3-8b-h100": "scenarios/qwen3-8b-h100.yaml",
    "r1-tp8-h200": "scenarios/validate/r1-tp8-h200.yaml",
    "r1-tp8-dp8-h200": "scenarios/validate/r1-tp8-dp8-h200.yaml",
    "r1-tp8-mtp-h200": "scenarios/layouts/r1-tp8-mtp-c16.yaml",
}
# Launch-bound eager steps: with 50 µs per kernel launch the CPU, not the GPU, sets an eager decode step's time,
# so a path that forgot the launch overhead would show (at SGLang's ~5 µs it hides behind the kernels).
LAUNCH_BOUND = Overheads(eager_launch_us_per_kernel=50.0)


@cache
def real_setup(name: str):
    """(scenario, resolved serving, arch, db) of a shipped scenario; the tables load once per test session."""
    scenario = load_scenario(REPO / SCENARIOS[name])
    serving, arch, gpu = resolve(scenario)
    db, _ = open_perfdb(scenario, gpu)
    return scenario, serving, arch, db


def real_cost(name: str, serving=None, overheads: Overheads | None = None) -> SGLangStepCost:
    """A fresh cost model (empty caches) of a shipped scenario, optionally with other resolved settings."""
    scenario, resolved, arch, db = real_setup(name)
    return SGLangStepCost(arch, serving or resolved, db, overheads or scenario.overheads)


def zoo_cost(model: str, gpu: str = "h100", sglang_version: str | None = None) -> SGLangStepCost:
    """The shipped tables' step cost of a zoo model on one GPU, served with flashinfer attention (as the
    ground-truth corpus' profiled decodes were), default overheads."""
    from simperf.accuracy.hostcosts import step_cost_of
    from simperf.scenario.models import Scenario

    serving = {"attention_backend": "flashinfer"}
    if sglang_version is not None:
        serving["sglang_version"] = sglang_version
    return step_cost_of(
        Scenario.model_validate(
            {
                "model": {"name": model},
                "hardware": {"gpu": gpu},
                "serving": serving,
                "workload": {"dataset": {"kind": "fixed", "input_len": 1024, "output_len": 256}},
            }
        )
    )


def padded_bs(serving, bs: int) -> tuple[int, bool]:
    """The simulator's CUDA-graph bucket of a decode batch (Simulator._padded_bs)."""
    buckets = serving.cuda_graph_bs
    if not buckets or bs > buckets[-1]:
        return bs, False
    return buckets[bisect.bisect_left(buckets, bs)], True


class GeneralPathCost:
    """The same cost model seen through the StepCostModel protocol only: no `decode_totals` and no
    `fresh_prefill_totals`, so the simulator takes its general paths (per-rank arrays, decode_steps matrices),
    and no single-fresh-prefill table or per-length shortcut inside extend_step either."""

    def __init__(self, cost: SGLangStepCost) -> None:
        self._cost = cost
        cost._single_fresh_prefill = lambda *args, **kwargs: None  # type: ignore[method-assign]
        cost._fresh_prefill = lambda tokens: None  # type: ignore[method-assign]

    def extend_step(self, *args, **kwargs):
        return self._cost.extend_step(*args, **kwargs)

    def decode_steps(self, *args, **kwargs):
        return self._cost.decode_steps(*args, **kwargs)

    def extend_host_us(self, *args, **kwargs):
        return self._cost.extend_host_us(*args, **kwargs)

    # the ragged-decode cost (RaggedDecodeCost) is not a shortcut: both paths price a long request's lone stream
    def decode_straggler_us(self, *args, **kwargs):
        return self._cost.decode_straggler_us(*args, **kwargs)

    def straggler_possible(self, *args, **kwargs):
        return self._cost.straggler_possible(*args, **kwargs)
