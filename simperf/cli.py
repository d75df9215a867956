"""The `simperf` command: a thin typer layer over the pipeline's modules."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from typer.core import TyperCommand, TyperOption

from simperf.cli_errors import MaxMemoryOption, SafeGroup, UsageError, debug_option, fail

if TYPE_CHECKING:
    from simperf.pipeline import Prediction
    from simperf.scenario.cmdline import CommandLineScenario
    from simperf.scenario.models import Scenario

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
    from simperf.plan.cli import plan_command
    from simperf.sweep.cli import report_command, sweep_command

    app.command("sweep")(sweep_command)
    app.command("plan")(plan_command)
    app.command("report")(report_command)


def _register_groundtruth_commands() -> None:
    from simperf.groundtruth.cli import groundtruth_app

    app.add_typer(groundtruth_app, name="groundtruth")


def _register_validate_command() -> None:
    from simperf.validate.cli import validate_command

    app.command("validate")(validate_command)


def _register_backends_command() -> None:
    from simperf.scenario.cli import backends_command

    app.command("backends")(backends_command)


def _register_fleet_commands() -> None:
    from simperf.fleet.cli import fleet_app

    app.add_typer(fleet_app, name="fleet")


_register_trace_commands()
_register_backends_command()
_register_fleet_commands()
_register_validate_command()
_register_groundtruth_commands()
_register_sweep_commands()
_register_accuracy_commands()

err = Console(stderr=True, soft_wrap=True)  # an error stays one line, whatever the terminal width


def _fail(message: str, code: int = 2) -> None:
    fail(message, code)


class _OnceCommand(TyperCommand):
    """A command whose single-valued options take one value: click keeps the last of `-o json -o text` or
    `--save-scenario a.yaml --save-scenario b.yaml` and drops the first without a word, where predict's
    bench_serving / launch_server flags refuse a repeat with another value (scenario/flags.py)."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        _, _, order = self.make_parser(ctx).parse_args(args=list(args))
        _refuse_empty_paths(ctx, order, args)
        seen: set[str] = set()
        for param in order:
            single = param.param_type_name == "option" and not getattr(param, "multiple", False)
            if not single or param.name == "help":
                continue
            if param.name in seen and len(set(_given_values(param, args))) != 1:
                names = "/".join(param.opts + param.secondary_opts)
                raise UsageError(f"{names}: given twice with different values; give it once", ctx)
            seen.add(str(param.name))
        return super().parse_args(ctx, args)


def _refuse_empty_paths(ctx: typer.Context, params: list, args: list[str]) -> None:
    """An empty path option (`--charts "$DIR"` with DIR unset) was read as the current directory: the charts were
    written among the files there, and other options were refused as '.' (a name the user never gave)."""
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        annotation = getattr(descriptor, "annotation", None)
        is_path = annotation is Path or type(getattr(param, "type", None)).__name__ == "Path"
        if param.param_type_name == "option" and is_path and "" in _given_values(param, args):
            names = "/".join(param.opts + param.secondary_opts)
            raise UsageError(f"{names}: got an empty value; give a path (an unset shell variable?)", ctx)


def _given_values(param: TyperOption, args: list[str]) -> list[str]:
    """The values an option was given on a command line, as typed (a flag: its on or off spelling)."""
    values: list[str] = []
    tokens = iter(args[: args.index("--")] if "--" in args else args)
    for token in tokens:
        if token in param.secondary_opts or (token in param.opts and param.is_flag):
            values.append(str(token in param.opts))
        elif token in param.opts:
            values.append(next(tokens, ""))
        else:
            values += [token[len(o) + 1 :] for o in param.opts if token.startswith(o + "=")]
            values += [
                token[2:] for o in param.opts if len(o) == 2 and token.startswith(o) and len(token) > 2
            ]
    return values


def _register_predict_command() -> None:
    from simperf.scenario.flags import flags_epilog

    app.command(
        cls=_OnceCommand,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        options_metavar="[SCENARIO.yaml] [FLAGS]",
        epilog=flags_epilog(),
    )(predict)


