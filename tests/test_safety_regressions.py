"""Issue 18's serious cases, one named regression test each: inputs that used to end in a wrong answer with exit
0, lost data, or ran out of memory, and now fail up front with one `error:` line (or give the right answer)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from rich.console import Console
from sweepfixtures import sweep_dict
from typer.testing import CliRunner

from simperf.calibrate import runner as calibrate_runner
from simperf.calibrate.journal import Journal, compact
from simperf.calibrate.runner import RunOptions, run
from simperf.cli import app
from simperf.perfdb.diff import diff_tables
from simperf.sweep.evaluate import evaluate_point
from simperf.sweep.expand import expand
from simperf.sweep.spec import base_mapping, parse_sweep

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()

QWEN = {
    "name": "q",
    "model": {"name": "qwen3-8b"},
    "hardware": {"gpu": "h100", "count": 1},
    "serving": {"tp": 1},
    "workload": {"dataset": {"kind": "random", "input_len": 256, "output_len": 16}, "num_prompts": 20},
}


def scenario_file(tmp_path: Path, name: str = "s.yaml", **changes) -> Path:
    data = json.loads(json.dumps(QWEN))
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = data
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def error_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    return lines[0]


# ---------------------------------------------------------------------------------------------- calibration


def test_predict_refuses_a_calibration_directory_that_does_not_exist(tmp_path):
    result = runner.invoke(app, ["predict", str(scenario_file(tmp_path)), "--calibration", "/no/such/dir"])
    assert result.exit_code == 2
    assert "--calibration /no/such/dir: no such directory" in error_line(result)


def test_predict_refuses_an_empty_calibration_directory(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["predict", str(scenario_file(tmp_path)), "--calibration", str(empty)])
    assert result.exit_code == 2 and "holds no calibration tables" in error_line(result)


def test_predict_refuses_a_scenario_calibration_dir_that_points_nowhere(tmp_path):
    path = scenario_file(tmp_path, calibration_dir="nowhere")
    result = runner.invoke(app, ["predict", str(path)])
    assert (
        result.exit_code == 2
        and "calibration_dir" in error_line(result)
        and "no such directory" in result.output
    )


def test_predict_refuses_another_gpus_tables(tmp_path):
    path = scenario_file(tmp_path)  # an H100 scenario
    result = runner.invoke(app, ["predict", str(path), "--calibration", str(REPO / "calibration/h200")])
    assert result.exit_code == 2
    assert "tables measured on h200, but hardware.gpu is h100" in error_line(result)


def test_roofline_only_is_allowed_when_asked_for_and_says_so(tmp_path):
    result = runner.invoke(app, ["predict", str(scenario_file(tmp_path)), "--roofline-only"])
    assert result.exit_code == 0, result.output
    assert "none (--roofline-only)" in result.output
    both = ["predict", str(scenario_file(tmp_path)), "--roofline-only", "--calibration", "x"]
    assert runner.invoke(app, both).exit_code == 2


# ---------------------------------------------------------------------------------------------- layouts


@pytest.mark.parametrize("tp", [3, 6])
def test_a_tp_sglang_cannot_launch_is_refused_with_the_allowed_values(tmp_path, tp):
    path = scenario_file(tmp_path, serving__tp=tp, hardware__count=8)
    result = runner.invoke(app, ["predict", str(path)])
    assert result.exit_code == 2
    line = error_line(result)
    assert f"serving.tp: {tp} cannot serve qwen3-8b" in line and "allowed tp" in line and "1, 2, 4, 8" in line


def test_sweeps_mark_an_impossible_layout_invalid_not_ok(tmp_path):
    spec = parse_sweep(sweep_dict({"serving.tp": [2, 3], "hardware.count": [4]}))
    base, base_dir = base_mapping(spec, tmp_path)
    rows = {row["config_label"]: row for row in map(evaluate_point, expand(spec, base, str(base_dir)))}
    statuses = {label: row["status"] for label, row in rows.items()}
    assert sorted(statuses.values()) == ["invalid", "ok"], statuses
    bad = next(row for row in rows.values() if row["status"] == "invalid")
    assert "attention TP 3 does not divide the 32 attention heads" in bad["reason"]


def test_idle_gpus_are_reported(tmp_path):
    path = scenario_file(tmp_path, serving__tp=2, hardware__count=4)
    result = runner.invoke(app, ["predict", str(path)])
    assert result.exit_code == 0, result.output
    assert "Idle GPUs:" in result.output and "2 of 4" in result.output
    as_json = json.loads(runner.invoke(app, ["predict", str(path), "-o", "json"]).stdout)
    assert as_json["simperf"]["idle_gpus"] == 2


# ---------------------------------------------------------------------------------------------- calibrate


def _no_gpu(monkeypatch):
    probe = {"gpu": None, "gpu_name": None, "torch": None, "device_count": 0, "sm_major": None}
    monkeypatch.setattr(calibrate_runner, "probe_device", lambda *a, **k: dict(probe))


def test_calibrate_without_a_gpu_fails_before_writing_anything(tmp_path, monkeypatch):
    _no_gpu(monkeypatch)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "cal"
    result = runner.invoke(app, ["calibrate", "--ops", "gemm", "--out", str(out)])
    assert result.exit_code == 2 and "CUDA GPU" in error_line(result)
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["--gpu", "h300"], "--gpu: got 'h300'"), (["--limit", "-1"], "--limit: got -1")],
)
def test_calibrate_refuses_an_unknown_gpu_and_a_negative_limit(tmp_path, monkeypatch, args, expected):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["calibrate", *args, "--out", str(tmp_path / "cal")])
    assert result.exit_code == 2 and expected in error_line(result)
    assert list(tmp_path.iterdir()) == []


def _row(m: int, status: str, time_us: float | None) -> dict:
    return {"op": "gemm", "backend": "fake", "dtype": "bf16", "sample": "grid", "m": m, "n": 64, "k": 64,
            "status": status, "time_us": time_us, "error": None if status == "ok" else "boom"}  # fmt: skip


def test_a_failed_measurement_never_replaces_an_ok_row(tmp_path):
    journal = Journal(tmp_path)
    journal.append(_row(1, "ok", 5.0))
    journal.append(_row(2, "ok", 6.0))
    compact(tmp_path, journal)
    journal = Journal(tmp_path)
    journal.append(_row(1, "failed", None))  # e.g. a --no-resume run on a machine without the GPU
    journal.append(_row(2, "ok", 7.0))  # a new good measurement still replaces the old one
    journal.append(_row(3, "failed", None))
    compact(tmp_path, journal)
    rows = {r["m"]: r for r in pq.read_table(tmp_path / "gemm.parquet").to_pylist()}
    assert rows[1]["status"] == "ok" and rows[1]["time_us"] == 5.0
    assert rows[2]["time_us"] == 7.0 and rows[3]["status"] == "failed"


def test_a_calibration_run_that_measures_nothing_exits_1(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPERF_FAKE_RAISE_M", ",".join(str(2**i) for i in range(8)))
    options = RunOptions(
        out=tmp_path, backends=["fake"], gpu="cpu", ops=["gemm"], console=Console(stderr=True, quiet=True)
    )
    assert run(options) == 1


# ---------------------------------------------------------------------------------------------- validate


def test_validate_without_a_gpu_changes_no_shipped_file(monkeypatch):
    _no_gpu(monkeypatch)
    shipped = REPO / "validation" / "qwen3-8b-h200"
    before = {p.name: p.read_bytes() for p in shipped.iterdir()}
    result = runner.invoke(app, ["validate", str(REPO / "scenarios/validate/qwen3-8b-h200.yaml")])
    assert result.exit_code == 2
    line = error_line(result)
    assert "CUDA GPU" in line and "'.[gpu]'" in line  # the fix keeps its [gpu] (no rich markup)
    assert {p.name: p.read_bytes() for p in shipped.iterdir()} == before


# ---------------------------------------------------------------------------------------------- sizes


def test_a_million_prompts_are_refused_up_front_with_the_memory_they_need(tmp_path):
    path = scenario_file(tmp_path, workload__num_prompts=1_000_000, workload__dataset__output_len=512)
    started = time.perf_counter()
    result = runner.invoke(app, ["predict", str(path)])
    assert time.perf_counter() - started < 10
    assert result.exit_code == 2
    line = error_line(result)
    assert "workload.num_prompts: 1,000,000 requests" in line and "GB" in line and "--max-memory-gb" in line


def test_a_billion_prompts_are_refused_not_a_memory_error(tmp_path):
    result = runner.invoke(app, ["predict", str(scenario_file(tmp_path, workload__num_prompts=10**9))])
    assert result.exit_code == 2 and "1,000,000,000 requests" in error_line(result)


def test_a_multi_turn_conversation_too_long_to_hold_is_refused_by_its_dataset(tmp_path):
    """Each turn copies every earlier turn's prefix blocks: a 10^9-token system prompt over 3,600 turns was drawn
    until the kernel's OOM killer ended the process, with no message."""
    path = tmp_path / "mt.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "model": {"name": "qwen3-8b"},
                "hardware": {"gpu": "h100"},
                "workload": {
                    "dataset": {"kind": "multi_turn", "num_conversations": 720, "turns": 5, "input_len": 600,
                                "output_len": 300, "system_prompt_len": 10**9},
                    "request_rate": 24,
                },
            }
        )
    )  # fmt: skip
    result = runner.invoke(app, ["predict", str(path)])
    assert result.exit_code == 2
    line = error_line(result)
    assert "workload.dataset: 3,600 requests with ~" in line and "prompt prefix blocks" in line
    assert "shorter prompts" in line


