"""Drives a calibration run: choose points, skip measured ones, run each worker group in a subprocess,
journal every result, restart crashed workers, compact to Parquet.

The runner itself never imports torch; the device is probed by a subprocess.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from simperf.calibrate import grid as gridmod
from simperf.calibrate.backends import (
    WORKER_GROUPS,
    WorkerGroup,
    backend_matches,
    backend_selectors,
    group_for,
)
from simperf.calibrate.journal import Journal, compact, recorded_points, recorded_rows
from simperf.calibrate.measure import STATUS_FAILED, STATUS_UNSUPPORTED, error_columns
from simperf.calibrate.points import Point, op_key_tuple, point_key
from simperf.calibrate.preflight import (
    CPU_STAND_IN,
    CalibrateError,
    check_options,
    drop_unavailable,
    require_device,
)
from simperf.calibrate.provenance import utc_now_iso
from simperf.output_paths import check_output_dir

# NVLink multicast stays off in every process we start (it can take a shared host's GPUs out of service).
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(SAFE_ENV)
    env.setdefault("PYTHONUNBUFFERED", "1")
    # The worker must import this very package, also when the runner was started from elsewhere.
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@dataclass
class RunOptions:
    out: Path | None = None
    grid_path: Path | None = None
    ops: list[str] | None = None
    backends: list[str] | None = None
    heldout: int = 0
    ragged: int = 0
    resume: bool = True
    retry_failed: bool = False
    retry_unsupported: bool = False
    dry_run: bool = False
    time_budget_s: float | None = None
    point_timeout_s: float = 180.0
    first_point_timeout_s: float = 600.0
    warm_parallel: int = 8
    gpu: str | None = None  # override the detected catalogue key (dry runs, tests)
    limit: int | None = None  # at most this many points (smoke runs)
    models: list[str] | None = None  # restrict the MoE family to these models
    retime_from: Path | None = None  # measure the points this directory's tables hold instead of a grid's
    # GPU time of replays each point is timed over (timing.TimingConfig.target_ms; None: its default). Dense
    # sweeps of cheap kernels take a shorter target: each point is still >= 5 replays of a >= 2 ms graph.
    replay_target_ms: float | None = None
    console: Console = field(default_factory=lambda: Console(stderr=True))


# ---------------------------------------------------------------- device probe


def probe_device(timeout_s: float = 300.0) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "simperf.calibrate.worker", "--probe"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=timeout_s,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def provenance_from_probe(probe: dict[str, Any]) -> dict[str, Any]:
    import simperf

    keys = ("gpu", "gpu_name", "sm", "driver", "cuda", "torch", "flashinfer", "flash_mla", "deep_gemm")
    cols = {k: probe.get(k) for k in keys}
    cols.update(source="measured", simperf_version=simperf.__version__)
    return cols


# ---------------------------------------------------------------- worker process


class WorkerDied(Exception):
    pass


class WorkerProcess:
    """One worker subprocess; `measure` sends a point and waits (with a timeout) for its row."""

    def __init__(self, group: WorkerGroup, warm: bool = False, replay_target_ms: float | None = None) -> None:
        cmd = [sys.executable, "-m", "simperf.calibrate.worker", "--group", group.name]
        if warm:
            cmd.append("--warm")
        if replay_target_ms is not None:
            cmd += ["--replay-target-ms", repr(float(replay_target_ms))]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_env(), bufsize=0
        )
        self._buffer = b""
        self.points_done = 0

    def measure(self, point: Point, timeout_s: float) -> dict[str, Any]:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(point) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerDied(self._death_reason(f"could not send point: {exc}")) from None
        line = self._readline(timeout_s)
        self.points_done += 1
        return json.loads(line)

    def _readline(self, timeout_s: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise WorkerDied(f"worker timed out after {timeout_s:.0f} s on this point (killed)")
            ready, _, _ = select.select([fd], [], [], min(remaining, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerDied(self._death_reason("worker exited"))
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def _death_reason(self, prefix: str) -> str:
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            return f"{prefix} (hung, killed)"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"{prefix}: worker crashed with {name}"
        return f"{prefix}: worker exited with code {code}"

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------------------- point selection


def select_points(options: RunOptions, probe: dict[str, Any]) -> list[Point]:
    """The points to measure; CalibrateError (one line, naming --ops or the grid file) when the selectors or the
    grid file cannot be expanded."""
    try:
        ops = gridmod.expand_ops(options.ops)
    except ValueError as e:
        raise CalibrateError(f"--ops: {e}") from None
    _check_backend_selectors(options.backends)
    _check_models_select_moe(options, ops)
    _check_ragged_selects_decode(options, ops)
    if options.retime_from is not None:
        points = [p for p in recorded_points(options.retime_from) if p["op"] in ops]
        return _filter_backends(points, options.backends, probe)
    try:
        grid = gridmod.load_grid(options.grid_path)
    except ValueError as e:
        raise CalibrateError(f"--grid {options.grid_path or '(default)'}: {e}") from None
    if options.models:
        grid["moe"]["models"] = _selected_moe_models(grid["moe"]["models"], options.models)
    if options.backends and any(b.startswith("fake") for b in options.backends):
        grid["fake"]["enabled"] = True
    try:
        sm_major = probe.get("sm_major")
        points = gridmod.all_points(
            grid, options.heldout, options.ragged, runnable=lambda p: group_runs_here(p, sm_major)
        )
    except ValueError as e:
        raise CalibrateError(f"--grid {options.grid_path or '(default)'}: {e}") from None
    points += comm_points(grid, probe)
    points = [p for p in points if p["op"] in ops]
    return _filter_backends(points, options.backends, probe)


def _check_backend_selectors(selectors: list[str] | None) -> None:
    """Each --backends selector names a table backend label or a worker group (backend_matches): any other
    selected no point, and the run listed zero points without a word."""
    labels, groups = backend_selectors()
    unknown = [s for s in selectors or [] if s not in labels and s not in groups]
    if unknown:
        raise CalibrateError(
            f"--backends: got {', '.join(unknown)}; allowed: the table backend labels {', '.join(labels)}, "
            f"or the worker groups {', '.join(groups)}"
        )


def _check_models_select_moe(options: RunOptions, ops: set[str]) -> None:
    """--models picks the grid's MoE shapes: with no MoE op selected it was read by nothing, and the run listed the
    same points as without it."""
    if options.models and not ops & set(gridmod.OP_CATEGORIES["moe"]):
        raise CalibrateError(
            "--models: picks the grid's MoE shapes, and --ops selects no MoE op; drop --models or add --ops moe"
        )


def _check_ragged_selects_decode(options: RunOptions, ops: set[str]) -> None:
    """--ragged draws decode batches of the decode attention ops (grid.RAGGED_OPS): with none of them selected it
    was read by nothing, and the run listed the same points as without it."""
    if options.ragged > 0 and not ops & set(gridmod.RAGGED_OPS):
        raise CalibrateError(
            f"--ragged: draws ragged batches of the decode attention ops ({', '.join(gridmod.RAGGED_OPS)}), and "
            "--ops selects neither; drop --ragged or add --ops attention"
        )


def _selected_moe_models(grid_models: list[str], wanted: list[str]) -> list[str]:
    """The grid's MoE models that --models names, by the grid's name (DeepSeek-V3) or the zoo's (deepseek-v3):
    a zoo name, or a model the grid has no MoE shapes of, selected nothing and listed zero points in silence."""
    from simperf.calibrate.shapes import GRID_NAMES

    spellings = {name: name for name in grid_models}
    spellings.update({zoo: grid for zoo, grid in GRID_NAMES.items() if grid in grid_models})
    unknown = [m for m in wanted if m not in spellings]
    if unknown:
        raise CalibrateError(
            f"--models: got {', '.join(unknown)}; the grid's MoE models are {', '.join(sorted(spellings))}"
        )
    return [name for name in grid_models if name in {spellings[m] for m in wanted}]


def _filter_backends(points: list[Point], backends: list[str] | None, probe: dict[str, Any]) -> list[Point]:
    if backends:
        points = [p for p in points if any(backend_matches(s, p["op"], p["backend"]) for s in backends)]
    else:
        points = [p for p in points if p["backend"] != "fake"]
    return collapse_unrunnable(points, probe.get("sm_major"))


def comm_points(grid: dict[str, Any], probe: dict[str, Any]) -> list[Point]:
    from simperf.calibrate.collectives import collective_points

    return collective_points(int(probe.get("device_count") or 0))


def group_runs_here(point: Point, sm_major: int | None) -> bool:
    """False when the point's kernels need a newer GPU architecture than the probed one."""
    needed = group_for(point["op"], point["backend"]).requires_sm_major
    return needed is None or (sm_major is not None and sm_major >= needed)


