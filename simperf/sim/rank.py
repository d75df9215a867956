"""One DP rank's scheduler state: waiting queue, running batch, KV pool, chunked request (docs/serving-model.md §1.3–1.8).

Per-request state lives in flat Python lists shared by all ranks (`RequestTable`), indexed by request id: scalar
access to lists is what the hot loop does most, and it is several times cheaper than numpy scalar access.

Decode bookkeeping avoids per-token work: each rank has a *token timeline*, one entry per iteration in which its
running requests each receive a token. A request that joins decoding at timeline index `join` with `kv` tokens in
its cache has `kv + (t - join) + 1` KV tokens at index t and finishes at index `finish` known on joining, so a run of
decode steps is a few integer updates, and per-token times are read off the timeline at the end.
"""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np

from simperf.radix_cache import Lease, RadixCache
from simperf.scenario.resolved import ResolvedServing
from simperf.sglang_defaults import (
    CLIP_MAX_NEW_TOKENS,
    IGNORE_EOS_FULL_RESERVATION_SINCE,
    RETRACT_DECODE_STEPS,
    version_tuple,
)
from simperf.sim.admission import ExtendPlan, PrefillAdder, Reject, ceil_page
from simperf.sim.policy import SchedulePolicy, WaitingQueue, make_policy
from simperf.sim.request import RequestTable
from simperf.sim.spec import AcceptSampler

__all__ = ["ExtendPlan", "RankState", "RequestTable"]


