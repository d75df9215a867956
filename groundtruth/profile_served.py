"""Profile a served SGLang server's decode iterations (torch profiler via its /start_profile endpoint), to compare
the GPU's busy time per iteration with the iteration the scheduler records (docs/overheads.md).

usage (repository root, GPU host, kit environment sourced; groundtruth/profile_served.sh does that):
    python3 groundtruth/profile_served.py PORT OUT_DIR
Drives one request, then 16 concurrent ones (1,024 prompt tokens as ids, 256 output tokens, ignore_eos) and
profiles 10 scheduler steps of each once every request is decoding; CONCURRENCY="1 16 48" (environment) names other
loads. UNPROFILED=1 (environment) first drives each load once without the profiler and records the scheduler's
own iteration times for it (SGLANG_RECORD_STEP_TIME's step_time_dict, read from /server_info before and after), so
that one server gives both the unprofiled iteration and the profiled GPU busy time; PREFILL=1 also profiles one
request from its prefill on (3 forward steps, started while the server is idle) after timing five unprofiled
single-token requests at each prompt length of PREFILL_LENS (default "1024"); PREFILL_CPU=1 records the host side
of that profile too (CPU activities with Python stacks: where the scheduler waits). Writes OUT_DIR/driver.json (what
was sent and when). PROFILE_CPU=1 records the host side (no Python stacks) in the decode profiles as well: how long
the scheduler's launch of an iteration takes on the host.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request

from served_requests import generate as _generate
from served_requests import post as _post

PORT, OUT = int(sys.argv[1]), sys.argv[2]
URL = f"http://127.0.0.1:{PORT}"


def post(path: str, body: dict) -> str:
    return _post(URL, path, body)


def generate(seed: int, new_tokens: int = 256, prompt_len: int = 1024) -> None:
    _generate(URL, seed, new_tokens, prompt_len)


def step_times() -> dict:
    """The scheduler's decode iteration times so far, keyed by running requests (SGLANG_RECORD_STEP_TIME)."""
    try:
        info = json.loads(urllib.request.urlopen(URL + "/server_info", timeout=30).read())
    except OSError:  # SGLang before /server_info answers only the older path
        info = json.loads(urllib.request.urlopen(URL + "/get_server_info", timeout=30).read())
    return (info.get("internal_states") or [{}])[0].get("step_time_dict") or {}


def unprofiled(concurrency: int) -> dict:
    before = step_times()
    threads = [threading.Thread(target=generate, args=(i + 7 * concurrency,)) for i in range(concurrency)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = step_times()
    new = {k: v[len(before.get(k, [])) :] for k, v in after.items()}
    return {
        "concurrency": concurrency,
        "sent_s": t0,
        "done_s": time.time(),
        "step_time_s": {k: v for k, v in new.items() if v},
    }


def one_token_latencies(prompt_len: int) -> list[float]:
    latencies = []
    for i in range(5):
        t = time.time()
        generate(500 + i + prompt_len, 1, prompt_len)
        latencies.append(time.time() - t)
    return latencies


def prefill_profile() -> dict:
    lens = [int(n) for n in os.environ.get("PREFILL_LENS", "1024").split()]
    latencies = {str(n): one_token_latencies(n) for n in lens}
    t1 = time.time()
    host = os.environ.get("PREFILL_CPU") == "1"
    body = {"output_dir": OUT, "num_steps": 3, "activities": ["CPU", "GPU"] if host else ["GPU"]}
    if host:
        body["with_stack"] = True
    post("/start_profile", {**body, "profile_prefix": "prefill"})
    generate(600, 4)
    return {
        "name": "prefill",
        "one_token_latency_s": latencies["1024"] if list(latencies) == ["1024"] else latencies,
        "profile_requested_s": t1,
        "done_s": time.time(),
    }


def profiled(name: str, concurrency: int, after_s: float) -> dict:
    threads = [threading.Thread(target=generate, args=(i + 100 * concurrency,)) for i in range(concurrency)]
    t0 = time.time()
    for t in threads:
        t.start()
    time.sleep(after_s)
    t1 = time.time()
    activities = ["CPU", "GPU"] if os.environ.get("PROFILE_CPU") == "1" else ["GPU"]
    post(
        "/start_profile",
        {"output_dir": OUT, "num_steps": 10, "activities": activities, "profile_prefix": name},
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
runs = [unprofiled(c) for c in loads] if os.environ.get("UNPROFILED") == "1" else []
runs += [profiled(f"c{c}", c, 0.6 if c == 1 else 1.5 + c / 32) for c in loads]
if os.environ.get("PREFILL") == "1":
    runs.append(prefill_profile())
with open(f"{OUT}/driver.json", "w") as f:
    json.dump(runs, f, indent=1)
print(json.dumps(runs))
