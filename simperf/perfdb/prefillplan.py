"""Ragged MHA prefill priced from flashinfer's SM90 prefill planner: the busiest CTA's tiles, at the key's own rate.

flashinfer's FA3 ragged prefill on Hopper (`BatchPrefillWithRaggedKVCacheWrapper`, backend fa3; `PrefillSM90Plan` in
flashinfer's `include/flashinfer/attention/scheduler.cuh`) is a persistent kernel of one CTA per SM. Its host-side
planner cuts every request's new tokens into query tiles of `cta_tile_q` = 128 rows (192 where head_dim_vo is 64),
walks the requests in order of KV length (longest first) and each request's tiles from the last to the first, for
every query head, and gives each tile to the CTA with the least accumulated cost, cost = 2 x cta_tile_q + the keys
the tile attends (`cost_function`; a causal tile other than the last stops at its own diagonal:
`packed_causal_kv_end`). The kernel lasts as long as its busiest CTA: that load is the batch's **critical path**.

Why it matters: a ragged extend batch is not its work-equivalent uniform batch (models.ops.extend_group). A request
with 4 new tokens over a 1,341-token prefix costs a whole 128-row tile streaming 1,341 keys per head, not 4 rows;
a few long requests leave most CTAs idle while theirs run. On the calibration grid the time of a uniform batch is
close to linear in this critical path: (time - floor) / critical path stays within about ±15% of its median over
three orders of magnitude of the path (H100, 32 heads of 128: 0.010-0.014 us per unit), so the path carries what
the equivalent batch loses.

The price (`planned_us`): floor + rate x critical path, where the floor is the key's fastest measured grid row (the
launch and pipeline latency no tile avoids) and the rate is the median of (time - floor) / critical path over the
key's own uniform grid rows whose critical path lies within a factor of two of the call's (the rate drifts slowly
with size: small shapes are latency-bound, the largest run warmer). Every number is the planner's arithmetic or the
key's own measurement; nothing is fitted to ragged batches. Checked on the designed ragged rows of the off-grid
sets (`python -m simperf.perfdb.offgrid docs`).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

# ops and backends whose planner this module reproduces
PLANNED_BACKENDS = {"attn_mha_prefill": ("flashinfer_fa3",)}
# PrefillSM90Plan: cta_tile_q 128, or 192 when head_dim_vo == 64
CTA_TILE_Q = 128
CTA_TILE_Q_HEAD_DIM_64 = 192
# beyond this many works per head the planner schedules one head and the kernel repeats it for every head
# (`same_schedule_for_all_heads`, a grid of num_SMs x heads CTAs): not modelled, the call keeps the equivalent batch
MAX_WORKS_PER_HEAD = 4096
# rows whose critical path lies within this factor of the call's give its rate; fewer than RATE_MIN_ROWS: the
# RATE_NEAREST rows nearest in log critical path
RATE_WINDOW = 2.0
RATE_MIN_ROWS = 3
RATE_NEAREST = 10


def planned(op: str, key: Mapping[str, object]) -> bool:
    return str(key.get("backend")) in PLANNED_BACKENDS.get(op, ())


def cta_tile_q(head_dim_v: int) -> int:
    return CTA_TILE_Q_HEAD_DIM_64 if int(head_dim_v) == 64 else CTA_TILE_Q


def tile_costs(q_lens: np.ndarray, kv_lens: np.ndarray, tile_q: int = CTA_TILE_Q) -> np.ndarray:
    """The planner's cost of each query tile of one head, in the order it hands them out (requests by KV length,
    longest first, ties in request order; within a request the last tile first)."""
    q = np.asarray(q_lens, dtype=np.int64)
    kv = np.asarray(kv_lens, dtype=np.int64)
    order = np.argsort(-kv, kind="stable")
    costs: list[np.ndarray] = []
    for i in order:
        tiles = -(-int(q[i]) // tile_q)
        if tiles == 0:
            continue
        t = np.arange(tiles - 1, -1, -1, dtype=np.int64)
        # packed_causal_kv_end: the last tile reads every key; the others stop at their diagonal
        ends = np.clip(kv[i] - q[i] + (t + 1) * tile_q, 0, kv[i])
        ends[t == tiles - 1] = kv[i]
        costs.append(2 * tile_q + ends)
    return np.concatenate(costs).astype(np.float64) if costs else np.zeros(0)


def works_per_head(q_lens: np.ndarray, tile_q: int = CTA_TILE_Q) -> int:
    """PrefillSM90Plan's bound on works per head (ceil(total rows / tile) + batch - 1)."""
    q = np.asarray(q_lens, dtype=np.int64)
    return -(-int(q.sum()) // tile_q) + int(q.size) - 1


def critical_path(
    q_lens: np.ndarray, kv_lens: np.ndarray, heads: int, num_sms: int, head_dim_v: int
) -> float | None:
    """The busiest CTA's accumulated cost for this batch (planner units); None where the planner would schedule one
    head for all (`same_schedule_for_all_heads`, not modelled)."""
    tile_q = cta_tile_q(head_dim_v)
    if works_per_head(q_lens, tile_q) > MAX_WORKS_PER_HEAD:
        return None
    costs = tile_costs(q_lens, kv_lens, tile_q)
    if costs.size * heads <= num_sms:  # one tile per CTA at most: the longest tile is the path
        return float(costs.max(initial=0.0))
    loads = [0.0] * num_sms  # a min-heap of the CTAs' accumulated costs, as the planner keeps it
    for _ in range(heads):
        for cost in costs.tolist():
            heapq.heapreplace(loads, loads[0] + cost)
    return max(loads)


@dataclass
class KeyRates:
    """One key's uniform grid rows as (critical path, time - floor), for the rate at a call's critical path."""

    floor_us: float
    heads: int
    head_dim_v: int
    num_sms: int
    batch: np.ndarray
    q_len: np.ndarray
    kv_len: np.ndarray
    us: np.ndarray
    # bounds of each row's critical path (max(longest tile, mean load) .. mean load + longest tile: the greedy
    # list schedule's), so that only rows that can fall in a call's window are walked through the planner
    lower: np.ndarray
    upper: np.ndarray
    # each row's critical path, walked through the planner when a call first needs it (NaN: not yet; -1: a row
    # whose schedule is not modelled)
    paths: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def of(cls, batch, q_len, kv_len, us, heads: int, head_dim_v: int, num_sms: int) -> KeyRates | None:
        us = np.asarray(us, dtype=np.float64)
        if us.size < RATE_MIN_ROWS:
            return None
        b = np.asarray(batch, dtype=np.int64)
        q = np.asarray(q_len, dtype=np.int64)
        kv = np.asarray(kv_len, dtype=np.int64)
        tile_q = cta_tile_q(head_dim_v)
        longest = 2.0 * tile_q + kv.astype(np.float64)
        per_request = np.array(
            [tile_costs(np.array([qi]), np.array([ki]), tile_q).sum() for qi, ki in zip(q, kv, strict=True)]
        )
        mean = b * heads * per_request / num_sms
        return cls(
            floor_us=float(us.min()),
            heads=heads,
            head_dim_v=head_dim_v,
            num_sms=num_sms,
            batch=b,
            q_len=q,
            kv_len=kv,
            us=us,
            lower=np.maximum(longest, mean),
            upper=mean + longest,
            paths=np.full(us.size, np.nan),
        )

    def _walk(self, rows: np.ndarray) -> np.ndarray:
        """The critical paths of these rows (walking the planner for those not walked yet)."""
        for i in rows[np.isnan(self.paths[rows])].tolist():
            n = int(self.batch[i])
            path = critical_path(
                np.full(n, self.q_len[i]),
                np.full(n, self.kv_len[i]),
                self.heads,
                self.num_sms,
                self.head_dim_v,
            )
            self.paths[i] = -1.0 if path is None else path
        return self.paths[rows]

    def rate_at(self, path: float) -> float:
        """us per planner unit above the floor, from the rows whose critical path is within RATE_WINDOW of `path`."""
        lo, hi = path / RATE_WINDOW, path * RATE_WINDOW
        maybe = np.flatnonzero((self.upper >= lo) & (self.lower <= hi))
        paths = self._walk(maybe)
        near = maybe[(paths > 0) & (paths >= lo) & (paths <= hi)]
        if near.size < RATE_MIN_ROWS:
            # too few rows near: the nearest in log path among all rows (walks every row once, then kept)
            every = np.arange(self.us.size)
            walked = self._walk(every)
            every = every[walked > 0]
            order = np.argsort(np.abs(np.log(self.paths[every] / path)), kind="stable")
            near = every[order[:RATE_NEAREST]]
        return float(np.median((self.us[near] - self.floor_us) / self.paths[near]))


def planned_us(rates: KeyRates, q_lens: np.ndarray, kv_lens: np.ndarray) -> tuple[float, float] | None:
    """(time, critical path) of a ragged call of this key; None where the planner's schedule is not modelled."""
    path = critical_path(q_lens, kv_lens, rates.heads, rates.num_sms, rates.head_dim_v)
    if path is None:
        return None
    return rates.floor_us + rates.rate_at(path) * path, path


def describe(rates: KeyRates, path: float) -> str:
    return (
        f"flashinfer's SM90 prefill plan: busiest CTA {path:.0f} units x {rates.rate_at(path) * 1e3:.3g} ns over the "
        f"key's floor {rates.floor_us:.3g} us"
    )
