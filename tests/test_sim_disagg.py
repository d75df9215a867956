"""PD disaggregation: prefill server -> KV link -> decode server, composed as the client sees it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from simfakes import LinearCost, make_serving
from test_sim_scheduler import NO_OVERHEAD
from typer.testing import CliRunner

from simperf.cli import app
from simperf.report.inflight import records_in_flight
from simperf.scenario.models import Overheads
from simperf.scenario.pd import check_kv_compatible
from simperf.sim.disagg import Pool, semaphore_sends, simulate_disaggregated, tail_tokens
from simperf.sim.engine import Simulator

REPO = Path(__file__).resolve().parents[1]
SOME_OVERHEAD = Overheads(
    frontend_us_per_chunk=0,
    frontend_us_per_streamed_token=0,
    scheduler_us_per_iteration=300,
    process_us_per_iteration=150,
    process_us_per_running_request=0,
    ingress_us=2000,
    egress_us=500,
    # the client's burst (sim/client.py) is not what these tests are about: a burst reaches the server at once
    client_setup_us_per_request=0,
    client_burst_us_per_request=0,
    receive_us_per_request=0,
)


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
    assert stats.decode.decode_iterations > 0


def _run(n, limit, arrivals=None, overheads=SOME_OVERHEAD, link_latency_s=5e-5):
    prefill = Pool(make_serving(chunked_prefill_size=512), LinearCost(base_us=3000, per_token_us=20), 2000)
    decode = Pool(make_serving(), LinearCost(base_us=2000, per_token_us=30, per_kv_us=0.01), 2000)
    rng = np.random.RandomState(7)
    inputs, outputs = rng.randint(100, 1500, n), rng.randint(5, 200, n)
    arrivals = np.zeros(n) if arrivals is None else arrivals
    rec, stats = simulate_disaggregated(
        prefill,
        decode,
        overheads,
        inputs,
        outputs,
        arrivals,
        link_bytes_per_s=5e9,
        link_latency_s=link_latency_s,
        max_concurrency=limit,
    )
    return rec, stats, (prefill, decode, inputs, outputs, arrivals)


def test_joint_simulation_is_the_client_fixed_point():
    """The send times are the semaphore's answer to the simulated latencies: nothing left to iterate."""
    rec, _, (_, _, _, _, arrivals) = _run(300, 16)
    assert len(rec) == 300
    latency = rec.finish_s - rec.send_s
    np.testing.assert_allclose(semaphore_sends(arrivals, latency, 16), rec.send_s, rtol=0, atol=1e-9)


def test_open_loop_joint_simulation_equals_the_two_servers_simulated_in_turn():
    """Without a concurrency limit nothing flows back from decode to prefill: simulating the prefill server alone,
    then the decode server on the KV landing times, must give the joint run's numbers exactly."""
    n = 200
    arrivals = np.cumsum(np.random.RandomState(3).exponential(0.02, n))
    rec, _, (prefill, decode, inputs, outputs, _) = _run(n, None, arrivals)
    p_overheads = SOME_OVERHEAD.model_copy(update={"egress_us": 0.0})
    d_overheads = SOME_OVERHEAD.for_pd_decode()
    p_rec, _ = Simulator(prefill.serving, prefill.cost, p_overheads).run(inputs, np.ones(n, int), arrivals)
    done = np.full(n, np.nan)
    done[p_rec.request_id] = p_rec.finish_s
    ready = done + 5e-5 + tail_tokens(inputs, 512) * 2000 / 5e9
    order = np.argsort(ready, kind="stable")
    d_sim = Simulator(decode.serving, decode.cost, d_overheads)
    d_sim.prebuilt = True
    d_rec, _ = d_sim.run(inputs[order], outputs[order], ready[order])
    finish = np.empty(n)
    finish[order[d_rec.request_id]] = d_rec.finish_s
    first = np.empty(n)
    first[order[d_rec.request_id]] = d_rec.first_token_s
    np.testing.assert_array_equal(rec.finish_s, finish[rec.request_id])
    np.testing.assert_array_equal(rec.first_token_s, first[rec.request_id])
    np.testing.assert_array_equal(rec.send_s, arrivals[rec.request_id])


@pytest.mark.parametrize("limit", [64, 128, 256])
def test_disaggregated_closed_loop_keeps_the_concurrency_in_flight(limit):
    """Regression (issue 18): the old fixed-point loop stopped after 4 rounds with 54/79/75 requests in flight at
    concurrency 64/128/256; the joint simulation holds exactly C while the client sends."""
    rec, _, _ = _run(3 * limit, limit)
    held = records_in_flight(rec, limit)
    assert held.max == limit
    assert held.mean_while_sending == pytest.approx(limit, rel=1e-9)


