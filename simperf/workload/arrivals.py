"""Client send times as sglang.bench_serving's request generator (`get_request`) produces them.

The generator yields request 0 at once, and after yielding each request sleeps `np.random.exponential(1/rate)`
before the next one. It also sleeps after the last request, and the benchmark only gathers the request tasks once
the generator is exhausted, so the measured duration is at least the sum of all n gaps: `sender_done_s`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Arrivals:
    send_s: np.ndarray  # float64, non-decreasing, send_s[0] == 0
    sender_done_s: float  # when the generator finishes: after the trailing gap that follows the last request


def _all_at_once(num: int, rate: float) -> bool:
    """Validate (num, rate); True when every request is sent at time 0 (rate inf, or nothing to send)."""
    if num < 0:
        raise ValueError(f"num must be >= 0, got {num}")
    if rate <= 0 or np.isnan(rate):
        raise ValueError(f"rate must be positive or inf, got {rate}")
    return bool(np.isinf(rate) or num == 0)


def _from_gaps(gaps: np.ndarray) -> Arrivals:
    """Request 0 at 0, each next one a gap later; the sender's last sleep ends at the sum of all gaps."""
    ends = np.cumsum(gaps)
    return Arrivals(np.concatenate(([0.0], ends[:-1])), float(ends[-1]))


def poisson_arrivals(rng: np.random.RandomState, num: int, rate: float) -> Arrivals:
    """n send times with Exp(1/rate) gaps, drawing from `rng` exactly as bench_serving's loop does.

    One vectorised `exponential(scale, size=n)` call consumes the legacy RandomState stream exactly as n scalar
    calls do, so the gaps equal bench_serving's for the same generator state.
    """
    if _all_at_once(num, rate):
        return Arrivals(np.zeros(num, dtype=np.float64), 0.0)
    return _from_gaps(rng.exponential(1.0 / rate, size=num))


def gamma_arrivals(rng: np.random.RandomState, num: int, rate: float, burstiness: float) -> Arrivals:
    """n send times with Gamma(k, 1/(rate*k)) gaps: mean 1/rate, coefficient of variation 1/sqrt(k).

    vLLM's benchmark_serving `--burstiness k` draws gaps this way; k = 1 is the exponential (and NumPy's legacy
    gamma with shape 1 consumes the stream exactly as `exponential` does, so k = 1 equals `poisson_arrivals`).
    """
    if burstiness <= 0 or not np.isfinite(burstiness):
        raise ValueError(f"burstiness must be a positive number, got {burstiness}")
    if _all_at_once(num, rate):
        return Arrivals(np.zeros(num, dtype=np.float64), 0.0)
    return _from_gaps(rng.gamma(burstiness, 1.0 / (rate * burstiness), size=num))


def client_arrivals(
    rng: np.random.RandomState, num: int, rate: float, process: str, burstiness: float
) -> Arrivals:
    """The workload's arrival process by name ("poisson" | "gamma")."""
    if process == "poisson":
        return poisson_arrivals(rng, num, rate)
    if process == "gamma":
        return gamma_arrivals(rng, num, rate, burstiness)
    raise ValueError(f"unknown arrival process {process!r}; allowed: poisson, gamma")
