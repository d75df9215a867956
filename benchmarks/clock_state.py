"""How much a heavy kernel's time depends on what the GPU ran before it (its power and clock state), on a lent GPU.

The tables time GEMMs lightest first in long sweeps, so their heaviest points are timed after minutes of
compute-bound work, and their recorded SM clocks say so (1,365-1,620 MHz on many H100/H200 rows); the off-grid
check times its calls with host-side work between them (315 calls in ~400 s), at 1,950 MHz. The same shape then
differs by up to 20% between the two (docs/perfdb.md "The GPU's clock state"). This times a few served shapes, each by CUDA-graph replay
as the tables do (~60 ms of replays), in three states: after 2 s idle ("cold"), right after 5 s of the same kernel
back to back ("hot"), and 0.5 s after that ("rest 0.5 s"), sampling the SM clock and power with nvidia-smi.

    python benchmarks/clock_state.py OUT.json        (on a GPU host with torch; needs nothing else)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import torch

# (label, m, n, k): bf16 GEMMs of served forwards: Qwen3-8B's prefill at 1,024 tokens (compute-bound), Qwen3-32B's
# decode gate_up at batch 8 (memory-bound: the control), and a DeepSeek o_proj-like shape at m 448
SHAPES = [
    ("qwen3-8b gate_up m1024", 1024, 24576, 4096),
    ("qwen3-8b down m1024", 1024, 4096, 12288),
    ("qwen3-32b gate_up m8", 8, 51200, 5120),
    ("r1 o_proj-like m448", 448, 7168, 16384),
]
REPLAY_TARGET_MS = 60.0


def _graph(fn, launches):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(launches):
            fn()
    return g


def _time(g, launches, repeats):
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / launches)
    times.sort()
    return times[len(times) // 2]


def _busy(g, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        g.replay()
        torch.cuda.synchronize()


def _launcher(m: int, n: int, k: int, sets: int = 8):
    """A GEMM launch cycling through `sets` input sets, rotated past the L2 as the tables' timing does."""
    a = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    w = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    turn = [0]

    def launch():
        j = turn[0] % sets
        turn[0] += 1
        torch.matmul(a[j], w[j].t())

    return launch


def _estimate_us(launch) -> float:
    for _ in range(3):
        launch()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    launch()
    e1.record()
    e1.synchronize()
    return max(e0.elapsed_time(e1) * 1000.0, 1.0)


def _shape_rows(label: str, m: int, n: int, k: int, t0: float) -> list[dict]:
    launch = _launcher(m, n, k)
    est_us = _estimate_us(launch)
    launches = max(8, min(1024, int(2000.0 / est_us) // 8 * 8))
    graph = _graph(launch, launches)
    repeats = int(max(5, min(50, REPLAY_TARGET_MS * 1000.0 / (est_us * launches))))
    states = (
        ("cold", lambda: time.sleep(2.0)),
        ("hot", lambda: _busy(graph, 5.0)),
        ("rest 0.5 s", lambda: time.sleep(0.5)),
        ("cold again", lambda: time.sleep(2.0)),
    )
    rows = []
    for state, before in states:
        before()
        start = time.time() - t0
        us = _time(graph, launches, repeats)
        rows.append({"shape": label, "m": m, "n": n, "k": k, "state": state, "time_us": round(us, 3),
                     "t_s": round(start, 3), "t_end_s": round(time.time() - t0, 3)})  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def main(out: str) -> None:
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader",
         "-lms", "50"], stdout=subprocess.PIPE, text=True)  # fmt: skip
    t0 = time.time()
    rows = []
    for label, m, n, k in SHAPES:
        rows += _shape_rows(label, m, n, k, t0)
        torch.cuda.empty_cache()
    time.sleep(0.2)
    smi.terminate()
    samples = smi.communicate()[0].splitlines()
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "t0_unix": t0, "rows": rows,
                   "nvidia_smi": samples}, f, indent=1)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1])
