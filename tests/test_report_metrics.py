"""summarize() against hand-computed runs, a literal per-request model of bench_serving, and a speed budget."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simperf.records import RequestRecords
from simperf.report.metrics import summarize


def records_from_chunks(
    send: list[float], chunks: list[list[tuple[float, int]]], input_len: list[int], duration: float
) -> RequestRecords:
    """RequestRecords from per-request (time, n_tokens) chunk lists; output_len = tokens streamed."""
    n = len(send)
    counts = [len(c) for c in chunks]
    times = [t for c in chunks for t, _ in c]
    tokens = [k for c in chunks for _, k in c]
    return RequestRecords(
        request_id=np.arange(n, dtype=np.int64),
        send_s=np.asarray(send, dtype=np.float64),
        input_len=np.asarray(input_len, dtype=np.int64),
        output_len=np.asarray([sum(k for _, k in c) for c in chunks], dtype=np.int64),
        first_token_s=np.asarray(
            [next((t for t, k in c if k > 0), np.nan) for c in chunks], dtype=np.float64
        ),
        finish_s=np.asarray([c[-1][0] for c in chunks], dtype=np.float64),
        chunk_offsets=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        chunk_time_s=np.asarray(times, dtype=np.float64),
        chunk_num_tokens=np.asarray(tokens, dtype=np.int64),
        dp_rank=np.zeros(n, dtype=np.int64),
        retractions=np.zeros(n, dtype=np.int64),
        cached_tokens=np.zeros(n, dtype=np.int64),
        duration_s=duration,
    )


# Three requests: a 2-token chunk, a plain one, and a single-token one (no TPOT, no ITL).
HAND = records_from_chunks(
    send=[0.0, 0.2, 1.0],
    chunks=[[(0.5, 1), (0.6, 1), (0.9, 2)], [(1.2, 1), (1.5, 1)], [(2.5, 1)]],
    input_len=[10, 20, 30],
    duration=2.5,
)


def test_hand_computed_counts_and_throughputs():
    m = summarize(HAND)
    assert m["duration"] == 2.5
    assert m["completed"] == 3
    assert m["total_input_tokens"] == 60
    assert m["total_output_tokens"] == 7
    assert m["request_throughput"] == pytest.approx(3 / 2.5)
    assert m["input_throughput"] == pytest.approx(60 / 2.5)
    assert m["output_throughput"] == pytest.approx(7 / 2.5)
    assert m["total_throughput"] == pytest.approx(67 / 2.5)


def test_hand_computed_latencies():
    m = summarize(HAND)
    # TTFT 0.5, 1.0, 1.5 s; E2E 0.9, 1.3, 1.5 s
    assert m["mean_ttft_ms"] == pytest.approx(1000.0)
    assert m["median_ttft_ms"] == pytest.approx(1000.0)
    assert m["std_ttft_ms"] == pytest.approx(np.std([500.0, 1000.0, 1500.0]))
    assert m["mean_e2e_latency_ms"] == pytest.approx((900 + 1300 + 1500) / 3)
    assert m["median_e2e_latency_ms"] == pytest.approx(1300.0)
    # linear interpolation between the 2nd and 3rd sorted values: rank 0.9*2 = 1.8, 0.99*2 = 1.98
    assert m["p90_e2e_latency_ms"] == pytest.approx(1300 + 0.8 * 200)
    assert m["p99_e2e_latency_ms"] == pytest.approx(1300 + 0.98 * 200)
    # TPOT: (0.9-0.5)/3 and (1.5-1.2)/1; the 1-token request has none
    assert m["mean_tpot_ms"] == pytest.approx((400 / 3 + 300) / 2)
    assert m["median_tpot_ms"] == pytest.approx((400 / 3 + 300) / 2)
    # ITL: 0.1, then the 2-token chunk gives 0.15 twice, then 0.3
    assert m["mean_itl_ms"] == pytest.approx((100 + 150 + 150 + 300) / 4)
    assert m["median_itl_ms"] == pytest.approx(150.0)
    assert m["max_itl_ms"] == pytest.approx(300.0)
    assert m["p95_itl_ms"] == pytest.approx(150 + 0.85 * 150)


def test_hand_computed_concurrency_and_peaks():
    m = summarize(HAND)
    assert m["concurrency"] == pytest.approx((0.9 + 1.3 + 1.5) / 2.5)
    # tokens at 0.5, 0.6, 0.75, 0.9 | 1.2, 1.5 | 2.5 -> 4 in second 0
    assert m["max_output_tokens_per_s"] == 4.0
    # seconds 0: requests 0,1; 1: requests 1,2; 2: request 2
    assert m["max_concurrent_requests"] == 2


def test_zero_token_chunks_are_skipped_for_itl_but_end_the_latency():
    rec = records_from_chunks(
        send=[0.0], chunks=[[(0.5, 1), (0.7, 0), (0.9, 1), (1.0, 0)]], input_len=[5], duration=1.0
    )
    m = summarize(rec)
    assert m["mean_itl_ms"] == pytest.approx(400.0)  # 0.9 - 0.5: the empty chunk does not reset the clock
    assert m["mean_e2e_latency_ms"] == pytest.approx(1000.0)
    assert m["mean_tpot_ms"] == pytest.approx(500.0)  # (1.0 - 0.5) / (2 - 1)


def test_request_without_tokens_is_not_completed():
    rec = records_from_chunks(
        send=[0.0, 0.1], chunks=[[(0.5, 1)], [(0.7, 0)]], input_len=[5, 7], duration=1.0
    )
    m = summarize(rec)
    assert m["completed"] == 1
    assert m["total_input_tokens"] == 5


def test_single_token_outputs_give_zero_tpot_and_itl_like_bench_serving():
    rec = records_from_chunks(
        send=[0.0, 0.0], chunks=[[(0.5, 1)], [(0.6, 1)]], input_len=[5, 5], duration=1.0
    )
    m = summarize(rec)
    assert m["mean_tpot_ms"] == 0.0 and m["p99_itl_ms"] == 0.0 and m["max_itl_ms"] == 0.0


def test_keys_are_bench_serving_names():
    m = summarize(HAND)
    for family in ("e2e_latency", "ttft", "tpot", "itl"):
        for stat in ("mean", "median", "std", "p90", "p95", "p99"):
            assert f"{stat}_{family}_ms" in m
    for key in ("max_itl_ms", "concurrency", "max_output_tokens_per_s", "max_concurrent_requests"):
        assert key in m


# ------------------------------------------------------------------------------------- literal bench_serving model


def bench_serving_reference(rec: RequestRecords) -> dict[str, float]:
    """A per-request loop following bench_serving's client and calculate_metrics step by step."""
    ttfts, latencies, tpots, itls, outs, starts = [], [], [], [], [], []
    client_itls = []
    for i in range(len(rec)):
        lo, hi = rec.chunk_offsets[i], rec.chunk_offsets[i + 1]
        st_ = rec.send_s[i]
        ttft, recent, itl, latency = 0.0, st_, [], 0.0
        for j in range(lo, hi):
            t, k = rec.chunk_time_s[j], rec.chunk_num_tokens[j]
            latency = t - st_
            if k == 0:
                continue
            if ttft == 0.0:
                ttft = t - st_
            else:
                itl.extend([(t - recent) / k] * k)
            recent = t
        if ttft == 0.0:
            continue
        out = int(rec.output_len[i])
        outs.append(out)
        starts.append(st_)
        ttfts.append(ttft)
        latencies.append(latency)
        if out > 1:
            tpots.append((latency - ttft) / (out - 1))
        itls += itl
        client_itls.append(itl)
    t0 = min(starts)
    n_buckets = int(np.ceil(max(s + lat for s, lat in zip(starts, latencies, strict=True)) - t0)) + 1
    per_s = np.zeros(n_buckets)
    live = np.zeros(n_buckets)
    for s, ttft, lat, itl in zip(starts, ttfts, latencies, client_itls, strict=True):
        cur = s + ttft
        times = [cur]
        for x in itl:
            cur += x
            times.append(cur)
        for t in times:
            b = int(t - t0)
            if 0 <= b < n_buckets:
                per_s[b] += 1
        for sec in range(int(s - t0), min(int(s + lat - t0) + 1, n_buckets)):
            live[sec] += 1
    return {
        "completed": len(ttfts),
        "total_output_tokens": sum(outs),
        "mean_ttft_ms": np.mean(ttfts or 0) * 1000,
        "p99_ttft_ms": np.percentile(ttfts or 0, 99) * 1000,
        "median_tpot_ms": np.median(tpots or 0) * 1000,
        "p90_tpot_ms": np.percentile(tpots or 0, 90) * 1000,
        "mean_itl_ms": np.mean(itls or 0) * 1000,
        "std_itl_ms": np.std(itls or 0) * 1000,
        "p95_itl_ms": np.percentile(itls or 0, 95) * 1000,
        "max_itl_ms": np.max(itls or 0) * 1000,
        "median_e2e_latency_ms": np.median(latencies) * 1000,
        "p99_e2e_latency_ms": np.percentile(latencies, 99) * 1000,
        "concurrency": np.sum(latencies) / rec.duration_s,
        "max_output_tokens_per_s": float(per_s.max()),
        "max_concurrent_requests": int(live.max()),
    }


