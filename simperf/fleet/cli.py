"""`simperf fleet compare|plan`: router policies side by side, and capacity planning by simulating the fleet."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from simperf.cli_errors import MaxMemoryOption, print_note
from simperf.output_paths import check_output_dir
from simperf.scenario.flags import parse_set_values
from simperf.scenario.load import format_validation_error
from simperf.strictyaml import safe_load

err = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    from simperf.cli_errors import fail

    fail(message, code)  # simperf's one error line: unwrapped (rich wrapped it at the terminal's width)


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """`a.b.c=VALUE` (VALUE read as YAML) set in the scenario mapping before it is validated; each item checked as
    predict's --set is (flags.parse_set_values: the form, a known field path, once, not replacing an earlier one)."""
    values = parse_set_values(overrides, form="KEY.PATH=VALUE, e.g. fleet.router.policy=round_robin")
    given = {item.partition("=")[0].strip(): item for item in overrides}
    for key, value in values.items():
        parts = key.split(".")
        node = data
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ValueError(f"--set {given[key]!r}: {part} is not a mapping in the scenario")
            node = child
        node[parts[-1]] = value
    return data


def check_policies(policies: list[str] | None, overrides: list[str] | None = None) -> None:
    """Each --policy once: a repeated one was simulated, and printed, again with the same result. And not beside
    --set fleet.router.policy, which each --policy replaced without a word."""
    from typing import get_args

    from simperf.scenario.fleet import PrefillPolicy
    from simperf.spelling import not_allowed

    seen: set[str] = set()
    for name in policies or []:
        if name not in get_args(PrefillPolicy):  # was 'fleet.router policy ...', naming no option
            _fail(f"--policy: {not_allowed(name, list(get_args(PrefillPolicy)))} (bucket: PD prefill only)")
        if name in seen:
            _fail(f"--policy {name!r}: given twice; give each policy once")
        seen.add(name)
    for item in overrides or []:
        key, _, value = item.partition("=")
        if policies and key.strip() == "fleet.router.policy":
            _fail(
                f"--set fleet.router.policy: the command runs each --policy ({', '.join(policies)}) in its place, "
                f"so it would change nothing; give {value.strip() or 'it'} as a --policy instead"
            )


def load_fleet_scenario(path: Path, overrides: list[str], policies: list[str] | tuple[str, ...] = ()):
    """The fleet scenario, its router's parameters checked against its own policies and `policies` (the ones the
    command runs it under: a parameter only one of those reads is not refused as changing nothing)."""
    from simperf.scenario.fleet import COMPARED_POLICIES
    from simperf.scenario.load import ScenarioError, load_scenario_mapping, parse_scenario, require_mapping

    try:
        # predict's reader: a directory, a file that is not UTF-8 or not YAML is named in one line
        data = load_scenario_mapping(path)
        # --set into a list failed as an internal error (TypeError): the mapping check goes first
        scenario = parse_scenario(
            apply_overrides(require_mapping(data, str(path)), overrides),
            str(path),
            base_dir=path.parent,
            context={COMPARED_POLICIES: tuple(policies)},
        )
    except (ScenarioError, ValueError) as e:
        _fail(str(e))
    if scenario.fleet is None:
        _fail(f"{path}: no fleet: section (docs/fleet.md shows one)")
    return scenario


def _note_scenario_policy_not_run(fleet, given: list[str] | None, names, verb: str) -> None:
    """Without --policy the command runs its default policies, whatever the scenario's router.policy: a policy the
    scenario chose (random, bucket, ...) was left out without a word, and the parameters only it reads with it."""
    own = fleet.router.policy
    if given or "policy" not in fleet.router.model_fields_set or own in names:
        return
    print_note(
        f"fleet.router.policy: {own} is not {verb} (without --policy the command runs "
        f"{', '.join(names)}); it changes nothing here: give --policy {own} (repeatable, with the others) to run it"
    )


