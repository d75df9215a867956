"""SGLang's API server as a queue: every streamed chunk passes through one process, one at a time.

A scheduler iteration's processed tokens go to the detokenizer and then to the API server (TokenizerManager,
uvicorn), one Python process whose event loop wakes each request's stream and writes its chunk; the same loop
receives new requests. When the scheduler emits chunks faster than that loop writes them, chunks queue: the client
sees them late, TPOT grows to (open streams x time per chunk), and a new request waits behind the queue before it
reaches the scheduler. SGLang 0.5.17 coalesces a backlogged request's pending outputs into one chunk
(TokenizerManager._wait_one_response), but its per-request output handling (_handle_batch_output) still runs once
per request and iteration, so the queue is priced per request-iteration ("chunk") here.

The time per chunk (`Overheads.frontend_us_per_chunk`) was measured where the API server saturated at the fewest
streams (the H200 host, 128 streams; docs/overheads.md). It grows with the requests the API server holds open
(`share_per_open_request`, Overheads.frontend_share_per_open_request): measured as the API server's CPU time per
chunk at 64-512 streams on one host, the growth where py-spy finds Python's garbage collector at work; the base
is the saturated run's time taken back to no open request. A request is open from when the scheduler receives it
(`request_opened`) until its last chunk is written (`request_closed`). The H200 host's own growth, read from its
runs' throughput, is steeper (56 us a chunk at 128 streams, 94 at 512): the share takes it half of the way.

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
- `request_opened()` / `request_closed(at_s)` count the requests held open; a chunk written from `start`
  costs its time x (1 + share x the requests open at `start`: opened, less those closed at or before it).
- With the cost 0 the queue is off: `stream` returns `emit_s` and `backlog_end` returns `at_s`, so the
  simulation is exactly what it was without it (tests/test_frontend.py).
"""

from __future__ import annotations

import bisect
import heapq

US = 1e-6


class FrontEnd:
    def __init__(
        self, us_per_chunk: float, us_per_streamed_token: float = 0.0, share_per_open_request: float = 0.0
    ) -> None:
        self.chunk_s = us_per_chunk * US
        self.token_s = us_per_streamed_token * US
        self.share_per_open = share_per_open_request
        self._open = 0  # requests opened, less those closed at or before the last time asked
        self._closing: list[float] = []  # when each request not yet counted closed has its last chunk written
        self.enabled = self.chunk_s > 0 or self.token_s > 0
        self._counting = self.enabled and share_per_open_request > 0  # open requests matter only then
        self._free_s = 0.0
        # (emit time, time the queue is empty after that emit's chunks), for backlog_end; pruned as queries pass
        self._emits: list[float] = []
        self._ends: list[float] = []
        self.max_wait_s = 0.0  # longest a batch's chunks waited for the queue (reports)
        self.chunks_written = 0  # every chunk a client receives, once (checked against the records in tests)

    def stream(self, emit_s: float, chunks: int, streamed_tokens: float = 0.0) -> float:
        """When the last of `chunks` chunks emitted at `emit_s`, carrying `streamed_tokens` tokens, is written."""
        start, per_chunk_s = self.stream_span(emit_s, chunks, streamed_tokens)
        return start + chunks * per_chunk_s

    def stream_span(self, emit_s: float, chunks: int, streamed_tokens: float = 0.0) -> tuple[float, float]:
        """(when the API server starts on these chunks, mean time per chunk): chunk i (from 0) is written at
        start + (i + 1) x that time (the chunks' order within a batch is not tracked, so each costs the mean)."""
        if not self.enabled or chunks <= 0:
            return emit_s, 0.0
        self.chunks_written += chunks
        start = max(emit_s, self._free_s)
        self.max_wait_s = max(self.max_wait_s, start - emit_s)
        per_chunk_s = (self.chunk_s + self.token_s * streamed_tokens / chunks) * (
            1.0 + self.share_per_open * self.open_requests(start)
        )
        self._free_s = start + chunks * per_chunk_s
        self._emits.append(emit_s)
        self._ends.append(self._free_s)
        return start, per_chunk_s

    def request_opened(self) -> None:
        if self._counting:
            self._open += 1

    def request_closed(self, at_s: float) -> None:
        """A request's last chunk is written at `at_s`: it is no longer open from then on."""
        if self._counting:
            heapq.heappush(self._closing, at_s)

    def open_requests(self, at_s: float) -> int:
        """Requests open at `at_s` (asked in non-decreasing order: a closed request is forgotten)."""
        while self._closing and self._closing[0] <= at_s:
            heapq.heappop(self._closing)
            self._open -= 1
        return self._open

    def backlog_end(self, at_s: float) -> float:
        if not self.enabled:
            return at_s
        i = bisect.bisect_right(self._emits, at_s)
        end = self._ends[i - 1] if i else 0.0
        if i > 1024:  # earlier emits no longer matter: queries only move forward
            del self._emits[: i - 1], self._ends[: i - 1]
        return max(at_s, end)
