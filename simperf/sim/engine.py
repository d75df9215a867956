"""The SimPy model of one SGLang server: DP ranks in lock-step, overlap or normal event loop (docs/serving-model.md §1.2, §2.3).

One SimPy timeout per scheduler iteration, or per *run* of decode iterations in which nothing but the KV lengths
changes (no arrival reaches the scheduler, no request finishes, the KV pool does not fill up). A run's iterations are
still simulated one by one — their start, launch, GPU end and token emission times come from the same recurrence as
a single iteration — but the scheduling decision and the cost-model call are made once, vectorised over the run.

Invariants (docs/simulator.md numbers them): the clock never goes backwards; same scenario and seed give identical
output; KV tokens in use never exceed the pool on any rank; every admitted request finishes with exactly its
requested output tokens or is reported rejected with a reason; a request's first token follows its last prefill
chunk and its token times increase; every step has positive time with a per-source split that sums to it.
"""

from __future__ import annotations

import bisect
import gc
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import simpy

from simperf.costmodel.api import StepCostModel
from simperf.perfdb.schema import SOURCES
from simperf.radix_cache import RadixCache
from simperf.records import RequestRecords
from simperf.scenario.models import Overheads
from simperf.scenario.resolved import ResolvedServing
from simperf.sglang_defaults import extend_plan_drains_gpu
from simperf.sim.admission import ExtendPlan
from simperf.sim.client import Client, RequestSource
from simperf.sim.frontend import FrontEnd
from simperf.sim.pricing import StepPricer
from simperf.sim.rank import RankState
from simperf.sim.request import Request, RequestTable
from simperf.sim.spec import AcceptSampler
from simperf.sim.streams import build_records
from simperf.sim.trace import RequestTrace

US = 1e-6
# Sizing a decode run's cost call: the iterations expected before the next arrival, with 25% + 4 to spare, so that
# one call usually covers the run (the run is cut at the arrival anyway; iterations priced beyond it are dropped)
RUN_ESTIMATE_SLACK = 1.25
RUN_ESTIMATE_EXTRA = 4
# the shortest iteration assumed when sizing that call (10 µs), so that the estimate never divides by zero
MIN_ITERATION_S = 1e-5
# one rank's part of an extend iteration: (rank, its plan — None for a rank whose running requests decode as
# 1-token extends under DP attention —, new tokens, cached prefixes, KV of decode rows riding along)
ExtendWork = tuple[RankState, ExtendPlan | None, np.ndarray, np.ndarray, np.ndarray | None]
PROGRESS_STEPS = 200  # progress reports over a run (on_progress)
# the PD router's bootstrap rooms are uniform over [0, 2^63) (sgl-router src/routers/http/pd_types.rs,
# generate_room_id); the stream they are drawn from here is keyed by the run's seed and this constant
BOOTSTRAP_ROOM_END = 2**63
BOOTSTRAP_ROOM_STREAM = 0xB0075


class Batch:
    """An iteration that has been launched; its results are processed (tokens emitted) later."""

    __slots__ = (
        "key",
        "gpu_end_s",
        "token_reqs",
        "finished",
        "prefilled",
        "timeline",
        "cpu_reqs",
        "chunks",
        "streamed",
    )

    def __init__(self, key: int) -> None:
        self.key = key
        self.gpu_end_s = math.nan
        self.token_reqs: list[int] = []  # get a token from an extend
        self.finished: list[tuple[int, int]] = []  # (rank, request) finishing with this batch
        # (rank, request) whose prefill ends here and that decode on
        self.prefilled: list[tuple[int, int]] = []
        self.timeline: list[tuple[int, int]] = []  # (rank, timeline index) of decode entries
        # requests whose results the busiest rank's CPU processes one by one (DP ranks process theirs in parallel)
        self.cpu_reqs = 0
        self.chunks = 0  # streamed chunks its processing sends, one per request that gets a token, all ranks
        self.streamed = 0.0  # output tokens those chunks carry together (each its request's output so far)