def predict(
    ctx: typer.Context,
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
    max_memory_gb: MaxMemoryOption = None,
    set_values: Annotated[
        list[str] | None,
        typer.Option("--set", help="any scenario field, repeatable: --set serving.tp=4 (value read as YAML)"),
    ] = None,
    save_scenario: Annotated[
        Path | None, typer.Option(help="write the scenario this command ran (file + flags + --set) as YAML")
    ] = None,
    output_file: Annotated[
        Path | None, typer.Option(help="append the result as one JSON line, as bench_serving's --output-file")
    ] = None,
    output_details: Annotated[
        bool,
        typer.Option(help="with --output-file: add per-request arrays, as bench_serving's --output-details"),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress display on stderr")] = False,
    trace_request: Annotated[
        list[int] | None,
        typer.Option(
            "--trace-request",
            metavar="ID",
            help="print this request's life in the simulated scheduler to stderr (repeatable; one server only)",
        ),
    ] = None,
    spread: Annotated[
        bool,
        typer.Option(
            help="also predict with the request path +-1 ms and the host CPU +-10% (as they vary between real "
            "servers) and print each metric's range (docs/spread.md)"
        ),
    ] = False,
) -> None:
    """Simulate a scenario file, or bench_serving / launch_server flags, and print bench_serving's metrics."""
    from simperf.perfdb.locate import CalibrationError
    from simperf.pipeline import UnsupportedScenario
    from simperf.scenario.cmdline import scenario_from_command_line
    from simperf.scenario.flags import FlagError
    from simperf.scenario.load import ScenarioError

    _check_predict_options(output, like, like_run, output_file, output_details)
    where = "scenario"
    try:
        built = scenario_from_command_line(list(ctx.args), set_values)
        where = built.source if built.source != "command line" else built.scenario.name
        sc = built.scenario if like is None else _scenario_like(built, like, like_run)
        # before any work
        _check_predict_outputs(built.source, like, sc, requests, output_file, save_scenario)
        if save_scenario is not None:
            _save_scenario(built, sc, like, save_scenario)
        if spread and sc.fleet is not None:
            _fail(
                "--spread: moves one server's (or PD pair's) timing; a fleet's groups run on hosts of their own"
            )
        prediction = _run_prediction(sc, calibration, roofline_only, max_memory_gb, quiet, trace_request)
        ranges = _spread(sc, prediction, calibration, roofline_only, max_memory_gb, quiet) if spread else None
    except (FlagError, ScenarioError, UnsupportedScenario) as e:
        _fail(str(e))
    except CalibrationError as e:  # names the option or the scenario field it came from
        _fail(str(e) if str(e).startswith("--") else f"{where}: {e}")
    except (ValueError, FileNotFoundError) as e:
        _fail(f"{where}: {e}")
    _print_notes_and_traces(built.notes, prediction, trace_request)
    _write_prediction(prediction, output, requests, breakdown, output_file, output_details, ranges)


def _spread(sc, prediction, calibration, roofline_only, max_memory_gb, quiet):
    """--spread: the prediction's metrics under the measured timing moves (simperf/spread.py)."""
    from simperf.spread import spread

    def run(variant: Scenario) -> dict:
        return _run_prediction(variant, calibration, roofline_only, max_memory_gb, quiet, None).result

    return spread(sc, prediction.result, run)


def _check_predict_options(
    output: str, like: Path | None, like_run: int | None, output_file: Path | None, output_details: bool
) -> None:
    """Option values predict does not take, and options given without the one they qualify."""
    if output not in ("text", "json"):
        _fail(f"--output: got {output!r}; allowed values: text, json")
    # options that only qualify another one: alone they were accepted and did nothing
    if like_run is not None and like is None:
        _fail("--like-run: picks a run of the --like file; give --like too")
    if output_details and output_file is None:
        _fail("--output-details: adds per-request arrays to the --output-file line; give --output-file too")


def _scenario_like(built: CommandLineScenario, like: Path, like_run: int | None) -> Scenario:
    """The command's scenario with the workload of the measured bench_serving run in the --like file."""
    from simperf.accuracy.bench_import import BenchImportError, scenario_like

    try:
        sc = scenario_like(built.scenario, like, run=like_run, flags=built.origin)
    except BenchImportError as e:
        _fail(f"--like {like}: {e}")
    return sc


def _save_scenario(built: CommandLineScenario, sc: Scenario, like: Path | None, save_scenario: Path) -> None:
    """--save-scenario: the scenario this command runs, as YAML that loads back to it."""
    from simperf.scenario.cmdline import write_scenario_yaml

    # --like replaced the workload and nothing else: save the command's own mapping with that workload,
    # written as given (exclude_unset). A full dump of the scenario wrote every default out as if chosen,
    # and several rules read "given" (model_fields_set): a PD prefill server's load_balance_method pinned to
    # round_robin where SGLang's auto follows the bootstrap room, overheads taken as given and no longer
    # scaled to the host, the DSA threshold and top-level serving refused on other models or with
    # disaggregation, so the saved file did not load or predicted something else
    mapping = built.mapping
    if like is not None:
        mapping = {**mapping, "workload": sc.workload.model_dump(mode="json", exclude_unset=True)}
    command = "simperf predict " + shlex.join(sys.argv[2:])
    write_scenario_yaml(mapping, sc, save_scenario, command)


def _run_prediction(
    sc: Scenario,
    calibration: Path | None,
    roofline_only: bool,
    max_memory_gb: float | None,
    quiet: bool,
    trace_request: list[int] | None,
) -> Prediction:
    """The simulation, with its progress on stderr and the memory guard of --max-memory-gb."""
    from simperf.pipeline import RunGuards
    from simperf.pipeline import predict as run_predict
    from simperf.progress import phases
    from simperf.runsize import memory_limit_bytes

    with phases(f"predict {sc.name}", quiet=quiet) as phase:

        def finished(done: int, total: int) -> None:
            phase(f"simulating: {done:,} of {total:,} requests finished")

        guards = RunGuards(memory_limit_bytes(max_memory_gb), finished)
        return run_predict(
            sc,
            calibration,
            roofline_only=roofline_only,
            guards=guards,
            on_phase=phase,
            trace_requests=trace_request,
        )


def _print_notes_and_traces(
    notes: list[str], prediction: Prediction, trace_request: list[int] | None
) -> None:
    """On stderr: what reading the command line noted, then the life of each --trace-request request."""
    for note in notes:
        err.print(f"note: {note}", highlight=False)
    if trace_request:  # pipeline.predict refuses it for fleets and PD pairs, whose predictions carry no trace
        from simperf.sim.trace import format_trace

        for rid in trace_request:
            err.print(format_trace(prediction.trace, rid, prediction.records), highlight=False, markup=False)


def _check_predict_outputs(source: str, like, sc, requests, output_file, save_scenario) -> None:
    """Every file predict would write, checked before the simulation: a finished run is never lost to a path
    that cannot be written, and no output overwrites the scenario, the --like file, or a file the scenario reads
    (its trace: --output-file appended a result line to it; its model config)."""
    from simperf.output_paths import check_appendable_jsonl, check_output_file

    dataset = sc.workload.dataset
    inputs = (
        Path(source) if source != "command line" else None,
        like,
        dataset.path if dataset.kind == "trace" else None,
        sc.model.config,
    )
    if requests is not None:
        check_output_file(requests, "--requests", suffixes=(".parquet",), inputs=inputs, what="Parquet")
    if output_file is not None:
        check_output_file(output_file, "--output-file", inputs=inputs)
        check_appendable_jsonl(output_file, "--output-file")
    if save_scenario is not None:
        check_output_file(
            save_scenario, "--save-scenario", suffixes=(".yaml", ".yml"), inputs=inputs, what="YAML"
        )
    # two outputs on one path: --output-file appended its JSON line to the YAML --save-scenario had just written
    # (which then failed to load), or to the --requests Parquet file
    given = [
        (o, Path(p))
        for o, p in (
            ("--requests", requests),
            ("--output-file", output_file),
            ("--save-scenario", save_scenario),
        )
        if p
    ]
    for i, (option, path) in enumerate(given):
        for other, other_path in given[:i]:
            if path.resolve() == other_path.resolve():
                fail(f"{option} {path}: is also the {other} file; give each output its own file")


def _write_prediction(
    prediction, output, requests, breakdown, output_file, output_details, ranges=None
) -> None:
    from simperf.report.output import append_jsonl, bench_jsonl_line, result_json, write_requests_parquet
    from simperf.report.tables import stdout_console
    from simperf.report.text import print_bench_block

    if prediction.scenario.fleet is not None:
        from simperf.fleet.report import emit_fleet

        emit_fleet(prediction, output, requests, breakdown, output_file, output_details)
        return
    if requests is not None:
        write_requests_parquet(prediction.records, requests)
    extra = prediction.extra()
    if ranges is not None:
        from simperf.spread import spread_json

        extra["spread"] = spread_json(ranges)
    if breakdown and output == "json":
        from simperf.report.breakdown import breakdown_json

        extra["breakdown"] = breakdown_json(prediction)
    if output_file is not None:
        details = prediction.records if output_details else None
        append_jsonl(output_file, bench_jsonl_line(prediction.result, extra, details))
    if output == "json":
        sys.stdout.write(result_json(prediction.result, extra) + "\n")
        return
    sc = prediction.scenario
    console = stdout_console()
    console.print(
        f"simperf prediction: {sc.name} ({prediction.arch.name} on {sc.hardware.count}x {prediction.gpu.key}), "
        f"simulated in {prediction.wall_s:.2f} s",
        highlight=False,
    )
    print_bench_block(prediction.result, console, "Serving Benchmark Result", prediction.notes)
    if ranges is not None:
        from simperf.spread import spread_lines

        console.print(
            "spread (prediction   [lowest .. highest] under the measured timing moves):",
            highlight=False,
            markup=False,
        )
        for line in spread_lines(ranges):
            console.print(line, highlight=False, markup=False)
    if breakdown:
        from simperf.report.breakdown import print_breakdown

        print_breakdown(prediction)
    if requests is not None:
        console.print(f"per-request rows written to {requests}")
    if output_file is not None:
        console.print(f"result appended to {output_file}", highlight=False)


_register_predict_command()


@app.command()
def schema(
    out: Annotated[Path | None, typer.Option(help="write to this file instead of stdout")] = None,
    markdown: Annotated[bool, typer.Option(help="the reference tables of docs/scenario.md instead")] = False,
    update: Annotated[
        Path | None, typer.Option(help="with --markdown: rewrite the generated block of this file")
    ] = None,
) -> None:
    """Print the JSON Schema of scenario files (or, with --markdown, its reference tables)."""
    from simperf.output_paths import check_output_file
    from simperf.scenario.load import scenario_json_schema

    if update is not None and not markdown:
        # the JSON Schema has no generated block: --update alone printed the schema and rewrote nothing
        _fail("--update: rewrites the reference tables' block of a markdown file; give --markdown too")
    if update is not None and out is not None:
        _fail("--out: --update rewrites its file in place and writes nothing else; give one of them")
    if (
        out is not None
    ):  # the suffix names what is written: Markdown in x.json (or the schema in x.md) was accepted
        suffix, what = (".md", "Markdown") if markdown else (".json", "JSON Schema")
        check_output_file(out, "--out", suffixes=(suffix,), what=what)
    if markdown:
        from simperf.scenario.docs import BEGIN, reference_markdown, replace_block

        if out is not None and out.is_file() and BEGIN in out.read_text(errors="replace"):
            # the page's hand-written text around the block (docs/scenario.md's) was replaced by the tables alone
            _fail(
                f"--out {out}: holds the generated block of a hand-written page, which --out replaces whole; give "
                "--update to rewrite only the block"
            )
        text = reference_markdown()
        if update is not None:
            try:
                update.write_text(replace_block(update.read_text(), text))
            except OSError as e:  # "[Errno 2] No such file or directory: 'x.md'" repeated the name
                _fail(f"--update {update}: {e.strerror or e}")
            except ValueError as e:  # a file that is not UTF-8 too
                _fail(f"--update {update}: {e}")
            return
    else:
        text = scenario_json_schema()
    if out is None:
        sys.stdout.write(text + "\n")
    else:
        out.write_text(text + "\n")


OutputOption = Annotated[str, typer.Option("--output", "-o", help="text | json | tsv")]


def _print(tables, output: str, extra: dict | None = None) -> None:
    from simperf.report.tables import check_output, print_tables

    problem = check_output(output)
    if problem:
        _fail(problem)
    print_tables(tables, output, extra=extra)


@app.command()
def models(output: OutputOption = "text") -> None:
    """List the model zoo."""
    from simperf.models.zoo import load_arch, zoo_names
    from simperf.report.tables import Col, TableData

    columns = [Col("name", "name"), Col("family", "family")]
    columns += [
        Col(key, header, str, True)
        for key, header in (
            ("layers", "layers"),
            ("hidden", "hidden"),
            ("heads", "heads"),
            ("kv_heads", "kv heads"),
            ("experts", "experts"),
            ("context", "context (tokens)"),
        )
    ]
    table = TableData("model zoo", columns)
    for name in zoo_names():
        a = load_arch(name)
        table.add(
            name=name,
            family=a.family,
            layers=a.num_layers,
            hidden=a.hidden_size,
            heads=a.num_heads,
            kv_heads=a.num_kv_heads,
            experts=getattr(a, "num_routed_experts", 0) or None,
            context=a.context_len,
        )
    _print([table], output)


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
        importer.command(cls=_OnceCommand)(import_command)
        raise typer.Exit(importer(args[1:], standalone_mode=False) or 0)
    from simperf.calibrate.cli import main as calibrate_main

    raise typer.Exit(calibrate_main(args))


@perfdb_app.command("check")
def perfdb_check(
    directory: Annotated[Path, typer.Argument(help="calibration directory, e.g. calibration/h200")],
    output: OutputOption = "text",
    offgrid: Annotated[
        Path | None, typer.Option(help="off-grid results file to read: error of these tables on its calls")
    ] = None,
    offgrid_time: Annotated[
        Path | None, typer.Option(help="GPU: time the off-grid set on this GPU into this results file")
    ] = None,
    samples: Annotated[
        Path | None, typer.Option(help="off-grid set (default calibration/offgrid/samples.jsonl)")
    ] = None,
    scaled_from: Annotated[
        Path | None,
        typer.Option(help="with --offgrid: also price the calls from this GPU's tables (scaled_from)"),
    ] = None,
) -> None:
    """Held-out interpolation error per op family (rows measured off the grid, never used to interpolate);
    with --offgrid, the error on the seeded off-grid set of real kernel calls (docs/perfdb.md "Off the grid")."""
    from simperf.costmodel.ragged import ragged_errors, ragged_summary
    from simperf.perfdb.check import heldout_errors, heldout_summary, resolve_gpu
    from simperf.perfdb.locate import check_table_files

    check_table_files(directory)
    if offgrid is not None and offgrid_time is not None:
        _fail(
            "--offgrid-time: times the off-grid set into a results file, --offgrid reads one; give one of them"
        )
    if offgrid is not None or offgrid_time is not None:
        _perfdb_offgrid(directory, offgrid, offgrid_time, samples, scaled_from, output)
        return
    # options of the off-grid check: without it they were accepted and the held-out check ignored them
    for option, value in (("--samples", samples), ("--scaled-from", scaled_from)):
        if value is not None:
            _fail(f"{option}: applies to the off-grid check; give --offgrid RESULTS too")
    errors = heldout_errors(directory)
    if errors.height == 0:
        _fail(f"{directory}: no held-out rows (run `simperf calibrate --heldout N`)", code=1)
    tables = [_error_table(heldout_summary(errors), f"held-out interpolation error, {directory}", "heldout")]
    ragged = ragged_errors(directory, resolve_gpu(directory))
    if ragged.height:
        title = "ragged decode batches: mean-KV model vs split-KV work model"
        tables.append(_error_table(ragged_summary(ragged), title, "ragged"))
    _print(tables, output)


def _error_table(frame, title: str, name: str):
    """An error summary as a printed table: its float columns are fractions, shown as percentages."""
    from simperf.report.tables import frame_table, pct

    return frame_table(frame, title, name, {c: pct for c, t in frame.schema.items() if t.is_float()})


def _perfdb_offgrid(
    directory: Path,
    results: Path | None,
    time_into: Path | None,
    samples: Path | None,
    scaled_from: Path | None,
    output: str,
) -> None:
    from simperf.perfdb.offgrid.cli import DEFAULT_SAMPLES, check_offgrid, time_offgrid
    from simperf.report.tables import check_output

    samples = samples or DEFAULT_SAMPLES
    for option, path in (("--samples", samples), ("--offgrid", results)):
        if path is not None and path.is_dir():  # was reported as not existing
            _fail(f"{option}: {path} is a directory; give the JSONL file")
    if not samples.is_file():
        _fail(f"--samples: {samples} does not exist (python -m simperf.perfdb.offgrid generate writes one)")
    if time_into is not None:
        from simperf.calibrate.preflight import CalibrateError, require_device
        from simperf.calibrate.runner import probe_device
        from simperf.output_paths import check_output_file

        if scaled_from is not None:
            _fail("--scaled-from: applies to --offgrid (reading results), not to --offgrid-time")
        check_output_file(time_into, "--offgrid-time", suffixes=(".jsonl",), inputs=(samples,), what="JSONL")
        try:  # without a GPU every call was recorded as failed and the command exited 0
            require_device(probe_device(), "--offgrid-time times kernels")
        except CalibrateError as e:
            _fail(str(e))
        raise typer.Exit(time_offgrid(time_into, samples))
    assert results is not None
    if not results.is_file():
        _fail(f"--offgrid: {results} does not exist (time the set on a GPU with --offgrid-time first)")
    if scaled_from is not None and not scaled_from.is_dir():
        _fail(f"--scaled-from: {scaled_from} is not a calibration directory")
    problem = check_output(output)
    if problem:
        _fail(problem)
    try:
        report = check_offgrid(directory, results, samples, scaled_from)
    except ValueError as e:
        _fail(str(e))
    tables = [_error_table(frame, title, name) for name, title, frame in report.tables]
    if output == "text":
        print(report.header)
    _print(tables, output, extra=None if output == "text" else {"header": report.header})


def _register_perfdb_diff() -> None:
    from simperf.perfdb.diff import diff_command

    perfdb_app.command("diff")(diff_command)


_register_perfdb_diff()


@perfdb_app.command("coverage")
def perfdb_coverage(
    directory: Annotated[Path, typer.Argument(help="calibration directory")], output: OutputOption = "text"
) -> None:
    """What the tables in a calibration directory cover."""
    from simperf.perfdb.check import summarize_coverage
    from simperf.perfdb.locate import check_table_files
    from simperf.report.tables import frame_table

    check_table_files(directory)
    _print([frame_table(summarize_coverage(directory), str(directory))], output)


def _once_everywhere(typer_app: typer.Typer) -> None:
    """Every command refuses a single-valued option given twice with different values, as predict does: click kept
    the last of `backends -o tsv -o json`, `--refused --no-refused`, `trace inspect --bins 4 --bins 8` without a
    word. calibrate parses its own arguments (argparse) and is left alone."""
    for info in typer_app.registered_commands:
        if info.cls in (None, TyperCommand) and info.callback is not calibrate:
            info.cls = _OnceCommand
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _once_everywhere(group.typer_instance)


_once_everywhere(app)

if __name__ == "__main__":  # pragma: no cover
    app()
