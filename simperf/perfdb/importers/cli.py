"""`simperf calibrate import SOURCE --system SYSTEM --out DIR`: third-party tables into a calibration directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simperf.perfdb.importers import aiconfigurator

SOURCES = ("aiconfigurator",)


def import_command(
    source: Annotated[str, typer.Argument(help="where the tables come from: aiconfigurator")],
    system: Annotated[str, typer.Option(help="the source's system name, e.g. b200_sxm, h200_sxm")],
    out: Annotated[Path, typer.Option(help="calibration directory to write, e.g. calibration/b200")],
    package_root: Annotated[
        Path | None,
        typer.Option(help="an unpacked aiconfigurator_core directory (default: the installed package)"),
    ] = None,
    gpu: Annotated[
        str | None, typer.Option(help="simperf GPU key of the tables (default: from the system name)")
    ] = None,
) -> None:
    """Convert a third-party tool's published per-op timings into simperf's tables, labelled third-party."""
    if source not in SOURCES:
        raise typer.BadParameter(f"got {source!r}; allowed values: {', '.join(SOURCES)}", param_hint="SOURCE")
    try:
        report = aiconfigurator.import_system(system, out, root=package_root, gpu=gpu)
    except aiconfigurator.AIConfiguratorImportError as e:
        from simperf.cli_errors import fail

        fail(str(e))
    typer.echo(f"{report.tool} {report.tool_version}, system {report.system} -> {out} (gpu {report.gpu})")
    for table in report.tables:
        ops = ", ".join(f"{op} {n}" for op, n in sorted(table.ops.items()))
        dropped = "; ".join(f"{n} left out: {why}" for why, n in table.dropped.items())
        typer.echo(f"  {table.source_file}: {ops}" + (f" ({dropped})" if dropped else ""))
    for missing in report.missing:
        typer.echo(f"  not published for this system: {missing}")
