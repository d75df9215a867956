"""`simperf calibrate`: the function the typer app calls, and the argparse front end of
`python -m simperf.calibrate` (device runs must not depend on the main CLI)."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path

from simperf.calibrate.preflight import CalibrateError
from simperf.calibrate.runner import RunOptions, run


def _split(values: list[str] | None, flag: str) -> list[str] | None:
    """Accept both repeated options and comma-separated lists. Given, it names something: `--ops ""` (an empty shell
    variable) selected every op, as if left out."""
    if not values:
        return None
    out = [v.strip() for value in values for v in value.split(",") if v.strip()]
    if not out:
        raise CalibrateError(
            f"{flag}: got {','.join(values)!r}, which names nothing; name some, or leave {flag} out"
        )
    return out


def calibrate_command(
    ops: list[str] | None,
    models: list[str] | None,
    grid: Path | None,
    out: Path | None,
    heldout: int,
    resume: bool,
    backends: list[str] | None,
    dry_run: bool,
    *,
    ragged: int = 0,
    retry_failed: bool = False,
    retry_unsupported: bool = False,
    time_budget_s: float | None = None,
    gpu: str | None = None,
    limit: int | None = None,
    retime_from: Path | None = None,
    replay_target_ms: float | None = None,
) -> int:
    """Measure the calibration tables of this GPU into `out` (default calibration/<gpu>/).

    ops: categories (attention, gemm, moe, elementwise, comm) or op names; None = all.
    models: restricts the MoE family to these model names (the other families' shapes are per-rank
    shapes shared by several models, so they are not filtered).
    heldout: random off-grid points per op (sample "heldout"); ragged: ragged decode batches per decode
    backend (sample "ragged"). resume=False re-measures everything. retime_from: measure again the points a
    calibration directory's tables hold (after a backend's protocol changed), into another `out`; `--merge-from`
    folds them back. Returns a process exit code.
    """
    grid_path = grid
    options = RunOptions(
        out=out,
        grid_path=grid_path,
        ops=_split(ops, "--ops"),
        backends=_split(backends, "--backends"),
        heldout=heldout,
        ragged=ragged,
        resume=resume,
        retry_failed=retry_failed,
        retry_unsupported=retry_unsupported,
        dry_run=dry_run,
        time_budget_s=time_budget_s,
        gpu=gpu,
        limit=limit,
        retime_from=retime_from,
        replay_target_ms=replay_target_ms,
    )
    model_list = _split(models, "--models")
    if model_list:
        options.models = model_list
    return run(options)


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting: one error path for every bad argument."""

    def error(self, message: str):  # type: ignore[override]
        raise CalibrateError(f"{message} (see `simperf calibrate --help`)")


