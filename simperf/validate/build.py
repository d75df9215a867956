"""Build a StepProgram from a sampled step and the cost model that priced it (CPU only)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from simperf.calibrate.backends import group_for
from simperf.costmodel.overhead import OVERHEAD_SOURCE
from simperf.costmodel.step import BreakdownRow, SGLangStepCost
from simperf.validate.program import ProgramOp, StepProgram
from simperf.validate.sample import SampledStep

if TYPE_CHECKING:
    from simperf.calibrate.backends.moe_triton import BlockConfig
    from simperf.perfdb.db import PerfDB

COLLECTIVE_OPS = ("allreduce", "allgather", "reducescatter", "alltoall")
DECODE_ATTENTION_OPS = ("attn_mla_decode", "attn_gqa_decode", "attn_nsa_decode")
RAGGED_EXTEND_ATTENTION_OPS = ("attn_mha_prefill", "attn_mla_extend")
STEP_OP_NAMES = ("embed_allreduce", "final_norm", "lm_head", "logits_allgather")
# Attention-side ops appended after the row ops by the cost model; in the layer they sit before w_vc/o_proj.
_ATTENTION_PREFIXES = ("attention", "kv_b_proj", "indexer.logits_topk")


class UnsupportedStep(ValueError):
    """A step this version of validate cannot rebuild (with the reason)."""


def layer_kinds(cost: SGLangStepCost) -> dict[str, int]:
    arch = cost.arch
    kinds = {}
    if arch.num_dense_mlp_layers:
        kinds["dense"] = arch.num_dense_mlp_layers
    if arch.num_moe_layers:
        kinds["moe"] = arch.num_moe_layers
    return kinds


def _scope(row: BreakdownRow, kinds: dict[str, int], num_layers: int) -> str:
    if row.name in STEP_OP_NAMES:
        scope, expected = "step", 1
    elif row.name.startswith("mlp."):
        scope, expected = "dense", kinds.get("dense", 0)
    elif row.name.startswith("moe."):
        scope, expected = "moe", kinds.get("moe", 0)
    else:
        scope, expected = "all", num_layers
    if row.count != expected:
        raise UnsupportedStep(
            f"op {row.name} runs {row.count}x per step, expected {expected} for scope {scope}"
        )
    return scope


def _layer_order(rows: list[BreakdownRow]) -> list[BreakdownRow]:
    """Attention ops where they run in the layer: before w_vc (absorbed MLA) or o_proj; the rest in list order."""
    attention = [r for r in rows if r.name.startswith(_ATTENTION_PREFIXES)]
    others = [r for r in rows if not r.name.startswith(_ATTENTION_PREFIXES)]
    names = [r.name for r in others]
    anchor = "w_vc" if "w_vc" in names else "o_proj"
    at = names.index(anchor) if anchor in names else len(others)
    return others[:at] + attention + others[at:]


def _json_list(values: np.ndarray) -> str:
    return json.dumps([int(v) for v in values])


def _point(row: BreakdownRow, step, padded_bs: int) -> dict[str, Any]:
    """The backend's point: key + axes, with attention given the batch's real per-request lengths."""
    point: dict[str, Any] = {"op": row.op, **row.key, "backend": _run_backend(row)}
    for name, value in row.axes.items():
        point[name] = int(round(value)) if name in ("m", "batch", "kv_len", "q_len") else value
    if row.op in DECODE_ATTENTION_OPS and step.kind == "decode":
        lens = np.asarray(step.decode_kv_lens, dtype=np.int64)
        if padded_bs > lens.size:  # graph padding rows attend one token each (SGLang's fill value)
            lens = np.concatenate([lens, np.ones(padded_bs - lens.size, dtype=np.int64)])
        point.update(batch=int(lens.size), kv_len=int(round(float(lens.mean()))), kv_lens=_json_list(lens))
    elif row.op in RAGGED_EXTEND_ATTENTION_OPS and step.kind != "decode":
        group = 1 if row.name.endswith("[1]") else 0
        if group == 0:
            q = np.asarray(step.extend_lens, dtype=np.int64)
            kv = q + np.asarray(step.prefix_lens, dtype=np.int64)
        else:
            kv = np.asarray(step.decode_kv_lens, dtype=np.int64)
            q = np.ones_like(kv)
        point.update(batch=int(q.size), q_lens=_json_list(q), kv_lens=_json_list(kv))
    return point


def nearest_tile_config(
    measured: Sequence[tuple[int, str | None]], m: int, topk: int, num_experts: int, dtype: str
) -> BlockConfig:
    """The tile configuration validate runs for a Triton fused-MoE op of m tokens, given the key's measured
    rows as (m, timing_method), oldest first.

    The row of the nearest measured m in log space (the grid is geometric; a tie goes to the smaller m, and
    of several rows at that m the last) gives the configuration it recorded. SGLang likewise runs one stored
    configuration per shape, that of the nearest tuned m in its config file (by |m - M|). A row measured untuned (no `tuned` in its timing_method, as in
    tables from before tuning), or no row at all (a key priced by roofline or from another GPU's table),
    gives the untuned rule for m: what those rows measured, never a search."""
    from simperf.calibrate.backends import moe_triton as mt

    target = math.log(max(m, 1))
    best: tuple[float, int] | None = None
    method: str | None = None
    for row_m, row_method in measured:
        rank = (round(abs(math.log(max(row_m, 1)) - target), 12), row_m)
        if best is None or rank <= best:
            best, method = rank, row_method
    recorded = mt.recorded_config(method)
    return recorded if recorded is not None else mt.block_config(m, topk, num_experts, dtype)


def recorded_tile_config(db: PerfDB, key: Mapping[str, Any], m: int) -> str:
    """config_label of `nearest_tile_config` over the rows of `key` that the prediction interpolated over."""
    from simperf.calibrate.backends import moe_triton as mt

    rows = db.grid_rows("moe", key).sort("date", nulls_last=False, maintain_order=True)
    measured = list(zip(rows["m"].to_list(), rows["timing_method"].to_list(), strict=True))
    cfg = nearest_tile_config(measured, m, int(key["topk"]), int(key["num_experts"]), str(key["dtype"]))
    return mt.config_label(cfg)


def _has_worker(op: str, backend: str) -> bool:
    try:
        group_for(op, backend)
    except KeyError:
        return False
    return True


def _runnable(row: BreakdownRow, num_gpus: int) -> tuple[bool, str]:
    if row.op in COLLECTIVE_OPS:
        return (
            False,
            f"collective over {row.key.get('group_size', '?')} GPUs; validate runs one rank on one GPU",
        )
    if row.op == "elementwise" and row.key.get("variant") == "kv_convert":
        return False, "KV-layout conversion has no kernel in the calibration backends"
    if not _has_worker(row.op, _run_backend(row)):
        return False, f"no simperf backend runs {row.op} with backend {row.key.get('backend')!r}"
    return True, ""


def _run_backend(row: BreakdownRow) -> str:
    """The backend validate runs: the key's, except elementwise ops priced from a table of another backend
    (or by roofline), which run through flashinfer's kernels (SGLang's rmsnorm / silu_and_mul / rope)."""
    backend = str(row.key.get("backend"))
    if row.op == "elementwise" and not _has_worker(row.op, backend):
        return "flashinfer"
    return backend


def build_program(cost: SGLangStepCost, sampled: SampledStep, num_gpus: int = 1) -> StepProgram:
    step = sampled.step
    if cost.serving.speculative is not None:
        raise UnsupportedStep(
            "speculative decoding: validate rebuilds target-model steps only (not yet spec steps)"
        )
    if step.kind == "decode":
        lens = step.decode_kv_lens
        bs = int(lens.size)
        padded = step.padded_bs if step.graph else bs
        rows = cost.breakdown_decode(bs, padded, int(lens.sum()), step.graph)
        num_rows, batch = padded, bs
    else:
        dec = step.decode_kv_lens if step.decode_kv_lens.size else None
        rows = cost.breakdown_extend(
            step.extend_lens, step.prefix_lens, dec, step.gathered_rows, step.gathered_logit_rows
        )
        num_rows, batch, padded = step.num_rows, int(step.extend_lens.size + step.decode_kv_lens.size), 0
    # named constants (the launch/replay overhead, the unpriced router kernel) are not kernels a GPU can rerun
    constant = [r.source == OVERHEAD_SOURCE for r in rows]
    overhead = sum(r.total_us for r, c in zip(rows, constant, strict=True) if c)
    kinds = layer_kinds(cost)
    ops = []
    for row in _layer_order([r for r, c in zip(rows, constant, strict=True) if not c]):
        ok, why = _runnable(row, num_gpus)
        point = _point(row, step, padded)
        if row.op == "moe" and point["backend"] == "triton_fused_moe":
            from simperf.calibrate.backends.moe_triton import VALIDATION_CONFIG

            # the GPU side runs the configuration the table timed; it cannot read the tables itself
            point[VALIDATION_CONFIG] = recorded_tile_config(cost.db, row.key, point["m"])
        ops.append(
            ProgramOp(
                name=row.name,
                op=row.op,
                point=point,
                scope=_scope(row, kinds, cost.arch.num_layers),
                count=row.count,
                predicted_us=row.us_per_call,
                source=row.source,
                runnable=ok,
                reason=why,
            )
        )
    return StepProgram(
        sample_id=sampled.sample_id,
        kind=step.kind,
        stratum=sampled.stratum,
        num_rows=num_rows,
        batch=batch,
        mean_kv=step.mean_kv,
        layer_kinds=kinds,
        ops=ops,
        predicted_overhead_us=overhead,
        graph=step.graph,
        extra={"simulated_step_us": step.predicted_us, "padded_bs": padded},
    )
