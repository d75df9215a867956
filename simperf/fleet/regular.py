"""A regular fleet's run: route the stream over the replicas (coupled or independent) and gather outcomes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simperf.fleet.autoscale import Membership
from simperf.fleet.coupled import DecisionObserver, run_coupled
from simperf.fleet.independent import ReplicaJob, remember_groups, route_all, run_jobs
from simperf.fleet.outcome import ServerOutcome, finish_outcome
from simperf.fleet.policies.base import RoutingPolicy
from simperf.fleet.progress import progress_bar
from simperf.fleet.replica import ReplicaSimulator
from simperf.fleet.servers import ServerGroup, ServerSlot, new_simulator
from simperf.fleet.stream import RouteStream
from simperf.scenario.models import Scenario
from simperf.sim.engine import _cyclic_gc_paused

# fleets with at least this many requests run their replicas in processes under executor: auto
AUTO_PROCESS_REQUESTS = 50_000


@dataclass
class RunSettings:
    scenario: Scenario
    calibration_dir: Path | None
    seed: int  # replica i uses seed + i (speculative accept-length draws)
    ignore_eos: bool
    keep_records: bool
    t0: float  # the stream's first send


def choose_executor(
    executor: str, workers: int | None, num_requests: int, num_servers: int
) -> tuple[str, int]:
    cpus = os.cpu_count() or 1
    count = workers or cpus
    if executor == "auto":
        executor = (
            "process" if num_requests >= AUTO_PROCESS_REQUESTS and num_servers > 1 and count > 1 else "serial"
        )
    return executor, count


def run_regular(
    slots: list[ServerSlot],
    groups: list[ServerGroup],
    policy: RoutingPolicy,
    stream: RouteStream,
    settings: RunSettings,
    observer: DecisionObserver | None = None,
    membership: Membership | None = None,
) -> tuple[np.ndarray, list[ServerOutcome]]:
    """(worker per request, one outcome per server)."""
    if policy.uses_load:
        return _run_coupled(slots, policy, stream, settings, observer, membership)
    assignment = route_all(policy, stream, membership)
    fleet = settings.scenario.fleet
    executor, workers = choose_executor(fleet.executor, fleet.workers, stream.n, len(slots))
    remember_groups(settings.scenario, groups, settings.calibration_dir)
    jobs = [_job(slot, assignment, stream, settings) for slot in slots]
    return assignment, run_jobs(jobs, executor, workers, fleet.ray_address)


def _job(slot: ServerSlot, assignment: np.ndarray, stream: RouteStream, settings: RunSettings) -> ReplicaJob:
    mine = np.flatnonzero(assignment == slot.index)
    requests = stream.requests
    hashes = None
    if requests.block_hashes is not None:
        hashes = [requests.block_hashes[i] for i in mine.tolist()]
    return ReplicaJob(
        scenario=settings.scenario,
        kind=slot.group.kind,
        group_index=slot.group.index,
        calibration_dir=settings.calibration_dir,
        server=slot.index,
        seed=settings.seed + slot.index,
        ignore_eos=settings.ignore_eos,
        global_ids=mine,
        input_len=requests.input_len[mine],
        output_len=requests.output_len[mine],
        arrival_s=requests.arrival_s[mine],
        hashes=hashes,
        block_tokens=requests.hash_block_tokens if hashes is not None else None,
        keep_records=settings.keep_records,
        t0=settings.t0,
    )


def _run_coupled(
    slots: list[ServerSlot],
    policy: RoutingPolicy,
    stream: RouteStream,
    settings: RunSettings,
    observer: DecisionObserver | None,
    membership: Membership | None,
) -> tuple[np.ndarray, list[ServerOutcome]]:
    overheads = settings.scenario.overheads
    block_tokens = stream.block_tokens if stream.hashes is not None else None
    replicas: list[ReplicaSimulator] = []
    for slot in slots:
        replica = new_simulator(
            slot.group,
            overheads,
            ReplicaSimulator,
            text_prompts=not settings.scenario.workload.tokenize_prompt,
        )
        replica.open(
            ignore_eos=settings.ignore_eos, seed=settings.seed + slot.index, block_tokens=block_tokens
        )
        replicas.append(replica)
    run = run_coupled(replicas, policy, stream, observer, membership)
    outcomes = []
    with _cyclic_gc_paused(), progress_bar("finishing replicas", len(replicas)) as ticker:
        for slot, replica in zip(slots, replicas, strict=True):
            records, stats = replica.close()
            outcomes.append(
                finish_outcome(
                    slot.index,
                    slot.group.kind,
                    slot.group.label,
                    records,
                    stats,
                    np.asarray(replica.global_ids, dtype=np.int64),
                    settings.keep_records,
                    settings.t0,
                )
            )
            ticker.tick()
    return run.assignment, outcomes
