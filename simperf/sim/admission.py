"""Admission: SGLang's `PrefillAdder` — which waiting requests join the next extend batch, and how much of each.

The waiting queue arrives already ordered by the rank's scheduling policy (simperf/sim/policy/); the adder takes
requests from its head while three budgets last (docs/serving-model.md §1.4):

* chunk tokens: `chunked_prefill_size` per iteration (less the decode rows riding along under mixed chunking); a
  request that does not fit is cut at a page boundary and continues next iteration as *the* chunked request;
* input tokens: `max_prefill_tokens` per iteration;
* KV tokens: free + evictable pool tokens, less what running requests are expected to still write
  (`min(max_new − out, CLIP_MAX_NEW_TOKENS) × new_token_ratio`); a request needs its uncached prompt, its own
  clipped output reservation and a page. When it does not fit, admission stops (head-of-line blocking: SGLang
  does not skip ahead to a smaller request). The budget is read live (SGLang's `rem_total_tokens` property):
  a cached prefix that admission locks is no longer evictable. A chunked request's next chunk is capped by it.

`max_running_requests` caps the running batch (`batch_is_full`). A request that does not fit the KV budget also
marks the running batch full (SGLang 0.5.17 `_get_new_batch_prefill_raw`: `NO_TOKEN` sets `batch_is_full`), and
a full batch admits nothing — not even when `new_token_ratio` decays — until a request leaves it (finishes or is
retracted). A request that could never fit the pool is rejected with a reason. A PD decode server receives whole
prompts' KV: no chunking, no prefill budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from simperf.sglang_defaults import CLIP_MAX_NEW_TOKENS

if TYPE_CHECKING:
    from simperf.sim.rank import RankState

UNLIMITED = 1 << 60


def ceil_page(n: int, page: int) -> int:
    return -(-n // page) * page


def floor_page(n: int, page: int) -> int:
    return n // page * page


@dataclass
class ExtendPlan:
    """What one rank runs in an extend iteration: per request, new tokens, cached prefix, last chunk or not."""

    reqs: list[int]
    extend_lens: list[int]
    prefix_lens: list[int]
    last_chunk: list[bool]
    mixed_decode: bool = False  # running requests ride along as 1-token extends (--enable-mixed-chunk)

    def add(self, r: int, extend: int, prefix: int, last: bool) -> None:
        self.reqs.append(r)
        self.extend_lens.append(extend)
        self.prefix_lens.append(prefix)
        self.last_chunk.append(last)


class AddResult(Enum):
    """SGLang's `AddReqResult`: keep adding, stop for lack of KV tokens, stop for another budget."""

    CONTINUE = "continue"
    NO_TOKEN = "no_token"
    OTHER = "other"


Reject = Callable[[int, str], None]


