"""`simperf perfdb diff`: simperf's tables against imported ones on the shapes both cover."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from simperf.perfdb.diff import diff_command, diff_tables
from simperf.perfdb.importers.aiconfigurator import import_system
from simperf.perfdb.tables import write_table

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "aiconfigurator"
KEY = dict(op="attn_mla_decode", num_heads=16, page_size=64, q_len=1)


@pytest.fixture(scope="module")
def imported_h200(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("aic_h200")
    import_system("h200_sxm", out, root=FIXTURE)
    return out


def measured_like(
    imported: Path, out: Path, factor: dict[str, float], backend: str = "flashinfer_fa3"
) -> Path:
    """A 'measured' H200 directory with the imported points' shapes at factor[kv_dtype] x their times."""
    rows = pl.read_parquet(imported / "aiconfigurator_attn_mla_decode.parquet")
    write_table(
        [
            {
                **KEY,
                "backend": backend,
                "kv_dtype": "fp8_e4m3" if r["kv_dtype"] == "fp8" else r["kv_dtype"],  # the other spelling
                "batch": r["batch"],
                "kv_len": r["kv_len"],
                "time_us": r["time_us"] * factor[r["kv_dtype"]],
                "status": "ok",
                "sample": "grid",
                "gpu": "h200",
                "source": "measured",
            }
            for r in rows.iter_rows(named=True)
        ],
        out / "attn_mla_decode.parquet",
    )
    return out


def test_ratios_compare_the_same_shapes_through_the_backend_pairs(imported_h200, tmp_path):
    mine = measured_like(imported_h200, tmp_path, {"bf16": 1.0, "fp8": 0.25})
    result = diff_tables(mine, imported_h200)
    assert result.points.height == 8  # 2 dtypes x batch 16/256 x kv 2048/8192
    by_dtype = {row["key_b"]: row for row in result.summary.iter_rows(named=True)}
    fp8 = next(v for k, v in by_dtype.items() if "kv_dtype=fp8" in k)
    bf16 = next(v for k, v in by_dtype.items() if "kv_dtype=bf16" in k)
    assert fp8["ratio_p50"] == pytest.approx(4.0) and bf16["ratio_p50"] == pytest.approx(1.0)
    assert "backend=fa3" in fp8["key_b"] and "backend=flashinfer_fa3" in fp8["key_a"]
    assert set(result.points["label_a"]) == {"measured"}
    assert result.by_op["n"].to_list() == [8]


def test_a_median_ratio_beyond_the_threshold_is_listed_as_a_disagreement(imported_h200, tmp_path):
    mine = measured_like(imported_h200, tmp_path, {"bf16": 1.0, "fp8": 0.25})
    disagreements = diff_tables(mine, imported_h200).disagreements()
    assert disagreements.height == 1 and "kv_dtype=fp8" in disagreements["key_a"][0]


def test_without_a_backend_pair_nothing_is_shared(imported_h200, tmp_path):
    mine = measured_like(imported_h200, tmp_path, {"bf16": 1.0, "fp8": 1.0})
    result = diff_tables(mine, imported_h200, backend_pairs={})
    assert result.points.height == 0
    assert len(result.only_a) == 2 and len(result.only_b) == 2


def test_interpolation_compares_points_between_the_reference_grid(imported_h200, tmp_path):
    # the reference has only the corners batch 16/256 x kv 2048/8192 of one dtype; B's points are those corners
    mine = measured_like(imported_h200, tmp_path, {"bf16": 1.0, "fp8": 1.0})
    rows = pl.read_parquet(mine / "attn_mla_decode.parquet")
    write_table(rows.filter(pl.col("batch") == 256).to_dicts(), mine / "attn_mla_decode.parquet")
    exact = diff_tables(mine, imported_h200)
    assert set(exact.points["point"].str.contains("batch=256")) == {True}
    # batch 16 lies below the reference grid (batch 256 only): extrapolated, never compared even when asked
    assert diff_tables(mine, imported_h200, interpolate=True).points.height == exact.points.height


def test_diff_command_prints_the_ratio_table(imported_h200, tmp_path):
    mine = measured_like(imported_h200, tmp_path, {"bf16": 1.0, "fp8": 0.25})
    app = typer.Typer()
    app.command()(diff_command)
    points = tmp_path / "out" / "points.parquet"  # not in A: there it would be read as one of its tables
    points.parent.mkdir()
    result = CliRunner().invoke(
        app, [str(mine), str(imported_h200), "--points", str(points)], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    assert "attn_mla_decode" in result.output and "disagree" in result.output
    assert pl.read_parquet(points).height == 8


def test_diff_command_says_so_when_nothing_is_shared(imported_h200, tmp_path):
    mine = measured_like(imported_h200, tmp_path, {"bf16": 1.0, "fp8": 1.0}, backend="flashmla")
    app = typer.Typer()
    app.command()(diff_command)
    result = CliRunner().invoke(app, [str(mine), str(imported_h200)])
    assert result.exit_code == 1 and "no shared shapes" in result.output
