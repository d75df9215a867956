"""The API server's chunk queue (sim/frontend.py): its contract, and what it does to whole runs on the real cost
model and shipped tables — it caps the streamed token rate where the GPU outruns one API-server process, it leaves
an unsaturated run alone, and the decode-segment fast path streams exactly what one iteration at a time does.
"""

from __future__ import annotations

import numpy as np
import pytest

from simperf.pipeline import API_SERVER_PACED, predict
from simperf.scenario.models import Overheads, Scenario
from simperf.sim.client import Client, RequestSource
from simperf.sim.engine import Simulator
from simperf.sim.frontend import FrontEnd

US = 1e-6


def test_chunks_are_written_one_at_a_time_in_emit_order():
    fe = FrontEnd(50.0)
    assert fe.stream(1.0, 10) == pytest.approx(1.0 + 10 * 50 * US)
    # emitted before the first batch is written: waits for it
    assert fe.stream(1.0002, 4) == pytest.approx(1.0 + 14 * 50 * US)
    start, per = fe.stream_span(1.0005, 2)
    assert start == pytest.approx(1.0 + 14 * 50 * US) and per == pytest.approx(50 * US)
    # after the queue has drained, a batch starts when it is emitted
    assert fe.stream(2.0, 1) == pytest.approx(2.0 + 50 * US)
    assert fe.max_wait_s == pytest.approx((1.0 + 10 * 50 * US) - 1.0002)  # the second batch waited longest


def test_a_request_intake_goes_before_the_queued_chunks_and_delays_the_later_ones():
    """One event loop receives requests and writes chunks: an intake is not queued behind the chunks (measured: a
    request sent behind a 4.3 s chunk queue reached the API server 13 ms later), and the chunks handed over after
    it are written that much later; the loop's busy time is conserved."""
    fe = FrontEnd(100.0)
    fe.stream(1.0, 100)  # written until 1.01
    fe.occupy(1.005, 1.006)  # a request received during that batch: 1 ms of the loop
    assert fe.stream(1.0055, 10) == pytest.approx(1.01 + 0.001 + 10 * 100 * US)
    # an idle loop is busy until the intake ends
    fe.occupy(2.0, 2.0005)
    assert fe.stream(2.0001, 1) == pytest.approx(2.0005 + 100 * US)
    fe.occupy(3.0, 3.002)  # after the loop has drained: the chunks after it start when they are emitted
    assert fe.stream(3.5, 1) == pytest.approx(3.5 + 100 * US)


def test_a_request_sent_behind_a_long_chunk_queue_is_received_at_once():
    source = RequestSource()
    source.frontend = FrontEnd(100.0)
    source.receive_s_per_request = 0.5e-3
    source.frontend.stream(0.0, 10_000)  # a 1 s queue of chunks
    assert source.handled_s(0.1) == pytest.approx(0.1005)  # not after the queue (1.0 s)
    assert source.handled_s(0.1) == pytest.approx(0.101)  # one request at a time
    # the two intakes (1 ms) come before the chunks emitted after them
    assert source.frontend.stream(0.2, 1) == pytest.approx(1.0 + 0.001 + 100 * US)
    # with nothing to price, the intake is neither a wait nor a cost
    free = RequestSource()
    free.frontend = FrontEnd(100.0)
    free.frontend.stream(0.0, 10_000)
    assert free.handled_s(0.1) == 0.1 and free.frontend.stream(0.2, 1) == pytest.approx(1.0 + 100 * US)


def test_finishing_work_takes_turns_with_the_intake_of_new_requests():
    """After a request's last chunk the loop still finishes it (1 ms here). A request arriving while finishes are
    queued waits for the one in progress, then the loop alternates: one finish, one request (a closed loop's later
    wave reaches the server a receipt plus a finish apart, docs/overheads.md)."""
    fe = FrontEnd(0.0, finish_us_per_request=1000.0)
    for _ in range(4):
        fe.request_closed(1.0)  # four last chunks written at 1.0 s
    # the first request reaches the loop mid-way through the first finish: after it, then its own 0.5 ms
    assert fe.receive(1.0005, 0.0005) == pytest.approx(1.0015)
    # the next two were waiting: each after one more finish
    assert fe.receive(1.0006, 0.0005) == pytest.approx(1.0030)
    assert fe.receive(1.0007, 0.0005) == pytest.approx(1.0045)
    # the idle loop ran the last finish before this one came
    assert fe.receive(1.01, 0.0005) == pytest.approx(1.0105)