@pytest.mark.parametrize("limit", [64, 128, 256])
def test_shipped_disaggregated_scenario_reports_the_concurrency_it_kept(limit, tmp_path):
    text = (REPO / "scenarios/layouts/r1-1p1d-h200.yaml").read_text()
    text = text.replace("num_prompts: 200", f"num_prompts: {2 * limit + 40}")
    text = text.replace("request_rate: 2", f"request_rate: inf\n  max_concurrency: {limit}")
    text = text.replace("output_len: 512", "output_len: 64")
    path = tmp_path / "pd.yaml"
    path.write_text(text)
    result = CliRunner().invoke(app, ["predict", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    held = json.loads(result.stdout)["simperf"]["achieved_concurrency"]
    assert held["requested"] == limit and held["max_in_flight"] == limit
    assert held["mean_in_flight_while_sending"] == pytest.approx(limit, rel=0.01)


def test_semaphore_sends_are_fifo_and_monotone():
    sends = semaphore_sends(np.zeros(4), np.array([1.0, 2.0, 1.0, 1.0]), 2)
    assert list(sends) == [0.0, 0.0, 1.0, 2.0]


@pytest.mark.parametrize(
    ("decode", "named"),
    [({"page_size": 64}, "page_size"), ({"kv_dtype": "fp8_e4m3"}, "kv_cache_dtype")],
)
def test_pd_sides_must_share_page_size_and_kv_dtype(decode, named):
    """SGLang's decode server refuses a prefill server whose pages or KV dtype differ (CommonKVManager
    .try_ensure_parallel_info); every pair of a fleet's prefill and decode servers is compared."""
    same = make_serving()
    check_kv_compatible([("p", same)], [("d0", same), ("d1", same)])
    with pytest.raises(ValueError, match=rf"^d1\.{named}: the decode server runs"):
        check_kv_compatible([("p", same)], [("d0", same), ("d1", make_serving(**decode))])


def test_each_side_of_a_pd_pair_balances_its_dp_ranks_as_told():
    """load_balance_method under disaggregation.prefill / .decode was accepted and never read (the pair's two
    simulators kept round robin); total_requests now sends a request to the DP rank holding the fewest."""
    from simperf.pipeline import predict
    from simperf.scenario.load import parse_scenario

    def per_rank(method: str) -> list[int]:
        side = {"tp": 2, "dp_attention": 2, "load_balance_method": method}
        prediction = predict(
            parse_scenario(
                {
                    "model": {"name": "qwen3-30b-a3b"},
                    "hardware": {"gpu": "h100", "count": 4},
                    "disaggregation": {"prefill": side, "decode": side},
                    "workload": {
                        "dataset": {"kind": "random", "input_len": 512, "output_len": 64},
                        "num_prompts": 60,
                        "request_rate": 20,
                    },
                }
            )
        )
        return list(prediction.stats.per_rank_requests)

    assert per_rank("round_robin") == [30, 30]
    assert per_rank("total_requests") != [30, 30]


def test_the_prefill_server_caches_shared_prefixes():
    """A PD pair's prefill server ran without a prefix cache (its requests' block ids were never passed), so a
    shared-prefix workload paid every prompt in full; SGLang's prefill server keeps its radix cache (only the decode
    server's is forced off). The second prompt now finds the first one's four shared blocks."""
    prefill, decode = pools()
    hashes = [np.array([1, 2, 3, 4, 5]), np.array([1, 2, 3, 4, 6])]
    args = (prefill, decode, NO_OVERHEAD, np.array([500, 500]), np.array([4, 4]), np.array([0.0, 0.5]))
    kw = {"link_bytes_per_s": 1e12, "link_latency_s": 0.0}
    cold, _ = simulate_disaggregated(*args, **kw)
    warm, _ = simulate_disaggregated(*args, **kw, block_hashes=hashes, block_tokens=100)
    assert list(cold.cached_tokens) == [0, 0] and list(warm.cached_tokens) == [0, 400]
    cold_ttft, warm_ttft = (rec.first_token_s - rec.send_s for rec in (cold, warm))
    assert warm_ttft[1] < cold_ttft[1] and warm_ttft[0] == pytest.approx(cold_ttft[0])
