"""`simperf perfdb check DIR --offgrid RESULTS` (read, CPU) and `--offgrid-time RESULTS` (time, GPU)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from simperf.perfdb.check import resolve_gpu
from simperf.perfdb.db import PerfDB
from simperf.perfdb.offgrid.report import (
    evaluate,
    no_time_counts,
    ragged_decode_alternatives,
    scaled_from_errors,
    summarize,
    timed_samples,
)
from simperf.perfdb.ratios import read_ratios

DEFAULT_SAMPLES = Path(__file__).resolve().parents[3] / "calibration" / "offgrid" / "samples.jsonl"
GROUPINGS = (
    (("family",), "per op family"),
    (("family", "backend"), "per op family and backend"),
    (("backing",), "by what covered the key (measured: its own table; scaled-key: another key's)"),
    (("family", "ragged"), "uniform and ragged calls"),
)


@dataclass
class OffgridReport:
    """What `perfdb check --offgrid` shows: a one-line header, the summary tables (name, title, frame), and the
    per-call errors they summarise."""

    header: str
    tables: list[tuple[str, str, pl.DataFrame]]
    errors: pl.DataFrame


def check_offgrid(
    directory: Path,
    results: Path,
    samples: Path = DEFAULT_SAMPLES,
    scaled_from: Path | None = None,
) -> OffgridReport:
    """The off-grid error of the tables in `directory` on the timed samples, per grouping."""
    gpu = resolve_gpu(directory)
    results_gpu, pairs = timed_samples(samples, results)
    if results_gpu and results_gpu != gpu.key:
        raise ValueError(f"{results}: timed on {results_gpu}, but {directory} holds {gpu.key} tables")
    db = PerfDB.load(directory, gpu)
    errors = evaluate(pairs, db)
    missing = no_time_counts(samples, results)
    header = f"{len(pairs)} timed off-grid calls on {gpu.key}; without a time: {missing or 'none'}"
    tables = [("_".join(by), f"off-grid error, {what}", summarize(errors, by)) for by, what in GROUPINGS]
    tables.append(
        (
            "ragged_decode",
            "ragged decode calls: mean-KV pricing vs the split-KV work model (flashinfer MLA is priced with its "
            "work plan)",
            ragged_decode_alternatives(pairs, db),
        )
    )
    if scaled_from is not None:
        ratios = read_ratios(directory, resolve_gpu(scaled_from).key)
        measured = scaled_from_errors(pairs, gpu.key, scaled_from, ratios)
        tables.append(
            (
                "scaled_from",
                f"{gpu.key} from {scaled_from} (scaled_from, measured ratios)",
                summarize(measured),
            )
        )
        roofline = scaled_from_errors(pairs, gpu.key, scaled_from, None)
        tables.append(
            (
                "scaled_from_roofline",
                f"{gpu.key} from {scaled_from} (scaled_from, roofline ratio)",
                summarize(roofline),
            )
        )
    return OffgridReport(header, tables, errors)


def time_offgrid(results: Path, samples: Path = DEFAULT_SAMPLES, time_budget_s: float | None = None) -> int:
    """Time the samples on this GPU (resumable; see timing.py)."""
    from simperf.perfdb.offgrid.timing import time_samples

    return time_samples(samples, results, time_budget_s)