def _note_one_server_a_side(fleet) -> None:
    """A fleet of one server (a PD fleet of one a side): every policy sends every request to it, so the rows came
    out the same, read as policies that make no difference."""
    sides = [fleet.prefill, fleet.decode] if fleet.is_pd else [fleet.replicas]
    if all(sum(g.count for g in groups or []) == 1 for groups in sides):
        where = "one prefill and one decode server" if fleet.is_pd else "one server"
        print_note(
            f"fleet: {where}: every router policy sends every request to {'them' if fleet.is_pd else 'it'}, so "
            "the policies compare the same; give a group a count above 1 to compare routing"
        )


def compare_command(
    scenario: Annotated[Path, typer.Argument(help="fleet scenario YAML")],
    policy: Annotated[
        list[str] | None, typer.Option(help="router policy, repeatable (default: round_robin, cache_aware)")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="override KEY.PATH=VALUE (YAML), repeatable")
    ] = None,
    charts: Annotated[
        Path | None, typer.Option(help="write hit-rate and per-policy load charts here")
    ] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="text | json")] = "text",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress display on stderr")] = False,
    max_memory_gb: MaxMemoryOption = None,
) -> None:
    """Simulate the same fleet and traffic under each router policy; print TTFT, TPOT, cache hits and imbalance."""
    from simperf.fleet.predict import predict_fleet
    from simperf.progress import bar
    from simperf.runsize import memory_limit_bytes

    if output not in ("text", "json"):
        _fail(f"--output: got {output!r}; allowed values: text, json")
    check_policies(policy, set_)
    if charts is not None:  # before the fleets are simulated: a file there failed only after every policy ran
        check_output_dir(charts, "--charts")
    names = policy or ["round_robin", "cache_aware"]
    base = load_fleet_scenario(scenario, set_ or [], names)
    _note_scenario_policy_not_run(base.fleet, policy, names, "compared")
    _note_one_server_a_side(base.fleet)
    rows: list[dict[str, Any]] = []
    predictions = {}
    routers = {}
    labels: dict[str, str] = {}
    for name in names:  # every --policy checked before the first fleet is simulated
        try:
            routers[name] = base.fleet.router.model_validate(base.fleet.router.with_policy(name))
        except ValidationError as e:  # its last line was pydantic's help URL, which named no allowed policy
            _fail(format_validation_error(e, f"--policy {name!r}"))
    # each policy is a whole fleet simulation (seconds each on a recorded trace): a bar over them on stderr
    with bar("fleet compare", len(names), quiet=quiet, transient=True) as progress:
        for name in names:
            sc = base.model_copy(update={"fleet": base.fleet.model_copy(update={"router": routers[name]})})
            try:
                prediction = predict_fleet(sc, memory_limit=memory_limit_bytes(max_memory_gb))
            except (ValueError, FileNotFoundError) as e:
                _fail(f"{scenario}: {e}")
            predictions[name] = prediction
            labels[name] = _policy_label(name, routers[name], base.fleet)
            rows.append(_compare_row(labels[name], prediction))
            progress.advance(status=name)
    if output == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    else:
        _print_compare(rows, base.name)
    if charts is not None:
        _write_compare_charts(predictions, labels, charts)
    else:
        from simperf.fleet.report import timeline_bins_note

        timeline_bins_note(base.fleet, "fleet compare without --charts")


def _policy_label(name: str, router, fleet) -> str:
    """What a compared fleet's router ran: --policy, or each side's policy where a PD fleet's prefill_policy or
    decode_policy keeps its own (--policy round_robin there ran cache_aware prefill and round_robin decode, and
    every row was labelled with --policy alone)."""
    if fleet.prefill is None or router.prefill() == router.decode() == name:
        return name
    return f"prefill {router.prefill()}, decode {router.decode()}"


