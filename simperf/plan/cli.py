"""`simperf plan`: from a sweep's table, or one-shot from a model, a GPU kind and a GPU budget.

    simperf plan results.sweep.parquet --rate 30 --sla "ttft.p90<=2s"                # a sweep's table
    simperf plan --model deepseek-r1 --gpu h200 --total-gpus 16 --isl 1024 --osl 1024 \\
        --rate 10 --sla "ttft.p90<=2s" --sla "tpot.p90<=50ms" --save-dir out/           # one-shot
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from simperf import strictjson
from simperf.cli_errors import given_on_command_line

err = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    from simperf.cli_errors import fail

    fail(message, code)  # simperf's one error line


# the one-shot options a sweep table's plan does not read: (flag, parameter name)
ONESHOT_ONLY = (
    ("--gpu", "gpu"), ("--total-gpus", "total_gpus"), ("--isl", "isl"), ("--osl", "osl"),
    ("--range-ratio", "range_ratio"), ("--save-dir", "save_dir"), ("--mtp-accept-length", "mtp_accept_length"),
    ("--num-prompts", "num_prompts"), ("--[no-]disaggregation", "disaggregation"), ("--table", "table"),
    ("--[no-]fresh", "fresh"), ("--ray-address", "ray_address"),
)  # fmt: skip


def plan_command(
    ctx: typer.Context,
    results: Annotated[
        Path | None,
        typer.Argument(help="sweep result table (.parquet) or sweep file (.yaml); or use --model"),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="one-shot: zoo model (`simperf models`) or its HF repo id")
    ] = None,
    gpu: Annotated[str | None, typer.Option(help="one-shot: GPU kind (h100 | h200 | b200)")] = None,
    total_gpus: Annotated[int | None, typer.Option(help="one-shot: GPUs to spend", min=1)] = None,
    isl: Annotated[int, typer.Option(help="one-shot: input tokens per request", min=1)] = 1024,
    osl: Annotated[int, typer.Option(help="one-shot: output tokens per request", min=1)] = 1024,
    range_ratio: Annotated[
        float, typer.Option(help="one-shot: lengths ~ U{int(L*r)..L} as bench_serving's random (1 = fixed)")
    ] = 1.0,
    rate: Annotated[
        float | None, typer.Option(help="target request rate, req/s (one-shot: omit to maximise it)")
    ] = None,
    sla: Annotated[
        list[str] | None, typer.Option(help="latency bound, repeatable: 'ttft.p90 <= 2s', 'tpot.p90 <= 50ms'")
    ] = None,
    top: Annotated[int | None, typer.Option(help="runner-ups to show")] = None,
    save_dir: Annotated[
        Path | None, typer.Option(help="one-shot: write launch/bench commands and scenario YAML per winner")
    ] = None,
    mtp_accept_length: Annotated[
        float,
        typer.Option(help="one-shot: accept length assumed for MTP candidates (SGLang logs `accept len`)"),
    ] = 2.4,
    num_prompts: Annotated[
        int | None,
        typer.Option(help="one-shot: requests per point (default: 60 s of the planned load)", min=1),
    ] = None,
    disaggregation: Annotated[
        bool, typer.Option(help="one-shot: also try one prefill + one decode server")
    ] = True,
    table: Annotated[
        Path | None, typer.Option(help="one-shot: result table (default: ./<plan name>.sweep.parquet)")
    ] = None,
    fresh: Annotated[bool, typer.Option(help="one-shot: ignore finished points of an earlier run")] = False,
    output: Annotated[str, typer.Option("--output", "-o", help="text | json")] = "text",
    executor: Annotated[str, typer.Option(help="serial | process | ray")] = "process",
    workers: Annotated[int | None, typer.Option(help="parallel workers (default: all local cores)")] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster address (default: a local Ray)")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress display on stderr")] = False,
) -> None:
    """Which configuration serves the load within the SLA on the fewest GPUs, and the runner-ups.

    Given a sweep table, plan from its rows. Given --model --gpu --total-gpus (AIConfigurator's question), generate
    the candidate layouts (TP / DP attention / EP, attention backends, MTP on/off, PD pairs), simulate them, and rank.
    """
    if results is not None:
        if model is not None:
            _fail("give either a sweep table/file or --model (one-shot), not both")
        # the one-shot options have no effect on a table's plan: accepted, they were silently ignored (asked of
        # click, not compared with the defaults: --isl 1024 or --disaggregation, the default's value, passed too)
        given = given_on_command_line(ctx, ONESHOT_ONLY)
        if given:
            _fail(
                f"{', '.join(given)}: one-shot options (with --model); a sweep table or file plans from its rows"
            )
        from simperf.sweep.cli import plan_from_table

        plan_from_table(results, rate, sla, top, output, executor, workers)
        return
    missing = [f for f, v in (("--model", model), ("--gpu", gpu), ("--total-gpus", total_gpus)) if v is None]
    if missing:
        _fail(f"{', '.join(missing)}: required for a one-shot plan (or give a sweep table)")
    if output not in ("text", "json"):
        _fail(f"--output: got {output!r}; allowed values: text, json")
    from simperf.sweep.cli import check_plan_numbers

    check_plan_numbers(rate, top)
    request = _request(model, gpu, total_gpus, isl, osl, range_ratio, rate, sla or [], mtp_accept_length,
                       num_prompts, disaggregation)  # fmt: skip
    _check_candidate_options(ctx, request.model, total_gpus, disaggregation)
    run_oneshot(request, top if top is not None else 3, save_dir, table, fresh, output, executor, workers,
                ray_address, quiet)  # fmt: skip


def _request(model, gpu, total_gpus, isl, osl, range_ratio, rate, sla, accept, num_prompts, disagg):
    from simperf.hardware.catalog import gpu_keys
    from simperf.models.zoo import load_arch
    from simperf.plan.oneshot import PlanRequest
    from simperf.sweep.sla import SlaError, parse_sla

    model, weight_dtype = _zoo_model(model)
    if gpu not in gpu_keys():
        from simperf.spelling import not_allowed

        _fail(f"--gpu: {not_allowed(gpu, gpu_keys())}")
    if not 0.0 <= range_ratio <= 1.0:
        _fail(f"--range-ratio: got {range_ratio}; allowed: 0 to 1")
    context = load_arch(model).context_len
    if isl >= context:  # every prompt was shortened to fit, and the plan still said "random <isl> in"
        _fail(f"--isl: {isl:,} tokens do not fit {model}'s context length ({context:,} tokens); give fewer")
    if isl + osl > context:  # every output was cut to fit, and the plan still said "<osl> out"
        _fail(
            f"--osl: {isl:,} prompt + {osl:,} output tokens do not fit {model}'s context length "
            f"({context:,} tokens); give at most {context - isl:,}"
        )
    if not (math.isfinite(accept) and accept > 1.0):  # NaN passed `accept <= 1` and planned MTP with it
        _fail(f"--mtp-accept-length: got {accept}; it counts the bonus token, so it is > 1")
    try:
        parse_sla(sla)
    except SlaError as e:
        _fail(f"--sla: {e}")
    return PlanRequest(model, gpu, total_gpus, isl, osl, range_ratio, rate, tuple(sla), accept, num_prompts,
                       disaggregation=disagg, weight_dtype=weight_dtype)  # fmt: skip


def _zoo_model(text: str) -> tuple[str, str | None]:
    from simperf.cli_errors import fail
    from simperf.scenario.cmdline import resolve_zoo_model
    from simperf.scenario.flags import FlagError

    try:  # the candidates are drawn from a zoo architecture (load_arch): no local config.json
        return resolve_zoo_model(text, "--model", "a one-shot plan")
    except FlagError as e:
        fail(str(e))


def _check_candidate_options(ctx: typer.Context, model: str, total_gpus: int, disaggregation: bool) -> None:
    """Options given for candidates the plan cannot try."""
    if given_on_command_line(ctx, (("--mtp-accept-length", "mtp_accept_length"),)):
        _check_mtp_candidates(model)
    if (
        disaggregation
        and total_gpus < 2
        and given_on_command_line(ctx, (("--disaggregation", "disaggregation"),))
    ):
        # a PD pair is two servers: on one GPU the plan tried none, and --disaggregation was read by nothing
        _fail(
            f"--disaggregation: a PD pair needs 2 GPUs or more (a prefill and a decode server), and --total-gpus is "
            f"{total_gpus}, so the plan tries none; drop it or give more GPUs"
        )


def _check_mtp_candidates(model: str) -> None:
    """--mtp-accept-length prices the MTP candidates, which only a model with MTP layers has (plan/candidates.py):
    on any other it was accepted and read by nothing."""
    from simperf.models.zoo import load_arch

    if load_arch(model).num_nextn_predict_layers == 0:
        _fail(
            f"--mtp-accept-length: prices the MTP candidates, and {model} has no MTP layers "
            "(num_nextn_predict_layers: 0), so the plan tries none; drop it"
        )


def run_oneshot(request, top, save_dir, table, fresh, output, executor, workers, ray_address, quiet) -> None:
    from simperf.models.zoo import load_arch
    from simperf.output_paths import check_output_dir, check_output_file
    from simperf.plan.candidates import generate_candidates
    from simperf.plan.oneshot import base_scenario, build_points, plan_metadata, rank
    from simperf.plan.report import plan_json, print_oneshot
    from simperf.sweep.cli import check_executor_options
    from simperf.sweep.executors import ExecutorError
    from simperf.sweep.sla import parse_sla

    check_executor_options(executor, workers, ray_address)
    arch = load_arch(request.model)
    candidates = generate_candidates(arch, request.gpu, request.total_gpus, base_scenario(request),
                                     request.mtp_accept_length, request.disaggregation)  # fmt: skip
    if not candidates.candidates:
        reasons = "; ".join(f"{a}: {b}" for a, b in candidates.skipped[:5])
        _fail(f"no configuration of {request.label} fits {request.total_gpus} x {request.gpu}: {reasons}", 1)
    base_dir = Path.cwd()
    points = build_points(request, candidates.candidates, base_dir)
    out = table or (
        save_dir / "plan.sweep.parquet" if save_dir else Path.cwd() / f"{request.name}.sweep.parquet"
    )
    if save_dir is not None:  # before any point is simulated
        check_output_dir(save_dir, "--save-dir")
        _check_save_dir(save_dir, request)
    if table is not None or save_dir is None:
        check_output_file(out, "--table", suffixes=(".parquet",), what="Parquet")
    try:
        run = _run_points(points, plan_metadata(request, points, base_dir, top), out, executor, workers,
                          ray_address, fresh, quiet, request.name)  # fmt: skip
    except ExecutorError as e:
        _fail(str(e))
    except KeyboardInterrupt:
        err.print(f"interrupted: finished points are kept; run the same command again to resume ({out})")
        raise typer.Exit(130) from None
    plan = rank(request, run.frame, parse_sla(list(request.sla)), candidates)
    data = plan_json(plan, top, out)
    if save_dir is not None:
        from simperf.plan.save import save_plan

        written = save_plan(save_dir, plan, data, top)
        data["saved"] = [str(p) for p in written]
    if output == "json":
        sys.stdout.write(strictjson.dumps(data, indent=2, default=str) + "\n")
    else:
        print_oneshot(plan, top, out, data.get("saved", []))
    if plan.winner is None:
        raise typer.Exit(1)


def _check_save_dir(save_dir: Path, request) -> None:
    from simperf.plan.save import check_save_dir

    try:
        check_save_dir(save_dir, request)
    except ValueError as e:
        _fail(str(e))


def _run_points(points, metadata, out, executor, workers, ray_address, fresh, quiet, name):
    from simperf.progress import bar
    from simperf.sweep.runner import run_points_resumable

    counts: dict[str, int] = {}
    with bar(f"plan {name}", len(points), quiet=quiet) as progress:

        def on_start(total: int, done: int) -> None:
            progress.set_total(total, done)

        def on_row(row: dict[str, Any]) -> None:
            counts[row["status"]] = counts.get(row["status"], 0) + 1
            progress.advance(status=" ".join(f"{k}:{v}" for k, v in sorted(counts.items())))

        return run_points_resumable(points, metadata, out, executor=executor, workers=workers,
                                    ray_address=ray_address, fresh=fresh, on_start=on_start, on_row=on_row)  # fmt: skip
