"""PD disaggregation: a prefill server and a decode server joined by a KV link (docs/serving-model.md §5).

The two servers are two instances of the same scheduler model, simulated jointly in one SimPy environment:
1. The prefill server sees the client's requests and runs only prefills (output 1 token; no decode).
2. Its KV is shipped page-aligned after every chunk, so only the last chunk's KV is on the critical path:
   KV ready at decode = prefill done + link latency + tail tokens x KV bytes per token / link bandwidth.
3. The decode server admits each request when its KV is ready, reserving its prompt plus the clipped output
   (SGLang's pre-allocation), as a PREBUILT batch without a forward pass; the first token reaches the client with
   that batch, the rest as decode steps produce them. The client's stream comes from the decode server, and a
   `--max-concurrency` slot is released when the decode server's last chunk reaches the client.

The decode server plans runs of decode iterations ahead; it may only plan up to the earliest time a request could
still reach it (`KvFeed.next_ready_time`: the prefill server's next wake-up, or the client's next send, plus the link
latency), so the joint simulation is exact, with no fixed-point iteration over send times. Not modeled: the prefill
server waiting for the decode server's pre-allocation before it prefills (back-pressure when the decode pool is
full), and bootstrap / router latency beyond the link latency.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np
import simpy

from simperf.costmodel.api import StepCostModel
from simperf.records import RequestRecords
from simperf.scenario.models import Overheads
from simperf.scenario.resolved import ResolvedServing
from simperf.sim.client import Client, IdleWait
from simperf.sim.engine import US, SimStats, Simulator, _cyclic_gc_paused


@dataclass
class Pool:
    serving: ResolvedServing
    cost: StepCostModel
    kv_bytes_per_token: int  # per GPU of this pool: what one rank ships or receives


@dataclass
class DisaggStats:
    prefill: SimStats
    decode: SimStats
    mean_transfer_ms: float


def tail_tokens(input_len: np.ndarray, chunk: int) -> np.ndarray:
    """Tokens of each prompt's last prefill chunk (earlier chunks' KV is shipped while later ones compute)."""
    if chunk <= 0:
        return input_len.copy()
    return input_len - chunk * ((input_len - 1) // chunk)


def semaphore_sends(arrival_s: np.ndarray, latency_s: np.ndarray, limit: int) -> np.ndarray:
    """bench_serving's send times under --max-concurrency, given each request's latency (FIFO slots)."""
    free = [0.0] * limit
    sends = np.empty(len(arrival_s))
    for i, (arrival, latency) in enumerate(zip(arrival_s.tolist(), latency_s.tolist(), strict=True)):
        slot = heapq.heappop(free)
        sends[i] = max(arrival, slot)
        heapq.heappush(free, sends[i] + latency)
    return sends


class KvFeed:
    """Where the decode server's requests come from: prompts whose KV has landed (sim/client.py's protocol)."""

    def __init__(self, client: Client, prefill: Simulator, min_transfer_s: float) -> None:
        self.client = client  # the benchmark client: a decode finish frees its slot
        self.prefill = prefill
        self.min_transfer_s = min_transfer_s
        self.dropped = 0  # requests the prefill server rejected
        self._ready: list[tuple[float, int]] = []  # (KV ready, request)
        self._wake: simpy.Event | None = None

    @property
    def send_s(self) -> np.ndarray:
        return self.client.send_s

    @property
    def all_sent(self) -> bool:
        return not self._ready and self.prefill.done >= self.prefill.n

    def push(self, request: int, ready_s: float) -> None:
        heapq.heappush(self._ready, (ready_s, request))
        self._poke()

    def drop(self) -> None:
        self.dropped += 1
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    def pop_ready(self, now: float) -> list[int]:
        out: list[int] = []
        while self._ready and self._ready[0][0] <= now:
            out.append(heapq.heappop(self._ready)[1])
        return out

    def next_ready_time(self) -> float:
        """A lower bound of when the next request can reach the decode server: a known landing, or the earliest
        the prefill server could finish another prompt (it emits only when its process next runs, or once a
        request reaches it) plus the link latency."""
        known = self._ready[0][0] if self._ready else math.inf
        if self.prefill.done >= self.prefill.n:
            return known
        # a request the client sent earlier but the prefill scheduler has not picked up yet counts from now
        soonest = max(min(self.prefill.next_wakeup, self.client.next_ready_time()), self.prefill.env.now)
        return min(known, soonest + self.min_transfer_s)

    def idle_wait(self, env: simpy.Environment) -> IdleWait:
        if self._ready:
            return env.timeout(max(self._ready[0][0] - env.now, 0.0)), max(self._ready[0][0], env.now)
        if self.prefill.done >= self.prefill.n:
            return None
        if self._wake is None or self._wake.triggered:
            self._wake = env.event()
        return self._wake, math.inf

    def release(self, at_s: float, request: int = -1) -> None:
        self.client.release(at_s, request)

    def reject(self, at_s: float, request: int = -1) -> None:
        self.client.release(at_s, request)


class PrefillSource:
    """The prefill server's view of the benchmark client: a finished prefill ships its KV instead of freeing the
    client's slot (the request is still in flight until the decode server finishes it)."""

    def __init__(self, client: Client, transfer_s: np.ndarray) -> None:
        self.client = client
        self.transfer_s = transfer_s
        self.feed: KvFeed | None = None
        self.dropped = 0

    @property
    def send_s(self) -> np.ndarray:
        return self.client.send_s

    @property
    def all_sent(self) -> bool:
        return self.client.all_sent

    def pop_ready(self, now: float) -> list[int]:
        return self.client.pop_ready(now)

    def next_ready_time(self) -> float:
        return self.client.next_ready_time()

    def idle_wait(self, env: simpy.Environment) -> IdleWait:
        return self.client.idle_wait(env)

    def release(self, at_s: float, request: int = -1) -> None:
        assert self.feed is not None
        self.feed.push(request, at_s + float(self.transfer_s[request]))

    def reject(self, at_s: float, request: int = -1) -> None:
        assert self.feed is not None
        self.client.release(at_s, request)
        self.feed.drop()