def collapse_unrunnable(points: list[Point], sm_major: int | None) -> list[Point]:
    """On a GPU that lacks a group's architecture, keep one grid point per op key: it is recorded as
    unsupported (with the reason) instead of hundreds of identical rows."""
    out: list[Point] = []
    seen: set[tuple[Any, ...]] = set()
    for point in points:
        if point["op"] in gridmod.COMM_OPS:
            out.append(point)
            continue
        if group_runs_here(point, sm_major):
            out.append(point)
            continue
        key = op_key_tuple(point)
        if point["sample"] == "grid" and key not in seen:
            seen.add(key)
            out.append(point)
    return out


def pending_points(points: list[Point], out_dir: Path, options: RunOptions) -> list[Point]:
    if not options.resume:
        return points
    recorded = recorded_rows(out_dir)
    pending = []
    for point in points:
        row = recorded.get(point_key(point))
        if row is None:
            pending.append(point)
        elif options.retry_failed and row.get("status") == STATUS_FAILED:
            pending.append(point)
        elif options.retry_unsupported and row.get("status") == STATUS_UNSUPPORTED:
            pending.append(point)
    return pending


# ---------------------------------------------------------------- run


def run(options: RunOptions) -> int:
    """Returns the exit status: 0, or 1 when points were to be measured and none was (calibrate.preflight
    raises CalibrateError, before anything is written, when the run cannot start at all)."""
    console = options.console
    check_options(options)
    probe = _probe(options)
    on_device = not options.dry_run and options.gpu != CPU_STAND_IN
    if on_device:
        require_device(probe)
    gpu_key = probe.get("gpu") or "unknown"
    out_dir = Path(options.out) if options.out else Path("calibration") / gpu_key
    if not options.dry_run:  # a dry run writes nothing, not even the directory
        _prepare_out_dir(out_dir, gpu_key, console)

    points, pending = _points_to_measure(options, probe, out_dir, on_device)
    by_group = _group_points(pending)
    console.log(
        f"gpu={gpu_key} ({probe.get('gpu_name')}), out={out_dir}: {len(points)} points selected, "
        f"{len(pending)} to measure"
    )
    for group_name, pts in by_group.items():
        console.log(f"  {group_name}: {len(pts)}")
    if options.dry_run:
        return 0

    if not options.gpu and probe.get("gpu_name") and not (out_dir / "device.json").exists():
        _write_ceilings(out_dir, probe, console)

    started = time.monotonic()
    deadline = started + options.time_budget_s if options.time_budget_s else None
    _warm_up(by_group, options, deadline)
    stopped_early, measured = _measure_groups(by_group, len(pending), out_dir, options, probe, deadline)
    elapsed = time.monotonic() - started
    if stopped_early:
        console.log(
            f"time budget reached after {elapsed:.0f} s; rerun to continue (resume skips done points)"
        )
    else:
        console.log(f"done in {elapsed:.0f} s")
    if pending and not measured:
        console.log(
            f"[bold red]nothing measured:[/] all {len(pending)} points failed or were unsupported; the tables "
            f"keep every earlier ok row ({out_dir})"
        )
        return 1
    return 0


