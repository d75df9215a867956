"""The seam between simulator and cost model (simperf/costmodel/api.py): every cost model the simulator runs on keeps
the written contract, and the optional fast forms return the protocol's numbers."""

from __future__ import annotations

import numpy as np
import pytest
from simfakes import LinearCost, make_serving

from simperf.costmodel.api import ExtendHostTime, FastStepCost, StepCostModel, is_single_fresh_prompt
from simperf.costmodel.step import SGLangStepCost
from simperf.hardware.catalog import get_gpu
from simperf.models.zoo import load_arch
from simperf.perfdb.db import PerfDB
from simperf.perfdb.schema import SOURCES
from simperf.scenario.models import Overheads
from simperf.sim.pricing import StepPricer

EXTEND_BATCHES = [
    ([512], [0], None),
    ([100, 7], [0, 300], None),
    ([64], [128], np.array([500, 20])),
]
DECODE_CALLS = [(1, 1, [10.0, 11.0], True), (5, 8, [400.0, 405.0, 410.0], True), (300, 300, [9e4], False)]


def check_contract(cost: StepCostModel) -> None:
    for ext, pre, dec in EXTEND_BATCHES:
        step = cost.extend_step(np.array(ext), np.array(pre), dec)
        assert step.shape == (len(SOURCES),) and (step >= 0).all() and step.sum() > 0
        again = cost.extend_step(np.array(ext), np.array(pre), dec)
        assert np.array_equal(step, again)  # pure
        step[:] = -1.0  # the caller owns the result: a cache must not hand out its own array
        assert (cost.extend_step(np.array(ext), np.array(pre), dec) >= 0).all()
    for bs, padded, kv, graph in DECODE_CALLS:
        steps = cost.decode_steps(bs, padded, np.array(kv), graph)
        assert steps.shape == (len(kv), len(SOURCES)) and (steps >= 0).all() and (steps.sum(axis=1) > 0).all()
        assert np.array_equal(steps, cost.decode_steps(bs, padded, np.array(kv), graph))


@pytest.fixture(scope="module")
def qwen_cost():
    serving = make_serving(
        gpu="h100", max_running_requests=512, cuda_graph_bs=(1, 2, 4, 8, 16, 32, 64, 128, 256)
    )
    return SGLangStepCost(load_arch("qwen3-8b"), serving, PerfDB.empty(get_gpu("h100")), Overheads())


def test_sglang_step_cost_keeps_the_contract(qwen_cost):
    assert isinstance(qwen_cost, FastStepCost)
    check_contract(qwen_cost)


def test_the_test_double_keeps_the_contract_and_has_no_fast_forms():
    cost = LinearCost()
    assert not isinstance(cost, FastStepCost)
    check_contract(cost)


def test_fast_forms_return_the_protocols_numbers(qwen_cost):
    for bs, padded, kv, graph in DECODE_CALLS:
        totals, add_by_source = qwen_cost.decode_totals(bs, padded, list(kv), graph)
        steps = qwen_cost.decode_steps(bs, padded, np.array(kv), graph)
        assert totals == pytest.approx(steps.sum(axis=1).tolist(), rel=1e-12)
        acc = [0.0] * len(SOURCES)
        add_by_source(acc, len(kv))
        assert acc == pytest.approx(steps.sum(axis=0).tolist(), rel=1e-12)
    total, by_source = qwen_cost.fresh_prefill_totals(512)
    step = qwen_cost.extend_step(np.array([512]), np.array([0]))
    assert total == float(step.sum()) and by_source == step.tolist()


def test_one_predicate_says_which_batches_the_fresh_prefill_form_prices():
    assert is_single_fresh_prompt([512], [0], 0, False)
    assert not is_single_fresh_prompt([512, 3], [0, 0], 0, False)
    assert not is_single_fresh_prompt([512], [64], 0, False)
    assert not is_single_fresh_prompt([512], [0], 2, False)
    assert not is_single_fresh_prompt([512], [0], 0, True)


def test_the_pricer_uses_fast_forms_only_where_they_apply(qwen_cost):
    from simperf.sim.admission import ExtendPlan

    fresh = ExtendPlan([0], [512], [0], [True])
    assert StepPricer(qwen_cost, single_rank=True, step_log=False, prebuilt=False).fresh_prompt([fresh], 0)
    for pricer in (
        StepPricer(qwen_cost, single_rank=False, step_log=False, prebuilt=False),  # DP: gathered rows
        StepPricer(qwen_cost, single_rank=True, step_log=True, prebuilt=False),  # logging needs the arrays
        StepPricer(qwen_cost, single_rank=True, step_log=False, prebuilt=True),  # PD decode: no forward
        StepPricer(LinearCost(), single_rank=True, step_log=False, prebuilt=False),  # no fast forms
    ):
        assert pricer.fresh_prompt([fresh], 0) is None
    mixed = ExtendPlan([0], [512], [0], [True], mixed_decode=True)
    pricer = StepPricer(qwen_cost, single_rank=True, step_log=False, prebuilt=False)
    assert pricer.fresh_prompt([mixed], 3) is None and pricer.fresh_prompt([mixed], 0) is not None


def test_an_extend_launch_takes_its_kernels_host_time_and_never_outlasts_its_step(qwen_cost):
    """ExtendHostTime: kernels x the measured host time per kernel, >= 0, <= the step; the fresh-prompt shortcut
    gives the general path's number (the bug it guards: a launch priced on one path and not the other)."""
    assert isinstance(qwen_cost, ExtendHostTime)
    us_per_kernel = qwen_cost.extend_host_us_per_kernel[0]
    for ext, pre, dec in EXTEND_BATCHES:
        host = qwen_cost.extend_host_us(np.array(ext), np.array(pre), dec)
        step = float(qwen_cost.extend_step(np.array(ext), np.array(pre), dec).sum())
        assert 0 < host <= step + 1e-9
        assert host / us_per_kernel == pytest.approx(round(host / us_per_kernel))  # a whole number of kernels
    fresh = qwen_cost.extend_host_us(np.array([512]), np.array([0]))
    general = SGLangStepCost(qwen_cost.arch, qwen_cost.serving, qwen_cost.db, qwen_cost.overheads)
    general._single_fresh_prefill = lambda *args, **kwargs: None
    general._fresh_prefill = lambda tokens: None
    assert general.extend_host_us(np.array([512]), np.array([0])) == fresh
    assert not isinstance(LinearCost(), ExtendHostTime)
    pricer = StepPricer(LinearCost(), single_rank=True, step_log=False, prebuilt=False)
    assert pricer.extend_host(np.array([512]), np.array([0]), None, None, None) == 0.0
    pd_decode = StepPricer(qwen_cost, single_rank=True, step_log=False, prebuilt=True)
    assert pd_decode.extend_host(np.array([512]), np.array([0]), None, None, None) == 0.0