def _compare_row(name: str, prediction) -> dict[str, Any]:
    r = prediction.result
    routed = [s["routed"] for s in prediction.servers if s["kind"] != "prefill"]
    scaled = prediction.autoscale
    server_s = scaled["replica_seconds"] if scaled else len(prediction.outcomes) * float(r["duration"])
    return {
        "policy": name,
        "prefix_hit_rate": prediction.extra()["fleet"]["prefix_hit_rate"],
        "median_ttft_ms": r["median_ttft_ms"],
        "p90_ttft_ms": r["p90_ttft_ms"],
        "mean_ttft_ms": r["mean_ttft_ms"],
        "median_tpot_ms": r["median_tpot_ms"],
        "p90_tpot_ms": r["p90_tpot_ms"],
        "output_throughput": r["output_throughput"],
        "requests_per_server_min": min(routed) if routed else 0,
        "requests_per_server_max": max(routed) if routed else 0,
        "server_hours": server_s / 3600,
        "router": prediction.policy,
    }


def _print_compare(rows: list[dict[str, Any]], name: str) -> None:
    table = Table(
        "policy", "prefix hit", "TTFT p50", "TTFT p90", "TPOT p50", "TPOT p90", "out tok/s", "req/server", "server-h",
        title=f"{name}: router policies (ms)",
    )  # fmt: skip
    for r in rows:
        hit = r["prefix_hit_rate"]
        table.add_row(
            r["policy"],
            "-" if hit is None else f"{100 * hit:.1f}%",
            f"{r['median_ttft_ms']:.0f}",
            f"{r['p90_ttft_ms']:.0f}",
            f"{r['median_tpot_ms']:.1f}",
            f"{r['p90_tpot_ms']:.1f}",
            f"{r['output_throughput']:.0f}",
            f"{r['requests_per_server_min']}-{r['requests_per_server_max']}",
            f"{r['server_hours']:.2f}",
        )
    Console().print(table)


def _write_compare_charts(predictions: dict, labels: dict[str, str], directory: Path) -> None:
    from simperf.fleet.charts import hit_rate_chart, replica_load_chart
    from simperf.report.charts import save_chart

    hits = {labels[p]: pred.extra()["fleet"]["prefix_hit_rate"] for p, pred in predictions.items()}
    written = save_chart(hit_rate_chart(hits), directory / "hit-rate-per-policy")
    for name, pred in predictions.items():
        chart = replica_load_chart(pred.timelines, title=f"Requests in flight per replica, {labels[name]}")
        written += save_chart(chart, directory / f"replica-load-{name}")
    err.print(f"charts written to {directory} ({len(written)} files)")


def plan_fleet_command(
    scenario: Annotated[Path, typer.Argument(help="fleet scenario YAML (one replica group)")],
    rate: Annotated[float, typer.Option(help="target request rate, req/s")],
    sla: Annotated[list[str] | None, typer.Option(help="latency bound, repeatable: 'ttft.p90 <= 2s'")] = None,
    policy: Annotated[list[str] | None, typer.Option(help="router policy to plan with, repeatable")] = None,
    max_replicas: Annotated[int, typer.Option(help="give up above this many replicas")] = 64,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="override KEY.PATH=VALUE (YAML), repeatable")
    ] = None,
    charts: Annotated[Path | None, typer.Option(help="write the SLA-attainment chart here")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="text | json")] = "text",
    max_memory_gb: MaxMemoryOption = None,
) -> None:
    """Fewest replicas that serve RATE within the SLA under each router policy, found by simulating the fleet."""
    from simperf.fleet.plan import PLAN_POLICIES, FleetPlanError, burst_note, plan_fleet
    from simperf.runsize import RunTooLarge, memory_limit_bytes
    from simperf.sweep.sla import SlaError, parse_sla

    if output not in ("text", "json"):
        _fail(f"--output: got {output!r}; allowed values: text, json")
    from simperf.sweep.cli import check_plan_numbers

    check_plan_numbers(rate, None)  # NaN failed deep in the arrivals; inf planned for a burst
    if max_replicas < 1:  # 0 and negatives were accepted, and the search tried one replica anyway
        _fail(f"--max-replicas: got {max_replicas}; give 1 or more")
    check_policies(policy, set_)
    if charts is not None:  # before the search: a file there failed only after every trial ran
        check_output_dir(charts, "--charts")
    policies = tuple(policy or PLAN_POLICIES)
    base = load_fleet_scenario(scenario, set_ or [], policies)
    _note_scenario_policy_not_run(base.fleet, policy, policies, "planned with")
    try:
        parsed = parse_sla(sla or [])
    except SlaError as e:
        _fail(f"--sla: {e}")
    try:
        plan = plan_fleet(
            base, rate, parsed, policies, max_replicas, _show_trial, memory_limit_bytes(max_memory_gb)
        )
    except RunTooLarge as e:  # a scenario field's problem: name the file it is in, as compare does
        _fail(f"{scenario}: {e}")
    except (FleetPlanError, ValueError) as e:
        _fail(str(e))
    if output == "json":
        sys.stdout.write(json.dumps(plan_json(plan), indent=2, default=str) + "\n")
    else:
        _print_plan(plan)
    from simperf.fleet.report import timeline_bins_note

    timeline_bins_note(base.fleet, "fleet plan")
    note = burst_note(plan, base)
    if note is not None:
        print_note(note)
    if charts is not None:
        from simperf.fleet.charts import attainment_chart
        from simperf.report.charts import save_chart

        written = save_chart(attainment_chart(plan), charts / "sla-attainment-vs-replicas")
        err.print(f"charts written to {charts} ({len(written)} files)")
    if plan.winner is None:
        raise typer.Exit(1)


