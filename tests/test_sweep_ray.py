"""`--executor ray` on a local Ray instance gives the same rows as the local pool; Ray stays optional."""

from __future__ import annotations

import builtins
import sys

import pytest
from sweepfixtures import BASE, sweep_dict

from simperf.sweep.executors import ExecutorError, run_points
from simperf.sweep.runner import run_sweep
from simperf.sweep.spec import parse_sweep

AXES = {"serving.page_size": [1, 16], "workload.request_rate": [2.0, 8.0]}
METRICS = ["point_id", "status", "completed", "mean_ttft_ms", "p90_tpot_ms"]


def test_ray_executor_matches_serial_run(tmp_path):
    ray = pytest.importorskip("ray")
    spec = parse_sweep(sweep_dict(AXES))
    serial = run_sweep(spec, BASE, tmp_path, tmp_path / "serial.parquet", executor="serial")
    seen = []
    try:
        # no address: the executor starts a local instance with `workers` CPUs, and shuts it down after
        on_ray = run_sweep(
            spec, BASE, tmp_path, tmp_path / "ray.parquet", executor="ray", workers=2, on_row=seen.append
        )
        assert not ray.is_initialized()
    finally:
        if ray.is_initialized():
            ray.shutdown()
    assert len(seen) == 4 and on_ray.status_counts == {"ok": 4}
    assert on_ray.frame.select(METRICS).equals(serial.frame.select(METRICS))


def test_missing_ray_gives_an_install_hint(monkeypatch):
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "ray", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_ray)
    spec = parse_sweep(sweep_dict(AXES))
    from simperf.sweep.expand import expand

    points = expand(spec, BASE, "/tmp")
    with pytest.raises(ExecutorError, match="pip install"):
        list(run_points(points, lambda p: {}, "ray", 2))
