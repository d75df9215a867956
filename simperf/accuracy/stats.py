"""Error statistics: absolute percentage error per row, summarised per metric and per source."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

# The targets for H100/H200 rows: median APE per metric family.
TARGETS: dict[str, float] = {"tpot": 0.10, "output_throughput": 0.10, "ttft": 0.20}


def ape(predicted: float, measured: float) -> float:
    """|predicted - measured| / |measured| (a fraction; 0.1 = 10%)."""
    if measured == 0:
        raise ValueError("absolute percentage error of a measured value of 0 is undefined")
    return abs(predicted - measured) / abs(measured)


def signed_error(predicted: float, measured: float) -> float:
    return (predicted - measured) / abs(measured)


def target_family(metric: str) -> str | None:
    """The target family of a publisher metric name: ttft_* -> ttft, tpot_* -> tpot, output_throughput* ->
    output_throughput; None for metrics without a target."""
    if metric.startswith("output_throughput"):
        return "output_throughput"
    family = metric.split("_", 1)[0]
    return family if family in TARGETS else None


def target_for(metric: str) -> float | None:
    """The target median APE for a publisher metric name (by its family)."""
    family = target_family(metric)
    return None if family is None else TARGETS[family]


@dataclass(frozen=True)
class Summary:
    group: str
    n: int
    median_ape: float
    p90_ape: float
    mean_ape: float
    median_signed: float  # the median's sign says whether predictions run high (+) or low (-)
    target: float | None = None

    @property
    def meets_target(self) -> bool | None:
        return None if self.target is None else self.median_ape <= self.target

    def as_dict(self) -> dict:
        return {
            "group": self.group,
            "n": self.n,
            "median_ape": self.median_ape,
            "p90_ape": self.p90_ape,
            "mean_ape": self.mean_ape,
            "median_signed_error": self.median_signed,
            "target_median_ape": self.target,
            "meets_target": self.meets_target,
        }


def summarize_errors(
    items: Iterable[tuple[str, float, float]], target: Callable[[str], float | None] | None = None
) -> list[Summary]:
    """(group, predicted, measured) triples -> one Summary per group, in first-seen order.

    p90 is NumPy's linear-interpolated percentile, as bench_serving computes its own percentiles.
    """
    groups: dict[str, list[tuple[float, float]]] = {}
    for group, predicted, measured in items:
        groups.setdefault(group, []).append((predicted, measured))
    out = []
    for group, pairs in groups.items():
        errors = np.array([ape(p, m) for p, m in pairs])
        signed = np.array([signed_error(p, m) for p, m in pairs])
        out.append(
            Summary(
                group=group,
                n=len(pairs),
                median_ape=float(np.median(errors)),
                p90_ape=float(np.percentile(errors, 90)),
                mean_ape=float(np.mean(errors)),
                median_signed=float(np.median(signed)),
                target=target(group) if target else None,
            )
        )
    return out
