"""Pareto fronts of a sweep: points that no other point beats on both axes (both maximised)."""

from __future__ import annotations

import numpy as np
import polars as pl

THROUGHPUT_PER_GPU = "output_throughput_per_gpu"
SPEED_PER_USER = "tokens_per_s_per_user"


def pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """True where no other point has x' >= x and y' >= y with one of them strictly greater.

    Exact duplicates do not dominate each other, so both stay on the front. NaN points are never on it.
    O(n log n): walk x from high to low; a point is on the front iff its y is the best among equal x and beats
    every y seen at strictly larger x.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    mask = np.zeros(x.size, dtype=bool)
    valid = np.flatnonzero(~(np.isnan(x) | np.isnan(y)))
    if valid.size == 0:
        return mask
    order = valid[np.lexsort((-y[valid], -x[valid]))]
    best_y = -np.inf
    i = 0
    while i < order.size:
        j = i
        while j < order.size and x[order[j]] == x[order[i]]:
            j += 1
        group = order[i:j]
        top = y[group[0]]  # sorted by y descending within equal x
        if top > best_y:
            mask[group[y[group] == top]] = True
            best_y = top
        i = j
    return mask


def pareto_front(table: pl.DataFrame, x: str = SPEED_PER_USER, y: str = THROUGHPUT_PER_GPU) -> pl.DataFrame:
    """The rows of `table` on the front of (x, y), sorted by x: rows that ran, NaN metrics excluded."""
    ran = table.filter(pl.col("status") == "ok") if "status" in table.columns else table
    if ran.height == 0:
        return ran
    mask = pareto_mask(ran[x].to_numpy(), ran[y].to_numpy())
    return ran.filter(pl.Series(mask)).sort(x)