def _probe(options: RunOptions) -> dict[str, Any]:
    """The device the run measures on: probed in a subprocess, or named by --gpu (probed too, for its details,
    unless this is a dry run); the fake backend's CPU run probes no GPU."""
    if options.gpu == "cpu":  # CPU-only runs (the fake backend): no GPU to probe, no torch import
        from simperf.calibrate.provenance import detect_device

        return {**detect_device(use_torch=False).to_dict(), "gpu": "cpu"}
    if options.gpu:
        probe: dict[str, Any] = {"gpu": options.gpu, "device_count": 0, "sm_major": None}
        if not options.dry_run:
            probe = {**probe_device(), "gpu": options.gpu}
        return probe
    return probe_device()


def _prepare_out_dir(out_dir: Path, gpu_key: str, console: Console) -> None:
    """The output directory checked (writable, of this GPU), created, and its leftover journal folded in."""
    check_output_dir(out_dir, "--out")
    check_same_gpu(out_dir, gpu_key)
    out_dir.mkdir(parents=True, exist_ok=True)
    compacted = compact(out_dir)  # a previous run may have been killed before compacting
    if compacted:
        console.log(f"compacted leftover journal: {compacted}")


def _points_to_measure(
    options: RunOptions, probe: dict[str, Any], out_dir: Path, on_device: bool
) -> tuple[list[Point], list[Point]]:
    """(the points selected, those of them still to measure): on the device, less those it cannot run; less
    those already in out_dir; at most --limit."""
    points = select_points(options, probe)
    if on_device:
        points, notes = drop_unavailable(points, probe)
        for note in notes:
            options.console.log(note)
    pending = pending_points(points, out_dir, options)
    if options.limit is not None:
        pending = pending[: options.limit]
    return points, pending


