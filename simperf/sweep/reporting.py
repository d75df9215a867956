"""`simperf report`: a sweep table (+ a target rate and SLA) -> charts and one HTML page.

The plan's winner and runner-ups are simulated once more at the load each replica would really see
(target / replicas); those runs give the latency CDFs, the step-time breakdown and a check of the plan.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from simperf.report.charts import (
    Threshold,
    cdf_chart,
    latency_load_chart,
    pareto_chart,
    save_chart,
    step_breakdown_chart,
)
from simperf.report.html import Section, render_page
from simperf.sweep.pareto import SPEED_PER_USER, THROUGHPUT_PER_GPU, pareto_front
from simperf.sweep.plan import Candidate, Plan, plan_capacity
from simperf.sweep.sla import STATS, Sla
from simperf.sweep.table import capped_note

MAX_CURVES = 8  # configurations drawn on the latency-vs-load chart: more lines stop being readable
CHART_NAMES = ("pareto", "latency_vs_load", "latency_cdf", "step_breakdown")


@dataclass
class Recheck:
    """One planned configuration simulated at its per-replica share of the target rate."""

    candidate: Candidate
    rate: (
        float | None
    )  # per-replica request rate simulated (None: a concurrency-driven point, rerun as swept)
    result: dict[str, Any]
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    breakdown: pl.DataFrame | None  # None for a fleet: per-op step times are per server
    meets_sla: bool


@dataclass
class Report:
    html_path: Path
    plan: Plan | None
    chart_files: list[Path] = field(default_factory=list)
    rechecks: list[Recheck] = field(default_factory=list)


def rerun_scenario(row: dict, base_dir: str, rate: float | None):
    from simperf.scenario.load import parse_scenario
    from simperf.sweep.paths import with_values

    data = json.loads(row["scenario_json"])
    if rate is not None:
        data = with_values(data, {"workload.request_rate": rate})
    return parse_scenario(data, f"point {row['point_index']}", base_dir=Path(base_dir))


def breakdown_rows(prediction, label: str) -> pl.DataFrame:
    """Per-op time of the run's representative prefill and decode steps (as `simperf predict --breakdown`)."""
    from simperf.report.breakdown import representative_steps

    tokens, bs, padded, kv_mean = representative_steps(prediction)
    cost = prediction.cost
    prefill_cost, _ = prediction.prefill_step  # a PD pair's prefill server
    graph = padded <= (prediction.serving.cuda_graph_max_bs or 0)
    phases = {
        "prefill": prefill_cost.breakdown_extend(np.array([tokens]), np.array([0])),
        "decode": cost.breakdown_decode(bs, padded, round(kv_mean * bs), graph),
    }
    records = [
        {"config_label": label, "phase": phase, "op": r.op, "ms": r.total_us / 1000.0}
        for phase, rows in phases.items()
        for r in rows
    ]
    return pl.DataFrame(records)


def recheck(candidate: Candidate, base_dir: str, sla: Sla) -> Recheck:
    from simperf.pipeline import predict
    from simperf.report.metrics import per_request
    from simperf.sweep.evaluate import failed_requests, tokens_per_s_per_user

    row = candidate.row
    rate_driven = row.get("max_concurrency") is None and math.isfinite(row.get("request_rate") or math.inf)
    rate = candidate.per_replica_rate if rate_driven else None
    prediction = predict(rerun_scenario(row, base_dir, rate))
    fleet = prediction.scenario.fleet is not None
    # a fleet's prediction keeps one row per request (its chunks only when small) and no step cost of its own:
    # read as one server's, it failed with "internal error (AttributeError: 'FleetPrediction' object has no
    # attribute 'cost')"
    req = prediction.rows if fleet else per_request(prediction.records)
    multi = req.output_len > 1
    tpot = (req.latency_s[multi] - req.ttft_s[multi]) / (req.output_len[multi] - 1)
    result = dict(prediction.result)
    result["failed_requests"] = failed_requests(prediction)
    result["tokens_per_s_per_user"] = tokens_per_s_per_user(result["median_tpot_ms"])
    result["status"] = "ok"
    meets = bool(sla.filter(pl.DataFrame([{**result, "point_id": "recheck"}])).height)
    return Recheck(
        candidate=candidate,
        rate=rate,
        result=result,
        ttft_ms=req.ttft_s * 1000.0,
        tpot_ms=tpot * 1000.0,
        breakdown=None if fleet else breakdown_rows(prediction, candidate.config_label),
        meets_sla=meets,
    )


