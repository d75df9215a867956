"""Per-request state: the struct-of-arrays the hot loop indexes (`RequestTable`), and `Request`, a view of one row.

The table keeps one Python list per field, indexed by request id: scalar access to lists is what the scheduler
does most, and it is several times cheaper than numpy scalar access or attribute access on per-request objects.
Code that reasons about *one* request (admission rules, retraction, tests, `--trace-request`) reads it through
`Request`, which names the fields and derives the request's phase from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simperf.radix_cache import Lease


@dataclass
class RequestTable:
    """Per-request state, one slot per request id."""

    input_len: list[int]
    output_len: list[int]
    ignore_eos: bool
    out_done: list[int] = field(init=False)  # tokens generated so far
    # tokens the current prefill must cover: the prompt, or prompt + generated tokens after a retraction
    fill_len: list[int] = field(init=False)
    prefilled: list[int] = field(init=False)  # of fill_len, tokens already in the KV cache
    kv_alloc: list[int] = field(init=False)  # KV tokens held (page granular)
    join_idx: list[int] = field(init=False)  # timeline index at which it joined decoding (-1: never)
    kv_at_join: list[int] = field(init=False)
    finish_idx: list[int] = field(init=False)  # timeline index of its last decode token
    rank: list[int] = field(init=False)  # DP rank serving it (-1: not dispatched yet)
    retractions: list[int] = field(init=False)
    # token events in time order: ("p", batch_key) for a token from an extend, ("s", rank, start, stop, accepts)
    # for a stretch of decode timeline entries (accepts: tokens per entry under speculative decoding, else None)
    events: list[list[tuple]] = field(init=False)
    # speculative decoding: accept lengths of each iteration since joining decode, and their running sum
    accept_seq: list[np.ndarray | None] = field(init=False)
    accept_cum: list[np.ndarray | None] = field(init=False)
    # prefix cache: block ids of each request (None: never hits), tokens served from the cache, held lease
    hashes: list[np.ndarray | None] = field(init=False)
    prefix_hit: list[int] = field(init=False)
    cached_at_admission: list[int] = field(init=False)
    lease: list[Lease | None] = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.input_len)
        self.out_done = [0] * n
        self.fill_len = list(self.input_len)
        self.prefilled = [0] * n
        self.kv_alloc = [0] * n
        self.join_idx = [-1] * n
        self.kv_at_join = [0] * n
        self.finish_idx = [-1] * n
        self.rank = [-1] * n
        self.retractions = [0] * n
        self.events = [[] for _ in range(n)]
        self.accept_seq = [None] * n
        self.accept_cum = [None] * n
        self.hashes = [None] * n
        self.prefix_hit = [0] * n
        self.cached_at_admission = [-1] * n
        self.lease = [None] * n

    def __len__(self) -> int:
        return len(self.input_len)

    def request(self, rid: int) -> Request:
        return Request(self, rid)


class Request:
    """One request's row of a `RequestTable`, by name. A view: it reads the table when asked, so it stays current
    while the simulation runs; it is not used on the hot path."""

    __slots__ = ("_t", "id")

    def __init__(self, table: RequestTable, rid: int) -> None:
        if not 0 <= rid < len(table):
            raise IndexError(f"request {rid}: the run has {len(table)} requests")
        self._t = table
        self.id = rid

    @property
    def input_len(self) -> int:
        return self._t.input_len[self.id]

    @property
    def output_len(self) -> int:
        return self._t.output_len[self.id]

    @property
    def rank(self) -> int:
        return self._t.rank[self.id]

    @property
    def retractions(self) -> int:
        return self._t.retractions[self.id]

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens the prefix cache served at its first admission (0 before it)."""
        return max(self._t.cached_at_admission[self.id], 0)

    @property
    def prefill_target(self) -> int:
        """Tokens its current prefill must cover (the prompt; plus its generated tokens after a retraction)."""
        return self._t.fill_len[self.id]

    @property
    def prefilled(self) -> int:
        return self._t.prefilled[self.id]

    @property
    def kv_tokens_held(self) -> int:
        return self._t.kv_alloc[self.id]

    @property
    def tokens_committed(self) -> int:
        """Output tokens counted outside the decode timeline: extend tokens, and every token once it finished or
        was retracted (a running request's decode tokens live on its rank's timeline until then)."""
        return self._t.out_done[self.id]

    def __repr__(self) -> str:
        return (
            f"Request({self.id}: {self.input_len} in / {self.output_len} out, rank {self.rank}, "
            f"prefilled {self.prefilled}/{self.prefill_target}, tokens {self.tokens_committed}, "
            f"retractions {self.retractions}, cached {self.cached_tokens})"
        )
