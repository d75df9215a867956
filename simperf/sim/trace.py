"""`--trace-request ID`: one request's life as the simulator saw it, printable for debugging.

The simulator reports events of the followed requests as they happen (a dictionary look-up per event when a
trace is on; one attribute check per iteration when it is off): sent and queued, admitted (with its cached
prefix), each prefill chunk with the batch's GPU interval, tokens from extends, retractions, finish or rejection.
Decode tokens are not reported one by one (the simulator never produces them one by one); `format_trace` reads
them from the request's record, which is also where TTFT and the inter-token latencies come from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simperf.records import RequestRecords


@dataclass(frozen=True)
class TraceEvent:
    time_s: float  # simulated time, seconds since the benchmark start
    what: str  # queued | admitted | chunk | token | retracted | finished | rejected
    detail: str


@dataclass
class RequestTrace:
    """Collects the events of the requests in `ids` (request ids as the workload numbers them)."""

    ids: frozenset[int]
    events: dict[int, list[TraceEvent]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.events = {r: [] for r in self.ids}

    def add(self, r: int, time_s: float, what: str, detail: str = "") -> None:
        events = self.events.get(r)
        if events is not None:
            events.append(TraceEvent(time_s, what, detail))

    def queued(self, r: int, now: float, send_s: float, rank: int) -> None:
        self.add(r, now, "queued", f"sent at {send_s:.6f} s; waiting on DP rank {rank}")

    def extend(
        self, r: int, now: float, ext: int, prefix: int, last: bool, start_s: float, end_s: float
    ) -> None:
        """One extend of r, launched at CPU time `now`; the first after queuing or a retraction admits it."""
        events = self.events.get(r)
        if events is None:
            return
        if not events or events[-1].what in ("queued", "retracted"):
            events.append(TraceEvent(now, "admitted", f"{prefix} prompt tokens already cached"))
        tail = "last chunk" if last else "more chunks follow"
        events.append(
            TraceEvent(now, "chunk", f"{ext} tokens after {prefix}; GPU {start_s:.6f}-{end_s:.6f} s; {tail}")
        )


def format_trace(trace: RequestTrace, r: int, records: RequestRecords) -> str:
    """Request r's events and, once it finished, its record's token times (TTFT, ITL) as text."""
    lines = [f"request {r}"]
    for ev in trace.events.get(r, []):
        lines.append(f"  {ev.time_s:12.6f} s  {ev.what:9}  {ev.detail}".rstrip())
    row = np.flatnonzero(records.request_id == r)
    if row.size == 0:
        lines.append("  no record: rejected, or not part of the run")
        return "\n".join(lines)
    i = int(row[0])
    times = records.chunk_time_s[records.chunk_offsets[i] : records.chunk_offsets[i + 1]]
    send = float(records.send_s[i])
    lines.append(
        f"  client: sent {send:.6f} s, first token {float(records.first_token_s[i]):.6f} s "
        f"(TTFT {1e3 * (float(records.first_token_s[i]) - send):.3f} ms), last {float(records.finish_s[i]):.6f} s"
    )
    itl = np.diff(times)
    if itl.size:
        lines.append(
            f"  {int(records.output_len[i])} tokens in {times.size} chunks; ITL ms: median "
            f"{1e3 * float(np.median(itl)):.3f}, max {1e3 * float(itl.max()):.3f}; "
            f"retractions {int(records.retractions[i])}, cached prompt tokens {int(records.cached_tokens[i])}"
        )
    return "\n".join(lines)
