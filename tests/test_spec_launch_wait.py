"""SGLang's speculative worker under the overlap scheduler (spec v2, 0.5.17): the scheduler processes a batch only
once the next speculative launch has returned, Overheads.spec_launch_wait_us after the batch's GPU work ended
(measured on served EAGLE and plain prefills, each pair on one H200 host, docs/overheads.md). With the real
cost model and shipped tables (DeepSeek-R1 TP8 with MTP): every token, the first included, reaches the client that
much later; the iterations themselves keep their pace."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from realcost import real_cost, real_setup
from typer.testing import CliRunner

from simperf.cli import app
from simperf.scenario.models import Overheads
from simperf.sim.engine import Simulator

NAME = "r1-tp8-mtp-h200"


def _run(overheads: Overheads, overlap: bool = True):
    _, serving, _, _ = real_setup(NAME)
    serving = replace(serving, overlap_schedule=overlap)
    sim = Simulator(serving, real_cost(NAME, serving, overheads), overheads)
    # one request at a time: each arrives long after the previous one finished
    records, _ = sim.run(np.full(4, 1024), np.full(4, 64), np.arange(4) * 5.0)
    ttft = records.first_token_s - records.send_s
    tpot = (records.finish_s - records.first_token_s) / (records.output_len - 1)
    return ttft, tpot


def test_a_speculative_launch_delays_every_token_by_its_wait_and_keeps_the_pace():
    measured = Overheads()
    ttft, tpot = _run(measured)
    ttft0, tpot0 = _run(Overheads(spec_launch_wait_us=0.0))
    wait_s = measured.spec_launch_wait_us * 1e-6
    assert wait_s > 0.003  # ~8 ms
    assert ttft - ttft0 == pytest.approx(np.full(4, wait_s), rel=1e-6)
    assert tpot == pytest.approx(tpot0, rel=1e-9)


def test_without_the_overlap_loop_a_speculative_batch_is_processed_when_its_forward_ends():
    ttft, _ = _run(Overheads(), overlap=False)
    ttft0, _ = _run(Overheads(spec_launch_wait_us=0.0), overlap=False)
    assert ttft == pytest.approx(ttft0, rel=1e-9)


CHECK = Path(__file__).resolve().parents[1] / "groundtruth" / "experiments" / "spec-wait-check-h200"
CHECK_FLAGS = ["--model-path", "qwen3-8b", "--gpu", "h200", "--attention-backend", "flashinfer", "--dataset-name",
               "random", "--tokenize-prompt", "--seed", "1", "--random-range-ratio", "1", "--random-input-len",
               "1024", "--random-output-len", "1", "--num-prompts", "5", "--max-concurrency", "1", "-q", "-o",
               "json"]  # fmt: skip
CHAIN_FLAGS = ["--speculative-algorithm", "EAGLE", "--speculative-draft-model-path",
               str(CHECK.parents[1] / "plans" / "qwen3-8b-eagle-draft.json"), "--speculative-num-steps", "3",
               "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4", "--accept-length", "1.0"]  # fmt: skip


def _measured_one_token_ms(server: str) -> float:
    (prefill,) = json.loads((CHECK / server / "driver.json").read_text(encoding="utf-8"))
    return float(np.median(prefill["one_token_latency_s"])) * 1e3


def _predicted_ttft_ms(flags: list[str]) -> float:
    result = CliRunner().invoke(app, ["predict", *CHECK_FLAGS, *flags])
    assert result.exit_code == 0, result.output
    return float(json.loads(result.stdout)["median_ttft_ms"])


def test_the_wait_holds_on_a_draft_shape_it_was_not_measured_with():
    """The check committed before its run (groundtruth/experiments/spec-wait-check-h200/README.md): Qwen3-8B with a
    3-step chain draft against the same server without a draft, one-token requests at 1,024 tokens. The served
    difference was 10.27 ms; the costs priced it at 9.54 ms when the check was committed. The README's miss band is
    5-14 ms (the host-to-host spread of the pairs the costs were measured on); this keeps the model within 2 ms of
    the served difference, and each server's own latency within 5%."""
    plain, chain = _measured_one_token_ms("qwen3-8b-plain"), _measured_one_token_ms("qwen3-8b-chain")
    predicted_plain, predicted_chain = _predicted_ttft_ms([]), _predicted_ttft_ms(CHAIN_FLAGS)
    assert predicted_plain == pytest.approx(plain, rel=0.05)
    assert predicted_chain == pytest.approx(chain, rel=0.05)
    assert abs((predicted_chain - predicted_plain) - (chain - plain)) < 2.0
