"""Measured time ratios between two GPUs, per op family and regime, for the scaled-from fallback (scaled.py).

Scaling a reference GPU's time by the ratio of the two rooflines assumes every kernel runs at the same fraction of
its roofline on both GPUs. Measured on the H100 and H200 tables' common grid points, it does not: a kernel near the
H200's bandwidth roofline is 1.33-1.42x slower on the H100 (the copy-bandwidth ratio), one far from it (latency,
launch, tail) 0.98-1.03x, and the roofline ratio (1.24-1.43 for memory-bound kernels) scaled the latter by far too
much (issue 19: H100-from-H200 predictions were biased +11%).

The regime of a point is read on the reference GPU alone: the op family (check.op_family), whether the reference's
roofline is memory- or compute-bound there, and the reference's efficiency there, roofline / measured time,
in buckets (EFFICIENCY_EDGES). Each cell holds the median measured ratio target / reference of the common points
that fall in it. A query takes its cell's median; a cell with fewer than MIN_POINTS points takes the nearest
bucket of its family and bound that has enough; a family with none keeps the roofline ratio (labelled so).

    python -m simperf.perfdb.ratios calibration/h100 calibration/h200      # writes calibration/h100/scaled_ratios.yaml
"""

from __future__ import annotations

import argparse
import bisect
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import yaml

from simperf.hardware.catalog import GpuSpec
from simperf.perfdb.roofline import COLLECTIVE_OPS, Roofline
from simperf.perfdb.schema import OP_SPECS, op_family
from simperf.strictyaml import safe_load

