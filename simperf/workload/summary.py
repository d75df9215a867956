"""What `simperf trace inspect` reports about a trace: size, timing, rate over time, lengths, prefix reuse.

Prefix reuse replays the trace's prefix-block ids, in arrival order, through a radix cache
(`simperf.radix_cache.RadixCache`): each request first matches (at most its prompt minus one token, as SGLang
recomputes the last token), then inserts its prompt. With no capacity given the cache never evicts, so the ratio is
an upper bound on what SGLang's radix cache could skip: it ignores KV-pool pressure, concurrency (a request cannot
hit a prefix still being prefilled) and page alignment (1-token pages assumed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simperf.radix_cache import RadixCache
from simperf.workload.trace import Trace
from simperf.workload.transforms import mean_rate

PERCENTILES = (50, 90, 99)
UNBOUNDED = 1 << 62


@dataclass(frozen=True)
class LengthStats:
    mean: float
    p50: float
    p90: float
    p99: float
    min: int
    max: int
    total: int

    @classmethod
    def of(cls, values: np.ndarray) -> LengthStats:
        p50, p90, p99 = np.percentile(values, PERCENTILES)
        return cls(
            float(values.mean()),
            float(p50),
            float(p90),
            float(p99),
            int(values.min()),
            int(values.max()),
            int(values.sum()),
        )


@dataclass(frozen=True)
class PrefixReuse:
    ratio: float  # Σ matched prompt tokens / Σ prompt tokens
    requests_hit: float  # share of requests that matched at least one block
    block_tokens: int
    capacity_tokens: int | None  # None: unbounded
    unique_blocks: int
    ratio_over_time: list[float]  # the ratio per time bin (the summary's rate bins); empty without times


def hit_rate_over_time(
    time_s: np.ndarray,
    hit_tokens: np.ndarray,
    prompt_tokens: np.ndarray,
    bins: int,
    span_s: float | None = None,
) -> list[float]:
    """Σ hit / Σ prompt tokens of the requests in each of `bins` equal bins over [0, span_s] (default: the last
    time); NaN for an empty bin. Works on a trace replay or on simulated per-request hit lengths."""
    span = float(time_s.max()) if span_s is None and time_s.size else float(span_s or 0.0)
    if span <= 0:
        return []
    which = np.minimum((time_s / span * bins).astype(np.int64), bins - 1)
    hits = np.bincount(which, weights=hit_tokens, minlength=bins)
    prompts = np.bincount(which, weights=prompt_tokens, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (hits / prompts).tolist()


@dataclass(frozen=True)
class TraceSummary:
    format: str
    count: int
    has_times: bool
    duration_s: float
    mean_rate: float  # req/s over the span
    rate_bin_s: float
    rate_over_time: list[float]  # req/s per bin of rate_bin_s, from 0
    input_len: LengthStats
    output_len: LengthStats
    prefix_reuse: PrefixReuse | None  # None: the trace has no prefix-block ids
    accept_len_mean: float | None
    skipped: tuple[str, ...] = field(default=())


def prefix_reuse(trace: Trace, capacity_tokens: int | None = None, bins: int = 12) -> PrefixReuse | None:
    if trace.block_hashes is None:
        return None
    cache = RadixCache(capacity_tokens or UNBOUNDED, trace.hash_block_tokens)
    hits = np.zeros(len(trace))
    for i, (hashes, prompt) in enumerate(zip(trace.block_hashes, trace.input_len.tolist(), strict=True)):
        lease = cache.acquire(hashes, prompt)
        hits[i] = lease.tokens
        cache.release(lease)
        cache.insert(hashes, prompt)
    stats = cache.stats
    over_time = hit_rate_over_time(trace.arrival_s, hits, trace.input_len, bins) if trace.has_times else []
    unique = len({h for hashes in trace.block_hashes for h in hashes.tolist()})
    return PrefixReuse(
        ratio=stats.hit_rate,
        requests_hit=stats.hit_requests / max(stats.lookups, 1),
        block_tokens=trace.hash_block_tokens,
        capacity_tokens=capacity_tokens,
        unique_blocks=unique,
        ratio_over_time=over_time,
    )


def summarize_trace(trace: Trace, bins: int = 12, capacity_tokens: int | None = None) -> TraceSummary:
    """Summary with the request rate in `bins` equal time bins over the trace's span."""
    duration = float(trace.arrival_s[-1]) if len(trace) else 0.0
    if trace.has_times and duration > 0:
        bin_s = duration / bins
        counts, _ = np.histogram(trace.arrival_s, bins=bins, range=(0.0, duration))
        rates = (counts / bin_s).tolist()
    else:
        bin_s, rates = 0.0, []
    return TraceSummary(
        format=trace.format,
        count=len(trace),
        has_times=trace.has_times,
        duration_s=duration,
        mean_rate=mean_rate(trace.arrival_s) if trace.has_times else float("nan"),
        rate_bin_s=bin_s,
        rate_over_time=rates,
        input_len=LengthStats.of(trace.input_len),
        output_len=LengthStats.of(trace.output_len),
        prefix_reuse=prefix_reuse(trace, capacity_tokens, bins),
        accept_len_mean=None if trace.accept_len is None else float(trace.accept_len.mean()),
        skipped=trace.skipped,
    )
