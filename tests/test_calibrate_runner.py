"""Resumability, failure isolation and the written tables, with the CPU fake backend (no GPU needed).

The fake worker sleeps, raises, segfaults or reports 'unsupported' on chosen token counts m
(simperf/calibrate/backends/fake.py); its grid is m = 1, 2, 4, ..., 128.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from rich.console import Console

from simperf.calibrate.journal import JOURNAL_NAME, Journal, compact, read_journal
from simperf.calibrate.measure import classify_exception, is_fatal_error
from simperf.calibrate.points import point_key
from simperf.calibrate.runner import RunOptions, run
from simperf.perfdb.schema import arrow_schema

FAKE_MS = [1, 2, 4, 8, 16, 32, 64, 128]
REPO = Path(__file__).resolve().parents[1]


def _fake_env(monkeypatch, sleep="0", raise_m="", crash_m="", unsupported_m=""):
    monkeypatch.setenv("SIMPERF_FAKE_SLEEP_S", sleep)
    monkeypatch.setenv("SIMPERF_FAKE_RAISE_M", raise_m)
    monkeypatch.setenv("SIMPERF_FAKE_CRASH_M", crash_m)
    monkeypatch.setenv("SIMPERF_FAKE_UNSUPPORTED_M", unsupported_m)


def _run_fake(out: Path, **kw) -> int:
    options = RunOptions(
        out=out, backends=["fake"], gpu="cpu", console=Console(stderr=True, quiet=True), **kw
    )
    return run(options)


def _rows(out: Path) -> list[dict]:
    return pq.read_table(out / "gemm.parquet").to_pylist()


def test_failing_and_crashing_points_are_recorded_and_the_run_continues(tmp_path, monkeypatch):
    _fake_env(monkeypatch, raise_m="4", crash_m="16,64", unsupported_m="32")
    assert _run_fake(tmp_path) == 0
    by_m = {r["m"]: r for r in _rows(tmp_path)}
    assert sorted(by_m) == FAKE_MS
    assert by_m[4]["status"] == "failed" and "fake kernel failure at m=4" in by_m[4]["error"]
    for m in (16, 64):  # the worker died by SIGSEGV: recorded, then a fresh worker went on
        assert by_m[m]["status"] == "failed" and "SIGSEGV" in by_m[m]["error"]
    assert by_m[32]["status"] == "unsupported" and by_m[32]["error"] == "requires SM100"
    for m in (1, 2, 8, 128):
        assert by_m[m]["status"] == "ok" and by_m[m]["time_us"] > 0
    assert not (tmp_path / JOURNAL_NAME).exists()  # compacted away


def test_a_hung_point_is_killed_after_its_timeout_and_recorded(tmp_path, monkeypatch):
    _fake_env(monkeypatch, sleep="3")
    options = dict(point_timeout_s=1.0, first_point_timeout_s=1.0, limit=2)
    _run_fake(tmp_path, **options)
    rows = _rows(tmp_path)
    assert len(rows) == 2
    assert all(r["status"] == "failed" and "timed out" in r["error"] for r in rows)


def test_written_tables_match_the_schema_exactly(tmp_path, monkeypatch):
    _fake_env(monkeypatch, raise_m="2")
    _run_fake(tmp_path)
    table = pq.read_table(tmp_path / "gemm.parquet")
    assert table.schema.equals(arrow_schema(), check_metadata=True)
    row = table.to_pylist()[0]
    assert row["op"] == "gemm" and row["backend"] == "fake" and row["sample"] == "grid"
    assert row["date"] and row["source"] == "measured" and row["simperf_version"]


def test_rerun_skips_measured_points_and_retry_failed_remeasures_failures(tmp_path, monkeypatch):
    _fake_env(monkeypatch, raise_m="8")
    _run_fake(tmp_path)
    first = {r["m"]: r for r in _rows(tmp_path)}
    _fake_env(monkeypatch)  # m=8 would now succeed
    _run_fake(tmp_path)
    second = {r["m"]: r for r in _rows(tmp_path)}
    assert second == first  # nothing re-measured
    _run_fake(tmp_path, retry_failed=True)
    third = {r["m"]: r for r in _rows(tmp_path)}
    assert third[8]["status"] == "ok"
    assert {m: r for m, r in third.items() if m != 8} == {m: r for m, r in first.items() if m != 8}


def _fake_run_cmd(out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "simperf.calibrate",
        "--backends",
        "fake",
        "--gpu",
        "cpu",
        "--out",
        str(out),
    ]


def _start_slow_fake_run(out: Path, journaled: int = 3) -> tuple[subprocess.Popen, dict[str, str]]:
    """A fake calibration run in its own process group, returned once `journaled` points are in its journal."""
    env = dict(os.environ, SIMPERF_FAKE_SLEEP_S="0.3", PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        _fake_run_cmd(out),
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(read_journal(out / JOURNAL_NAME)) < journaled:
        time.sleep(0.05)
    return proc, env


def test_sigkill_mid_run_loses_at_most_the_point_in_flight_and_rerun_completes(tmp_path):
    proc, env = _start_slow_fake_run(tmp_path)
    # kill the runner and its worker (the process group this test started), mid-point
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {point_key(r): r for r in read_journal(tmp_path / JOURNAL_NAME)}
    assert 3 <= len(before) < len(FAKE_MS)

    env["SIMPERF_FAKE_SLEEP_S"] = "0"
    subprocess.run(_fake_run_cmd(tmp_path), env=env, cwd=REPO, check=True, capture_output=True, timeout=60)
    rows = _rows(tmp_path)
    keys = [point_key(r) for r in rows]
    assert len(keys) == len(set(keys)) == len(FAKE_MS)  # none lost, none duplicated
    after = {point_key(r): r for r in rows}
    for key, row in before.items():  # what was journaled before the kill is kept, not re-measured
        assert after[key]["time_us"] == row["time_us"]


def test_sigterm_folds_finished_points_into_the_tables_before_exiting(tmp_path):
    # `timeout` and lent machines stop runs with SIGTERM, and the machine may vanish with an uncompacted journal
    proc, _ = _start_slow_fake_run(tmp_path)
    proc.send_signal(signal.SIGTERM)  # the runner only, as `timeout` does
    assert proc.wait(timeout=30) != 0
    if _group_alive(proc.pid):  # a worker left behind by the runner
        os.killpg(proc.pid, signal.SIGKILL)
    journal = tmp_path / JOURNAL_NAME
    assert not journal.exists() or not read_journal(journal)
    assert 3 <= len(_rows(tmp_path)) < len(FAKE_MS)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_compaction_ignores_a_torn_last_line_and_deduplicates(tmp_path):
    journal = Journal(tmp_path)
    row = {"op": "gemm", "backend": "fake", "sample": "grid", "m": 1, "n": 64, "k": 64, "status": "ok"}
    journal.append({**row, "time_us": 1.0})
    journal.append({**row, "time_us": 2.0})  # same point again: the later row wins
    journal.close()
    with open(tmp_path / JOURNAL_NAME, "a") as fh:
        fh.write('{"op": "gemm", "backe')  # killed mid-write
    assert compact(tmp_path) == {"gemm": 1}
    assert [r["time_us"] for r in _rows(tmp_path)] == [2.0]
    assert not (tmp_path / JOURNAL_NAME).exists()


def test_dry_run_lists_points_without_measuring(tmp_path, capsys):
    options = RunOptions(out=tmp_path, gpu="h200", dry_run=True, ops=["gemm"], console=Console(stderr=True))
    assert run(options) == 0
    assert not list(tmp_path.glob("*.parquet"))
    assert "gemm" in capsys.readouterr().err


@pytest.mark.parametrize(
    "message, status, fatal",
    [
        ("CUDA error: an illegal memory access was encountered", "failed", True),
        (
            "CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasLtMatmulAlgoGetHeuristic`",
            "unsupported",
            False,
        ),
        ("shape mismatch", "failed", False),
    ],
)
def test_errors_are_classified_and_poisoned_contexts_restart_the_worker(message, status, fatal):
    got_status, text = classify_exception(RuntimeError(message))
    assert got_status == status
    assert is_fatal_error(text) is fatal


def test_collectives_need_two_gpus():
    from simperf.calibrate.collectives import MESSAGE_BYTES, collective_points

    assert collective_points(1) == []
    pts = collective_points(2)
    assert len(pts) == 4 * len(MESSAGE_BYTES)
    assert MESSAGE_BYTES[0] == 1024 and MESSAGE_BYTES[-1] == 1024**3
    assert all(p["group_size"] == 2 and p["backend"] == "nccl" for p in pts)
    json.dumps(pts)


def test_backend_and_model_selectors_on_a_host_with_collectives():
    """--backends of a worker group skips the collectives (their points have no worker group: KeyError before),
    nccl selects them, and --models takes the zoo's spelling of a grid model."""
    from simperf.calibrate.runner import select_points

    two_gpus = {"device_count": 2, "sm_major": 9}
    gemm = select_points(RunOptions(out=None, backends=["gemm"], dry_run=True, gpu="h100"), two_gpus)
    assert gemm and {p["op"] for p in gemm} == {"gemm", "bmm"}  # the gemm worker times both
    comm = select_points(RunOptions(out=None, backends=["nccl"], dry_run=True, gpu="h100"), two_gpus)
    assert comm and {p["backend"] for p in comm} == {"nccl"}
    for name in ("deepseek-v3", "DeepSeek-V3"):
        options = RunOptions(out=None, ops=["moe"], models=[name], dry_run=True, gpu="h100")
        assert select_points(options, two_gpus)


