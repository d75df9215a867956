"""PD fleets (xPyD): prefill servers and decode servers behind the gateway's PD router.

The gateway's PD router picks, for each request, a prefill server with the prefill policy and a decode server with
the decode policy, both at arrival (`pd_router.rs`, `select_pd_pair`), and sends the request to both; the decode
server waits for the KV cache. Each server is the single-server model in PD mode, as `sim/disagg.py` composes one
pair (docs/disaggregation.md): a prefill server runs prompts to their first token; KV is ready at the decode server
a link latency plus the last chunk's KV transfer later; the decode server admits it as a PREBUILT batch and streams
the rest to the client.

Loads: a prefill server counts a request until its prefill ends, a decode server from routing until the last
token (the gateway holds a load guard on each). Simulation order at each arrival t: every prefill server a policy
reads is advanced to t; before any decode server is read, *every* prefill server is advanced to t and each prefill
that ended hands its request to its decode server, so a decode server advanced to t has received every request
whose KV is ready before t (a prefill still running at t ends after t, its KV later still).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from simperf.fleet.coupled import DecisionObserver
from simperf.fleet.inflight import InFlight
from simperf.fleet.outcome import ServerOutcome, finish_outcome
from simperf.fleet.policies import make_policy
from simperf.fleet.progress import progress_bar
from simperf.fleet.replica import ReplicaSimulator
from simperf.fleet.servers import ServerSlot, build_groups, expand, new_simulator
from simperf.fleet.stream import RouteStream
from simperf.scenario.models import Scenario
from simperf.scenario.pd import check_kv_compatible
from simperf.sim.disagg import tail_tokens
from simperf.sim.engine import _cyclic_gc_paused


class _PdFleet:
    """The live servers, the requests' routes and KV-ready times, and the router's load counts."""

    def __init__(
        self, prefill: list[ServerSlot], decode: list[ServerSlot], scenario: Scenario, stream: RouteStream
    ):
        fleet = scenario.fleet
        o = scenario.overheads
        # the prefill server's first token is not streamed to the client; the decode server sees a request when its
        # KV lands, not through the tokenizer (as sim/disagg.py)
        prefill_overheads = o.for_pd_prefill()
        decode_overheads = o.for_pd_decode()
        seed, ignore_eos = scenario.workload.seed, scenario.workload.ignore_eos
        block_tokens = stream.block_tokens if stream.hashes is not None else None
        text = not scenario.workload.tokenize_prompt  # the prefill servers' API servers tokenise text prompts
        self.prefill = [
            new_simulator(s.group, prefill_overheads, ReplicaSimulator, text_prompts=text) for s in prefill
        ]
        for slot, sim in zip(prefill, self.prefill, strict=True):
            sim.open(ignore_eos=ignore_eos, seed=seed + slot.index, block_tokens=block_tokens)
        self.decode = [new_simulator(s.group, decode_overheads, ReplicaSimulator) for s in decode]
        for slot, sim in zip(decode, self.decode, strict=True):
            sim.prebuilt = True
            sim.open(ignore_eos=ignore_eos, seed=seed + slot.index, block_tokens=None)
        self.stream = stream
        self.prefill_load = InFlight(len(prefill))
        self.decode_load = InFlight(len(decode))
        self.decode_of = np.full(stream.n, -1, dtype=np.int64)
        self.prefill_of = np.full(stream.n, -1, dtype=np.int64)
        self.transfer_s = self._transfer_times(
            prefill, fleet.kv_link_gbytes_per_s * 1e9, fleet.kv_link_latency_us * 1e-6
        )
        self.now = 0.0
        self._all_prefills_at = -1.0

    def _transfer_times(self, prefill: list[ServerSlot], bytes_per_s: float, latency_s: float) -> np.ndarray:
        """Per request, for each prefill server kind: link latency + the last chunk's KV / bandwidth."""
        input_len = self.stream.requests.input_len
        by_group = {}
        for slot in prefill:
            g = slot.group
            if g.index not in by_group:
                kv = g.arch.kv_bytes_per_token_per_rank(
                    g.serving.layout, g.serving.kv_dtype, g.serving.decode_backend
                )
                by_group[g.index] = (
                    latency_s + tail_tokens(input_len, g.serving.chunked_prefill_size) * kv / bytes_per_s
                )
        self._group_of_prefill = [slot.group.index for slot in prefill]
        return (
            np.stack([by_group[i] for i in sorted(by_group)]) if by_group else np.zeros((0, len(input_len)))
        )

    def sync_prefill(self, p: int) -> None:
        self.prefill[p].advance(self.now)
        self.hand_over(p)

    def hand_over(self, p: int) -> None:
        """Prefills of server p that ended since the last call: their KV goes to their decode server."""
        for request, end_s, ok in self.prefill[p].drain():
            self.prefill_load.end(p, end_s)
            d = int(self.decode_of[request])
            if ok:
                ready = end_s + float(self.transfer_s[self._group_of_prefill[p], request])
                s = self.stream
                self.decode[d].push(request, s.input_len[request], s.output_len[request], None, ready)
            else:  # the client gets the prefill server's error; the router releases the decode server too
                self.decode_load.end(d, end_s)

    def sync_all_prefills(self) -> None:
        if self._all_prefills_at != self.now:
            for p in range(len(self.prefill)):
                self.sync_prefill(p)
            self._all_prefills_at = self.now

    def sync_decode(self, d: int) -> None:
        self.sync_all_prefills()
        sim = self.decode[d]
        sim.advance(self.now)
        for _, end_s, _ in sim.drain():
            self.decode_load.end(d, end_s)