def _measure_groups(
    by_group: dict[str, list[Point]],
    total: int,
    out_dir: Path,
    options: RunOptions,
    probe: dict[str, Any],
    deadline: float | None,
) -> tuple[bool, int]:
    """Every group's points measured in turn, with one progress bar over the `total` points; returns (stopped by
    the time budget, rows measured ok)."""
    fallback = provenance_from_probe(probe)
    stopped_early = False
    measured = 0
    try:
        with _progress(options.console) as progress:
            task = progress.add_task("calibrate", total=total)
            for group_name, pts in by_group.items():
                if group_name == "nccl":
                    from simperf.calibrate.collectives import run_collectives

                    journal = Journal(out_dir)
                    run_collectives(
                        pts, journal, fallback, lambda: progress.advance(task), deadline, options.console
                    )
                    compact(out_dir, journal)
                    measured += journal.ok_rows
                    continue
                stopped_early, ok_rows = _run_group(
                    group_name, pts, out_dir, options, fallback, progress, task, deadline
                )
                measured += ok_rows
                if stopped_early:
                    break
    except (KeyboardInterrupt, SystemExit):
        # interrupted (Ctrl-C, SIGTERM): what finished is in the journal; fold it into the tables before leaving
        written = compact(out_dir)
        options.console.log(f"interrupted; finished points written to the tables: {written}")
        raise
    return stopped_early, measured


def gemm_work(point: Point) -> int:
    """Multiply-adds of a GEMM or batched-GEMM point (0 for other ops): the order its group is timed in."""
    if point["op"] not in ("gemm", "bmm"):
        return 0
    return int(point.get("batch") or 1) * int(point["m"]) * int(point["n"]) * int(point["k"])


def _group_points(points: Sequence[Point]) -> dict[str, list[Point]]:
    """Points per worker group, in the groups' order. GEMMs are timed lightest first: a large GEMM holds the GPU
    at its power limit, and the SM clock it leaves behind (1185-1500 MHz on the H100, recorded in sm_clock_mhz)
    slowed the memory-bound m = 1 point timed next by up to 23% (Qwen3-32B's gate_up projection: 210.8 us where
    three timings on a GPU at its boost clock, as a served decode runs it, gave 187.5; docs/perfdb.md)."""
    order = [g.name for g in WORKER_GROUPS] + ["nccl"]
    grouped: dict[str, list[Point]] = {}
    for point in points:
        name = "nccl" if point["op"] in gridmod.COMM_OPS else group_for(point["op"], point["backend"]).name
        grouped.setdefault(name, []).append(point)
    for group in grouped.values():
        group.sort(key=gemm_work)  # stable: every other op keeps the grid's order
    return {name: grouped[name] for name in order if name in grouped}