def _headroom(c: Candidate) -> str:
    # a sustained rate that is only a lower bound makes the headroom one too
    return ("≥ " if c.lower_bound else "") + f"{100 * c.headroom:.0f}%"


def plan_table(plan: Plan, top: int) -> pl.DataFrame:
    """The winner and runner-ups; metrics are at each one's sustained load (said once, in the caption)."""
    rows = []
    for rank, c in enumerate(plan.ranked[: top + 1], start=1):
        r = c.row
        rows.append(
            {
                "configuration": c.config_label,
                "rank": rank,
                "GPUs per replica": c.gpus_per_replica,
                "sustained per replica (req/s)": c.sustained_text,
                "replicas": c.replicas_text,
                "total GPUs": c.total_gpus,
                "headroom at target": _headroom(c),
                "output per GPU (tok/s)": r.get(THROUGHPUT_PER_GPU),
                "output per user (tok/s)": r.get(SPEED_PER_USER),
                "p90 TTFT (ms)": r.get("p90_ttft_ms"),
                "p90 TPOT (ms)": r.get("p90_tpot_ms"),
                "step time measured": _percent(r.get("measured_share")),
            }
        )
    return pl.DataFrame(rows)


def _percent(x: float | None) -> str | None:
    return None if x is None else f"{100 * x:.0f}%"


def recheck_table(rechecks: list[Recheck]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "configuration": rc.candidate.config_label,
                "replicas": rc.candidate.replicas,
                "per replica (req/s)": rc.rate
                if rc.rate is not None
                else rc.result.get("request_throughput"),
                "p90 TTFT (ms)": rc.result["p90_ttft_ms"],
                "p99 TTFT (ms)": rc.result["p99_ttft_ms"],
                "p90 TPOT (ms)": rc.result["p90_tpot_ms"],
                "p99 TPOT (ms)": rc.result["p99_tpot_ms"],
                "output per user (tok/s)": rc.result["tokens_per_s_per_user"],
                "meets SLA": "yes" if rc.meets_sla else "NO",
            }
            for rc in rechecks
        ]
    )


# All points: result column -> header (units in the header, so cells are bare numbers)
RESULT_HEADERS = {
    "config_label": "configuration",
    "request_rate": "rate (req/s)",
    "max_concurrency": "max concurrency",
    "num_gpus": "GPUs",
    "status": "status",
    "output_throughput": "output (tok/s)",
    THROUGHPUT_PER_GPU: "output per GPU (tok/s)",
    SPEED_PER_USER: "output per user (tok/s)",
    "p90_ttft_ms": "p90 TTFT (ms)",
    "p99_ttft_ms": "p99 TTFT (ms)",
    "p90_tpot_ms": "p90 TPOT (ms)",
    "p99_tpot_ms": "p99 TPOT (ms)",
    "failed_requests": "failed requests",
    "measured_share": "step time measured",
    "reason": "reason",
}


def _results_table(table: pl.DataFrame) -> pl.DataFrame:
    """Every point: its configuration (the label already names every configuration axis), its load, its metrics.
    Columns that say nothing for this table (no concurrency cap anywhere, every point ok) are left out."""
    wanted = [c for c in RESULT_HEADERS if c in table.columns]
    frame = table.select(wanted)
    for column in ("max_concurrency", "reason"):
        if column in frame.columns and frame[column].is_null().all():
            frame = frame.drop(column)
    if "status" in frame.columns and (frame["status"] == "ok").all():
        frame = frame.drop("status")
    if "measured_share" in frame.columns:
        frame = frame.with_columns(
            pl.col("measured_share").map_elements(_percent, return_dtype=pl.Utf8).alias("measured_share")
        )
    return frame.rename({c: RESULT_HEADERS[c] for c in frame.columns})


def _thresholds(sla: Sla) -> list[Threshold]:
    names = {"ttft": "TTFT", "tpot": "TPOT"}
    return [Threshold(names[b.metric], b.max_ms, f"SLA {b}") for b in sla.bounds if b.metric in names]