def test_an_idle_loop_finishes_requests_before_a_later_intake_arrives():
    fe = FrontEnd(0.0, finish_us_per_request=1000.0)
    fe.request_closed(1.0)
    fe.request_closed(1.0)
    assert fe.receive(1.5, 0.0005) == pytest.approx(1.5005)  # both done by 1.002
    # no intake cost and no finishing cost: the loop is not there
    assert FrontEnd(50.0).receive(2.0, 0.0) == 2.0


def test_a_cumulative_chunk_costs_more_for_every_token_it_carries():
    """SGLang's default streaming re-sends a request's whole output with each chunk: a batch's chunks cost the
    per-chunk time plus the per-token time for all the tokens they carry together."""
    fe = FrontEnd(50.0, us_per_streamed_token=0.5)
    # 10 chunks carrying 1,000 tokens in all: 10 x 50 + 1,000 x 0.5 us
    assert fe.stream(1.0, 10, 1000) == pytest.approx(1.0 + 1000 * US)
    start, per = fe.stream_span(1.0, 4, 0)  # waits for the first batch; carries nothing: the per-chunk time
    assert start == pytest.approx(1.0 + 1000 * US) and per == pytest.approx(50 * US)
    # incremental streaming is the same queue with no per-token time
    assert FrontEnd(50.0).stream(1.0, 10, 1000) == pytest.approx(1.0 + 500 * US)
    # a per-token time alone still queues
    assert FrontEnd(0.0, us_per_streamed_token=0.5).enabled


def test_a_chunk_costs_more_the_more_requests_are_open():
    """The API server's time per chunk grows with the requests it holds open (its garbage collector traverses
    them, docs/overheads.md): a request is open from its receipt until its last chunk is written."""
    fe = FrontEnd(50.0, share_per_open_request=0.01)
    for _ in range(20):
        fe.request_opened()
    start, per = fe.stream_span(1.0, 10)  # 20 open: 50 x (1 + 0.2)
    assert start == 1.0 and per == pytest.approx(60 * US)
    end = start + 10 * per
    fe.request_closed(end - 5 * per)  # two requests' last chunks are among these
    fe.request_closed(end)
    assert fe.open_requests(end - 6 * per) == 20
    _, per = fe.stream_span(end, 4)  # both closed by the time the next batch starts: 18 open
    assert per == pytest.approx(50 * 1.18 * US)
    # without the share, opened and closed requests change nothing
    plain = FrontEnd(50.0)
    plain.request_opened()
    assert plain.stream_span(1.0, 10)[1] == pytest.approx(50 * US)


def test_with_no_cost_the_queue_changes_nothing():
    fe = FrontEnd(0.0)
    assert not fe.enabled
    assert fe.stream(3.0, 1000) == 3.0
    fe.occupy(3.0, 4.0)
    assert fe.stream(3.5, 10) == 3.5


def _scenario(
    concurrency: int,
    frontend_us: float | None = None,
    metrics: bool = False,
    incremental: bool = False,
    stream_interval: int = 1,
) -> Scenario:
    spec = {
        "model": {"name": "qwen3-0.6b"},
        "hardware": {"gpu": "h200"},
        "serving": {
            "attention_backend": "flashinfer",
            "enable_metrics": metrics,
            "incremental_streaming_output": incremental,
            "stream_interval": stream_interval,
        },
        "workload": {
            "dataset": {"kind": "fixed", "input_len": 128, "output_len": 256},
            "num_prompts": 2 * concurrency,
            "max_concurrency": concurrency,
        },
    }
    # the chunk queue alone: a burst's requests received at once (receive_us_per_request spreads the first wave,
    # finish_us_per_request the later ones)
    spec["overheads"] = {
        "client_setup_us_per_request": 0.0,
        "client_burst_us_per_request": 0.0,
        "receive_us_per_request": 0.0,
        "finish_us_per_request": 0.0,
    }
    if frontend_us is not None:
        spec["overheads"]["frontend_us_per_chunk"] = frontend_us
        spec["overheads"]["frontend_us_per_streamed_token"] = 0.0
    return Scenario.model_validate(spec)


