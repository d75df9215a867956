"""Where a prediction's decode time goes: the representative decode step split by op family.

Used to explain large errors (docs/accuracy.md): a family whose share is large and whose times are extrapolated
or proxied is where a wrong prediction comes from. Beside each family's time stands its roofline estimate (the
perf database's own bound, docs/perfdb.md): a table time many times its roofline points at a proxy kernel or an
extrapolation, never at a constant to tune. The roofline is an estimate and is labelled so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simperf.perfdb.roofline import Roofline
from simperf.report.breakdown import representative_steps

FAMILIES = ("collectives", "moe", "attention", "gemm", "other")
_COLLECTIVES = {"allreduce", "allgather", "reducescatter", "alltoall"}


def op_family(op: str) -> str:
    if op in _COLLECTIVES:
        return "collectives"
    if op == "moe":
        return "moe"
    if op.startswith("attn_"):
        return "attention"
    if op in ("gemm", "bmm"):
        return "gemm"
    return "other"


@dataclass(frozen=True)
class StepComposition:
    what: str  # "decode" or "prefill"
    batch: int  # decode: requests in the batch; prefill: new tokens of the one request
    padded_batch: int  # decode: the CUDA-graph bucket; prefill: same as batch
    kv_mean: float
    step_ms: float
    share: dict[str, float]  # family -> share of the step
    extrapolated_share: float  # share of the step from extrapolated or roofline times
    vs_roofline: dict[str, float]  # family -> its time / its roofline estimate (families with a roofline)


def _compose(what: str, rows, gpu, batch: int, padded: int, kv_mean: float) -> StepComposition:
    total = sum(r.total_us for r in rows) or 1.0
    share = dict.fromkeys(FAMILIES, 0.0)
    timed = dict.fromkeys(FAMILIES, 0.0)
    bound = dict.fromkeys(FAMILIES, 0.0)
    guessed = 0.0
    for r in rows:
        family = op_family(r.op)
        share[family] += r.total_us / total
        if r.source in ("extrapolated", "roofline", "scaled_key"):
            guessed += r.total_us / total
        if family != "other":
            timed[family] += r.total_us
            bound[family] += float(Roofline(r.op, r.key, gpu).time_us(r.axes)) * r.count
    ratio = {f: timed[f] / bound[f] for f in FAMILIES if bound[f] > 0}
    return StepComposition(what, batch, padded, kv_mean, total / 1000.0, share, guessed, ratio)


def decode_composition(prediction) -> StepComposition:
    """The run's representative decode step (mean batch and KV) priced op by op, grouped by family."""
    _, bs, padded, kv_mean = representative_steps(prediction)
    graph = padded <= (prediction.serving.cuda_graph_max_bs or 0)
    rows = prediction.cost.breakdown_decode(bs, padded, round(kv_mean * bs), graph)
    return _compose("decode", rows, prediction.gpu, bs, padded, float(kv_mean))


def prefill_composition(prediction) -> StepComposition:
    """The run's representative prefill step (one request of the mean extend size), grouped by family."""
    tokens, _, _, _ = representative_steps(prediction)
    prefill_cost, _ = prediction.prefill_step  # a PD pair's prefill server
    rows = prefill_cost.breakdown_extend(np.array([tokens]), np.array([0]))
    return _compose("prefill", rows, prediction.gpu, tokens, tokens, 0.0)