class PrefillAdder:
    """One admission pass over one rank (built fresh every scheduler iteration, as SGLang builds its adder)."""

    __slots__ = ("rank", "plan", "rem_chunk", "rem_input", "rem_total_offset", "running_bs")

    def __init__(self, rank: RankState) -> None:
        s = rank.s
        self.rank = rank
        self.running_bs = running_bs = len(rank.running)
        mixed = s.enable_mixed_chunk and running_bs > 0
        riding = running_bs if mixed else 0
        chunk_cap = s.chunked_prefill_size if s.chunked_prefill_size > 0 and not rank.prebuilt else UNLIMITED
        self.rem_chunk = chunk_cap - riding
        self.rem_input = UNLIMITED if rank.prebuilt else s.max_prefill_tokens - riding
        self.rem_total_offset = rank.running_output_reservation()
        self.plan = ExtendPlan([], [], [], [], mixed_decode=mixed)

    @property
    def rem_total(self) -> float:
        """The KV budget left, read live as SGLang's `rem_total_tokens` property is (0.5.17
        managers/schedule_policy.py): available + evictable now, less what this pass and the running batch have
        reserved. Live matters with the radix cache: locking an admitted request's cached prefix takes its
        tokens out of the evictable ones, and a snapshot taken when the adder was built would not see that."""
        return self.rank.free_tokens - self.rem_total_offset

    def add_chunked_req(self, r: int) -> bool:
        """The next chunk of the request being prefilled in chunks; True when it is its last.

        As SGLang 0.5.17's `PrefillAdder.add_chunked_req` (managers/schedule_policy.py), the chunk is capped by
        the KV budget as well as the chunk budget, `min(rem_chunk_tokens, int(rem_total_tokens))`, falling back
        to the chunk budget when the KV budget is spent (the chunked request always runs), and is charged
        its page-rounded length plus one page (`_update_prefill_budget`). Unlike SGLang, simperf compares the
        page-rounded length with the cap and cuts at a page boundary, so that a chunk never allocates more
        pages than the budget holds (SGLang's allocator rounds a last chunk of 113 tokens up to 128).
        """
        t, page = self.rank.t, self.rank.page
        prefix = t.prefilled[r]
        remaining = t.fill_len[r] - prefix
        cap = min(self.rem_chunk, int(self.rem_total))
        if cap <= 0:
            cap = self.rem_chunk
        whole = ceil_page(prefix + remaining, page) - ceil_page(prefix, page)
        take = remaining if whole <= cap else floor_page(prefix + cap, page) - prefix
        take = max(take, min(remaining, page))  # the chunk always progresses
        last = take >= remaining
        self.plan.add(r, take, prefix, last)
        pages = ceil_page(take, page)
        self.rem_chunk -= pages
        self.rem_input -= pages
        out = min(t.output_len[r] - t.out_done[r], CLIP_MAX_NEW_TOKENS) if last else 0
        self.rem_total_offset += pages + page + out
        return last

    def add_waiting(self, reject: Reject) -> None:
        """Admit from the head of the (policy-ordered) waiting queue until a budget stops it."""
        rank = self.rank
        waiting = rank.waiting
        max_running = rank.s.max_running_requests
        while waiting:
            if self.rem_input <= 0 or self.rem_chunk <= 0:
                return
            # batch_is_full: the running batch and this one's requests reach max_running_requests (a request
            # being prefilled in chunks is counted once)
            if self.running_bs + len(self.plan.reqs) - (rank.chunked is not None) >= max_running:
                rank.batch_is_full = True
                return
            result = self.add_one_req(waiting[0], reject)
            if result is AddResult.NO_TOKEN and not rank.prebuilt:
                # the KV budget stopped admission: SGLang marks the running batch full and does not try again
                # until a request leaves it (0.5.17 managers/scheduler.py, _get_new_batch_prefill_raw)
                rank.batch_is_full = True
            if result is not AddResult.CONTINUE:
                return

    def add_one_req(self, r: int, reject: Reject) -> AddResult:
        """Admit request r, the queue's head, whole or as a first chunk — or say why not."""
        rank = self.rank
        t, page = rank.t, rank.page
        cached = rank.cache.match(t.hashes[r], t.fill_len[r] - 1) if rank.cache is not None else 0
        ext = t.fill_len[r] - cached
        out_reserve = min(t.output_len[r] - t.out_done[r], CLIP_MAX_NEW_TOKENS)
        if t.fill_len[r] + out_reserve + page >= rank.capacity:
            rank.waiting.popleft()
            reject(r, f"needs {ext + out_reserve + page} KV tokens; the pool holds {rank.capacity} per rank")
            return AddResult.CONTINUE
        need = ext + out_reserve + page
        if need >= self.rem_total:
            return AddResult.NO_TOKEN
        # checked again as the budget stands once r's cached prefix is locked: SGLang 0.5.17 re-checks
        # `rem_total_tokens` inside `_lock_node` ("may decrease after the lock acquisition"); a locked prefix is no
        # longer evictable, so it no longer counts as free
        if cached and need >= self.rem_total - rank.cache.lock_cost(t.hashes[r], t.fill_len[r] - 1):
            return AddResult.NO_TOKEN
        if ceil_page(ext, page) > self.rem_chunk and floor_page(cached + self.rem_chunk, page) - cached <= 0:
            return AddResult.OTHER
        rank.waiting.popleft()
        cached = rank.admit(r)
        ext = t.fill_len[r] - cached
        pages = ceil_page(ext, page)
        if pages > self.rem_chunk:
            rank.chunked = r
            self.plan.add(r, floor_page(cached + self.rem_chunk, page) - cached, cached, False)
            return AddResult.OTHER
        self.plan.add(r, ext, cached, True)
        self.rem_chunk -= pages
        self.rem_input -= pages
        self.rem_total_offset += pages + page + out_reserve
        return AddResult.CONTINUE
