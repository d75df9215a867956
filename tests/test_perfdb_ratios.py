"""Measured target/reference time ratios per op family and regime (perfdb/ratios.py) and their use by the
scaled-from fallback: a regime's median where the tables measured one, the rooflines' ratio elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

from simperf.hardware import get_gpu
from simperf.perfdb.db import PerfDB, _read_tables
from simperf.perfdb.ratios import RATIOS_FILE, RatioTable, measure_ratios, read_ratios
from simperf.perfdb.roofline import Roofline
from simperf.perfdb.tables import write_table

H100, H200 = get_gpu("h100"), get_gpu("h200")
GEMM = dict(backend="torch", dtype="bf16", n=4096, k=4096)
MS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]


def rows(gpu: str, times: dict[int, float]) -> list[dict]:
    return [
        dict(op="gemm", **GEMM, m=m, time_us=t, status="ok", sample="grid", gpu=gpu) for m, t in times.items()
    ]


def h200_time(m: int) -> float:
    """Twice the H200 roofline: every point at efficiency 0.5."""
    axes = {"m": np.asarray(float(m))}
    return 2.0 * float(Roofline("gemm", GEMM, H200).time_us(axes))


@pytest.fixture
def dirs(tmp_path):
    write_table(rows("h200", {m: h200_time(m) for m in MS}), tmp_path / "h200" / "gemm.parquet")
    write_table(rows("h100", {m: 1.1 * h200_time(m) for m in MS}), tmp_path / "h100" / "gemm.parquet")
    return tmp_path / "h100", tmp_path / "h200"


def test_common_points_give_the_median_ratio_of_each_regime(dirs):
    table = measure_ratios(*dirs)
    assert (table.target, table.reference) == ("h100", "h200")
    cells = {k: c for k, c in table.cells.items() if k[0] == "gemm"}
    assert sum(c.points for c in cells.values()) == len(MS)
    assert {k[2] for k in cells} == {table.bucket(0.5)}  # every point at efficiency 0.5
    assert all(c.median == pytest.approx(1.1) for c in cells.values())


def test_the_table_round_trips_through_its_file(dirs):
    table = measure_ratios(*dirs)
    (dirs[0] / RATIOS_FILE).write_text(table.to_yaml())
    again = read_ratios(dirs[0], "h200")
    assert again is not None and again.cells == table.cells and read_ratios(dirs[0], "b200") is None


def test_a_sparse_bucket_takes_the_nearest_populated_one(dirs):
    table = measure_ratios(*dirs)
    cell, bucket = table.lookup("gemm", next(iter(table.cells))[1], efficiency=0.95)
    assert bucket == table.bucket(0.5) and cell.median == pytest.approx(1.1)
    assert (
        table.lookup("moe", "memory", 0.5) is None
    )  # no common MoE point: the caller keeps the roofline ratio


def test_scaled_from_uses_the_measured_ratio_and_says_so(dirs):
    target_dir, reference_dir = dirs
    (target_dir / RATIOS_FILE).write_text(measure_ratios(target_dir, reference_dir).to_yaml())
    reference = PerfDB.load(reference_dir, H200, scaled_from=False)
    ratios = RatioTable.from_yaml(target_dir / RATIOS_FILE)
    target = PerfDB(H100, _read_tables([]), [], None, reference=reference, ratios=ratios)
    timing = target.lookup("gemm", GEMM, m=48)
    assert timing.us == pytest.approx(1.1 * reference.lookup("gemm", GEMM, m=48).us, rel=1e-9)
    assert "measured h100/h200 ratio 1.1" in timing.detail
    plain = PerfDB(H100, _read_tables([]), [], None, reference=reference)
    assert "x roofline h100/h200" in plain.lookup("gemm", GEMM, m=48).detail


def test_the_shipped_ratios_are_what_the_command_derives_from_the_shipped_tables(monkeypatch):
    """calibration/h100/scaled_ratios.yaml is derived data: when a table is measured again (the GEMM tables,
    2026-11-27) it must be derived again, or scaled_from keeps the old tables' ratios without a word."""
    from pathlib import Path

    # the file names the directories as the command was run, from the repository root
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    fresh = measure_ratios(Path("calibration/h100"), Path("calibration/h200"))
    assert fresh.to_yaml() == Path("calibration/h100", RATIOS_FILE).read_text(encoding="utf-8"), (
        "run: python -m simperf.perfdb.ratios calibration/h100 calibration/h200"
    )
