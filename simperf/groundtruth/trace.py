"""What one profiled forward did, from a torch profiler chrome trace: GPU busy time against the host's issue time.

A forward is GPU-bound when its kernels run back to back, and host-bound when the GPU waits for the CPU to launch
the next kernel. The trace separates the two without any model: `gpu_busy_us` is the union of the kernel (and
memcpy/memset) intervals, `window_us` the profiled stretch from the first CPU op to the last GPU activity, and
`launches` the CUDA runtime/driver launch calls the CPU made. A host-bound forward has `gpu_busy_us` well below
`window_us`, and `host_us_per_launch` (the CPU's issue span over its launches) is then its host cost per kernel.

Used on `sglang.benchmark.one_batch --profile` traces (groundtruth/profile_forward.sh); the profiler slows the host
down, so the clean wall time of the same forward comes from an unprofiled run beside it.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
_RUNTIME_CATS = {"cuda_runtime", "cuda_driver"}
_LAUNCH = re.compile(r"(LaunchKernel|LaunchCooperativeKernel|GraphLaunch|cuLaunch)", re.IGNORECASE)


@dataclass(frozen=True)
class KernelGroup:
    name: str  # kernel name, cut at its first '(' or '<' and to 80 characters
    count: int
    total_us: float


@dataclass(frozen=True)
class TraceSummary:
    window_us: float  # first CPU op -> last GPU activity end
    gpu_busy_us: float  # union of kernel / memcpy / memset intervals
    kernels: int  # kernel events (memcpy/memset not counted)
    kernel_sum_us: float  # sum of kernel durations (overlapping streams counted twice)
    launches: int  # CUDA runtime / driver launch calls (kernels and graphs)
    host_issue_us: float  # first launch call start -> last launch call end
    host_us_per_launch: float  # host_issue_us / launches (0 with no launch)
    top: list[KernelGroup]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def short_name(name: str) -> str:
    """A kernel's name without its template arguments and parameter list, for grouping."""
    for sep in ("(", "<"):
        i = name.find(sep)
        if i > 0:
            name = name[:i]
    return name.strip()[:80]


def _union_us(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def summarize(events: list[dict[str, Any]], top: int = 25) -> TraceSummary:
    """Summary of one profiled region's chrome-trace events (complete events, ph == "X")."""
    gpu: list[tuple[float, float]] = []
    kernel_count, kernel_sum = 0, 0.0
    groups: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    launch_spans: list[tuple[float, float]] = []
    cpu_start = float("inf")
    for e in events:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        cat, ts, dur = e.get("cat", ""), float(e["ts"]), float(e["dur"])
        if cat in _GPU_CATS:
            gpu.append((ts, ts + dur))
            if cat == "kernel":
                kernel_count += 1
                kernel_sum += dur
                g = groups[short_name(e.get("name", "?"))]
                g[0] += 1
                g[1] += dur
        elif cat in _RUNTIME_CATS:
            if _LAUNCH.search(e.get("name", "")):
                launch_spans.append((ts, ts + dur))
        elif cat == "cpu_op":
            cpu_start = min(cpu_start, ts)
    if not gpu:
        raise ValueError("the trace has no GPU activity: was it recorded with the CUDA activity on?")
    gpu_end = max(stop for _, stop in gpu)
    start = min(cpu_start, min(s for s, _ in gpu), *(s for s, _ in launch_spans))
    issue = (max(e for _, e in launch_spans) - min(s for s, _ in launch_spans)) if launch_spans else 0.0
    ranked = sorted(groups.items(), key=lambda kv: -kv[1][1])[:top]
    return TraceSummary(
        window_us=round(gpu_end - start, 1),
        gpu_busy_us=round(_union_us(gpu), 1),
        kernels=kernel_count,
        kernel_sum_us=round(kernel_sum, 1),
        launches=len(launch_spans),
        host_issue_us=round(issue, 1),
        host_us_per_launch=round(issue / len(launch_spans), 2) if launch_spans else 0.0,
        top=[KernelGroup(name, int(c), round(t, 1)) for name, (c, t) in ranked],
    )


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The events of a chrome trace file (.json or .json.gz); ValueError when it is not one."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt") as f:
            data = json.load(f)
    except EOFError as e:  # a truncated .gz
        raise ValueError(f"not a complete trace file ({e})") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise ValueError("not a chrome trace: expected a list of events or an object with 'traceEvents'")
    return events
