"""SGLang's speculative worker under the overlap scheduler (spec v2, 0.5.17): the scheduler processes a batch only
once the next speculative launch has returned, Overheads.spec_launch_wait_us after the batch's GPU work ended
(measured on served EAGLE and plain prefills, each pair on one H200 host, docs/overheads.md). With the real
cost model and shipped tables (DeepSeek-R1 TP8 with MTP): every token, the first included, reaches the client that
much later; the iterations themselves keep their pace."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from realcost import real_cost, real_setup

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
