"""`predict` for a scenario with a `fleet:` section: the router and every server, simulated together."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simperf.fleet.autoscale import (
    Membership,
    check_schedule_reached,
    membership,
    registered_over_time,
    replica_seconds,
)
from simperf.fleet.coupled import DecisionObserver
from simperf.fleet.digest import Rows
from simperf.fleet.outcome import EXACT_TOKEN_LIMIT, ServerOutcome
from simperf.fleet.policies import make_policy
from simperf.fleet.regular import RunSettings, run_regular
from simperf.fleet.servers import ServerGroup, build_groups, expand
from simperf.fleet.stream import RouteStream
from simperf.fleet.summary import fleet_metrics, per_server, source_shares, timelines
from simperf.hardware.catalog import GpuSpec
from simperf.models.arch import ModelArch
from simperf.records import RequestRecords
from simperf.report.arguments import bench_arguments
from simperf.runsize import check_requests_size, check_workload_size, memory_limit_bytes
from simperf.scenario.models import Scenario
from simperf.scenario.resolved import ResolvedServing
from simperf.sim.engine import SimStats
from simperf.workload.requests import RequestSet, build_requests


class UnsupportedFleet(ValueError):
    """A fleet scenario asks for something the fleet model does not cover yet."""


# the SimStats counters a fleet's servers add up to
SUMMED_STATS = (
    "iterations",
    "extend_iterations",
    "decode_iterations",
    "retractions",
    "gpu_busy_s",
    "extend_host_s",
    "extend_step_s",
)


@dataclass
class FleetPrediction:
    scenario: Scenario
    groups: list[ServerGroup]
    result: dict  # bench_serving's keys over the whole fleet
    rows: Rows  # one row per completed request
    records: RequestRecords | None  # every streamed chunk, when the run was small enough to keep them
    outcomes: list[ServerOutcome]
    assignment: np.ndarray  # worker per request (the client-facing worker: decode server in PD fleets)
    policy: dict  # policy name(s) and what they did
    wall_s: float
    notes: dict[str, str] = field(default_factory=dict)
    timelines: dict = field(default_factory=dict)
    servers: list[dict] = field(default_factory=list)
    prefill_assignment: np.ndarray | None = None  # PD fleets
    autoscale: dict | None = (
        None  # what an autoscaling schedule did (registered servers, server time paid for)
    )

    @property
    def arch(self) -> ModelArch:
        return self.groups[0].arch

    @property
    def gpu(self) -> GpuSpec:
        return self.groups[0].gpu

    @property
    def num_gpus(self) -> int:
        return sum(g.count * g.gpus_per_server for g in self.groups)

    @property
    def serving(self) -> ResolvedServing:
        """The first group's server settings (callers written for one server, e.g. sweep rows)."""
        return self.groups[0].serving

    @property
    def stats(self) -> SimStats:
        """Every server's counters added up (iterations, retractions, GPU busy time, time by source)."""
        total = SimStats()
        for o in self.outcomes:
            for name in SUMMED_STATS:
                setattr(total, name, getattr(total, name) + getattr(o.stats, name))
            total.time_by_source_us = total.time_by_source_us + np.asarray(
                o.stats.time_by_source_us, dtype=float
            )
        return total

    def extra(self) -> dict:
        shares = source_shares(self.outcomes)
        return {
            "scenario": self.scenario.name,
            "model": self.arch.name,
            "fleet": {
                "servers": len(self.outcomes),
                "num_gpus": self.num_gpus,
                "groups": [
                    {
                        "kind": g.kind,
                        "label": g.label,
                        "count": g.count,
                        "gpu": g.gpu.key,
                        "gpus_per_server": g.gpus_per_server,
                        "tp": g.serving.layout.tp,
                        "dp_attention": g.serving.layout.dp_attention,
                        "kv_capacity_tokens_per_rank": g.serving.max_total_tokens,
                    }
                    for g in self.groups
                ],  # fmt: skip
                "router": self.policy,
                "per_server": self.servers,
                "timelines": self.timelines,
                "prefix_hit_rate": _hit_rate(self.rows),
                "records_kept": self.records is not None,
                "autoscale": self.autoscale,
            },
            "step_time_share_by_source": shares,
            "measured_share": shares["measured"] + shares["interpolated"],
            "rejected": [{"request": r, "reason": why} for o in self.outcomes for r, why in o.rejected],
            "simulation_wall_s": self.wall_s,
            "notes": dict(self.notes),  # the text output's simperf section, warnings included
        }


def _hit_rate(rows: Rows) -> float | None:
    prompt = int(rows.input_len.sum())
    return float(rows.cached_tokens.sum()) / prompt if prompt else None


