"""Sample one thread's CPU and run-queue time every few milliseconds, with the wall clock.

Why: an eager extend launch of SGLang's scheduler sometimes takes 1.7x as long as usual (docs/overheads.md "Not
explained: slow launches"). Over a slow launch, the thread's time on a CPU says whether it did more work (or
collected garbage), its time runnable but waiting for a CPU says whether other processes took its core, and neither
growing says it was blocked (a copy waiting on the GPU).

usage (GPU host, groundtruth/profile_corpus_waves.sh runs it):
    python3 groundtruth/thread_sampler.py OUT.csv INTERVAL_MS STOP_FILE PID [TID]
Appends `wall_ns,run_ns,wait_ns` rows until STOP_FILE exists: time.time_ns() and the first two fields of
/proc/PID/task/TID/schedstat (nanoseconds on a CPU, nanoseconds runnable on a run queue). TID defaults to PID (the
main thread).
"""

from __future__ import annotations

import os
import sys
import time


def main() -> None:
    out, interval_s, stop, pid = sys.argv[1], float(sys.argv[2]) / 1e3, sys.argv[3], sys.argv[4]
    tid = sys.argv[5] if len(sys.argv) > 5 else pid
    path = f"/proc/{pid}/task/{tid}/schedstat"
    with open(out, "w") as rows:
        rows.write("wall_ns,run_ns,wait_ns\n")
        while not os.path.exists(stop):
            try:
                with open(path) as f:
                    run_ns, wait_ns = f.read().split()[:2]
            except OSError:
                break
            rows.write(f"{time.time_ns()},{run_ns},{wait_ns}\n")
            time.sleep(interval_s)


if __name__ == "__main__":
    main()
