"""Price each off-grid sample the way the cost model prices that kernel call (CPU).

A uniform call is the op's curve at its axes, through the same fallbacks a simulation uses (nearest key, scaled
from another GPU, roofline). A ragged decode batch is priced at its mean KV length (costmodel: a decode step knows
its KV total, not each request's), a ragged extend batch as the work-equivalent batch of models.ops.extend_group.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from simperf.models.ops import extend_group
from simperf.perfdb.db import PerfDB
from simperf.perfdb.schema import OP_SPECS

EXTEND_OPS = ("attn_mha_prefill", "attn_mla_extend")


@dataclass(frozen=True)
class Prediction:
    us: float
    source: str  # the perf database's label (schema.SOURCES)
    detail: str
    backing: str  # measured | alpha-beta | scaled-from | scaled-key | roofline (OpCurve.backing)
    axes: dict[str, float]  # where the curve was evaluated


def call_axes(point: dict[str, Any]) -> dict[str, float]:
    """The axes the cost model evaluates for this call: its own, or those of its ragged batch's stand-in."""
    op = point["op"]
    if point.get("q_lens") and op in EXTEND_OPS:
        q = np.asarray(json.loads(point["q_lens"]), dtype=np.int64)
        kv = np.asarray(json.loads(point["kv_lens"]), dtype=np.int64)
        group = extend_group(q, kv - q, 0)
        return {"batch": float(group.batch), "q_len": float(group.q_len), "kv_len": float(group.kv_len)}
    if point.get("kv_lens"):
        kv = json.loads(point["kv_lens"])
        return {"batch": float(len(kv)), "kv_len": float(sum(kv)) / len(kv)}
    return {a: float(point[a]) for a in OP_SPECS[op].axis_columns}


def predict(db: PerfDB, point: dict[str, Any]) -> Prediction:
    spec = OP_SPECS[point["op"]]
    curve = db.curve(spec.name, {c: point[c] for c in spec.key_columns})
    axes = call_axes(point)
    timing = curve.timing(**axes)
    return Prediction(timing.us, timing.source, timing.detail, curve.backing, axes)
