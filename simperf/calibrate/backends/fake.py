"""A CPU-only stand-in backend for the tests of resume and failure isolation (never used on a GPU run).

Behaviour per point, chosen by environment variables (comma-separated m values):
SIMPERF_FAKE_SLEEP_S   seconds to sleep per point (default 0)
SIMPERF_FAKE_RAISE_M   raise ValueError on these m
SIMPERF_FAKE_CRASH_M   die by SIGSEGV on these m (a segfaulting kernel)
SIMPERF_FAKE_UNSUPPORTED_M  raise Unsupported on these m
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from simperf.calibrate.measure import Measurement, Unsupported


def _ms(name: str) -> set[int]:
    raw = os.environ.get(name, "")
    return {int(v) for v in raw.split(",") if v.strip()}


def run_point(point: dict[str, Any], ctx: Any) -> Measurement:
    m = int(point["m"])
    if m in _ms("SIMPERF_FAKE_CRASH_M"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if m in _ms("SIMPERF_FAKE_RAISE_M"):
        raise ValueError(f"fake kernel failure at m={m}")
    if m in _ms("SIMPERF_FAKE_UNSUPPORTED_M"):
        raise Unsupported("requires SM100")
    start = time.perf_counter()
    time.sleep(float(os.environ.get("SIMPERF_FAKE_SLEEP_S", "0")))
    elapsed_us = (time.perf_counter() - start) * 1e6 + m
    return Measurement(elapsed_us, elapsed_us, elapsed_us, 1, "cpu_wall_fake")
