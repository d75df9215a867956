"""Sample the CPU time of a served SGLang's processes and of the benchmark client, every few milliseconds.

Why: where the API server sets the pace (docs/overheads.md, `frontend_us_per_chunk`), throughput tells how long a
streamed chunk takes on the output path, not which process spends it: the API server (uvicorn + TokenizerManager),
the detokenizer, or bench_serving's own asyncio loop, which parses every chunk. Each process' CPU time over a run,
divided by the chunks of that run, is that process' cost per chunk; a process near one core for the whole run is
the one that sets the pace.

usage (GPU host, groundtruth/profile_paced.sh runs it):
    python3 groundtruth/cpu_sampler.py OUT.csv INTERVAL_MS STOP_FILE PID...
Every INTERVAL_MS until STOP_FILE exists, appends `t_ns,pid,cpu_ns` rows: the monotonic time and, for each given
process and every process descended from it, its CPU time so far (the sum over its threads of
/proc/PID/task/TID/schedstat's first field, nanoseconds on a CPU). A second file OUT.csv.names maps pid to the
process' name (/proc/PID/comm) and command line.
"""

from __future__ import annotations

import os
import sys
import time


def children_of(roots: set[int]) -> set[int]:
    """The given processes and all their descendants alive now."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parent[int(entry)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    found = {p for p in roots if p in parent}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in found and pid not in found:
                found.add(pid)
                grew = True
    return found


def cpu_ns(pid: int) -> int | None:
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    except OSError:
        return None
    return total


def describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:300]
    except OSError:
        return "?"
    return f"{comm}\t{cmd}"


def main() -> None:
    out, interval_ms, stop = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    roots = {int(p) for p in sys.argv[4:]}
    named: set[int] = set()
    pids: set[int] = set()
    last_scan = 0.0
    with open(out, "w") as rows, open(out + ".names", "w") as names:
        rows.write("t_ns,pid,cpu_ns\n")
        while not os.path.exists(stop):
            now = time.monotonic()
            if (
                now - last_scan > 1.0
            ):  # new children (bench_serving's, the server's) are rare: rescan each second
                pids, last_scan = children_of(roots), now
                for pid in pids - named:
                    names.write(f"{pid}\t{describe(pid)}\n")
                    named.add(pid)
                names.flush()
            t = time.monotonic_ns()
            for pid in sorted(pids):
                ns = cpu_ns(pid)
                if ns is not None:
                    rows.write(f"{t},{pid},{ns}\n")
            time.sleep(interval_ms / 1000)


if __name__ == "__main__":
    main()
