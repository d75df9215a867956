"""SGLang's API server as one event loop: it takes in requests, writes every streamed chunk, and finishes requests.

A scheduler iteration's processed tokens go to the detokenizer and then to the API server (TokenizerManager,
uvicorn), one Python process whose event loop wakes each request's stream and writes its chunk. When the scheduler
emits chunks faster than that loop writes them, chunks queue: the client sees them late and TPOT grows to (open
streams x time per chunk). SGLang 0.5.17 coalesces a backlogged request's pending outputs into one chunk
(TokenizerManager._wait_one_response), but its per-request output handling (_handle_batch_output) still runs once
per request and iteration, so the queue is priced per request-iteration ("chunk") here.

The same loop takes in new requests, and their intake goes first: a request's HTTP handler runs as soon as the
loop gets to it, between two chunk writes, not behind the queued chunks, and the chunks wait for it. Measured on
the corpus' timestamps (docs/overheads.md, "The API server's intake goes first"): in every first burst of 64 or
more streams the API server wrote no chunk before it had received the burst's last request, and Qwen3-0.6B's
requests sent behind a 4.3 s chunk queue (H200, 512 streams) reached it 13 ms after they were sent while their
first chunks waited out the queue.

After a request's last chunk the loop still finishes it (`finish_us_per_request`: the response's end and the
connection's close, the request's metrics record; Overheads.finish_us_per_request). That work takes turns with
the intake of new requests: a closed loop's later wave reaches the server one receipt plus one finish apart (1.77
ms median against 0.44 ms in its first wave, docs/overheads.md "Later waves reach the server slower"). It is not
put before the chunks: a paced run's time per chunk, measured as 1 / its throughput, already carries it.

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
- `receive(at_s, work_s)` (calls in non-decreasing `at_s` order, the order requests reach the loop) returns when
  the loop has taken in a request: never before `at_s` + `work_s` nor before the previous request's intake has
  ended; finishing jobs the loop started before `at_s` run to their end first, and while requests and finishes
  both wait, one finish goes before each request. The intake then `occupy`s the loop. With `work_s` and the
  finishing cost both 0 it returns `at_s`.
- `occupy(start_s, end_s)`: the loop spends [start_s, end_s] on an intake. Chunks given to `stream` before the
  call keep their times; every chunk given after it is written end_s - start_s later than it would have been (an
  idle loop is busy until end_s). The loop's busy time grows by exactly that much: the intake is moved ahead of
  queued chunks, not added twice or dropped.
- `request_opened()` / `request_closed(at_s)` count the requests held open (a chunk written from `start` costs its
  time x (1 + share x the requests open at `start`: opened, less those closed at or before it)); `request_closed`
  also queues the request's finishing job from `at_s`. Calls come in non-decreasing `at_s` order.
- With every cost 0 the loop is off: `stream` returns `emit_s`, `receive` returns `at_s` and `occupy` does
  nothing, so the simulation is exactly what it was without it (tests/test_frontend.py).
"""

from __future__ import annotations

import heapq
import math

US = 1e-6


class FrontEnd:
    def __init__(
        self,
        us_per_chunk: float,
        us_per_streamed_token: float = 0.0,
        share_per_open_request: float = 0.0,
        finish_us_per_request: float = 0.0,
    ) -> None:
        self.chunk_s = us_per_chunk * US
        self.token_s = us_per_streamed_token * US
        self.share_per_open = share_per_open_request
        self.finish_s = finish_us_per_request * US
        # the intake side of the loop: when it has received every request given so far, the finishing work still
        # to do (when each request's last chunk was written), and whether the loop's last job was an intake
        self._intake_free_s = -math.inf
        self._finishes: list[float] = []
        self._last_was_intake = False
        self._open = 0  # requests opened, less those closed at or before the last time asked
        self._closing: list[float] = []  # when each request not yet counted closed has its last chunk written
        self.enabled = self.chunk_s > 0 or self.token_s > 0
        self._counting = self.enabled and share_per_open_request > 0  # open requests matter only then
        self._free_s = 0.0  # when the loop has written every chunk given to it so far (and done its intake)
        # longest a batch's chunks waited for earlier chunks (reports: the API server pacing the stream); a wait
        # behind the loop's intake is not counted: a burst's intake delays first chunks, it does not pace tokens
        self.max_wait_s = 0.0
        self._chunks_free_s = 0.0  # when the chunks given so far would be written were intake free
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
        per_chunk_s = (self.chunk_s + self.token_s * streamed_tokens / chunks) * (
            1.0 + self.share_per_open * self.open_requests(start)
        )
        self._free_s = start + chunks * per_chunk_s
        chunks_start = max(emit_s, self._chunks_free_s)
        self.max_wait_s = max(self.max_wait_s, chunks_start - emit_s)
        self._chunks_free_s = chunks_start + chunks * per_chunk_s
        return start, per_chunk_s

    def occupy(self, start_s: float, end_s: float) -> None:
        """The loop receives a request over [start_s, end_s]: the chunks not yet written wait that long."""
        if self.enabled:
            self._free_s = max(self._free_s, start_s) + (end_s - start_s)

    def request_opened(self) -> None:
        if self._counting:
            self._open += 1

    def request_closed(self, at_s: float) -> None:
        """A request's last chunk is written at `at_s`: it is no longer open from then on, and the loop finishes it
        from then (`finish_us_per_request`)."""
        if self._counting:
            heapq.heappush(self._closing, at_s)
        if self.finish_s > 0:
            heapq.heappush(self._finishes, at_s)

    def receive(self, at_s: float, work_s: float) -> float:
        """When the loop has taken in a request that reached it at `at_s` and needs `work_s` of it (receipt,
        tokenisation): after the requests before it and the finishing work it meets (see the module's contract)."""
        if work_s <= 0 and self.finish_s <= 0:
            return at_s
        self._finish_before(at_s)
        start = max(at_s, self._intake_free_s)
        if self._last_was_intake and self._finishes and self._finishes[0] <= start:
            # requests and finishes both waiting: the loop takes one finish, then the request
            heapq.heappop(self._finishes)
            start += self.finish_s
        end = start + work_s
        self._intake_free_s, self._last_was_intake = end, True
        self.occupy(start, end)
        return end

    def _finish_before(self, at_s: float) -> None:
        """Run the finishing jobs the loop starts before `at_s` (each to its end: the loop is not preempted)."""
        while self._finishes:
            start = max(self._finishes[0], self._intake_free_s)
            if start >= at_s:
                return
            heapq.heappop(self._finishes)
            self._intake_free_s, self._last_was_intake = start + self.finish_s, False

    def open_requests(self, at_s: float) -> int:
        """Requests open at `at_s` (asked in non-decreasing order: a closed request is forgotten)."""
        while self._closing and self._closing[0] <= at_s:
            heapq.heappop(self._closing)
            self._open -= 1
        return self._open
