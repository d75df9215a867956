"""Price each off-grid sample the way the cost model prices that kernel call (CPU).

A uniform call is the op's curve at its axes, through the same fallbacks a simulation uses (nearest key, scaled
from another GPU, roofline). One exception to "as the cost model prices it": a decode call of an op and backend
whose KV planner is modelled (perfdb/workplan.py: flashinfer MLA) is the curve at its batch and mean KV times the
work-plan factor, which moves it to where the planner's chunks and CTA waves put it (uniform calls between grid
points and ragged batches alike); the simulator's decode step does not apply that factor yet. Other decode calls
are priced at their mean KV length — a ragged flashinfer GQA decode batch plus what its unsplit long
requests cost as CTAs sharing HBM (perfdb/ctastream.py, where the GPU's per-CTA stream rate was measured) —, a
ragged extend batch as the work-equivalent batch of
models.ops.extend_group, but no shorter than its longest request alone (the cost model's OpCall.floor_axes).
A decode batch whose requests share prefix pages (the designed shared-prefix set) is priced at the effective KV
length of perfdb/shared_reads.py, as the simulator prices a batch that reads radix-cache hits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from simperf.models.ops import AttentionGroup, extend_group, straggler_axes
from simperf.perfdb import ctastream, prefillplan, shared_reads, workplan
from simperf.perfdb.db import PerfDB
from simperf.perfdb.schema import OP_SPECS
from simperf.perfdb.shared_reads import PrefixGroups

EXTEND_OPS = ("attn_mha_prefill", "attn_mla_extend")
DECODE_OPS = ("attn_mla_decode", "attn_gqa_decode", "attn_nsa_decode")


@dataclass(frozen=True)
class Prediction:
    us: float
    source: str  # the perf database's label (schema.SOURCES)
    detail: str
    backing: str  # measured | alpha-beta | scaled-from | scaled-key | roofline (OpCurve.backing)
    axes: dict[str, float]  # where the curve was evaluated


def _ragged_extend_group(point: dict[str, Any]) -> AttentionGroup | None:
    """A ragged extend call's work-equivalent group (models.ops.extend_group); None for any other call."""
    if not (point.get("q_lens") and point["op"] in EXTEND_OPS):
        return None
    q = np.asarray(json.loads(point["q_lens"]), dtype=np.int64)
    kv = np.asarray(json.loads(point["kv_lens"]), dtype=np.int64)
    return extend_group(q, kv - q, 0)


def call_axes(point: dict[str, Any], group: AttentionGroup | None = None) -> dict[str, float]:
    """The axes the cost model evaluates for this call: its own, or those of its ragged batch's stand-in
    (`group`, when the caller has it already)."""
    group = group or _ragged_extend_group(point)
    if group is not None:
        return {"batch": float(group.batch), "q_len": float(group.q_len), "kv_len": float(group.kv_len)}
    if point.get("kv_lens"):
        kv = json.loads(point["kv_lens"])
        return {"batch": float(len(kv)), "kv_len": float(sum(kv)) / len(kv)}
    return {a: float(point[a]) for a in OP_SPECS[point["op"]].axis_columns}


def decode_kv_lens(point: dict[str, Any]) -> np.ndarray | None:
    """Per-request KV lengths of a decode call (its own for a ragged batch, batch x kv_len for a uniform one);
    None for other calls."""
    if point["op"] not in DECODE_OPS or point.get("q_lens"):
        return None
    if point.get("kv_lens"):
        return np.asarray(json.loads(point["kv_lens"]), dtype=np.int64)
    return np.full(int(point["batch"]), int(point["kv_len"]), dtype=np.int64)


def _shared_prefix(db: PerfDB, point: dict[str, Any], curve: Any) -> Prediction | None:
    """A decode batch whose groups share prefix pages (a `prefix_groups` sample), priced as the simulator prices
    it: at the effective KV length of perfdb/shared_reads.py; None for any other call, or where the kernel's
    read cost was never measured on this GPU (then the distinct price stands, as in the simulator)."""
    spec = PrefixGroups.of(point)
    if spec is None or db.shared_reads is None:
        return None
    axes = call_axes(point)
    found = db.shared_reads.cost(point["op"], curve.key, axes["batch"])
    if found is None:
        return None
    read_cost, variant = found
    axes["kv_len"] = shared_reads.effective_kv(
        axes["kv_len"], spec.duplicated_reads() / axes["batch"], read_cost
    )
    if "q_len" in OP_SPECS[point["op"]].axis_columns:
        axes["q_len"] = float(point["q_len"])
    timing = curve.timing(**axes)
    detail = f"{timing.detail}; shared prefix reads at {read_cost:.3g} of a distinct one ({variant})"
    return Prediction(timing.us, timing.source, detail, curve.backing, axes)


