"""An extend over a cached prefix as SGLang's flashinfer backend runs it (perfdb/prefix_path.py,
costmodel/prefix_path.py): ragged FA3 over the new tokens, paged FA2 over the prefix, merge_state — timed against
the tables' one FA3 kernel on an H100 (calibration/h100/extend_prefix_path.jsonl, benchmarks/extend_prefix_path.py).
The bug it closes: the tables' kernel priced a served 32k-token prompt's later chunks ~45% short (Qwen3-8B,
h100/qwen3-8b-flashinfer/c2-32k-128: TTFT -23%, TPOT -10%)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from realcost import zoo_cost

from simperf.perfdb.prefix_path import PATH_FILE, parse_records, ratios_from_records, read_prefix_path

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "calibration" / "h100" / PATH_FILE


def _records() -> list[dict]:
    return parse_records(RECORDS.read_text(encoding="utf-8").splitlines())


def test_the_shipped_records_are_h100_timings_of_both_paths_on_a_full_grid():
    records = _records()
    assert len(records) == 30
    assert {r["gpu"] for r in records} == {"NVIDIA H100 80GB HBM3"}
    for r in records:
        # SGLang's path is the two attention kernels and the merge: at least the two timed alone
        assert r["sglang_path_us"] >= 0.95 * (r["ragged_new_us"] + r["paged_prefix_fa2_us"]), r
        assert r["sglang_path_us"] > r["table_kernel_us"], r  # never faster than FA3 over everything


def test_the_ratio_is_the_measured_one_on_the_grid_one_without_a_prefix_and_clamped_outside():
    ratios = read_prefix_path(ROOT / "calibration" / "h100", 9)
    assert ratios is not None and ratios.provenance == "measured (h100)"
    for r in _records():
        measured = r["sglang_path_us"] / r["table_kernel_us"]
        got = float(ratios.ratio(r["heads"], r["kv_heads"], np.array(r["q_len"]), np.array(r["prefix"])))
        assert got == pytest.approx(measured, rel=1e-9)
    assert float(ratios.ratio(32, 8, np.array(8192.0), np.array(0.0))) == 1.0
    corner = float(ratios.ratio(32, 8, np.array(8192.0), np.array(24576.0)))
    assert float(ratios.ratio(32, 8, np.array(65536.0), np.array(131072.0))) == pytest.approx(corner)
    # between grid points: between its neighbours
    mid = float(ratios.ratio(32, 8, np.array(4096.0), np.array(8192.0)))
    ends = sorted(float(ratios.ratio(32, 8, np.array(q), np.array(8192.0))) for q in (2048.0, 8192.0))
    assert ends[0] <= mid <= ends[1]


def test_another_hopper_gpu_borrows_the_h100_measurement_labelled_and_others_none(tmp_path):
    """A Hopper directory without its own file (a user's calibration beside the shipped h100/) takes the H100's,
    labelled an estimate; the shipped H200 has its own since 2026-11-27; Blackwell none."""
    (tmp_path / "h100").mkdir()
    (tmp_path / "h100" / "extend_prefix_path.jsonl").write_text(
        (ROOT / "calibration/h100/extend_prefix_path.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "mygpu").mkdir()
    borrowed = read_prefix_path(tmp_path / "mygpu", 9)
    assert borrowed is not None and "estimate" in borrowed.provenance and "h100" in borrowed.provenance
    own = read_prefix_path(ROOT / "calibration" / "h200", 9)
    assert own is not None and "estimate" not in own.provenance
    assert read_prefix_path(ROOT / "calibration" / "b200", 10) is None


def test_the_h200s_own_ratios_are_the_h100s_within_the_repeat_spread():
    """Measured on the H200 the same day (calibration/h200/extend_prefix_path.jsonl): the ratio SGLang's path /
    table kernel is the H100's within -12...+11% per shape (median -0.5%); a second H100 host (runs/) repeats the
    H100's within +-8% (median -0.4%). The H200 no longer borrows."""

    def ratios(path):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return {
            (r["heads"], r["q_len"], r["prefix"]): r["sglang_path_us"] / r["table_kernel_us"] for r in rows
        }

    h100 = ratios(ROOT / "calibration/h100/extend_prefix_path.jsonl")
    h200 = ratios(ROOT / "calibration/h200/extend_prefix_path.jsonl")
    again = ratios(ROOT / "calibration/h100/runs/2026-11-27-extend-prefix-path-repeat.jsonl")
    assert h100.keys() == h200.keys() == again.keys()
    for other, spread in ((h200, 0.13), (again, 0.09)):
        changes = sorted(other[k] / h100[k] - 1 for k in h100)
        assert abs(changes[len(changes) // 2]) < 0.01 and max(abs(c) for c in changes) < spread


def test_a_records_file_that_is_not_a_full_grid_is_refused():
    records = _records()[:-1]
    with pytest.raises(ValueError, match="not a full grid"):
        ratios_from_records(records, "test")


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_a_flashinfer_extend_over_a_prefix_is_the_table_time_times_the_measured_ratio(gpu):
    cost = zoo_cost("qwen3-8b", gpu)
    assert cost.db.prefix_path is not None
    q, prefix = 8192, 16384
    with_prefix = cost.breakdown_extend(np.array([q]), np.array([prefix]))
    attention = next(r for r in with_prefix if r.op == "attn_mha_prefill")
    key = {c: attention.key[c] for c in attention.key}
    base = cost.db.curve("attn_mha_prefill", key).timing(**attention.axes).us
    ratio = float(cost.db.prefix_path.ratio(32, 8, np.array(float(q)), np.array(float(prefix))))
    assert attention.us_per_call == pytest.approx(base * ratio)
    assert "paged FA2" in attention.detail
    # the step total carries it too (the general path, not only the breakdown)
    fresh = cost.breakdown_extend(np.array([q]), np.array([0]))
    fresh_attention = next(r for r in fresh if r.op == "attn_mha_prefill")
    assert fresh_attention.us_per_call == pytest.approx(
        cost.db.curve("attn_mha_prefill", key).timing(**fresh_attention.axes).us
    )
    step = float(np.sum(cost.extend_step(np.array([q]), np.array([prefix]))))
    assert step == pytest.approx(sum(r.total_us for r in with_prefix), rel=1e-6)


def test_the_repriced_curve_keeps_the_base_curves_key_backing_and_slices_with_the_factor():
    """PrefixPathCurve is built from the base curve's constructor arguments (it copied its __dict__ before): the
    same op, key and backing, and `along` (the simulator's fast slice) applies the factor as a call does."""
    from simperf.costmodel.prefix_path import PrefixPathCurve

    cost = zoo_cost("qwen3-8b", "h100")
    key = {"backend": "flashinfer_fa3", "dtype": "bf16", "num_heads": 32, "num_kv_heads": 8, "head_dim": 128,
           "head_dim_v": 128}  # fmt: skip
    base = cost.db.curve("attn_mha_prefill", key)
    curve = PrefixPathCurve(base, cost.db.prefix_path)
    assert (curve.op, curve.key, curve.backing, curve.measured) == (
        base.op,
        base.key,
        base.backing,
        base.measured,
    )
    # a grid value of kv_len, where a slice is exact: 4,096 new tokens over a 12,288-token prefix
    axes = {"batch": 1.0, "q_len": 4096.0, "kv_len": 16384.0}
    sliced = curve.along("kv_len", batch=1.0, q_len=4096.0)
    (called, _), (along, _) = curve(**axes), sliced(np.array([axes["kv_len"]]))
    assert float(along[0]) == pytest.approx(float(called)) and float(called) > 1.2 * float(base(**axes)[0])


def test_the_fa3_backend_and_mla_models_keep_the_tables_kernel():
    """SGLang's FA3 backend reads the prefix in the same kernel; its MLA backends split differently (not measured)."""
    for model, backend in (("qwen3-8b", "fa3"), ("deepseek-v2-lite", "flashinfer")):
        from simperf.accuracy.hostcosts import step_cost_of
        from simperf.scenario.models import Scenario

        cost = step_cost_of(
            Scenario.model_validate(
                {
                    "model": {"name": model},
                    "hardware": {"gpu": "h100"},
                    "serving": {"attention_backend": backend},
                    "workload": {"dataset": {"kind": "fixed", "input_len": 64, "output_len": 2}},
                }
            )
        )
        rows = cost.breakdown_extend(np.array([2048]), np.array([8192]))
        assert not any("paged FA2" in r.detail for r in rows), model


def test_the_benchmark_writes_what_the_reader_takes(tmp_path):
    """benchmarks/extend_prefix_path.py's record fields are the ones parse_records and the ratios read."""
    record = json.loads(RECORDS.read_text(encoding="utf-8").splitlines()[0])
    for field in ("heads", "kv_heads", "q_len", "prefix", "table_kernel_us", "sglang_path_us"):
        assert field in record


def test_a_users_tables_outside_a_calibration_tree_borrow_the_shipped_h100_ratio(tmp_path):
    """A Hopper directory with no extend_prefix_path.jsonl and no sibling h100/ (e.g. `simperf calibrate --out
    ~/tables`) prices its extends over a prefix with the shipped H100's ratio, labelled an estimate, rather than
    with the table's one kernel."""
    alone = tmp_path / "tables"
    alone.mkdir()
    ratios = read_prefix_path(alone, 9)
    assert ratios is not None and "estimate" in ratios.provenance and "calibration/h100" in ratios.provenance
    shipped = read_prefix_path(ROOT / "calibration" / "h100", 9)
    assert float(ratios.ratio(32, 8, np.array(2048.0), np.array(8192.0))) == float(
        shipped.ratio(32, 8, np.array(2048.0), np.array(8192.0))
    )


def test_a_record_that_is_not_json_is_refused_with_its_file_and_line(tmp_path):
    directory = tmp_path / "h200"
    directory.mkdir()
    lines = (ROOT / "calibration/h100/extend_prefix_path.jsonl").read_text(encoding="utf-8").splitlines()
    (directory / "extend_prefix_path.jsonl").write_text("\n".join([*lines[:2], '{"heads": 32,', *lines[2:]]))
    with pytest.raises(ValueError, match=r"extend_prefix_path\.jsonl:3: not a JSON record"):
        read_prefix_path(directory, 9)
    (directory / "extend_prefix_path.jsonl").write_text("\n".join(lines[:-1]))
    with pytest.raises(ValueError, match=r"h200/extend_prefix_path\.jsonl: .*not a full grid"):
        read_prefix_path(directory, 9)
