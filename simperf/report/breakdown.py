"""`simperf predict --breakdown`: per-op time of a representative prefill and decode step, with each op's source."""

from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.table import Table


def representative_steps(prediction) -> tuple[int, int, int, float]:
    """(prefill tokens, decode batch, padded decode batch, mean KV length) averaged over the simulated run."""
    stats = prediction.stats
    prefill_tokens = max(1, round(stats.extend_tokens / max(stats.extend_iterations, 1)))
    bs = max(1, round(stats.decode_rows / max(stats.decode_iterations, 1)))
    kv_mean = (
        stats.decode_kv_tokens / max(stats.decode_rows, 1) if stats.decode_rows else float(prefill_tokens)
    )
    buckets = prediction.serving.cuda_graph_bs
    padded = next((b for b in buckets if b >= bs), bs)
    return prefill_tokens, bs, padded, max(kv_mean, 1.0)


def _table(title: str, rows) -> Table:
    total = sum(r.total_us for r in rows) or 1.0
    table = Table(title=title, title_justify="left")
    for col, justify in (
        ("op", "left"),
        ("kind", "left"),
        ("shape", "left"),
        ("x", "right"),
        ("µs/call", "right"),
        ("total µs", "right"),
        ("share", "right"),
        ("source", "left"),
        ("detail", "left"),
    ):
        table.add_column(col, justify=justify, overflow="fold")
    for r in sorted(rows, key=lambda r: -r.total_us):
        shape = ", ".join(f"{k}={v:g}" for k, v in r.axes.items())
        table.add_row(
            r.name,
            r.op,
            shape,
            str(r.count),
            f"{r.us_per_call:.1f}",
            f"{r.total_us:.1f}",
            f"{100 * r.total_us / total:.1f}%",
            r.source,
            r.detail,
        )
    table.caption = f"step total {total / 1000:.3f} ms"
    return table


def print_breakdown(prediction, console: Console) -> None:
    tokens, bs, padded, kv_mean = representative_steps(prediction)
    cost = prediction.cost
    extend = cost.breakdown_extend(np.array([tokens]), np.array([0]))
    console.print(
        _table(f"Representative prefill step: one request of {tokens} new tokens (the run's mean)", extend)
    )
    graph = padded <= (prediction.serving.cuda_graph_max_bs or 0)
    decode = cost.breakdown_decode(bs, padded, round(kv_mean * bs), round(kv_mean), graph)
    console.print(
        _table(
            f"Representative decode step: batch {bs} (graph bucket {padded}), mean KV {kv_mean:.0f} tokens",
            decode,
        )
    )
