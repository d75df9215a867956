"""The off-grid files: the sample set (written once, before any timing) and a GPU's results (appended while
timing). Plain JSON lines, readable without numpy or polars (the GPU host reads the set)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simperf.jsonl import json_object_lines, read_journal_lines

SET_FORMAT = "simperf-offgrid-samples/1"
RESULT_FORMAT = "simperf-offgrid-results/1"
# what every reader of a sample takes from it (report.evaluate, timing, recheck)
_SAMPLE_KEYS = ("id", "category", "ragged", "model", "note", "point")


def results_name(samples: str, gpu: str) -> str:
    """Where a set's times go under calibration/offgrid/, by the set's file stem: samples -> h200-results.jsonl
    (the development set), samples-seed20261126 -> h200-results-seed20261126.jsonl, straggler-dev ->
    straggler-dev-h200-results.jsonl."""
    if samples == "samples":
        return f"{gpu}-results.jsonl"
    if samples.startswith("samples-"):
        return f"{gpu}-results-{samples.removeprefix('samples-')}.jsonl"
    return f"{samples}-{gpu}-results.jsonl"


def write_samples(path: Path, header: dict[str, Any], samples: list[dict[str, Any]]) -> None:
    """A header line (format, seed, counts), then one sample per line; never over an existing file."""
    path = Path(path)
    if path.exists():
        raise FileExistsError(
            f"{path} exists: an off-grid set is written once, before any result (delete it first)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"format": SET_FORMAT, **header})]
    lines += [json.dumps(s, separators=(",", ":")) for s in samples]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_samples(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, samples) of a set written by write_samples; a one-line error for anything else."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        first = next((line for line in lines if line.strip()), "")
        header = json.loads(first) if first else {}
    except (UnicodeDecodeError, json.JSONDecodeError):  # a Parquet table, a binary file: name the file
        header = None
    if not isinstance(header, dict) or header.get("format") != SET_FORMAT:
        raise ValueError(f"{path}: not an off-grid sample set (line 1 must carry format {SET_FORMAT!r})")
    samples: list[dict[str, Any]] = []
    lines_of: dict[int, int] = {}
    for line_no, sample in list(json_object_lines(lines, path, ValueError))[1:]:
        _checked_sample(sample, f"{path}:{line_no}")
        if sample["id"] in lines_of:  # both were paired with the id's one result, and scored twice
            raise ValueError(f"{path}:{line_no}: id {sample['id']} is also line {lines_of[sample['id']]}'s")
        lines_of[sample["id"]] = line_no
        samples.append(sample)
    return header, samples


def _checked_sample(sample: dict[str, Any], where: str) -> None:
    # an edited set failed as "error: id" (a KeyError), as an internal error, or as a bare JSON message naming no
    # file; the readers take these keys of every sample (report.evaluate, timing, recheck)
    sample_id = sample.get("id")
    if isinstance(sample_id, bool) or not isinstance(sample_id, int):
        raise ValueError(f"{where}: id must be an integer, got {sample_id!r}")
    missing = [key for key in _SAMPLE_KEYS if key not in sample]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)}")
    if not isinstance(sample["point"], dict) or "op" not in sample["point"]:
        raise ValueError(f"{where}: point must be a mapping naming the kernel call's op")


def read_results(path: Path) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    """(header, result by sample id) of a results file; the last row of an id wins (a retried sample)."""
    try:
        rows = read_journal_lines(Path(path))
    except UnicodeDecodeError:  # a Parquet table, a binary file: name the file
        rows = []
    if not rows or not isinstance(rows[0], dict) or rows[0].get("format") != RESULT_FORMAT:
        raise ValueError(f"{path}: not an off-grid results file (line 1 must carry format {RESULT_FORMAT!r})")
    for row in rows[1:]:  # int("abc") failed as "invalid literal for int()", naming no file
        if "id" in row and (isinstance(row["id"], bool) or not isinstance(row["id"], int)):
            raise ValueError(f"{path}: a result's id must be an integer sample id, got {row['id']!r}")
    return rows[0], {r["id"]: r for r in rows[1:] if "id" in r}
