"""Log every garbage collection of at least GC_LOG_MIN_MS (default 1) milliseconds, in every Python process started
with this directory on PYTHONPATH and GC_LOG_DIR set (groundtruth/profile_corpus_waves.sh): one JSON line per
collection in GC_LOG_DIR/gc-PID.jsonl with the wall time it started, its generation and duration, and the process'
title (SGLang renames its scheduler `sglang::scheduler`). Why: SGLang 0.5.17 logs long collections of its API server
only (`--gc-warning-threshold-secs`, tokenizer_manager.py); the question here is whether the scheduler's own
collections are what stretches some eager extend launches (docs/overheads.md "Slow launches")."""

import gc
import json
import os
import time

_dir = os.environ.get("GC_LOG_DIR")
if _dir:
    _min_s = float(os.environ.get("GC_LOG_MIN_MS", "1")) / 1e3
    _started: dict[int, float] = {}

    def _title() -> str:
        try:
            with open("/proc/self/cmdline", "rb") as f:
                return f.read().split(b"\0")[0].decode(errors="replace")[:60]
        except OSError:
            return "?"

    def _on_gc(phase: str, info: dict) -> None:
        generation = info.get("generation", -1)
        if phase == "start":
            _started[generation] = time.time()
            return
        start = _started.pop(generation, None)
        if start is None:
            return
        duration = time.time() - start
        if duration < _min_s:
            return
        line = {"start_s": start, "duration_ms": duration * 1e3, "generation": generation,
                "collected": info.get("collected"), "objects": gc.get_count(), "title": _title()}  # fmt: skip
        with open(os.path.join(_dir, f"gc-{os.getpid()}.jsonl"), "a") as f:
            f.write(json.dumps(line) + "\n")

    gc.callbacks.append(_on_gc)
