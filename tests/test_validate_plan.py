"""simperf validate, CPU side: step logging, stratified sampling, step programs, plans and resume."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import pytest

from simperf.pipeline import predict
from simperf.scenario.load import load_scenario
from simperf.sim.steplog import LoggedStep, StepLog
from simperf.validate.build import UnsupportedStep, build_program, nearest_tile_config, recorded_tile_config
from simperf.validate.plan import load_plan, plan_validation
from simperf.validate.program import StepProgram
from simperf.validate.sample import at_offset, sample_steps, stratum_of

ROOT = Path(__file__).resolve().parents[1]
QWEN = ROOT / "scenarios/validate/qwen3-8b-h200.yaml"
R1_DP8 = ROOT / "scenarios/validate/r1-tp8-dp8-h200.yaml"


def small(path: Path, prompts: int = 60):
    scenario = load_scenario(path)
    return scenario.model_copy(
        update={"workload": scenario.workload.model_copy(update={"num_prompts": prompts})}
    )


@pytest.fixture(scope="module")
def qwen_run():
    log = StepLog()
    prediction = predict(small(QWEN), step_log=log)
    return prediction, log


@pytest.fixture(scope="module")
def dp8_run():
    log = StepLog()
    prediction = predict(small(R1_DP8, 80), step_log=log)
    return prediction, log


def test_step_log_accounts_for_every_simulated_iteration(qwen_run):
    prediction, log = qwen_run
    assert sum(step.repeats for step in log.steps) == prediction.stats.iterations
    kinds = collections.Counter(step.kind for step in log.steps)
    assert kinds["prefill"] == prediction.stats.extend_iterations
    assert sum(s.repeats for s in log.steps if s.kind == "decode") == prediction.stats.decode_iterations


def test_rebuilt_step_prices_like_the_simulated_one(qwen_run):
    prediction, log = qwen_run
    for sampled in sample_steps(log.steps, 12):
        program = build_program(prediction.cost, sampled)
        rebuilt = program.predicted_measurable_us() + program.predicted_unmeasured_us()
        # decode: the simulator prices a run at its mean KV per step, the rebuild at this step's: same curve
        assert rebuilt == pytest.approx(
            sampled.step.predicted_us, rel=0.01 if sampled.kind == "decode" else 1e-9
        )


def test_sampling_covers_every_step_kind_that_happened(dp8_run):
    _, log = dp8_run
    happened = {s.kind for s in log.steps}
    picked = sample_steps(log.steps, 12, seed=3)
    assert {p.kind for p in picked} == happened
    assert len(picked) <= 12
    # a rare kind still gets at least n / (2 x kinds) samples when it has that many distinct steps
    counts = collections.Counter(p.kind for p in picked)
    assert all(
        counts[k] >= min(12 // (2 * len(happened)), sum(s.kind == k for s in log.steps)) for k in happened
    )


def test_sampling_is_deterministic_and_never_repeats_a_step(qwen_run):
    _, log = qwen_run
    a, b = sample_steps(log.steps, 16, seed=5), sample_steps(log.steps, 16, seed=5)
    assert [(p.stratum, p.step.decode_kv_lens.tobytes()) for p in a] == [
        (p.stratum, p.step.decode_kv_lens.tobytes()) for p in b
    ]
    contents = {(p.step.extend_lens.tobytes(), p.step.decode_kv_lens.tobytes(), p.step.padded_bs) for p in a}
    assert len(contents) == len(a)


def test_decode_run_offset_lengthens_every_requests_kv():
    step = LoggedStep(0, "decode", 0.0, 1.0, 10, np.zeros(0, np.int64), np.zeros(0, np.int64),
                      np.array([5, 9]), 2, True, None, None)  # fmt: skip
    later = at_offset(step, 4)
    assert later.decode_kv_lens.tolist() == [9, 13] and later.repeats == 1
    assert stratum_of(step) == "decode|rows 2-3|kv 4-7"
    with pytest.raises(ValueError):
        at_offset(step, 10)


def test_program_groups_ops_into_layer_kinds_with_real_lengths(dp8_run):
    prediction, log = dp8_run
    arch = prediction.arch
    decode = next(s for s in sample_steps(log.steps, 20) if s.kind == "decode" and s.step.graph)
    program = build_program(prediction.cost, decode)
    assert program.layer_kinds == {"dense": arch.num_dense_mlp_layers, "moe": arch.num_moe_layers}
    attention = next(op for op in program.ops if op.name == "attention")
    lens = json.loads(attention.point["kv_lens"])
    padded = decode.step.padded_bs
    # the request's own KV lengths, then one token per CUDA-graph padding row
    assert lens[: decode.step.decode_kv_lens.size] == decode.step.decode_kv_lens.tolist()
    assert lens[decode.step.decode_kv_lens.size :] == [1] * (padded - decode.step.decode_kv_lens.size)
    # attention sits inside the layer, before w_vc, as SGLang runs it
    names = [op.name for op in program.ops_of("moe")]
    assert names.index("attention") < names.index("w_vc") < names.index("o_proj")
    assert not any(op.name.startswith("mlp.") for op in program.ops_of("moe"))
    # collectives stay in the program, priced by the prediction only
    for op in program.ops:
        assert op.runnable == (op.op not in ("allreduce", "allgather", "reducescatter", "alltoall")), op.name


def test_extend_program_passes_per_request_query_and_kv_lengths(qwen_run):
    prediction, log = qwen_run
    prefill = next(s for s in sample_steps(log.steps, 12) if s.kind == "prefill")
    program = build_program(prediction.cost, prefill)
    attention = next(op for op in program.ops if op.name == "attention")
    assert json.loads(attention.point["q_lens"]) == prefill.step.extend_lens.tolist()
    assert (
        json.loads(attention.point["kv_lens"])
        == (prefill.step.extend_lens + prefill.step.prefix_lens).tolist()
    )


def _tuned(label: str) -> str:
    return f"cuda_graph_replay tuned {label} (best of 9)"


def test_nearest_tile_config_takes_the_nearest_measured_m_in_log_space():
    from simperf.calibrate.backends import moe_triton as mt

    a, b, c, d, e = (
        mt.BlockConfig(16, n, 128, 1, 4, s) for n, s in ((32, 3), (64, 4), (128, 5), (64, 5), (32, 4))
    )
    rows = [
        (1, _tuned(mt.config_label(a))),
        (4, _tuned(mt.config_label(b))),
        (16, _tuned(mt.config_label(c))),
    ]
    rows += [(64, _tuned(mt.config_label(d))), (64, _tuned(mt.config_label(e)))]  # re-measured: the last wins
    rows += [(256, "cuda_graph_replay")]  # measured untuned

    def pick(m: int):
        return nearest_tile_config(rows, m, 9, 257, "fp8_block")

    assert pick(1) == a and pick(4) == b and pick(16) == c
    assert pick(2) == a  # as far from 1 as from 4 in log space: the smaller m
    assert pick(9) == c  # nearer 16 in log space (linear distance would pick 4)
    assert pick(64) == e
    # the nearest row was measured untuned: the rule for this m (what such rows ran), also beyond the grid
    for m in (200, 100_000):
        assert pick(m) == mt.block_config(m, 9, 257, "fp8_block")
    assert nearest_tile_config([], 700, 9, 257, "fp8_block") == mt.block_config(700, 9, 257, "fp8_block")


def _shipped_db(gpu: str):
    from simperf.hardware.catalog import get_gpu
    from simperf.perfdb.db import PerfDB

    return PerfDB.load(ROOT / "calibration" / gpu, get_gpu(gpu))


def test_recorded_tile_config_reads_the_shipped_tables():
    from simperf.calibrate.backends import moe_triton as mt

    fused = {"backend": "triton_fused_moe", "dtype": "fp8_block", "num_experts": 257, "experts_per_rank": 257}
    fused.update(topk=9, n=256, k=7168, routing="balanced+shared1")
    db = _shipped_db("h200")
    rows = db.grid_rows("moe", fused)
    recorded = dict(zip(rows["m"].to_list(), rows["timing_method"].to_list(), strict=True))
    assert {512, 1024} <= set(recorded) and all(" tuned " in str(t) for t in recorded.values())
    label_512 = mt.config_label(mt.recorded_config(recorded[512]))
    assert recorded_tile_config(db, fused, 512) == label_512  # a grid m: what that row timed
    assert recorded_tile_config(db, fused, 700) == label_512  # off the grid: the nearest m (log space)
    assert recorded_tile_config(db, fused, 800) == mt.config_label(mt.recorded_config(recorded[1024]))
    # untuned rows (bf16 kept the fixed rule) and keys without rows
    bf16 = {**fused, "dtype": "bf16", "num_experts": 128, "experts_per_rank": 128, "topk": 8}
    bf16.update(n=384, k=2048, routing="balanced")
    assert len(db.grid_rows("moe", bf16)) and recorded_tile_config(db, bf16, 700) == mt.config_label(
        mt.block_config(700, 8, 128, "bf16")
    )
    unmeasured = {**fused, "n": 999}  # no table row has this shape: the fixed rule
    assert not len(db.grid_rows("moe", unmeasured))
    assert recorded_tile_config(db, unmeasured, 700) == mt.config_label(
        mt.block_config(700, 9, 257, "fp8_block")
    )


def test_moe_ops_carry_the_configuration_their_table_recorded():
    """Every op priced by simperf's Triton fused MoE in a DeepSeek program names the configuration of the nearest
    measured m of its key (read here straight from the table file), and it survives the plan file. At EP 8: SGLang's
    own kernel is timed at EP 1 only (its table picks its own tiles), so the expert-parallel layout keeps simperf's."""
    import math

    import polars as pl

    from simperf.calibrate.backends import moe_triton as mt

    scenario = small(R1_DP8, 80)
    scenario = scenario.model_copy(update={"serving": scenario.serving.model_copy(update={"ep": 8})})
    log = StepLog()
    prediction = predict(scenario, step_log=log)
    table = pl.read_parquet(ROOT / "calibration/h200/moe.parquet").filter(
        pl.col("status") == "ok", pl.col("sample") == "grid"
    )
    seen_off_grid = 0
    for sampled in sample_steps(log.steps, 12):
        program = StepProgram.from_json(build_program(prediction.cost, sampled).to_json())
        for op in program.ops:
            if op.op != "moe" or op.point["backend"] != "triton_fused_moe":
                continue
            key = {c: op.point[c] for c in ("dtype", "num_experts", "experts_per_rank", "topk", "n", "k")}
            rows = table.filter(pl.col("backend") == "triton_fused_moe", routing=op.point["routing"], **key)
            m = op.point["m"]
            nearest = min(rows["m"].to_list(), key=lambda g: (abs(math.log(g / m)), g))
            seen_off_grid += nearest != m
            method = rows.filter(pl.col("m") == nearest)["timing_method"].item()
            assert op.point[mt.VALIDATION_CONFIG] == mt.config_label(mt.recorded_config(method)), (m, nearest)
    assert seen_off_grid