# _scenario's output length: a request's chunks carry (256 + 1) / 2 tokens on average
CARRIED = (256 + 1) / 2


def _per_chunk_us(metrics: bool = False, incremental: bool = False, open_requests: int = 256) -> float:
    """The mean time per chunk of a paced _scenario run, as the defaults price it (its closed loop keeps
    `open_requests` requests open on the API server)."""
    o = Overheads()
    alone = o.frontend_us_per_chunk_for(metrics) + o.frontend_us_per_token_for(incremental) * CARRIED
    return alone * (1 + o.frontend_share_per_open_request * open_requests)


def test_when_the_gpu_outruns_the_api_server_the_token_rate_is_one_chunk_per_cost():
    """Qwen3-0.6B's decode steps at 256 streams are far shorter than 256 chunks: the API server sets the rate
    (as on the corpus' H200 host, metrics on as there, docs/overheads.md); without the queue the GPU would stream
    far faster."""
    cost_us = _per_chunk_us(metrics=True)
    queued = predict(_scenario(256, metrics=True))
    free = predict(_scenario(256, frontend_us=0.0))
    rate = queued.result["output_throughput"]
    assert rate == pytest.approx(1e6 / cost_us, rel=0.05)
    assert free.result["output_throughput"] > 2 * rate
    assert queued.result["median_tpot_ms"] == pytest.approx(256 * cost_us / 1e3, rel=0.05)
    assert API_SERVER_PACED in queued.notes
    assert API_SERVER_PACED not in free.notes


def test_a_server_with_metrics_streams_at_the_sum_of_both_chunk_costs():
    """--enable-metrics adds the Prometheus updates to every chunk (measured on one host with and without it,
    docs/overheads.md): where the API server sets the pace, TPOT follows streams x (frontend + metrics)."""
    plain = predict(_scenario(256))
    metered = predict(_scenario(256, metrics=True))
    assert plain.result["median_tpot_ms"] == pytest.approx(256 * _per_chunk_us() / 1e3, rel=0.05)
    assert metered.result["median_tpot_ms"] == pytest.approx(
        256 * _per_chunk_us(metrics=True) / 1e3, rel=0.05
    )
    assert "metrics on" in metered.notes[API_SERVER_PACED] and "metrics off" in plain.notes[API_SERVER_PACED]


def test_a_paced_run_streams_slower_per_chunk_with_more_open_requests():
    """Where the API server paces, TPOT / streams is its time per chunk, which grows with the requests it holds
    open: from 128 to 512 streams by (1 + 512 x share) / (1 + 128 x share), as measured on one host's API-server
    CPU time (docs/overheads.md)."""
    share = Overheads().frontend_share_per_open_request
    per_chunk = {c: predict(_scenario(c, metrics=True)).result["median_tpot_ms"] / c for c in (128, 512)}
    assert per_chunk[512] / per_chunk[128] == pytest.approx((1 + 512 * share) / (1 + 128 * share), rel=0.03)


def test_incremental_streaming_drops_the_cost_of_what_chunks_carry():
    """--incremental-streaming-output: chunks carry only their new tokens (measured on one host: TPOT 15-30%
    lower where the API server paces, docs/overheads.md). A paced run's TPOT follows the per-chunk time alone,
    the cumulative run's the per-chunk time plus its chunks' mean carried tokens x the per-token time."""
    cumulative = predict(_scenario(256, metrics=True))
    incremental = predict(_scenario(256, metrics=True, incremental=True))
    assert incremental.result["median_tpot_ms"] == pytest.approx(
        256 * _per_chunk_us(metrics=True, incremental=True) / 1e3, rel=0.05
    )
    gain = cumulative.result["median_tpot_ms"] / incremental.result["median_tpot_ms"]
    assert gain == pytest.approx(
        _per_chunk_us(metrics=True) / _per_chunk_us(metrics=True, incremental=True), rel=0.02
    )
    assert gain > 1.05
    assert "incremental streaming" in incremental.notes[API_SERVER_PACED]


