"""Measured time ratios on a full two-axis grid, read from a calibration directory's JSON-lines file (or borrowed
from another Hopper GPU's): what prefix_path.py and spec_verify.py share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import numpy as np

from simperf.jsonl import json_object_lines

T = TypeVar("T")


def bilinear(xs: np.ndarray, ys: np.ndarray, grid: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    i = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, len(xs) - 2)
    j = np.clip(np.searchsorted(ys, y, side="right") - 1, 0, len(ys) - 2)
    tx = (x - xs[i]) / (xs[i + 1] - xs[i])
    ty = (y - ys[j]) / (ys[j + 1] - ys[j])
    low = grid[i, j] * (1 - tx) + grid[i + 1, j] * tx
    high = grid[i, j + 1] * (1 - tx) + grid[i + 1, j + 1] * tx
    return low * (1 - ty) + high * ty


def full_grid(
    points: Mapping[tuple[int, int], float], what: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log2 x values, log2 y values, ratio[x, y]) of points measured at every x and y; ValueError naming `what`
    when one is missing or an axis has fewer than two values (no interpolation is possible then)."""
    xs = sorted({x for x, _ in points})
    ys = sorted({y for _, y in points})
    if any((x, y) not in points for x in xs for y in ys) or len(xs) < 2 or len(ys) < 2:
        raise ValueError(f"{what} is not a full grid")
    grid = np.array([[points[(x, y)] for y in ys] for x in xs])
    return np.log2(xs), np.log2(ys), grid


def own_or_borrowed(
    directory: Path | None, sm_major: int, file: str, borrow_from: str
) -> tuple[Path, str] | None:
    """The directory's own `file` labelled measured, else (a Hopper GPU without one) `borrow_from`'s, labelled an
    estimate: the sibling directory's where there is one (a calibration tree like the shipped one), else the
    shipped one (a user's own tables elsewhere, measured without this ratio); None when neither applies."""
    if directory is None:
        return None
    own = Path(directory) / file
    if own.is_file():
        return own, f"measured ({own.parent.name})"
    if sm_major != 9:
        return None
    import simperf

    shipped = Path(simperf.__file__).resolve().parent.parent / "calibration" / borrow_from / file
    for borrowed in (Path(directory).parent / borrow_from / file, shipped):
        if borrowed.is_file() and borrowed.parent.resolve() != Path(directory).resolve():
            return (
                borrowed,
                f"measured on {borrow_from} ({borrowed}), used for {Path(directory).name} (estimate)",
            )
    return None


def read_own_or_borrowed(
    directory: Path | None,
    sm_major: int,
    file: str,
    borrow_from: str,
    build: Callable[[list[dict], str], T],
) -> T | None:
    """`build(records, provenance)` from the JSON records of the file own_or_borrowed finds (None where it finds
    none); ValueError naming the file and line of a record that is not a JSON object, or the file and what `build`
    refused (a missing field included)."""
    found = own_or_borrowed(directory, sm_major, file, borrow_from)
    if found is None:
        return None
    path, provenance = found
    lines = path.read_text(encoding="utf-8").splitlines()
    records = [obj for _, obj in json_object_lines(lines, str(path), ValueError, "not a JSON record")]
    try:
        return build(records, provenance)
    except KeyError as exc:
        raise ValueError(f"{path}: a record has no field {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
