import itertools
from pathlib import Path

import pytest

from simperf.perfdb.check import heldout_errors, heldout_summary, op_family, resolve_gpu, summarize_coverage
from simperf.perfdb.tables import write_table

# a backend without a modelled KV planner (perfdb/workplan.py), so the grid interpolation alone is checked
MLA_KEY = dict(backend="cutlass_mla", kv_dtype="bf16", num_heads=16, page_size=64, q_len=1)
GEMM_KEY = dict(backend="torch", dtype="bf16", n=4096, k=4096)


def power_law(b: float, kv: float) -> float:
    return 2.0 * b**0.5 * kv**0.25  # linear in log-log: the interpolator reproduces it exactly


def row(op, key, time_us, sample="grid", **axes):
    return dict(op=op, **key, **axes, time_us=time_us, status="ok", sample=sample, gpu="h200")


@pytest.fixture
def calibration(tmp_path: Path) -> Path:
    directory = tmp_path / "h200"
    rows = [
        row("attn_mla_decode", MLA_KEY, power_law(b, kv), batch=b, kv_len=kv)
        for b, kv in itertools.product([1, 8, 64], [1024, 8192, 65536])
    ]
    rows += [
        row("attn_mla_decode", MLA_KEY, power_law(b, kv), "heldout", batch=b, kv_len=kv)
        for b, kv in [(3, 3000), (20, 20000)]
    ]
    rows.append(row("attn_mla_decode", MLA_KEY, 1.0, "ragged", batch=4, kv_len=5000))
    write_table(rows, directory / "attn_mla_decode.parquet")
    gemm = [row("gemm", GEMM_KEY, 10.0 + m * 0.01, m=m) for m in (1, 16, 256, 4096)]
    gemm.append(row("gemm", GEMM_KEY, 12.0, "heldout", m=100))
    gemm.append({**row("gemm", GEMM_KEY, None, "heldout", m=200), "status": "failed"})
    write_table(gemm, directory / "gemm.parquet")
    return directory


def test_heldout_points_are_predicted_from_the_grid_only(calibration):
    errors = heldout_errors(calibration)
    assert errors.height == 3  # the failed held-out row and the ragged row are not predicted
    mla = errors.filter(errors["op"] == "attn_mla_decode")
    assert mla["rel_error"].abs().max() < 1e-9
    assert set(mla["source"]) == {"interpolated"}
    assert set(mla["point"]) == {"batch=3, kv_len=3000", "batch=20, kv_len=20000"}
    gemm = errors.filter(errors["op"] == "gemm").row(0, named=True)
    assert gemm["measured_us"] == 12.0
    assert 10.16 < gemm["predicted_us"] < 12.56
    assert gemm["rel_error"] == pytest.approx(gemm["predicted_us"] / 12.0 - 1)
    assert gemm["family"] == "gemm" and gemm["key"] == "backend=torch, dtype=bf16, n=4096, k=4096"


def test_summary_per_family_has_count_median_p90(calibration):
    summary = heldout_summary(heldout_errors(calibration))
    assert summary["family"].to_list() == ["attention", "gemm"]
    attention = summary.row(0, named=True)
    assert attention["count"] == 2 and attention["median_abs_rel_error"] < 1e-9
    assert {"p90_abs_rel_error", "max_abs_rel_error"} <= set(summary.columns)


def test_no_heldout_rows_gives_an_empty_frame(tmp_path):
    write_table([{**row("gemm", GEMM_KEY, 10.0, m=1), "gpu": "h100"}], tmp_path / "h100" / "gemm.parquet")
    errors = heldout_errors(tmp_path / "h100", gpu="h100")
    assert errors.height == 0 and "rel_error" in errors.columns
    assert heldout_summary(errors).height == 0


def test_coverage_summary_counts_rows_per_key(calibration):
    coverage = summarize_coverage(calibration)
    mla = coverage.filter(coverage["op"] == "attn_mla_decode").row(0, named=True)
    assert mla["points"] == 9 and mla["heldout"] == 2 and mla["ragged"] == 1 and mla["rows"] == 12
    gemm = coverage.filter(coverage["op"] == "gemm").row(0, named=True)
    assert gemm["failed"] == 1 and gemm["ok"] == 5


def test_gpu_is_taken_from_the_tables_else_the_directory_name(calibration, tmp_path):
    assert resolve_gpu(calibration).key == "h200"
    assert resolve_gpu(calibration, "h100").key == "h100"
    (tmp_path / "b200").mkdir()
    assert resolve_gpu(tmp_path / "b200").key == "b200"
    with pytest.raises(ValueError, match="unknown GPU"):
        resolve_gpu(tmp_path)


@pytest.mark.parametrize(
    ("op", "family"),
    [("attn_mla_decode", "attention"), ("nsa_indexer", "attention"), ("bmm", "gemm"), ("alltoall", "comm")],
)
def test_op_families(op, family):
    assert op_family(op) == family


def test_a_directory_without_gpu_rows_is_read_as_its_device_json_says_as_predict_reads_it(
    calibration, tmp_path
):
    """perfdb check / coverage read the GPU as predict does (locate.directory_gpu): rows, then device.json, then the
    directory's name. They skipped device.json: a directory named h100 holding H200 timings (device.json: h200,
    gpu column blank) was checked as h100, and one of another name was refused."""
    import json
    import shutil

    import polars as pl

    for name in ("h100", "mine"):
        directory = tmp_path / name
        shutil.copytree(calibration, directory)
        for path in directory.glob("*.parquet"):
            pl.read_parquet(path).with_columns(gpu=pl.lit(None, pl.String)).write_parquet(path)
        (directory / "device.json").write_text(json.dumps({"device": {"gpu": "h200"}}))
        assert resolve_gpu(directory).key == "h200"
        assert summarize_coverage(directory).height > 0
