"""A sampled step as a program of kernels on one rank: the cost model's op list, with per-rank shapes and the
batch's real per-request lengths, grouped into layer kinds so that a few layers can stand for all of them.

Layer scaling: a model has layer kinds (DeepSeek: 3 dense-MLP layers and 58 MoE layers; a dense model: one
kind). The GPU runs `replicas` consecutive layers of each kind, each with its own weights and KV cache (so no
layer finds the previous one's data in L2, as in the real model), and the step time is
    measured = Σ_kind layers(kind) × (time of the replicas / replicas) + time of the per-step ops.
The prediction is split the same way, from the very rows `simperf predict --breakdown` shows.

What the GPU cannot run here stays in the program, marked and priced by the prediction only: collectives (one
GPU), the named overhead constant (CUDA-graph replay / launch gaps), kernels a backend reports unsupported.
Everything is plain data (JSON-serialisable points), so programs are built and tested without a GPU, and
a GPU machine without the simulator's dependencies can run programs planned elsewhere (validate.build makes
them from the cost model; validate.gpu runs them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProgramOp:
    name: str
    op: str  # schema op
    point: dict[str, Any]  # what the calibration backend takes: table key + axes (+ ragged q_lens / kv_lens)
    scope: str  # layer kind it belongs to ("all" = every layer), or "step" (once per step)
    count: int  # calls per step, as predicted
    predicted_us: float  # per call
    source: str  # the prediction's source label
    runnable: bool
    reason: str = ""  # why not runnable


@dataclass
class StepProgram:
    sample_id: int
    kind: str
    stratum: str
    num_rows: int
    batch: int  # requests in the step
    mean_kv: float
    layer_kinds: dict[str, int]  # kind -> number of layers of that kind in the model
    ops: list[ProgramOp]
    predicted_overhead_us: float  # the named constant (graph replay / eager launch gaps): not measured here
    graph: bool  # decode replayed a CUDA graph in the simulated server
    extra: dict[str, Any] = field(default_factory=dict)

    def identity(self) -> dict[str, Any]:
        """The columns that say which step a result row is about."""
        return {
            "sample_id": self.sample_id,
            "kind": self.kind,
            "stratum": self.stratum,
            "batch": self.batch,
            "num_rows": self.num_rows,
            "mean_kv": self.mean_kv,
            "graph": self.graph,
        }

    def ops_of(self, kind: str) -> list[ProgramOp]:
        """The ops of one layer of `kind` in execution order, or the per-step ops for kind "step"."""
        if kind == "step":
            return [op for op in self.ops if op.scope == "step"]
        return [op for op in self.ops if op.scope in ("all", kind)]

    def predicted_layer_us(self, kind: str, runnable_only: bool = True) -> float:
        return sum(op.predicted_us for op in self.ops_of(kind) if op.runnable or not runnable_only)

    def predicted_measurable_us(self) -> float:
        """The part of the prediction the GPU run measures: runnable ops, scaled to the model's layers."""
        total = self.predicted_layer_us("step")
        return total + sum(n * self.predicted_layer_us(k) for k, n in self.layer_kinds.items())

    def predicted_unmeasured_us(self) -> float:
        """Predicted time of what this GPU cannot run (collectives, unsupported kernels) plus the overhead."""
        return (
            sum(op.predicted_us * op.count for op in self.ops if not op.runnable) + self.predicted_overhead_us
        )

    def to_json(self) -> str:
        return json.dumps(
            {
                "sample_id": self.sample_id,
                "kind": self.kind,
                "stratum": self.stratum,
                "num_rows": self.num_rows,
                "batch": self.batch,
                "mean_kv": self.mean_kv,
                "layer_kinds": self.layer_kinds,
                "graph": self.graph,
                "predicted_overhead_us": self.predicted_overhead_us,
                "ops": [op.__dict__ for op in self.ops],
                "extra": self.extra,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> StepProgram:
        d = json.loads(text)
        ops = [ProgramOp(**op) for op in d.pop("ops")]
        return cls(ops=ops, **d)
