"""SGLang's API server as a queue: every streamed chunk passes through one process, one at a time.

A scheduler iteration's processed tokens go to the detokenizer and then to the API server (TokenizerManager,
uvicorn), one Python process whose event loop wakes each request's stream and writes its chunk; the same loop
receives new requests. When the scheduler emits chunks faster than that loop writes them, chunks queue: the client
sees them late, TPOT grows to (open streams x time per chunk), and a new request waits behind the queue before it
reaches the scheduler. SGLang 0.5.17 coalesces a backlogged request's pending outputs into one chunk
(TokenizerManager._wait_one_response), but its per-request output handling (_handle_batch_output) still runs once
per request and iteration, so the queue is priced per request-iteration ("chunk") here.

The time per chunk (`Overheads.frontend_us_per_chunk`) was measured where the API server saturated
(docs/overheads.md). On our H200 host it grew with the number of open streams (56 us at 128, 94 at 512); another
host stayed flat (81-83 us at 256-512) and a published DeepSeek-R1 run implies at most ~52 us at ~1,000 streams,
so one value, the one measured at the fewest streams, is used.

SGLang streams `/generate` cumulatively unless the server runs --incremental-streaming-output: each chunk carries
the request's whole output so far, which the API server rebuilds and serialises and the client parses again, so a
chunk costs `us_per_chunk` plus `us_per_streamed_token` for every token it carries (Overheads.
frontend_us_per_streamed_token, measured with and without the flag on one host; docs/overheads.md). A caller
passes the tokens a batch's chunks carry in all; with incremental streaming that cost is 0.

Contract:
- `stream(emit_s, chunks, streamed_tokens)` is called in non-decreasing `emit_s` order (the order batches are
  processed); it returns when the last of those chunks leaves the API server, never earlier than `emit_s`;
  `streamed_tokens` (>= 0) is the number of output tokens those chunks carry together (each chunk carries its
  request's output so far), priced only when streaming is cumulative.
- `backlog_end(at_s)` is when the chunks emitted up to `at_s` are all written: a request arriving at `at_s` is
  handled no earlier (FIFO on one event loop). Queries come in non-decreasing `at_s` order.
- With the cost 0 the queue is off: `stream` returns `emit_s` and `backlog_end` returns `at_s`, so the
  simulation is exactly what it was without it (tests/test_frontend.py).
"""

from __future__ import annotations

import bisect

US = 1e-6


class FrontEnd:
    def __init__(self, us_per_chunk: float, us_per_streamed_token: float = 0.0) -> None:
        self.chunk_s = us_per_chunk * US
        self.token_s = us_per_streamed_token * US
        self.enabled = self.chunk_s > 0 or self.token_s > 0
        self._free_s = 0.0
        # (emit time, time the queue is empty after that emit's chunks), for backlog_end; pruned as queries pass
        self._emits: list[float] = []
        self._ends: list[float] = []
        self.max_wait_s = 0.0  # longest a batch's chunks waited for the queue (reports)

    def stream(self, emit_s: float, chunks: int, streamed_tokens: float = 0.0) -> float:
        """When the last of `chunks` chunks emitted at `emit_s`, carrying `streamed_tokens` tokens, is written."""
        start, per_chunk_s = self.stream_span(emit_s, chunks, streamed_tokens)
        return start + chunks * per_chunk_s

    def stream_span(self, emit_s: float, chunks: int, streamed_tokens: float = 0.0) -> tuple[float, float]:
        """(when the API server starts on these chunks, mean time per chunk): chunk i (from 0) is written at
        start + (i + 1) x that time (the chunks' order within a batch is not tracked, so each costs the mean)."""
        if not self.enabled or chunks <= 0:
            return emit_s, 0.0
        start = max(emit_s, self._free_s)
        self.max_wait_s = max(self.max_wait_s, start - emit_s)
        per_chunk_s = self.chunk_s + self.token_s * streamed_tokens / chunks
        self._free_s = start + chunks * per_chunk_s
        self._emits.append(emit_s)
        self._ends.append(self._free_s)
        return start, per_chunk_s

    def backlog_end(self, at_s: float) -> float:
        if not self.enabled:
            return at_s
        i = bisect.bisect_right(self._emits, at_s)
        end = self._ends[i - 1] if i else 0.0
        if i > 1024:  # earlier emits no longer matter: queries only move forward
            del self._emits[: i - 1], self._ends[: i - 1]
        return max(at_s, end)
