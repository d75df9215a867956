"""Fleet-level results: bench_serving's metrics over every request, and per-server load and cache timelines."""

from __future__ import annotations

import numpy as np

from simperf.fleet.digest import Rows, merge_histograms, merge_itl, rows_of
from simperf.fleet.metrics import summarize_digest
from simperf.fleet.outcome import ServerOutcome, merge_records, server_of_records
from simperf.perfdb.schema import SOURCES
from simperf.records import RequestRecords
from simperf.report.metrics import summarize


def fleet_metrics(
    outcomes: list[ServerOutcome], sender_done_s: float
) -> tuple[dict, Rows, RequestRecords | None]:
    """(bench_serving's keys, one row per completed request, the merged records when every chunk was kept)."""
    if all(o.digest is None for o in outcomes):
        records = merge_records(outcomes)
        records.duration_s = max(records.duration_s, sender_done_s)
        rows = rows_of(records, server_of_records(outcomes, records)) if len(records) else Rows.concat([])
        return summarize(records), rows, records
    digests = [o.digest for o in outcomes if o.digest is not None]
    rows = Rows.concat([d.rows for d in digests])
    duration = max([d.max_finish_s for d in digests] + [sender_done_s])
    result = summarize_digest(rows, merge_itl(digests), merge_histograms(digests), duration)
    return result, rows, None


def source_shares(outcomes: list[ServerOutcome]) -> dict[str, float]:
    total = np.zeros(len(SOURCES))
    for o in outcomes:
        total += np.asarray(o.stats.time_by_source_us, dtype=float)
    whole = float(total.sum()) or 1.0
    return {name: float(v) / whole for name, v in zip(SOURCES, total, strict=True)}


def per_server(outcomes: list[ServerOutcome], rows: Rows, duration_s: float) -> list[dict]:
    """Load, cache and latency per server: imbalance shows here."""
    out = []
    for o in outcomes:
        mine = rows.server == o.server
        prompt = int(rows.input_len[mine].sum())
        cached = int(rows.cached_tokens[mine].sum())
        ttft = rows.ttft_s[mine]
        multi = mine & (rows.output_len > 1)
        tpot = (rows.latency_s[multi] - rows.ttft_s[multi]) / (rows.output_len[multi] - 1)
        out.append(
            {
                "server": o.server,
                "kind": o.kind,
                "group": o.group,
                "routed": o.routed,
                "completed": int(mine.sum()),
                "rejected": len(o.rejected),
                "input_tokens": prompt,
                "output_tokens": int(rows.output_len[mine].sum()),
                "prefix_hit_rate": cached / prompt if prompt else None,
                "mean_ttft_ms": float(ttft.mean() * 1000) if ttft.size else None,
                "p90_ttft_ms": float(np.percentile(ttft, 90) * 1000) if ttft.size else None,
                "mean_tpot_ms": float(tpot.mean() * 1000) if tpot.size else None,
                "gpu_busy_share": o.stats.gpu_busy_s / duration_s if duration_s > 0 else None,
                "retractions": o.stats.retractions,
                "kv_peak_tokens": max(o.stats.max_kv_used) if o.stats.max_kv_used else 0,
                **o.notes,
            }
        )
    return out


def timelines(rows: Rows, servers: list[int], bins: int, end_s: float) -> dict:
    """Per server, over `bins` equal slices of [0, end]: requests in flight at each slice's middle (routed and not
    yet answered, as the router counts them), requests sent, and the share of prompt tokens served from the
    prefix cache (by send time; None where nothing was sent)."""
    edges = np.linspace(0.0, end_s, bins + 1) if end_s > 0 else np.zeros(bins + 1)
    mid = (edges[:-1] + edges[1:]) / 2
    by_bin = np.clip(np.searchsorted(edges, rows.send_s, side="right") - 1, 0, bins - 1)
    in_flight, sent, hit = [], [], []
    for server in servers:
        mine = rows.server == server
        starts = np.sort(rows.send_s[mine])
        ends = np.sort(rows.send_s[mine] + rows.latency_s[mine])
        in_flight.append(
            (np.searchsorted(starts, mid, "right") - np.searchsorted(ends, mid, "right")).tolist()
        )
        b = by_bin[mine]
        sent.append(np.bincount(b, minlength=bins).tolist())
        prompt = np.bincount(b, weights=rows.input_len[mine], minlength=bins)
        cached = np.bincount(b, weights=rows.cached_tokens[mine], minlength=bins)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = cached / prompt
        hit.append([None if p == 0 else float(r) for r, p in zip(rate, prompt, strict=True)])
    return {
        "bin_edges_s": edges.tolist(),
        "servers": servers,
        "in_flight": in_flight,
        "sent": sent,
        "prefix_hit_rate": hit,
    }
