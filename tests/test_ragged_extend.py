"""A ragged extend batch lasts at least as long as its longest request alone (models.ops.extend_group's straggler,
OpCall.floor_axes; docs/costmodel.md).

The work-equivalent uniform batch spreads a ragged batch's causal work evenly over its requests; the kernel does
not: the request with the longest KV streams the most keys in its last query tile, and nothing else in the batch
makes that CTA shorter. The bug it guards: on a development set of 53 ragged MHA prefills timed on an H100
(calibration/offgrid/ragged-extend-dev*.jsonl, seed 2026, apart from the off-grid set) the equivalent batch alone
was 21% off (median; p90 76%), short ones up to 3x too fast; with the bound 9% (p90 37%). flashinfer's FA3 prefill
is since priced from its planner's busiest CTA (perfdb/prefillplan.py, tests/test_prefillplan.py); the bound stays
for kernels whose scheduler is not modelled (SGLang's own FA3, the MLA extend).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from realcost import real_cost, real_setup

from simperf.hardware.catalog import get_gpu
from simperf.models.ops import extend_group
from simperf.perfdb import prefillplan
from simperf.perfdb.db import PerfDB
from simperf.perfdb.offgrid.io import read_samples
from simperf.perfdb.offgrid.predict import predict
from simperf.perfdb.schema import OP_SPECS

REPO = Path(__file__).resolve().parents[1]


def test_a_uniform_batch_has_no_straggler_and_a_ragged_one_names_its_longest_kv():
    assert extend_group(np.array([512, 512]), np.array([64, 64]), 0).straggler is None
    ragged = extend_group(np.array([142, 76, 72]), np.array([1124, 0, 4265]), 0)
    assert ragged.straggler == (72.0, 4337.0)
    # equal KV: the one with more new tokens (more query tiles against the same keys)
    assert extend_group(np.array([100, 300]), np.array([200, 0]), 0).straggler == (300.0, 300.0)


def test_the_cost_model_prices_a_ragged_prefill_no_shorter_than_its_straggler_alone():
    # Qwen3-8B on the shipped H100 tables with SGLang's FA3 backend (its own flash-attention kernel, whose tile
    # scheduler simperf does not model; flashinfer's FA3 is priced from its planner: tests/test_prefillplan.py)
    _, serving, _, _ = real_setup("qwen3-8b-h100")
    cost = real_cost("qwen3-8b-h100", replace(serving, prefill_backend="fa3", decode_backend="fa3"))
    ext, pre = np.array([142, 76, 83, 60, 72]), np.array([0, 0, 0, 0, 16000])
    rows = {r.name: r for r in cost.breakdown_extend(ext, pre)}
    alone = {r.name: r for r in cost.breakdown_extend(np.array([72]), np.array([16000]))}
    attention = rows["attention"]
    assert attention.key["backend"] == "sgl_fa3"
    assert attention.us_per_call == pytest.approx(alone["attention"].us_per_call, rel=1e-9)
    assert "longest request alone" in attention.detail
    # where the equivalent batch is longer, the bound does not bind
    even = {r.name: r for r in cost.breakdown_extend(np.array([2048, 1900]), np.array([0, 0]))}
    assert "longest request alone" not in even["attention"].detail


def test_the_cost_model_prices_a_ragged_flashinfer_prefill_from_its_planner():
    _, serving, _, _ = real_setup("qwen3-8b-h100")
    cost = real_cost(
        "qwen3-8b-h100", replace(serving, prefill_backend="flashinfer", decode_backend="flashinfer")
    )
    ext, pre = np.array([142, 76, 83, 60, 72]), np.array([0, 0, 0, 0, 4265])
    rows = {r.name: r for r in cost.breakdown_extend(ext, pre)}
    attention = rows["attention"]
    assert attention.key["backend"] == "flashinfer_fa3"
    assert "SM90 prefill plan" in attention.detail and "cached prefix" in attention.detail
    # the step the simulator takes sums the same op time as the breakdown shows
    rest = sum(r.total_us for r in rows.values() if r.op != "overhead")
    step = float(cost.extend_step(ext, pre).sum())
    assert step == pytest.approx(
        max(rest, rows["eager_launch"].count * cost.extend_host_us_per_kernel[0]), rel=1e-9
    )
    # a uniform batch keeps the table's own curve (exact on its grid points)
    even = {r.name: r for r in cost.breakdown_extend(np.array([2048, 2048]), np.array([0, 0]))}
    assert "prefill plan" not in even["attention"].detail


def test_the_off_grid_check_prices_ragged_extends_as_the_cost_model_does():
    _, samples = read_samples(REPO / "calibration/offgrid/ragged-extend-dev.jsonl")
    db = PerfDB.load(REPO / "calibration/h100", get_gpu("h100"))
    bound = planned = 0  # calls priced by the equivalent batch and its bound, by the planner
    for sample in samples:
        point = sample["point"]
        q = np.array(json.loads(point["q_lens"]))
        kv = np.array(json.loads(point["kv_lens"]))
        group = extend_group(q, kv - q, 0)
        got = predict(db, point).us
        spec = OP_SPECS[point["op"]]
        curve = db.curve(spec.name, {c: point[c] for c in spec.key_columns})
        rates = db.prefill_rates(curve.op, curve.key)
        if rates is not None:  # flashinfer's FA3 prefill: its planner's busiest CTA (perfdb/prefillplan.py)
            assert got == pytest.approx(prefillplan.planned_us(rates, q, kv)[0], rel=1e-9)
            planned += 1
            continue
        equivalent = curve.timing(batch=group.batch, q_len=group.q_len, kv_len=group.kv_len).us
        alone = curve.timing(batch=1.0, q_len=group.straggler[0], kv_len=group.straggler[1]).us
        assert got == pytest.approx(max(equivalent, alone), rel=1e-9)
        bound += 1
    assert bound > 0 and planned > 0  # the set exercises both (the MLA extend has no modelled planner)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--ragged-extends", "0", "--seed", "5"], "at least 1"),
        (["--ragged-extends", "-3", "--seed", "5"], "at least 1"),
        (["--ragged-extends", "4"], "other than the off-grid set's"),
        (["--ragged-extends", "4", "--seed", "19"], "other than the off-grid set's"),
    ],
)
def test_a_development_set_needs_a_count_and_its_own_seed(tmp_path, capsys, args, message):
    """A bad request writes nothing and says why in one line (a count of 0 used to fall through to the whole
    off-grid set)."""
    from simperf.perfdb.offgrid.__main__ import main

    out = tmp_path / "dev.jsonl"
    assert main(["generate", str(out), *args]) == 2
    assert not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_a_development_set_is_ragged_extends_from_its_seed(tmp_path):
    from simperf.perfdb.offgrid.__main__ import main

    out = tmp_path / "dev.jsonl"
    assert main(["generate", str(out), "--seed", "2026", "--ragged-extends", "5"]) == 0
    header, samples = read_samples(out)
    assert header["seed"] == 2026 and len(samples) == 5
    assert all(s["ragged"] and s["point"]["op"] in ("attn_mha_prefill", "attn_mla_extend") for s in samples)
    # the committed development set is this generator's output for its seed
    _, committed = read_samples(REPO / "calibration/offgrid/ragged-extend-dev.jsonl")
    assert [s["point"] for s in samples] == [s["point"] for s in committed[:5]]