def _record_extend(batch: Batch, rank: RankState, token_reqs: list[int], finished: list[int]) -> None:
    """What an extend's processing owes its requests: a token each, freeing the finished, caching the rest."""
    rank_id = rank.rank_id
    batch.token_reqs.extend(token_reqs)
    batch.cpu_reqs = max(batch.cpu_reqs, len(token_reqs))
    out_done = rank.t.out_done  # each request's output count with this token
    done = set(finished)
    interval = rank.stream_interval
    # the API server writes a chunk for the token when the stream interval says so (output count 1 mod k) or the
    # request finishes: a fresh prompt's first token always, a retracted request's re-prefill token not always
    sent = [r for r in token_reqs if interval == 1 or out_done[r] % interval == 1 or r in done]
    batch.chunks += len(sent)
    # a first chunk carries one token; a retracted request's re-prefill carries all it had streamed
    batch.streamed += sum(out_done[r] for r in sent)
    batch.finished.extend((rank_id, r) for r in finished)
    if len(finished) != len(token_reqs):
        batch.prefilled.extend((rank_id, r) for r in token_reqs if r not in done)


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the event loop. A run allocates millions of short-lived
    objects that reference counting frees at once; the collector's generation-0 passes over them cost ~8% of a
    10,000-request run (benchmarks/bench_predict.py) and find nothing of size. Whatever cycles a run leaves are
    collected once the collector is back on; its previous state is restored even on error."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class SimStats:
    iterations: int = 0
    extend_iterations: int = 0
    decode_iterations: int = 0
    decode_runs: int = 0
    graph_iterations: int = 0
    eager_decode_iterations: int = 0
    gpu_busy_s: float = 0.0
    time_by_source_us: np.ndarray = field(default_factory=lambda: np.zeros(len(SOURCES)))
    retractions: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)
    max_kv_used: list[int] = field(default_factory=list)
    kv_capacity: int = 0
    per_rank_requests: list[int] = field(default_factory=list)
    extend_tokens: int = 0  # new tokens over all extend batches (rank 0's view under DP)
    decode_rows: int = 0  # Σ batch size over decode iterations
    decode_kv_tokens: float = 0.0  # Σ KV tokens read over decode iterations (per rank)
    # Σ of those that another running request also reads (shared prefix pages)
    decode_shared_reads: float = 0.0
    frontend_max_wait_s: float = 0.0  # longest a batch's chunks waited for the API server (sim/frontend.py)
    # DP attention: extend iterations in which a rank with nothing to prefill decoded beside a prefilling one
    rider_extend_iterations: int = 0
    # extends whose launch takes the scheduler's CPU (ExtendHostTime): that CPU time, and their priced step time
    extend_host_s: float = 0.0
    extend_step_s: float = 0.0

    def extend_host_share(self) -> float:
        """How much of the launched extends' step time is the scheduler's CPU launching them (0 with none)."""
        return self.extend_host_s / self.extend_step_s if self.extend_step_s > 0 else 0.0

    def source_shares(self) -> dict[str, float]:
        total = float(self.time_by_source_us.sum()) or 1.0
        return {name: float(v) / total for name, v in zip(SOURCES, self.time_by_source_us, strict=True)}


