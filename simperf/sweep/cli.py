"""`simperf sweep`, `simperf plan`, `simperf report`: typer commands, registered on the main app by simperf/cli.py.

app.command("sweep")(sweep_command)
app.command("plan")(plan_command)
app.command("report")(report_command)
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from simperf import strictjson
from simperf.output_paths import check_output_dir, check_output_file
from simperf.report.tables import stdout_console

err = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    from simperf.cli_errors import fail

    fail(message, code)


def check_executor_options(executor: str, workers: int | None, ray_address: str | None) -> None:
    """--workers and --ray-address qualify an executor: with another one they were accepted and did nothing (and
    a --workers below 1 ran on one core)."""
    from simperf.sweep.executors import EXECUTORS

    if executor not in EXECUTORS:
        _fail(f"--executor: got {executor!r}; allowed values: {', '.join(EXECUTORS)}")
    if workers is not None and workers < 1:
        _fail(f"--workers: got {workers}; give 1 or more parallel workers")
    if workers is not None and executor == "serial":
        _fail("--workers: --executor serial runs one point at a time; use --executor process or ray")
    if ray_address is not None and executor != "ray":
        _fail(f"--ray-address: applies to --executor ray, not {executor}")


def check_plan_numbers(rate: float | None, top: int | None) -> None:
    """A target rate must be a positive finite number, and --top at least 1: NaN ended in "cannot convert float
    NaN to integer", 0 fell back to the default and -1 printed an empty table."""
    if rate is not None and not (math.isfinite(rate) and rate > 0):
        _fail(f"--rate: got {rate}; give a positive request rate (req/s)")
    if top is not None and top < 1:
        _fail(f"--top: got {top}; give 1 or more")


def default_table_path(sweep_file: Path, name: str) -> Path:
    return Path.cwd() / f"{name or sweep_file.stem}.sweep.parquet"


def _run(
    sweep_file: Path,
    out: Path | None,
    executor: str,
    workers: int | None,
    ray_address: str | None,
    fresh: bool,
    quiet: bool = False,
):
    from simperf.progress import bar
    from simperf.sweep.executors import ExecutorError
    from simperf.sweep.runner import run_sweep
    from simperf.sweep.spec import SweepError, load_sweep_file

    check_executor_options(executor, workers, ray_address)
    try:
        spec, base, base_dir = load_sweep_file(sweep_file)
    except SweepError as e:
        _fail(str(e))
    out = out or default_table_path(sweep_file, spec.name)
    check_output_file(out, "--out", suffixes=(".parquet",), inputs=(sweep_file,), what="Parquet")
    counts: dict[str, int] = {}
    try:
        with bar(f"sweep {spec.name}", None, quiet=quiet) as progress:

            def on_row(row: dict[str, Any]) -> None:
                counts[row["status"]] = counts.get(row["status"], 0) + 1
                progress.advance(status=" ".join(f"{k}:{v}" for k, v in sorted(counts.items())))

            run = run_sweep(
                spec,
                base,
                base_dir,
                out,
                executor=executor,
                workers=workers,
                ray_address=ray_address,
                fresh=fresh,
                on_start=progress.set_total,
                on_row=on_row,
            )
    except ExecutorError as e:
        _fail(str(e))
    except SweepError as e:
        _fail(f"{sweep_file}: {e}")
    except KeyboardInterrupt:
        err.print(f"interrupted: finished points are kept; run the same command again to resume ({out})")
        raise typer.Exit(130) from None
    return spec, run