def test_gemm_points_are_timed_lightest_first_and_other_ops_keep_the_grid_order():
    """A large GEMM leaves the GPU power-capped; a memory-bound m = 1 point timed next ran at a lower SM clock and
    up to 23% slow (docs/perfdb.md). The runner times each group's GEMMs in increasing multiply-adds."""
    from simperf.calibrate.points import make_point
    from simperf.calibrate.runner import _group_points

    grid = [
        make_point("gemm", "torch", dtype="bf16", n=n, k=k, m=m)
        for n, k in ((51200, 5120), (1024, 1024))
        for m in (1, 8, 8192)
    ]
    timed = [(p["m"], p["n"]) for group in _group_points(grid).values() for p in group]
    assert timed == [(1, 1024), (8, 1024), (1, 51200), (8, 51200), (8192, 1024), (8192, 51200)]
    norms = [make_point("elementwise", "flashinfer", variant="rmsnorm", dtype="bf16", n=n, m=m)
             for n, m in ((4096, 8), (1024, 1), (8192, 2))]  # fmt: skip
    assert [p["n"] for g in _group_points(norms).values() for p in g] == [4096, 1024, 8192]


def test_measuring_into_another_gpus_directory_is_refused_before_anything_is_written(tmp_path):
    """An H100 run given --out calibration/h200 replaced H200 rows in place (a lent 'nvidia-h200' call that ran on
    an H100): the runner now refuses, naming both GPUs, and the directory is untouched."""
    from simperf.calibrate.preflight import CalibrateError
    from simperf.calibrate.runner import check_same_gpu

    (tmp_path / "device.json").write_text(json.dumps({"device": {"gpu": "h200"}}))
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(CalibrateError, match="holds h200 tables .* this GPU is h100"):
        check_same_gpu(tmp_path, "h100")
    check_same_gpu(tmp_path, "h200")  # its own GPU: fine
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_retime_measures_a_directorys_points_again_and_merge_folds_them_back(tmp_path, monkeypatch, capsys):
    """A backend's protocol changed: `--retime A --out B` times A's recorded points again (and only those), and
    `--merge-from B --out A` replaces A's rows by them, except where the new measurement failed."""
    from simperf.calibrate.cli import main
    from simperf.calibrate.preflight import CalibrateError

    first, again = tmp_path / "first", tmp_path / "again"
    _fake_env(monkeypatch, raise_m="4")
    _run_fake(first)
    before = {r["m"]: r for r in _rows(first)}
    _fake_env(monkeypatch, raise_m="8")
    assert _run_fake(again, retime_from=first) == 0
    assert sorted(r["m"] for r in _rows(again)) == FAKE_MS  # the recorded points, no grid's
    with pytest.raises(CalibrateError, match="every point is recorded there already"):
        _run_fake(first, retime_from=first)
    assert main(["--merge-from", str(again), "--out", str(first)]) == 0
    assert "7 rows from" in capsys.readouterr().out
    after = {r["m"]: r for r in _rows(first)}
    retimed = {r["m"]: r for r in _rows(again)}
    assert after[8] == before[8]  # its new measurement failed: the earlier ok row stays
    assert after[4]["status"] == "ok" and after[4] == retimed[4]  # a failed row gives way to an ok one
    assert all(after[m] == retimed[m] for m in FAKE_MS if m != 8)
    with pytest.raises(CalibrateError, match="give --out"):
        main(["--merge-from", str(again)])


def test_replay_target_reaches_the_timers_and_is_checked_before_anything_runs(tmp_path):
    """`--replay-target-ms` sets the GPU time each point's replays add up to (dense sweeps of cheap kernels);
    out of range it is refused before the device probe, naming the option and the range."""
    from simperf.calibrate.preflight import CalibrateError
    from simperf.calibrate.worker import timing_config

    assert timing_config(None).target_ms == 60.0 and timing_config(15.0).target_ms == 15.0
    with pytest.raises(CalibrateError, match=r"--replay-target-ms: got 1; allowed: 5 to 1000 ms"):
        run(RunOptions(out=tmp_path / "t", gpu="h100", replay_target_ms=1, console=Console(quiet=True)))
    assert not (tmp_path / "t").exists()
