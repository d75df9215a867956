"""`simperf validate SCENARIO`: plan (simulate, sample, build step programs), run them on this GPU, report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from simperf.cli_errors import fail, given_on_command_line
from simperf.output_paths import check_output_dir

# the options `_plan` reads: (flag, parameter name)
PLAN_OPTIONS = (
    ("--samples", "samples"),
    ("--seed", "seed"),
    ("--num-prompts", "num_prompts"),
    ("--calibration", "calibration"),
)


def validate_command(
    ctx: typer.Context,
    scenario: Annotated[Path, typer.Argument(help="scenario YAML file")],
    samples: Annotated[
        int, typer.Option(help="scheduler steps to sample (stratified by kind, rows, KV)")
    ] = 24,
    out: Annotated[
        Path | None, typer.Option(help="output directory (default validation/<scenario file stem>)")
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="sampling seed")] = 0,  # numpy takes no negative seed
    replicas: Annotated[
        int, typer.Option(help="layers of each kind run per sample (scaled to the model)")
    ] = 4,
    num_prompts: Annotated[
        int | None, typer.Option(help="simulate this many prompts instead of the scenario's")
    ] = None,
    calibration: Annotated[
        Path | None, typer.Option(help="calibration directory (default: shipped tables)")
    ] = None,
    plan_only: Annotated[
        bool, typer.Option(help="sample and write the step programs, run nothing (no GPU needed)")
    ] = False,
    report_only: Annotated[
        bool, typer.Option(help="summarise an existing run's journal, run nothing")
    ] = False,
    retry_failed: Annotated[bool, typer.Option(help="run samples recorded as failed once more")] = False,
    allow_gpu_mismatch: Annotated[
        bool, typer.Option(help="run on a GPU other than the scenario's (its times will not validate it)")
    ] = False,
    output: Annotated[str, typer.Option("--output", "-o", help="text | json")] = "text",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress display on stderr")] = False,
) -> None:
    """Re-run sampled simulated steps' kernels on this GPU and compare predicted with measured step time."""
    from simperf.report.tables import stdout_console

    err = Console(stderr=True)
    # with -o json, stdout carries only the JSON: the plan's and run's messages go to stderr
    console = err if output == "json" else stdout_console()

    _check_option_values(output, samples, replicas, num_prompts, plan_only, report_only)
    _check_skipped_options(ctx, plan_only, report_only, retry_failed, allow_gpu_mismatch)
    out_dir = out or Path("validation") / scenario.stem
    if report_only and not out_dir.is_dir():
        fail(f"--out {out_dir}: no such directory (nothing to report)")
    if not report_only:
        check_output_dir(out_dir, "--out")
        if not plan_only:
            _require_gpu()  # before the plan: a run without a GPU must not rewrite or set aside anything
        from simperf.progress import phases

        with phases(f"validate {scenario.stem}", quiet=quiet) as phase:
            phase("simulating and sampling steps")
            _plan(scenario, out_dir, samples, seed, num_prompts, calibration, console, fail, phase)
    if plan_only:
        console.print(f"planned; run it on a GPU with: simperf validate {scenario} --out {out_dir}")
        return
    rows, measured_new = _measured_rows(
        out_dir, report_only, replicas, allow_gpu_mismatch, retry_failed, quiet
    )
    if not measured_new and not report_only:
        # nothing new was measured: the results written from these rows stay as they are
        _print_rows(rows, console)
        console.print(f"nothing new measured; {out_dir} left unchanged", highlight=False)
        return
    _write_and_print_report(scenario, out_dir, rows, output, console)


def _check_option_values(
    output: str, samples: int, replicas: int, num_prompts: int | None, plan_only: bool, report_only: bool
) -> None:
    """Option values out of range, and modes that exclude each other, as errors naming the options."""
    if output not in ("text", "json"):
        fail(f"--output: got {output!r}; allowed values: text, json")
    if samples < 1 or replicas < 1:
        fail("--samples and --replicas must be at least 1")
    if num_prompts is not None and num_prompts < 1:
        fail(f"--num-prompts: got {num_prompts}; must be at least 1")
    if plan_only and report_only:
        fail("--plan-only and --report-only: give at most one")
    if plan_only and output == "json":  # stdout stayed empty (the plan's messages go to stderr): no JSON came
        fail("--output json: prints the measured summary, and --plan-only measures nothing; drop one of them")


def _check_skipped_options(
    ctx: typer.Context, plan_only: bool, report_only: bool, retry_failed: bool, allow_gpu_mismatch: bool
) -> None:
    """Options given for a step that --plan-only or --report-only skips, as errors rather than silently ignored."""
    # these shape the run on the GPU, which --plan-only and --report-only skip: they were accepted and ignored
    on_gpu = given_on_command_line(ctx, (("--replicas", "replicas"),))
    on_gpu += [
        option
        for given, option in ((retry_failed, "--retry-failed"), (allow_gpu_mismatch, "--allow-gpu-mismatch"))
        if given
    ]
    if on_gpu and (plan_only or report_only):
        skipping = "--plan-only" if plan_only else "--report-only"
        fail(f"{', '.join(on_gpu)}: applies to a run on the GPU, which {skipping} skips; drop one of them")
    # and these the plan (the simulation and its sampled steps), which --report-only reads as it was written
    planning = given_on_command_line(ctx, PLAN_OPTIONS)
    if planning and report_only:
        fail(
            f"{', '.join(planning)}: shapes the plan, and --report-only summarises the existing run as it was "
            "planned; drop it, or plan again without --report-only"
        )


