"""bench_serving's result keys for a fleet from replica digests (the bounded-memory path).

The same definitions as `simperf.report.metrics.summarize` (docs/metrics.md): per-request statistics come from the
kept rows exactly as there; ITL statistics come from (value, count) pairs — percentiles and the median by numpy's
own interpolation rule, so they equal `np.percentile` / `np.median` over the full list; the mean and std by
weighted sums (equal up to summation order).
"""

from __future__ import annotations

import numpy as np

from simperf.fleet.digest import Rows

_PERCENTILES = (90.0, 95.0, 99.0)


def _lerp(a: float, b: float, t: float) -> float:
    """numpy's `_lerp` (numpy/lib/_function_base_impl.py): exact at both ends."""
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def _at(values: np.ndarray, cumulative: np.ndarray, position: int) -> float:
    """The element at 0-based `position` of the sorted multiset."""
    return float(values[int(np.searchsorted(cumulative, position, side="right"))])


def weighted_percentile(values: np.ndarray, counts: np.ndarray, q: float) -> float:
    """np.percentile(expanded, q) (linear method) for sorted distinct `values` occurring `counts` times."""
    cumulative = np.cumsum(counts)
    n = int(cumulative[-1])
    virtual = (n - 1) * (np.float64(q) / 100)
    low = int(np.floor(virtual))
    high = min(low + 1, n - 1)
    return _lerp(_at(values, cumulative, low), _at(values, cumulative, high), float(virtual - low))


def weighted_median(values: np.ndarray, counts: np.ndarray) -> float:
    cumulative = np.cumsum(counts)
    n = int(cumulative[-1])
    if n % 2:
        return _at(values, cumulative, n // 2)
    a, b = _at(values, cumulative, n // 2 - 1), _at(values, cumulative, n // 2)
    return float(np.mean(np.array([a, b])))


def _array_stats(name: str, values_s: np.ndarray, empty: float) -> dict[str, float]:
    if values_s.size == 0:
        return {f"{p}_{name}_ms": empty for p in ("mean", "median", "std", "p90", "p95", "p99")}
    out = {
        f"mean_{name}_ms": float(np.mean(values_s)) * 1000,
        f"median_{name}_ms": float(np.median(values_s)) * 1000,
        f"std_{name}_ms": float(np.std(values_s)) * 1000,
    }
    for p, v in zip(_PERCENTILES, np.percentile(values_s, _PERCENTILES), strict=True):
        out[f"p{int(p)}_{name}_ms"] = float(v) * 1000
    return out


def _itl_stats(values: np.ndarray, counts: np.ndarray, total: float) -> dict[str, float]:
    n = int(counts.sum()) if counts.size else 0
    if n == 0:
        return {f"{p}_itl_ms": 0.0 for p in ("mean", "median", "std", "p90", "p95", "p99")}
    mean = total / n
    out = {
        "mean_itl_ms": mean * 1000,
        "median_itl_ms": weighted_median(values, counts) * 1000,
        "std_itl_ms": float(np.sqrt(np.sum(counts * (values - mean) ** 2) / n)) * 1000,
    }
    for p in _PERCENTILES:
        out[f"p{int(p)}_itl_ms"] = weighted_percentile(values, counts, p) * 1000
    return out


def _max_concurrent(rows: Rows, num_buckets: int, t0: float) -> int:
    end = rows.send_s + rows.latency_s
    first = (rows.send_s - t0).astype(np.int64)
    last = np.minimum((end - t0).astype(np.int64) + 1, num_buckets)
    live = np.zeros(num_buckets + 1, dtype=np.int64)
    valid = first < last
    np.add.at(live, first[valid], 1)
    np.add.at(live, last[valid], -1)
    return int(np.cumsum(live[:-1]).max())


def summarize_digest(
    rows: Rows,
    itl: tuple[np.ndarray, np.ndarray, float],
    tokens_per_s: np.ndarray,
    duration_s: float,
) -> dict[str, float | int]:
    if duration_s <= 0:
        raise ValueError(f"duration must be positive, got {duration_s}")
    output_len = rows.output_len
    total_input = int(rows.input_len.sum())
    total_output = int(output_len.sum())
    completed = len(rows)
    multi = output_len > 1
    tpot = (rows.latency_s[multi] - rows.ttft_s[multi]) / (output_len[multi] - 1)
    values, counts, itl_sum = itl
    result: dict[str, float | int] = {
        "duration": duration_s,
        "completed": completed,
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "request_throughput": completed / duration_s,
        "input_throughput": total_input / duration_s,
        "output_throughput": total_output / duration_s,
        "total_throughput": (total_input + total_output) / duration_s,
    }
    result.update(_array_stats("e2e_latency", rows.latency_s, float("nan")))
    result.update(_array_stats("ttft", rows.ttft_s, 0.0))
    result.update(_array_stats("tpot", tpot, 0.0))
    result.update(_itl_stats(values, counts, itl_sum))
    result["max_itl_ms"] = float(values[-1]) * 1000 if values.size else 0.0
    result["concurrency"] = float(rows.latency_s.sum()) / duration_s
    if completed:
        t0 = float(rows.send_s.min())
        num_buckets = int(np.ceil(float((rows.send_s + rows.latency_s).max()) - t0)) + 1
        result["max_output_tokens_per_s"] = (
            float(tokens_per_s[:num_buckets].max()) if tokens_per_s.size else 0.0
        )
        result["max_concurrent_requests"] = _max_concurrent(rows, num_buckets, t0)
    else:
        result["max_output_tokens_per_s"] = 0.0
        result["max_concurrent_requests"] = 0
    return result
