"""Kernel timing on the GPU: CUDA-graph replay for decode-style kernels, CUDA events for the rest.

Every timer takes a list of *launchers*, zero-argument callables that each launch the kernel on a different
set of input buffers; cycling through them keeps the working set larger than L2 so that a repeat does not
find its inputs cached (real serving runs other layers' kernels in between).

Graph replay: N launches captured in one graph, replayed R times, each replay bracketed by events; the
per-launch time is replay time / N. This is how SGLang runs decode (CUDA graphs), and it removes the
host launch gap that one-launch event timing adds to small kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from simperf.calibrate.measure import Measurement

Launcher = Callable[[], Any]

# Per-replay target: long enough that the graph launch (~10 us) is noise, short enough for many repeats.
_REPLAY_TARGET_US = 2000.0
_MAX_LAUNCHES_PER_GRAPH = 1024


class TimingConfig:
    """Knobs shared by the timers; `warm_only` runs each launcher once and measures nothing.

    `collect`, when a list, makes the timers hand their first launcher (with the buffers it closes over) to that
    list and measure nothing: `simperf validate` builds a step's kernel sequence from the calibration backends
    this way, so that a validated step runs exactly the kernels the tables timed.
    """

    def __init__(self, target_ms: float = 60.0, min_repeats: int = 5, max_repeats: int = 50) -> None:
        self.target_ms = target_ms
        self.min_repeats = min_repeats
        self.max_repeats = max_repeats
        self.warm_only = False
        self.collect: list[Launcher] | None = None


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile of ascending values, linear between order statistics (numpy's default method)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(samples_us: Sequence[float], method: str) -> Measurement:
    values = sorted(samples_us)
    return Measurement(
        time_us=percentile(values, 0.5),
        time_us_p10=percentile(values, 0.1),
        time_us_p90=percentile(values, 0.9),
        repeats=len(values),
        timing_method=method,
    )


def _one_pass_us(launchers: Sequence[Launcher]) -> float:
    import torch

    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for launch in launchers:
        launch()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / len(launchers)


def _warm(launchers: Sequence[Launcher], passes: int = 2) -> float:
    import torch

    for _ in range(passes):
        for launch in launchers:
            launch()
    torch.cuda.synchronize()
    return _one_pass_us(launchers)


def _collect_or_warm(launchers: Sequence[Launcher], cfg: TimingConfig) -> float | None:
    """The estimated µs per launch after warming up, or None when nothing is to be timed: in collect mode (the
    first launcher is handed over, not run) and in warm-only mode (after the warm-up)."""
    if cfg.collect is not None:
        cfg.collect.append(launchers[0])
        return None
    estimate_us = max(_warm(launchers), 0.5)
    return None if cfg.warm_only else estimate_us


def time_graph_replay(launchers: Sequence[Launcher], cfg: TimingConfig) -> Measurement | None:
    """Per-launch time from replaying a graph of N launches (cycling launchers). None if warm_only."""
    import torch

    estimate_us = _collect_or_warm(launchers, cfg)
    if estimate_us is None:
        return None
    n_sets = len(launchers)
    launches = max(n_sets, min(_MAX_LAUNCHES_PER_GRAPH, math.ceil(_REPLAY_TARGET_US / estimate_us)))
    launches = math.ceil(launches / n_sets) * n_sets
    # warm-up on the capture stream (library handles, workspaces), then the launches, cycling through the sets
    graph = capture_graph(launchers, [launchers[i % n_sets] for i in range(launches)])
    graph.replay()
    graph.replay()
    torch.cuda.synchronize()
    replay_us = estimate_us * launches
    repeats = int(min(cfg.max_repeats, max(cfg.min_repeats, cfg.target_ms * 1000.0 / replay_us)))
    samples = graph_replay_samples_us(graph, launches, repeats)
    del graph
    return summarize(samples, "cuda_graph_replay")


def capture_graph(warm_up: Sequence[Launcher], body: Sequence[Launcher]) -> Any:
    """A CUDA graph of `body`'s launches, after `warm_up`'s run eagerly on a side stream (what capture needs set up
    first: library handles, workspaces, NCCL communicators)."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for launch in warm_up:
            launch()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for launch in body:
            launch()
    return graph


