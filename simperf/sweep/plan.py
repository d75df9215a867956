"""Capacity planning: how many replicas of which configuration serve a target rate within an SLA.

A configuration *sustains* a request rate r when the SLA holds at every swept load of that configuration up to
and including r (lightest first); its sustained rate is the largest such r. The offered Poisson rate counts for
rate-driven points; for points capped by max_concurrency (or at rate "inf") the measured request throughput does,
since the client holds back requests there and its TTFT does not see that wait. Replicas = ceil(target /
sustained rate), assuming the router spreads requests evenly so each replica sees target / replicas. A fleet's
configuration is a whole fleet behind its router: its replicas are copies of that fleet, each given an even share.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import polars as pl

from simperf.sweep.pareto import THROUGHPUT_PER_GPU
from simperf.sweep.sla import Sla


@dataclass(frozen=True)
class Candidate:
    config_id: str
    config_label: str
    gpu: str
    gpus_per_replica: int
    sustained_rate: float  # req/s one replica serves within the SLA
    point_id: str  # the row at the sustained load (its metrics are the candidate's)
    replicas: int
    total_gpus: int
    row: dict
    target_rate: float
    lower_bound: bool = False  # the SLA held at every swept load: the true sustained rate may be higher
    # servers of one "replica" when the configuration is a fleet (a whole fleet behind its router, copied `replicas`
    # times); 0 for a server or a PD pair
    fleet_servers: int = 0

    @property
    def replicas_text(self) -> str:
        """`replicas`, saying what one is where it is a whole fleet ("4 x fleet of 2 servers")."""
        if not self.fleet_servers:
            return str(self.replicas)
        return f"{self.replicas} x fleet of {self.fleet_servers} servers"

    @property
    def sustained_text(self) -> str:
        return f"{self.sustained_rate:.4g}" + ("+" if self.lower_bound else "")

    @property
    def headroom(self) -> float:
        """Spare capacity at the target: replicas x sustained rate / target - 1."""
        return self.replicas * self.sustained_rate / self.target_rate - 1.0

    @property
    def per_replica_rate(self) -> float:
        return self.target_rate / self.replicas


@dataclass(frozen=True)
class Plan:
    target_rate: float
    sla: Sla
    ranked: list[Candidate]  # best first: fewest GPUs, then most sustained rate per GPU
    infeasible: list[tuple[str, str]]  # (config label, why it cannot serve within the SLA)

    @property
    def winner(self) -> Candidate | None:
        return self.ranked[0] if self.ranked else None


def _row_rate(row: dict) -> float:
    offered = row.get("request_rate")
    capped = row.get("max_concurrency") is not None
    if offered is None or math.isinf(offered) or capped:
        return float(row.get("request_throughput") or 0.0)
    return float(offered)


def _load_key(row: dict) -> tuple[float, float]:
    rate = row.get("request_rate")
    conc = row.get("max_concurrency")
    return (math.inf if rate is None else float(rate), math.inf if conc is None else float(conc))


def sustained(rows: list[dict], sla: Sla, passing: set[str]) -> tuple[float, dict | None, str]:
    """(sustained rate, the row at it, why not when 0) for one configuration's load points.

    When every swept load passes, the why-string is "all": the sustained rate is only a lower bound.
    """
    ran = [r for r in rows if r.get("status") == "ok"]
    if not ran:
        reasons = {f"{r.get('status')}: {r.get('reason')}" for r in rows}
        return 0.0, None, "; ".join(sorted(reasons))[:300]
    best_rate, best_row, every_load_passed = 0.0, None, True
    for row in sorted(ran, key=_load_key):
        if row["point_id"] not in passing:
            every_load_passed = False
            break
        rate = _row_rate(row)
        if rate > best_rate:
            best_rate, best_row = rate, row
    if best_row is None:
        lightest = sorted(ran, key=_load_key)[0]
        return 0.0, None, f"fails {sla} already at its lightest swept load ({_describe_load(lightest)})"
    return best_rate, best_row, "all" if every_load_passed else ""


def _describe_load(row: dict) -> str:
    parts = []
    if row.get("request_rate") is not None:
        parts.append(f"rate {row['request_rate']:g} req/s")
    if row.get("max_concurrency") is not None:
        parts.append(f"concurrency {row['max_concurrency']}")
    return ", ".join(parts) or "base load"


def plan_capacity(table: pl.DataFrame, target_rate: float, sla: Sla) -> Plan:
    if target_rate <= 0:
        raise ValueError(f"target rate must be positive, got {target_rate}")
    passing = sla.passing_ids(table)
    candidates: list[Candidate] = []
    infeasible: list[tuple[str, str]] = []
    for rows in _by_config(table):
        rate, row, why = sustained(rows, sla, passing)
        label = rows[0]["config_label"]
        if row is None:
            infeasible.append((label, why))
            continue
        # at least one: a target under 1e-9 of the sustained rate rounded to "0 replica(s) = 0 GPUs"
        replicas = max(1, math.ceil(target_rate / rate - 1e-9))
        gpus = int(row["num_gpus"])
        cand = Candidate(
            config_id=row["config_id"],
            config_label=label,
            gpu=str(row.get("gpu")),
            gpus_per_replica=gpus,
            sustained_rate=rate,
            point_id=row["point_id"],
            replicas=replicas,
            total_gpus=replicas * gpus,
            row=row,
            target_rate=target_rate,
            lower_bound=why == "all",
            fleet_servers=_fleet_servers(row),
        )
        candidates.append(cand)
    candidates.sort(
        key=lambda c: (
            c.total_gpus,
            -c.sustained_rate / c.gpus_per_replica,
            -(c.row.get(THROUGHPUT_PER_GPU) or 0.0),
            c.config_label,
        )
    )
    return Plan(target_rate, sla, candidates, sorted(infeasible))


def _fleet_servers(row: dict) -> int:
    """Servers of the row's fleet (every group's count, autoscaled fleets' whole pool), 0 when it is no fleet."""
    fleet = json.loads(row.get("scenario_json") or "{}").get("fleet")
    if not isinstance(fleet, dict):
        return 0
    groups = [g for side in ("replicas", "prefill", "decode") for g in fleet.get(side) or []]
    return sum(int(g.get("count", 1)) for g in groups if isinstance(g, dict))


def _by_config(table: pl.DataFrame) -> list[list[dict]]:
    groups: dict[str, list[dict]] = {}
    for row in table.iter_rows(named=True):
        groups.setdefault(row["config_id"], []).append(row)
    return list(groups.values())