def _run_group(
    group_name: str,
    points: list[Point],
    out_dir: Path,
    options: RunOptions,
    fallback: dict[str, Any],
    progress: Progress,
    task: Any,
    deadline: float | None,
) -> tuple[bool, int]:
    """Measure one group's points; returns (stopped by the time budget, rows measured ok)."""
    from simperf.calibrate.backends import group_by_name

    group = group_by_name(group_name)
    journal = Journal(out_dir)
    console = options.console
    worker: WorkerProcess | None = None
    counts = {"ok": 0, STATUS_FAILED: 0, STATUS_UNSUPPORTED: 0}
    stopped = False
    t0 = time.monotonic()
    try:
        for index, point in enumerate(points):
            if deadline is not None and time.monotonic() > deadline:
                stopped = True
                break
            if worker is None:
                worker = WorkerProcess(group, replay_target_ms=options.replay_target_ms)
            timeout = options.first_point_timeout_s if worker.points_done == 0 else options.point_timeout_s
            try:
                row = worker.measure(point, timeout)
            except WorkerDied as exc:
                row = {**point, **fallback, **error_columns(STATUS_FAILED, str(exc)), "date": utc_now_iso()}
                console.log(f"[{group_name}] point {index}: {exc}; restarting the worker")
                worker = None
            journal.append(row)
            counts[row.get("status") or STATUS_FAILED] = counts.get(row.get("status") or STATUS_FAILED, 0) + 1
            if worker is not None and worker.proc.poll() is not None:
                worker = None  # exited on purpose after a fatal CUDA error
            progress.advance(task)
            if not console.is_terminal and (index + 1) % 100 == 0:
                console.log(f"[{group_name}] {index + 1}/{len(points)} points, {time.monotonic() - t0:.0f} s")
    finally:
        if worker is not None:
            worker.close()
        written = compact(out_dir, journal)
    console.log(f"[{group_name}] {counts} in {time.monotonic() - t0:.0f} s; tables now {written}")
    return stopped, journal.ok_rows


def _warm_up(by_group: dict[str, list[Point]], options: RunOptions, deadline: float | None) -> None:
    """JIT-compile every module the run needs, in parallel processes, before any timing starts."""
    jobs: list[tuple[WorkerGroup, Point]] = []
    for group_name, pts in by_group.items():
        if group_name == "nccl":
            continue
        from simperf.calibrate.backends import group_by_name

        group = group_by_name(group_name)
        if not group.jit:
            continue
        module = importlib.import_module(group.module)
        signature: Callable[[Point], Any] | None = getattr(module, "compile_signature", None)
        if signature is None:
            continue
        seen: set[Any] = set()
        for point in pts:
            sig = signature(point)
            if sig not in seen:
                seen.add(sig)
                jobs.append((group, point))
    if not jobs:
        return
    console = options.console
    console.log(f"warm-up: compiling {len(jobs)} kernel configurations in parallel")
    t0 = time.monotonic()

    def warm(job: tuple[WorkerGroup, Point]) -> str:
        group, point = job
        worker = WorkerProcess(group, warm=True)
        try:
            row = worker.measure(point, options.first_point_timeout_s)
            return f"{group.name} {row.get('backend')}: {row.get('status')} {row.get('error') or ''}"[:300]
        except WorkerDied as exc:
            return f"{group.name}: {exc}"
        finally:
            worker.close()

    with ThreadPoolExecutor(max_workers=options.warm_parallel) as pool:
        for message in pool.map(warm, jobs):
            console.log(f"  warm {message}")
    console.log(f"warm-up done in {time.monotonic() - t0:.0f} s")


def check_same_gpu(out_dir: Path, gpu_key: str) -> None:
    """Refuse to measure into a directory whose device.json names another GPU: its tables would mix two GPUs'
    rows under one key (an H100 run given --out calibration/h200 replaced H200 rows without a word)."""
    record = out_dir / "device.json"
    if not record.exists() or gpu_key in ("", "unknown", CPU_STAND_IN):
        return
    try:
        theirs = (json.loads(record.read_text(encoding="utf-8")).get("device") or {}).get("gpu")
    except (OSError, ValueError):
        return
    if theirs and theirs != gpu_key:
        raise CalibrateError(
            f"--out {out_dir}: holds {theirs} tables (device.json) and this GPU is {gpu_key}; measuring into it "
            f"would mix two GPUs in one table: give --out calibration/{gpu_key} or a new directory"
        )


def _write_ceilings(out_dir: Path, probe: dict[str, Any], console: Console) -> None:
    try:
        out = subprocess.run(
            [sys.executable, "-m", "simperf.calibrate.worker", "--ceilings"],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=300,
            check=True,
        )
        ceilings = json.loads(out.stdout.strip().splitlines()[-1])
    except Exception as exc:  # noqa: BLE001 - ceilings are documentation, not a reason to stop
        console.log(f"device ceilings not measured: {exc}")
        return
    record = {"device": probe, "ceilings": ceilings, "date": utc_now_iso()}
    (out_dir / "device.json").write_text(json.dumps(record, indent=2) + "\n")
    console.log(f"device ceilings: {ceilings}")


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