def sweep_command(
    sweep_file: Annotated[Path, typer.Argument(help="sweep YAML file (a base scenario and axes)")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="result table (default: ./<sweep name>.sweep.parquet)")
    ] = None,
    executor: Annotated[str, typer.Option(help="serial | process | ray")] = "process",
    workers: Annotated[int | None, typer.Option(help="parallel workers (default: all local cores)")] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster address (default: start a local Ray instance)")
    ] = None,
    fresh: Annotated[bool, typer.Option(help="ignore finished points of an earlier run")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress display on stderr")] = False,
) -> None:
    """Run every configuration of a sweep into one Parquet table (resumable)."""
    spec, run = _run(sweep_file, out, executor, workers, ray_address, fresh, quiet)
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(run.status_counts.items()))
    Console().print(
        f"{run.table_path}: {run.frame.height} points ({counts}); computed {run.computed}, reused {run.reused}, "
        f"{run.wall_s:.1f} s",
        highlight=False,
        soft_wrap=True,
    )
    _note_capped(run.frame)
    if not run.status_counts.get("ok"):  # exit 0 told a script the sweep had run
        first = run.frame.row(0, named=True)
        _fail(
            f"{sweep_file}: no point of the sweep ran ({counts}); first: {first['status']}: {first['reason']}",
            1,
        )


def _load_table(results: Path, executor: str, workers: int | None, quiet: bool = False):
    """A results table, or a sweep file (run or resumed first)."""
    from simperf.sweep.table import read_table

    if results.suffix in (".yaml", ".yml"):
        _, run = _run(results, None, executor, workers, None, False, quiet)
        results = run.table_path
    elif workers is not None:
        _fail(f"--workers: {results} is a finished table; --workers applies when given a sweep file")
    elif executor != "process":  # --executor serial on a table was accepted and ran nothing
        _fail(f"--executor: {results} is a finished table; --executor applies when given a sweep file")
    if not results.exists():
        _fail(f"{results}: no such result table (run `simperf sweep` first)")
    table, meta = read_table(results)
    _note_capped(table)
    return table, meta


def _note_capped(frame) -> None:
    from simperf.cli_errors import print_note
    from simperf.sweep.table import capped_note

    note = capped_note(frame)
    if note is not None:
        print_note(note)


def _plan_inputs(meta: dict[str, Any], rate: float | None, sla: list[str] | None, top: int | None):
    from simperf.sweep.sla import SlaError, parse_sla

    plan_defaults = meta.get("spec", {}).get("plan", {}) or {}
    rate = rate if rate is not None else plan_defaults.get("rate")
    texts = sla if sla else plan_defaults.get("sla", [])
    try:
        parsed = parse_sla(texts)
    except SlaError as e:
        _fail(f"--sla: {e}")
    return rate, parsed, top or plan_defaults.get("top", 5)


def plan_command(
    results: Annotated[Path, typer.Argument(help="sweep result table (.parquet) or sweep file (.yaml)")],
    rate: Annotated[
        float | None, typer.Option(help="target request rate, req/s (default: the sweep's plan.rate)")
    ] = None,
    sla: Annotated[
        list[str] | None, typer.Option(help="latency bound, repeatable: 'ttft.p90 <= 2s', 'tpot.p90 <= 50ms'")
    ] = None,
    top: Annotated[int | None, typer.Option(help="runner-ups to show")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="text | json")] = "text",
    executor: Annotated[
        str, typer.Option(help="when given a sweep file: serial | process | ray")
    ] = "process",
    workers: Annotated[int | None, typer.Option(help="when given a sweep file: parallel workers")] = None,
) -> None:
    """How many replicas and GPUs serve RATE within the SLA, which configuration wins, and the runner-ups."""
    plan_from_table(results, rate, sla, top, output, executor, workers)