def check_fleet_supported(scenario: Scenario) -> None:
    if scenario.workload.max_concurrency is not None:
        raise UnsupportedFleet(
            "workload.max_concurrency: not modelled for fleets yet (the client's semaphore couples every server); "
            "give a request_rate or replay a trace's timestamps"
        )


def predict_fleet(
    scenario: Scenario,
    calibration_dir: Path | None = None,
    observer: DecisionObserver | None = None,
    memory_limit: float | None = None,
) -> FleetPrediction:
    """memory_limit: bytes a run may be estimated to need (runsize.py; default: the documented limit)."""
    check_fleet_supported(scenario)
    limit = memory_limit_bytes() if memory_limit is None else memory_limit
    # one server's run is held to the limit; a fleet's was not: num_prompts 1e9 ran until the machine ran out of
    # memory, and predict's --max-memory-gb was accepted and read by nothing
    check_workload_size(scenario.workload, limit)
    fleet = scenario.fleet
    if fleet.is_pd:
        from simperf.fleet.pd import predict_pd_fleet

        return predict_pd_fleet(scenario, calibration_dir, observer, limit)
    groups = build_groups(scenario, "replicas", fleet.replicas, calibration_dir)
    _check_groups(groups)
    slots = expand(groups)
    requests = checked_requests(scenario, groups[0].arch.context_len, limit)
    if fleet.autoscale is not None:
        check_schedule_reached(fleet.autoscale, requests.arrival_s)
    stream = RouteStream(requests)
    seed = fleet.router.seed if fleet.router.seed is not None else scenario.workload.seed
    policy = make_policy(fleet.router.policy, fleet.router, len(slots), stream.block_tokens, seed)
    settings = run_settings(scenario, calibration_dir, requests)
    scaling = membership(fleet.autoscale) if fleet.autoscale is not None else None
    started = time.perf_counter()
    assignment, outcomes = run_regular(slots, groups, policy, stream, settings, observer, scaling)
    wall = time.perf_counter() - started
    policy_info = {"policy": policy.name, **policy.summary()}
    prediction = assemble(scenario, groups, requests, outcomes, assignment, policy_info, wall)
    if scaling is not None:
        add_autoscaling(prediction, scaling, len(slots))
    return prediction


def checked_requests(scenario: Scenario, context_len: int, memory_limit: float) -> RequestSet:
    """The workload's requests, refused when their streamed tokens would not fit the memory limit (a trace's size is
    known only once it is read)."""
    requests = build_requests(scenario.workload, context_len=context_len)
    check_requests_size(requests, memory_limit)
    return requests


def run_settings(scenario: Scenario, calibration_dir: Path | None, requests: RequestSet) -> RunSettings:
    return RunSettings(
        scenario=scenario,
        calibration_dir=calibration_dir,
        seed=scenario.workload.seed,
        ignore_eos=scenario.workload.ignore_eos,
        keep_records=int(requests.output_len.sum()) <= EXACT_TOKEN_LIMIT,
        t0=float(requests.arrival_s[0]) if len(requests) else 0.0,
    )


def _check_groups(groups: list[ServerGroup]) -> None:
    from simperf.pipeline import check_supported
    from simperf.scenario.overheads_read import check_overheads_read

    for group in groups:
        check_supported(group.scenario, group.field)
    check_overheads_read(groups[0].scenario, [(group.serving, group.arch) for group in groups])


def assemble(
    scenario: Scenario,
    groups: list[ServerGroup],
    requests: RequestSet,
    outcomes: list[ServerOutcome],
    assignment: np.ndarray,
    policy_info: dict,
    wall: float,
    client_kind: str = "replicas",
    extra_notes: dict[str, str] | None = None,
) -> FleetPrediction:
    facing = [o for o in outcomes if o.kind == client_kind]
    result, rows, records = fleet_metrics(facing, requests.sender_done_s)
    result = {**bench_arguments(scenario.workload), **result}
    fleet = scenario.fleet
    prediction = FleetPrediction(
        scenario, groups, result, rows, records, outcomes, assignment, policy_info, wall
    )
    prediction.timelines = timelines(
        rows, [o.server for o in facing], fleet.timeline_bins, float(result["duration"])
    )
    prediction.servers = per_server(facing, rows, float(result["duration"])) + [
        per_server([o], Rows.concat([]), float(result["duration"]))[0]
        for o in outcomes
        if o.kind != client_kind
    ]
    prediction.notes = fleet_notes(prediction, requests, extra_notes or {})
    from simperf.pipeline import vintage_notes

    for group in groups:  # third-party table vintages, as a single server reports them
        prediction.notes.update(vintage_notes(group.db, group.scenario.serving.sglang_version))
    return prediction


