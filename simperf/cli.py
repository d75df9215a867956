"""The `simperf` command: a thin typer layer over the pipeline's modules."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from simperf.cli_errors import SafeGroup, debug_option, fail

app = typer.Typer(
    cls=SafeGroup,
    add_completion=False,
    no_args_is_help=True,
    help="Predict SGLang serving performance from measured kernel timings.",
)
perfdb_app = typer.Typer(no_args_is_help=True, help="Inspect calibration tables.")
app.callback()(debug_option)
app.add_typer(perfdb_app, name="perfdb")
trace_app = typer.Typer(no_args_is_help=True, help="Read, summarise and convert request traces.")
app.add_typer(trace_app, name="trace")


def _register_trace_commands() -> None:
    from simperf.workload.cli import convert_command, export_command, inspect_command

    trace_app.command("inspect")(inspect_command)
    trace_app.command("convert")(convert_command)
    trace_app.command("export")(export_command)


def _register_accuracy_commands() -> None:
    from simperf.accuracy.bench_import import compare_command
    from simperf.accuracy.run import accuracy_command

    app.command("accuracy")(accuracy_command)
    app.command("compare")(compare_command)


def _register_sweep_commands() -> None:
    from simperf.sweep.cli import plan_command, report_command, sweep_command

    app.command("sweep")(sweep_command)
    app.command("plan")(plan_command)
    app.command("report")(report_command)


def _register_groundtruth_commands() -> None:
    from simperf.groundtruth.cli import groundtruth_app

    app.add_typer(groundtruth_app, name="groundtruth")


def _register_validate_command() -> None:
    from simperf.validate.cli import validate_command

    app.command("validate")(validate_command)


_register_trace_commands()
_register_validate_command()
_register_groundtruth_commands()
_register_sweep_commands()
_register_accuracy_commands()

err = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    fail(message, code)


@app.command()
def predict(
    scenario: Annotated[Path, typer.Argument(help="scenario YAML file")],
    output: Annotated[str, typer.Option("--output", "-o", help="text | json")] = "text",
    requests: Annotated[
        Path | None, typer.Option(help="write one row per request to this Parquet file")
    ] = None,
    breakdown: Annotated[
        bool, typer.Option(help="print per-op step times of a representative prefill and decode")
    ] = False,
    calibration: Annotated[
        Path | None, typer.Option(help="calibration directory (default: shipped tables)")
    ] = None,
    like: Annotated[
        Path | None,
        typer.Option(
            help="a measured bench_serving result (JSONL or printed block): replay its workload settings"
        ),
    ] = None,
    like_run: Annotated[
        int | None, typer.Option(min=0, help="which run of a multi-run --like file (0-based)")
    ] = None,
    roofline_only: Annotated[
        bool, typer.Option(help="read no calibration tables: every kernel time a datasheet-roofline estimate")
    ] = False,
    max_memory_gb: Annotated[
        float | None,
        typer.Option(
            min=0, help="refuse runs estimated to need more memory (default 8 GB or half the RAM; 0: none)"
        ),
    ] = None,
) -> None:
    """Simulate a scenario and print bench_serving-style metrics."""
    from simperf.output_paths import check_output_file
    from simperf.perfdb.locate import CalibrationError
    from simperf.pipeline import RunGuards, UnsupportedScenario
    from simperf.pipeline import predict as run_predict
    from simperf.progress import LazyProgress
    from simperf.report.output import result_json, write_requests_parquet
    from simperf.report.text import print_bench_block
    from simperf.runsize import memory_limit_bytes
    from simperf.scenario.load import ScenarioError, load_scenario

    if output not in ("text", "json"):
        _fail(f"--output: got {output!r}; allowed values: text, json")
    if requests is not None:
        check_output_file(
            requests, "--requests", suffixes=(".parquet",), inputs=(scenario, like), what="Parquet"
        )
    try:
        sc = load_scenario(scenario)
        if like is not None:
            from simperf.accuracy.bench_import import BenchImportError, scenario_like

            try:
                sc = scenario_like(sc, like, run=like_run)
            except BenchImportError as e:
                _fail(f"--like {like}: {e}")
        with LazyProgress("simulating requests") as progress:
            guards = RunGuards(memory_limit_bytes(max_memory_gb), progress.update)
            prediction = run_predict(sc, calibration, roofline_only=roofline_only, guards=guards)
    except (ScenarioError, UnsupportedScenario) as e:
        _fail(str(e))
    except CalibrationError as e:  # names the option or the scenario field it came from
        _fail(str(e) if str(e).startswith("--") else f"{scenario}: {e}")
    except (ValueError, FileNotFoundError) as e:
        _fail(f"{scenario}: {e}")
    if requests is not None:
        write_requests_parquet(prediction.records, requests)
    if output == "json":
        sys.stdout.write(result_json(prediction.result, prediction.extra()) + "\n")
    else:
        console = Console()
        console.print(
            f"simperf prediction: {sc.name} ({prediction.arch.name} on {sc.hardware.count}x {prediction.gpu.key}), "
            f"simulated in {prediction.wall_s:.2f} s",
            highlight=False,
        )
        print_bench_block(prediction.result, console, "Serving Benchmark Result", prediction.notes)
        if breakdown:
            from simperf.report.breakdown import print_breakdown

            print_breakdown(prediction, console)
        if requests is not None:
            console.print(f"per-request rows written to {requests}")


@app.command()
def schema(
    out: Annotated[Path | None, typer.Option(help="write to this file instead of stdout")] = None,
) -> None:
    """Print the JSON Schema of scenario files."""
    from simperf.output_paths import check_output_file
    from simperf.scenario.load import scenario_json_schema

    if out is not None:
        check_output_file(out, "--out", suffixes=(".json",), what="JSON Schema")
    text = scenario_json_schema()
    if out is None:
        sys.stdout.write(text + "\n")
    else:
        out.write_text(text + "\n")


@app.command()
def models() -> None:
    """List the model zoo."""
    from simperf.models.zoo import load_arch, zoo_names

    table = Table("name", "family", "layers", "hidden", "heads", "kv heads", "experts", "context")
    for name in zoo_names():
        a = load_arch(name)
        table.add_row(
            name,
            a.family,
            str(a.num_layers),
            str(a.hidden_size),
            str(a.num_heads),
            str(a.num_kv_heads),
            str(getattr(a, "num_routed_experts", 0) or "-"),
            str(a.context_len),
        )
    Console().print(table)


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
)
def calibrate(ctx: typer.Context) -> None:
    """Time the real kernels on this machine's GPU (`simperf calibrate --help`), or import third-party tables
    (`simperf calibrate import aiconfigurator --system b200_sxm --out calibration/b200`)."""
    args = list(ctx.args)
    if args[:1] == ["import"]:
        from simperf.perfdb.importers.cli import import_command

        importer = typer.Typer(add_completion=False)
        importer.command()(import_command)
        raise typer.Exit(importer(args[1:], standalone_mode=False) or 0)
    from simperf.calibrate.cli import main as calibrate_main

    raise typer.Exit(calibrate_main(args))


@perfdb_app.command("check")
def perfdb_check(
    directory: Annotated[Path, typer.Argument(help="calibration directory, e.g. calibration/h200")],
) -> None:
    """Held-out interpolation error per op family (rows measured off the grid, never used to interpolate)."""
    from simperf.perfdb.check import heldout_errors, heldout_summary
    from simperf.perfdb.locate import check_table_files

    check_table_files(directory)
    errors = heldout_errors(directory)
    if errors.height == 0:
        _fail(f"{directory}: no held-out rows (run `simperf calibrate --heldout N`)", code=1)
    summary = heldout_summary(errors)
    table = Table(*summary.columns, title=f"held-out interpolation error, {directory}")
    for row in summary.iter_rows():
        table.add_row(*[f"{v:.2%}" if isinstance(v, float) else str(v) for v in row])
    Console().print(table)

    from simperf.costmodel.ragged import ragged_errors, ragged_summary
    from simperf.perfdb.check import resolve_gpu

    ragged = ragged_errors(directory, resolve_gpu(directory))
    if ragged.height:
        summary = ragged_summary(ragged)
        table = Table(*summary.columns, title="ragged decode batches: mean-KV model vs split-KV work model")
        for row in summary.iter_rows():
            table.add_row(*[f"{v:.2%}" if isinstance(v, float) else str(v) for v in row])
        Console().print(table)


def _register_perfdb_diff() -> None:
    from simperf.perfdb.diff import diff_command

    perfdb_app.command("diff")(diff_command)


_register_perfdb_diff()


@perfdb_app.command("coverage")
def perfdb_coverage(directory: Annotated[Path, typer.Argument(help="calibration directory")]) -> None:
    """What the tables in a calibration directory cover."""
    from simperf.perfdb.check import summarize_coverage
    from simperf.perfdb.locate import check_table_files

    check_table_files(directory)
    cov = summarize_coverage(directory)
    table = Table(*cov.columns, title=str(directory))
    for row in cov.iter_rows():
        table.add_row(*[str(v) for v in row])
    Console().print(table)


if __name__ == "__main__":  # pragma: no cover
    app()
