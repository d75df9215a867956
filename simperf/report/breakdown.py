"""`simperf predict --breakdown`: per-op time of a representative prefill and decode step, with each op's source."""

from __future__ import annotations

import numpy as np

from simperf.report.tables import Col, TableData, print_tables
from simperf.scenario.models import EAGER_RANKS_MEASURED, EAGER_RANKS_SERVED, MEASURED_OVERHEADS, Overheads


def representative_steps(prediction) -> tuple[int, int, int, float]:
    """(prefill tokens, decode batch, padded decode batch, mean KV length) averaged over the simulated run (the
    prefill tokens over the prefill server's extends: a PD decode server's are the KV it receives)."""
    stats = prediction.stats
    _, prefill_stats = prediction.prefill_step
    prefill_tokens = max(1, round(prefill_stats.extend_tokens / max(prefill_stats.extend_iterations, 1)))
    bs = max(1, round(stats.decode_rows / max(stats.decode_iterations, 1)))
    kv_mean = (
        stats.decode_kv_tokens / max(stats.decode_rows, 1) if stats.decode_rows else float(prefill_tokens)
    )
    buckets = prediction.serving.cuda_graph_bs
    padded = next((b for b in buckets if b >= bs), bs)
    return prefill_tokens, bs, padded, max(kv_mean, 1.0)


def representative_shared_reads(prediction) -> float:
    """Mean shared prefix reads per decode iteration (KV tokens another running request also reads) of the run."""
    stats = prediction.stats
    return stats.decode_shared_reads / stats.decode_iterations if stats.decode_iterations else 0.0


_COLUMNS = (
    Col("op", "op"),
    Col("kind", "kind"),
    Col("shape", "shape"),
    Col("count", "x", str, True),
    Col("us_per_call", "µs/call", lambda v: f"{v:.1f}", True),
    Col("total_us", "total µs", lambda v: f"{v:.1f}", True),
    Col("share", "share", lambda v: f"{100 * v:.1f}%", True),
    Col("source", "source"),
    Col("detail", "detail"),
)


def _table(title: str, rows, name: str) -> TableData:
    total = sum(r.total_us for r in rows) or 1.0
    table = TableData(title, _COLUMNS, name=name, caption=f"step total {total / 1000:.3f} ms")
    for r in sorted(rows, key=lambda r: -r.total_us):
        table.add(
            op=r.name,
            kind=r.op,
            shape=", ".join(f"{k}={v:g}" for k, v in r.axes.items()),
            count=r.count,
            us_per_call=r.us_per_call,
            total_us=r.total_us,
            share=r.total_us / total,
            source=r.source,
            detail=r.detail,
        )
    return table


_HOST_COLUMNS = (
    Col("cost", "cost"),
    Col("paid", "paid"),
    Col("us", "µs", lambda v: f"{v:.1f}", True),
    Col("here_us", "here µs", lambda v: f"{v:.1f}", True),
    Col("source", "source"),
)


def _overhead_source(overheads: Overheads, field: str) -> str:
    if field in overheads.model_fields_set:
        return "given in the scenario"
    source = "measured (docs/overheads.md)" if field in MEASURED_OVERHEADS else "estimate"
    factor = overheads.host_factor(field)
    # scaled from the host it was measured on to this one (hardware.host_speed)
    return source if factor == 1.0 else f"{source} x{factor:.3g} host speed"


