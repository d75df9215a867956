"""The off-grid timing runner (GPU side) with the CPU fake backend: every sample gets one result row, crashes
and failures are recorded and the run goes on, and a rerun times only what is missing."""

from __future__ import annotations

import json

from rich.console import Console

from simperf.calibrate.points import make_point
from simperf.perfdb.offgrid.io import read_results, write_samples
from simperf.perfdb.offgrid.timing import time_samples


def _samples(tmp_path, ms):
    samples = [
        {"id": i, "category": "gemm", "ragged": False, "model": "fake", "note": "",
         "point": make_point("gemm", "fake", dtype="bf16", n=64, k=64, m=m, sample="heldout")}
        for i, m in enumerate(ms)
    ]  # fmt: skip
    path = tmp_path / "samples.jsonl"
    write_samples(path, {"seed": 0}, samples)
    return path


def _time(samples, results):
    return time_samples(samples, results, console=Console(stderr=True, quiet=True), cpu=True)


def test_every_sample_gets_a_row_and_failures_do_not_stop_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPERF_FAKE_RAISE_M", "4")
    monkeypatch.setenv("SIMPERF_FAKE_CRASH_M", "8")
    samples = _samples(tmp_path, [1, 2, 4, 8, 16])
    results = tmp_path / "results.jsonl"
    assert _time(samples, results) == 0
    header, rows = read_results(results)
    assert header["gpu"] == "cpu" and sorted(rows) == [0, 1, 2, 3, 4]
    assert rows[2]["status"] == "failed" and "m=4" in rows[2]["error"]
    assert rows[3]["status"] == "failed" and "SIGSEGV" in rows[3]["error"]
    assert all(rows[i]["status"] == "ok" and rows[i]["time_us"] > 0 for i in (0, 1, 4))


def test_a_rerun_times_only_the_samples_without_a_result(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPERF_FAKE_RAISE_M", "")
    monkeypatch.setenv("SIMPERF_FAKE_CRASH_M", "")
    samples = _samples(tmp_path, [1, 2, 4])
    results = tmp_path / "results.jsonl"
    lines = [{"format": "simperf-offgrid-results/1"}, {"id": 1, "status": "ok", "time_us": 123.0}]
    results.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert _time(samples, results) == 0
    _, rows = read_results(results)
    assert sorted(rows) == [0, 1, 2] and rows[1]["time_us"] == 123.0  # kept, not re-measured
    assert len(results.read_text().splitlines()) == 4


def test_retime_times_a_category_again_and_the_new_row_is_the_one_read(tmp_path, monkeypatch):
    """`time --retime gemm` re-times a category that already has results (the held-out set's GEMMs after the tables
    were measured again lightest first); rows are appended and the last row of an id wins."""
    monkeypatch.setenv("SIMPERF_FAKE_RAISE_M", "")
    monkeypatch.setenv("SIMPERF_FAKE_CRASH_M", "")
    samples = _samples(tmp_path, [1, 2])
    results = tmp_path / "results.jsonl"
    lines = [{"format": "simperf-offgrid-results/1"}, {"id": 0, "status": "ok", "time_us": 123.0}]
    results.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert (
        time_samples(samples, results, console=Console(stderr=True, quiet=True), cpu=True, retime="gemm") == 0
    )
    _, rows = read_results(results)
    assert sorted(rows) == [0, 1] and rows[0]["time_us"] != 123.0  # timed again, the old row kept above it
    assert len(results.read_text().splitlines()) == 4
    assert (
        time_samples(samples, results, console=Console(stderr=True, quiet=True), cpu=True, retime="moe") == 0
    )
    assert len(results.read_text().splitlines()) == 4  # another category: nothing to do
    assert (
        time_samples(samples, results, console=Console(stderr=True, quiet=True), cpu=True, retime="gemm/fake")
        == 0
    )
    assert len(results.read_text().splitlines()) == 6  # by op and backend: both timed again
    assert (
        time_samples(
            samples, results, console=Console(stderr=True, quiet=True), cpu=True, retime="gemm/torch"
        )
        == 0
    )
    assert len(results.read_text().splitlines()) == 6  # another backend: nothing to do


def test_the_off_grid_timer_runs_gemms_lightest_first():
    from simperf.perfdb.offgrid.timing import _by_group

    samples = [
        {"id": i, "point": make_point("gemm", "torch", dtype="bf16", n=n, k=1024, m=m, sample="heldout")}
        for i, (m, n) in enumerate(((4096, 4096), (1, 4096), (64, 512)))
    ]
    assert [s["id"] for g in _by_group(samples).values() for s in g] == [1, 2, 0]
