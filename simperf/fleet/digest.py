"""What one replica's run leaves behind when a fleet is too large to keep every streamed token: a digest.

bench_serving's metrics need, per request, its send time, TTFT, latency and lengths (kept: a few numbers per
request), and over all tokens the inter-token latencies (ITL: mean, median, std, p90/95/99, max) and the tokens
streamed in each second (the peak output rate). Per token, the digest keeps only the ITL values with their counts
(requests decoding in the same batch share each gap, so a replica has far fewer distinct values than tokens) and a
per-second token histogram. Percentiles and the median from it equal numpy's over the full list; the mean and std
differ only by floating-point summation order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simperf.records import RequestRecords
from simperf.report.metrics import inter_token_latencies, per_request, token_chunks, token_times


@dataclass
class Rows:
    """One row per completed request (bench_serving's success), sorted by request id."""

    request_id: np.ndarray  # int64, the client's request index
    server: np.ndarray  # int64, the router's worker index
    send_s: np.ndarray
    ttft_s: np.ndarray
    latency_s: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    cached_tokens: np.ndarray
    retractions: np.ndarray

    def __len__(self) -> int:
        return int(self.request_id.shape[0])

    @staticmethod
    def concat(parts: list[Rows]) -> Rows:
        if not parts:
            empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
            return Rows(empty_i, empty_i, empty_f, empty_f, empty_f, empty_i, empty_i, empty_i, empty_i)
        cols = {name: np.concatenate([getattr(p, name) for p in parts]) for name in Rows.__dataclass_fields__}
        order = np.argsort(cols["request_id"], kind="stable")
        return Rows(**{name: col[order] for name, col in cols.items()})


def rows_of(records: RequestRecords, server: int | np.ndarray) -> Rows:
    """Rows of `records` (whose request_id are already the client's ids)."""
    completed, _ = token_chunks(records)
    req = per_request(records)
    ids = np.asarray(records.request_id, dtype=np.int64)[completed]
    servers = np.broadcast_to(np.asarray(server, dtype=np.int64), records.request_id.shape)[completed]
    return Rows(
        request_id=ids,
        server=np.array(servers, dtype=np.int64),
        send_s=req.send_s,
        ttft_s=req.ttft_s,
        latency_s=req.latency_s,
        input_len=req.input_len,
        output_len=req.output_len,
        cached_tokens=np.asarray(records.cached_tokens, dtype=np.int64)[completed],
        retractions=np.asarray(records.retractions, dtype=np.int64)[completed],
    )


@dataclass
class Digest:
    rows: Rows
    itl_values: np.ndarray  # sorted distinct ITL values (s)
    itl_counts: np.ndarray  # int64, how often each occurs
    itl_sum: float  # Σ ITL over every token (s)
    tokens_per_s: np.ndarray  # int64, tokens streamed in each second from the run's first send
    max_finish_s: float


def digest_of(records: RequestRecords, server: int, t0: float) -> Digest:
    """`t0`: the fleet's first send (bench_serving counts seconds from the earliest send of a completed request)."""
    req = per_request(records)
    itl = inter_token_latencies(req.chunks)
    values, counts = np.unique(itl, return_counts=True)
    times = token_times(req, itl)
    bucket = (times - t0).astype(np.int64)
    bucket = bucket[bucket >= 0]
    hist = np.bincount(bucket) if bucket.size else np.zeros(0, np.int64)
    finish = req.send_s + req.latency_s
    return Digest(
        rows=rows_of(records, server),
        itl_values=values,
        itl_counts=counts.astype(np.int64),
        itl_sum=float(itl.sum()) if itl.size else 0.0,
        tokens_per_s=hist.astype(np.int64),
        max_finish_s=float(finish.max()) if finish.size else 0.0,
    )


def merge_itl(digests: list[Digest]) -> tuple[np.ndarray, np.ndarray, float]:
    values = np.concatenate([d.itl_values for d in digests]) if digests else np.zeros(0)
    counts = np.concatenate([d.itl_counts for d in digests]) if digests else np.zeros(0, np.int64)
    if values.size == 0:
        return values, counts, 0.0
    distinct, inverse = np.unique(values, return_inverse=True)
    merged = np.bincount(inverse, weights=counts, minlength=distinct.size).astype(np.int64)
    return distinct, merged, float(sum(d.itl_sum for d in digests))


def merge_histograms(digests: list[Digest]) -> np.ndarray:
    size = max((d.tokens_per_s.size for d in digests), default=0)
    total = np.zeros(size, dtype=np.int64)
    for d in digests:
        total[: d.tokens_per_s.size] += d.tokens_per_s
    return total