def graph_replay_samples_us(graph: Any, launches: int, repeats: int) -> list[float]:
    """Per-launch time of each of `repeats` replays of a graph holding `launches` launches, between CUDA events."""
    import torch

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for i in range(repeats):
        starts[i].record()
        graph.replay()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1000.0 / launches for s, e in zip(starts, ends, strict=True)]


def time_gpu(launchers: Sequence[Launcher], cfg: TimingConfig) -> Measurement | None:
    """GPU time of a kernel SGLang launches eagerly (prefill / extend): graph replay, which leaves out the host
    launch cost that one-launch event timing adds (~20-30 µs on a small flashinfer prefill, measured by
    `simperf validate`); the cost model charges launch overhead separately. Kernels that cannot be captured
    fall back to event timing, and the timing method says so."""
    import torch

    if cfg.collect is not None or cfg.warm_only:
        return time_graph_replay(launchers, cfg)
    try:
        return time_graph_replay(launchers, cfg)
    except RuntimeError as exc:
        if "illegal memory access" in str(exc):
            raise
        torch.cuda.synchronize()
        measured = time_events(launchers, cfg)
        return None if measured is None else replace(measured, timing_method="cuda_events_capture_failed")


def time_events(launchers: Sequence[Launcher], cfg: TimingConfig) -> Measurement | None:
    """Per-launch event timing, cycling launchers (prefill/extend-style kernels that SGLang runs eagerly)."""
    import torch

    estimate_us = _collect_or_warm(launchers, cfg)
    if estimate_us is None:
        return None
    repeats = int(min(cfg.max_repeats * 2, max(cfg.min_repeats, cfg.target_ms * 1000.0 / estimate_us)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for i in range(repeats):
        starts[i].record()
        launchers[i % len(launchers)]()
        ends[i].record()
    torch.cuda.synchronize()
    samples = [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends, strict=True)]
    method = "cuda_events_rotating" if len(launchers) > 1 else "cuda_events"
    return summarize(samples, method)


def rotation_sets(bytes_per_set: int, l2_bytes: int | None, max_sets: int = 512) -> int:
    """How many input sets to cycle so that together they exceed twice the L2 (1 if one set already does)."""
    l2 = l2_bytes or 64 * 1024 * 1024
    if bytes_per_set <= 0:
        return 1
    return int(min(max_sets, max(1, math.ceil(2 * l2 / bytes_per_set))))


def random_tensor(shape: Sequence[int], dtype: Any, device: str = "cuda", scale: float = 1.0) -> Any:
    """Random normal data (never zeros: zeros run faster and hide indexing bugs), cast to dtype."""
    import torch

    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return (torch.randn(*shape, device=device, dtype=torch.bfloat16) * scale).to(dtype)
    return torch.randn(*shape, device=device, dtype=dtype) * scale


def write_shape_records(
    path: str, shapes: Sequence[dict], case: Callable[[dict], dict], labels: dict
) -> None:
    """Time each shape with `case` (a dict of its times) and append one JSON record per shape to `path`, flushed
    as it goes: the shape, its times or the error that stopped it (one failing shape leaves the others), the GPU's
    name, `labels` and the wall time. For the GPU benchmarks that time SGLang's kernel paths beside the tables'
    (benchmarks/)."""
    import json
    import time

    import torch

    labels = {"gpu": torch.cuda.get_device_properties(0).name} | labels
    with open(path, "a", encoding="utf-8") as f:
        for shape in shapes:
            t0 = time.time()
            try:
                record = dict(shape) | case(shape)
            except Exception as exc:  # one shape failing leaves the others
                record = dict(shape) | {"error": repr(exc)[:300]}
            record |= labels | {"wall_s": round(time.time() - t0, 1)}
            f.write(json.dumps(record) + "\n")
            f.flush()
            print(json.dumps(record), flush=True)
            torch.cuda.empty_cache()
