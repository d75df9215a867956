"""Reduce what groundtruth/profile_corpus_waves.sh and groundtruth/host_jitter.py brought back (committed in
groundtruth/experiments/waves-gc-h200/, host-jitter-h200/ and first-wave-h200/) to the tables of docs/overheads.md
"Slow launches" and "One-time compiles".

For each closed-loop wave of the served DeepSeek-V2-Lite c16 runs (16 requests of 1,024 tokens, 512 outputs): the
forward entries of its extends (the server's per-request export), and over each launch (one forward entry to the
next) the scheduler main thread's time on a CPU and runnable on a run queue (groundtruth/thread_sampler.py), and
the scheduler's garbage collections of 1 ms or more inside it. For the concurrency-1 run, each request's forward
entry to its prefill finishing. For the host alone: a fixed piece of Python work timed over and over.

usage: python3 groundtruth/reduce_waves.py [EXPERIMENTS_DIR]   (default groundtruth/experiments)
"""

from __future__ import annotations

import gzip
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

WAVE = 16  # requests per wave: bench_serving's --max-concurrency of the c16 runs
RUNS = ("c16-1k-512", "c16-1k-512-frozen")


@dataclass(frozen=True)
class Launch:
    run: str
    wave: int
    wall_ms: float  # one forward entry to the next
    cpu_ms: float  # the scheduler's main thread on a CPU meanwhile
    runqueue_ms: float  # ... runnable but waiting for a CPU
    gc_ms: float  # the scheduler's collections of >= 1 ms that started meanwhile


def _jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _thread_samples(path: Path) -> np.ndarray:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return np.loadtxt(f, delimiter=",", skiprows=1, dtype=np.int64).reshape(-1, 3)


def _over(samples: np.ndarray, start_s: float, end_s: float) -> tuple[float, float] | None:
    wall = samples[:, 0] / 1e9
    if not (wall[0] <= start_s and end_s <= wall[-1]):
        return None
    i0, i1 = np.searchsorted(wall, start_s), np.searchsorted(wall, end_s)
    return (samples[i1, 1] - samples[i0, 1]) / 1e6, (samples[i1, 2] - samples[i0, 2]) / 1e6


def _requests(d: Path, completion_tokens: int) -> list[dict]:
    rows = [
        r
        for r in _jsonl(d / "request-metrics.jsonl.gz")
        if r.get("prompt_tokens") == 1024 and r.get("completion_tokens") == completion_tokens
    ]
    return sorted(rows, key=lambda r: r["request_received_ts"])


