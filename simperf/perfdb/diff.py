"""Cross-check of two calibration directories on the shapes they share: `simperf perfdb diff A B`.

A is the reference (typically simperf's own measured tables), B the other (typically tables imported from a third
party). Every usable grid point of B (median of repeats) whose op and key A also has is compared with A's answer at
the same axes: exactly on one of A's grid points (label `measured`/`third_party`), or, with `interpolate=True`,
also between them (label `interpolated`). Nothing A would extrapolate is compared. The ratio reported is
time_B / time_A per point, summarised per op and key as quantiles.

Keys match column by column after two normalisations: the KV/compute dtype spellings `fp8`/`fp8_e4m3` are one
dtype, and B's backend is renamed through `backend_pairs` (B name -> A name), because the same op may be timed on
different implementations: AIConfigurator's `fa3` is sgl-kernel's FA3, simperf's `flashinfer_fa3` is flashinfer's
FA3 build used as its proxy. docs/calibration.md ("Third-party tables") records what the pairs mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
import polars as pl
import typer

from simperf.perfdb.check import op_family, resolve_gpu
from simperf.perfdb.db import PerfDB
from simperf.perfdb.keys import PerfDBError
from simperf.perfdb.schema import OP_SPECS, SOURCES

# AIConfigurator backend -> the backend simperf measures for the same op (a different build of the same
# algorithm where the names differ). Pairs with identical names need no entry.
DEFAULT_BACKEND_PAIRS: dict[str, str] = {
    "fa3": "flashinfer_fa3",  # sgl-kernel FA3 vs flashinfer's FA3 (simperf's proxy for SGLang's fa3)
    "trtllm_mla": "trtllm_gen",  # both flashinfer's trtllm-gen MLA decode
    "sgl_kernel": "torch_scaled_mm",  # per-token fp8 GEMM: sgl-kernel's vs torch._scaled_mm (cuBLASLt)
}
DISAGREE_FACTOR = 1.5  # a key whose median ratio is outside [1/1.5, 1.5] is listed as a disagreement

_DTYPE_COLUMNS = ("dtype", "kv_dtype")
_DTYPE_ALIASES = {"fp8_e4m3": "fp8"}

_POINT_SCHEMA = {
    "op": pl.String,
    "family": pl.String,
    "key_a": pl.String,
    "key_b": pl.String,
    "point": pl.String,
    "us_a": pl.Float64,
    "us_b": pl.Float64,
    "ratio": pl.Float64,  # us_b / us_a
    "label_a": pl.String,  # how A answered: measured | third_party | interpolated
}


@dataclass(frozen=True)
class DiffResult:
    points: pl.DataFrame  # one row per compared point (_POINT_SCHEMA)
    summary: pl.DataFrame  # per op and key pair: n and ratio quantiles
    by_op: pl.DataFrame  # per op: n and ratio quantiles over all its points
    only_a: list[str]  # "op: key" present in A only
    only_b: list[str]  # present in B only (after backend renaming)

    def disagreements(self, factor: float = DISAGREE_FACTOR) -> pl.DataFrame:
        return self.summary.filter((pl.col("ratio_p50") > factor) | (pl.col("ratio_p50") < 1.0 / factor))


def _format_key(columns: tuple[str, ...], values: tuple) -> str:
    return ", ".join(f"{c}={v}" for c, v in zip(columns, values, strict=True))


def _canonical(column: str, value: object) -> object:
    if column in _DTYPE_COLUMNS and isinstance(value, str):
        return _DTYPE_ALIASES.get(value, value)
    return value


def _grid_points(rows: pl.DataFrame, op: str) -> dict[tuple, pl.DataFrame]:
    """Usable grid rows of one op grouped by key, each key's points reduced to the median per point."""
    spec = OP_SPECS[op]
    usable = rows.filter(
        (pl.col("op") == op)
        & (pl.col("status") == "ok")
        & (pl.col("sample").is_null() | (pl.col("sample") == "grid"))
        & (pl.col("time_us") > 0)
    )
    if usable.height == 0:
        return {}
    keys, axes = list(spec.key_columns), list(spec.axis_columns)
    medians = usable.group_by(keys + axes).agg(pl.col("time_us").median())
    return {
        tuple(key if isinstance(key, tuple) else (key,)): group.sort(axes)
        for key, group in medians.group_by(keys, maintain_order=True)
    }


def _load_rows(directory: Path) -> pl.DataFrame:
    return PerfDB.load(directory, resolve_gpu(directory), scaled_from=False).table_rows()


