"""bench_serving's metrics computed from the simulator's records, vectorised over requests and chunks.

Definitions follow sglang.bench_serving (`calculate_metrics` and the sglang `/generate` client); docs/metrics.md
spells each one out. A request counts as completed when it streamed at least one chunk that carried tokens,
which is bench_serving's success condition for a streamed response that produced text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simperf.errors import UserError
from simperf.records import RequestRecords

MAX_RUN_S = 1e18  # the longest run summarised; int64 seconds end at 9.2e18

# Statistic prefixes per latency family, in the order they appear in the result.
_STAT_PREFIXES = ("mean", "median", "std", "p90", "p95", "p99")
_PERCENTILES = (90.0, 95.0, 99.0)


@dataclass(frozen=True)
class TokenChunks:
    """Token-carrying chunks of the completed requests (CSR). Zero-token chunks are dropped as the client skips
    them without moving its `most_recent_timestamp`."""

    offsets: np.ndarray  # int64, len(completed)+1
    time_s: np.ndarray  # float64
    num_tokens: np.ndarray  # int64, all >= 1


@dataclass(frozen=True)
class PerRequest:
    """The per-request quantities bench_serving's client records, for completed requests only."""

    send_s: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    ttft_s: np.ndarray
    latency_s: np.ndarray
    chunks: TokenChunks


def token_chunks(records: RequestRecords) -> tuple[np.ndarray, TokenChunks]:
    """(completed mask over requests, their token-carrying chunks)."""
    offsets = np.asarray(records.chunk_offsets, dtype=np.int64)
    num_tokens = np.asarray(records.chunk_num_tokens, dtype=np.int64)
    times = np.asarray(records.chunk_time_s, dtype=np.float64)
    keep = num_tokens > 0
    if keep.all():
        kept_offsets = offsets
    else:
        kept_before = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
        kept_offsets = kept_before[offsets]
        times, num_tokens = times[keep], num_tokens[keep]
    counts = np.diff(kept_offsets)
    completed = counts > 0
    # requests without token chunks own no entries in `times`, so dropping their empty ranges renumbers nothing.
    completed_offsets = np.concatenate(([0], np.cumsum(counts[completed], dtype=np.int64)))
    return completed, TokenChunks(completed_offsets, times, num_tokens)


def per_request(records: RequestRecords) -> PerRequest:
    completed, chunks = token_chunks(records)
    send = np.asarray(records.send_s, dtype=np.float64)[completed]
    offsets = np.asarray(records.chunk_offsets, dtype=np.int64)
    all_times = np.asarray(records.chunk_time_s, dtype=np.float64)
    # latency: the client stamps every received line, token-carrying or not, so the last chunk of any kind counts.
    last_any = all_times[offsets[1:][completed] - 1]
    first_token = chunks.time_s[chunks.offsets[:-1]]
    return PerRequest(
        send_s=send,
        input_len=np.asarray(records.input_len, dtype=np.int64)[completed],
        output_len=np.asarray(records.output_len, dtype=np.int64)[completed],
        ttft_s=first_token - send,
        latency_s=last_any - send,
        chunks=chunks,
    )


def inter_token_latencies(chunks: TokenChunks) -> np.ndarray:
    """Each chunk after a request's first contributes n_new entries of gap / n_new, in request order."""
    if chunks.time_s.size == 0:
        return np.zeros(0, dtype=np.float64)
    gap = np.diff(chunks.time_s, prepend=chunks.time_s[0])
    later = np.ones(chunks.time_s.size, dtype=bool)
    later[chunks.offsets[:-1]] = False
    if chunks.num_tokens.max() == 1:  # one token per chunk (no speculative decoding): the gaps themselves
        return gap[later]
    return np.repeat(gap[later] / chunks.num_tokens[later], chunks.num_tokens[later])


def token_times(req: PerRequest, itl: np.ndarray) -> np.ndarray:
    """The token times bench_serving rebuilds for its 1-s buckets: start + ttft, then + each ITL entry.

    A first chunk counts as one token whatever it carried; a later chunk of n tokens spreads its n tokens evenly
    over the gap since the previous chunk. `itl` is inter_token_latencies(req.chunks), reused to save a pass.
    """
    chunks = req.chunks
    if chunks.time_s.size == 0:
        return np.zeros(0, dtype=np.float64)
    first_idx = chunks.offsets[:-1]
    later = np.ones(chunks.time_s.size, dtype=bool)
    later[first_idx] = False
    prev = np.concatenate(([0.0], chunks.time_s[:-1]))[later]
    first = req.send_s + req.ttft_s
    if chunks.num_tokens.max() == 1:
        return np.concatenate((first, prev + itl))
    n = chunks.num_tokens[later]
    # k = 1..n within each later chunk; itl holds gap / n for each of those tokens
    starts = np.cumsum(n) - n
    k = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(starts, n) + 1
    spread = np.repeat(prev, n) + itl * k
    return np.concatenate((first, spread))


