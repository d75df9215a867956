"""How SGLang's API server receives a closed loop's first burst: per-request receive gaps and the pauses between them.

Read from `groundtruth/experiments/api-server-burst-h100/` (groundtruth/profile_paced.sh with OUTPUT_LEN=8 and
SPY_FORMAT=speedscope: one burst of C requests of 128 prompt tokens and 8 outputs per load, so a run is little more
than its receive phase): the server's per-request export (`requests.csv`, reduce_paced.py) and py-spy's samples of
the API server in time order (`api-cC.txt`, speedscope JSON); and `api-server-gc-h100/`, the same with SGLang's
`--gc-warning-threshold-secs 0.005` (its log names every collection longer than 5 ms) and `/freeze_gc` called after
the second load. docs/overheads.md states what they show; the tests recompute it. Nothing here is a cost the
simulator charges.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# bench_serving sends one warm-up request, waits for it, then the burst: a gap this long starts a new burst
BURST_GAP_S = 0.5
# a gap between two receipts longer than this is a pause (a receipt itself takes ~0.3 ms)
PAUSE_MS = 5.0


@dataclass(frozen=True)
class Burst:
    requests: int
    median_gap_ms: float  # the receipts' median spacing
    pauses_ms: tuple[float, ...]  # gaps longer than PAUSE_MS, in order
    pause_after: tuple[int, ...]  # after which receipt (0-based) each pause came
    span_ms: float  # first to last receipt

    @property
    def paused_ms(self) -> float:
        return float(sum(self.pauses_ms))


def bursts(requests_csv: Path, min_prompt_tokens: int = 100) -> list[Burst]:
    """The bursts of an experiment's export: receipts of bench prompts, split where the client waited."""
    rows = list(csv.DictReader(Path(requests_csv).open()))
    received = np.sort(
        [float(r["request_received_ts"]) for r in rows if int(r["prompt_tokens"]) >= min_prompt_tokens]
    )
    out = []
    for group in np.split(received, np.where(np.diff(received) > BURST_GAP_S)[0] + 1):
        if len(group) < 2:
            continue  # the warm-up request, alone before its burst
        gaps_ms = np.diff(group) * 1e3
        pause = np.where(gaps_ms > PAUSE_MS)[0]
        out.append(
            Burst(
                requests=len(group),
                median_gap_ms=float(np.median(gaps_ms)),
                pauses_ms=tuple(float(g) for g in gaps_ms[pause]),
                pause_after=tuple(int(i) for i in pause),
                span_ms=float((group[-1] - group[0]) * 1e3),
            )
        )
    return out


def longest_same_stack(speedscope: Path) -> tuple[int, str]:
    """(samples, innermost frame 'name (file:line)') of the longest run of consecutive identical stacks of the
    busiest thread in a py-spy speedscope file: a long run at one trivial line is the interpreter busy elsewhere
    than the line says (CPython 3.12 runs its cyclic garbage collector at such points)."""
    data = json.loads(Path(speedscope).read_text())
    frames = data["shared"]["frames"]
    profile = max(data["profiles"], key=lambda p: len(p["samples"]))
    best, best_stack, run, previous = 0, [], 0, None
    for stack in profile["samples"]:
        run = run + 1 if stack == previous else 1
        previous = stack
        if run > best:
            best, best_stack = run, stack
    if not best_stack:
        return best, ""
    frame = frames[best_stack[-1]]
    return best, f"{frame['name']} ({Path(frame.get('file', '')).name}:{frame.get('line', '')})"


# SGLang 0.5.17 utils/common.py configure_gc_warning (--gc-warning-threshold-secs): one line per longer collection
_LONG_GC = re.compile(
    r"^\[(?P<at>[^\]]+)\] LONG GARBAGE COLLECTION DETECTED \| Generation (?P<gen>\d) \| Duration: (?P<s>[\d.]+)s"
    r" \| # Objects: gen0=\d+, gen1=\d+, gen2=(?P<objects>\d+)"
)


@dataclass(frozen=True)
class Collection:
    at: str  # the log line's time stamp
    generation: int
    seconds: float
    gen2_objects: int  # objects in the oldest generation when it ended


def long_collections(server_log: Path) -> list[Collection]:
    """The garbage collections SGLang logged as longer than --gc-warning-threshold-secs, in order."""
    out = []
    for line in Path(server_log).read_text().splitlines():
        m = _LONG_GC.match(line)
        if m:
            out.append(Collection(m["at"], int(m["gen"]), float(m["s"]), int(m["objects"])))
    return out
