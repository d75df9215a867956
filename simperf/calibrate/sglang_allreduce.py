"""SGLang's own tensor-parallel all-reduce, timed the way its decode CUDA graphs replay it.

SGLang 0.5.17 all-reduces a tensor-parallel group through `GroupCoordinator.all_reduce`
(srt/distributed/parallel_state.py): its custom all-reduce (`CustomAllReduceV2`, JIT-compiled, the CUDA default
per `dispatch_custom_allreduce` in device_communicators/custom_all_reduce.py) for messages up to its workspace
(16 MiB, `SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB`), NCCL above. The decode step and the breakable prefill graph
capture these calls inside `graph_capture()`, which registers the graph's buffers with the custom all-reduce. So
this module does the same: it initialises SGLang's distributed state on every GPU of the group
(`init_distributed_environment`, `initialize_model_parallel`), captures `calls_per_graph` back-to-back
`GroupCoordinator.all_reduce` calls of one bf16 tensor into one CUDA graph, replays it `REPLAYS` times between
CUDA events, and records the per-call time of the slowest rank (the collective ends when the last rank ends).

Rows go to the perf database as op `allreduce`, backend `sglang_custom_ar` (the key `models.kernels.collective_keys`
prefers), timing method `cuda_graph_replay`; which of SGLang's methods served each size (custom all-reduce or NCCL)
is written beside the tables as `<out>/runs/<date>-sglang-allreduce-g<G>.json`.

Needs SGLang importable (the kit, groundtruth/kit_env.sh) and G GPUs of one host:
    python -m simperf.calibrate.sglang_allreduce --group-size 4 --out calibration/h100
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

from simperf.calibrate.collectives import ROW_MARKER, spawn_ranks
from simperf.calibrate.journal import Journal, compact
from simperf.calibrate.points import make_point
from simperf.calibrate.provenance import utc_now_iso

MESSAGE_BYTES = [1024 * 2**i for i in range(17)]  # 1 KiB ... 64 MiB: decode's few KiB up to long prefills
REPLAYS = 30


def calls_per_graph(message_bytes: int) -> int:
    """All-reduces captured per graph: enough that one replay is far longer than its launch, few enough that
    the out-of-place outputs of the large ones fit."""
    if message_bytes <= 1 << 20:
        return 40
    if message_bytes <= 16 << 20:
        return 8
    return 2


def _rank_main(rank: int, world: int, port: int) -> None:
    import torch
    import torch.distributed as dist
    from sglang.srt.distributed import parallel_state as ps

    from simperf.calibrate.collectives import slowest_rank_row
    from simperf.calibrate.provenance import detect_device
    from simperf.calibrate.timing import graph_replay_samples_us, summarize

    torch.cuda.set_device(rank)
    ps.set_custom_all_reduce(True)
    ps.init_distributed_environment(
        backend="nccl",
        world_size=world,
        rank=rank,
        local_rank=rank,
        distributed_init_method=f"tcp://127.0.0.1:{port}",
    )
    ps.initialize_model_parallel(tensor_model_parallel_size=world)
    tp = ps.get_tp_group()
    communicator = type(tp.ca_comm).__name__ if tp.ca_comm is not None else None
    device = detect_device() if rank == 0 else None
    for size in MESSAGE_BYTES:
        x = torch.randn(size // 2, device="cuda", dtype=torch.bfloat16)
        method = tp._resolve_outplace_all_reduce_method(x)
        for _ in range(3):
            tp.all_reduce(x)
        torch.cuda.synchronize()
        calls = calls_per_graph(size)
        graph = torch.cuda.CUDAGraph()
        with ps.graph_capture() as ctx, torch.cuda.graph(graph, stream=ctx.stream):
            for _ in range(calls):
                tp.all_reduce(x)
        graph.replay()
        torch.cuda.synchronize()
        dist.barrier()
        samples = graph_replay_samples_us(graph, calls, REPLAYS)
        point = make_point(
            "allreduce", "sglang_custom_ar", dtype="bf16", group_size=world, message_bytes=size
        )
        row = slowest_rank_row(torch, dist, world, summarize(samples, "cuda_graph_replay"), point, device)
        if row is not None:
            how = {"message_bytes": size, "method": method or "nccl (in-place)", "communicator": communicator}
            print(ROW_MARKER + json.dumps({"row": row, "how": how}, separators=(",", ":")), flush=True)
        del graph, x
        torch.cuda.empty_cache()
    dist.barrier()


def record(lines: list[str], out: Path, world: int) -> int:
    """Append the rows printed by the ranks to `out`'s tables; write how each size was served beside them."""
    journal = Journal(out)
    how: list[dict[str, Any]] = []
    for line in lines:
        if line.startswith(ROW_MARKER):
            item = json.loads(line[len(ROW_MARKER) :])
            journal.append(item["row"])
            how.append(item["how"])
    journal.close()
    if not how:
        return 0
    compact(out, journal)
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    stamp = utc_now_iso()[:10]
    (runs / f"{stamp}-sglang-allreduce-g{world}.json").write_text(
        json.dumps({"group_size": world, "sizes": how}, indent=1) + "\n", encoding="utf-8"
    )
    return len(how)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--group-size", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True, help="calibration directory to add the rows to")
    parser.add_argument("--rank-process", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rank_process:
        spawn_ranks(_rank_main, args.group_size)
        return 0
    if args.group_size < 2:
        print(f"error: --group-size {args.group_size}: an all-reduce needs at least 2 GPUs", file=sys.stderr)
        return 2
    if importlib.util.find_spec("sglang") is None:
        print(
            "error: SGLang is not importable here (unpack the kit first: groundtruth/kit_env.sh)",
            file=sys.stderr,
        )
        return 2
    import subprocess

    from simperf.progress import bar

    env = {**os.environ, "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
    argv_child = [sys.executable, "-m", "simperf.calibrate.sglang_allreduce", "--rank-process"]
    argv_child += ["--group-size", str(args.group_size), "--out", str(args.out)]
    lines: list[str] = []
    with bar(f"SGLang all-reduce, group {args.group_size}", len(MESSAGE_BYTES)) as progress:
        proc = subprocess.Popen(argv_child, stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith(ROW_MARKER):
                progress.advance(status=f"{json.loads(line[len(ROW_MARKER) :])['how']['message_bytes']} B")
            else:
                print(line, end="")
        proc.wait()
    n = record(lines, args.out, args.group_size)
    print(
        f"sglang all-reduce, group {args.group_size}: {n} of {len(MESSAGE_BYTES)} sizes recorded (exit {proc.returncode})"
    )
    return 0 if n == len(MESSAGE_BYTES) else 1


if __name__ == "__main__":
    sys.exit(main())