class RankState:
    def __init__(
        self,
        rank_id: int,
        serving: ResolvedServing,
        table: RequestTable,
        sampler: AcceptSampler | None = None,
    ) -> None:
        self.rank_id = rank_id
        self.s = serving
        self.t = table
        self.page = serving.page_size
        self.capacity = serving.max_total_tokens
        self.used = 0  # KV tokens allocated on this rank
        self.waiting: deque[int] = deque()
        self.running: list[int] = []
        self._running_pos: dict[int, int] = {}
        self._join_seq: dict[int, int] = {}  # position in SGLang's running batch order (merges append)
        self._joins = 0
        self._finish_heap: list[tuple[int, int]] = []  # (finish_idx, req), lazily pruned
        self.chunked: int | None = None
        self.kv_base_sum = 0  # Σ (kv_at_join - join_idx) over running
        self.finish_sum = 0  # Σ finish_idx over running (for the clipped output reservation)
        # Σ (tokens streamed before joining - tokens_per_step x join_idx) over running, and each one's term: what
        # a cumulative stream's chunks carry (chunks_after_step)
        self.streamed_base_sum = 0.0
        self._streamed_base: dict[int, float] = {}
        # --stream-interval k > 1 (one token a step: no speculative decoding): a request sends after the step that
        # makes its output count 1 mod k, so the running set is kept by that phase (its base mod k), with the
        # count and the Σ base of each phase (chunks_after_step)
        self.stream_interval = serving.stream_interval
        self._phase_count = [0] * self.stream_interval
        self._phase_base = [0.0] * self.stream_interval
        self._long: set[int] = set()  # running requests whose remaining output may exceed the 4096 clip
        self._kv_heap: list[tuple[int, int, int]] = []  # (join index - KV at join, join seq, request): _join
        # SGLang >= 0.5.6 reserves ignore_eos requests' whole remaining output (ρ = 1, add_one_req_ignore_eos) only
        # when the radix cache is disabled; with the cache on (the default) running requests reserve
        # x new_token_ratio like any other (0.5.6 and 0.5.17 managers/schedule_policy.py, PrefillAdder.add_one_req
        # and _get_running_request_total_token_offset). Seen on the ground truth: 207 requests admitted at C = 256
        # on a 363,119-token pool (groundtruth/h100/qwen3-8b-flashinfer/c256-1k-1k), as x 0.7 gives and x 1 does not.
        self.ratio_applies = not (
            table.ignore_eos
            and version_tuple(serving.sglang_version) >= IGNORE_EOS_FULL_RESERVATION_SINCE
            and serving.disable_radix_cache
        )
        self.timeline_len = 0
        self.timeline_emit = np.zeros(1024)
        self.new_token_ratio = serving.init_new_token_ratio
        # speculative decoding: tokens per iteration vary per request (drawn on joining); KV grows by the
        # accepted tokens, and each iteration needs room for the draft tokens (docs/serving-model.md §3)
        self.sampler = sampler
        self.prebuilt = False  # PD decode server: prompts arrive with their KV (set by the simulator)
        # radix cache (docs/serving-model.md §1.9): cached tokens share the pool with requests' private KV; `used` counts the
        # private part, the cache its own, and unlocked cached tokens count as free for admission
        self.cache: RadixCache | None = None
        self.policy: SchedulePolicy = make_policy("fcfs", None)
        spec = serving.speculative
        self.tokens_per_step = sampler.mean if sampler is not None else 1.0
        self.max_tokens_per_step = spec.num_steps + 1 if spec is not None else 1
        self.draft_reserve = 2 * max(spec.num_steps * spec.eagle_topk, spec.num_draft_tokens) if spec else 0
        self.batch_is_full = False
        self.retracted_total = 0
        self.max_used = 0

    # ---------------------------------------------------------------- running set
    def _join(self, r: int) -> None:
        t = self.t
        t.join_idx[r] = self.timeline_len
        t.kv_at_join[r] = t.fill_len[r]
        remaining = t.output_len[r] - t.out_done[r]
        if self.sampler is not None:
            seq = self.sampler.draw(remaining)
            t.accept_seq[r] = seq
            t.accept_cum[r] = np.cumsum(seq)
            t.finish_idx[r] = self.timeline_len + len(seq) - 1
        else:
            t.finish_idx[r] = self.timeline_len + remaining - 1
        self._running_pos[r] = len(self.running)
        self.running.append(r)
        self._joins += 1
        self._join_seq[r] = self._joins
        heapq.heappush(self._finish_heap, (t.finish_idx[r], r))
        # for the longest running KV (decode_kv_extent)
        heapq.heappush(self._kv_heap, (t.join_idx[r] - t.kv_at_join[r], self._joins, r))
        self.kv_base_sum += t.kv_at_join[r] - self.tokens_per_step * t.join_idx[r]
        self.finish_sum += t.finish_idx[r]
        streamed_base = t.out_done[r] - self.tokens_per_step * t.join_idx[r]
        self._streamed_base[r] = streamed_base
        self.streamed_base_sum += streamed_base
        if self.stream_interval > 1:
            phase = int(streamed_base) % self.stream_interval
            self._phase_count[phase] += 1
            self._phase_base[phase] += streamed_base
        if remaining > CLIP_MAX_NEW_TOKENS:
            self._long.add(r)
        self._start_reading(r)

    def _read_lease(self, r: int) -> Lease | None:
        """The lease a running request reads its cached prefix through (RadixCache.add_reader), if it holds one:
        its current lease, since cache_unfinished stops reading the old one before swapping it."""
        lease = self.t.lease[r]
        return lease if self.cache is not None and lease is not None and lease.tokens > 0 else None

    def _start_reading(self, r: int) -> None:
        lease = self._read_lease(r)
        if lease is not None:
            self.cache.add_reader(lease)  # type: ignore[union-attr]

    def _stop_reading(self, r: int) -> None:
        lease = self._read_lease(r)
        if lease is not None:
            self.cache.remove_reader(lease)  # type: ignore[union-attr]

    def shared_prefix_reads(self) -> int:
        """KV tokens the next decode step reads that another running request also reads: shared prefix pages
        (radix-cache hits of one prefix), counted once per reader beyond the first. Constant while the running
        set is (a decode run's contract); 0 without a prefix cache."""
        return self.cache.duplicated_reads if self.cache is not None else 0

    def _leave(self, r: int) -> None:
        t = self.t
        self._stop_reading(r)
        pos = self._running_pos.pop(r)
        del self._join_seq[r]
        last = self.running.pop()
        if last != r:
            self.running[pos] = last
            self._running_pos[last] = pos
        self.kv_base_sum -= t.kv_at_join[r] - self.tokens_per_step * t.join_idx[r]
        self.finish_sum -= t.finish_idx[r]
        streamed_base = self._streamed_base.pop(r)
        self.streamed_base_sum -= streamed_base
        if self.stream_interval > 1:
            phase = int(streamed_base) % self.stream_interval
            self._phase_count[phase] -= 1
            self._phase_base[phase] -= streamed_base
        self._long.discard(r)
        self.batch_is_full = False

    def generated_since_join(self, r: int, at: int | None = None) -> int:
        """Tokens running request r got from decode iterations before timeline index `at` (default: now)."""
        t = self.t
        steps = (self.timeline_len if at is None else at) - t.join_idx[r]
        if steps <= 0:
            return 0
        cum = t.accept_cum[r]
        return steps if cum is None else int(cum[min(steps, len(cum)) - 1])

    def kv_len_now(self, r: int) -> int:
        """KV tokens of running request r before the next decode step."""
        return self.t.kv_at_join[r] + self.generated_since_join(r)

    def decode_kv_totals(self, offsets: np.ndarray) -> np.ndarray:
        """Σ KV tokens each decode step attends to (incl. its new token), `offsets` steps from now.

        Exact without speculative decoding; with it, KV grows by the *mean* accept length per step (the cost of
        attention depends on total KV, and the per-request draws average out over a batch).
        """
        bs = len(self.running)
        return self.decode_kv_now() + (bs * self.tokens_per_step) * offsets

    def decode_kv_extent(self) -> tuple[int, int]:
        """(Σ, max) of decode_kv_lens without building it where it can: without speculative decoding every running
        request's KV grows by one a step, so the order by KV at join less join index is the order by KV now (a
        heap, stale entries dropped lazily). Needs a running request."""
        if self.sampler is not None:
            kv = self.decode_kv_lens()
            return sum(kv), max(kv)
        heap = self._kv_heap
        while self._join_seq.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)
        return int(round(self.decode_kv_now())), self.kv_len_now(heap[0][2]) + 1

    def decode_kv_lens(self) -> list[int]:
        """Each running request's KV tokens the next decode step attends to (incl. its new token)."""
        return [self.kv_len_now(r) + 1 for r in self.running]

    def decode_kv_now(self) -> float:
        """decode_kv_totals at offset 0: Σ KV tokens the next decode step attends to (incl. its new token)."""
        bs = len(self.running)
        return self.kv_base_sum + bs * self.tokens_per_step * self.timeline_len + bs

    def chunks_after_step(self, offset: int = 0) -> tuple[int, float]:
        """(chunks the running requests send after the decode step `offset` steps from now, the output tokens they
        carry together, each its request's whole output so far: SGLang's cumulative streaming; the mean accept
        length per step under speculative decoding, as decode_kv_totals). At stream interval 1 every request
        sends; at k a request sends when the step makes its output count 1 mod k (SGLang 0.5.17
        output_streamer.py), and when it finishes. The running set must not change before that step (a decode
        run's contract)."""
        bs = len(self.running)
        after = self.timeline_len + 1 + offset  # a request's output count after that step is its base + this
        if self.stream_interval == 1:
            return bs, self.streamed_base_sum + bs * self.tokens_per_step * after
        phase = (1 - after) % self.stream_interval
        chunks, carried = self._phase_count[phase], self._phase_base[phase] + self._phase_count[phase] * after
        step = self.timeline_len + offset
        # requests that finish at that step send their last chunk whatever their phase
        if self.steps_to_first_finish() == offset + 1:
            for r in self.running:
                base = self._streamed_base[r]
                if self.t.finish_idx[r] == step and int(base) % self.stream_interval != phase:
                    chunks += 1
                    carried += base + after
        return chunks, carried

    def steps_to_first_finish(self) -> int:
        heap = self._finish_heap
        finish_idx = self.t.finish_idx
        while heap and (heap[0][1] not in self._running_pos or finish_idx[heap[0][1]] != heap[0][0]):
            heapq.heappop(heap)
        return heap[0][0] - self.timeline_len + 1 if heap else 1 << 30

    # ---------------------------------------------------------------- memory
    @property
    def free_tokens(self) -> int:
        """SGLang's available + evictable."""
        if self.cache is None:
            return self.capacity - self.used
        return self.capacity - self.used - self.cache.cached_tokens + self.cache.evictable_tokens

    def _allocate(self, tokens: int) -> None:
        """Take `tokens` private KV slots, evicting least recently used cached blocks if the pool is full."""
        if self.cache is not None and tokens > 0:
            short = tokens - (self.capacity - self.used - self.cache.cached_tokens)
            if short > 0:
                self.cache.evict(short)
        self.used += tokens
        in_pool = self.used + (self.cache.cached_tokens if self.cache is not None else 0)
        self.max_used = max(self.max_used, in_pool)

    def running_output_reservation(self) -> float:
        """Σ over running of min(max_new - out, 4096)·ρ_r (docs/serving-model.md §1.4; ρ_r = 1 for ignore_eos requests when
        the radix cache is disabled, SGLang >= 0.5.6; new_token_ratio otherwise)."""
        bs = len(self.running)
        if not bs:
            return 0.0
        if self.sampler is not None:
            t = self.t
            total = sum(
                min(t.output_len[r] - t.out_done[r] - self.generated_since_join(r), CLIP_MAX_NEW_TOKENS)
                for r in self.running
            )
        elif not self._long:
            # remaining output of r at timeline index t is finish_idx - t + 1
            total = self.finish_sum - bs * self.timeline_len + bs
        else:
            t = self.t
            now = self.timeline_len
            total = sum(min(t.finish_idx[r] - now + 1, CLIP_MAX_NEW_TOKENS) for r in self.running)
        return total * (self.new_token_ratio if self.ratio_applies else 1.0)

    def decode_steps_that_fit(self) -> int:
        """Decode steps the KV pool can take without a check failing (conservative for page_size > 1)."""
        bs = len(self.running)
        if bs == 0:
            return 1 << 30
        free = self.free_tokens
        if self.sampler is not None:
            # each step may take up to num_steps + 1 tokens per request and needs its draft reserve free
            room = free - bs * self.draft_reserve
            return max(0, room // (bs * (self.max_tokens_per_step + self.page - 1)))
        if self.page == 1:
            return free // bs
        return max(0, free // bs - self.page + 1)

    def next_decode_fits(self) -> bool:
        """check_decode_mem: a request needs a new page when its KV length is a multiple of the page size."""
        if self.sampler is not None:
            return len(self.running) * (self.draft_reserve + self.page) <= self.free_tokens
        if self.page == 1:
            return len(self.running) <= self.free_tokens
        need = sum(self.page for r in self.running if self.kv_len_now(r) % self.page == 0)
        return need <= self.free_tokens

    def _new_decode_alloc(self, k: int) -> int:
        p = self.page
        if self.sampler is not None:
            end = self.timeline_len + k
            total = 0
            for r in self.running:
                before = self.kv_len_now(r)
                after = self.t.kv_at_join[r] + self.generated_since_join(r, end)
                total += -(-after // p) * p - (-(-before // p) * p)
            return total
        if self.page == 1:
            return len(self.running) * k
        kv = np.fromiter((self.kv_len_now(r) for r in self.running), dtype=np.int64, count=len(self.running))
        return int(((kv + k + p - 1) // p * p - (kv + p - 1) // p * p).sum())

    # ---------------------------------------------------------------- ordering and admission
    def set_policy(self, name: str, seed: int) -> None:
        """The scheduling policy that orders this rank's waiting queue (after the prefix cache is set up)."""
        self.policy = make_policy(name, self.cache, seed)

    def form_extend(self, reject: Reject) -> ExtendPlan | None:
        """One scheduler pass: the chunked request first, then SchedulePolicy orders the waiting queue and
        PrefillAdder admits from its head (docs/serving-model.md §1.4). `reject(r, reason)` drops a request that
        can never run."""
        if not self.waiting and self.chunked is None:
            return None
        adder = PrefillAdder(self)
        if self.chunked is not None and not adder.add_chunked_req(self.chunked):
            return adder.plan
        if self.batch_is_full:
            # SGLang 0.5.17 managers/scheduler.py, _get_new_batch_prefill_raw: a running batch marked full (by
            # max_running_requests or by a request the KV budget refused) takes no waiting request until a request
            # leaves it; only the chunked request's next chunk runs
            return adder.plan if adder.plan.reqs else None
        if self.policy.reorders and len(self.waiting) > 1:
            order = self.policy.order(WaitingQueue(list(self.waiting), self.t, self.cache))
            if order is not None:
                self.waiting = deque(order)
        adder.add_waiting(reject)
        return adder.plan if adder.plan.reqs else None

    def admit(self, r: int) -> int:
        """r leaves the waiting queue for this rank's next batch: lock its cached prefix; returns its length."""
        t = self.t
        t.rank[r] = self.rank_id
        cached = 0
        if self.cache is not None:
            lease = self.cache.acquire(t.hashes[r], t.fill_len[r])
            t.lease[r] = lease
            cached = lease.tokens
        t.prefix_hit[r] = cached
        t.prefilled[r] = cached
        if t.cached_at_admission[r] < 0:
            t.cached_at_admission[r] = cached
        return cached

    def commit_extend(self, plan: ExtendPlan, batch_key: int) -> tuple[list[int], list[int]]:
        """Allocate KV for the plan and move finished prefills into the running batch.

        Returns (requests that get a token from this batch, requests that finish with it).
        """
        t = self.t
        page = self.page
        token_reqs: list[int] = []
        finished: list[int] = []
        for r, ext, prefix, last in zip(
            plan.reqs, plan.extend_lens, plan.prefix_lens, plan.last_chunk, strict=True
        ):
            # private KV: everything past the cached prefix (which is page-aligned)
            new_alloc = ceil_page(prefix + ext, page) - t.prefix_hit[r]
            self._allocate(new_alloc - t.kv_alloc[r])
            t.kv_alloc[r] = new_alloc
            t.prefilled[r] = prefix + ext
            if not last:
                continue
            if self.chunked == r:
                self.chunked = None
            t.out_done[r] += 1
            t.events[r].append(("p", batch_key))
            token_reqs.append(r)
            if t.out_done[r] >= t.output_len[r]:
                finished.append(r)
                self.batch_is_full = False  # the prefill batch shrinks when merged (get_next_batch_to_run)
            else:
                self._join(r)
        return token_reqs, finished

    # ---------------------------------------------------------------- decode
    def advance_decode(self, k: int) -> tuple[int, list[int]]:
        """Commit k decode steps of the running batch. Returns (first timeline index, requests finishing)."""
        t = self.t
        t0 = self.timeline_len
        self._allocate(self._new_decode_alloc(k))
        end = t0 + k
        self.timeline_len = end
        while len(self.timeline_emit) < end:
            self.timeline_emit = np.concatenate([self.timeline_emit, np.zeros(len(self.timeline_emit))])
        finished: list[int] = []
        heap = self._finish_heap
        while heap and heap[0][0] < end:
            fin, r = heapq.heappop(heap)
            # a request that left and re-joined with the same finishing index has two equal heap entries
            if r in self._running_pos and t.finish_idx[r] == fin and (not finished or finished[-1] != r):
                finished.append(r)
        for r in finished:
            # decode growth was charged to `used` in bulk; settle this request's share before it is freed
            kv_final = t.kv_at_join[r] + self.generated_since_join(r, end)
            t.kv_alloc[r] = ceil_page(kv_final, self.page) - t.prefix_hit[r]
            t.out_done[r] = t.output_len[r]
            t.events[r].append(("s", self.rank_id, t.join_idx[r], end, t.accept_seq[r]))
            self._leave(r)
        self.new_token_ratio = max(
            self.s.min_new_token_ratio, self.new_token_ratio - k * self.s.new_token_ratio_decay
        )
        return t0, finished

    def free(self, r: int, finished: bool = False) -> None:
        """Return r's private KV. A finished request's KV is inserted into the prefix cache (as SGLang caches
        finished requests) and its lease released; a retracted one only releases its lease."""
        t = self.t
        self.used -= t.kv_alloc[r]
        t.kv_alloc[r] = 0
        # SGLang frees a finished request's KV when it processes the batch's result and filters it out of the
        # running batch at the next update_running_batch, which clears batch_is_full (0.5.17 managers/scheduler.py):
        # the flag a refused admission set lasts until memory has come back
        self.batch_is_full = False
        if self.cache is None:
            return
        if finished and t.hashes[r] is not None:
            self.cache.capacity_tokens = self.capacity - self.used
            self.cache.insert(t.hashes[r], t.input_len[r] + t.output_len[r] - 1)
        if t.lease[r] is not None:
            self.cache.release(t.lease[r])
            t.lease[r] = None
        t.prefix_hit[r] = 0

    def cache_unfinished(self, r: int) -> None:
        """SGLang's cache_unfinished_req when a prefill's result is processed (0.5.17
        scheduler_components/batch_result_processor.py, mem_cache/radix_cache.py): the request's prefilled tokens
        enter the prefix cache at once, locked by the request, so later requests sharing the prefix hit it while
        this one still decodes. Its private KV over that prefix becomes the cache's (or is freed where another
        request had cached the same tokens first); the pool's occupancy is unchanged by the move."""
        t = self.t
        if self.cache is None or t.hashes[r] is None or r not in self._running_pos:
            return
        self.cache.capacity_tokens = self.capacity - self.used + t.kv_alloc[r]
        self.cache.insert(t.hashes[r], t.fill_len[r])
        lease = self.cache.lock(t.hashes[r], t.fill_len[r])
        self._stop_reading(r)
        if t.lease[r] is not None:
            self.cache.release(t.lease[r])
        t.lease[r] = lease
        self._start_reading(r)
        moved = lease.tokens - t.prefix_hit[r]
        if moved > 0:
            t.prefix_hit[r] = lease.tokens
            t.kv_alloc[r] -= moved
            self.used -= moved

    def retract_for_next_decode(self) -> list[int]:
        """retract_decode (docs/serving-model.md §1.7): fewest generated tokens, longest prompt first, until the step fits.

        Among equals the request latest in the running batch goes first: SGLang 0.5.17
        (managers/schedule_batch.py, _get_decode_retraction_order) sorts the batch, stably and descending, and pops
        from the end; merged prefill batches are appended, so that is the most recently admitted."""
        t = self.t
        seq = self._join_seq
        order = sorted(
            self.running,
            key=lambda r: (t.out_done[r] + self.generated_since_join(r), -t.input_len[r], -seq[r]),
        )
        retracted: list[int] = []
        while not self.next_decode_fits() and len(self.running) > 1:
            r = order.pop(0)
            done_now = t.out_done[r] + self.generated_since_join(r)
            t.events[r].append(("s", self.rank_id, t.join_idx[r], self.timeline_len, t.accept_seq[r]))
            self._leave(r)
            t.out_done[r] = done_now
            t.fill_len[r] = t.input_len[r] + done_now
            t.prefilled[r] = 0
            t.retractions[r] += 1
            t.kv_alloc[r] = ceil_page(self.kv_len_now(r), self.page) - t.prefix_hit[r]
            self.free(r)
            self.waiting.append(r)
            retracted.append(r)
        self.retracted_total += len(retracted)
        if retracted:
            decoded = sum(t.out_done[r] + self.generated_since_join(r) for r in self.running)
            max_new = sum(t.output_len[r] for r in self.running) or 1
            n = len(self.running)
            self.new_token_ratio = min(1.0, (decoded + RETRACT_DECODE_STEPS * n) / max_new)
        return retracted

    def on_idle(self) -> None:
        self.new_token_ratio = self.s.init_new_token_ratio
