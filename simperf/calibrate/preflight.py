"""What `simperf calibrate` checks before it writes anything: options in range, a CUDA GPU with torch, and the
kernel libraries of the backends it would run. Without them every point would be recorded as failed, and a run
over existing tables would have replaced measurements with failures.

No torch here: the device is known from the probe subprocess (`runner.probe_device`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simperf.calibrate.points import Point
from simperf.hardware.catalog import gpu_keys

# The Python package (as the device probe names it) each table backend's kernels come from; torch-only backends
# (torch, torch_scaled_mm, torch_grouped_mm, triton fused MoE, ...) need nothing beyond torch.
BACKEND_PACKAGES: dict[str, str] = {
    "flashinfer": "flashinfer",
    "flashinfer_fa2": "flashinfer",
    "flashinfer_fa3": "flashinfer",
    "trtllm_gen": "flashinfer",
    "trtllm": "flashinfer",
    "cutlass": "flashinfer",
    "flashmla": "flash_mla",
    "flashmla_sparse": "flash_mla",
    "flashmla_kv": "flash_mla",
    "deep_gemm": "deep_gemm",
}
CPU_STAND_IN = "cpu"  # --gpu cpu: the test backend, no GPU


class CalibrateError(ValueError):
    """A calibration run that cannot start; the message names the option or what is missing."""


# --replay-target-ms: below ~5 ms a point is a handful of replays of one graph; above 1 s a grid takes hours
REPLAY_TARGET_MS_RANGE = (5.0, 1000.0)


def check_options(options: Any) -> None:
    """Every numeric option in range and --gpu a catalogue key, before the probe or any file."""
    keys = [*gpu_keys(), CPU_STAND_IN]
    if options.gpu is not None and options.gpu not in keys:
        from simperf.spelling import not_allowed

        raise CalibrateError(f"--gpu: {not_allowed(options.gpu, keys)}")
    if options.limit is not None and options.limit < 1:
        raise CalibrateError(f"--limit: got {options.limit}; measure at least 1 point")
    for name in ("heldout", "ragged"):
        if getattr(options, name) < 0:
            raise CalibrateError(f"--{name}: got {getattr(options, name)}; must be 0 or more")
    _check_resume_options(options)
    if options.grid_path is not None and Path(options.grid_path).is_dir():
        raise CalibrateError(f"--grid {options.grid_path}: is a directory; give a grid YAML file")
    if options.grid_path is not None and not Path(options.grid_path).is_file():
        raise CalibrateError(f"--grid {options.grid_path}: no such file")
    retime = getattr(options, "retime_from", None)
    if retime is not None:
        retime_gpu = table_gpu(retime)
        if retime_gpu is None:
            raise CalibrateError(f"--retime {retime}: no calibration tables there")
        if options.grid_path is not None:
            raise CalibrateError("--retime: measures the recorded points, not a grid's; drop --grid")
        for name in (
            "heldout",
            "ragged",
            "models",
        ):  # they shape a grid: with --retime they were read by nothing
            if getattr(options, name, None):
                raise CalibrateError(
                    f"--{name}: shapes the grid's points; --retime measures recorded points only"
                )
        out = options.out or Path("calibration") / (retime_gpu or "unknown")
        if Path(out).resolve() == Path(retime).resolve():
            raise CalibrateError(
                f"--retime {retime} --out {out}: every point is recorded there already; time into another "
                "--out, then fold it in with --merge-from"
            )
    if options.time_budget_s is not None and not options.time_budget_s > 0:
        raise CalibrateError(
            f"--time-budget-s: got {options.time_budget_s}; must be a positive number of seconds"
        )
    target = getattr(options, "replay_target_ms", None)
    if target is not None and not REPLAY_TARGET_MS_RANGE[0] <= target <= REPLAY_TARGET_MS_RANGE[1]:
        low, high = REPLAY_TARGET_MS_RANGE
        raise CalibrateError(f"--replay-target-ms: got {target}; allowed: {low:g} to {high:g} ms")


def _check_resume_options(options: Any) -> None:
    """--no-resume re-measures every recorded point, --retry-failed / --retry-unsupported only some of them: given
    together, one of the two was read by nothing and the run went on without a word."""
    if getattr(options, "resume", True):
        return
    for name in ("retry_failed", "retry_unsupported"):
        if getattr(options, name, False):
            status = name.removeprefix("retry_")
            raise CalibrateError(
                f"--{name.replace('_', '-')}: re-measures only the points recorded as {status}, and --no-resume "
                "re-measures every recorded point; give one of the two"
            )


def require_device(probe: dict[str, Any], what: str = "calibrate times kernels") -> None:
    """A CUDA GPU that torch can use; the probe of a machine without one has no gpu_name."""
    if probe.get("gpu_name"):
        return
    if not probe.get("torch"):
        why = "torch is not installed (pip install -e '.[gpu]')"
    else:
        why = f"torch {probe['torch']} sees no CUDA GPU"
    hint = " (--dry-run lists the points without a GPU)" if what.startswith("calibrate") else ""
    raise CalibrateError(f"{what} on a CUDA GPU and {why}; nothing was written{hint}")


def drop_unavailable(points: Sequence[Point], probe: dict[str, Any]) -> tuple[list[Point], list[str]]:
    """Points whose backend's library is installed, and a note per library that is not (its points are left
    out, not recorded as failures)."""
    kept: list[Point] = []
    missing: dict[str, set[str]] = {}
    for point in points:
        package = BACKEND_PACKAGES.get(point["backend"])
        if package is not None and not probe.get(package):
            missing.setdefault(package, set()).add(point["backend"])
            continue
        kept.append(point)
    notes = [
        f"left out backends {', '.join(sorted(backends))}: {package} is not installed"
        for package, backends in sorted(missing.items())
    ]
    return kept, notes


def table_gpu(directory: Path) -> str | None:
    """The GPU key the rows of a calibration directory's tables were measured on (their `gpu` column; "" where
    none says), or None where it holds no table."""
    import pyarrow.parquet as pq

    paths = sorted(Path(directory).glob("*.parquet"))
    found: dict[str, str] = {}  # GPU -> the first table naming it
    for path in paths:
        for gpu in pq.read_table(path, columns=["gpu"]).column("gpu").drop_null().unique().to_pylist():
            found.setdefault(str(gpu), path.name)
    if len(found) > 1:  # the first table's GPU stood for all: another GPU's rows were folded in unseen
        tables = ", ".join(f"{gpu} ({name})" for gpu, name in sorted(found.items()))
        raise CalibrateError(f"{directory}: tables measured on several GPUs: {tables}")
    return next(iter(found), "") if paths else None