# Times on a 1/8-s grid and chunk sizes that are powers of two keep every sum exact, so 1-s buckets agree
# bit for bit with the reference's running sums.
_chunk = st.tuples(st.integers(0, 40), st.sampled_from([1, 1, 1, 2, 4, 0]))


@st.composite
def random_records(draw) -> RequestRecords:
    n = draw(st.integers(1, 8))
    send, chunks = [], []
    for _ in range(n):
        s = draw(st.integers(0, 40)) / 8
        steps = draw(st.lists(_chunk, min_size=1, max_size=6))
        first_gap = draw(st.integers(1, 40))
        t = s + first_gap / 8
        cs = [(t, draw(st.sampled_from([1, 2, 4])))]  # the first chunk always carries tokens
        for gap, k in steps:
            t += gap / 8
            cs.append((t, k))
        send.append(s)
        chunks.append(cs)
    end = max(c[-1][0] for c in chunks)
    lens = draw(st.lists(st.integers(1, 5000), min_size=n, max_size=n))
    return records_from_chunks(send, chunks, lens, duration=end + draw(st.integers(0, 8)) / 8)


@settings(max_examples=150, deadline=None)
@given(random_records())
def test_metrics_match_the_literal_definition(rec: RequestRecords):
    got = summarize(rec)
    want = bench_serving_reference(rec)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key