def _measured_rows(
    out_dir: Path, report_only: bool, replicas: int, allow_gpu_mismatch: bool, retry_failed: bool, quiet: bool
) -> tuple[list[dict], bool]:
    """The journaled samples after running the planned ones on this GPU (none with --report-only), and whether
    that measured anything new; an error where nothing is measured at all."""
    from simperf.validate.execute import ValidateError, done_samples

    before = sorted(done_samples(out_dir).values(), key=lambda r: r["sample_id"])
    rows = before
    if not report_only:
        try:
            rows = _run(out_dir, replicas, allow_gpu_mismatch, retry_failed, quiet)
        except ValidateError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            fail(f"interrupted; finished samples are journaled in {out_dir}: run the same command to resume")
    if not rows:
        fail(f"{out_dir}: nothing measured yet")
    return rows, rows != before


def _print_rows(rows: list[dict], console: Console) -> None:
    """The per-sample table and the summary, as text."""
    from simperf.validate.report import format_rows, summarize

    console.print(format_rows(rows), highlight=False)
    _print_summary(summarize(rows), console)


def _write_and_print_report(
    scenario: Path, out_dir: Path, rows: list[dict], output: str, console: Console
) -> None:
    """The report files written from `rows`, then the results as JSON on stdout or as text."""
    from simperf.validate.report import not_measured_notes, summarize, write_report

    written = write_report(out_dir, rows, f"{scenario.stem}: predicted vs measured step time")
    if output == "json":
        import json
        import sys

        data = {"summary": summarize(rows), "samples": rows, "not_measured": not_measured_notes(rows)}
        sys.stdout.write(
            json.dumps({**data, "written": [str(p) for p in written]}, indent=2, default=str) + "\n"
        )
        return
    _print_rows(rows, console)
    for note in not_measured_notes(rows):
        console.print(f"[dim]not measured: {note}[/]", highlight=False)
    console.print("written: " + ", ".join(str(p) for p in written), highlight=False)


def _require_gpu() -> None:
    """torch and a CUDA GPU, probed in a subprocess (this process stays torch-free)."""
    from simperf.calibrate.preflight import CalibrateError, require_device
    from simperf.calibrate.runner import probe_device

    try:
        require_device(probe_device(), "validate runs kernels")
    except CalibrateError as exc:
        fail(f"{exc}; --plan-only writes the sampled steps without a GPU")


def _plan(scenario, out_dir, samples, seed, num_prompts, calibration, console, fail, phase=None) -> None:
    from simperf.perfdb.locate import CalibrationError, without_roofline_hint
    from simperf.pipeline import UnsupportedScenario
    from simperf.scenario.load import ScenarioError
    from simperf.validate.build import UnsupportedStep
    from simperf.validate.plan import plan_validation

    def finished(done: int, total: int) -> None:
        if phase is not None:
            phase(f"simulating: {done:,} of {total:,} requests finished")

    try:
        header, programs, reused = plan_validation(
            scenario, out_dir, samples, seed, num_prompts, calibration, finished
        )
    except (ScenarioError, UnsupportedScenario, UnsupportedStep) as exc:
        fail(str(exc))
    except CalibrationError as exc:
        fail(f"{scenario}: {without_roofline_hint(str(exc))}")
    except (ValueError, FileNotFoundError) as exc:
        fail(f"{scenario}: {exc}")
    verb = "reusing the plan in" if reused else "planned into"
    kinds: dict[str, int] = {}
    for program in programs:
        kinds[program.kind] = kinds.get(program.kind, 0) + 1
    console.print(
        f"{verb} {out_dir}: {len(programs)} steps ({', '.join(f'{n} {k}' for k, n in kinds.items())}) sampled "
        f"from {header['logged_steps']} logged of {header['simulated_iterations']} simulated iterations",
        highlight=False,
    )


def _run(out_dir, replicas, allow_gpu_mismatch, retry_failed, quiet):
    from simperf.progress import bar
    from simperf.validate.execute import run_validation

    with bar("validate", None, quiet=quiet) as progress:

        def on_sample(done: int, total: int, row: dict) -> None:
            err = row.get("rel_error")
            what = f"{100 * err:+.1f}%" if err is not None else "failed"
            progress.set_total(total, done)
            progress.advance(0, status=f"last: {row['kind']} {what}")

        return run_validation(out_dir, replicas, allow_gpu_mismatch, on_sample, retry_failed)


def _print_summary(summary: list[dict], console: Console) -> None:
    table = Table(
        "step kind", "samples", "median |error|", "p90 |error|", "median error", title="step time error"
    )
    for s in summary:
        table.add_row(
            s["kind"],
            str(s["samples"]),
            f"{100 * s['median_abs_error']:.1f}%",
            f"{100 * s['p90_abs_error']:.1f}%",
            f"{100 * s['median_signed_error']:+.1f}%",
        )
    console.print(table)
