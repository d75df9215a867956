"""What each simulated server hands back, and how the fleet's records are put together from them.

Small fleets keep every replica's records (each streamed chunk): merged into one `RequestRecords` in the client's
request order they give the metrics through the same `summarize` a single server uses, so a one-replica fleet
reports exactly what `simperf predict` reports for that server. Above `EXACT_TOKEN_LIMIT` streamed tokens a replica
keeps only its digest (`digest.py`), so memory grows with requests, not tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simperf.fleet.digest import Digest, digest_of
from simperf.records import RequestRecords
from simperf.sim.engine import SimStats

# streamed tokens (Σ output lengths) up to which every chunk is kept: ~40 bytes a token while merging, ~0.8 GB
EXACT_TOKEN_LIMIT = 20_000_000


@dataclass
class ServerOutcome:
    server: int  # the router's worker index (within its kind)
    kind: str  # replicas | prefill | decode
    group: str  # the group's label
    routed: int  # requests the router sent it
    stats: SimStats
    rejected: list[tuple[int, str]]  # (client request id, reason)
    records: RequestRecords | None = None  # with client request ids (kept when exact)
    digest: Digest | None = None
    notes: dict = field(default_factory=dict)


def globalize(records: RequestRecords, global_ids: np.ndarray) -> RequestRecords:
    """`records` (local request ids) re-keyed to the client's ids."""
    records.request_id = np.asarray(global_ids, dtype=np.int64)[records.request_id]
    return records


def finish_outcome(
    server: int,
    kind: str,
    group: str,
    records: RequestRecords,
    stats: SimStats,
    global_ids: np.ndarray,
    keep_records: bool,
    t0: float,
) -> ServerOutcome:
    ids = np.asarray(global_ids, dtype=np.int64)
    rejected = [(int(ids[r]), why) for r, why in stats.rejected]
    records = globalize(records, ids)
    outcome = ServerOutcome(server, kind, group, len(ids), _light(stats), rejected)
    if keep_records:
        outcome.records = records
    else:
        outcome.digest = digest_of(records, server, t0)
    return outcome


def _light(stats: SimStats) -> SimStats:
    """The stats without the per-request rejection list (kept, re-keyed, on the outcome)."""
    stats.rejected = []
    return stats


def merge_records(outcomes: list[ServerOutcome]) -> RequestRecords:
    """Every kept record in the client's request order; `dp_rank` keeps each server's own DP rank."""
    parts = [o.records for o in outcomes if o.records is not None and len(o.records)]
    if not parts:
        empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
        return RequestRecords(
            empty_i, empty_f, empty_i, empty_i, empty_f, empty_f, np.zeros(1, np.int64), empty_f, empty_i,
            empty_i, empty_i, empty_i, 0.0,
        )  # fmt: skip
    ids = np.concatenate([p.request_id for p in parts])
    order = np.argsort(ids, kind="stable")
    lengths = np.concatenate([np.diff(p.chunk_offsets) for p in parts])
    starts = np.concatenate(
        [p.chunk_offsets[:-1] + base for p, base in zip(parts, _bases(parts), strict=True)]
    )
    lengths_sorted = lengths[order]
    offsets = np.concatenate(([0], np.cumsum(lengths_sorted))).astype(np.int64)
    index = np.repeat(starts[order] - offsets[:-1], lengths_sorted) + np.arange(offsets[-1], dtype=np.int64)
    times = np.concatenate([p.chunk_time_s for p in parts])
    tokens = np.concatenate([p.chunk_num_tokens for p in parts])

    def column(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in parts])[order]

    return RequestRecords(
        request_id=ids[order],
        send_s=column("send_s"),
        input_len=column("input_len"),
        output_len=column("output_len"),
        first_token_s=column("first_token_s"),
        finish_s=column("finish_s"),
        chunk_offsets=offsets,
        chunk_time_s=times[index],
        chunk_num_tokens=tokens[index],
        dp_rank=column("dp_rank"),
        retractions=column("retractions"),
        cached_tokens=column("cached_tokens"),
        duration_s=max(p.duration_s for p in parts),
    )


def _bases(parts: list[RequestRecords]) -> list[int]:
    bases, total = [], 0
    for p in parts:
        bases.append(total)
        total += int(p.chunk_offsets[-1])
    return bases


def server_of_records(outcomes: list[ServerOutcome], merged: RequestRecords) -> np.ndarray:
    """The server each merged record came from."""
    ids = np.concatenate(
        [o.records.request_id for o in outcomes if o.records is not None] or [np.zeros(0, np.int64)]
    )
    servers = np.concatenate(
        [np.full(len(o.records), o.server, np.int64) for o in outcomes if o.records is not None]
        or [np.zeros(0, np.int64)]
    )
    lookup = dict(zip(ids.tolist(), servers.tolist(), strict=True))
    return np.asarray([lookup[r] for r in merged.request_id.tolist()], dtype=np.int64)
