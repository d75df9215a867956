"""How a one-shot plan is shown: the winner and runner-ups (text table or JSON), and what was left out and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simperf.plan.oneshot import OneShotPlan, PlanEntry
from simperf.report.tables import Col, TableData, print_tables, stdout_console

METRICS = (
    "output_throughput_per_gpu",
    "tokens_per_s_per_user",
    "p90_ttft_ms",
    "p90_tpot_ms",
    "measured_share",
)


def assumptions(plan: OneShotPlan) -> list[str]:
    """Numbers the plan rests on that are not measured kernel times: say them every time."""
    req = plan.request
    out = [
        f"traffic: random {req.isl} in / {req.osl} out (range ratio {req.range_ratio:g}), Poisson arrivals"
        if req.rate is not None
        else f"traffic: random {req.isl} in / {req.osl} out (range ratio {req.range_ratio:g}), closed loop",
        "a replica sustains a load when the SLA holds there and at every lighter load tried (docs/sweeps.md)",
    ]
    if any("MTP" in e.label for e in plan.ranked) or any("MTP" in a for a, _ in plan.infeasible):
        out.append(
            f"MTP candidates assume a mean accept length of {req.mtp_accept_length:g} (--mtp-accept-length; "
            "an input, not a prediction: read yours from SGLang's `accept len` log)"
        )
    if any(e.kind == "disaggregated" for e in plan.ranked):
        out.append("PD pairs ship KV over a 50 GB/s, 50 µs link per GPU (a named default, not measured)")
    return out


def entry_json(entry: PlanEntry) -> dict[str, Any]:
    return {
        "configuration": entry.label,
        "kind": entry.kind,
        "gpus_per_replica": entry.gpus_per_replica,
        "replicas": entry.replicas,
        "total_gpus": entry.total_gpus,
        "sustained_rate_per_replica": entry.sustained_rate,
        "sustained_rate_is_lower_bound": entry.lower_bound,
        "capacity_req_s": entry.capacity,
        "headroom": entry.headroom,
        "planned_rate_per_replica": entry.planned_rate_per_replica,
        "at_sustained_load": {k: entry.row.get(k) for k in METRICS},
    }


def request_json(req) -> dict[str, Any]:
    """The question a one-shot plan answers, as plan.json records it."""
    return {
        "model": req.model,
        "weight_dtype": req.weight_dtype,
        "gpu": req.gpu,
        "total_gpus": req.total_gpus,
        "isl": req.isl,
        "osl": req.osl,
        "range_ratio": req.range_ratio,
        "rate": req.rate,
        "sla": list(req.sla),
    }


def plan_json(plan: OneShotPlan, top: int, table: Path) -> dict[str, Any]:
    return {
        "request": request_json(plan.request),
        "winner": entry_json(plan.winner) if plan.winner else None,
        "runner_ups": [entry_json(e) for e in plan.ranked[1 : top + 1]],
        "over_budget": [{"configuration": a, "why": b} for a, b in plan.over_budget],
        "infeasible": [{"configuration": a, "why": b} for a, b in plan.infeasible],
        "not_simulated": [{"configuration": a, "why": b} for a, b in plan.skipped],
        "assumptions": assumptions(plan),
        "table": str(table),
    }


def _rate(entry: PlanEntry) -> str:
    return f"{entry.sustained_rate:.3g}" + ("+" if entry.lower_bound else "")


def ranking_table(plan: OneShotPlan, top: int) -> TableData:
    rate_given = plan.request.rate is not None
    columns = [
        Col("rank", "rank", str, True),
        Col("configuration", "configuration"),
        Col("gpus_per_replica", "GPUs / replica", str, True),
        Col("replicas", "replicas", str, True),
        Col("total_gpus", "GPUs", str, True),
        Col("sustained", "req/s / replica", str, True),
        Col(
            "headroom" if rate_given else "capacity",
            "headroom" if rate_given else "req/s on budget",
            (lambda v: f"{100 * v:.0f}%") if rate_given else (lambda v: f"{v:.3g}"),
            True,
        ),  # fmt: skip
        Col("tok_gpu", "tok/s / GPU", lambda v: f"{v:,.0f}", True),
        Col("tok_user", "tok/s / user", lambda v: f"{v:.1f}", True),
        Col("ttft", "p90 TTFT (ms)", lambda v: f"{v:,.0f}", True),
        Col("tpot", "p90 TPOT (ms)", lambda v: f"{v:.1f}", True),
        Col("measured", "measured", lambda v: f"{100 * v:.0f}%", True),
    ]
    table = TableData("winner and runner-ups (metrics at the sustained load)", columns)
    for i, e in enumerate(plan.ranked[: top + 1], start=1):
        r = e.row
        table.add(
            rank=i,
            configuration=e.label,
            gpus_per_replica=e.gpus_per_replica,
            replicas=e.replicas,
            total_gpus=e.total_gpus,
            sustained=_rate(e),
            headroom=e.headroom,
            capacity=e.capacity,
            tok_gpu=r.get("output_throughput_per_gpu"),
            tok_user=r.get("tokens_per_s_per_user"),
            ttft=r.get("p90_ttft_ms"),
            tpot=r.get("p90_tpot_ms"),
            measured=r.get("measured_share"),
        )
    return table


def print_oneshot(plan: OneShotPlan, top: int, table_path: Path, saved: list[str]) -> None:
    req = plan.request
    console = stdout_console()
    sla = ", ".join(req.sla) or "no latency bound"
    target = f"{req.rate:g} req/s" if req.rate is not None else "the most req/s"
    console.print(
        f"{req.label} on up to {req.total_gpus} x {req.gpu}: {target} within {sla}", highlight=False
    )
    w = plan.winner
    if w is None:
        console.print("No candidate meets the SLA within the budget.", highlight=False)
    else:
        serves = f"serves {req.rate:g} req/s" if req.rate is not None else f"serves {w.capacity:.3g} req/s"
        console.print(
            f"Winner: {w.label}: {w.replicas} replica(s) x {w.gpus_per_replica} GPUs = {w.total_gpus} GPUs; "
            f"{serves} (one replica sustains {_rate(w)} req/s)",
            highlight=False,
        )
        print_tables([ranking_table(plan, top)])
    for title, items in (
        ("over the GPU budget", plan.over_budget),
        ("meet the SLA at no load tried", plan.infeasible),
        ("not simulated", plan.skipped),
    ):
        if items:
            console.print(f"{len(items)} candidate(s) {title}:", highlight=False)
            for label, why in items[:8]:
                console.print(f"  {label}: {why}", highlight=False)
            if len(items) > 8:
                console.print(f"  ... {len(items) - 8} more (-o json lists all)", highlight=False)
    for note in assumptions(plan):
        console.print(f"assumes: {note}", highlight=False)
    console.print(
        f"every point: {table_path} (simperf report {table_path} --rate R --sla ...)", highlight=False
    )
    for path in saved:
        console.print(f"commands and scenario: {path}", highlight=False)
