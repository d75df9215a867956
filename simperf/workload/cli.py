"""`simperf trace inspect|convert|export`: typer-annotated functions the main CLI registers.

    trace_app = typer.Typer(no_args_is_help=True, help="Read, summarise and convert request traces.")
    trace_app.command("inspect")(inspect_command)
    trace_app.command("convert")(convert_command)
    trace_app.command("export")(export_command)
    app.add_typer(trace_app, name="trace")

Errors in the input (malformed rows, unknown columns) exit with status 2 and the `path:line` message.
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from simperf import strictjson
from simperf.cli_errors import MaxMemoryOption, print_note
from simperf.output_paths import check_output_file
from simperf.workload.arrivals import poisson_arrivals
from simperf.workload.summary import TraceSummary, summarize_trace
from simperf.workload.trace import Trace, TraceError, read_trace
from simperf.workload.trace_write import write_trace

if TYPE_CHECKING:
    from simperf.scenario.models import WorkloadSpec
    from simperf.workload.requests import RequestSet

_err = Console(stderr=True)
TRACE_SUFFIXES = (".jsonl", ".ndjson", ".parquet", ".csv")  # what trace_write.write_trace writes


def _fail(message: str) -> None:
    from simperf.cli_errors import fail

    fail(message)


MAX_BINS = 100_000


def inspect_command(
    path: Annotated[Path, typer.Argument(help="trace file (simperf, Mooncake, Azure, bench_serving output)")],
    # max: --bins 100000000 (a typo's extra zeros) ran for minutes and took gigabytes to print a line of zeros
    bins: Annotated[
        int, typer.Option(min=1, max=MAX_BINS, help="time bins for the rate-over-time line")
    ] = 12,
    cache_tokens: Annotated[
        int | None,
        typer.Option(min=1, help="prefix reuse under an LRU cache of this many tokens (default: unbounded)"),
    ] = None,
    run: Annotated[
        int | None, typer.Option(min=0, help="bench_serving file: which run (line, 0-based)")
    ] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="text | json")] = "text",
) -> None:
    """Summarise a trace: count, duration, rate over time, length distributions, prefix reuse ratio."""
    if output not in ("text", "json"):
        _fail(f"--output: got {output!r}; allowed values: text, json")
    try:
        trace = read_trace(path, run=run)
    except TraceError as e:
        _fail(str(e))
    if cache_tokens is not None and trace.block_hashes is None:  # accepted, and no reuse figure to bound
        _fail(f"--cache-tokens: bounds the prefix reuse figure; {path} has no prefix-block ids (hash_ids)")
    if cache_tokens is not None and cache_tokens < trace.hash_block_tokens:
        # the cache kept the block it had just inserted past its capacity: a 1-token cache "hit" a third of requests
        _fail(
            f"--cache-tokens: got {cache_tokens}, less than one of {path}'s {trace.hash_block_tokens}-token prefix "
            f"blocks, so it holds none; give at least {trace.hash_block_tokens}"
        )
    summary = summarize_trace(trace, bins=bins, capacity_tokens=cache_tokens)
    if output == "json":
        sys.stdout.write(strictjson.dumps(asdict(summary), indent=2) + "\n")
    else:
        from simperf.report.tables import stdout_console

        print_summary(summary, str(path), stdout_console())  # complete when piped


def convert_command(
    src: Annotated[Path, typer.Argument(help="trace to read, any supported format")],
    dst: Annotated[Path, typer.Argument(help="simperf trace to write: .jsonl, .parquet or .csv")],
    run: Annotated[
        int | None, typer.Option(min=0, help="bench_serving file: which run (line, 0-based)")
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option(
            help="req/s of Poisson arrivals for a file without times (bench_serving without start_times)"
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(min=0, help="seed of those arrivals (default 42)")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="convert only the first N requests")] = None,
) -> None:
    """Write a trace in simperf's schema (arrival_s, input_len, output_len, hash_ids, accept_len)."""
    check_output_file(dst, "DST", suffixes=TRACE_SUFFIXES, inputs=(src,), what="trace")
    try:
        trace = read_trace(src, limit=limit, run=run)
        if not trace.has_times:
            if rate is None:
                _fail(f"{src}: records no arrival times; give --rate to draw Poisson arrivals")
            if not rate > 0:  # NaN and 0 failed inside the arrival draw, naming no option
                _fail(f"--rate: got {rate}; give a positive request rate (req/s), or inf")
            arrivals = poisson_arrivals(np.random.RandomState(42 if seed is None else seed), len(trace), rate)
            trace = replace(trace, arrival_s=arrivals.send_s, has_times=True)
        elif rate is not None:
            _fail(f"{src}: has its own arrival times; --rate applies only to files without them")
        elif seed is not None:
            _fail(f"{src}: has its own arrival times; --seed seeds the --rate arrivals of files without them")
        write_trace(trace, dst)
    except TraceError as e:
        _fail(str(e))
    for note in trace.skipped:
        _err.print(f"skipped {note}", highlight=False)
    Console().print(f"{len(trace)} requests ({trace.format}) written to {dst}", highlight=False)


