"""A decode step of requests with different KV lengths, priced in the simulator beyond its mean-KV price
(SGLangStepCost.decode_straggler_us, costmodel.api.RaggedDecodeCost; perfdb/ctastream.py).

The bug it guards: the simulator priced every decode step at the batch's mean KV length. flashinfer's GQA decode
runs a batch too large to split as one CTA per request and KV head, so one long request streams its KV alone at one
CTA's measured rate after the short ones are done: on the designed straggler set a 131,072-token request among 63
short ones took 1.87 ms where the mean-KV price said 0.14 ms. Qwen3-8B on an H100: one 32,000-token request among
63 of 1,000 doubles the decode step (12.1 -> 25.7 ms); the mean-KV price stood at 12.1 ms.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from realcost import real_cost, real_setup

from simperf.costmodel.api import RaggedDecodeCost
from simperf.perfdb import ctastream
from simperf.perfdb.schema import SOURCE_INDEX
from simperf.sim.pricing import StepPricer


@pytest.fixture(scope="module")
def flashinfer_cost():
    _, serving, _, _ = real_setup("qwen3-8b-h100")
    return real_cost(
        "qwen3-8b-h100", replace(serving, prefill_backend="flashinfer", decode_backend="flashinfer")
    )


def test_a_long_request_among_short_ones_costs_its_lone_stream(flashinfer_cost):
    cost = flashinfer_cost
    assert isinstance(cost, RaggedDecodeCost)
    kv = [1000] * 63 + [32000]
    extra = cost.decode_straggler_us(64, 64, True, kv)
    # the contract, recomputed: every decode attention op's ctastream extra at its own table time, x its layers
    # (a 1% dearer rate fails this: benchmarks/mutations.py decode-straggler)
    _, attention, _ = cost._decode_entry(64, 64, True)
    expected = 0.0
    for a in attention:
        rate, _ = ctastream.rate_for(a.curve.op, a.curve.key, cost.db.cta_stream)
        table_us = float(a.curve(**a.fixed_axes, kv_len=float(np.mean(kv)))[0])
        expected += ctastream.ragged_extra_us(table_us, a.curve.key, kv, cost.db.gpu.num_sms, rate) * a.count
    assert extra == pytest.approx(expected, rel=1e-12)
    step = float(cost.decode_steps(64, 64, np.array([float(sum(kv))]), True).sum())
    assert extra > 0.8 * step  # the straggler about doubles the step


def test_requests_of_one_length_or_another_kernel_cost_nothing_more(flashinfer_cost):
    assert flashinfer_cost.decode_straggler_us(64, 64, True, [1000] * 64) == 0.0
    # SGLang's FA3 decode (the default on Hopper) has its own plan and lone-CTA rate (H100): a batch of one length
    # costs its table time, a long request among 255 short ones streams alone beyond it
    fa3 = real_cost("qwen3-8b-h100")
    assert fa3.decode_straggler_us(256, 256, True, [1000] * 256) == 0.0
    assert fa3.decode_straggler_us(256, 256, True, [1000] * 255 + [131072]) > 100.0


def test_the_fast_and_general_decode_paths_add_the_same_straggler_time(flashinfer_cost):
    cost = flashinfer_cost
    kv_totals = np.array([95000.0, 95064.0, 95128.0])
    general = cost.decode_steps(48, 48, kv_totals, True, 0.0, 2345.5)
    plain = cost.decode_steps(48, 48, kv_totals, True)
    column = SOURCE_INDEX["interpolated"]
    assert np.allclose(general - plain, np.eye(general.shape[1])[column] * 2345.5)
    for totals_in in (kv_totals.tolist(), kv_totals):
        totals, add_by_source = cost.decode_totals(48, 48, totals_in, True, 0.0, 2345.5)
        assert totals == pytest.approx(general.sum(axis=1).tolist(), rel=1e-12)
        acc = [0.0] * general.shape[1]
        add_by_source(acc, 2)
        assert acc == pytest.approx(general[:2].sum(axis=0).tolist(), rel=1e-12)


class _Rank:
    """The running batch as StepPricer reads it."""

    def __init__(self, kv_lens: list[int]) -> None:
        self.running = list(range(len(kv_lens)))
        self.tokens_per_step = 1
        self._kv = kv_lens

    def decode_kv_lens(self) -> list[int]:
        return list(self._kv)

    def decode_kv_now(self) -> float:
        return float(sum(self._kv))

    def decode_kv_extent(self) -> tuple[int, int]:
        return sum(self._kv), max(self._kv)

    def decode_kv_totals(self, offsets: np.ndarray) -> np.ndarray:
        return self.decode_kv_now() + len(self._kv) * offsets

    def shared_prefix_reads(self) -> int:
        return 0


def test_the_simulators_decode_step_carries_the_straggler(flashinfer_cost):
    """StepPricer, single rank (the cost model's fast path) and lock-step ranks (the general path): a ragged batch
    costs its mean-KV price plus the straggler time at every step of the run."""
    cost = flashinfer_cost
    ragged, uniform = [1000] * 63 + [33000], [1500] * 64  # the same KV total
    pricer = StepPricer(cost, single_rank=True, step_log=False, prebuilt=False)
    extra = cost.decode_straggler_us(64, 64, True, ragged)
    for ranks in ([_Rank(ragged)], [_Rank(ragged), _Rank(ragged)]):
        steps, _ = pricer.decode(ranks, 64, 64, True, 3, float(sum(ragged)))
        flat, _ = pricer.decode([_Rank(uniform)] * len(ranks), 64, 64, True, 3, float(sum(uniform)))
        assert steps == pytest.approx([f + extra for f in flat], rel=1e-9)


def test_every_decode_run_is_priced_with_the_running_requests_own_kv_lengths(flashinfer_cost):
    """Invariant 12 (docs/simulator.md): at the start of every decode run the cost model is given the KV lengths
    of exactly the requests decoding then, recounted from the requests themselves (prompt + tokens generated +
    the token being decoded), and the straggler time it returns is added to the run's steps."""
    from simperf.sim.engine import Simulator

    scenario, serving, _, _ = real_setup("qwen3-8b-h100")
    serving = replace(serving, prefill_backend="flashinfer", decode_backend="flashinfer")
    holder: dict = {}
    checked: list[bool] = []
    extras: list[float] = []

    class Watched:
        def __getattr__(self, attr):
            return getattr(flashinfer_cost, attr)

        def decode_straggler_us(self, bs, padded_bs, graph, kv_lens):
            ranks = [r for r in holder["sim"].ranks if len(r.running) == bs]
            recount = [
                sorted(r.t.kv_at_join[q] + r.generated_since_join(q) + 1 for q in r.running) for r in ranks
            ]
            checked.append(sorted(kv_lens) in recount)
            extras.append(flashinfer_cost.decode_straggler_us(bs, padded_bs, graph, kv_lens))
            return extras[-1]

    rng = np.random.default_rng(3)
    n = 40
    inputs = np.where(rng.random(n) < 0.1, 24000, rng.integers(200, 1500, n))  # a few long contexts
    outputs = rng.integers(16, 96, n)
    arrivals = np.cumsum(rng.exponential(0.01, n))
    arrivals -= arrivals[0]
    sim = Simulator(serving, Watched(), scenario.overheads)
    holder["sim"] = sim
    records, _ = sim.run(inputs, outputs, arrivals, max_concurrency=32)
    assert len(records) == n
    assert checked and all(checked)
    assert max(extras) > 1000.0  # the long contexts did straggle