RATIOS_FILE = "scaled_ratios.yaml"
FORMAT = "simperf-scaled-ratios/1"
EFFICIENCY_EDGES = (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
MIN_POINTS = 5


@dataclass(frozen=True)
class Cell:
    median: float
    points: int
    p10: float
    p90: float


@dataclass
class RatioTable:
    """target / reference time ratios by (family, bound, efficiency bucket)."""

    target: str
    reference: str
    cells: dict[tuple[str, str, int], Cell] = field(default_factory=dict)
    edges: tuple[float, ...] = EFFICIENCY_EDGES
    provenance: str = ""

    def bucket(self, efficiency: float) -> int:
        return bisect.bisect_right(self.edges, efficiency)

    def lookup(self, family: str, bound: str, efficiency: float) -> tuple[Cell, int] | None:
        """The cell for this regime (the nearest populated bucket of the family and bound), and its bucket."""
        wanted = self.bucket(efficiency)
        usable = [
            b for (f, d, b), c in self.cells.items() if f == family and d == bound and c.points >= MIN_POINTS
        ]
        if not usable:
            return None
        chosen = min(usable, key=lambda b: (abs(b - wanted), b))
        return self.cells[(family, bound, chosen)], chosen

    def describe_bucket(self, bucket: int) -> str:
        lo = self.edges[bucket - 1] if bucket > 0 else 0.0
        hi = self.edges[bucket] if bucket < len(self.edges) else None
        return f"efficiency {lo:g}-{hi:g}" if hi is not None else f"efficiency >= {lo:g}"

    def to_yaml(self) -> str:
        cells = [
            {"family": f, "bound": d, "bucket": b, "efficiency": self.describe_bucket(b), "median": round(c.median, 4),
             "points": c.points, "p10": round(c.p10, 4), "p90": round(c.p90, 4)}
            for (f, d, b), c in sorted(self.cells.items())
        ]  # fmt: skip
        data = {"format": FORMAT, "target": self.target, "reference": self.reference, "edges": list(self.edges),
                "provenance": self.provenance, "cells": cells}  # fmt: skip
        return yaml.safe_dump(data, sort_keys=False, width=120)

    @classmethod
    def from_yaml(cls, path: Path) -> RatioTable:
        """The file `to_yaml` writes; anything else is a one-line error naming the file and the field."""
        try:
            data = safe_load(Path(path).read_text(encoding="utf-8")) or {}  # simperf's: no key given twice
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a measured-ratio file (expected format {FORMAT!r})")
        try:
            cells = _cells(data["cells"])
            edges = tuple(float(e) for e in data["edges"])
            return cls(str(data["target"]), str(data["reference"]), cells, edges, data.get("provenance", ""))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: malformed measured-ratio file ({type(exc).__name__}: {exc})") from None


def _cells(entries: list[dict]) -> dict[tuple[str, str, int], Cell]:
    """The `cells` list by (family, bound, bucket); a cell listed twice kept its last ratios without a word."""
    cells: dict[tuple[str, str, int], Cell] = {}
    for entry in entries:
        key, cell = _cell(entry)
        if key in cells:
            raise ValueError(f"cell {key[0]}/{key[1]}/{key[2]} is listed twice; give each cell once")
        cells[key] = cell
    return cells


def _cell(c: dict) -> tuple[tuple[str, str, int], Cell]:
    """One `cells` entry; the ratios must be positive finite numbers (a NaN one would price every op it covers)."""
    ratios = [float(c[name]) for name in ("median", "p10", "p90")]
    if not all(np.isfinite(r) and r > 0 for r in ratios):
        raise ValueError(
            f"cell {c['family']}/{c['bound']}/{c['bucket']}: ratios must be positive, got {ratios}"
        )
    return (str(c["family"]), str(c["bound"]), int(c["bucket"])), Cell(
        ratios[0], int(c["points"]), *ratios[1:]
    )


def read_ratios(directory: Path | None, reference: str) -> RatioTable | None:
    """The directory's measured ratios against `reference`, if it has a file for that pair."""
    if directory is None or not (Path(directory) / RATIOS_FILE).is_file():
        return None
    table = RatioTable.from_yaml(Path(directory) / RATIOS_FILE)
    return table if table.reference == reference else None


# ---- measuring the ratios from two GPUs' tables ----------------------------------------------------------------

_IDENTITY = ("op", "backend", "dtype", "kv_dtype", "routing", "variant", "batch", "q_len", "kv_len", "num_heads",
             "num_kv_heads", "head_dim", "head_dim_v", "page_size", "m", "n", "k", "num_experts",
             "experts_per_rank", "topk", "group_size", "message_bytes")  # fmt: skip


def _measured_rows(directory: Path) -> pl.DataFrame:
    frames = []
    for path in sorted(Path(directory).glob("*.parquet")):
        rows = pl.read_parquet(path)
        usable = (
            (pl.col("status") == "ok")
            & (pl.col("sample").is_null() | (pl.col("sample") == "grid"))
            & ~pl.col("source").fill_null("measured").str.starts_with("third-party")
            & (pl.col("time_us") > 0)
        )
        columns = [c for c in _IDENTITY if c in rows.columns] + ["time_us"]
        frames.append(rows.filter(usable).select(columns))
    frame = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
    return frame.group_by([c for c in _IDENTITY if c in frame.columns]).agg(pl.col("time_us").median())


def common_points(target_dir: Path, reference_dir: Path) -> pl.DataFrame:
    """Grid points measured (not imported) on both GPUs: identity columns, time_us, time_us_ref."""
    a, b = _measured_rows(target_dir), _measured_rows(reference_dir)
    on = [c for c in _IDENTITY if c in a.columns and c in b.columns]
    return a.join(b, on=on, nulls_equal=True, suffix="_ref")


def regimes(points: pl.DataFrame, reference: GpuSpec) -> pl.DataFrame:
    """family, bound (memory | compute) and efficiency (reference roofline / reference time) of each point."""
    family, bound, efficiency = [], [], []
    for row in points.iter_rows(named=True):
        op = row["op"]
        spec = OP_SPECS[op]
        roofline = Roofline(op, {c: row[c] for c in spec.key_columns}, reference)
        axes = {a: float(row[a]) for a in spec.axis_columns}
        family.append(op_family(op))
        bound.append("memory" if bool(roofline.memory_bound(axes)) else "compute")
        efficiency.append(roofline.time_us_scalar(axes) / row["time_us_ref"])
    return points.with_columns(
        family=pl.Series(family), bound=pl.Series(bound), efficiency=pl.Series(efficiency)
    )


def measure_ratios(target_dir: Path, reference_dir: Path) -> RatioTable:
    from simperf.perfdb.check import resolve_gpu  # check imports the database, which imports this module

    target, reference = resolve_gpu(target_dir), resolve_gpu(reference_dir)
    points = common_points(target_dir, reference_dir).filter(~pl.col("op").is_in(list(COLLECTIVE_OPS)))
    points = regimes(points, reference).with_columns(ratio=pl.col("time_us") / pl.col("time_us_ref"))
    table = RatioTable(target.key, reference.key)
    bucket = pl.col("efficiency").map_elements(table.bucket, return_dtype=pl.Int64)
    grouped = (
        points.with_columns(bucket=bucket)
        .group_by("family", "bound", "bucket")
        .agg(
            median=pl.col("ratio").median(),
            points=pl.len(),
            p10=pl.col("ratio").quantile(0.1, interpolation="linear"),
            p90=pl.col("ratio").quantile(0.9, interpolation="linear"),
        )
    )
    for f, d, b, median, n, p10, p90 in grouped.iter_rows():
        table.cells[(f, d, int(b))] = Cell(float(median), int(n), float(p10), float(p90))
    table.provenance = (
        f"{points.height} grid points measured on both {target_dir} and {reference_dir} "
        f"(python -m simperf.perfdb.ratios {target_dir} {reference_dir})"
    )
    return table


def ratio_for(
    table: RatioTable, op: str, bound: np.ndarray, efficiency: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per point: the measured ratio and whether one applied (False: no cell for the family and bound)."""
    family = op_family(op)
    out = np.ones(np.shape(efficiency))
    found = np.zeros(np.shape(efficiency), dtype=bool)
    for i, (mem, eff) in enumerate(zip(np.ravel(bound), np.ravel(efficiency), strict=True)):
        hit = table.lookup(family, "memory" if mem else "compute", float(eff))
        if hit is not None:
            out.flat[i], found.flat[i] = hit[0].median, True
    return out, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simperf.perfdb.ratios", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("target", type=Path, help="calibration directory of the GPU to predict")
    parser.add_argument("reference", type=Path, help="calibration directory it is predicted from")
    parser.add_argument("--out", type=Path, help=f"default: TARGET/{RATIOS_FILE}")
    args = parser.parse_args(argv)
    table = measure_ratios(args.target, args.reference)
    out = args.out or args.target / RATIOS_FILE
    out.write_text(table.to_yaml(), encoding="utf-8")
    print(f"{out}: {len(table.cells)} cells from {table.provenance}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
