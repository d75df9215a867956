"""Time the off-grid set on this GPU with the calibration backends, resumably (GPU side; no polars, no numpy).

Every sample is a calibration point, so it runs in the same worker subprocesses, through the same backend code,
with the same protocol as the tables: CUDA-graph replay, input sets (weights and activations alike) rotated past
twice the L2 so that no launch finds its inputs cached (docs/calibration.md "Timing method"). Each finished
sample (ok, failed or unsupported) is appended to the results file, fsynced, before the next one starts; a rerun
skips the ids already there, so an interrupted run continues where it stopped.

    python -m simperf.perfdb.offgrid time calibration/offgrid/samples.jsonl --out results.jsonl
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from simperf.calibrate.backends import WORKER_GROUPS, group_by_name, group_for
from simperf.calibrate.measure import STATUS_FAILED, error_columns
from simperf.calibrate.provenance import utc_now_iso
from simperf.calibrate.runner import (
    RunOptions,
    WorkerDied,
    WorkerProcess,
    _progress,
    _warm_up,
    gemm_work,
    probe_device,
    provenance_from_probe,
)
from simperf.jsonl import FsyncedJsonLines, read_journal_lines
from simperf.perfdb.offgrid.io import RESULT_FORMAT, read_samples

# what a result row keeps of the worker's row (the point itself is in the sample file, by id)
_KEPT = (
    "time_us", "time_us_p10", "time_us_p90", "repeats", "timing_method", "status", "error", "gpu", "gpu_name",
    "sm", "driver", "cuda", "torch", "flashinfer", "flash_mla", "deep_gemm", "date", "sm_clock_mhz",
    "mem_clock_mhz", "simperf_version",
)  # fmt: skip


def _cpu_probe() -> dict[str, Any]:
    from simperf.calibrate.provenance import detect_device

    return {**detect_device(use_torch=False).to_dict(), "gpu": "cpu"}


def done_ids(results: Path) -> set[int]:
    """Sample ids with a result (any status) in a results file; the header line has no id."""
    return {int(r["id"]) for r in read_journal_lines(results) if "id" in r}


def _by_group(samples: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Samples per worker group, GEMMs lightest first as the tables are timed (calibrate.runner.gemm_work)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for sample in samples:
        point = sample["point"]
        grouped.setdefault(group_for(point["op"], point["backend"]).name, []).append(sample)
    for group in grouped.values():
        group.sort(key=lambda sample: gemm_work(sample["point"]))
    order = [g.name for g in WORKER_GROUPS]
    return {name: grouped[name] for name in order if name in grouped}


def _result_row(sample: dict[str, Any], row: dict[str, Any], elapsed_s: float) -> dict[str, Any]:
    out = {"id": sample["id"], **{k: row.get(k) for k in _KEPT}, "wall_s": round(elapsed_s, 3)}
    if out["status"] is None:
        out["status"] = STATUS_FAILED
    return out


def _run_group(
    name: str,
    samples: list[dict[str, Any]],
    journal: FsyncedJsonLines,
    fallback: dict[str, Any],
    options: RunOptions,
    advance: Callable[[], None],
    deadline: float | None,
) -> bool:
    """Time one worker group's samples; True when the time budget stopped it."""
    group = group_by_name(name)
    worker: WorkerProcess | None = None
    try:
        for sample in samples:
            if deadline is not None and time.monotonic() > deadline:
                return True
            if worker is None:
                worker = WorkerProcess(group)
            timeout = options.first_point_timeout_s if worker.points_done == 0 else options.point_timeout_s
            started = time.monotonic()
            try:
                row = worker.measure(sample["point"], timeout)
            except WorkerDied as exc:
                row = {**fallback, **error_columns(STATUS_FAILED, str(exc)), "date": utc_now_iso()}
                options.console.log(f"[{name}] sample {sample['id']}: {exc}; restarting the worker")
                worker = None
            journal.append(_result_row(sample, row, time.monotonic() - started))
            if worker is not None and worker.proc.poll() is not None:
                worker = None  # exited on purpose after a fatal CUDA error
            advance()
    finally:
        if worker is not None:
            worker.close()
    return False


def _retimed(sample: dict[str, Any], retime: str | None) -> bool:
    point = sample["point"]
    return retime is not None and retime in (sample.get("category"), f"{point['op']}/{point['backend']}")


def time_samples(
    samples_path: Path,
    results_path: Path,
    time_budget_s: float | None = None,
    console: Console | None = None,
    cpu: bool = False,
    retime: str | None = None,
) -> int:
    """Time every sample of `samples_path` not yet in `results_path`; returns a process exit code. `cpu`: no GPU
    to probe (the tests' fake backend). `retime`: a category ("gemm", ...) or an op and backend
    ("attn_gqa_decode/flashinfer") whose samples are timed again even if done; the new rows are appended, and a
    results file's last row of an id is the one read."""
    console = console or Console(stderr=True)
    header, samples = read_samples(samples_path)
    done = done_ids(results_path)
    pending = [s for s in samples if int(s["id"]) not in done or _retimed(s, retime)]
    probe = _cpu_probe() if cpu else probe_device()
    journal = FsyncedJsonLines(results_path)
    if not results_path.exists() or results_path.stat().st_size == 0:
        journal.append({"format": RESULT_FORMAT, "samples": str(samples_path), "seed": header.get("seed"),
                        "gpu": probe.get("gpu"), "gpu_name": probe.get("gpu_name")})  # fmt: skip
    console.log(
        f"off-grid set {samples_path}: {len(samples)} samples, {len(pending)} to time on {probe.get('gpu_name')}"
    )
    by_group = _by_group(pending)
    started = time.monotonic()
    deadline = started + time_budget_s if time_budget_s else None
    options = RunOptions(console=console)
    fallback = provenance_from_probe(probe)
    stopped = False
    try:
        with _progress(console) as progress:
            task = progress.add_task("off-grid", total=len(pending))
            for name, group in by_group.items():
                # each group's kernels are compiled just before it is timed: compiling every group first spent a
                # whole 160 s budget on a cold H100 (flashinfer's JIT) and timed nothing (2026-11-24 run)
                _warm_up({name: [s["point"] for s in group]}, options, deadline)
                stopped = _run_group(
                    name, group, journal, fallback, options, lambda: progress.advance(task), deadline
                )
                if stopped:
                    break
    finally:
        journal.close()
    elapsed = time.monotonic() - started
    what = "time budget reached; rerun to continue" if stopped else "done"
    console.log(f"off-grid timing {what} after {elapsed:.0f} s; results in {results_path}")
    return 0
