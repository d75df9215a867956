"""Run a planned validation on this GPU, resumably and crash-isolated.

The kernels run in a child process (`python -m simperf.validate _worker DIR`). Before a sample starts, the
child journals a start marker; when it finishes, the result row. Both lines are fsynced, so an interrupt
loses at most the sample in flight, and the same command continues where it stopped. A kernel that kills the
CUDA context (an illegal memory access) ends the child: the parent records that sample as failed, with the
child's last error line, and starts a fresh child for the rest. Needs torch and the calibration backends only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simperf.jsonl import FsyncedJsonLines, read_journal_lines
from simperf.validate.plan import JOURNAL_NAME, check_plan_format, load_plan
from simperf.validate.program import StepProgram

EXIT_CONTEXT_LOST = 3
_ROW_PREFIX = "@row "
# The child that runs the kernels (tests substitute a CPU stand-in that crashes on purpose).
WORKER_COMMAND = [sys.executable, "-m", "simperf.validate", "_worker"]


class ValidateError(RuntimeError):
    """Validation cannot run here (with what to do about it)."""


def _journal(out_dir: Path) -> tuple[dict[int, dict[str, Any]], set[int]]:
    """(finished rows by sample id, ids started but not finished)."""
    done: dict[int, dict[str, Any]] = {}
    in_flight: set[int] = set()  # a start marker after the sample's last row (if any)
    for line in read_journal_lines(out_dir / JOURNAL_NAME):
        sid = int(line["sample_id"])
        if line.get("started"):
            in_flight.add(sid)
        else:
            done[sid] = line
            in_flight.discard(sid)
    return done, in_flight


def _load_runnable_plan(out_dir: Path) -> tuple[dict[str, Any], list[StepProgram]]:
    loaded = load_plan(out_dir)
    if loaded is None:
        raise ValidateError(f"{out_dir}: no complete plan (plan.json + programs.jsonl); plan it first")
    try:
        check_plan_format(loaded[0], out_dir)
    except ValueError as exc:
        raise ValidateError(str(exc)) from None
    return loaded


def done_samples(out_dir: Path) -> dict[int, dict[str, Any]]:
    return _journal(out_dir)[0]


def check_device(allow_gpu_mismatch: bool, planned_gpu: str | None):
    try:
        import torch
    except ImportError:
        raise ValidateError(
            "validate runs kernels on a CUDA GPU, and torch is not installed here (pip install -e '.[gpu]'); "
            "--plan-only writes the sampled steps without a GPU"
        ) from None
    if not torch.cuda.is_available():
        raise ValidateError(
            "validate runs kernels on a CUDA GPU, and torch sees none here; --plan-only works without"
        )
    from simperf.calibrate.provenance import detect_device

    device = detect_device()
    if planned_gpu and device.gpu != planned_gpu and not allow_gpu_mismatch:
        raise ValidateError(
            f"the scenario is for {planned_gpu} but this GPU is {device.gpu_name} ({device.gpu}); its kernel "
            "times would not validate the scenario's tables (--allow-gpu-mismatch runs it anyway)"
        )
    return device


def worker(out_dir: Path, replicas: int, allow_gpu_mismatch: bool, retry_failed: bool = False) -> int:
    """The child: measure every planned sample not yet journaled; one '@row {json}' stdout line per sample."""
    from simperf.validate.gpu import CURRENT_ACTIVITY, BuildContext, is_context_lost, run_program

    header, programs = _load_runnable_plan(out_dir)
    device = check_device(allow_gpu_mismatch, header.get("gpu"))
    import torch

    done, _ = _journal(out_dir)
    if retry_failed:
        done = {sid: row for sid, row in done.items() if not row.get("error")}
    journal = FsyncedJsonLines(out_dir / JOURNAL_NAME)
    ctx = BuildContext(device)
    try:
        for program in programs:
            if program.sample_id in done:
                continue
            journal.append({"sample_id": program.sample_id, "started": True})
            row = None
            for reps in dict.fromkeys((replicas, 1)):
                try:
                    row = run_program(program, ctx, reps)
                    break
                except torch.cuda.OutOfMemoryError as exc:
                    ctx.cache.clear()
                    torch.cuda.empty_cache()
                    first = str(exc).splitlines()[0][:200]
                    row = failed_row(
                        program, f"does not fit in {device.gpu_name} memory with {reps} replica(s): {first}"
                    )
                except Exception as exc:  # noqa: BLE001 - one sample's failure is reported, not fatal
                    if is_context_lost(exc):
                        first = str(exc).splitlines()[0][:300]
                        where = CURRENT_ACTIVITY["what"]
                        print(f"context lost while {where}: {type(exc).__name__}: {first}", file=sys.stderr)
                        return EXIT_CONTEXT_LOST
                    row = failed_row(program, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
                    break
            journal.append(row)
            print(_ROW_PREFIX + json.dumps({"n": len(programs), "row": row}), flush=True)
    finally:
        journal.close()
    return 0


def run_validation(
    out_dir: Path,
    replicas: int = 4,
    allow_gpu_mismatch: bool = False,
    on_sample: Callable[[int, int, dict[str, Any]], None] | None = None,
    retry_failed: bool = False,
) -> list[dict[str, Any]]:
    """Measure every planned sample (in child processes, restarted after a crash); all rows by sample id.
    retry_failed: run samples recorded as failed once more (a later row replaces the earlier one)."""
    _, programs = _load_runnable_plan(out_dir)
    args = [*WORKER_COMMAND, str(out_dir), "--replicas", str(replicas)]
    if allow_gpu_mismatch:
        args.append("--allow-gpu-mismatch")
    for attempt in range(len(programs) + 1):
        done, _ = _journal(out_dir)
        retry = retry_failed and attempt == 0
        if len(done) >= len(programs) and not retry:
            break
        # the child's stderr (library chatter, the crash message) goes to a file: a full pipe would block it
        with tempfile.TemporaryFile(mode="w+") as err_file:
            child = subprocess.Popen(
                args + (["--retry-failed"] if retry else []),
                stdout=subprocess.PIPE,
                stderr=err_file,
                text=True,
                env=_child_env(),
            )
            assert child.stdout is not None
            finished = set(done)
            for line in child.stdout:
                if line.startswith(_ROW_PREFIX) and on_sample is not None:
                    msg = json.loads(line[len(_ROW_PREFIX) :])
                    finished.add(int(msg["row"]["sample_id"]))
                    on_sample(len(finished), msg["n"], msg["row"])
            rc = child.wait()
            err_file.seek(0)
            stderr = err_file.read()
        if rc == 0:
            break
        if rc == 2 and "error:" in stderr:
            raise ValidateError(stderr.strip().splitlines()[-1].removeprefix("error: "))
        _, in_flight = _journal(out_dir)
        if not in_flight:
            raise ValidateError(f"the validation worker exited with {rc}: {stderr.strip()[-2000:]}")
        last = next((ln for ln in reversed(stderr.strip().splitlines()) if ln.strip()), f"exit code {rc}")
        journal = FsyncedJsonLines(out_dir / JOURNAL_NAME)
        by_id = {p.sample_id: p for p in programs}
        for sid in sorted(in_flight):
            row = failed_row(by_id[sid], f"crashed the GPU process (CUDA context lost): {last[:300]}")
            journal.append(row)
            if on_sample is not None:
                on_sample(len(done_samples(out_dir)), len(programs), row)
        journal.close()
    done = done_samples(out_dir)
    return [done[p.sample_id] for p in programs if p.sample_id in done]


def _child_env() -> dict[str, str]:
    """The parent's environment, with this simperf importable in the child (a source checkout, not installed)."""
    env = os.environ.copy()
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def failed_row(program: StepProgram, error: str) -> dict[str, Any]:
    return {
        **program.identity(),
        "predicted_us": None,
        "measured_us": None,
        "rel_error": None,
        "error": error,
    }
