"""Profile a DP-attention server through an extend iteration in which one rank prefills and the others decode
without their CUDA graphs (SGLang's `decode_none`), to see where such an iteration's time goes on each rank
(docs/accuracy.md "DP attention, checked before its runs").

usage (repository root, GPU host, kit environment sourced; DRIVER=groundtruth/profile_dp_rider.py
groundtruth/profile_served.sh ... runs it against a fresh server):
    python3 groundtruth/profile_dp_rider.py PORT OUT_DIR
Sends one warm-up request, then 16 concurrent decodes (1,024-token prompts as ids, 600 output tokens, ignore_eos;
8 per rank by round robin), starts the profiler for 16 scheduler steps once they decode, and sends one more
1,024-token request right after, which one rank prefills while the others decode beside it. Writes
OUT_DIR/driver.json (what was sent and when).
"""

from __future__ import annotations

import json
import sys
import threading
import time

from served_requests import generate as _generate
from served_requests import post as _post

PORT, OUT = int(sys.argv[1]), sys.argv[2]
URL = f"http://127.0.0.1:{PORT}"


def post(path: str, body: dict) -> str:
    return _post(URL, path, body)


def generate(seed: int, new_tokens: int) -> None:
    _generate(URL, seed, new_tokens)


generate(1, 8)  # warm-up
decodes = [threading.Thread(target=generate, args=(100 + i, 600)) for i in range(16)]
t0 = time.time()
for t in decodes:
    t.start()
time.sleep(1.5)
t1 = time.time()
post("/start_profile", {"output_dir": OUT, "num_steps": 16, "activities": ["GPU"], "profile_prefix": "rider"})
time.sleep(0.05)
t2 = time.time()
late = threading.Thread(target=generate, args=(999, 8))
late.start()
late.join()
for t in decodes:
    t.join()
run = {"decodes_sent_s": t0, "profile_requested_s": t1, "prefill_sent_s": t2, "done_s": time.time()}
with open(f"{OUT}/driver.json", "w") as f:
    json.dump(run, f, indent=1)
print(json.dumps(run))