def export_command(
    scenario: Annotated[Path, typer.Argument(help="scenario YAML whose workload to write")],
    dst: Annotated[Path, typer.Argument(help="simperf trace to write: .jsonl, .parquet or .csv")],
    max_memory_gb: MaxMemoryOption = None,
) -> None:
    """Write the requests a scenario's workload sends (any dataset kind) as a simperf trace."""
    from simperf.models.zoo import load_arch
    from simperf.runsize import RunTooLarge, check_workload_size, memory_limit_bytes
    from simperf.scenario.load import ScenarioError, load_scenario
    from simperf.workload.requests import build_requests

    check_output_file(dst, "DST", suffixes=TRACE_SUFFIXES, inputs=(scenario,), what="trace")
    try:
        sc = load_scenario(scenario)
        dataset = sc.workload.dataset
        if dataset.kind == "trace":  # the trace this scenario replays is an input too: never write over it
            check_output_file(
                dst, "DST", suffixes=TRACE_SUFFIXES, inputs=(scenario, dataset.path), what="trace"
            )
        # predict's size guard, before any request is drawn: a billion prompts drew for minutes
        check_workload_size(sc.workload, memory_limit_bytes(max_memory_gb))
        context_len = load_arch(sc.model.name, sc.model.config).context_len
        requests = build_requests(sc.workload, context_len=context_len)
        trace = Trace(
            arrival_s=requests.arrival_s,
            input_len=requests.input_len,
            output_len=requests.output_len,
            block_hashes=requests.block_hashes,
            format="simperf",
            hash_block_tokens=requests.hash_block_tokens or 512,
            accept_len=requests.accept_len,
        )
        write_trace(trace, dst)
    except RunTooLarge as e:  # a scenario field's problem: name the file it is in
        _fail(f"{scenario}: {e}")
    except (ScenarioError, TraceError, ValueError) as e:
        _fail(str(e))
    Console().print(f"{len(trace)} requests ({requests.source}) written to {dst}", highlight=False)
    for note in _unkept_by_the_trace(sc.workload, requests):
        print_note(note)


def _unkept_by_the_trace(workload: WorkloadSpec, requests: RequestSet) -> list[str]:
    """What the scenario's client does that a trace has no column for: a scenario replaying the export sent every
    later turn at its planned time, ran uncapped and with the default client settings, without a word."""
    notes = []
    held = 0 if requests.follows is None else int((requests.follows >= 0).sum())
    if held:
        notes.append(
            f"{held} of the requests are later turns the scenario's client holds until the previous turn's answer "
            "is complete (multi_turn); the trace keeps only their planned send times, so replaying it sends them "
            "open-loop, whatever the previous answer's latency"
        )
    if workload.max_concurrency is not None:
        notes.append(
            f"the scenario's client keeps at most {workload.max_concurrency} requests in flight "
            "(workload.max_concurrency); the trace keeps only the send times, so replaying it sends them without "
            "that limit unless the replay sets its own"
        )
    defaults = type(workload).model_fields
    unkept = [
        f"workload.{name}: {str(getattr(workload, name)).lower()}"
        for name in ("ignore_eos", "tokenize_prompt", "warmup_requests")
        if name in workload.model_fields_set and getattr(workload, name) != defaults[name].default
    ]
    if unkept:
        notes.append(
            f"the trace keeps each request's send time and lengths, not the client's settings ({', '.join(unkept)}); "
            "a scenario replaying it runs the defaults unless it sets them again"
        )
    return notes


def print_summary(summary: TraceSummary, title: str, console: Console) -> None:
    table = Table("", "value", title=f"{title} ({summary.format})", show_header=False)
    table.add_row("requests", f"{summary.count:,}")
    if summary.has_times:
        table.add_row("duration", f"{summary.duration_s:,.1f} s")
        if summary.rate_over_time:
            table.add_row("mean rate", f"{summary.mean_rate:.3f} req/s")
            rates = " ".join(f"{r:.2f}" for r in summary.rate_over_time)
            table.add_row(f"rate per {_seconds(summary.rate_bin_s)}", rates)
        else:  # one request, or all at the same instant: no rate to speak of
            table.add_row("mean rate", "- (every request arrives at 0 s)")
    else:
        table.add_row("arrival times", "none recorded")
    for name, s in (("input tokens", summary.input_len), ("output tokens", summary.output_len)):
        table.add_row(
            name,
            f"mean {s.mean:,.1f}  p50 {s.p50:,.0f}  p90 {s.p90:,.0f}  p99 {s.p99:,.0f}  "
            f"min {s.min:,}  max {s.max:,}  total {s.total:,}",
        )
    reuse = summary.prefix_reuse
    if reuse is None:
        table.add_row("prefix reuse", "no prefix-block ids in this trace")
    else:
        bound = (
            "unbounded cache"
            if reuse.capacity_tokens is None
            else f"LRU cache of {reuse.capacity_tokens:,} tokens"
        )
        table.add_row(
            "prefix reuse",
            f"{100 * reuse.ratio:.1f}% of prompt tokens, {100 * reuse.requests_hit:.1f}% of requests hit "
            f"({bound}, {reuse.block_tokens}-token blocks, {reuse.unique_blocks:,} distinct blocks)",
        )
        if reuse.ratio_over_time:
            table.add_row(
                f"reuse per {_seconds(summary.rate_bin_s)}",
                # a bin no request arrived in has no ratio (NaN): it printed as "nan%"
                " ".join("-" if math.isnan(r) else f"{100 * r:.0f}%" for r in reuse.ratio_over_time),
            )
    if summary.accept_len_mean is not None:
        table.add_row("accept length", f"mean {summary.accept_len_mean:.2f} tokens per verify step")
    if summary.skipped:
        table.add_row("skipped", f"{len(summary.skipped)}: " + "; ".join(summary.skipped[:5]))
    console.print(table)


def _seconds(span_s: float) -> str:
    """A bin width: whole seconds when long, three significant digits when short (not "0 s" for 0.04 s)."""
    return f"{span_s:,.0f} s" if span_s >= 10 else f"{span_s:.3g} s"
