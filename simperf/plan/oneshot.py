"""`simperf plan --model M --gpu G --total-gpus N --isl I --osl O [--rate R] --sla ...`: AIConfigurator's question.

The candidates (plan/candidates.py) each get a ladder of loads and run through the sweep runner (journal, resume,
progress, process pool or Ray), into an ordinary sweep table that `simperf report` also reads. Ranking uses the
sweep planner's definition of a sustained rate (docs/sweeps.md: the SLA holds at that load and at every lighter
one):

- with --rate R: the fewest GPUs that serve R within the SLA (replicas = ceil(R / sustained)), among the
  candidates that fit the N-GPU budget; then the most req/s per GPU;
- without --rate: the most req/s the N GPUs serve within the SLA ((N // GPUs per replica) x sustained).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from simperf.plan.candidates import CandidateSet, PlanCandidate
from simperf.sweep.expand import LOAD_PATHS, SweepPoint, stable_hash
from simperf.sweep.paths import with_values
from simperf.sweep.plan import sustained
from simperf.sweep.sla import Sla

RATE_LADDER = (
    0.5,
    1.0,
    2.0,
    4.0,
)  # x the per-replica share of the target rate when the whole budget serves it
CONCURRENCY_LADDER = (1, 4, 16, 64, 256)  # per replica, when no target rate is given
RUN_SECONDS = 60.0  # arrivals per point at the planned load (docs/sweeps.md: >= 60 s shows an overload)
MIN_PROMPTS, MAX_PROMPTS = 200, 1000


@dataclass(frozen=True)
class PlanRequest:
    model: str
    gpu: str
    total_gpus: int
    isl: int
    osl: int
    range_ratio: float
    rate: float | None
    sla: tuple[str, ...]
    mtp_accept_length: float
    num_prompts: int | None = None
    seed: int = 42
    disaggregation: bool = True
    # the dtype a named checkpoint stores (Qwen/Qwen3-8B-FP8); None: the model's own
    weight_dtype: str | None = None

    @property
    def label(self) -> str:
        return f"{self.model} ({self.weight_dtype} weights)" if self.weight_dtype else self.model

    @property
    def name(self) -> str:
        load = f"-{self.rate:g}rps" if self.rate else ""
        # not plan-qwen3-8b-fp8-...: the zoo's qwen3-8b-fp8 entry names its own tables so
        weights = f"-{self.weight_dtype}-weights" if self.weight_dtype else ""
        return f"plan-{self.model}{weights}-{self.total_gpus}x{self.gpu}-{self.isl}-{self.osl}{load}"


def base_scenario(req: PlanRequest) -> dict[str, Any]:
    return {
        "name": req.name,
        "model": {"name": req.model, **({"weight_dtype": req.weight_dtype} if req.weight_dtype else {})},
        "hardware": {"gpu": req.gpu, "count": 1},
        "workload": {
            "dataset": {
                "kind": "random",
                "input_len": req.isl,
                "output_len": req.osl,
                "range_ratio": req.range_ratio,
            },
            "seed": req.seed,
        },
    }


def replicas_on_budget(req: PlanRequest, cand: PlanCandidate) -> int:
    return req.total_gpus // cand.gpus_per_replica


def loads(req: PlanRequest, cand: PlanCandidate) -> list[dict[str, Any]]:
    """The load ladder of one candidate, each as scenario field changes (prompts sized to the load)."""
    if req.rate is not None:
        share = req.rate / replicas_on_budget(req, cand)
        prompts = req.num_prompts or int(min(max(math.ceil(RUN_SECONDS * share), MIN_PROMPTS), MAX_PROMPTS))
        return [
            {
                "workload.request_rate": round(share * m, 6),
                "workload.max_concurrency": None,
                "workload.num_prompts": prompts,
            }
            for m in RATE_LADDER
        ]
    return [
        {
            "workload.request_rate": "inf",
            "workload.max_concurrency": c,
            "workload.num_prompts": req.num_prompts or max(4 * c, 100),
        }
        for c in CONCURRENCY_LADDER
    ]


def build_points(req: PlanRequest, candidates: list[PlanCandidate], base_dir: Path) -> list[SweepPoint]:
    base = base_scenario(req)
    points: list[SweepPoint] = []
    for cand in candidates:
        config = with_values(base, cand.changes)
        identity = {k: v for k, v in config.items() if k != "name"}
        config_id = stable_hash(with_values(identity, {p: None for p in LOAD_PATHS}))
        for load in loads(req, cand):
            scenario = with_values(config, load)
            index = len(points)
            columns = {
                **cand.columns,
                "candidate": cand.label,
                "gpus_per_replica": cand.gpus_per_replica,
                "replicas_on_budget": replicas_on_budget(req, cand),
            }
            points.append(
                SweepPoint(
                    index=index,
                    point_id=stable_hash({k: v for k, v in scenario.items() if k != "name"}),
                    config_id=config_id,
                    config_label=cand.label,
                    columns=columns,
                    scenario={**scenario, "name": f"{req.name}-{index}"},
                    base_dir=str(base_dir),
                )
            )
    return points


def plan_metadata(req: PlanRequest, points: list[SweepPoint], base_dir: Path, top: int) -> dict[str, Any]:
    """Sweep-table metadata, so `simperf report` and the table form of `simperf plan` read a one-shot table too."""
    load_axis = "workload.request_rate" if req.rate is not None else "workload.max_concurrency"
    return {
        "name": req.name,
        "spec": {
            "axes": {"candidate": [], load_axis: []},
            "plan": {"rate": req.rate, "sla": list(req.sla), "top": top},
        },
        "base_dir": str(base_dir),
        "axis_columns": list(points[0].columns) if points else [],
        "config_axes": ["candidate"],
        "group_axes": ["candidate"],
        "load_paths": list(LOAD_PATHS),
        "oneshot": asdict(req),
    }


@dataclass(frozen=True)
class PlanEntry:
    label: str
    config_id: str
    kind: str
    gpus_per_replica: int
    sustained_rate: float  # req/s one replica serves within the SLA (a lower bound when every load passed)
    lower_bound: bool
    replicas: int  # rate given: the fewest that serve it; else: as many as the budget holds
    row: dict[str, Any]  # metrics at the sustained load
    target_rate: float | None

    @property
    def total_gpus(self) -> int:
        return self.replicas * self.gpus_per_replica

    @property
    def capacity(self) -> float:
        """req/s these replicas serve within the SLA."""
        return self.replicas * self.sustained_rate

    @property
    def headroom(self) -> float | None:
        return None if not self.target_rate else self.capacity / self.target_rate - 1.0

    @property
    def planned_rate_per_replica(self) -> float:
        return self.target_rate / self.replicas if self.target_rate else self.sustained_rate


@dataclass
class OneShotPlan:
    request: PlanRequest
    ranked: list[PlanEntry]  # within the budget, best first
    over_budget: list[tuple[str, str]] = field(default_factory=list)
    infeasible: list[tuple[str, str]] = field(default_factory=list)  # meets the SLA at no load tried
    skipped: list[tuple[str, str]] = field(default_factory=list)  # not simulated (does not fit, spans nodes)

    @property
    def winner(self) -> PlanEntry | None:
        return self.ranked[0] if self.ranked else None


def _entries(
    req: PlanRequest, table: pl.DataFrame, sla: Sla
) -> tuple[list[PlanEntry], list[tuple[str, str]]]:
    passing = sla.passing_ids(table)
    groups: dict[str, list[dict]] = {}
    for row in table.iter_rows(named=True):
        groups.setdefault(row["config_id"], []).append(row)
    entries, infeasible = [], []
    for rows in groups.values():
        rate, row, why = sustained(rows, sla, passing)
        first = rows[0]
        if row is None:
            infeasible.append((first["config_label"], _failed_bounds(rows, sla) or why))
            continue
        gpus = int(first["gpus_per_replica"])
        replicas = math.ceil(req.rate / rate - 1e-9) if req.rate else req.total_gpus // gpus
        entries.append(
            PlanEntry(
                first["config_label"],
                first["config_id"],
                str(first.get("kind")),
                gpus,
                rate,
                why == "all",
                replicas,
                row,
                req.rate,
            )  # fmt: skip
        )
    return entries, infeasible


def _failed_bounds(rows: list[dict], sla: Sla) -> str:
    """Which bounds the lightest load that ran breaks, with the values (e.g. "p90 TPOT 57.3 ms > 50 ms")."""
    ran = [r for r in rows if r.get("status") == "ok"]
    if not ran:
        return ""
    lightest = min(
        ran, key=lambda r: (r.get("request_rate") or math.inf, r.get("max_concurrency") or math.inf)
    )
    broken = [
        f"{b.stat} {b.metric.upper()} {lightest.get(b.column, math.nan):,.1f} ms > {b.max_ms:g} ms"
        for b in sla.bounds
        if not lightest.get(b.column, math.nan) <= b.max_ms
    ]
    if lightest.get("failed_requests"):
        broken.append(f"{int(lightest['failed_requests'])} requests not served")
    load = (
        f"{lightest['request_rate']:g} req/s"
        if lightest.get("max_concurrency") is None
        else f"concurrency {lightest['max_concurrency']}"
    )
    return f"at its lightest load ({load}): " + "; ".join(broken) if broken else ""


def rank(req: PlanRequest, table: pl.DataFrame, sla: Sla, candidates: CandidateSet) -> OneShotPlan:
    entries, infeasible = _entries(req, table, sla)
    per_gpu = "output_throughput_per_gpu"
    if req.rate is not None:
        entries.sort(
            key=lambda e: (
                e.total_gpus,
                -e.sustained_rate / e.gpus_per_replica,
                -(e.row.get(per_gpu) or 0.0),
                e.label,
            )
        )
    else:
        entries.sort(key=lambda e: (-e.capacity, -(e.row.get(per_gpu) or 0.0), e.label))
    within = [e for e in entries if e.total_gpus <= req.total_gpus]
    over = [
        (e.label, f"needs {e.replicas} x {e.gpus_per_replica} = {e.total_gpus} GPUs (one replica sustains "
                  f"{e.sustained_rate:.3g} req/s); the budget is {req.total_gpus}")
        for e in entries if e.total_gpus > req.total_gpus
    ]  # fmt: skip
    return OneShotPlan(req, within, over, sorted(infeasible), list(candidates.skipped))


def entry_scenario(entry: PlanEntry) -> dict[str, Any]:
    """The scenario of one replica at its planned load (rate given: target / replicas; else the sustained load),
    as a mapping in the schema's field order with only the fields the plan set."""
    import json

    from simperf.scenario.load import parse_scenario

    data = json.loads(entry.row["scenario_json"])
    if entry.target_rate:
        data = with_values(data, {"workload.request_rate": round(entry.planned_rate_per_replica, 6)})
    data["name"] = re.sub(r"[^a-z0-9.]+", "-", entry.label.lower()).strip("-")
    scenario = parse_scenario(data, entry.label)
    return scenario.model_dump(mode="json", exclude_unset=True, exclude_none=True)
