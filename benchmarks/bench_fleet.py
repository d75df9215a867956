"""A million requests over a 64-replica fleet: wall time and peak memory of `predict`, and Ray vs local processes.

Traffic: Azure's LLM-inference conversation trace (2023, one hour, 19,366 requests, mean 1,155 prompt / 211 output
tokens) tiled end to end until it holds --requests requests, then re-timed to --rate requests/s: the hour's rate
swings (3.9-7.5 req/s in 5-minute bins) repeat in every copy. Replicas: Qwen3-8B (bf16), one H100 each, SGLang's
defaults; router round_robin (or --policy). The tiled trace is written to a temporary Parquet file first (not
timed); the timed part is `simperf.pipeline.predict` on the fleet scenario: building the request stream, routing,
the replicas' simulations on --workers processes (or Ray tasks), the digests and bench_serving's metrics.

Peak memory is the largest sum of resident set sizes over this process and all its descendants, sampled every
0.2 s from /proc (Linux).

Run:  python benchmarks/bench_fleet.py [--azure ../shared/data/traces/azure_llm_inference_2023_conv.csv]
                                       [--requests 1000000] [--replicas 64] [--rate 512] [--workers 2] [--ray]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simperf.pipeline import predict  # noqa: E402
from simperf.scenario.load import parse_scenario  # noqa: E402
from simperf.workload.trace import Trace, read_trace  # noqa: E402
from simperf.workload.trace_write import write_trace  # noqa: E402

DEFAULT_AZURE = ROOT.parent / "shared" / "data" / "traces" / "azure_llm_inference_2023_conv.csv"


def tiled_trace(source: Path, requests: int, out: Path) -> Path:
    """`source` repeated end to end (each copy starts one mean gap after the previous one ends)."""
    trace = read_trace(source)
    copies = math.ceil(requests / len(trace))
    gap = float(trace.arrival_s[-1]) / max(len(trace) - 1, 1)
    span = float(trace.arrival_s[-1]) + gap
    arrival = np.concatenate([trace.arrival_s + i * span for i in range(copies)])[:requests]
    tiled = Trace(
        arrival_s=arrival,
        input_len=np.tile(trace.input_len, copies)[:requests],
        output_len=np.tile(trace.output_len, copies)[:requests],
        block_hashes=None,
        format="simperf",
    )
    return write_trace(tiled, out)


class PeakRss:
    """Largest total RSS of this process tree, sampled in a thread."""

    def __init__(self, every_s: float = 0.2) -> None:
        self.peak = 0
        self._every = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _tree(pid: int) -> list[int]:
        pids, stack = [], [pid]
        while stack:
            p = stack.pop()
            pids.append(p)
            for task in Path(f"/proc/{p}/task").glob("*/children"):
                try:
                    stack.extend(int(c) for c in task.read_text().split())
                except OSError:
                    pass
        return pids

    @staticmethod
    def _rss(pid: int) -> int:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(self._rss(p) for p in self._tree(os.getpid())))
            self._stop.wait(self._every)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def scenario(trace: Path, args, executor: str) -> dict:
    return {
        "name": f"azure-conv-tiled-{args.requests}-qwen3-8b-{args.replicas}x-h100",
        "model": {"name": "qwen3-8b"},
        "hardware": {"gpu": "h100", "count": 1},
        "fleet": {
            "replicas": [{"count": args.replicas}],
            "router": {"policy": args.policy},
            "executor": executor,
            "workers": args.workers,
        },
        "workload": {
            "dataset": {"kind": "trace", "path": str(trace), "target_rate": args.rate},
            "num_prompts": args.requests,
        },
    }


def _cpu_s() -> float:
    """CPU time of this process and of its finished children (a process pool's workers, once shut down)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_once(trace: Path, args, executor: str) -> dict:
    cpu_before = _cpu_s()
    with PeakRss() as rss:
        started = time.perf_counter()
        prediction = predict(parse_scenario(scenario(trace, args, executor)))
        wall = time.perf_counter() - started
    return {
        "executor": executor,
        "wall_s": wall,
        # Ray's workers are not this process's children: their CPU time is not counted
        "cpu_s": _cpu_s() - cpu_before if executor != "ray" else float("nan"),
        "peak_rss_gib": rss.peak / 2**30,
        "result": prediction.result,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--azure", type=Path, default=DEFAULT_AZURE)
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--replicas", type=int, default=64)
    parser.add_argument("--rate", type=float, default=512.0, help="fleet request rate (req/s)")
    parser.add_argument("--policy", default="round_robin")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", action="store_true", help="run again on a local Ray and compare the metrics")
    args = parser.parse_args()
    if not args.azure.is_file():
        print(f"{args.azure}: no such trace (the Azure LLM inference conversation trace)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        trace = tiled_trace(args.azure, args.requests, Path(tmp) / "azure-tiled.parquet")
        runs = []
        for executor in ["process", "ray"] if args.ray else ["process"]:
            load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            runs.append({**run_once(trace, args, executor), "load": load})
    for run in runs:
        r = run["result"]
        print(
            f"{run['executor']:>8}: {run['wall_s']:.1f} s wall, {run['cpu_s']:.0f} s CPU, "
            f"peak RSS {run['peak_rss_gib']:.2f} GiB (load average before: {run['load']}); "
            f"{r['completed']:,} requests, {r['duration']:.0f} s simulated, median TTFT {r['median_ttft_ms']:.1f} ms, "
            f"median TPOT {r['median_tpot_ms']:.2f} ms, output {r['output_throughput']:.0f} tok/s"
        )
    if len(runs) == 2:
        same = runs[0]["result"] == runs[1]["result"]
        print(f"Ray and local processes give identical metrics: {same}")
        if not same:
            diff = {k: (runs[0]["result"][k], runs[1]["result"][k]) for k in runs[0]["result"]
                    if runs[0]["result"][k] != runs[1]["result"][k]}  # fmt: skip
            print(json.dumps(diff, indent=1, default=str))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
