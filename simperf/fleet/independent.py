"""A regular fleet whose router never reads replica state (round_robin, random, consistent_hashing): the router
decides every request first, then each replica is an ordinary single-server run over its share of the stream.

The replicas do not interact, so they can run anywhere: in this process, in local processes or as Ray tasks.
Each job carries its requests and rebuilds its server group (tables, cost model) once per process; every run is
deterministic, so the three executors give identical metrics (tests/test_fleet_executors.py).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simperf.fleet.autoscale import Membership, MembershipCursor
from simperf.fleet.outcome import ServerOutcome, finish_outcome
from simperf.fleet.policies.base import RoutingPolicy
from simperf.fleet.progress import progress_bar
from simperf.fleet.route import NoLoads
from simperf.fleet.servers import ServerGroup, build_groups, new_simulator
from simperf.fleet.stream import RouteStream
from simperf.scenario.models import Scenario


def route_all(policy: RoutingPolicy, stream: RouteStream, membership: Membership | None = None) -> np.ndarray:
    """The worker of every request, in arrival order (among the servers registered at its arrival)."""
    assignment = np.empty(stream.n, dtype=np.int64)
    no_loads = NoLoads()
    cursor = MembershipCursor(membership, policy)
    with progress_bar("routing", stream.n, every=10_000) as ticker:
        for k in range(stream.n):
            request = stream.request(k)
            cursor.advance(request.time_s)
            assignment[k] = policy.select(request, no_loads)
            ticker.tick()
    return assignment


@dataclass
class ReplicaJob:
    """Everything one replica's run needs, picklable (process pools, Ray)."""

    scenario: Scenario
    kind: str
    group_index: int
    calibration_dir: Path | None
    server: int
    seed: int
    ignore_eos: bool
    global_ids: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    arrival_s: np.ndarray
    hashes: list | None
    block_tokens: int | None
    keep_records: bool
    t0: float


# server groups built in this process, by (scenario, kind, group, calibration directory)
_GROUPS: dict[tuple[str, str, int, str], ServerGroup] = {}


def _key(
    scenario: Scenario, kind: str, index: int, calibration_dir: Path | None
) -> tuple[str, str, int, str]:
    return (scenario.model_dump_json(), kind, index, str(calibration_dir))


def remember_groups(scenario: Scenario, groups: list[ServerGroup], calibration_dir: Path | None) -> None:
    """Groups the parent already built, so in-process jobs do not build them again."""
    for group in groups:
        _GROUPS[_key(scenario, group.kind, group.index, calibration_dir)] = group


def _group_for(job: ReplicaJob) -> ServerGroup:
    key = _key(job.scenario, job.kind, job.group_index, job.calibration_dir)
    group = _GROUPS.get(key)
    if group is None:
        kind_groups = getattr(job.scenario.fleet, job.kind)
        for built in build_groups(job.scenario, job.kind, kind_groups, job.calibration_dir):
            _GROUPS[_key(job.scenario, job.kind, built.index, job.calibration_dir)] = built
        group = _GROUPS[key]
    return group


def run_job(job: ReplicaJob) -> ServerOutcome:
    group = _group_for(job)
    simulator = new_simulator(
        group, job.scenario.overheads, text_prompts=not job.scenario.workload.tokenize_prompt
    )
    records, stats = simulator.run(
        job.input_len,
        job.output_len,
        job.arrival_s,
        None,
        job.ignore_eos,
        job.seed,
        block_hashes=job.hashes,
        block_tokens=job.block_tokens,
    )
    return finish_outcome(
        job.server, job.kind, group.label, records, stats, job.global_ids, job.keep_records, job.t0
    )


def run_jobs(
    jobs: list[ReplicaJob], executor: str, workers: int, ray_address: str | None
) -> list[ServerOutcome]:
    """Every job's outcome, in job order whatever order they finish in."""
    outcomes: dict[int, ServerOutcome] = {}
    with progress_bar("simulating replicas", len(jobs)) as ticker:
        for index, outcome in _execute(jobs, executor, workers, ray_address):
            outcomes[index] = outcome
            ticker.tick()
    return [outcomes[i] for i in range(len(jobs))]


def _execute(
    jobs: list[ReplicaJob], executor: str, workers: int, ray_address: str | None
) -> Iterator[tuple[int, ServerOutcome]]:
    if executor == "serial" or workers <= 1 or len(jobs) <= 1:
        for i, job in enumerate(jobs):
            yield i, run_job(job)
        return
    if executor == "process":
        # spawn, not fork: a progress thread may be running in the parent
        with ProcessPoolExecutor(
            max_workers=min(workers, len(jobs)), mp_context=multiprocessing.get_context("spawn")
        ) as pool:
            futures = {pool.submit(run_job, job): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                yield futures[future], future.result()
        return
    if executor == "ray":
        yield from _execute_ray(jobs, workers, ray_address)
        return
    raise ValueError(f"fleet.executor {executor!r}: allowed values: auto, serial, process, ray")


def _execute_ray(
    jobs: list[ReplicaJob], workers: int, address: str | None
) -> Iterator[tuple[int, ServerOutcome]]:
    try:
        import ray
    except ImportError:
        raise RuntimeError(
            "fleet.executor: ray needs Ray, which is not installed: pip install 'ray>=2'"
        ) from None
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=1, max_retries=1)(run_job)
    refs = {remote.remote(job): i for i, job in enumerate(jobs)}
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield refs[ref], ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref)
        if started_here:
            ray.shutdown()
