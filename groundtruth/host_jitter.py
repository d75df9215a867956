"""How steady a lent host's CPU is: time one fixed pure-Python workload over and over, with the host's steal time.

Why: SGLang's eager extend launches on one host took 56-92 ms of the scheduler's own CPU time for the same work,
with no garbage collection and no wait for a core (groundtruth/experiments/waves-gc-h200/). This times a fixed
piece of Python work with no GPU and no SGLang, alone and beside busy processes, to see whether the host itself
runs the same work at a varying speed, and whether the hypervisor's steal time moves with it.

usage (GPU host, no kit needed): python3 groundtruth/host_jitter.py OUT.json SECONDS_PER_PHASE [BUSY...]
    BUSY: numbers of busy-looping processes to run beside it, one phase each (default 0 4 12)
Writes OUT.json: per phase, per repetition the wall and CPU milliseconds of the workload and the host's steal
jiffies (/proc/stat) over it.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import sys
import time


def workload() -> int:
    # dictionary and list work of the kind a scheduler's Python does; fixed size, so fixed work
    table: dict[int, list[int]] = {}
    for i in range(60_000):
        table.setdefault(i % 997, []).append(i * 3)
    return sum(len(v) for v in table.values())


def steal_jiffies() -> int:
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) if len(fields) > 8 else -1


def spin(stop_at: float) -> None:
    x = 0
    while time.time() < stop_at:
        x += 1


def phase(seconds: float, busy: int) -> list[dict[str, float]]:
    stop_at = time.time() + seconds + 1
    spinners = [mp.Process(target=spin, args=(stop_at,)) for _ in range(busy)]
    for p in spinners:
        p.start()
    time.sleep(0.5)
    reps, end = [], time.time() + seconds
    while time.time() < end:
        s0, c0, w0 = steal_jiffies(), time.thread_time_ns(), time.perf_counter_ns()
        workload()
        w1, c1, s1 = time.perf_counter_ns(), time.thread_time_ns(), steal_jiffies()
        reps.append({"wall_ms": (w1 - w0) / 1e6, "cpu_ms": (c1 - c0) / 1e6, "steal_jiffies": s1 - s0})
    for p in spinners:
        p.join()
    return reps


def main() -> None:
    out, seconds = sys.argv[1], float(sys.argv[2])
    loads = [int(x) for x in sys.argv[3:]] or [0, 4, 12]
    result = {"cpu_count": mp.cpu_count(), "phases": []}
    for busy in loads:
        reps = phase(seconds, busy)
        result["phases"].append({"busy_processes": busy, "repetitions": reps})
        cpu = sorted(r["cpu_ms"] for r in reps)
        print(f"busy {busy}: {len(reps)} reps, cpu ms min {cpu[0]:.2f} median {cpu[len(cpu) // 2]:.2f} "
              f"p90 {cpu[int(len(cpu) * 0.9)]:.2f} max {cpu[-1]:.2f}")  # fmt: skip
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
