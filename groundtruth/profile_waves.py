"""Drive a served SGLang server through the wave pattern of a closed-loop c16 run, with the server's own per-request
timestamps, and profile one wave's prefills (torch profiler, CPU and GPU, via /start_profile).

Why: on DeepSeek-V2-Lite (eager MLA prefill) the corpus' c16 runs show each prefill batch's launch taking ~95 ms
in the later waves where one request alone takes ~58 ms (docs/overheads.md, "Eager prefill under load"). This
records the same pattern with nothing else running, so the stamps and the profile say where that time goes.

usage (repository root, GPU host, kit environment sourced; groundtruth/profile_served.sh runs it when
DRIVER=groundtruth/profile_waves.py):
    python3 groundtruth/profile_waves.py PORT OUT_DIR
Phases, in order (each request: 1,024 prompt token ids, greedy, ignore_eos):
  c1        6 requests one at a time, 32 output tokens;
  flushed   POST /flush_cache (as bench_serving --flush-cache does), then 4 requests one at a time;
  waves     4 waves of 16 requests sent 0.5 ms apart (as bench_serving's first burst), 128 output tokens; the next
            wave is sent when the last request of the previous one has finished;
  profiled  /start_profile (CPU and GPU, no stacks or shapes, 8 steps), then one more wave;
  after     2 more waves.
Writes OUT_DIR/waves.json: per request its phase, wave, client send/finish times and the server's meta_info
(request_received_ts, forward_entry_time, prefill_finished_time, ...).
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
import urllib.request

PORT, OUT = int(sys.argv[1]), sys.argv[2]
URL = f"http://127.0.0.1:{PORT}"
PROMPT_TOKENS = 1024
records: list[dict] = []


def post(path: str, body: dict, timeout: float = 600) -> dict:
    req = urllib.request.Request(
        URL + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        text = r.read().decode()
    try:
        return json.loads(text)
    except ValueError:
        return {"text": text}


def generate(seed: int, output_tokens: int, phase: str, wave: int) -> None:
    rng = random.Random(seed)
    ids = [rng.randrange(1000, 30000) for _ in range(PROMPT_TOKENS)]
    sent = time.time()
    out = post(
        "/generate",
        {
            "input_ids": ids,
            "sampling_params": {"max_new_tokens": output_tokens, "ignore_eos": True, "temperature": 0.0},
        },
    )
    meta = out.get("meta_info", {}) if isinstance(out, dict) else {}
    records.append(
        {"phase": phase, "wave": wave, "seed": seed, "sent_s": sent, "done_s": time.time(), "meta": meta}
    )


def one_at_a_time(phase: str, n: int, first_seed: int) -> None:
    for i in range(n):
        generate(first_seed + i, 32, phase, i)


def wave(phase: str, index: int, first_seed: int, size: int = 16) -> None:
    threads = [
        threading.Thread(target=generate, args=(first_seed + i, 128, phase, index)) for i in range(size)
    ]
    for t in threads:
        t.start()
        time.sleep(0.0005)
    for t in threads:
        t.join()


generate(1, 16, "warmup", 0)
one_at_a_time("c1", 6, 1000)
post("/flush_cache", {})
time.sleep(0.5)
one_at_a_time("flushed", 4, 2000)
for w in range(4):
    wave("waves", w, 3000 + 100 * w)
post(
    "/start_profile",
    {
        "output_dir": OUT,
        "num_steps": 8,
        "activities": ["CPU", "GPU"],
        "with_stack": False,
        "record_shapes": False,
        "profile_prefix": "wave",
    },
)
wave("profiled", 0, 4000)
for w in range(2):
    wave("after", w, 5000 + 100 * w)
with open(f"{OUT}/waves.json", "w") as f:
    json.dump(records, f, indent=1)
print(f"{len(records)} requests")
