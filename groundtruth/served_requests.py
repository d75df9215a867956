"""Requests the served-profile drivers send (groundtruth/profile_served.py, profile_dp_rider.py): HTTP to a local
SGLang server, prompts as token ids so their lengths are exact. Imported by the drivers, which run as scripts from
the repository root (their directory is on sys.path)."""

from __future__ import annotations

import json
import random
import urllib.request


def post(url: str, path: str, body: dict, timeout: float = 600) -> str:
    req = urllib.request.Request(
        url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read().decode()


def generate(url: str, seed: int, new_tokens: int, prompt_len: int = 1024) -> None:
    """One request of `prompt_len` random token ids, `new_tokens` outputs (ignore_eos, greedy)."""
    rng = random.Random(seed)
    ids = [rng.randrange(1000, 30000) for _ in range(prompt_len)]
    sampling = {"max_new_tokens": new_tokens, "ignore_eos": True, "temperature": 0.0}
    post(url, "/generate", {"input_ids": ids, "sampling_params": sampling})