def _curve_stats(sla: Sla) -> dict[str, list[str]]:
    """Per panel, the statistics the SLA bounds (p90 when it bounds none), so the SLA line means something."""
    out = {}
    for panel, metric in (("TTFT", "ttft"), ("TPOT", "tpot")):
        stats = [STATS[b.stat] for b in sla.bounds if b.metric == metric]
        out[panel] = list(dict.fromkeys(stats)) or ["p90"]
    return out


def build_report(
    table: pl.DataFrame,
    meta: dict[str, Any],
    out_html: Path,
    *,
    target_rate: float | None,
    sla: Sla,
    top: int = 5,
    charts_dir: Path | None = None,
    rechecks: int = 3,
    on_phase: Callable[[str], None] = lambda _text: None,
) -> Report:
    ok = table.filter(pl.col("status") == "ok") if "status" in table.columns else table.clear()
    passing = sla.passing_ids(table)
    points = ok.with_columns(pl.col("point_id").is_in(list(passing)).alias("meets_sla"))
    plan = plan_capacity(table, target_rate, sla) if target_rate else None
    chosen = plan.winner.row if plan and plan.winner else None
    sections: list[Section] = [_summary_section(table, sla, plan)]
    # chart name -> chart, in the order the page draws them (and the files are saved)
    charts: dict[str, Any] = {}

    done: list[Recheck] = []
    if plan is not None and plan.ranked:
        sections.append(_plan_section(plan, top))
        done = _recheck_planned(plan, meta, sla, rechecks, on_phase)
        on_phase("drawing charts")
        sections.append(
            Section(
                "Check: the planned configurations simulated at their per-replica load",
                ["Each replica gets target / replicas req/s; these runs give the CDFs and breakdown below."],
                table=recheck_table(done),
            )
        )

    if points.height:
        sections += _load_sections(points, plan, chosen, sla, charts)
    sections += _planned_load_sections(done, charts)
    if plan is not None and plan.infeasible:
        sections.append(_infeasible_section(plan))
    sections.append(
        Section(
            "All points",
            [],
            table=_results_table(table),
        )
    )
    title = f"simperf sweep report: {meta.get('name', 'sweep')}"
    out_html.parent.mkdir(parents=True, exist_ok=True)
    on_phase("writing the page")
    out_html.write_text(render_page(title, sections, subtitle=_subtitle(meta)))
    files: list[Path] = []
    if charts_dir is not None:
        for name, chart in charts.items():
            on_phase(f"saving chart {name}")
            files += save_chart(chart, charts_dir / name)
    return Report(out_html, plan, files, done)


def _summary_section(table: pl.DataFrame, sla: Sla, plan: Plan | None) -> Section:
    """Points per status, the SLA and what the per-user and per-GPU numbers mean, and the plan in one sentence."""
    counts = table.group_by("status").len().sort("status") if table.height else None
    summary = [
        f"{table.height} points, "
        + ", ".join(f"{s}: {n}" for s, n in (counts.iter_rows() if counts is not None else [])),
        f"SLA: {sla}. Output tokens/s per user = 1000 / median TPOT; throughput per GPU = output throughput / "
        "GPUs per replica.",
    ]
    if plan is not None:
        summary.append(_plan_sentence(plan))
    # printed by `simperf report` since sweep 10, and missing from the page a reader is sent
    capped = capped_note(table)
    if capped is not None:
        summary.append(f"Note: {capped}.")
    return Section("Summary", summary)


def _plan_section(plan: Plan, top: int) -> Section:
    """The ranked configurations for the target rate, the winner first."""
    return Section(
        f"Plan for {plan.target_rate:g} req/s",
        [
            "A configuration sustains a rate when the SLA holds at every swept load up to it; replicas = "
            "ceil(target / sustained rate), assuming requests are spread evenly over replicas. Ranked by "
            "total GPUs, then sustained rate per GPU.",
        ],
        table=plan_table(plan, top),
        table_caption="Metrics at each configuration's sustained load. ≥: the SLA held at every swept "
        "load, so the sustained rate (marked +) and the headroom are lower bounds.",
        highlight_first_row=True,
    )