def test_summarize_is_fast_on_two_million_chunks():
    rng = np.random.default_rng(0)
    n, per = 10_000, 200
    send = np.sort(rng.uniform(0, 600, n))
    gaps = rng.uniform(0.005, 0.05, (n, per))
    gaps[:, 0] = rng.uniform(0.1, 2.0, n)
    times = send[:, None] + np.cumsum(gaps, axis=1)
    tokens = rng.integers(1, 4, (n, per))
    rec = RequestRecords(
        request_id=np.arange(n),
        send_s=send,
        input_len=rng.integers(1, 4000, n),
        output_len=tokens.sum(axis=1),
        first_token_s=times[:, 0],
        finish_s=times[:, -1],
        chunk_offsets=np.arange(0, n * per + 1, per),
        chunk_time_s=times.ravel(),
        chunk_num_tokens=tokens.ravel(),
        dp_rank=np.zeros(n, dtype=np.int64),
        retractions=np.zeros(n, dtype=np.int64),
        cached_tokens=np.zeros(n, dtype=np.int64),
        duration_s=float(times.max()),
    )
    summarize(rec)  # warm caches
    start = time.perf_counter()
    m = summarize(rec)
    elapsed = time.perf_counter() - start
    assert m["completed"] == n
    assert elapsed < 1.0, f"summarize took {elapsed:.2f} s on {n * per} chunks"
