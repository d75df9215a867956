"""Latency service-level objectives: parsing `ttft.p90 <= 2s` and checking rows of a sweep table against them."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import polars as pl

METRICS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e": "e2e_latency"}
STATS = {"mean": "mean", "median": "median", "p50": "median", "p90": "p90", "p95": "p95", "p99": "p99"}
_UNITS = {"ms": 1.0, "s": 1000.0, "": 1.0}
_PATTERN = re.compile(
    r"^\s*(?P<metric>[a-z0-9]+)\s*[._:\s]\s*(?P<stat>[a-z0-9]+)\s*<=?\s*(?P<value>[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(?P<unit>ms|s)?\s*$",
    re.IGNORECASE,
)


class SlaError(ValueError):
    """An SLA bound that cannot be parsed; the message shows the accepted form."""


@dataclass(frozen=True)
class LatencyBound:
    """`stat` of `metric` must not exceed `max_ms` (bench_serving's column `<stat>_<metric>_ms`)."""

    metric: str  # ttft | tpot | itl | e2e
    stat: str  # mean | median | p90 | p95 | p99
    max_ms: float

    @property
    def column(self) -> str:
        return f"{STATS[self.stat]}_{METRICS[self.metric]}_ms"

    def __str__(self) -> str:
        return f"{self.metric}.{self.stat} <= {self.max_ms:g} ms"


@dataclass(frozen=True)
class Sla:
    bounds: tuple[LatencyBound, ...]

    def __str__(self) -> str:
        return ", ".join(str(b) for b in self.bounds) if self.bounds else "no latency bound"

    def passes(self) -> pl.Expr:
        """True where a row ran, lost no request and meets every bound (NaN latencies fail)."""
        expr = (pl.col("status") == "ok") & (pl.col("failed_requests") == 0)
        for b in self.bounds:
            expr = expr & pl.col(b.column).is_not_nan() & (pl.col(b.column) <= b.max_ms)
        return expr

    def columns(self) -> list[str]:
        return ["status", "failed_requests", *(b.column for b in self.bounds)]

    def filter(self, table: pl.DataFrame) -> pl.DataFrame:
        """Rows meeting the SLA; none when no row ran (then the metric columns do not exist)."""
        if any(c not in table.columns for c in self.columns()):
            return table.clear()
        return table.filter(self.passes())

    def passing_ids(self, table: pl.DataFrame) -> set[str]:
        return set(self.filter(table)["point_id"].to_list())


def parse_bound(text: str) -> LatencyBound:
    """`ttft.p90 <= 2s`, `tpot:p90<=50ms`, `e2e_p99<=30s` (no unit means ms)."""
    m = _PATTERN.match(text)
    allowed = (
        f"write METRIC.STAT <= VALUE[ms|s] with METRIC in {', '.join(METRICS)} "
        f"and STAT in {', '.join(STATS)}, e.g. 'ttft.p90 <= 2s'"
    )
    if not m:
        raise SlaError(f"{text!r}: {allowed}")
    metric, stat = m["metric"].lower(), m["stat"].lower()
    if metric not in METRICS:
        raise SlaError(f"{text!r}: unknown metric {metric!r}; {allowed}")
    if stat not in STATS:
        raise SlaError(f"{text!r}: unknown statistic {stat!r}; {allowed}")
    value_ms = float(m["value"]) * _UNITS[(m["unit"] or "").lower()]
    if value_ms <= 0:
        raise SlaError(f"{text!r}: the bound must be positive")
    if not math.isfinite(value_ms):  # 1e400 read as inf: a bound every point met, so no bound at all
        raise SlaError(f"{text!r}: the bound must be a finite number of ms or s")
    return LatencyBound(metric, stat, value_ms)


def parse_sla(texts: list[str] | tuple[str, ...]) -> Sla:
    """The bounds, each statistic bounded once: two bounds on one (2 s, then 1 s) were both applied, so the tighter
    one decided without a word about the other."""
    bounds = tuple(parse_bound(t) for t in texts)
    seen: dict[str, str] = {}
    for text, bound in zip(texts, bounds, strict=True):
        key = f"{bound.metric}.{STATS[bound.stat]}"
        if key in seen:
            raise SlaError(
                f"{text!r}: {key} is already bounded by {seen[key]!r}; give one bound per statistic"
            )
        seen[key] = text
    return Sla(bounds)
