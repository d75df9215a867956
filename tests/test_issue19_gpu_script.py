"""benchmarks/issue19_gpu.py, the GPU run of issue 19, checked on a CPU: its grid files exist and parse, the dry
run lists points and an estimate, and a run (with the GPU commands stood in for) copies its outputs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("issue19_gpu", ROOT / "benchmarks" / "issue19_gpu.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["issue19_gpu"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("issue19_gpu", None)


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_every_step_names_an_existing_grid_and_selects_points(script, gpu):
    from simperf.calibrate.grid import load_grid

    for step in script.steps(gpu):
        if step.grid is not None:
            load_grid(ROOT / "calibration" / "grids" / f"{step.grid}.yaml")  # raises on an unknown family
    assert (ROOT / "calibration" / "offgrid" / "samples.jsonl").exists()


def test_dry_run_lists_each_step_and_an_estimate(script, capsys):
    assert script.dry_run("h100") == 0
    out = capsys.readouterr().out
    for step in script.steps("h100"):
        assert step.name in out
    assert "GPU s" in out and "total" in out


def test_a_run_hands_back_results_and_changed_tables(script, tmp_path, monkeypatch):
    commands = []

    def fake_run(cmd, cwd, env, check):
        commands.append(cmd)
        work = tmp_path / "work"
        if "simperf.perfdb.offgrid" in cmd:
            Path(cmd[cmd.index("--out") + 1]).write_text('{"format": "simperf-offgrid-results/1"}\n')
        elif "--ops" in cmd and cmd[cmd.index("--ops") + 1] == "gemm":
            (work / "tables" / "gemm.parquet").write_bytes(b"changed")
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(script.subprocess, "run", fake_run)
    out = tmp_path / "out"
    assert script.run("h200", out, budget_s=1000.0, work=tmp_path / "work") == 0
    assert len(commands) == len(script.steps("h200"))
    assert (out / "offgrid" / "h200-results.jsonl").exists()
    # every set's times come back under its own name
    assert (out / "offgrid" / "h200-results-seed20261126.jsonl").exists()
    assert (out / "offgrid" / "straggler-dev-h200-results.jsonl").exists()
    handed = sorted(p.name for p in (out / "calibration" / "h200").iterdir())
    assert handed == ["gemm.parquet"]  # only what differs from the shipped table
    assert "all steps" in (out / "issue19-h200.log").read_text()


def test_results_file_names_follow_the_set(script):
    assert script.results_name("samples", "h100") == "h100-results.jsonl"
    assert script.results_name("samples-seed20261126", "h200") == "h200-results-seed20261126.jsonl"
    assert script.results_name("straggler-dev", "h100") == "straggler-dev-h100-results.jsonl"


def test_steps_option_runs_only_the_named_steps(script, tmp_path, monkeypatch):
    commands = []
    monkeypatch.setattr(script.subprocess, "run", lambda cmd, cwd, env, check: commands.append(cmd) or
                        subprocess.CompletedProcess(cmd, 0))  # fmt: skip
    script.run("h100", tmp_path / "out", budget_s=1000.0, work=tmp_path / "work", only={"dense"})
    assert len(commands) == 1 and "issue19_h100_dense.yaml" in " ".join(commands[0])