class Simulator:
    def __init__(
        self,
        serving: ResolvedServing,
        cost: StepCostModel,
        overheads: Overheads,
        *,
        kv_observer=None,
        step_log=None,
        trace: RequestTrace | None = None,
    ) -> None:
        self.s = serving
        self.cost = cost
        self.o = overheads
        self.sched_s = overheads.scheduler_us_per_iteration * US
        self.proc_s = overheads.process_us_per_iteration * US
        # and per request of the processed batch (measured, Overheads.process_us_per_running_request)
        self.proc_per_req_s = overheads.process_us_per_running_request * US
        self.egress_s = overheads.egress_us * US
        self.overlap = serving.overlap_schedule
        # under the overlap loop the previous batch is processed once the next launch returns; a speculative decode
        # launch returns this long after the previous batch's GPU work ends (Overheads.spec_launch_wait_us)
        self.spec_launch_wait_s = (
            overheads.spec_launch_wait_us * US if serving.speculative is not None and self.overlap else 0.0
        )
        self.extend_drains = extend_plan_drains_gpu(serving.prefill_backend)
        self._kv_observer = kv_observer  # test hook: called with the ranks after every commit
        self._step_log = step_log  # sim.steplog.StepLog: what each iteration ran (simperf validate)
        self.trace = trace  # sim.trace.RequestTrace: the requests followed by --trace-request
        # load_balance_method total_requests: a request goes to the DP rank holding the fewest (resolved per server)
        self.balance_by_load = serving.load_balance_method == "total_requests"
        # PD disaggregation decode server: admitted requests already hold their prompt's KV (shipped from the
        # prefill server), so their "extend" is a PREBUILT batch with no forward pass (docs/serving-model.md §5)
        self.prebuilt = False
        # the client sends text prompts, which the API server tokenises (workload.tokenize_prompt off); off by
        # default so that a bare Simulator prices token ids, as the concurrency-1 runs that set ingress_us sent
        self.text_prompts = False
        self.on_progress = None  # called with (finished, total) every 1/PROGRESS_STEPS of the requests

    # ------------------------------------------------------------------ public
    def run(
        self,
        input_len: np.ndarray,
        output_len: np.ndarray,
        arrival_s: np.ndarray,
        max_concurrency: int | None = None,
        ignore_eos: bool = True,
        seed: int = 0,
        block_hashes: list[np.ndarray | None] | None = None,
        block_tokens: int | None = None,
    ) -> tuple[RequestRecords, SimStats]:
        """block_hashes / block_tokens: per-request prefix-block ids and the tokens per block; when given (and
        serving.disable_radix_cache is off) each DP rank keeps a radix prefix cache over its KV pool."""
        n = len(input_len)
        order = np.argsort(arrival_s, kind="stable")
        if not np.array_equal(order, np.arange(n)):
            raise ValueError("requests must be given in arrival order")
        table = RequestTable([int(x) for x in input_len], [int(x) for x in output_len], ignore_eos)
        client = Client(arrival_s, max_concurrency, self.o.ingress_latency_us() * US)
        self.api_server_on(client, input_len)
        self._prepare(table, client, n, seed, block_hashes, block_tokens)
        client.frontend = self.frontend  # its requests' intake is on the API server's loop (sim/frontend.py)
        env = simpy.Environment()
        self.start(env)
        with _cyclic_gc_paused():
            env.run()
        return self._collect()

    def api_server_on(self, client: RequestSource, input_len: np.ndarray | None = None) -> None:
        """`client` pays the client's burst costs (client_setup_us_per_request, client_burst_us_per_request) and
        its requests pass the API server one at a time: each is received (receive_us_per_request) and, where the
        client sends text (`text_prompts`), tokenised (`input_len`: the prompts' lengths, for a client that does
        not get them with each request)."""
        client.receive_s_per_request = self.o.receive_us_per_request * US
        client.setup_s = self.o.client_setup_us_per_request * US
        client.burst_s = self.o.client_burst_us_per_request * US
        if self.text_prompts:
            client.tokenize_s_per_token = self.o.tokenize_us_per_prompt_token * US
            if input_len is not None:
                client.prompt_tokens = [int(x) for x in input_len]

    def setup(
        self,
        input_len: np.ndarray,
        output_len: np.ndarray,
        client: Client,
        ignore_eos: bool = True,
        seed: int = 0,
        block_hashes: list[np.ndarray | None] | None = None,
        block_tokens: int | None = None,
    ) -> None:
        """State for one run whose requests reach the scheduler through `client` (sim/client.py's protocol:
        the benchmark client, or, for a PD decode server, the feed of KV transfers); then `start(env)` and,
        once the environment has run out, `finish()`."""
        table = RequestTable([int(x) for x in input_len], [int(x) for x in output_len], ignore_eos)
        self._prepare(table, client, len(input_len), seed, block_hashes, block_tokens)

    def start(self, env: simpy.Environment) -> None:
        """Add this server's scheduler loop to `env` (two servers can share one environment)."""
        self.env = env
        env.process(self._server())

    def finish(self) -> tuple[RequestRecords, SimStats]:
        """Statistics and per-request records once `env` has run out."""
        return self._collect()

    def request(self, rid: int) -> Request:
        """A view of request `rid`'s scheduler state (during or after a run)."""
        return self.table.request(rid)

    def _prepare(
        self,
        table: RequestTable,
        client: Client,
        n: int,
        seed: int,
        block_hashes: list[np.ndarray | None] | None,
        block_tokens: int | None,
    ) -> None:
        """State of a run over `n` requests (the fleet's step-wise replicas grow `table` and `n` as they go)."""
        self.table = table
        self.client = client
        dp = self.s.layout.dp_attention
        sampler = self._accept_sampler(seed)
        self.ranks = [RankState(i, self.s, self.table, sampler) for i in range(dp)]
        use_cache = block_hashes is not None and block_tokens and not self.s.disable_radix_cache
        if use_cache:
            self.table.hashes = list(block_hashes)
        for rank in self.ranks:
            rank.prebuilt = self.prebuilt
            if use_cache:
                rank.cache = RadixCache(self.s.max_total_tokens, int(block_tokens), self.s.page_size)
            rank.set_policy(self.s.schedule_policy, seed + rank.rank_id)
        self.stats = SimStats(kv_capacity=self.s.max_total_tokens, per_rank_requests=[0] * dp)
        self._rr = 0
        # load_balance_method follow_bootstrap_room (a PD prefill server's default): each request carries a random
        # 63-bit bootstrap room from the PD router and goes to rank room % DP (scenario/resolve.py,
        # default_load_balance_method); drawn per dispatched request from a stream of its own, seeded by the run
        self._rooms = (
            np.random.default_rng([seed, BOOTSTRAP_ROOM_STREAM])
            if self.s.load_balance_method == "follow_bootstrap_room"
            else None
        )
        self.gpu_free = 0.0
        self.pending: Batch | None = None
        self._last_decode_us = 0.0
        self.pricer = StepPricer(
            self.cost, single_rank=dp == 1, step_log=self._step_log is not None, prebuilt=self.prebuilt
        )
        self._batch_emit: list[float] = []  # when each batch's chunks leave the API server, by key
        # the API server's chunk queue (sim/frontend.py; measured, Overheads.frontend_us_per_chunk, plus
        # metrics_us_per_chunk when the server runs --enable-metrics, plus frontend_us_per_streamed_token for each
        # token a chunk carries unless it streams incrementally, all growing with the requests it holds open)
        self.frontend = FrontEnd(
            self.o.frontend_us_per_chunk_for(self.s.enable_metrics),
            self.o.frontend_us_per_token_for(self.s.incremental_streaming_output),
            self.o.frontend_share_per_open_request,
            self.o.finish_us_per_request,
        )
        # time per source, summed on Python floats in the same order as numpy would (copied to stats at the end)
        self._source_us = [0.0] * len(SOURCES)
        self._padded: dict[int, tuple[int, bool]] = {}  # _padded_bs by batch size
        self.finish_s = np.full(n, math.nan)
        self.done = 0
        self.n = n
        # SGLang's max_req_input_len (0.5.17 managers/tp_worker.py); prompts of at least that many are rejected
        self._max_len_limit = min(self.s.context_len - 1, self.s.max_total_tokens - 1) - 5
        self._use_cache = bool(use_cache)
        # when this server's process runs next (PD disaggregation: the decode server's look-ahead bound)
        self.next_wakeup = 0.0

    def _accept_sampler(self, seed: int) -> AcceptSampler | None:
        spec = self.s.speculative
        if spec is None:
            return None
        if spec.accept_length_mean is None:
            raise ValueError(
                "serving.speculative.accept_length: required (mean accepted tokens per verify step, "
                "including the bonus token, e.g. {mean: 2.4}; optionally min and max across requests)"
            )
        return AcceptSampler(
            spec.num_steps, spec.accept_length_mean, spec.accept_length_min, spec.accept_length_max, seed
        )

    def _collect(self) -> tuple[RequestRecords, SimStats]:
        self.stats.time_by_source_us = np.asarray(self._source_us)
        self.stats.frontend_max_wait_s = self.frontend.max_wait_s
        for rank in self.ranks:
            self.stats.retractions += rank.retracted_total
            self.stats.max_kv_used.append(rank.max_used)
        return self._records(), self.stats

    def _records(self) -> RequestRecords:
        return build_records(
            self.table,
            self.n,
            self._batch_emit,
            [rank.timeline_emit[: rank.timeline_len] for rank in self.ranks],
            self.finish_s,
            self.client.send_s,
            self.egress_s,
            self.s.speculative is not None,
            self.stats.rejected,
            self.s.stream_interval,
        )

    # ------------------------------------------------------------------ dispatch
    def _reject(self, r: int, reason: str) -> None:
        self.stats.rejected.append((r, reason))
        self.done += 1
        self.client.reject(self.env.now, r)
        if self.trace is not None:
            self.trace.add(r, self.env.now, "rejected", reason)

    def _ingest(self, now: float) -> None:
        for r in self.client.pop_ready(now):
            if self.table.input_len[r] >= self._max_len_limit:  # managers/utils.py::validate_input_length
                self._reject(
                    r,
                    f"prompt of {self.table.input_len[r]} tokens is not below max_req_input_len "
                    f"{self._max_len_limit}",
                )
                continue
            self.frontend.request_opened()  # held open by the API server until its last chunk is written
            if self.s.layout.dp_attention == 1:
                rank = self.ranks[0]
            else:
                rank = self._pick_rank()
            rank.waiting.append(r)
            self.table.rank[r] = rank.rank_id
            self.stats.per_rank_requests[rank.rank_id] += 1
            if self.trace is not None:
                self.trace.queued(r, now, float(self.client.send_s[r]), rank.rank_id)

    def _pick_rank(self) -> RankState:
        # round_robin ignores load; total_requests picks the least loaded; follow_bootstrap_room takes the rank of
        # the request's random bootstrap room (docs/serving-model.md §2.2)
        if self.balance_by_load:
            return min(self.ranks, key=lambda rk: len(rk.running) + len(rk.waiting))
        if self._rooms is not None:
            room = int(self._rooms.integers(0, BOOTSTRAP_ROOM_END))
            return self.ranks[room % len(self.ranks)]
        rank = self.ranks[self._rr % len(self.ranks)]
        self._rr += 1
        return rank

    # ------------------------------------------------------------------ the loop
    def _server(self):
        env = self.env
        client = self.client
        single = self.ranks[0] if len(self.ranks) == 1 else None
        progress = self.on_progress
        reported = 0
        every = max(1, self.n // PROGRESS_STEPS)
        while self.done + client.dropped < self.n:
            now = env.now
            if progress is not None and self.done - reported >= every:
                reported = self.done
                progress(self.done, self.n)
            if client.next_ready_time() <= now:
                self._ingest(now)
            if single is not None:
                # one rank: skip building per-rank lists (this runs once per iteration or decode run)
                plan = (
                    single.form_extend(self._reject) if single.waiting or single.chunked is not None else None
                )
                plans, extend, decoding = [plan], plan is not None, bool(single.running)
            else:
                plans, extend, decoding = self._schedule_dp()
            if extend:
                cpu_next = self._extend_iteration(plans)
            elif decoding:
                cpu_next = self._decode_run()
            elif self.pending is not None:
                # SGLang does not know yet that the batch's requests are done: it launched one more (speculative)
                # iteration for them, and processes the batch once that launch returns
                cpu_next = self._process(
                    self.pending, max(now, self.pending.gpu_end_s) + self.spec_launch_wait_s
                )
                self.pending = None
            else:
                for rank in self.ranks:
                    rank.on_idle()
                wait = client.idle_wait(env)
                if (
                    wait is None
                ):  # nothing will reach the scheduler unless a stuck request lets go of its slot
                    if self._reject_stuck() and not client.all_sent:
                        continue
                    break
                event, self.next_wakeup = wait
                yield event
                continue
            self.next_wakeup = max(cpu_next, now)
            yield env.timeout(self.next_wakeup - now)
        if progress is not None:
            progress(self.done, self.n)

    def _schedule_dp(self) -> tuple[list[ExtendPlan | None], bool, bool]:
        """Every rank's extend plan for this iteration, whether any rank extends, whether any rank decodes."""
        plans = [rank.form_extend(self._reject) for rank in self.ranks]
        return plans, any(p is not None for p in plans), any(rank.running for rank in self.ranks)

    def _reject_stuck(self) -> int:
        """Reject waiting requests that can never be admitted; returns how many."""
        count = 0
        for rank in self.ranks:
            while rank.waiting:
                self._reject(
                    rank.waiting.popleft(), "could not be admitted: KV pool exhausted with nothing running"
                )
                count += 1
        return count

    # ------------------------------------------------------------------ timing
    def _launch(self, batch: Batch, step_us: float, host_us: float = 0.0) -> float:
        """Launch `batch` at the current CPU time; returns when the CPU starts the next iteration.

        host_us: the CPU time the launch itself takes (an extend's kernels, ExtendHostTime); the CPU neither
        receives requests nor processes the previous batch meanwhile. Where the prefill backend's plan copies to
        the host (`extend_plan_drains_gpu`), that launch first waits for the GPU to finish what is queued.
        """
        c = self.env.now
        scheduled = c + self.sched_s
        start = max(scheduled, self.gpu_free)
        launch_end = (start if host_us > 0 and self.extend_drains else scheduled) + host_us * US
        # step_us >= host_us (ExtendHostTime's contract): the GPU ends after the last launch
        batch.gpu_end_s = start + step_us * US
        self.gpu_free = batch.gpu_end_s
        self.stats.gpu_busy_s += step_us * US
        self.stats.iterations += 1
        if host_us > 0:
            self.stats.extend_host_s += host_us * US
            self.stats.extend_step_s += step_us * US
        if not self.overlap:
            return self._process(batch, batch.gpu_end_s)
        cpu_next = launch_end
        if self.pending is not None:
            cpu_next = self._process(self.pending, max(launch_end, self.pending.gpu_end_s))
        self.pending = batch
        return cpu_next

    def _process(self, batch: Batch, wait_until: float) -> float:
        """process_batch_result: tokens of `batch` reach the detokenizer at the returned time."""
        emit = wait_until + (self.proc_s + self.proc_per_req_s * batch.cpu_reqs)
        start, per_chunk_s = self.frontend.stream_span(emit, batch.chunks, batch.streamed)
        sent = start + batch.chunks * per_chunk_s
        self._batch_emit[batch.key] = sent
        for rank_id, idx in batch.timeline:
            self.ranks[rank_id].timeline_emit[idx] = sent
        n_finished = len(batch.finished)
        for j, (rank_id, r) in enumerate(batch.finished):
            # a finishing request's last chunk sits somewhere among the batch's chunks: spread evenly, so the client
            # sees the finishes (and sends the next requests) one by one, as the API server writes them
            last_chunk_s = start + per_chunk_s * math.ceil((j + 1) * batch.chunks / n_finished)
            self.finish_s[r] = last_chunk_s + self.egress_s
            self.frontend.request_closed(last_chunk_s)
            self.ranks[rank_id].free(r, finished=True)
            self.client.release(last_chunk_s + self.egress_s, r)
            self.done += 1
        for rank_id, r in batch.prefilled:
            self.ranks[rank_id].cache_unfinished(r)
        if self.trace is not None:
            self._trace_processed(batch, emit, sent)
        return emit

    def _trace_processed(self, batch: Batch, emit: float, sent: float) -> None:
        queued = f" (API server queue {1e3 * (sent - emit):.3f} ms)" if sent > emit else ""
        for r in batch.token_reqs:
            self.trace.add(
                r,
                emit,
                "token",
                f"from the extend; reaches the client at {sent + self.egress_s:.6f} s{queued}",
            )
        for _, r in batch.finished:
            self.trace.add(
                r, emit, "finished", f"last token reaches the client at {self.finish_s[r]:.6f} s{queued}"
            )

    def _new_batch(self) -> Batch:
        key = len(self._batch_emit)
        self._batch_emit.append(math.nan)
        return Batch(key)

    def _padded_bs(self, bs: int) -> tuple[int, bool]:
        buckets = self.s.cuda_graph_bs
        if not buckets or bs > buckets[-1]:
            return bs, False
        return buckets[bisect.bisect_left(buckets, bs)], True

    def _observe(self) -> None:
        if self._kv_observer is not None:
            self._kv_observer(self.ranks)

    def _retract(self, rank: RankState) -> None:
        """retract_decode on `rank` (its next decode step does not fit the KV pool)."""
        retracted = rank.retract_for_next_decode()
        if self.trace is not None:
            for r in retracted:
                self.trace.add(
                    r, self.env.now, "retracted", f"re-queued; will re-prefill {self.table.fill_len[r]}"
                )

    # ------------------------------------------------------------------ extend
    def _extend_iteration(self, plans: list[ExtendPlan | None]) -> float:
        """One iteration in which at least one rank extends (prefill has priority over decode, docs/serving-model.md
        §1.3).

        DP attention (§2.3–2.5): ranks run in lock-step. A rank without a prefill decodes in the same iteration as
        1-token extends (SGLang 0.5.23 re-labels it to replay the prefill graph; with speculative decoding it idles
        instead), the MLP/MoE and the LM head run on all ranks' rows gathered, and the iteration lasts as long as
        the slowest rank.
        """
        fresh = self.pricer.fresh_prompt(plans, len(self.ranks[0].running))
        if fresh is not None:
            return self._fresh_extend(self.ranks[0], plans[0], *fresh)
        batch = self._new_batch()
        work = self._extend_work(plans)
        if any(plan is None for _, plan, _, _, _ in work):
            self.stats.rider_extend_iterations += 1
        gathered, gathered_logits = self._gathered_rows(work)
        step, step_us, slowest, host_us = None, 0.0, None, 0.0
        for item in work:
            rank_cost = self._extend_rank(item, batch, gathered, gathered_logits)
            rank_us = float(rank_cost.sum())
            if step is None or rank_us > step_us:
                step, step_us, slowest = rank_cost, rank_us, item
            # each DP rank's own process launches its part; the iteration's CPU waits for the slowest
            _, _, ext, pre, decode_kv = item
            host_us = max(host_us, self.pricer.extend_host(ext, pre, decode_kv, gathered, gathered_logits))
        if self._step_log is not None and slowest is not None:
            _, plan, ext, pre, decode_kv = slowest
            self._step_log.extend(
                self.env.now,
                step_us,
                ext,
                pre,
                decode_kv,
                gathered,
                gathered_logits,
                decode_as_extend=plan is None,
            )
        self.stats.extend_iterations += 1
        for i, v in enumerate(step.tolist()):
            self._source_us[i] += v
        self._trace_extend(plans, step_us)
        cpu_next = self._launch(batch, step_us, host_us)
        self._observe()
        return cpu_next

    def _extend_work(self, plans: list[ExtendPlan | None]) -> list[ExtendWork]:
        """What each rank runs this iteration, as the cost model is asked for it."""
        speculative = self.s.speculative is not None
        work: list[ExtendWork] = []
        for rank, plan in zip(self.ranks, plans, strict=True):
            if plan is not None:
                decode_kv = None
                if plan.mixed_decode and rank.running:
                    decode_kv = np.array([rank.kv_len_now(r) + 1 for r in rank.running], dtype=np.int64)
                ext = np.asarray(plan.extend_lens, dtype=np.int64)
                pre = np.asarray(plan.prefix_lens, dtype=np.int64)
                work.append((rank, plan, ext, pre, decode_kv))
            elif rank.running and len(self.ranks) > 1 and not speculative and not self.prebuilt:
                kv = np.fromiter((rank.kv_len_now(r) for r in rank.running), dtype=np.int64)
                work.append((rank, None, np.ones(len(kv), dtype=np.int64), kv, None))
        return work

    def _gathered_rows(self, work: list[ExtendWork]) -> tuple[int | None, int | None]:
        """DP attention: token rows (each rank's padded to the attention-TP size) and logit rows of all ranks."""
        if len(self.ranks) == 1:
            return None, None
        a = self.s.layout.attn_tp
        gathered = sum(-(-(int(e.sum()) + (0 if d is None else len(d))) // a) * a for _, _, e, _, d in work)
        gathered_logits = sum(len(e) + (0 if d is None else len(d)) for _, _, e, _, d in work)
        return gathered, gathered_logits

    def _extend_rank(
        self, item: ExtendWork, batch: Batch, gathered: int | None, gathered_logits: int | None
    ) -> np.ndarray:
        """Price one rank's part of the iteration and commit it; returns its time per source."""
        rank, plan, ext, pre, decode_kv = item
        if self.prebuilt and plan is not None:
            rank_cost = np.zeros(len(SOURCES))
        else:
            rank_cost = self.pricer.extend(ext, pre, decode_kv, gathered, gathered_logits)
        if plan is None:
            self._decode_one(rank, batch)
            return rank_cost
        if decode_kv is not None:
            self._decode_one(rank, batch)
        _record_extend(batch, rank, *rank.commit_extend(plan, batch.key))
        if rank is self.ranks[0]:
            self.stats.extend_tokens += sum(plan.extend_lens)
        return rank_cost

    @staticmethod
    def _chunks_after_step(ranks: list[RankState], offset: int) -> tuple[int, float]:
        """(chunks, tokens they carry) all `ranks` send after the decode step `offset` steps from now."""
        sends = [rank.chunks_after_step(offset) for rank in ranks]
        return sum(n for n, _ in sends), sum(carried for _, carried in sends)

    def _decode_one(self, rank: RankState, batch: Batch) -> None:
        if not rank.next_decode_fits():
            self._retract(rank)
        batch.cpu_reqs = max(batch.cpu_reqs, len(rank.running))
        chunks, carried = rank.chunks_after_step()
        batch.chunks += chunks
        batch.streamed += carried
        t0, finished = rank.advance_decode(1)
        batch.timeline.append((rank.rank_id, t0))
        batch.finished.extend((rank.rank_id, r) for r in finished)

    def _fresh_extend(
        self, rank: RankState, plan: ExtendPlan, step_us: float, by_source: list[float]
    ) -> float:
        """_extend_iteration for one fresh prompt on one rank, with its cost already known."""
        batch = self._new_batch()
        _record_extend(batch, rank, *rank.commit_extend(plan, batch.key))
        self.stats.extend_tokens += plan.extend_lens[0]
        self.stats.extend_iterations += 1
        source_us = self._source_us
        for i, v in enumerate(by_source):
            source_us[i] += v
        if self.trace is not None:
            self._trace_extend([plan], step_us)
        ext = np.array(plan.extend_lens, dtype=np.int64)
        host_us = self.pricer.extend_host(ext, np.zeros(1, dtype=np.int64), None, None, None)
        cpu_next = self._launch(batch, step_us, host_us)
        self._observe()
        return cpu_next

    def _trace_extend(self, plans: list[ExtendPlan | None], step_us: float) -> None:
        """Before the launch (the normal loop processes the batch inside it): its GPU interval as _launch sets it."""
        if self.trace is None:
            return
        start = max(self.env.now + self.sched_s, self.gpu_free)
        end = start + step_us * US
        for plan in plans:
            if plan is None:
                continue
            for r, ext, prefix, last in zip(
                plan.reqs, plan.extend_lens, plan.prefix_lens, plan.last_chunk, strict=True
            ):
                self.trace.extend(r, self.env.now, ext, prefix, last, start, end)

    # ------------------------------------------------------------------ decode runs
    def _decode_run(self) -> float:
        """Decode iterations from the current CPU time until something needs the scheduler's full attention.

        A run is a sequence of segments, each a stretch in which the batch is unchanged. It continues past a
        finishing request (a new segment with the smaller batch) when no request waits for admission, and stops
        at the first iteration whose CPU start sees a new request, when the KV pool is about to fill, or when the
        batch empties. Returns the CPU time of the next scheduler iteration.
        """
        c = self.env.now
        single = self.ranks[0] if len(self.ranks) == 1 else None
        while True:
            if single is not None:
                # one rank: the view of _decode_view_dp without building lists (this runs once per segment)
                if not single.running:
                    return c
                if not single.next_decode_fits():
                    self._retract(single)
                ranks = self.ranks
                k_finish, k_mem, max_bs = (
                    single.steps_to_first_finish(),
                    single.decode_steps_that_fit(),
                    len(single.running),
                )
                waiting = bool(single.waiting) or single.chunked is not None
                blocked = waiting and not single.batch_is_full and single.ratio_applies
            else:
                view = self._decode_view_dp()
                if view is None:
                    return c
                ranks, k_finish, k_mem, max_bs, waiting, blocked = view
            # under ignore_eos in SGLang >= 0.5.6 the admission budget only changes when a request finishes;
            # otherwise the decaying new_token_ratio can admit a waiting request at any iteration
            single_step = blocked or k_mem < 1
            k_max = 1 if single_step else min(k_finish, k_mem)
            c, k_done, next_ready = self._decode_segment(ranks, max_bs, k_max, c)
            if single_step or c >= next_ready or k_done == k_mem or (waiting and k_done == k_finish):
                return c

    def _decode_view_dp(self) -> tuple[list[RankState], int, int, int, bool, bool] | None:
        """DP attention: the decoding ranks after any retraction, and what bounds the next segment: (ranks,
        iterations to the first finish, iterations the KV pool allows, largest batch, a request waits, admission
        could change at any iteration); None when nothing decodes."""
        for rank in self.ranks:
            if rank.running and not rank.next_decode_fits():
                self._retract(rank)
        ranks = [rank for rank in self.ranks if rank.running]
        if not ranks:
            return None
        return (
            ranks,
            min(rank.steps_to_first_finish() for rank in ranks),
            min(rank.decode_steps_that_fit() for rank in ranks),
            max(len(rank.running) for rank in ranks),
            any(rank.waiting or rank.chunked is not None for rank in self.ranks),
            any(rank.waiting and not rank.batch_is_full and rank.ratio_applies for rank in self.ranks),
        )

    def _decode_segment(
        self, ranks: list[RankState], max_bs: int, k_max: int, c: float
    ) -> tuple[float, int, float]:
        """Up to k_max iterations of an unchanged batch from CPU time c; returns (next CPU time, done, next arrival)."""
        next_ready = self.client.next_ready_time()
        padded = self._padded.get(max_bs)
        if padded is None:
            padded = self._padded[max_bs] = self._padded_bs(max_bs)
        padded_bs, graph = padded
        # a short run is priced whole; a long one about up to the next arrival
        k_eval = (
            k_max if k_max <= 8 or next_ready == math.inf else self._iterations_to_price(k_max, c, next_ready)
        )
        kv0 = ranks[0].decode_kv_now()
        shared0 = ranks[0].shared_prefix_reads()  # before the commit: finishing requests stop reading
        totals, add_by_source = self.pricer.decode(ranks, max_bs, padded_bs, graph, k_eval, kv0)
        step_s = [t * US for t in totals]
        self._last_decode_us = step_s[-1] / US
        c_start = c
        c, gpu_free, emits, k_done, next_ready = self._iterate(step_s, c, next_ready, max_bs)
        if self._step_log is not None:
            self._log_decode(ranks, padded_bs, graph, c_start, step_s[0] / US, k_done)
        batch = self._commit_decode(ranks, k_done, emits, gpu_free)
        batch.cpu_reqs = max_bs
        stats = self.stats
        stats.iterations += k_done
        stats.decode_iterations += k_done
        stats.decode_rows += max_bs * k_done
        stats.decode_kv_tokens += kv0 * k_done + ranks[0].tokens_per_step * max_bs * k_done * (k_done - 1) / 2
        stats.decode_shared_reads += shared0 * k_done
        stats.decode_runs += 1
        stats.gpu_busy_s += sum(step_s[:k_done])
        if graph:
            stats.graph_iterations += k_done
        else:
            stats.eager_decode_iterations += k_done
        add_by_source(self._source_us, k_done)
        if self.overlap:
            self.pending = batch
        else:
            c = self._process(batch, gpu_free)
            next_ready = self.client.next_ready_time()
        if self._kv_observer is not None:
            self._kv_observer(self.ranks)
        return c, k_done, next_ready

    def _iterations_to_price(self, k_max: int, c: float, next_ready: float) -> int:
        """How many of k_max iterations to price: about as many as fit before the next request reaches the
        scheduler (the run is cut there), so a long quiet run is one call and a busy one is not over-priced."""
        per_iter = max(
            self._last_decode_us * US, self.sched_s + self.proc_s, MIN_ITERATION_S
        )  # a lower bound
        return max(1, min(k_max, int((next_ready - c) / per_iter * RUN_ESTIMATE_SLACK) + RUN_ESTIMATE_EXTRA))

    def _iterate(
        self, step_s: list[float], c: float, next_ready: float, requests: int
    ) -> tuple[float, float, list[float], int, float]:
        """The iteration recurrence (docs/simulator.md), one iteration at a time on floats, until the CPU would see
        a new request; `requests` decode in each iteration. Returns (CPU time, GPU free time, emit times of the
        iterations processed, iterations done, next arrival)."""
        sched, proc = self.sched_s, self.proc_s + self.proc_per_req_s * requests
        overlap, wait = self.overlap, self.spec_launch_wait_s
        gpu_free = self.gpu_free
        emits: list[float] = []
        k_done = 0
        for j in range(len(step_s)):
            if j and c >= next_ready:
                break  # the CPU sees a new request at this iteration: re-plan from here
            scheduled = c + sched
            start = scheduled if scheduled > gpu_free else gpu_free
            prev_end = gpu_free
            gpu_free = start + step_s[j]
            if not overlap:
                c = gpu_free + proc
                emits.append(c)
            elif j:
                # iteration j-1 is processed once iteration j has been launched
                c = (scheduled if scheduled > prev_end else prev_end) + wait + proc
                emits.append(c)
            elif self.pending is not None:
                c, next_ready = self._process_pending(scheduled, next_ready)
            else:
                c = scheduled
            k_done = j + 1
        return c, gpu_free, emits, k_done, next_ready

    def _process_pending(self, scheduled: float, next_ready: float) -> tuple[float, float]:
        """Overlap loop, a run's first iteration: the batch still pending from before is processed now."""
        pending = self.pending
        c = self._process(pending, max(scheduled, pending.gpu_end_s) + self.spec_launch_wait_s)
        self.pending = None
        if pending.finished:
            # finishes it emitted may free client slots: requests sent then reach us later
            next_ready = self.client.next_ready_time()
        return c, next_ready

    def _commit_decode(
        self, ranks: list[RankState], k_done: int, emits: list[float], gpu_free: float
    ) -> Batch:
        """Commit k_done iterations on every decoding rank; the last one stays pending under the overlap loop."""
        batch = self._new_batch()
        emitted = emits[: k_done - 1] if self.overlap else emits
        n_emitted = len(emitted)
        # the running set is fixed within a run: each step's chunks (every request's, or at a stream interval the
        # requests whose output reaches a send point) and the tokens they carry follow from the step's offset
        sends = [self._chunks_after_step(ranks, i) for i in range(k_done)] if self.frontend.enabled else []
        batch.chunks, batch.streamed = sends[-1] if sends else self._chunks_after_step(ranks, k_done - 1)
        if self.frontend.enabled:
            # through the API server's queue in order; the run's last iteration goes when `_process` handles the
            # batch (now, or overlapped with the next launch), which writes its entry again
            streamed = [self.frontend.stream(e, *sends[i]) for i, e in enumerate(emits[: k_done - 1])]
            emitted = streamed + list(emitted[len(streamed) :])
        for rank in ranks:
            t0, finished = rank.advance_decode(k_done)
            if n_emitted:
                rank.timeline_emit[t0 : t0 + n_emitted] = emitted
            batch.timeline.append((rank.rank_id, t0 + k_done - 1))
            if finished:
                batch.finished.extend((rank.rank_id, r) for r in finished)
        batch.gpu_end_s = gpu_free
        self.gpu_free = gpu_free
        return batch

    def _log_decode(
        self, ranks: list[RankState], padded_bs: int, graph: bool, c: float, step_us: float, k: int
    ) -> None:
        """The decode run's first iteration, on the rank with the most KV (the one attention makes slowest)."""
        rank = max(ranks, key=lambda r: r.kv_base_sum + len(r.running) * r.timeline_len)
        kv_lens = np.fromiter((rank.kv_len_now(r) + 1 for r in rank.running), dtype=np.int64)
        gathered = padded_bs * len(self.ranks) if len(self.ranks) > 1 else None
        self._step_log.decode(c, step_us, k, kv_lens, padded_bs, graph, gathered)
