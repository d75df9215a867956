"""`simperf backends`: a typer command, registered on the main app by simperf/cli.py."""

from __future__ import annotations

from typing import Annotated

import typer


def backends_command(
    gpu: Annotated[
        list[str] | None, typer.Option(help="GPU kind, repeatable (default: every catalogued GPU)")
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(help="zoo model or its HF repo id, repeatable (default: the whole zoo)"),
    ] = None,
    refused: Annotated[bool, typer.Option(help="also list refused combinations, with the reason")] = True,
    output: Annotated[str, typer.Option("--output", "-o", help="text | json | tsv")] = "text",
) -> None:
    """Which attention backends each model can use on each GPU, SGLang's default, and why the others are refused."""
    from simperf.cli_errors import fail
    from simperf.hardware.catalog import gpu_keys
    from simperf.models.zoo import zoo_names
    from simperf.report.tables import Col, TableData, check_output, print_tables
    from simperf.scenario.backend_matrix import backend_matrix
    from simperf.scenario.cmdline import resolve_zoo_model
    from simperf.scenario.flags import FlagError

    try:  # as predict reads --model-path (Qwen/Qwen3-8B, Qwen3-8B); attention backends do not depend on weights
        models = [resolve_zoo_model(m, "--model", "backends")[0] for m in model or []]
    except FlagError as e:
        fail(str(e))
    problem = (
        check_output(output)
        or _choice_problem("--gpu", gpu or [], gpu_keys(), "GPUs")
        or _choice_problem("--model", models, zoo_names(), "models")
    )
    if problem:
        fail(problem)
    rows = backend_matrix(gpu or gpu_keys(), models or zoo_names())
    columns = [
        Col("gpu", "gpu"),
        Col("model", "model"),
        Col("backend", "backend"),
        Col("usable", "usable", lambda v: "yes" if v else "no"),
        Col("default_for", "SGLang default for"),
        Col("needs", "needs"),
        Col("decode_table", "decode attention priced from"),
        Col("reason", "why refused"),
    ]
    table = TableData("attention backends", columns)
    for r in rows:
        if r.usable or refused:
            table.add(**{c.key: getattr(r, c.key) for c in columns})
    print_tables([table], output)


def _choice_problem(option: str, given: list[str], allowed: list[str], what: str) -> str | None:
    """An unknown value, or one given twice (its rows were printed twice), named with its option."""
    from simperf.spelling import did_you_mean

    unknown = [v for v in given if v not in allowed]
    if unknown:
        hint = did_you_mean(unknown[0], allowed)
        return f"{option}: unknown {', '.join(unknown)}{hint}; {what}: {', '.join(allowed)}"
    repeated = sorted({v for v in given if given.count(v) > 1})
    if repeated:
        return f"{option} {', '.join(repeated)}: given twice; give each once"
    return None
