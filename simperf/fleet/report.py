"""A fleet prediction on the terminal and on disk: bench_serving's block for the whole fleet, a table per server,
and one row per request."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from simperf.cli_errors import print_note
from simperf.fleet.predict import FleetPrediction
from simperf.report.text import print_bench_block


def print_fleet(prediction: FleetPrediction, console: Console) -> None:
    sc = prediction.scenario
    groups = ", ".join(f"{g.count}x {g.label} ({g.gpus_per_server}x {g.gpu.key})" for g in prediction.groups)
    console.print(
        f"simperf fleet prediction: {sc.name} ({prediction.arch.name}; {groups}; {prediction.num_gpus} GPUs), "
        f"simulated in {prediction.wall_s:.2f} s",
        highlight=False,
    )
    print_bench_block(prediction.result, console, "Serving Benchmark Result (fleet)", prediction.notes)
    console.print(server_table(prediction))


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def server_table(prediction: FleetPrediction) -> Table:
    several = len(prediction.groups) > 1
    columns = [
        "server",
        *(["group"] if several else []),
        "routed",
        "hit %",
        "TTFT ms",
        "p90 TTFT",
        "TPOT ms",
        "busy %",
    ]
    table = Table(*columns, title="per server")
    for s in prediction.servers:
        hit = s["prefix_hit_rate"]
        busy = s["gpu_busy_share"]
        table.add_row(
            str(s["server"]),
            *([s["group"]] if several else []),
            str(s["routed"]),
            _fmt(None if hit is None else 100 * hit, ".1f"),
            _fmt(s["mean_ttft_ms"], ".1f"),
            _fmt(s["p90_ttft_ms"], ".1f"),
            _fmt(s["mean_tpot_ms"], ".2f"),
            _fmt(None if busy is None else 100 * busy, ".0f"),
        )
    return table


def write_fleet_requests(prediction: FleetPrediction, path: Path) -> None:
    """One row per completed request: which server served it and what its client saw."""
    rows = prediction.rows
    table = pa.table(
        {
            "request_id": rows.request_id,
            "server": rows.server,
            "send_s": rows.send_s,
            "ttft_s": rows.ttft_s,
            "latency_s": rows.latency_s,
            "input_len": rows.input_len,
            "output_len": rows.output_len,
            "cached_tokens": rows.cached_tokens,
            "retractions": rows.retractions,
        }
    )
    pq.write_table(table, path)


def timeline_bins_note(fleet, where: str) -> None:
    """fleet.timeline_bins sizes the per-replica timelines, which only predict's JSON (and --output-file line) and
    fleet compare's --charts hold: elsewhere it was accepted and read by nothing."""
    if "timeline_bins" in fleet.model_fields_set:
        print_note(
            f"fleet.timeline_bins: sizes the per-replica timelines, which {where} does not show (predict -o "
            "json or --output-file, and fleet compare --charts, hold them); it changes nothing here"
        )


def emit_fleet(
    prediction: FleetPrediction,
    output: str,
    requests: Path | None,
    breakdown: bool,
    output_file: Path | None = None,
    output_details: bool = False,
) -> None:
    """`simperf predict` of a fleet scenario: text (or JSON) on stdout, one row per request to `requests`, one
    bench_serving line appended to `output_file` (its per-request arrays too when every chunk was kept)."""
    import sys

    from simperf.report.output import append_jsonl, bench_jsonl_line, result_json
    from simperf.report.tables import stdout_console

    if requests is not None:
        write_fleet_requests(prediction, requests)
    extra = prediction.extra()
    if output_file is not None:
        details = prediction.records if output_details else None
        append_jsonl(output_file, bench_jsonl_line(prediction.result, extra, details))
    # what a fleet's output leaves out: after the text, or on stderr beside the JSON (they were left out of it
    # without a word, while the text said them)
    left_out = []
    if breakdown:
        left_out.append(
            "--breakdown: per-op step times are per server; run the group's scenario without `fleet:`"
        )
    if output_details and prediction.records is None:
        left_out.append("--output-details: per-token arrays were not kept for this large run (digests only)")
    if output == "json":
        sys.stdout.write(result_json(prediction.result, extra) + "\n")
        for line in left_out:
            print_note(line)
        return
    console = stdout_console()
    print_fleet(prediction, console)
    if output_file is None:
        timeline_bins_note(prediction.scenario.fleet, "predict's text output")
    for line in left_out:
        console.print(line)
    if requests is not None:
        console.print(f"per-request rows written to {requests}")