def _show_trial(trial) -> None:
    verdict = "meets" if trial.meets_sla else "misses"
    err.print(f"  {trial.policy}: {trial.replicas} replicas {verdict} the SLA", highlight=False)


def plan_json(plan) -> dict[str, Any]:
    winner = plan.winner
    return {
        "target_rate": plan.target_rate,
        "sla": [str(b) for b in plan.sla.bounds],
        "winner": None if winner is None else {"policy": winner.policy, "replicas": winner.replicas,
                                               "gpus": winner.chosen.gpus},
        "policies": [
            {
                "policy": p.policy,
                "replicas": p.replicas,
                "trials": [
                    {"replicas": t.replicas, "gpus": t.gpus, "meets_sla": t.meets_sla, "attainment": t.attainment,
                     "prefix_hit_rate": t.prefix_hit_rate,
                     **{k: t.metrics.get(k) for k in ("p90_ttft_ms", "p90_tpot_ms", "median_ttft_ms")}}
                    for t in p.trials
                ],
            }
            for p in plan.policies
        ],
    }  # fmt: skip


def _print_plan(plan) -> None:
    table = Table("policy", "replicas", "GPUs", "TTFT p90", "TPOT p90", "attainment", "prefix hit",
                  title=f"fewest replicas for {plan.target_rate:g} req/s within {plan.sla}")  # fmt: skip
    for p in plan.policies:
        t = p.chosen
        if t is None:
            table.add_row(p.policy, "none found", "-", "-", "-", "-", "-")
            continue
        hit = "-" if t.prefix_hit_rate is None else f"{100 * t.prefix_hit_rate:.1f}%"
        table.add_row(p.policy, str(t.replicas), str(t.gpus), f"{t.metrics['p90_ttft_ms']:.0f} ms",
                      f"{t.metrics['p90_tpot_ms']:.1f} ms", f"{100 * t.attainment:.1f}%", hit)  # fmt: skip
    console = Console()
    console.print(table)
    winner = plan.winner
    if winner is None:
        console.print("no policy met the SLA within the replica limit")
    else:
        console.print(f"winner: {winner.policy} with {winner.replicas} replicas ({winner.chosen.gpus} GPUs)")


def is_fleet_scenario(path: Path) -> bool:
    """A YAML file with a top-level fleet: section next to a model: (not a sweep file or a result table)."""
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        return False
    try:
        data = safe_load(path.read_text())
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return False  # not a fleet: the sweep file's reader then names the problem
    return isinstance(data, dict) and "fleet" in data and "model" in data


fleet_app = typer.Typer(
    no_args_is_help=True, help="Fleets of servers behind SGLang's router (docs/fleet.md)."
)
fleet_app.command("compare")(compare_command)
fleet_app.command("plan")(plan_fleet_command)
