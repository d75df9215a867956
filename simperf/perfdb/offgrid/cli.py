"""`simperf perfdb check DIR --offgrid RESULTS` (read, CPU) and `--offgrid-time RESULTS` (time, GPU)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from rich.console import Console
from rich.table import Table

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


def _print(console: Console, frame: pl.DataFrame, title: str) -> None:
    table = Table(*frame.columns, title=title)
    for row in frame.iter_rows():
        table.add_row(*[f"{v:.1%}" if isinstance(v, float) else str(v) for v in row])
    console.print(table)


def check_offgrid(
    directory: Path,
    results: Path,
    samples: Path = DEFAULT_SAMPLES,
    scaled_from: Path | None = None,
    console: Console | None = None,
) -> pl.DataFrame:
    """Print the off-grid error of the tables in `directory` on the timed samples; return the per-call rows."""
    console = console or Console()
    gpu = resolve_gpu(directory)
    results_gpu, pairs = timed_samples(samples, results)
    if results_gpu and results_gpu != gpu.key:
        raise ValueError(f"{results}: timed on {results_gpu}, but {directory} holds {gpu.key} tables")
    db = PerfDB.load(directory, gpu)
    errors = evaluate(pairs, db)
    missing = no_time_counts(samples, results)
    console.print(f"{len(pairs)} timed off-grid calls on {gpu.key}; without a time: {missing or 'none'}")
    for by, what in GROUPINGS:
        _print(console, summarize(errors, by), f"off-grid error, {what}")
    alternatives = ragged_decode_alternatives(pairs, db)
    _print(
        console,
        alternatives,
        "ragged decode calls: mean-KV pricing vs the split-KV work model (flashinfer MLA is priced with its work plan)",
    )
    if scaled_from is not None:
        ratios = read_ratios(directory, resolve_gpu(scaled_from).key)
        measured = scaled_from_errors(pairs, gpu.key, scaled_from, ratios)
        _print(console, summarize(measured), f"{gpu.key} from {scaled_from} (scaled_from, measured ratios)")
        roofline = scaled_from_errors(pairs, gpu.key, scaled_from, None)
        _print(console, summarize(roofline), f"{gpu.key} from {scaled_from} (scaled_from, roofline ratio)")
    return errors


def time_offgrid(results: Path, samples: Path = DEFAULT_SAMPLES, time_budget_s: float | None = None) -> int:
    """Time the samples on this GPU (resumable; see timing.py)."""
    from simperf.perfdb.offgrid.timing import time_samples

    return time_samples(samples, results, time_budget_s)
