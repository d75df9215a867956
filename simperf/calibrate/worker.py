"""The subprocess that measures points for one worker group (one backend family), isolated from the runner.

Protocol: the runner writes one JSON point per line on stdin; the worker answers one JSON line per point
on its *result* stream (the original stdout; the worker's own sys.stdout and C-level fd 1 are redirected
to stderr so library chatter cannot corrupt the protocol). EOF on stdin ends the worker.

    python -m simperf.calibrate.worker --group mla_flashinfer        # serve points
    python -m simperf.calibrate.worker --group mla_flashinfer --warm  # run each point once, untimed (JIT)
    python -m simperf.calibrate.worker --probe                        # print the device as JSON
    python -m simperf.calibrate.worker --ceilings                     # copy bandwidth, matmul rate
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

from simperf.calibrate.backends import group_by_name
from simperf.calibrate.measure import classify_exception, error_columns, is_fatal_error
from simperf.calibrate.provenance import DeviceInfo, current_clocks_mhz, detect_device, utc_now_iso
from simperf.calibrate.timing import TimingConfig

EXIT_CONTEXT_LOST = 3


@dataclass
class WorkerContext:
    device: DeviceInfo
    timing: TimingConfig
    cache: dict[str, Any] = field(default_factory=dict)  # backends keep reusable buffers here

    @property
    def l2_bytes(self) -> int | None:
        return self.device.l2_bytes

    @property
    def sm_major(self) -> int | None:
        return self.device.sm_major


def _result_stream() -> TextIO:
    """Keep the real stdout for results; send everything else written to fd 1 to stderr."""
    result_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(result_fd, "w", encoding="utf-8", buffering=1)


def measure_point(module: Any, point: dict[str, Any], ctx: WorkerContext) -> dict[str, Any]:
    row = dict(point)
    row.update(ctx.device.provenance_columns())
    try:
        measurement = module.run_point(point, ctx)
        if measurement is None:  # warm-only run
            row.update(error_columns("warm", "warm-up only"))
        else:
            row.update(measurement.as_columns())
    except Exception as exc:  # noqa: BLE001 - every failure becomes a row
        status, error = classify_exception(exc)
        row.update(error_columns(status, error))
    sm_clock, mem_clock = current_clocks_mhz()
    row.update(date=utc_now_iso(), sm_clock_mhz=sm_clock, mem_clock_mhz=mem_clock)
    return row


def timing_config(replay_target_ms: float | None) -> TimingConfig:
    """The timers' knobs: TimingConfig's defaults, with the replay target of `--replay-target-ms` if given."""
    return TimingConfig() if replay_target_ms is None else TimingConfig(target_ms=replay_target_ms)


def serve(group_name: str, warm_only: bool, replay_target_ms: float | None = None) -> int:
    results = _result_stream()
    group = group_by_name(group_name)
    device = detect_device(use_torch=group.needs_gpu)
    timing = timing_config(replay_target_ms)
    timing.warm_only = warm_only
    ctx = WorkerContext(device=device, timing=timing)
    module = importlib.import_module(group.module)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        point = json.loads(line)
        row = measure_point(module, point, ctx)
        results.write(json.dumps(row, separators=(",", ":")) + "\n")
        results.flush()
        if is_fatal_error(row.get("error")):
            # The CUDA context is poisoned after e.g. an illegal memory access: start afresh.
            return EXIT_CONTEXT_LOST
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simperf.calibrate.worker")
    parser.add_argument("--group")
    parser.add_argument("--warm", action="store_true")
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--ceilings", action="store_true")
    parser.add_argument("--replay-target-ms", type=float)
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(detect_device().to_dict()))
        return 0
    if args.ceilings:
        from simperf.calibrate.ceilings import measure_ceilings

        print(json.dumps(measure_ceilings()))
        return 0
    if not args.group:
        parser.error("--group is required")
    return serve(args.group, args.warm, args.replay_target_ms)


if __name__ == "__main__":
    sys.exit(main())