def test_program_round_trips_through_json(qwen_run):
    prediction, log = qwen_run
    program = build_program(prediction.cost, sample_steps(log.steps, 1)[0])
    again = StepProgram.from_json(program.to_json())
    assert again == program


def test_speculative_scenarios_are_refused_with_the_reason(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(
        "name: spec\nmodel: {name: deepseek-r1}\nhardware: {gpu: h200, count: 8}\n"
        "serving: {tp: 8, speculative: {algorithm: eagle, num_steps: 3, eagle_topk: 1, num_draft_tokens: 4,"
        " accept_length: {mean: 2.5}}}\n"
        "workload: {dataset: {kind: random, input_len: 128, output_len: 16}, num_prompts: 4}\n"
    )
    with pytest.raises(UnsupportedStep, match="speculative"):
        plan_validation(path, tmp_path / "out", 4)


def test_a_plan_is_reused_until_the_scenario_or_settings_change(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(QWEN.read_text().replace("num_prompts: 400", "num_prompts: 40"))
    out = tmp_path / "out"
    header, programs, reused = plan_validation(scenario, out, 6)
    assert not reused and header["num_programs"] == len(programs) <= 6
    assert plan_validation(scenario, out, 6)[2] is True
    assert plan_validation(scenario, out, 5)[2] is False
    scenario.write_text(scenario.read_text().replace("seed: 7", "seed: 8"))
    assert plan_validation(scenario, out, 5)[2] is False
    # a torn programs file (killed while writing) is not trusted
    (out / "programs.jsonl").write_text((out / "programs.jsonl").read_text().splitlines()[0] + "\n")
    assert load_plan(out) is None


def test_a_missing_calibration_directory_names_no_option_validate_lacks(tmp_path):
    """validate times the tables' kernels and has no --roofline-only: its error for a missing --calibration
    directory must not point at that option, as predict's does."""
    from typer.testing import CliRunner

    from simperf.cli import app

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "qwen3-8b-h100.yaml"
    result = CliRunner().invoke(
        app, ["validate", str(scenario), "--calibration", str(tmp_path / "none"), "--plan-only", "--out",
              str(tmp_path / "val")],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "no such directory" in result.output and "--roofline-only" not in result.output
    assert not (tmp_path / "val").exists()
