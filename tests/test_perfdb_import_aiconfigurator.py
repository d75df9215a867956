"""Importing AIConfigurator's published tables (a small cut of the real package data, tests/fixtures/aiconfigurator)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from simperf.hardware import get_gpu
from simperf.perfdb.db import PerfDB
from simperf.perfdb.importers.aiconfigurator import AIConfiguratorImportError, import_system, version_key
from simperf.perfdb.importers.cli import import_command
from simperf.perfdb.schema import ALL_COLUMNS

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "aiconfigurator"
RAW = FIXTURE / "systems" / "data" / "b200_sxm"
SOURCE = "third-party:aiconfigurator 0.12.0"


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("b200")
    return out, import_system("b200_sxm", out, root=FIXTURE)


def table(out: Path, op: str) -> pl.DataFrame:
    return pl.read_parquet(out / f"aiconfigurator_{op}.parquet")


def test_every_supported_table_becomes_one_file_per_op_in_the_schema(imported):
    out, report = imported
    assert sorted(report.files) == sorted(
        f"aiconfigurator_{op}.parquet"
        for op in ("attn_mla_decode", "attn_mha_prefill", "bmm", "gemm", "moe")
        + ("allreduce", "allgather", "reducescatter", "alltoall")
    )
    for name, rows in report.files.items():
        frame = pl.read_parquet(out / name)
        assert frame.columns == list(ALL_COLUMNS) and frame.height == rows
    recorded = json.loads((out / "aiconfigurator_import.json").read_text())
    assert recorded["tool_version"] == "0.12.0" and recorded["gpu"] == "b200"


def test_rows_carry_third_party_provenance_from_the_package(imported):
    out, _ = imported
    rows = table(out, "gemm")
    assert set(rows["source"]) == {f"{SOURCE} (sglang 0.5.14)"}
    assert set(rows["timing_method"]) == {"third-party"}
    assert set(rows["status"]) == {"ok"} and set(rows["sample"]) == {"grid"}
    assert set(rows["gpu"]) == {"b200"} and set(rows["gpu_name"]) == {"NVIDIA B200"}
    assert set(rows["sm"]) == {"10.0"}  # sm_version: 100 in b200_sxm.yaml


def test_mla_decode_kv_len_counts_the_new_token_and_times_are_microseconds(imported):
    out, _ = imported
    raw = pl.read_parquet(RAW / "mla/sglang/0.5.14/generation_mla_perf.parquet")
    rows = table(out, "attn_mla_decode")
    assert set(rows["kv_len"]) == {1024, 8192}  # isl 1 + step 1023 / 8191
    assert set(rows["backend"]) == {"trtllm_mla"} and set(rows["kv_dtype"]) == {"bf16", "fp8"}
    assert set(rows["page_size"]) == {64} and set(rows["q_len"]) == {1} and set(rows["num_heads"]) == {16}
    one = raw.filter(
        (pl.col("batch_size") == 256) & (pl.col("step") == 8191) & (pl.col("kv_cache_dtype") == "fp8")
    )
    mine = rows.filter((pl.col("batch") == 256) & (pl.col("kv_len") == 8192) & (pl.col("kv_dtype") == "fp8"))
    assert mine["time_us"].to_list() == pytest.approx([v * 1000 for v in one["latency"].to_list()])


def test_blackwell_mla_prefill_is_the_ragged_192_128_path_and_fp8_cache_rows_are_left_out(imported):
    out, report = imported
    rows = table(out, "attn_mha_prefill")
    assert set(rows["backend"]) == {"trtllm"}
    assert set(zip(rows["head_dim"], rows["head_dim_v"], strict=True)) == {(192, 128)}
    assert (rows["num_kv_heads"] == rows["num_heads"]).all() and (rows["q_len"] == rows["kv_len"]).all()
    context = next(t for t in report.tables if t.source_file.endswith("context_mla_perf.parquet"))
    assert sum(context.dropped.values()) == 4 and context.ops == {"attn_mha_prefill": 4}


def test_gemm_kernels_map_to_simperf_backends_and_dtypes(imported):
    out, _ = imported
    pairs = set(table(out, "gemm").select("backend", "dtype").unique().iter_rows())
    assert pairs == {
        ("torch", "bf16"),
        ("deep_gemm", "fp8_block"),
        ("sgl_kernel", "fp8_rowwise"),
        ("flashinfer_cutedsl", "nvfp4"),
    }


def test_moe_splits_experts_over_ep_and_the_intermediate_size_over_tp(imported):
    out, _ = imported
    rows = table(out, "moe")
    assert set(rows["experts_per_rank"]) == {32}  # 256 experts over EP8
    assert set(rows["n"]) == {2048} and set(rows["k"]) == {7168} and set(rows["topk"]) == {8}
    assert set(rows["m"]) == {1, 128, 1024} and set(rows["routing"]) == {"balanced"}


def test_collective_message_bytes_are_the_whole_tensor_in_bytes(imported):
    out, _ = imported
    nccl = table(out, "allgather")
    assert set(nccl["message_bytes"]) == {65536 * 2, 1048576 * 2}  # half: 2 bytes per element
    assert set(nccl["backend"]) == {"nccl"} and set(nccl["dtype"]) == {"bf16"}
    allreduce = table(out, "allreduce")
    assert set(allreduce["backend"]) == {"nccl", "sglang_custom_ar", "sglang_custom_ar_eager"}


def test_every_framework_version_is_imported_as_a_vintage(imported):
    out, report = imported
    custom = [t for t in report.tables if "custom_allreduce" in t.source_file]
    assert [t.framework_version for t in custom] == ["0.5.9", "0.5.14"]  # oldest first, each a vintage
    sources = set(pl.read_parquet(out / "aiconfigurator_allreduce.parquet")["source"].to_list())
    assert {
        "third-party:aiconfigurator 0.12.0 (sglang 0.5.9)",
        "third-party:aiconfigurator 0.12.0 (sglang 0.5.14)",
    } <= sources
    newest = PerfDB.load(out, get_gpu("b200"))
    old = PerfDB.load(out, get_gpu("b200"), sglang_version="0.5.10")
    chosen = {(v.op, v.framework): v.chosen for v in old.vintages}
    assert chosen[("allreduce", "sglang")] == "0.5.9"
    assert {(v.op, v.framework): v.chosen for v in newest.vintages}[("allreduce", "sglang")] == "0.5.14"


def test_imported_tables_answer_lookups_labelled_third_party(imported):
    out, _ = imported
    db = PerfDB.load(out, get_gpu("b200"))
    key = dict(backend="trtllm_mla", kv_dtype="bf16", num_heads=16, page_size=64, q_len=1)
    on_grid = db.lookup("attn_mla_decode", key, batch=16, kv_len=1024)
    assert on_grid.source == "third_party"
    between = db.lookup("attn_mla_decode", key, batch=32, kv_len=2048)
    assert "third-party:aiconfigurator 0.12.0" in between.detail


def test_versions_sort_releases_above_their_release_candidates():
    ordered = ["0.5.6", "0.5.6.post2", "0.5.9", "0.5.14", "1.3.0rc11", "1.3.0rc20", "1.3.0"]
    assert sorted(reversed(ordered), key=version_key) == ordered


def test_an_unknown_system_names_the_published_ones(tmp_path):
    with pytest.raises(AIConfiguratorImportError, match="b200_sxm"):
        import_system("b300_sxm", tmp_path, root=FIXTURE)


def test_import_command_writes_the_tables_and_rejects_unknown_sources(tmp_path):
    app = typer.Typer()
    app.command()(import_command)
    runner = CliRunner()
    args = ["--system", "b200_sxm", "--out", str(tmp_path), "--package-root", str(FIXTURE)]
    result = runner.invoke(app, ["aiconfigurator", *args])
    assert result.exit_code == 0, result.output
    assert "attn_mla_decode 12" in result.output
    assert (tmp_path / "aiconfigurator_attn_mla_decode.parquet").is_file()
    result = runner.invoke(app, ["vidur", *args])
    assert result.exit_code == 2 and "aiconfigurator" in result.output


def test_rows_keyed_with_names_simperf_does_not_know_are_left_out_and_counted(tmp_path):
    """AIConfigurator's MoE dtype and distribution pass through unmapped: a new name wrote a table PerfDB.load
    refuses (perfdb/vocabulary.py); the importer leaves those rows out and says how many, and why."""
    import shutil

    root = tmp_path / "package"
    shutil.copytree(FIXTURE, root)
    path = root / "systems" / "data" / "b200_sxm" / "moe" / "sglang" / "0.5.14" / "moe_perf.parquet"
    raw = pl.read_parquet(path)
    odd = pl.concat(
        [raw.with_columns(moe_dtype=pl.lit("fp9_new")), raw.with_columns(distribution=pl.lit("bimodal"))]
    )
    pl.concat([raw, odd]).write_parquet(path)
    out = tmp_path / "b200"
    report = import_system("b200_sxm", out, root=root)
    moe = next(t for t in report.tables if t.ops.get("moe"))
    assert moe.dropped == {
        "moe dtype 'fp9_new': not a value simperf knows (perfdb/vocabulary.py)": raw.height,
        "moe routing 'bimodal': not a value simperf knows (perfdb/vocabulary.py)": raw.height,
    }
    assert table(out, "moe").height == moe.ops["moe"]
    PerfDB.load(out, get_gpu("b200"))