class _Loads:
    def __init__(self, fleet: _PdFleet, side: str) -> None:
        self.fleet = fleet
        self.side = side
        self.read: dict[int, int] = {}

    def of(self, worker: int) -> int:
        if worker not in self.read:
            f = self.fleet
            if self.side == "prefill":
                f.sync_prefill(worker)
                self.read[worker] = f.prefill_load.load(worker, f.now)
            else:
                f.sync_decode(worker)
                self.read[worker] = f.decode_load.load(worker, f.now)
        return self.read[worker]

    def all(self) -> list[int]:
        n = len(self.fleet.prefill if self.side == "prefill" else self.fleet.decode)
        return [self.of(w) for w in range(n)]


def _route(fleet: _PdFleet, prefill_policy, decode_policy, observer: DecisionObserver | None) -> None:
    stream = fleet.stream
    with _cyclic_gc_paused(), progress_bar("routing and simulating (PD)", stream.n, every=500) as ticker:
        for k in range(stream.n):
            request = stream.request(k)
            fleet.now = request.time_s
            prefill_loads, decode_loads = _Loads(fleet, "prefill"), _Loads(fleet, "decode")
            p = prefill_policy.select(request, prefill_loads)
            d = decode_policy.select(request, decode_loads)
            if observer is not None:
                observer(request, dict(decode_loads.read), d)
            fleet.decode_of[k] = d
            fleet.prefill_of[k] = p
            fleet.sync_prefill(p)
            fleet.prefill[p].push(k, stream.input_len[k], 1, stream.block_hashes(k), request.time_s)
            fleet.prefill_load.route(p)
            fleet.decode_load.route(d)
            ticker.tick()


def _close(
    fleet: _PdFleet, prefill: list[ServerSlot], decode: list[ServerSlot], keep: bool, t0: float
) -> list[ServerOutcome]:
    outcomes = []
    with _cyclic_gc_paused():
        for slot, sim in zip(prefill, fleet.prefill, strict=True):
            records, stats = sim.close()
            fleet.hand_over(slot.index)
            ids = np.asarray(sim.global_ids, dtype=np.int64)
            rejected = [(int(ids[r]), f"prefill server: {why}") for r, why in stats.rejected]
            stats.rejected = []
            outcomes.append(ServerOutcome(slot.index, "prefill", slot.group.label, len(ids), stats, rejected))
        arrival = fleet.stream.requests.arrival_s
        for slot, sim in zip(decode, fleet.decode, strict=True):
            records, stats = sim.close()
            ids = np.asarray(sim.global_ids, dtype=np.int64)
            records.send_s = arrival[ids[records.request_id]]  # the client's send, not the KV arrival
            outcome = finish_outcome(slot.index, "decode", slot.group.label, records, stats, ids, keep, t0)
            outcome.rejected = [(r, f"decode server: {why}") for r, why in outcome.rejected]
            outcomes.append(outcome)
    return outcomes


def predict_pd_fleet(
    scenario: Scenario, calibration_dir: Path | None, observer: DecisionObserver | None, memory_limit: float
):
    from simperf.fleet.predict import _check_groups, assemble, checked_requests, run_settings

    spec = scenario.fleet
    prefill_groups = build_groups(scenario, "prefill", spec.prefill, calibration_dir)
    decode_groups = build_groups(scenario, "decode", spec.decode, calibration_dir)
    _check_groups(prefill_groups + decode_groups)
    check_kv_compatible(
        [(f"fleet.prefill[{g.index}].serving", g.serving) for g in prefill_groups],
        [(f"fleet.decode[{g.index}].serving", g.serving) for g in decode_groups],
    )
    prefill, decode = expand(prefill_groups), expand(decode_groups)
    requests = checked_requests(scenario, prefill_groups[0].arch.context_len, memory_limit)
    stream = RouteStream(requests)
    router = spec.router
    seed = router.seed if router.seed is not None else scenario.workload.seed
    prefill_policy = make_policy(router.prefill(), router, len(prefill), stream.block_tokens, seed)
    decode_policy = make_policy(router.decode(), router, len(decode), stream.block_tokens, seed + 1)
    settings = run_settings(scenario, calibration_dir, requests)
    started = time.perf_counter()
    fleet = _PdFleet(prefill, decode, scenario, stream)
    _route(fleet, prefill_policy, decode_policy, observer)
    outcomes = _close(fleet, prefill, decode, settings.keep_records, settings.t0)
    wall = time.perf_counter() - started
    policy_info = {
        "policy": f"prefill {prefill_policy.name}, decode {decode_policy.name}",
        "prefill": {"policy": prefill_policy.name, **prefill_policy.summary()},
        "decode": {"policy": decode_policy.name, **decode_policy.summary()},
    }
    transfer = fleet.transfer_s[np.asarray(fleet._group_of_prefill)[fleet.prefill_of], np.arange(stream.n)]
    notes = {
        "Prefill / decode servers": f"{len(prefill)} / {len(decode)}",
        "Requests per prefill server (min/max)": _min_max(fleet.prefill_of, len(prefill)),
        "Mean KV transfer (ms)": f"{1000 * float(transfer.mean()):.2f}" if stream.n else "-",
    }
    prediction = assemble(
        scenario, prefill_groups + decode_groups, requests, outcomes, fleet.decode_of, policy_info, wall,
        client_kind="decode", extra_notes=notes,
    )  # fmt: skip
    prediction.prefill_assignment = fleet.prefill_of
    return prediction


def _min_max(assignment: np.ndarray, n: int) -> str:
    counts = np.bincount(assignment[assignment >= 0], minlength=n)
    return f"{int(counts.min())} / {int(counts.max())}" if counts.size else "0 / 0"