def _one_time_compiles(groups: list[ServerGroup], requests: RequestSet) -> str | None:
    """The single server's one-time-compile note where any group that runs extends (replicas or PD prefill
    servers) would compile fused-MoE variants on first sight of these prompts."""
    from simperf.pipeline import one_time_compile_note

    for group in groups:
        if group.kind == "decode":
            continue
        note = one_time_compile_note(group.arch, group.cost, requests.input_len)
        if note is not None:
            return note
    return None


def fleet_notes(prediction: FleetPrediction, requests: RequestSet, extra: dict[str, str]) -> dict[str, str]:
    shares = source_shares(prediction.outcomes)
    counts = np.bincount(
        prediction.assignment[prediction.assignment >= 0],
        minlength=len([o for o in prediction.outcomes if o.kind in ("replicas", "decode")]),
    )
    notes = {
        "Router policy": _policy_text(prediction.policy),
        "Servers (GPUs)": f"{len(prediction.outcomes)} ({prediction.num_gpus})",
        "Requests per server (min/max)": f"{int(counts.min()) if counts.size else 0} / {int(counts.max()) if counts.size else 0}",
        "Step time from measured tables": f"{100 * (shares['measured'] + shares['interpolated']):.1f}%",
        "Step time from roofline estimates": f"{100 * shares['roofline']:.1f}%",
        "Rejected requests": str(sum(len(o.rejected) for o in prediction.outcomes)),
        "Retractions": str(sum(o.stats.retractions for o in prediction.outcomes)),
        **extra,
    }
    hit = _hit_rate(prediction.rows)
    if requests.block_hashes is not None and hit is not None:
        notes["Prefix cache (fleet)"] = f"{100 * hit:.1f}% of prompt tokens hit"
    if requests.num_capped:
        from simperf.pipeline import CAPPED_NOTE

        notes[CAPPED_NOTE] = str(requests.num_capped)
    from simperf.pipeline import workload_notes  # as a single server's notes say them

    notes.update(workload_notes(requests))
    if requests.accept_len is not None:
        from simperf.pipeline import ACCEPT_LEN_UNUSED, ACCEPT_LEN_UNUSED_TEXT

        notes[ACCEPT_LEN_UNUSED] = ACCEPT_LEN_UNUSED_TEXT
    from simperf.pipeline import HOST_BOUND_EXTENDS, ONE_TIME_COMPILES, host_bound_note

    speeds = [g.scenario.hardware.resolved_host_speed for g in prediction.groups]
    host_bound = host_bound_note(prediction.stats, speeds)
    if host_bound is not None:
        notes[HOST_BOUND_EXTENDS] = host_bound
    compiles = _one_time_compiles(prediction.groups, requests)
    if compiles is not None:
        notes[ONE_TIME_COMPILES] = compiles
    if prediction.records is None:
        notes["Per-token records"] = "not kept (large run): ITL mean/std from sums, percentiles exact"
    idle = _idle_gpus(prediction.groups)
    if idle:  # counted in the fleet's GPUs (and a plan's), as the single-server prediction says it
        notes["Idle GPUs"] = idle
    return notes


def _idle_gpus(groups) -> str:
    """Groups whose servers hold more GPUs (hardware.count) than their layout uses (serving.tp)."""
    parts = []
    for g in groups:
        unused = g.gpus_per_server - g.serving.layout.tp
        if unused > 0:
            parts.append(
                f"{g.label}: {unused} of {g.gpus_per_server} per server (hardware.count above serving.tp)"
            )
    return "; ".join(parts)


def _policy_text(policy: dict) -> str:
    branches = policy.get("branches")
    text = policy.get("policy", "")
    if branches:
        text += " (" + ", ".join(f"{k} {v}" for k, v in branches.items()) + ")"
    return text


def add_autoscaling(prediction: FleetPrediction, scaling: Membership, pool: int) -> None:
    """Servers registered over time, and server time paid for against the whole pool for the whole run."""
    rows = prediction.rows
    duration = float(prediction.result["duration"])
    paid = replica_seconds(scaling, rows.server, rows.send_s, rows.send_s + rows.latency_s, duration)
    prediction.timelines["registered"] = registered_over_time(scaling, prediction.timelines["bin_edges_s"])
    prediction.autoscale = {
        "changes": [
            {"at_s": t, "registered": len(r)}
            for t, r in zip(scaling.change_s, scaling.registered, strict=True)
        ],
        "replica_seconds": paid,
        "static_replica_seconds": pool * duration,
    }
    prediction.notes["Autoscaling (replica-hours)"] = (
        f"{paid / 3600:.2f} against {pool * duration / 3600:.2f} for {pool} replicas throughout"
    )
