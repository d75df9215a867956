"""PD disaggregation: prefill server -> KV link -> decode server, composed as the client sees it."""

from __future__ import annotations

import numpy as np
import pytest
from simfakes import LinearCost, make_serving
from test_sim_scheduler import NO_OVERHEAD

from simperf.sim.disagg import Pool, semaphore_sends, simulate_disaggregated, tail_tokens


def pools(chunk=8192):
    prefill = Pool(make_serving(chunked_prefill_size=chunk), LinearCost(base_us=1000, per_token_us=10), 1000)
    decode = Pool(make_serving(), LinearCost(base_us=2000, per_token_us=0), 1000)
    return prefill, decode


def test_ttft_is_prefill_plus_kv_tail_transfer_and_decode_has_no_prefill_stalls():
    prefill, decode = pools()
    rec, stats = simulate_disaggregated(
        prefill,
        decode,
        NO_OVERHEAD,
        np.array([500, 300]),
        np.array([6, 6]),
        np.array([0.0, 0.0035]),
        link_bytes_per_s=1e9,
        link_latency_s=0.0005,
    )
    times0 = rec.chunk_time_s[rec.chunk_offsets[0] : rec.chunk_offsets[1]]
    # prefill 1000 + 10*500 us = 6 ms; KV: 0.5 ms latency + 500 tokens x 1000 B at 1 GB/s = 0.5 ms
    assert times0[0] - rec.send_s[0] == pytest.approx(0.006 + 0.0005 + 0.0005)
    # the decode server only decodes: every gap is one 2 ms decode step (or a 0-cost PREBUILT admission)
    gaps = np.diff(times0)
    assert gaps.max() <= 0.002 + 1e-9
    assert stats.prefill.extend_iterations == 2 and stats.decode.decode_iterations > 0


def test_only_the_last_chunk_of_kv_is_on_the_critical_path():
    assert list(tail_tokens(np.array([100, 8192, 8193, 20000]), 8192)) == [100, 8192, 1, 3616]
    assert list(tail_tokens(np.array([100, 9000]), -1)) == [100, 9000]


def test_client_concurrency_limit_is_honoured_across_both_servers():
    prefill, decode = pools()
    n = 8
    rec, stats = simulate_disaggregated(
        prefill,
        decode,
        NO_OVERHEAD,
        np.full(n, 200),
        np.full(n, 20),
        np.zeros(n),
        link_bytes_per_s=1e9,
        link_latency_s=0.0,
        max_concurrency=2,
    )
    for t in rec.send_s:
        assert ((rec.send_s <= t + 1e-12) & (rec.finish_s > t + 1e-9)).sum() <= 2
    assert stats.rounds >= 2


def test_semaphore_sends_are_fifo_and_monotone():
    sends = semaphore_sends(np.zeros(4), np.array([1.0, 2.0, 1.0, 1.0]), 2)
    assert list(sends) == [0.0, 0.0, 1.0, 2.0]