class _Once(argparse.Action):
    """A single-valued option refuses a second, different value: argparse kept the last (`--gpu h100 --gpu h200`
    planned for h200) without a word, where simperf's other commands refuse the repeat."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        if getattr(self, "given", None) not in (None, values):
            parser.error(f"{'/'.join(self.option_strings)}: given twice with different values; give it once")
        self.given = values
        setattr(namespace, self.dest, values)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m simperf.calibrate", description=calibrate_command.__doc__)
    p.add_argument("--ops", action="append", help="attention,gemm,moe,elementwise,comm or op names")
    p.add_argument("--models", action="append", help="MoE models to include (default: all)")
    p.add_argument("--grid", action=_Once, type=Path, help="YAML grid overrides (see calibration/grids/)")
    p.add_argument("--out", action=_Once, type=Path, help="output directory (default calibration/<gpu>/)")
    p.add_argument("--heldout", action=_Once, type=int, default=0, help="random off-grid points per op")
    p.add_argument(
        "--ragged", action=_Once, type=int, default=0, help="ragged decode batches per decode backend"
    )
    p.add_argument("--no-resume", dest="resume", action="store_false", help="re-measure recorded points")
    p.add_argument("--retry-failed", action="store_true", help="re-measure points recorded as failed")
    p.add_argument("--retry-unsupported", action="store_true", help="re-measure points recorded unsupported")
    p.add_argument("--backends", action="append", help="table backend labels or worker groups")
    p.add_argument("--dry-run", action="store_true", help="list what would be measured, run nothing")
    p.add_argument(
        "--time-budget-s", action=_Once, type=float, help="stop starting points after this many seconds"
    )
    p.add_argument("--gpu", action=_Once, help="catalogue key to use instead of the detected one")
    p.add_argument("--limit", action=_Once, type=int, help="measure at most this many points (smoke runs)")
    p.add_argument(
        "--retime",
        action=_Once,
        type=Path,
        metavar="DIR",
        help="measure again the points DIR's tables hold (with --ops/--backends), into another --out",
    )
    p.add_argument(
        "--replay-target-ms",
        action=_Once,
        type=float,
        help="GPU time of graph replays per point (default 60; dense sweeps of cheap kernels: 15)",
    )
    p.add_argument(
        "--merge-from",
        action=_Once,
        type=Path,
        metavar="SRC",
        help="no GPU: fold SRC's tables into --out's (a row replaces its point's, never an ok one by a failure)",
    )
    return p


def _exit_on_sigterm() -> None:
    """`timeout`, batch schedulers and lent machines stop a run with SIGTERM: turn it into SystemExit so that the
    runner's `finally` compacts the journal into the tables before the process (and maybe the machine) goes."""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def main(argv: list[str] | None = None) -> int:
    """`simperf calibrate ARGS` and `python -m simperf.calibrate ARGS`; bad arguments and a run that cannot start
    raise CalibrateError, which both entry points print as one `error:` line (exit 2)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.merge_from is not None:
        _merge_alone(parser, args)
        return merge_command(args.merge_from, args.out)
    _exit_on_sigterm()
    return calibrate_command(
        ops=args.ops,
        models=args.models,
        grid=args.grid,
        out=args.out,
        heldout=args.heldout,
        resume=args.resume,
        backends=args.backends,
        dry_run=args.dry_run,
        ragged=args.ragged,
        retry_failed=args.retry_failed,
        retry_unsupported=args.retry_unsupported,
        time_budget_s=args.time_budget_s,
        gpu=args.gpu,
        limit=args.limit,
        retime_from=args.retime,
        replay_target_ms=args.replay_target_ms,
    )


def _merge_alone(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--merge-from measures nothing: --ops, --dry-run, ... were read by nothing (--dry-run merged for real)."""
    given = [
        k for k, v in vars(args).items() if k not in ("merge_from", "out") and v != parser.get_default(k)
    ]
    if given:
        flag = "--" + ("no-resume" if given[0] == "resume" else given[0].replace("_", "-"))
        raise CalibrateError(
            f"{flag}: does not apply to --merge-from, which folds every table of SRC into --out"
        )


def merge_command(source: Path, dest: Path | None) -> int:
    """`--merge-from SRC --out DST`: fold a re-timing's tables into the tables they re-time (one GPU's)."""
    from simperf.calibrate.journal import merge_tables
    from simperf.calibrate.preflight import table_gpu

    if dest is None:
        raise CalibrateError("--merge-from: give --out, the calibration directory to fold the rows into")
    for flag, path in (("--merge-from", source), ("--out", dest)):
        if not Path(path).is_dir():
            raise CalibrateError(f"{flag} {path}: not a directory")
    if Path(source).resolve() == Path(dest).resolve():
        raise CalibrateError(f"--merge-from {source}: is --out itself; give the directory of a re-timing")
    _check_source_tables(source)
    theirs, ours = table_gpu(source), table_gpu(dest)
    if theirs and ours and theirs != ours:
        raise CalibrateError(f"--merge-from {source}: holds {theirs} rows and --out {dest} holds {ours}")
    counts = merge_tables(source, dest)
    if not counts:
        raise CalibrateError(f"--merge-from {source}: no tables there")
    for op, (taken, kept) in counts.items():
        print(
            f"{dest}/{op}: {taken} rows from {source}"
            + (f", {kept} earlier ok rows kept (new one failed)" if kept else "")
        )
    return 0


def _check_source_tables(source: Path) -> None:
    """Rows folded in are checked as a prediction would read them: a NaN or negative time, a missing column or an
    unknown status would otherwise land in --out's tables."""
    import polars as pl

    from simperf.perfdb.db import check_table_rows
    from simperf.perfdb.locate import check_table_files

    try:
        check_table_files(Path(source))
        for path in sorted(Path(source).glob("*.parquet")):
            check_table_rows(pl.read_parquet(path), path)
    except ValueError as exc:
        raise CalibrateError(f"--merge-from {exc}") from None