def test_a_late_token_costs_more_than_an_early_one_when_streaming_is_cumulative():
    """Where the API server paces a cumulative stream, a request's inter-token gaps grow with its position: each
    chunk re-sends the output so far. With incremental streaming they do not."""
    gaps = {}
    for incremental in (False, True):
        records = predict(_scenario(256, metrics=True, incremental=incremental)).records
        per_request = [
            np.diff(records.chunk_time_s[a:b])
            for a, b in zip(records.chunk_offsets[:-1], records.chunk_offsets[1:], strict=True)
        ]
        early = np.median([g[10:40].mean() for g in per_request])
        late = np.median([g[-40:-10].mean() for g in per_request])
        gaps[incremental] = late / early
    assert gaps[False] > 1.05
    assert gaps[True] == pytest.approx(1.0, abs=0.02)


def test_an_unsaturated_run_is_unchanged_but_for_one_chunk_time():
    o = Overheads()
    queued = predict(_scenario(1))
    free = predict(_scenario(1, frontend_us=0.0))
    # alone, chunk i is written i carried tokens later than chunk 0 is: each gap grows by the per-token time
    added_tpot_ms = queued.result["median_tpot_ms"] - free.result["median_tpot_ms"]
    assert added_tpot_ms == pytest.approx(o.frontend_us_per_streamed_token / 1e3, rel=1e-3)
    added_ms = queued.result["median_ttft_ms"] - free.result["median_ttft_ms"]
    # the first chunk carries one token
    assert added_ms == pytest.approx(
        (o.frontend_us_per_chunk + o.frontend_us_per_streamed_token) / 1e3, rel=1e-3
    )
    assert API_SERVER_PACED not in queued.notes


class _OneIterationAtATime(Simulator):
    def _decode_segment(self, ranks, max_bs, k_max, c):
        return super()._decode_segment(ranks, max_bs, 1, c)


@pytest.mark.parametrize("overlap,interval", [(True, 1), (False, 1), (True, 7), (False, 7)])
def test_decode_segments_stream_what_single_iterations_stream(overlap, interval):
    """Qwen3-8B on an H100 (shipped tables), 64 streams, an API server slow enough (600 us per chunk) that the
    queue sets the pace: the fast decode-segment branch and one iteration per segment give the same run, also
    where requests send every 7th token (--stream-interval 7)."""
    from dataclasses import replace

    from realcost import real_cost, real_setup

    _, serving, _, _ = real_setup("qwen3-8b-h100")
    serving = replace(serving, overlap_schedule=overlap, stream_interval=interval)
    # chunks that carry the output so far: each later iteration's chunks cost more (2 us per carried token)
    overheads = Overheads(frontend_us_per_chunk=600.0, frontend_us_per_streamed_token=2.0)
    rng = np.random.default_rng(3)
    n = 96
    inputs, outputs = rng.integers(100, 2000, n), rng.integers(20, 200, n)
    arrivals = np.zeros(n)
    out = []
    for cls in (Simulator, _OneIterationAtATime):
        sim = cls(serving, real_cost("qwen3-8b-h100", serving, overheads), overheads)
        out.append(sim.run(inputs, outputs, arrivals, max_concurrency=64))
    (fast, fast_stats), (slow, slow_stats) = out
    # 1e-6, not 1e-9: Qwen3-8B on the H100 decodes with FA3, whose ragged batches carry a straggler cost read from
    # the running requests' KV at the start of each decode run and held over it (invariant 12); one iteration per
    # segment re-reads it every iteration, so the two differ by the KV a run adds (~4e-7 here)
    for column in ("send_s", "first_token_s", "finish_s", "chunk_time_s"):
        np.testing.assert_allclose(getattr(fast, column), getattr(slow, column), rtol=1e-6, atol=0)
    # the queue was in play: chunks waited, and with 64 streams a request's chunks came at least 64 chunk-times
    # apart, more as the streams' outputs grew
    assert fast_stats.frontend_max_wait_s > (
        0.05 if interval == 1 else 0.02
    )  # a seventh of the chunks queue less
    np.testing.assert_array_equal(fast.chunk_num_tokens, slow.chunk_num_tokens)
    if interval > 1:
        return
    gaps = np.diff(fast.chunk_time_s[fast.chunk_offsets[10] : fast.chunk_offsets[11]])
    early = gaps[1:20]  # while all 64 streams are open
    assert early.min() > 64 * 600 * US
    assert np.all(np.diff(early) > 0)