def diff_tables(
    a: Path,
    b: Path,
    backend_pairs: Mapping[str, str] | None = None,
    interpolate: bool = False,
    ops: list[str] | None = None,
    extra_pairs: Mapping[str, str] | None = None,
) -> DiffResult:
    """Compare B against A on shared shapes (module docstring). extra_pairs: the user's pairs (--pair), added to
    `backend_pairs` after checking that B times its backend and A its own (PairError otherwise)."""
    pairs = dict(DEFAULT_BACKEND_PAIRS if backend_pairs is None else backend_pairs)
    db_a = PerfDB.load(Path(a), resolve_gpu(Path(a)), scaled_from=False)  # A's own tables only
    rows_a, rows_b = db_a.table_rows(), _load_rows(Path(b))
    for b_name, a_name in (extra_pairs or {}).items():
        # a name neither directory times renamed nothing and was accepted in silence (--pair foo=bar)
        for label, directory, rows, name in (("B", b, rows_b, b_name), ("A", a, rows_a, a_name)):
            known = sorted(rows["backend"].drop_nulls().unique().to_list())
            if name not in known:
                raise PairError(
                    f"{b_name}={a_name}: {label} ({directory}) times no backend {name!r}; its backends: "
                    f"{', '.join(known)}"
                )
        pairs[b_name] = a_name
    allowed = {SOURCES.index("measured"), SOURCES.index("third_party")}
    if interpolate:
        allowed.add(SOURCES.index("interpolated"))
    shared_ops = sorted(set(rows_a["op"].drop_nulls().unique()) & set(rows_b["op"].drop_nulls().unique()))
    frames: list[pl.DataFrame] = []
    only_a: list[str] = []
    only_b: list[str] = []
    for op in shared_ops:
        if op not in OP_SPECS or (ops and op not in ops):
            continue
        spec = OP_SPECS[op]
        columns = spec.key_columns
        groups_a = _grid_points(rows_a, op)
        canonical_a = {tuple(_canonical(c, v) for c, v in zip(columns, k, strict=True)): k for k in groups_a}
        matched_a: set[tuple] = set()
        for key_b, points_b in _grid_points(rows_b, op).items():
            renamed = tuple(
                pairs.get(v, v) if c == "backend" else _canonical(c, v)
                for c, v in zip(columns, key_b, strict=True)
            )
            key_a = canonical_a.get(renamed)
            if key_a is None:
                only_b.append(f"{op}: {_format_key(columns, key_b)}")
                continue
            matched_a.add(key_a)
            frame = _compare(db_a, op, key_a, key_b, points_b, allowed, groups_a[key_a])
            if frame.height:
                frames.append(frame)
        only_a += [f"{op}: {_format_key(columns, k)}" for k in groups_a if k not in matched_a]
    points = pl.concat(frames) if frames else pl.DataFrame(schema=_POINT_SCHEMA)
    return DiffResult(
        points, _summarise(points, ["op", "key_a", "key_b"]), _summarise(points, ["op"]), only_a, only_b
    )


def _compare(
    db_a: PerfDB,
    op: str,
    key_a: tuple,
    key_b: tuple,
    points_b: pl.DataFrame,
    allowed: set[int],
    points_a: pl.DataFrame,
) -> pl.DataFrame:
    """On A's own grid points A answers with its measured median (reduced exactly as B's points are), not the
    curve: the curve's grid is raised to a running max along monotone axes and combines repeats in log space,
    so comparing a directory with itself through it gave ratios of 0.61-1.89 instead of 1. Between A's points
    (interpolate=True) the curve answers."""
    spec = OP_SPECS[op]
    curve = db_a.curve(op, dict(zip(spec.key_columns, key_a, strict=True)))
    axes = {name: points_b[name].cast(pl.Float64).to_numpy() for name in spec.axis_columns}
    try:
        us_a, labels = curve(**axes)
    except PerfDBError:
        return pl.DataFrame(schema=_POINT_SCHEMA)
    exact = points_b.select(spec.axis_columns).join(
        points_a.rename({"time_us": "us_exact"}),
        on=list(spec.axis_columns),
        how="left",
        maintain_order="left",
    )["us_exact"]
    on_grid = exact.is_not_null().to_numpy()
    us_a = np.where(on_grid, exact.fill_null(np.nan).to_numpy(), us_a)
    keep = np.isin(labels, list(allowed)) & bool(curve.measured)
    if not keep.any():
        return pl.DataFrame(schema=_POINT_SCHEMA)
    us_b = points_b["time_us"].to_numpy()
    point = points_b.select(
        pl.concat_str([pl.format(f"{n}={{}}", pl.col(n)) for n in spec.axis_columns], separator=", ")
    ).to_series()
    return pl.DataFrame(
        {
            "op": op,
            "family": op_family(op),
            "key_a": _format_key(spec.key_columns, key_a),
            "key_b": _format_key(spec.key_columns, key_b),
            "point": point.filter(pl.Series(keep)),
            "us_a": us_a[keep],
            "us_b": us_b[keep],
            "ratio": us_b[keep] / us_a[keep],
            "label_a": [SOURCES[int(s)] for s in labels[keep]],
        },
        schema=_POINT_SCHEMA,
    )