def host_cost_table(prediction, tokens: int, bs: int, extend_kernels: int) -> TableData:
    """The CPU-side costs the simulator adds around the steps (Overheads), with what they come to in this run's
    representative steps and where each number comes from."""
    o: Overheads = prediction.cost.overheads
    serving = prediction.serving
    prefill_cost, _ = prediction.prefill_step  # the extend's host cost is the prefill server's
    extend_host = prefill_cost.extend_host_us_per_kernel
    per_kernel_us, field = extend_host.us, extend_host.field
    rank_factor, rank_field = extend_host.rank_factor, extend_host.rank_field
    overlap = "beside the GPU step (overlap scheduler)" if serving.overlap_schedule else "after the GPU step"
    text = not prediction.scenario.workload.tokenize_prompt
    tokenize = "per text-prompt token, one request at a time on the API server" + (
        "" if text else " (not paid: token ids sent)"
    )
    metrics = "per streamed chunk, --enable-metrics on the API server" + (
        "" if serving.enable_metrics else " (not paid: metrics off)"
    )
    incremental = serving.incremental_streaming_output
    carried = "per output token a chunk carries (the request's output so far: cumulative streaming)" + (
        " (not paid: --incremental-streaming-output)" if incremental else ""
    )
    # a decode batch's chunks carry half of the mean output each, on average over the requests' lives
    mean_output = float(np.mean(prediction.records.output_len)) if len(prediction.records) else 0.0
    carried_here = 0.0 if incremental else o.frontend_us_per_streamed_token * bs * (mean_output + 1) / 2
    # the chunk time above grows by a share per request open on the API server (~ the batch here)
    chunk_here_us = o.frontend_us_per_chunk_for(serving.enable_metrics) + (carried_here / bs if bs else 0.0)
    growth_here_us = o.frontend_share_per_open_request * chunk_here_us * bs
    rows = [
        ("ingress_us", "per request, client send -> scheduler (a lone request's)", o.ingress_us, o.ingress_us),
        ("client_setup_us_per_request", "per request of a burst, the client's set-up (send times step by it)",
         o.client_setup_us_per_request, o.client_setup_us_per_request),
        ("client_burst_us_per_request", "per request of a burst, before any reaches the API server (in ingress)",
         o.client_burst_us_per_request, o.client_burst_us_per_request),
        ("receive_us_per_request", "per request, one at a time on the API server (in ingress)",
         o.receive_us_per_request, o.receive_us_per_request),
        ("finish_us_per_request", "per request, after its last chunk; takes turns with the intake on the API "
         "server", o.finish_us_per_request, o.finish_us_per_request),
        ("tokenize_us_per_prompt_token", tokenize, o.tokenize_us_per_prompt_token,
         o.tokenize_us_per_prompt_token * tokens if text else 0.0),
        ("egress_us", "per streamed chunk, processed -> client", o.egress_us, o.egress_us),
        ("frontend_us_per_chunk", "per streamed chunk, one at a time on the API server", o.frontend_us_per_chunk,
         o.frontend_us_per_chunk * bs),
        ("metrics_us_per_chunk", metrics, o.metrics_us_per_chunk,
         o.metrics_us_per_chunk * bs if serving.enable_metrics else 0.0),
        ("frontend_us_per_streamed_token", carried, o.frontend_us_per_streamed_token, carried_here),
        ("frontend_share_per_open_request", "per streamed chunk, its time above x "
         f"{o.frontend_share_per_open_request:.3g} per request open on the API server (its garbage collector; "
         f"{bs} open here)", growth_here_us, growth_here_us * bs),
        ("scheduler_us_per_iteration", f"per iteration, {overlap}", o.scheduler_us_per_iteration,
         o.scheduler_us_per_iteration),
        ("process_us_per_iteration", f"per iteration, {overlap}", o.process_us_per_iteration,
         o.process_us_per_iteration),
        ("process_us_per_running_request", f"per request of a batch, {overlap}", o.process_us_per_running_request,
         o.process_us_per_running_request * bs),
        (field, f"per kernel of an extend ({extend_kernels} here): the scheduler's CPU for all of it, the step only "
         "when the host is slower than its kernels", getattr(o, field), per_kernel_us * extend_kernels),
    ]  # fmt: skip
    if rank_field is not None:
        ranks = prefill_cost.serving.layout.tp
        measured_at = (
            f"measured served at {EAGER_RANKS_SERVED}"
            if rank_field == "eager_extend_rank_factor_tp2"
            else f"measured at {EAGER_RANKS_MEASURED}; more ranks: the same, an estimate"
        )
        rows.append((rank_field, f"x the eager extend's per-kernel host time at {ranks} TP ranks ({measured_at})",
                     rank_factor, rank_factor))  # fmt: skip
    table = TableData(
        "Host-side costs around the steps (CPU timeline; 'here' = this run's representative decode batch of "
        f"{bs} and prefill of {tokens} tokens)",
        _HOST_COLUMNS,
        name="host",
        caption="prefill CUDA graph: "
        + ("on (breakable)" if prefill_cost.serving.prefill_cuda_graph else "off, every extend is eager")
        + f'; host speed {prediction.scenario.hardware.host_speed_label} (docs/overheads.md "Hosts")',
    )
    for name, paid, us, here in rows:
        table.add(cost=name, paid=paid, us=us, here_us=here, source=_overhead_source(o, name))
    return table


def breakdown_tables(prediction) -> list[TableData]:
    """The representative prefill and decode steps' per-op tables, then the host-side costs around them."""
    tokens, bs, padded, kv_mean = representative_steps(prediction)
    cost = prediction.cost
    prefill_cost, _ = prediction.prefill_step
    extend = prefill_cost.breakdown_extend(np.array([tokens]), np.array([0]))
    server = " on the prefill server" if prediction.prefill_server is not None else ""
    graph = padded <= (prediction.serving.cuda_graph_max_bs or 0)
    shared = representative_shared_reads(prediction)
    decode = cost.breakdown_decode(bs, padded, round(kv_mean * bs), graph, shared)
    title = f"Representative decode step: batch {bs} (graph bucket {padded}), mean KV {kv_mean:.0f} tokens"
    if shared:
        title += f", {shared / bs:.0f} of them shared prefix reads"
    return [
        _table(
            f"Representative prefill step{server}: one request of {tokens} new tokens (the run's mean)",
            extend,
            "prefill",
        ),
        _table(title, decode, "decode"),
        host_cost_table(prediction, tokens, bs, next((r.count for r in extend if r.op == "overhead"), 0)),
    ]


def print_breakdown(prediction, output: str = "text") -> None:
    print_tables(breakdown_tables(prediction), output)


def breakdown_json(prediction) -> dict:
    """`-o json --breakdown`: per step, its title, total and op rows (the text tables' columns, raw values)."""
    out = {}
    for table in breakdown_tables(prediction):
        if table.name == "host":
            out["host"] = {"title": table.title, "caption": table.caption, "costs": table.json_rows()}
            continue
        out[table.name] = {
            "title": table.title,
            "total_us": sum(r["total_us"] for r in table.rows),
            "ops": table.json_rows(),
        }
    return out