def test_at_a_stream_interval_a_request_sends_its_first_token_then_every_kth_and_its_last():
    """--stream-interval 10: SGLang sends a request's output after tokens 1, 11, 21, ... and at its end (0.5.17
    output_streamer.py), so each later chunk carries 10 tokens, and the API server writes a tenth of the chunks:
    where it set the pace at interval 1, it no longer does."""
    every = predict(_scenario(256, metrics=True))
    tenth = predict(_scenario(256, metrics=True, stream_interval=10))
    free = predict(_scenario(256, frontend_us=0.0))
    rec = tenth.records
    per_request = np.split(rec.chunk_num_tokens, rec.chunk_offsets[1:-1])
    assert all(list(c) == [1] + [10] * 25 + [5] for c in per_request)  # 256 tokens: 1 + 25 x 10 + 5
    assert API_SERVER_PACED in every.notes and API_SERVER_PACED not in tenth.notes
    assert tenth.result["median_tpot_ms"] < 0.5 * every.result["median_tpot_ms"]
    assert tenth.result["median_tpot_ms"] == pytest.approx(free.result["median_tpot_ms"], rel=0.1)
    # a chunk's gap is shared by its tokens in the ITLs (bench_serving's sglang client): the mean ITL stays TPOT
    assert tenth.result["mean_itl_ms"] == pytest.approx(tenth.result["mean_tpot_ms"], rel=0.02)


def test_a_stream_interval_with_speculative_decoding_is_refused_with_the_reason():
    spec = _scenario(4).model_dump(exclude_unset=True)
    spec["serving"].update({"stream_interval": 4, "speculative": {"algorithm": "mtp"}})
    spec["model"] = {"name": "deepseek-r1"}
    with pytest.raises(ValueError, match="stream_interval > 1 with speculative decoding is not modelled"):
        Scenario.model_validate(spec)


def test_no_chunk_of_a_first_burst_is_written_before_its_last_request_is_received():
    """As on every corpus burst of 64+ streams (first chunk sent 0-2 ms after the last receipt): the API server
    receives the whole burst before it writes the first prefill's chunk. Real cost model, shipped H200 tables."""
    streams = 256
    spec = _scenario(streams).model_dump(exclude_unset=True)
    spec["workload"]["tokenize_prompt"] = True  # token ids: the intake is the receive time alone
    del spec["overheads"]
    run = predict(Scenario.model_validate(spec))
    o = Overheads()
    # the burst's requests reach the API server from k x the burst time on, one receive time apart (sim/client.py)
    written_s = streams * max(o.client_burst_us_per_request, o.client_setup_us_per_request) * US
    last_received_s = written_s + streams * o.receive_us_per_request * US
    rec = run.records
    first_burst = np.argsort(rec.send_s)[:streams]
    first_chunk_s = rec.first_token_s[first_burst].min() - rec.send_s.min()
    assert first_chunk_s >= last_received_s
    # and not much later: the first prefills were done long before, their chunks are the first written
    assert first_chunk_s < last_received_s + 0.05


def test_a_later_wave_reaches_the_scheduler_a_receipt_plus_a_finish_apart():
    """The corpus' fixed-length closed loops: a wave's requests finish together, their successors are sent at once,
    and the server receives them 1.77 ms apart (median) where it received the first wave 0.44 ms apart: the API
    server finishes the old requests in turn with taking in the new ones. The client and the API server as the
    simulator wires them (Simulator.api_server_on, _process), with the default costs."""
    o = Overheads()
    client = Client(np.zeros(32), 16, ingress_s=0.0)
    client.receive_s_per_request = o.receive_us_per_request * US
    client.frontend = FrontEnd(o.frontend_us_per_chunk, finish_us_per_request=o.finish_us_per_request)
    client._send_until(1.0)
    first_reached = sorted(t for t, _ in client._ready)
    assert np.median(np.diff(first_reached)) * 1e6 == pytest.approx(o.receive_us_per_request)
    assert len(client.pop_ready(1.0)) == 16
    start, per_chunk_s = client.frontend.stream_span(2.0, 16)  # the wave's last chunks, in one batch
    for j in range(16):
        last_chunk_s = start + per_chunk_s * (j + 1)
        client.frontend.request_closed(last_chunk_s)
        client.release(last_chunk_s + o.egress_us * US)
    client._send_until(3.0)
    reached = sorted(t for t, _ in client._ready)
    assert np.median(np.diff(reached)) * 1e6 == pytest.approx(
        o.receive_us_per_request + o.finish_us_per_request, rel=0.01
    )
    assert len(reached) == 16
