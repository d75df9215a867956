"""On a CUDA machine: one real point per CPU-safe backend through the worker (skipped elsewhere)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def _ctx():
    from simperf.calibrate.provenance import detect_device
    from simperf.calibrate.timing import TimingConfig
    from simperf.calibrate.worker import WorkerContext

    return WorkerContext(device=detect_device(), timing=TimingConfig(target_ms=5.0))


def test_bf16_gemm_point_is_timed_by_graph_replay():
    from simperf.calibrate.backends import gemm
    from simperf.calibrate.points import make_point

    m = gemm.run_point(make_point("gemm", "torch", dtype="bf16", m=64, n=4096, k=4096), _ctx())
    assert m.timing_method == "cuda_graph_replay" and 0 < m.time_us_p10 <= m.time_us <= m.time_us_p90


def test_moe_point_runs_grouped_gemm_on_the_busiest_rank():
    from simperf.calibrate.backends import moe
    from simperf.calibrate.points import make_point

    point = make_point(
        "moe", "torch_grouped_mm", dtype="bf16", num_experts=128, experts_per_rank=16,
        topk=8, n=768, k=2048, routing="zipf", m=256,
    )  # fmt: skip
    m = moe.run_point(point, _ctx())
    assert m.time_us > 0