def plan_from_table(
    results: Path,
    rate: float | None,
    sla: list[str] | None,
    top: int | None,
    output: str,
    executor: str,
    workers: int | None,
) -> None:
    """The table form of `simperf plan` (a sweep's results, or a sweep file run first). Given a fleet scenario
    (a `fleet:` section) instead, the fleet is simulated at the rate (`simperf fleet plan`)."""
    from simperf.fleet.cli import is_fleet_scenario, plan_fleet_command
    from simperf.sweep.plan import plan_capacity

    check_plan_numbers(rate, top)
    if is_fleet_scenario(results):
        if rate is None:
            _fail("--rate: give the request rate the fleet must serve")
        # a fleet is planned by simulating it: these options of the table form were accepted and changed nothing
        given = [f"--{name}" for name, value in (("top", top), ("workers", workers)) if value is not None]
        given += ["--executor"] if executor != "process" else []
        if given:
            _fail(
                f"{', '.join(given)}: apply to a sweep table or file; {results} is a fleet scenario, planned by "
                "simulating the fleet (`simperf fleet plan` takes --policy, --max-replicas, --charts)"
            )
        return plan_fleet_command(results, rate, sla, None, 64, None, None, output)

    if output not in ("text", "json"):
        _fail(f"--output: got {output!r}; allowed values: text, json")
    table, meta = _load_table(results, executor, workers)
    target, parsed, top_n = _plan_inputs(meta, rate, sla, top)
    if target is None:
        _fail("--rate: give the request rate to serve (or set plan.rate in the sweep file)")
    plan = plan_capacity(table, float(target), parsed)
    if output == "json":
        sys.stdout.write(strictjson.dumps(plan_json(plan, top_n), indent=2, default=str) + "\n")
    else:
        print_plan(plan, top_n, stdout_console())
    if plan.winner is None:
        raise typer.Exit(1)


def plan_json(plan, top: int) -> dict[str, Any]:
    def cand(c) -> dict[str, Any]:
        return {
            "configuration": c.config_label,
            "config_id": c.config_id,
            "gpu": c.gpu,
            "gpus_per_replica": c.gpus_per_replica,
            "sustained_rate": c.sustained_rate,
            "sustained_rate_is_lower_bound": c.lower_bound,
            "replicas": c.replicas,
            # a fleet configuration's replica is the whole fleet (its servers behind its router), copied
            "replica_is_fleet_of_servers": c.fleet_servers or None,
            "total_gpus": c.total_gpus,
            "headroom": c.headroom,
            "at_sustained_rate": {
                k: c.row.get(k)
                for k in ("output_throughput_per_gpu", "tokens_per_s_per_user", "p90_ttft_ms", "p90_tpot_ms")
            },
        }

    return {
        "target_rate": plan.target_rate,
        "sla": [str(b) for b in plan.sla.bounds],
        "sustained_means": "largest swept load at which the SLA holds at it and at every lighter swept load",
        "winner": cand(plan.winner) if plan.winner else None,
        "runner_ups": [cand(c) for c in plan.ranked[1 : top + 1]],
        "infeasible": [{"configuration": a, "why": b} for a, b in plan.infeasible],
    }


