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
import math
import re
import statistics
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


@dataclass(frozen=True)
class DecodeReplays:
    """A served decode iteration on the GPU, split at its CUDA-graph replay (medians over the profiled iterations).

    The replay runs from the embedding lookup to the LM head's GEMM; between two replays the GPU runs the sampling
    (argmax) and the next iteration's input preparation, launched eagerly by the scheduler. `*_gap_us` is the time
    the GPU spends between consecutive kernels of that part (the union of their intervals subtracted from the part's
    span), `*_busy_us` the rest."""

    iterations: int
    period_us: float  # replay start to the next replay's start
    replay_busy_us: float
    replay_gap_us: float
    replay_kernels: float
    between_busy_us: float
    between_gap_us: float
    between_kernels: float

    @property
    def between_us(self) -> float:
        return self.between_busy_us + self.between_gap_us


# what opens a decode replay (the embedding lookup: index_select, a gather from 64 rows up), what follows it (the
# sampler's argmax), and a GEMM kernel
_REPLAY_START = re.compile(r"indexSelect|vectorized_gather_kernel")
_SAMPLER = re.compile(r"reduce_kernel.*ArgMax|ArgMax.*reduce_kernel")
_GEMM = re.compile(r"^(nvjet|sm90_xmma|cutlass|void cutlass)")


def _busy_and_gap(events: list[dict[str, Any]], start: float) -> tuple[float, float, float]:
    """(busy, idle, end) of `events` counted from `start`: busy is the union of their intervals after `start`,
    idle the rest of the span up to the last one's end."""
    spans = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events]
    end = max([start, *(stop for _, stop in spans)])
    busy = _union_us([(max(ts, start), stop) for ts, stop in spans if stop > start])
    return busy, end - start - busy, end


def named_ranges(events: list[dict[str, Any]], cat: str, name: str) -> list[tuple[float, float]]:
    """(start, end) of every event of category `cat` named `name` (e.g. SGLang's `scheduler.run_batch` ranges,
    `user_annotation` on the host and `gpu_user_annotation` on the GPU), in time order."""
    return sorted(
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in events
        if e.get("cat") == cat and e.get("name") == name
    )


def busy_and_short_gaps_us(events: list[dict[str, Any]], below_us: float) -> tuple[float, float]:
    """(GPU busy time: the union of the kernel / memcpy / memset intervals, the idle stretches between them shorter
    than `below_us`): what a profiled stretch kept the GPU busy with, and the GPU's own gaps between kernels, apart
    from the longer ones where it waited for the host."""
    spans = sorted(
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in events
        if e.get("ph") == "X" and e.get("cat") in _GPU_CATS and "dur" in e
    )
    short, end = 0.0, None
    for start, stop in spans:
        if end is not None and 0 < start - end < below_us:
            short += start - end
        end = stop if end is None else max(end, stop)
    return _union_us(spans), short


def decode_replays(events: list[dict[str, Any]], cut_edges: bool = True) -> DecodeReplays:
    """Split a profiled decode into replay and between-replay time. Only the forward stream's work counts (the
    stream the replays run on). A served decode (SGLang's /start_profile) is cut by the profiler's start and stop,
    so its first and last iterations are dropped; `cut_edges=False` keeps them (one_batch profiles whole steps, one
    at a time: its between-replay part is the host's wait, not the GPU's). ValueError when fewer than three
    iterations are left."""
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in _GPU_CATS and "dur" in e]
    starts_any = [e for e in gpu if _REPLAY_START.search(e.get("name", ""))]
    if not starts_any:
        raise ValueError("no decode replay found (no embedding lookup kernel)")
    stream = starts_any[0].get("args", {}).get("stream")
    k = sorted((e for e in gpu if e.get("args", {}).get("stream") == stream), key=lambda e: float(e["ts"]))
    starts = [i for i, e in enumerate(k) if _REPLAY_START.search(e.get("name", ""))]
    rows = []
    for s, nxt in zip(starts, starts[1:], strict=False):
        sampler = next((i for i in range(s, nxt) if _SAMPLER.search(k[i].get("name", ""))), None)
        if sampler is None:
            continue
        lm_head = max((i for i in range(s, sampler) if _GEMM.search(k[i].get("name", ""))), default=None)
        if lm_head is None:
            continue
        replay, between = k[s : lm_head + 1], k[lm_head + 1 : nxt]
        r_busy, r_gap, end = _busy_and_gap(replay, float(replay[0]["ts"]))
        b_busy, b_gap, _ = _busy_and_gap(between, end)
        period = float(k[nxt]["ts"]) - float(k[s]["ts"])
        rows.append((period, r_busy, r_gap, len(replay), b_busy, b_gap, len(between)))
    whole = rows[1:-1] if cut_edges else rows
    if len(whole) < 3:
        raise ValueError(f"{len(whole)} whole decode iterations in the trace; need at least 3")
    m = [statistics.median(col) for col in zip(*whole, strict=True)]
    return DecodeReplays(len(whole), *(round(x, 2) for x in m))


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The events of a chrome trace file (.json or .json.gz); ValueError when it is not one."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt") as f:
            data = json.load(f)
    except EOFError as e:  # a truncated .gz
        raise ValueError(f"not a complete trace file ({e})") from None
    except json.JSONDecodeError as e:  # json's words alone ("Expecting value ...") said not what
        raise ValueError(f"not valid JSON: {e}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 text (byte 0x{e.object[e.start]:02x})") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise ValueError("not a chrome trace: expected a list of events or an object with 'traceEvents'")
    for i, e in enumerate(events):  # a negative or NaN span was summed into busy time and kernel totals
        if e.get("ph") == "X":
            _check_span(i, e)
    return events


def _check_span(i: int, event: dict[str, Any]) -> None:
    """A complete event's ts and dur are numbers (a text ts failed as "could not convert string to float: 'a'",
    naming no event), dur >= 0 and finite."""
    for key in ("ts", "dur"):
        value = event.get(key)
        if key == "dur" and value is None:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or (key == "dur" and value < 0):
            what = "a duration is a number >= 0" if key == "dur" else "a timestamp is a finite number"
            raise ValueError(f"event {i} ({event.get('name')!r}): {key} {value!r}; {what}")