def _peaks(req: PerRequest, itl: np.ndarray) -> tuple[float, int]:
    """max_output_tokens_per_s and max_concurrent_requests over 1-s buckets from the first send.

    Only buckets something happens in are counted (np.unique over the events), never an array over every second
    of the run: a run at 1e-9 req/s lasts 1e12 s, and a dense count of its buckets would need terabytes."""
    if req.send_s.size == 0:
        return 0.0, 0
    t0 = float(req.send_s.min())
    end = req.send_s + req.latency_s
    num_buckets = int(np.ceil(float(end.max()) - t0)) + 1
    # astype truncates toward zero, as bench_serving's int() does
    token_bucket = (token_times(req, itl) - t0).astype(np.int64)
    in_range = (token_bucket >= 0) & (token_bucket < num_buckets)
    _, tokens_per_s = np.unique(token_bucket[in_range], return_counts=True)
    first_bucket = (req.send_s - t0).astype(np.int64)
    last_bucket = np.minimum((end - t0).astype(np.int64) + 1, num_buckets)  # exclusive
    valid = first_bucket < last_bucket
    # a request is live from its first bucket up to (not including) its last: +1 and -1 events, summed per
    # bucket and accumulated over the buckets in order; the live count only rises at a first bucket
    buckets, where = np.unique(np.concatenate((first_bucket[valid], last_bucket[valid])), return_inverse=True)
    deltas = np.concatenate((np.ones(int(valid.sum()), np.int64), -np.ones(int(valid.sum()), np.int64)))
    live = np.cumsum(np.bincount(where, weights=deltas, minlength=buckets.size)).astype(np.int64)
    concurrent = live[buckets < num_buckets]
    peak_tokens = float(tokens_per_s.max()) if tokens_per_s.size else 0.0
    return peak_tokens, int(concurrent.max()) if concurrent.size else 0


def _stats(name: str, values_s: np.ndarray, empty: float) -> dict[str, float]:
    """mean/median/std/p90/p95/p99 in ms; `empty` when there are no values (bench_serving's `or 0` gives 0)."""
    if values_s.size == 0:
        return {f"{p}_{name}_ms": empty for p in _STAT_PREFIXES}
    pct = np.percentile(values_s, _PERCENTILES)
    out = {
        f"mean_{name}_ms": float(np.mean(values_s)) * 1000,
        f"median_{name}_ms": float(np.median(values_s)) * 1000,
        f"std_{name}_ms": float(np.std(values_s)) * 1000,
    }
    for p, v in zip(_PERCENTILES, pct, strict=True):
        out[f"p{int(p)}_{name}_ms"] = float(v) * 1000
    return out


def summarize(records: RequestRecords) -> dict[str, float | int]:
    """bench_serving's result keys (docs/metrics.md) for one simulated run."""
    req = per_request(records)
    duration = float(records.duration_s)
    if duration <= 0:
        raise ValueError(f"records.duration_s must be positive, got {duration}")
    if not duration <= MAX_RUN_S:
        # bench_serving's per-second peaks count whole seconds in int64: past 9.2e18 s they failed as "Python int
        # too large to convert to C long", naming nothing
        raise UserError(
            f"the simulated run lasts {duration:.3g} s, more than the {MAX_RUN_S:.0e} s simperf's per-second "
            "metrics count: check workload.request_rate, the trace's times and its dataset.time_scale or "
            "target_rate, the overheads block and disaggregation.kv_link_*"
        )
    output_len = req.output_len
    total_input = int(req.input_len.sum())
    total_output = int(output_len.sum())
    completed = int(req.send_s.size)

    multi = output_len > 1
    tpot = (req.latency_s[multi] - req.ttft_s[multi]) / (output_len[multi] - 1)
    itl = inter_token_latencies(req.chunks)
    max_tokens_per_s, max_concurrent = _peaks(req, itl)

    result: dict[str, float | int] = {
        "duration": duration,
        "completed": completed,
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "request_throughput": completed / duration,
        "input_throughput": total_input / duration,
        "output_throughput": total_output / duration,
        "total_throughput": (total_input + total_output) / duration,
    }
    # bench_serving: np.mean([]) of no latencies is nan (with a warning); TTFT/TPOT/ITL fall back to 0.
    result.update(_stats("e2e_latency", req.latency_s, float("nan")))
    result.update(_stats("ttft", req.ttft_s, 0.0))
    result.update(_stats("tpot", tpot, 0.0))
    result.update(_stats("itl", itl, 0.0))
    result["max_itl_ms"] = float(itl.max()) * 1000 if itl.size else 0.0
    result["concurrency"] = float(req.latency_s.sum()) / duration
    result["max_output_tokens_per_s"] = max_tokens_per_s
    result["max_concurrent_requests"] = max_concurrent
    return result
