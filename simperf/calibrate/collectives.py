"""NCCL collectives through torch.distributed, one process per GPU.

The runner starts `python -m simperf.calibrate.collectives` with the points on stdin; that process spawns
one rank per GPU (torch.multiprocessing), rank 0 prints one `@@ROW <json>` line per finished point. If the
process group dies mid-way, the runner records the point in flight as failed and starts again after it.

Timing: as SGLang's CUDA graphs replay them (the decode step's and the breakable prefill graph's collectives run
inside a graph, through PyNccl): per size, eager warm-up on a side stream, then `graph_calls` back-to-back calls
captured into one CUDA graph, replayed R times between CUDA events on every rank; a rank's time is the median per
call; the row takes the slowest rank's median (the collective ends when the last rank ends), with p10/p90 from that
rank. (Tables recorded before 2026-11-26 timed eager calls back to back, `nccl_events`: their ~55-70 us floor at
small sizes was the eager launch path of our hosts, not the collective.) message_bytes is the whole tensor, as
nccl-tests counts "size" and the perf database's roofline assumes: the all-reduce buffer, the all-gather's gathered output, the reduce-scatter's input, one rank's
all-to-all send buffer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from simperf.calibrate.measure import STATUS_FAILED, error_columns
from simperf.calibrate.points import Point, make_point
from simperf.calibrate.provenance import utc_now_iso

ROW_MARKER = "@@ROW "
COLLECTIVE_OPS = ("allreduce", "allgather", "reducescatter", "alltoall")
MESSAGE_BYTES = [1024 * 2**i for i in range(21)]  # 1 KiB ... 1 GiB


def collective_points(device_count: int) -> list[Point]:
    if device_count < 2:
        return []
    return [
        make_point(op, "nccl", dtype="bf16", group_size=device_count, message_bytes=size)
        for op in COLLECTIVE_OPS
        for size in MESSAGE_BYTES
    ]


def run_collectives(
    points: list[Point],
    journal: Any,
    fallback: dict[str, Any],
    advance: Callable[[], None],
    deadline: float | None,
    console: Any,
) -> None:
    from simperf.calibrate.runner import child_env

    remaining = list(points)
    while remaining:
        if deadline is not None and time.monotonic() > deadline:
            return
        proc = subprocess.Popen(
            [sys.executable, "-m", "simperf.calibrate.collectives"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(remaining))
        proc.stdin.close()
        done = 0
        for line in proc.stdout:
            if not line.startswith(ROW_MARKER):
                sys.stderr.write(line)
                continue
            journal.append(json.loads(line[len(ROW_MARKER) :]))
            done += 1
            advance()
        code = proc.wait()
        remaining = remaining[done:]
        if not remaining:
            break
        reason = f"collective process exited with code {code} during this point"
        console.log(f"[nccl] {reason}; continuing after it")
        journal.append(
            {**remaining[0], **fallback, **error_columns(STATUS_FAILED, reason), "date": utc_now_iso()}
        )
        advance()
        remaining = remaining[1:]


def graph_calls(message_bytes: int) -> int:
    """Collectives captured per graph: one replay far longer than its launch, the large ones' buffers bounded."""
    if message_bytes <= 1 << 20:
        return 20
    if message_bytes <= 64 << 20:
        return 4
    return 1


def slowest_rank_row(torch: Any, dist: Any, world: int, m: Any, point: Point, device: Any) -> dict | None:
    """Every rank calls this with its own measurement; rank 0 (the one given `device`) gets the row, timed by the
    slowest rank (a collective ends when its last rank does), the others None."""
    from simperf.calibrate.provenance import current_clocks_mhz

    stats = torch.tensor([m.time_us, m.time_us_p10, m.time_us_p90], device="cuda", dtype=torch.float64)
    gathered = [torch.empty_like(stats) for _ in range(world)]
    dist.all_gather(gathered, stats)
    if device is None:
        return None
    slowest = max(gathered, key=lambda t: float(t[0])).tolist()
    sm_clock, mem_clock = current_clocks_mhz(0)
    return {
        **point,
        **device.provenance_columns(),
        "time_us": slowest[0],
        "time_us_p10": slowest[1],
        "time_us_p90": slowest[2],
        "repeats": m.repeats,
        "timing_method": m.timing_method,
        "status": "ok",
        "error": None,
        "date": utc_now_iso(),
        "sm_clock_mhz": sm_clock,
        "mem_clock_mhz": mem_clock,
    }


def _rank_main(rank: int, world: int, points: list[Point], port: int) -> None:
    import torch
    import torch.distributed as dist

    from simperf.calibrate.provenance import detect_device
    from simperf.calibrate.timing import capture_graph, graph_replay_samples_us, summarize

    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        device_id=torch.device("cuda", rank),
    )
    device = detect_device() if rank == 0 else None
    for point in points:
        if rank == 0:
            print(f"[nccl] {point['op']} {point['message_bytes']} B", file=sys.stderr, flush=True)
        size = int(point["message_bytes"])
        elems = max(world, size // 2)
        elems -= elems % world
        x = torch.randn(elems, device="cuda", dtype=torch.bfloat16)
        op = point["op"]
        if op == "allreduce":

            def launch(x=x) -> None:
                dist.all_reduce(x)
        elif op == "allgather":
            # message_bytes is the gathered output: each rank contributes 1/world of it
            part = x[: elems // world]
            out = torch.empty(elems, device="cuda", dtype=torch.bfloat16)

            def launch(x=part, out=out) -> None:
                dist.all_gather_into_tensor(out, x)
        elif op == "reducescatter":
            out = torch.empty(elems // world, device="cuda", dtype=torch.bfloat16)

            def launch(x=x, out=out) -> None:
                dist.reduce_scatter_tensor(out, x)
        else:
            out = torch.empty_like(x)

            def launch(x=x, out=out) -> None:
                dist.all_to_all_single(out, x)

        calls = graph_calls(size)
        graph = capture_graph([launch] * 3, [launch] * calls)  # NCCL sets up its communicator first
        graph.replay()
        torch.cuda.synchronize()
        est = time.perf_counter()
        graph.replay()
        torch.cuda.synchronize()
        est_s = time.perf_counter() - est
        repeats = int(min(50, max(10, 0.15 / max(est_s, 1e-6))))
        dist.barrier()
        samples = graph_replay_samples_us(graph, calls, repeats)
        row = slowest_rank_row(torch, dist, world, summarize(samples, "cuda_graph_replay"), point, device)
        if row is not None:
            print(ROW_MARKER + json.dumps(row, separators=(",", ":")), flush=True)
        del x, graph
        torch.cuda.empty_cache()
    dist.destroy_process_group()


def spawn_ranks(rank_main: Callable[..., None], world: int, *args: Any) -> None:
    """One process per GPU, `rank_main(rank, world, *args, port)`, rendezvous on a free local port."""
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mp.spawn(rank_main, args=(world, *args, port), nprocs=world, join=True)


def main() -> int:
    from simperf.calibrate.runner import SAFE_ENV

    os.environ.update(SAFE_ENV)
    points: list[Point] = json.loads(sys.stdin.read())
    if not points:
        return 0
    spawn_ranks(_rank_main, int(points[0]["group_size"]), points)
    return 0


if __name__ == "__main__":
    sys.exit(main())