def print_plan(plan, top: int, console: Console) -> None:
    console.print(f"Target {plan.target_rate:g} req/s within {plan.sla}", highlight=False, soft_wrap=True)
    console.print(
        "A configuration sustains the largest swept load at which the SLA holds there and at every lighter load; "
        "replicas = ceil(target / sustained), with requests spread evenly over replicas.",
        style="dim",
        highlight=False,
    )
    if plan.winner is None:
        console.print("[bold red]No swept configuration meets the SLA at any swept load.[/]")
    else:
        w = plan.winner
        # a fleet's row is the whole fleet behind its router: "4 replica(s) x 2 h100" read as four 2-GPU servers
        if w.fleet_servers:
            copies = (
                f"{w.replicas} x fleet of {w.fleet_servers} servers ({w.gpus_per_replica} {w.gpu} per fleet)"
            )
            unit = "fleet"
        else:
            copies, unit = f"{w.replicas} replica(s) x {w.gpus_per_replica} {w.gpu}", "replica"
        console.print(
            f"[bold green]Winner:[/] {w.config_label}: {copies} = [bold]{w.total_gpus} GPUs[/] "
            f"(one {unit} sustains {w.sustained_text} req/s)",
            highlight=False,
        )
        if any(c.fleet_servers for c in plan.ranked[: top + 1]):
            console.print(
                "A fleet's replica is the whole fleet behind its router, copied, each copy given an even share of "
                "the target; to size one fleet instead, plan its scenario (`simperf plan fleet.yaml --rate R`).",
                style="dim",
                highlight=False,
            )
        table = Table(
            "rank",
            "configuration",
            "GPUs/replica",
            "sustained req/s",
            "replicas",
            "GPUs",
            "headroom",
            "tok/s/GPU",
            "tok/s/user",
            "p90 TTFT ms",
            "p90 TPOT ms",
            title="winner and runner-ups",
        )
        for i, c in enumerate(plan.ranked[: top + 1], start=1):
            r = c.row
            table.add_row(
                str(i),
                c.config_label,
                str(c.gpus_per_replica),
                c.sustained_text,
                c.replicas_text,
                str(c.total_gpus),
                f"{100 * c.headroom:.0f}%",
                f"{r.get('output_throughput_per_gpu', float('nan')):.0f}",
                f"{r.get('tokens_per_s_per_user', float('nan')):.1f}",
                f"{r.get('p90_ttft_ms', float('nan')):.0f}",
                f"{r.get('p90_tpot_ms', float('nan')):.1f}",
            )
        console.print(table)
    if any(c.lower_bound for c in plan.ranked[: top + 1]):
        console.print(
            "+: the SLA held at every swept load; sweep higher rates to find where it breaks", style="dim"
        )
    if plan.infeasible:
        console.print(f"{len(plan.infeasible)} configuration(s) cannot meet the SLA at any swept load:")
        for label, why in plan.infeasible[:10]:
            console.print(f"  {label}: {why}", highlight=False)


def report_command(
    results: Annotated[Path, typer.Argument(help="sweep result table (.parquet) or sweep file (.yaml)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="HTML page to write")] = Path("sweep-report.html"),
    rate: Annotated[float | None, typer.Option(help="target request rate for the plan (req/s)")] = None,
    sla: Annotated[list[str] | None, typer.Option(help="latency bound, repeatable: 'ttft.p90 <= 2s'")] = None,
    top: Annotated[int | None, typer.Option(help="runner-ups to show")] = None,
    charts: Annotated[
        Path | None, typer.Option(help="also write each chart as HTML, PNG and SVG into this directory")
    ] = None,
    executor: Annotated[
        str, typer.Option(help="when given a sweep file: serial | process | ray")
    ] = "process",
    workers: Annotated[int | None, typer.Option(help="when given a sweep file: parallel workers")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress display on stderr")] = False,
) -> None:
    """One HTML page: the plan, Pareto front, latency-vs-load curves, latency CDFs, step breakdown, all points."""
    from simperf.progress import phases
    from simperf.sweep.reporting import build_report

    # before the sweep file is run or the table read: a report that cannot be written loses no simulation
    check_output_file(out, "-o", suffixes=(".html", ".htm"), inputs=(results,), what="HTML")
    if charts is not None:
        check_output_dir(charts, "--charts")
        if charts.absolute() == out.absolute():  # the page was written, then "error: r.html: File exists"
            _fail(f"--charts {charts}: is also the page's -o; give the charts a directory of their own")
    check_plan_numbers(rate, top)
    table, meta = _load_table(results, executor, workers, quiet)
    target, parsed, top_n = _plan_inputs(meta, rate, sla, top)
    if top is not None and target is None:  # the page has no plan then, so no runner-ups to cut
        _fail("--top: counts the plan's runner-ups; give --rate (or plan.rate in the sweep file) for a plan")
    try:
        with phases(f"report {out.name}", quiet=quiet) as phase:
            report = build_report(
                table, meta, out, target_rate=target, sla=parsed, top=top_n, charts_dir=charts, on_phase=phase
            )
    except RuntimeError as e:
        _fail(str(e))
    Console().print(f"report written to {report.html_path}", highlight=False)
    for path in report.chart_files:
        Console().print(f"  {path}", highlight=False)