def _planned_extend(
    db: PerfDB, curve: Any, point: dict[str, Any], source: str, axes: dict[str, float]
) -> Prediction | None:
    """A ragged extend call of a key whose planner is modelled (perfdb/prefillplan.py), priced from its critical
    path at the key's own rate; None for any other call."""
    rates = db.prefill_rates(curve.op, curve.key)
    if rates is None:
        return None
    q = np.asarray(json.loads(point["q_lens"]), dtype=np.int64)
    kv = np.asarray(json.loads(point["kv_lens"]), dtype=np.int64)
    found = prefillplan.planned_us(rates, q, kv)
    if found is None:
        return None
    us, path = found
    detail = f"{prefillplan.describe(rates, path)} (perfdb/prefillplan.py)"
    return Prediction(us, source, detail, curve.backing, axes)


def _equivalent_extend(curve: Any, axes: dict[str, float], group: AttentionGroup, timing: Any) -> Prediction:
    """A ragged extend as its work-equivalent batch (`timing`, the curve at `axes`), no shorter than its longest
    request alone (models.ops.extend_group's straggler)."""
    floor = straggler_axes(group)
    if floor is not None:
        alone = curve.timing(**floor)
        if alone.us > timing.us:
            detail = f"{alone.detail}; the longest request alone (models.ops.extend_group's straggler)"
            return Prediction(alone.us, alone.source, detail, curve.backing, axes)
    return Prediction(timing.us, timing.source, timing.detail, curve.backing, axes)


def equivalent_extend(db: PerfDB, point: dict[str, Any]) -> Prediction:
    """A ragged extend call priced as the work-equivalent batch and its straggler bound: the price before the
    planner model (perfdb/prefillplan.py), and still the price of kernels whose planner is not modelled."""
    spec = OP_SPECS[point["op"]]
    curve = db.curve(spec.name, {c: point[c] for c in spec.key_columns})
    group = _ragged_extend_group(point)
    if group is None:
        raise ValueError(f"not a ragged extend call: {point['op']} without q_lens")
    axes = call_axes(point, group)
    return _equivalent_extend(curve, axes, group, curve.timing(**axes))


def predict(db: PerfDB, point: dict[str, Any]) -> Prediction:
    spec = OP_SPECS[point["op"]]
    curve = db.curve(spec.name, {c: point[c] for c in spec.key_columns})
    shared = _shared_prefix(db, point, curve)
    if shared is not None:
        return shared
    group = _ragged_extend_group(point)
    axes = call_axes(point, group)
    timing = curve.timing(**axes)
    if group is not None:  # a ragged extend: its planner where modelled, else the equivalent batch
        planned = _planned_extend(db, curve, point, timing.source, axes)
        return planned if planned is not None else _equivalent_extend(curve, axes, group, timing)
    kv = decode_kv_lens(point)
    stream = ctastream.rate_for(curve.op, curve.key, db.cta_stream) if point.get("kv_lens") else None
    if stream is not None:
        extra = ctastream.ragged_extra_us(timing.us, curve.key, kv, db.gpu.num_sms, stream[0])  # type: ignore[arg-type]
        detail = f"{timing.detail}; {extra:+.4g} us as CTAs sharing HBM at {stream[1]}'s rate (perfdb/ctastream.py)"
        return Prediction(timing.us + extra, timing.source, detail, curve.backing, axes)
    if kv is not None and workplan.planned(curve.op, curve.key):
        us, factor = workplan.planned_us(curve, kv, db.gpu.num_sms)
        if factor != 1.0:
            detail = f"{timing.detail}; x work-plan factor {factor:.3g} (perfdb/workplan.py)"
            return Prediction(us, timing.source, detail, curve.backing, axes)
    return Prediction(timing.us, timing.source, timing.detail, curve.backing, axes)
