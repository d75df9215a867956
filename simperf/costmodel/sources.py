"""Which table prices each op of a scenario's steps: this GPU's own, one scaled from another GPU, or none.

`op_sources(cost, ...)` walks the ops of a few representative steps (prefills of given lengths, decodes of given
batch and KV length) and reports, per op, the key the cost model chose, the table behind it and the label and
detail of its time at that step. The test of the shipped B200 scenarios and docs/b200.md use it to show that a
table for the target GPU always wins over a scaled one and which ops still have no table at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simperf.costmodel.step import SGLangStepCost
from simperf.models.ops import OpCall

NO_TABLE = "none"


@dataclass(frozen=True)
class OpSource:
    step: str  # "prefill 2000" | "decode bs=16 kv=4096"
    name: str  # the op in the model, e.g. "moe.experts"
    op: str  # schema op
    key: dict[str, Any]  # the table key the cost model chose
    table: str  # the GPU whose table answers ("b200"), "scaled-from:<gpu>", or "none"
    better_table: bool  # another candidate key has a table of a higher rank (never true: the precedence rule)
    source: str  # the label of the time at this step (schema.SOURCES)
    detail: str

    def line(self) -> str:
        key = ", ".join(f"{k}={v}" for k, v in self.key.items())
        return f"{self.step} | {self.name} | {self.op}({key}) | {self.table}"


def _table_name(cost: SGLangStepCost, rank: int) -> str:
    if rank >= 2:
        return cost.db.gpu.key
    if rank == 1 and cost.db.reference is not None:
        return f"scaled-from:{cost.db.reference.gpu.key}"
    return NO_TABLE


def _scalar_axes(op: OpCall) -> dict[str, float]:
    return {
        name: float(np.asarray(value, dtype=np.float64).reshape(-1)[0]) for name, value in op.axes.items()
    }


def _sources_of(cost: SGLangStepCost, step: str, ops: Iterable[OpCall]) -> list[OpSource]:
    out = []
    for op in ops:
        key, curve = cost.resolve(op)
        rank = cost.db.table_rank(op.op, dict(key))
        best = max(cost.db.table_rank(op.op, dict(k)) for k in op.candidates)
        timing = curve.timing(**_scalar_axes(op))
        out.append(
            OpSource(
                step,
                op.name,
                op.op,
                dict(key),
                _table_name(cost, rank),
                best > rank,
                timing.source,
                timing.detail,
            )
        )
    return out


def op_sources(
    cost: SGLangStepCost,
    prefill_tokens: Sequence[int] = (2000,),
    decodes: Sequence[tuple[int, int]] = ((1, 2048),),
) -> list[OpSource]:
    """Per op of each representative step: the chosen key, its table and its label there.

    prefill_tokens: one fresh prompt (no prefix) of each length; decodes: (batch, KV length per request), run as
    the CUDA-graph bucket the batch pads to (speculative decoding's draft and verify ops included)."""
    out: list[OpSource] = []
    for tokens in prefill_tokens:
        ops = cost.extend_ops(np.array([tokens]), np.array([0]))
        out += _sources_of(cost, f"prefill {tokens}", ops)
    buckets = cost.serving.cuda_graph_bs
    for bs, kv in decodes:
        padded = next((b for b in buckets if b >= bs), bs)
        out += _sources_of(cost, f"decode bs={bs} kv={kv}", cost.decode_ops(padded, padded, float(kv)))
    return out


def distinct_lines(sources: Iterable[OpSource]) -> list[str]:
    """One line per (step kind, op, key, table), steps of one kind merged: a stable listing for review."""
    seen: dict[str, None] = {}
    for s in sources:
        kind = s.step.split()[0]
        key = ", ".join(f"{k}={v}" for k, v in s.key.items())
        seen[f"{kind} | {s.name} | {s.op}({key}) | {s.table}"] = None
    return list(seen)
