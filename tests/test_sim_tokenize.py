"""Text prompts are tokenised by SGLang's API server, one request at a time (sim/client.py, docs/overheads.md).

bench_serving sends token ids only with --tokenize-prompt (its random dataset); otherwise SGLang 0.5.17's
TokenizerManager tokenises the text on its event loop (`_tokenize_texts`, synchronously unless the dynamic batch
tokenizer is on), so requests sent together reach the scheduler one tokenisation apart. The bug this guards: the
corpus' shared-prefix runs (2,176-token text prompts, 16 at a time) measured TTFT 35-50% above simperf's, whose
requests all reached the scheduler at once.
"""

from __future__ import annotations

import numpy as np
import pytest

from simperf.pipeline import predict
from simperf.scenario.models import Overheads, Scenario
from simperf.sim.client import Client

US = 1e-6


def test_prompts_sent_together_are_tokenised_one_after_another():
    cost = Overheads().tokenize_us_per_prompt_token
    client = Client(np.zeros(3), None, ingress_s=0.004)
    client.tokenize_s_per_token = cost * US
    client.prompt_tokens = [1000, 2000, 500]
    client.pop_ready(0.0)
    ready = sorted(t for t, _ in client._ready)
    expected = 0.004 + np.cumsum([1000, 2000, 500]) * cost * US
    assert ready == pytest.approx(expected.tolist(), abs=1e-12)


def test_a_later_request_does_not_wait_for_a_tokenizer_that_is_idle():
    client = Client(np.array([0.0, 1.0]), None, ingress_s=0.0)
    client.tokenize_s_per_token = 1e-3  # 1 ms per token, so that any wrongly carried backlog shows
    client.prompt_tokens = [10, 10]
    client._send_until(2.0)
    assert sorted(t for t, _ in client._ready) == pytest.approx([0.010, 1.010])


def scenario(tokenize_prompt: bool, concurrency: int) -> Scenario:
    return Scenario.model_validate(
        {
            "model": {"name": "qwen3-8b"},
            "hardware": {"gpu": "h100"},
            "workload": {
                "dataset": {"kind": "fixed", "input_len": 2000, "output_len": 8},
                "num_prompts": 8,
                "max_concurrency": concurrency,
                "tokenize_prompt": tokenize_prompt,
            },
        }
    )


def test_text_prompts_cost_their_tokenisation_per_request_on_the_real_cost_model():
    """At concurrency 1 (idle server) a text prompt's TTFT is a token-id prompt's plus its tokenisation, exactly."""
    per_request_ms = 2000 * Overheads().tokenize_us_per_prompt_token / 1e3
    text, ids = predict(scenario(False, 1)).result, predict(scenario(True, 1)).result
    assert text["mean_ttft_ms"] - ids["mean_ttft_ms"] == pytest.approx(per_request_ms, rel=1e-6)


def test_a_burst_reaches_the_scheduler_after_the_clients_set_up_one_request_at_a_time_and_a_lone_one_as_before():
    """sim/client.py: a lone request reaches the scheduler ingress_us after its send, as when the ingress was one
    latency; a burst of k sent at one instant gets send times client_setup_us_per_request apart (bench_serving sets
    each up in turn), reaches the API server k x client_burst_us_per_request after the burst's start, and is
    received one request at a time."""
    o = Overheads()
    us = 1e-6

    def reached(k: int) -> tuple[np.ndarray, np.ndarray]:
        client = Client(np.zeros(k), None, o.ingress_latency_us() * us)
        client.setup_s = o.client_setup_us_per_request * us
        client.burst_s = o.client_burst_us_per_request * us
        client.receive_s_per_request = o.receive_us_per_request * us
        seen: list[tuple[float, int]] = []
        while len(seen) < k:
            t = client.next_ready_time()
            seen += [(t, i) for i in client.pop_ready(t)]
        assert [i for _, i in seen] == list(range(k))
        return np.array([s for s, _ in seen]), client.send_s

    ready, sent = reached(1)
    assert ready[0] == pytest.approx(o.ingress_us * us) and sent[0] == 0.0
    ready, sent = reached(8)
    np.testing.assert_allclose(sent, np.arange(8) * o.client_setup_us_per_request * us)
    first = 8 * o.client_burst_us_per_request + o.receive_us_per_request + o.ingress_latency_us()
    assert ready[0] == pytest.approx(first * us)
    np.testing.assert_allclose(np.diff(ready), o.receive_us_per_request * us)


def test_the_burst_costs_are_the_first_bursts_measurements():
    from pathlib import Path

    from simperf.accuracy.hostcosts import first_burst_costs

    corpus = Path(__file__).resolve().parents[1] / "groundtruth"
    o = Overheads()
    for field, measured in first_burst_costs(corpus).items():
        assert getattr(o, field) == pytest.approx(measured.value_us, abs=0.5), (field, measured.detail)
    # a lone request's share of them is inside the measured ingress
    assert o.client_burst_us_per_request + o.receive_us_per_request < o.ingress_us


def test_the_finishing_cost_is_the_later_waves_measurement():
    from pathlib import Path

    from simperf.accuracy.hostcosts import finish_us_per_request

    measured = finish_us_per_request(Path(__file__).resolve().parents[1] / "groundtruth")
    assert Overheads().finish_us_per_request == pytest.approx(measured.value_us, abs=0.5), measured.detail
