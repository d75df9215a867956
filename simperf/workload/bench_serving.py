"""Read the requests of a `sglang.bench_serving --output-file F --output-details` run as a trace.

bench_serving appends one JSON object per run to F. With `--output-details` the object carries per-request lists
(`benchmark()` in `sglang/benchmark/serving.py`, formerly `sglang/bench_serving.py`): `input_lens` (prompt_len),
`output_lens` (tokens actually generated), `ttfts`, `itls`, `generated_texts`, `errors`, and in recent versions
`start_times` (the client's `time.perf_counter()` when each request started, i.e. after the concurrency
semaphore). Without `start_times` the file records no arrival times: the trace says so (`has_times=False`) and a
scenario must replay it with `use_timestamps: false` and a `request_rate`.

Failed requests (a non-empty error, or no generated token) are not part of the offered load the run measured
lengths for; they are left out and listed in `Trace.skipped` with their index and error, never dropped silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simperf.jsonl import json_object_lines
from simperf.workload.trace import MAX_LENGTH, Trace, TraceError, _in_time_order

REQUIRED_KEYS = ("input_lens", "output_lens")


def read_bench_serving(path: Path, limit: int | None = None, run: int | None = None) -> Trace:
    runs = _runs(path)
    if run is None:
        if len(runs) > 1:
            listed = ", ".join(f"{i} (line {line_no})" for i, (line_no, _) in enumerate(runs))
            raise TraceError(
                f"{path}: holds {len(runs)} bench_serving runs ({listed}); choose one with `run`"
            )
        run = 0
    if not 0 <= run < len(runs):
        raise TraceError(f"{path}: run {run} requested, the file holds {len(runs)} run(s)")
    line_no, result = runs[run]
    where = f"{path}:{line_no}"
    inputs = _int_list(result, "input_lens", where)
    outputs = _int_list(result, "output_lens", where)
    n = len(inputs)
    if len(outputs) != n:
        raise TraceError(f"{where}: output_lens has {len(outputs)} entries, input_lens {n}")
    errors = result.get("errors") or [""] * n
    if not isinstance(errors, list) or len(errors) != n:
        raise TraceError(f"{where}: errors must be a list with one entry per request")
    starts = result.get("start_times")
    if starts is not None:
        starts = _float_list(result, "start_times", where)
        if len(starts) != n:
            raise TraceError(f"{where}: start_times has {len(starts)} entries, input_lens {n}")

    keep: list[int] = []
    skipped: list[str] = []
    for i in range(n):
        error = errors[i] or ""
        if not isinstance(error, str):  # was an internal error ('int' object has no attribute 'strip')
            raise TraceError(f"{where}: request {i}: errors entries are messages (text), got {error!r}")
        if error or outputs[i] < 1:
            skipped.append(f"request {i}: failed ({error.strip()[:80] or 'no output tokens'})")
        elif inputs[i] < 1:
            raise TraceError(f"{where}: request {i}: input_lens must be >= 1, got {inputs[i]}")
        else:
            keep.append(i)
    if limit is not None:
        keep = keep[:limit]
    if not keep:
        raise TraceError(f"{where}: no successful requests in this run")
    idx = np.asarray(keep)
    seconds = np.asarray(starts, dtype=np.float64)[idx] if starts is not None else np.zeros(idx.size)
    return _in_time_order(
        seconds,
        np.asarray(inputs, dtype=np.int64)[idx],
        np.asarray(outputs, dtype=np.int64)[idx],
        None,
        "bench_serving",
        has_times=starts is not None,
        skipped=tuple(skipped),
    )


def _runs(path: Path) -> list[tuple[int, dict[str, Any]]]:
    runs = []
    with path.open(encoding="utf-8") as f:
        for line_no, obj in json_object_lines(f, path, TraceError):
            missing = [k for k in REQUIRED_KEYS if k not in obj]
            if missing:
                raise TraceError(
                    f"{path}:{line_no}: bench_serving result without {', '.join(missing)} "
                    "(run bench_serving with --output-details)"
                )
            runs.append((line_no, obj))
    return runs


def _int_list(obj: dict[str, Any], key: str, where: str) -> list[int]:
    values = obj[key]
    if not isinstance(values, list):
        raise TraceError(f"{where}: {key} must be a list, got {type(values).__name__}")
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int | float) or int(v) != v:
            raise TraceError(f"{where}: request {i}: {key} must be an integer token count, got {v!r}")
        if v > MAX_LENGTH:
            raise TraceError(f"{where}: request {i}: {key} must be <= {MAX_LENGTH:,} tokens, got {v:,}")
    return [int(v) for v in values]


def _float_list(obj: dict[str, Any], key: str, where: str) -> list[float]:
    values = obj[key]
    if not isinstance(values, list):
        raise TraceError(f"{where}: {key} must be a list, got {type(values).__name__}")
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v):
            raise TraceError(f"{where}: request {i}: {key} must be a finite number, got {v!r}")
    return [float(v) for v in values]