def wave_launches(d: Path) -> list[Launch]:
    """Every extend launch of the c16 runs' waves that the thread samples cover."""
    gcs = [g for g in _jsonl(d / "gc.jsonl.gz") if g["title"].startswith("sglang::scheduler")]
    samples = {run: _thread_samples(d / f"sched-{run}.csv.gz") for run in RUNS}
    out = []
    rows = _requests(d, 512)
    for k in range(0, len(rows), WAVE):
        entries = sorted({r["forward_entry_time"] for r in rows[k : k + WAVE]})
        for start, end in zip(entries, entries[1:], strict=False):
            for run, s in samples.items():
                over = _over(s, start, end)
                if over is None:
                    continue
                gc_ms = sum(g["duration_ms"] for g in gcs if start <= g["start_s"] < end)
                out.append(Launch(run, k // WAVE, (end - start) * 1e3, over[0], over[1], gc_ms))
    return out


def single_request_prefills(d: Path) -> list[tuple[float, float, float]]:
    """(wall, CPU, run-queue ms) from forward entry to prefill finished, each request of the concurrency-1 run."""
    samples = _thread_samples(d / "sched-c1-1k-256.csv.gz")
    out = []
    for r in _requests(d, 256):
        over = _over(samples, r["forward_entry_time"], r["prefill_finished_time"])
        if over is not None:
            out.append(((r["prefill_finished_time"] - r["forward_entry_time"]) * 1e3, *over))
    return out


def host_jitter(path: Path, window: int = 8) -> list[dict[str, float]]:
    """Per phase of host_jitter.py: the fixed work's CPU ms (median, p90) and, over `window` consecutive
    repetitions (about one eager launch), the median, p90 and p99 of their sum, the share of repetitions 1.3x the
    median or slower, and the steal jiffies seen."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        phases = json.load(f)["phases"]
    out = []
    for phase in phases:
        cpu = np.array([r["cpu_ms"] for r in phase["repetitions"]])
        sums = np.convolve(cpu, np.ones(window), "valid")
        out.append(
            {
                "busy_processes": phase["busy_processes"],
                "repetitions": len(cpu),
                "cpu_median_ms": float(np.median(cpu)),
                "cpu_p90_ms": float(np.percentile(cpu, 90)),
                "window_median_ms": float(np.median(sums)),
                "window_p90_ms": float(np.percentile(sums, 90)),
                "window_p99_ms": float(np.percentile(sums, 99)),
                "slow_share": float(np.mean(cpu >= 1.3 * np.median(cpu))),
                "steal_jiffies": float(sum(r["steal_jiffies"] for r in phase["repetitions"])),
            }
        )
    return out


FIRST_WAVE_LOADS = (
    "c1-1k-256",
    "c16-1k-512",
    "c16-1k-512-rr0.8",
    "c16-1k-512-rr0.8-again",
    "c16-1k-512-rr0.8-seed2",
)


@dataclass(frozen=True)
class LoadTTFT:
    load: str
    median_ms: float  # bench_serving's median TTFT
    first_wave_ms: float  # ... of the first WAVE requests (sent at once)
    rest_ms: float  # ... of the others


@dataclass(frozen=True)
class Compile:
    load: str  # the load during which Triton wrote the kernel to its cache
    kernel: str
    first_s: float  # its first and last cache file's modification time
    last_s: float


def first_wave_ttfts(d: Path) -> list[LoadTTFT]:
    """The first-wave check's closed loops (groundtruth/experiments/first-wave-h200): median TTFT overall, of the
    first wave and of the rest, from bench_serving's per-request TTFTs (in request order)."""
    out = []
    for load in FIRST_WAVE_LOADS[1:]:
        ttft = np.array(_jsonl(d / f"bench-{load}.jsonl.gz")[0]["ttfts"]) * 1e3
        out.append(
            LoadTTFT(
                load, float(np.median(ttft)), float(np.median(ttft[:WAVE])), float(np.median(ttft[WAVE:]))
            )
        )
    return out


def _cache_listing(path: Path) -> dict[str, float]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return {name: float(mtime) for mtime, name in (line.split(" ", 1) for line in f.read().splitlines())}


def triton_compiles(d: Path) -> list[Compile]:
    """The kernels Triton compiled during each load: entries of its cache directory (listed after each load by
    profile_corpus_waves.sh) that the listing before did not hold."""
    out, before = [], _cache_listing(d / f"triton-{FIRST_WAVE_LOADS[0]}.txt.gz")
    for load in FIRST_WAVE_LOADS[1:]:
        after = _cache_listing(d / f"triton-{load}.txt.gz")
        entries: dict[str, list[float]] = {}
        for name in sorted(set(after) - set(before)):
            entries.setdefault(name.split("/")[0], []).append(after[name])
        for entry, times in entries.items():
            source = next(n for n in after if n.startswith(entry + "/") and n.endswith(".source"))
            out.append(Compile(load, source.split("/")[1].removesuffix(".source"), min(times), max(times)))
        before = after
    return sorted(out, key=lambda c: c.first_s)


def compile_cpu(
    d: Path, compiles: list[Compile], kernel: str, load: str = "c16-1k-512-rr0.8"
) -> tuple[float, float, float]:
    """(wall, CPU, run-queue ms) of the scheduler's main thread from the first file to the last that Triton wrote
    for `kernel` during `load` (all its variants, among `compiles`: triton_compiles(d))."""
    during = [c for c in compiles if c.load == load and c.kernel == kernel]
    start, end = min(c.first_s for c in during), max(c.last_s for c in during)
    cpu, runqueue = _over(_thread_samples(d / f"sched-{load}.csv.gz"), start, end) or (float("nan"),) * 2
    return (end - start) * 1e3, cpu, runqueue


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("groundtruth/experiments")
    print("| run | wave | launch (ms) | scheduler on a CPU (ms) | on a run queue (ms) | GC >= 1 ms (ms) |")
    print("|---|---:|---:|---:|---:|---:|")
    for x in wave_launches(root / "waves-gc-h200"):
        print(
            f"| {x.run} | {x.wave} | {x.wall_ms:.1f} | {x.cpu_ms:.1f} | {x.runqueue_ms:.1f} | {x.gc_ms:.1f} |"
        )
    print("\nconcurrency 1, forward entry to prefill finished (wall, CPU, run queue ms):")
    for wall, cpu, rq in single_request_prefills(root / "waves-gc-h200"):
        print(f"  {wall:.1f} {cpu:.1f} {rq:.1f}")
    print(
        "\n| busy processes | repetitions | CPU ms median | p90 | 8-rep window median | p90 | p99 | >= 1.3x median | steal |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in host_jitter(root / "host-jitter-h200" / "host-jitter.json.gz"):
        print(
            f"| {p['busy_processes']} | {p['repetitions']} | {p['cpu_median_ms']:.2f} | {p['cpu_p90_ms']:.2f} | "
            f"{p['window_median_ms']:.1f} | {p['window_p90_ms']:.1f} | {p['window_p99_ms']:.1f} | "
            f"{p['slow_share']:.0%} | {p['steal_jiffies']:.0f} |"
        )
    first = root / "first-wave-h200"
    print("\n| load | median TTFT (ms) | first wave | the rest |")
    print("|---|---:|---:|---:|")
    for t in first_wave_ttfts(first):
        print(f"| {t.load} | {t.median_ms:.1f} | {t.first_wave_ms:.1f} | {t.rest_ms:.1f} |")
    print("\nTriton kernels compiled during a load (first and last cache file):")
    compiles = triton_compiles(first)
    for c in compiles:
        print(
            f"  {c.load}: {c.kernel} {c.first_s:.3f}-{c.last_s:.3f} s ({(c.last_s - c.first_s) * 1e3:.0f} ms)"
        )
    for kernel in sorted({c.kernel for c in compiles}):
        wall, cpu, runqueue = compile_cpu(first, compiles, kernel)
        print(
            f"scheduler while {kernel} compiled: wall {wall:.0f} ms, on a CPU {cpu:.0f}, run queue {runqueue:.1f}"
        )


if __name__ == "__main__":
    main()