def _recheck_planned(
    plan: Plan, meta: dict[str, Any], sla: Sla, rechecks: int, on_phase: Callable[[str], None]
) -> list[Recheck]:
    """The first `rechecks` planned configurations simulated again at their per-replica load."""
    done: list[Recheck] = []
    for i, c in enumerate(plan.ranked[:rechecks], start=1):
        on_phase(f"re-checking {i} of {min(rechecks, len(plan.ranked))}: {c.config_label}")
        done.append(recheck(c, meta.get("base_dir", "."), sla))
    return done


def _load_sections(
    points: pl.DataFrame, plan: Plan | None, chosen: dict | None, sla: Sla, charts: dict[str, Any]
) -> list[Section]:
    """The Pareto front and the latency-vs-load curves of the swept points; their charts are added to `charts`."""
    front = pareto_front(points)
    charts["pareto"] = pareto_chart(points, front, chosen)
    pareto = Section(
        "Pareto front: throughput per GPU vs tokens/s per user",
        [
            f"{front.height} of {points.height} points are on the front (dashed). Filled markers meet the "
            "SLA; the star is the planner's choice at its sustained rate."
        ],
        chart=charts["pareto"],
    )
    # the planned configurations first, then the rest as swept, up to MAX_CURVES lines
    order = [c.config_label for c in plan.ranked] if plan else []
    labels = list(dict.fromkeys(order + points["config_label"].to_list()))[:MAX_CURVES]
    curves = points.filter(pl.col("config_label").is_in(labels))
    charts["latency_vs_load"] = latency_load_chart(
        curves, stats=_curve_stats(sla), thresholds=_thresholds(sla)
    )
    note = f" (the first {MAX_CURVES} configurations by plan rank)" if len(labels) == MAX_CURVES else ""
    return [pareto, Section("Latency vs load" + note, [], chart=charts["latency_vs_load"])]


def _planned_load_sections(done: list[Recheck], charts: dict[str, Any]) -> list[Section]:
    """The latency CDFs and step-time breakdown of the re-checked configurations (none without re-checks); their
    charts are added to `charts`."""
    sections: list[Section] = []
    if done:
        charts["latency_cdf"] = cdf_chart(
            {rc.candidate.config_label: {"TTFT": rc.ttft_ms, "TPOT": rc.tpot_ms} for rc in done}
        )
        sections.append(
            Section("TTFT and TPOT distributions at the planned load", [], chart=charts["latency_cdf"])
        )
    broken_down = [rc.breakdown for rc in done if rc.breakdown is not None]
    if broken_down:
        charts["step_breakdown"] = step_breakdown_chart(pl.concat(broken_down))
        sections.append(
            Section(
                "Step-time breakdown",
                [
                    "One representative prefill step (the run's mean new tokens) and decode step (mean batch, mean "
                    "KV length) per configuration, split by op kind, as `simperf predict --breakdown` prints "
                    "(none for a fleet: each of its servers has its own steps)."
                ],
                chart=charts["step_breakdown"],
            )
        )
    return sections


def _infeasible_section(plan: Plan) -> Section:
    """The configurations the planner ruled out, each with its reason."""
    return Section(
        "Configurations that cannot serve within the SLA",
        [],
        table=pl.DataFrame(
            {"configuration": [a for a, _ in plan.infeasible], "why": [b for _, b in plan.infeasible]}
        ),
    )


def _subtitle(meta: dict[str, Any]) -> str:
    spec = meta.get("spec", {})
    axes = ", ".join(spec.get("axes", {}))
    return f"axes: {axes}" if axes else ""


def _plan_sentence(plan: Plan) -> str:
    w = plan.winner
    if w is None:
        return f"No swept configuration serves {plan.target_rate:g} req/s within the SLA."
    # a fleet's row is the whole fleet behind its router, copied: not one server
    copies = f"{w.replicas} copies of the fleet" if w.fleet_servers else f"{w.replicas} replica(s)"
    each = (
        f"{w.fleet_servers} servers, {w.gpus_per_replica} GPU(s)"
        if w.fleet_servers
        else f"{w.gpus_per_replica} GPU(s)"
    )
    unit = "fleet" if w.fleet_servers else "replica"
    return (
        f"To serve {plan.target_rate:g} req/s: {copies} of {w.config_label} ({each} each, {w.total_gpus} GPUs in "
        f"all); one {unit} sustains "
        f"{w.sustained_text} req/s within the SLA"
        + (" (+: it met the SLA at every swept load, so it may sustain more)." if w.lower_bound else ".")
    )
