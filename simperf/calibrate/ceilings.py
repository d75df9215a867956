"""The device's two practical ceilings, measured once per run and written to device.json:
device-to-device copy bandwidth (bytes read + written per second) and dense matmul rate on random data.
Kernel results in the docs are compared against these rather than datasheet numbers."""

from __future__ import annotations

from typing import Any


def measure_ceilings() -> dict[str, Any]:
    import torch

    from simperf.calibrate.timing import TimingConfig, time_events, time_graph_replay

    cfg = TimingConfig(target_ms=200.0, min_repeats=10, max_repeats=50)
    result: dict[str, Any] = {}

    n_bytes = 4 * 1024**3  # 4 GiB source: far past L2
    result["copy_bandwidth_gbps"] = _copy_bandwidth_gbps(n_bytes, cfg)
    result["copy_bytes"] = n_bytes

    size = 8192
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    m = time_events([lambda: a @ b], cfg)
    assert m is not None
    result["bf16_matmul_tflops"] = 2 * size**3 / (m.time_us * 1e-6) / 1e12

    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.to(torch.float8_e4m3fn).t().contiguous().t()
    one = torch.ones((), device="cuda", dtype=torch.float32)
    try:
        m = time_events([lambda: torch._scaled_mm(a8, b8, one, one, out_dtype=torch.bfloat16)], cfg)
        assert m is not None
        result["fp8_matmul_tflops"] = 2 * size**3 / (m.time_us * 1e-6) / 1e12
    except Exception as exc:  # noqa: BLE001
        result["fp8_matmul_tflops"] = None
        result["fp8_error"] = str(exc)[:300]

    # small-kernel graph overhead floor: an empty-ish kernel timed by graph replay
    tiny = torch.randn(1, device="cuda")
    m = time_graph_replay([lambda: tiny.add_(1.0)], TimingConfig())
    assert m is not None
    result["graph_launch_floor_us"] = m.time_us
    return result


def _copy_bandwidth_gbps(n_bytes: int, cfg: object) -> float:
    import torch

    from simperf.calibrate.timing import time_events

    src = torch.randn(n_bytes // 2, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    m = time_events([lambda: dst.copy_(src)], cfg)  # type: ignore[arg-type]
    assert m is not None
    return 2 * n_bytes / (m.time_us * 1e-6) / 1e9
