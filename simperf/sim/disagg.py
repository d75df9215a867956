"""PD disaggregation: a prefill server and a decode server joined by a KV link (docs/serving-model.md §5).

The two servers are simulated as two instances of the same scheduler model, composed in time:
1. The prefill server sees the client's requests and runs only prefills (output 1 token; no decode).
2. Its KV is shipped page-aligned after every chunk, so only the last chunk's KV is on the critical path:
   KV ready at decode = prefill done + link latency + tail tokens x KV bytes per token / link bandwidth.
3. The decode server admits each request when its KV is ready, reserving its prompt plus the clipped output
   (SGLang's pre-allocation), as a PREBUILT batch without a forward pass; the first token reaches the client with
   that batch, the rest as decode steps produce them. The client's stream comes from the decode server.

Under `--max-concurrency` the client's send times depend on when requests finish, which depends on both servers;
the composition is iterated to a fixed point (send times -> both servers -> finish times -> send times), at most
`MAX_ROUNDS` times. Not modeled: the prefill server waiting for the decode server's pre-allocation before it
prefills (back-pressure when the decode pool is full), and bootstrap / router latency beyond the link latency.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from simperf.costmodel.api import StepCostModel
from simperf.records import RequestRecords
from simperf.scenario.models import Overheads
from simperf.scenario.resolved import ResolvedServing
from simperf.sim.engine import SimStats, Simulator

MAX_ROUNDS = 4


@dataclass
class Pool:
    serving: ResolvedServing
    cost: StepCostModel
    kv_bytes_per_token: int  # per GPU of this pool: what one rank ships or receives


@dataclass
class DisaggStats:
    prefill: SimStats
    decode: SimStats
    rounds: int
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
) -> tuple[RequestRecords, DisaggStats]:
    n = len(input_len)
    # the prefill server's first token is not streamed (the client reads the decode server); the decode server
    # sees requests when their KV lands, not through the tokenizer
    prefill_overheads = overheads.model_copy(update={"egress_us": 0.0})
    decode_overheads = overheads.model_copy(update={"ingress_us": 0.0})
    sends = np.asarray(arrival_s, dtype=np.float64).copy()
    records = None
    rounds = 0
    while rounds < MAX_ROUNDS:
        rounds += 1
        p_sim = Simulator(prefill.serving, prefill.cost, prefill_overheads)
        p_rec, p_stats = p_sim.run(input_len, np.ones(n, dtype=np.int64), sends, None, ignore_eos, seed)
        prefill_done = np.full(n, np.nan)
        prefill_done[p_rec.request_id] = p_rec.finish_s
        tail = tail_tokens(np.asarray(input_len, dtype=np.int64), prefill.serving.chunked_prefill_size)
        transfer_s = link_latency_s + tail * prefill.kv_bytes_per_token / link_bytes_per_s
        kv_ready = prefill_done + transfer_s
        ok = ~np.isnan(kv_ready)
        ids = np.flatnonzero(ok)
        order = ids[np.argsort(kv_ready[ids], kind="stable")]
        d_sim = Simulator(decode.serving, decode.cost, decode_overheads)
        d_sim.prebuilt = True
        d_rec, d_stats = d_sim.run(
            np.asarray(input_len)[order],
            np.asarray(output_len)[order],
            kv_ready[order],
            None,
            ignore_eos,
            seed,
        )
        original = order[d_rec.request_id]
        latency = np.full(n, np.nan)
        latency[original] = d_rec.finish_s - sends[original]
        records = _with_client_view(d_rec, original, sends)
        if max_concurrency is None:
            break
        latency = np.where(np.isnan(latency), 0.0, latency)
        new_sends = semaphore_sends(np.asarray(arrival_s, dtype=np.float64), latency, max_concurrency)
        if np.max(np.abs(new_sends - sends)) < 1e-4:
            break
        sends = new_sends
    rejected = [(int(r), f"prefill server: {why}") for r, why in p_stats.rejected]
    rejected += [(int(order[r]), f"decode server: {why}") for r, why in d_stats.rejected]
    records.extra = {"rejected": rejected}
    mean_transfer = float(np.nanmean(transfer_s[ok]) * 1000) if ok.any() else 0.0
    return records, DisaggStats(p_stats, d_stats, rounds, mean_transfer)


def _with_client_view(rec: RequestRecords, original_ids: np.ndarray, sends: np.ndarray) -> RequestRecords:
    """The decode server's records, re-keyed to the client's request ids and send times."""
    order = np.argsort(original_ids, kind="stable")
    starts, stops = rec.chunk_offsets[:-1][order], rec.chunk_offsets[1:][order]
    lengths = stops - starts
    index = (
        np.concatenate([np.arange(a, b) for a, b in zip(starts, stops, strict=True)]) if len(order) else []
    )
    index = np.asarray(index, dtype=np.int64)
    ids = original_ids[order]
    return RequestRecords(
        request_id=ids,
        send_s=sends[ids],
        input_len=rec.input_len[order],
        output_len=rec.output_len[order],
        first_token_s=rec.first_token_s[order],
        finish_s=rec.finish_s[order],
        chunk_offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        chunk_time_s=rec.chunk_time_s[index],
        chunk_num_tokens=rec.chunk_num_tokens[index],
        dp_rank=rec.dp_rank[order],
        retractions=rec.retractions[order],
        cached_tokens=rec.cached_tokens[order],
        duration_s=float(np.max(rec.finish_s)) if len(order) else 0.0,
    )