def test_a_tiny_request_rate_runs_in_bounded_memory(tmp_path):
    """bench_serving's peak metrics used to allocate one counter per second of a 4.7e11-s run (3.4 TiB)."""
    path = scenario_file(tmp_path, workload__request_rate=1e-9, workload__num_prompts=5)
    result = runner.invoke(app, ["predict", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["completed"] == 5 and out["max_concurrent_requests"] == 1


def test_memory_limit_can_be_raised_explicitly(tmp_path):
    path = scenario_file(tmp_path, workload__num_prompts=200)
    refused = runner.invoke(app, ["predict", str(path), "--max-memory-gb", "0.1"])
    assert refused.exit_code == 2 and "limit 0.1 GB" in error_line(refused)
    assert runner.invoke(app, ["predict", str(path), "--max-memory-gb", "0"]).exit_code == 0


# ---------------------------------------------------------------------------------------------- outputs


def test_requests_to_a_place_that_cannot_be_written_fail_before_simulating(tmp_path, monkeypatch):
    import simperf.pipeline as pipeline

    monkeypatch.setattr(pipeline, "Simulator", None)  # simulating would crash: the check must come first
    result = runner.invoke(app, ["predict", str(scenario_file(tmp_path)), "--requests", "/proc/no/r.parquet"])
    assert result.exit_code == 2 and "--requests /proc/no/r.parquet" in error_line(result)


def test_requests_with_a_csv_name_is_refused_not_written_as_parquet(tmp_path):
    out = tmp_path / "r.csv"
    result = runner.invoke(app, ["predict", str(scenario_file(tmp_path)), "--requests", str(out)])
    assert result.exit_code == 2 and ".parquet" in error_line(result) and not out.exists()


def test_trace_convert_refuses_to_overwrite_its_own_input(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text('{"arrival_s": 0.0, "input_len": 10, "output_len": 2}\n')
    before = src.read_bytes()
    result = runner.invoke(app, ["trace", "convert", str(src), str(src)])
    assert result.exit_code == 2 and "is also an input" in error_line(result)
    assert src.read_bytes() == before


def test_report_output_is_checked_before_the_sweep_runs(tmp_path, monkeypatch):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump(sweep_dict({"serving.page_size": [1, 16]})))
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["report", str(sweep), "-o", "/proc/no/report.html", "--executor", "serial"])
    assert result.exit_code == 2 and "-o /proc/no/report.html" in error_line(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]  # nothing simulated, no table written


# ---------------------------------------------------------------------------------------------- answers


def test_perfdb_diff_of_a_directory_with_itself_is_the_identity():
    result = diff_tables(REPO / "calibration/h100", REPO / "calibration/h100")
    assert result.points.height > 1000
    assert (result.points["ratio"] == 1.0).all()


def test_over_context_prompts_are_capped_below_the_servers_limit_and_served(tmp_path):
    """A prompt capped to context_len - 2 used to be rejected by the server: 0 successful requests, exit 0."""
    dataset = {"kind": "fixed", "input_len": 50_000, "output_len": 8}  # Qwen3-8B's context is 40,960
    path = scenario_file(tmp_path, workload__dataset=dataset, workload__num_prompts=4)
    result = runner.invoke(app, ["predict", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["completed"] == 4 and out["simperf"]["rejected"] == []


def test_a_prediction_in_which_nothing_completes_is_an_error(tmp_path, monkeypatch):
    import simperf.pipeline as pipeline

    real = pipeline.build_requests
    monkeypatch.setattr(  # skip the cap, so every prompt reaches the server too long
        pipeline, "build_requests", lambda workload, **kw: real(workload)
    )
    dataset = {"kind": "fixed", "input_len": 50_000, "output_len": 8}
    path = scenario_file(tmp_path, workload__dataset=dataset, workload__num_prompts=3)
    result = runner.invoke(app, ["predict", str(path)])
    assert result.exit_code == 2
    assert "no request completed; 3 of 3 were rejected" in error_line(result)


def test_like_refuses_a_trace_file(tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        "".join(json.dumps({"arrival_s": i, "input_len": 9, "output_len": 3}) + "\n" for i in range(3))
    )
    result = runner.invoke(
        app, ["predict", str(scenario_file(tmp_path)), "--like", str(trace), "--like-run", "0"]
    )
    assert result.exit_code == 2 and "one request of a trace" in error_line(result)
    compare = runner.invoke(app, ["compare", str(trace), str(trace)])
    assert compare.exit_code == 2 and "one request of a trace" in error_line(compare)


def test_json_output_is_strict_json_for_an_unlimited_rate(tmp_path):
    result = runner.invoke(app, ["predict", str(scenario_file(tmp_path)), "-o", "json"])
    assert result.exit_code == 0 and "Infinity" not in result.stdout and "NaN" not in result.stdout
    out = json.loads(result.stdout, parse_constant=lambda token: pytest.fail(token))
    assert out["request_rate"] == "inf"


def test_closed_loop_runs_report_the_concurrency_they_kept(tmp_path):
    path = scenario_file(tmp_path, workload__max_concurrency=4, workload__num_prompts=30)
    text = runner.invoke(app, ["predict", str(path)])
    assert "Achieved concurrency (while sending):    4.0 of 4 (max 4)" in text.output
    held = json.loads(runner.invoke(app, ["predict", str(path), "-o", "json"]).stdout)["simperf"]
    assert held["achieved_concurrency"]["max_in_flight"] == 4
    # the first burst's sends step by the client's set-up (Overheads.client_setup_us_per_request): a hair under 4
    assert np.isclose(held["achieved_concurrency"]["mean_in_flight_while_sending"], 4.0, rtol=0.01)


def test_a_client_set_up_slower_than_its_burst_never_sends_after_it_arrives(tmp_path):
    """Found by a bad-value sweep over every scenario field: a client set-up (per request of a burst) larger than
    the burst's connect time put later requests' send times after their arrival at the server (negative TTFT), and
    the ramp of the first wave's sends read as a broken semaphore (an internal error)."""
    path = scenario_file(
        tmp_path,
        workload__max_concurrency=4,
        workload__num_prompts=8,
        overheads__client_setup_us_per_request=1e8,  # 100 s per request of a burst
    )
    result = runner.invoke(
        app, ["predict", str(path), "-o", "json", "--requests", str(tmp_path / "r.parquet")]
    )
    assert result.exit_code == 0, result.output
    rows = pq.read_table(tmp_path / "r.parquet").to_pydict()
    assert min(rows["ttft_ms"]) > 0
    # the first wave (4 requests set up 100 s apart) is written after its last set-up: 400 s after the first send
    assert max(rows["ttft_ms"]) >= 4 * 100e3
    held = json.loads(result.stdout)["simperf"]["achieved_concurrency"]
    assert held["max_in_flight"] == 4 and np.isclose(held["mean_in_flight_while_sending"], 4.0, rtol=0.01)


# ---------------------------------------------------------------------------------------------- the error path


def test_a_bug_is_reported_as_an_internal_error_and_debug_shows_the_traceback(tmp_path, monkeypatch):
    import simperf.pipeline as pipeline

    def broken(*args, **kwargs):
        raise TypeError("unsupported operand")

    monkeypatch.setattr(pipeline, "predict", broken)
    path = scenario_file(tmp_path)
    result = runner.invoke(app, ["predict", str(path)])
    assert result.exit_code == 70 and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "internal error (TypeError: unsupported operand)" in lines[0]
    debug = runner.invoke(app, ["--debug", "predict", str(path)])
    assert isinstance(debug.exception, TypeError)
    for off in ("0", "false", "No", "off", ""):  # "false" and the like had turned tracebacks on
        monkeypatch.setenv("SIMPERF_DEBUG", off)
        assert runner.invoke(app, ["predict", str(path)]).exit_code == 70, off
    monkeypatch.setenv("SIMPERF_DEBUG", "1")
    assert isinstance(runner.invoke(app, ["predict", str(path)]).exception, TypeError)