def simulate_disaggregated(
    prefill: Pool,
    decode: Pool,
    overheads: Overheads,
    input_len: np.ndarray,
    output_len: np.ndarray,
    arrival_s: np.ndarray,
    *,
    link_bytes_per_s: float,
    link_latency_s: float,
    max_concurrency: int | None = None,
    ignore_eos: bool = True,
    seed: int = 0,
    on_progress=None,
    text_prompts: bool = False,
    block_hashes: list[np.ndarray | None] | None = None,
    block_tokens: int | None = None,
) -> tuple[RequestRecords, DisaggStats]:
    """block_hashes / block_tokens: per-request prefix-block ids; the prefill server keeps a radix prefix cache over
    them (unless its disable_radix_cache), as SGLang's does, and the records count its hits. The decode server runs
    without one: SGLang forces a chunk cache there (disaggregation/decode.py's hook, pd_disaggregation_hook.py)."""
    n = len(input_len)
    if n and np.any(np.diff(np.asarray(arrival_s, dtype=np.float64)) < 0):
        raise ValueError("requests must be given in arrival order")
    input_len = np.asarray(input_len, dtype=np.int64)
    # the prefill server's first token is not streamed (the client reads the decode server); the decode server
    # sees requests when their KV lands, not through the tokenizer
    prefill_overheads = overheads.for_pd_prefill()
    decode_overheads = overheads.for_pd_decode()
    tail = tail_tokens(input_len, prefill.serving.chunked_prefill_size)
    transfer_s = link_latency_s + tail * prefill.kv_bytes_per_token / link_bytes_per_s

    client = Client(arrival_s, max_concurrency, overheads.ingress_latency_us() * US)
    client.shared = True
    p_sim = Simulator(prefill.serving, prefill.cost, prefill_overheads)
    # the prefill server's API server tokenises text prompts on the requests' way in (the decode server's does the
    # same meanwhile, off the critical path)
    p_sim.text_prompts = text_prompts
    p_sim.api_server_on(client, input_len)
    d_sim = Simulator(decode.serving, decode.cost, decode_overheads)
    d_sim.prebuilt = True
    d_sim.on_progress = on_progress
    source = PrefillSource(client, transfer_s)
    feed = KvFeed(client, p_sim, link_latency_s)
    source.feed = feed
    p_sim.setup(input_len, np.ones(n, dtype=np.int64), source, ignore_eos, seed, block_hashes, block_tokens)
    d_sim.setup(input_len, output_len, feed, ignore_eos, seed)
    env = simpy.Environment()
    p_sim.start(env)
    d_sim.start(env)
    with _cyclic_gc_paused():
        env.run()
    p_records, p_stats = p_sim.finish()
    records, d_stats = d_sim.finish()
    records.cached_tokens = _prefill_hits(p_records, records.request_id)
    rejected = [(int(r), f"prefill server: {why}") for r, why in p_stats.rejected]
    rejected += [(int(r), f"decode server: {why}") for r, why in d_stats.rejected]
    records.extra = {"rejected": rejected}
    served = np.isin(np.arange(n), [r for r, _ in p_stats.rejected], invert=True)
    mean_transfer = float(np.mean(transfer_s[served]) * 1000) if served.any() else 0.0
    return records, DisaggStats(p_stats, d_stats, mean_transfer)


def _prefill_hits(prefill: RequestRecords, request_ids: np.ndarray) -> np.ndarray:
    """Prompt tokens each request found in the prefill server's prefix cache (the decode server keeps none)."""
    hits = dict(zip(prefill.request_id.tolist(), prefill.cached_tokens.tolist(), strict=True))
    return np.asarray([hits.get(r, 0) for r in request_ids.tolist()], dtype=np.int64)