def _summarise(points: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    ratio = pl.col("ratio")
    return (
        points.group_by(by, maintain_order=True)
        .agg(
            n=pl.len(),
            ratio_min=ratio.min(),
            ratio_p10=ratio.quantile(0.1, interpolation="linear"),
            ratio_p50=ratio.median(),
            ratio_p90=ratio.quantile(0.9, interpolation="linear"),
            ratio_max=ratio.max(),
        )
        .sort(by)
    )


class PairError(ValueError):
    """A --pair naming a backend its directory does not time."""


def parse_pairs(values: list[str] | None) -> dict[str, str]:
    """--pair B=A options -> {B: A}, the pairs added to the defaults (checked against the tables by diff_tables)."""
    pairs: dict[str, str] = {}
    for value in values or []:
        b_name, sep, a_name = value.partition("=")
        if not sep or not b_name or not a_name:
            raise typer.BadParameter(f"--pair: expected B_BACKEND=A_BACKEND, got {value!r}")
        if pairs.get(b_name, a_name) != a_name:  # the last one won in silence
            raise typer.BadParameter(
                f"--pair: B backend {b_name!r} is paired twice ({b_name}={pairs[b_name]}, {value}); one A backend each"
            )
        pairs[b_name] = a_name
    return pairs


def diff_command(
    a: Annotated[Path, typer.Argument(help="reference calibration directory (e.g. calibration/h200)")],
    b: Annotated[Path, typer.Argument(help="directory compared with it (e.g. imported third-party tables)")],
    pair: Annotated[
        list[str] | None,
        typer.Option(help="backend of B=backend of A that time the same op (adds to the defaults)"),
    ] = None,
    interpolate: Annotated[
        bool, typer.Option(help="also compare B points inside A's grid, between its points")
    ] = False,
    op: Annotated[list[str] | None, typer.Option(help="only these ops")] = None,
    points: Annotated[
        Path | None, typer.Option(help="write every compared point to this Parquet file")
    ] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="text | json | tsv")] = "text",
) -> None:
    """Ratio time_B / time_A on the shapes both directories cover, per op and key."""
    from simperf.output_paths import check_output_file
    from simperf.perfdb.locate import check_table_files
    from simperf.report.tables import Col, TableData, check_output, print_tables

    if check_output(output):
        raise typer.BadParameter(check_output(output))
    for label, directory in (("A", a), ("B", b)):
        check_table_files(Path(directory), label)
    # a directory diffed with itself printed 1.00 on every key: tables that looked identical to another GPU's
    if Path(a).resolve() == Path(b).resolve():
        raise typer.BadParameter(f"{b} is also A; give the directory to compare with it", param_hint="B")
    if points is not None:
        _points_outside(points, a, b)  # names A or B, before check_output_file's calibration-directory rule
        check_output_file(points, "--points", suffixes=(".parquet",), what="Parquet")
    repeated = sorted({name for name in op or () if list(op).count(name) > 1})
    if repeated:  # compared once, as if given once: a typo for another op went unnoticed
        raise typer.BadParameter(f"{', '.join(repeated)}: given twice; give each op once", param_hint="--op")
    unknown = sorted(set(op or ()) - set(OP_SPECS))
    if unknown:  # --op GEMM: the allowed list was left for the user to spot the case in
        raise typer.BadParameter(_unknown_ops(unknown), param_hint="--op")
    try:
        result = diff_tables(a, b, None, interpolate, op, extra_pairs=parse_pairs(pair))
    except PairError as e:
        raise typer.BadParameter(str(e), param_hint="--pair") from None
    if result.points.height == 0:
        print(f"no shared shapes between {a} and {b}")
        raise typer.Exit(1)
    ratios = ("ratio_min", "ratio_p10", "ratio_p50", "ratio_p90", "ratio_max")
    columns = [
        Col("op", "op"),
        Col("key_a", "key (A)"),
        Col("backend_b", "backend (B)"),
        Col("n", "n", str, True),
    ]
    columns += [Col(c, c.removeprefix("ratio_"), lambda v: f"{v:.2f}", True) for c in ratios]
    table = TableData(f"time({b}) / time({a}) on shared shapes", columns)
    for row in result.summary.iter_rows(named=True):
        backend_b = row["key_b"].split(",")[0].removeprefix("backend=")
        table.add(
            op=row["op"], key_a=row["key_a"], backend_b=backend_b, n=row["n"], **{c: row[c] for c in ratios}
        )
    print_tables([table], output)
    disagreements = result.disagreements()
    if disagreements.height and output != "json":
        print(f"{disagreements.height} key(s) disagree by more than x{DISAGREE_FACTOR} at the median")
    if points is not None:
        result.points.write_parquet(points)


def _points_outside(points: Path, *directories: Path) -> None:
    """--points never lands in A or B: it would replace one of their tables, or be read as one from then on."""
    from simperf.errors import UserError

    for label, directory in zip("AB", directories, strict=True):
        if Path(points).absolute().parent.resolve() == Path(directory).resolve():
            raise UserError(
                f"--points {points}: inside calibration directory {label} ({directory}), where a *.parquet "
                "is one of its tables; write it somewhere else"
            )


def _unknown_ops(unknown: list[str]) -> str:
    """'got 'GEMM' (did you mean 'gemm'?); allowed values: ...', by the rule the scenario's values follow."""
    from simperf.spelling import did_you_mean, not_allowed

    allowed = list(OP_SPECS)
    if len(unknown) == 1:
        return not_allowed(unknown[0], allowed)
    given = [f"{u!r}{did_you_mean(u, allowed)}" for u in unknown]
    return f"got {', '.join(given)}; allowed values: {', '.join(allowed)}"
