"""Where sweep points run: in this process, on a local process pool, or on a Ray cluster.

Each executor yields rows as points finish (in completion order) so the runner can journal them at once.
Ray is optional and imported only when asked for.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Literal

from simperf.sweep.expand import SweepPoint

ExecutorName = Literal["serial", "process", "ray"]
EXECUTORS: tuple[str, ...] = ("serial", "process", "ray")
Evaluate = Callable[[SweepPoint], dict[str, Any]]


class ExecutorError(RuntimeError):
    """An executor that cannot start (Ray missing, a cluster address that does not answer)."""


def run_serial(points: Iterable[SweepPoint], evaluate: Evaluate) -> Iterator[dict[str, Any]]:
    for point in points:
        yield evaluate(point)


def run_local_processes(
    points: list[SweepPoint], evaluate: Evaluate, workers: int
) -> Iterator[dict[str, Any]]:
    # spawn, not fork: the parent may run a progress thread, and fork with live threads can deadlock
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = [pool.submit(evaluate, p) for p in points]
        for future in as_completed(futures):
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_ray(
    points: list[SweepPoint], evaluate: Evaluate, workers: int | None, address: str | None
) -> Iterator[dict[str, Any]]:
    try:
        import ray
    except ImportError:
        raise ExecutorError(
            "--executor ray needs Ray, which is not installed: pip install 'ray>=2' "
            "(on every node of the cluster, next to simperf)"
        ) from None
    started_here = False
    if not ray.is_initialized():
        try:
            if address:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        except (ConnectionError, RuntimeError) as e:
            raise ExecutorError(
                f"could not start or reach Ray{f' at {address}' if address else ''}: {e}"
            ) from e
        started_here = True
    remote = ray.remote(num_cpus=1, max_retries=1)(evaluate)
    pending = [remote.remote(p) for p in points]
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref)
        if started_here:
            ray.shutdown()


def run_points(
    points: list[SweepPoint],
    evaluate: Evaluate,
    executor: str,
    workers: int,
    ray_address: str | None = None,
) -> Iterator[dict[str, Any]]:
    if executor == "serial" or (executor == "process" and (workers <= 1 or len(points) <= 1)):
        return run_serial(points, evaluate)
    if executor == "process":
        return run_local_processes(points, evaluate, min(workers, len(points)))
    if executor == "ray":
        return run_ray(points, evaluate, workers, ray_address)
    raise ExecutorError(f"executor {executor!r}: allowed values: {', '.join(EXECUTORS)}")
