"""Profile a served SGLang server's decode iterations (torch profiler via its /start_profile endpoint), to compare
the GPU's busy time per iteration with the iteration the scheduler records (docs/overheads.md).

usage (repository root, GPU host, kit environment sourced; groundtruth/profile_served.sh does that):
    python3 groundtruth/profile_served.py PORT OUT_DIR
Drives one request, then 16 concurrent ones (1,024 prompt tokens as ids, 256 output tokens, ignore_eos) and
profiles 10 scheduler steps of each once every request is decoding; CONCURRENCY="1 16 48" (environment) names other
loads. Writes OUT_DIR/driver.json (what was sent and when).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from served_requests import generate as _generate
from served_requests import post as _post

PORT, OUT = int(sys.argv[1]), sys.argv[2]
URL = f"http://127.0.0.1:{PORT}"


def post(path: str, body: dict) -> str:
    return _post(URL, path, body)


def generate(seed: int) -> None:
    _generate(URL, seed, 256)


def profiled(name: str, concurrency: int, after_s: float) -> dict:
    threads = [threading.Thread(target=generate, args=(i + 100 * concurrency,)) for i in range(concurrency)]
    t0 = time.time()
    for t in threads:
        t.start()
    time.sleep(after_s)
    t1 = time.time()
    post(
        "/start_profile", {"output_dir": OUT, "num_steps": 10, "activities": ["GPU"], "profile_prefix": name}
    )
    for t in threads:
        t.join()
    return {
        "name": name,
        "concurrency": concurrency,
        "sent_s": t0,
        "profile_requested_s": t1,
        "done_s": time.time(),
    }


generate(1)  # warm-up: JIT, first-request paths
# the later a load's profile starts, the more of its requests are past their prefill: 0.6 s at 1, 1.5 s at 16
loads = [int(c) for c in os.environ.get("CONCURRENCY", "1 16").split()]
runs = [profiled(f"c{c}", c, 0.6 if c == 1 else 1.5 + c / 32) for c in loads]
with open(f"{OUT}/driver.json", "w") as f:
    json.dump(runs, f, indent=1)
print(json.dumps(runs))
