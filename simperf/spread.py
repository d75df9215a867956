"""How far a prediction moves when the host-side timing it takes as fixed moves as much as we measured it move.

simperf prices one request path and one host CPU speed per scenario. On real servers both vary, and some loads turn
small differences into large ones:
- a closed loop whose extends launch eagerly meets sub-millisecond races between a request reaching the scheduler
  and the scheduler's next look: the same load on the same server gave a median TTFT of 112.6 and 122.4 ms with one
  seed and 77.6 ms with another (groundtruth/experiments/first-wave-h200), and simperf's prediction of it jumps from
  ~76 to ~125 ms for both seeds when its request path grows from 5.0 to 5.5 ms (docs/overheads.md "One-time
  compiles");
- a server near saturation turns a few percent more work into much more queueing.

`simperf predict --spread` re-runs the scenario with each timing below moved both ways and reports, per metric,
the lowest and highest value next to the prediction. The moves are what we measured, not fitted:
- the request path (`overheads.ingress_us`, client send -> the scheduler's queue) +-SPREAD_INGRESS_US: on our
  servers its concurrency-1 median ran from 2.5 to 5.5 ms across servers of one GPU kind and host, and a single
  server's requests 0.88-1.16x its median (p10-p90; the corpus' c1 runs, docs/overheads.md "One-time compiles");
- the host CPU speed (`hardware.host_speed`) +-SPREAD_HOST_SPEED: a lent H200 host ran a fixed piece of Python work
  1.3x its median or slower 20% of the time (docs/overheads.md "Slow launches").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from simperf.scenario.models import Scenario

SPREAD_INGRESS_US = 1000.0
SPREAD_HOST_SPEED = 0.1
# the metrics the spread reports (bench_serving's keys)
SPREAD_METRICS = (
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "median_itl_ms",
    "median_e2e_latency_ms",
    "output_throughput",
)
# a metric whose range reaches this far from the prediction on either side is flagged as sensitive
SENSITIVE_SHARE = 0.2


@dataclass(frozen=True)
class Variant:
    name: str  # what moved, as the report prints it
    scenario: Scenario


@dataclass
class MetricSpread:
    predicted: float
    by_variant: dict[str, float] = field(default_factory=dict)

    @property
    def low(self) -> float:
        return min([self.predicted, *self.by_variant.values()])

    @property
    def high(self) -> float:
        return max([self.predicted, *self.by_variant.values()])

    @property
    def sensitive(self) -> bool:
        if self.predicted <= 0:
            return False
        reach = max(self.high / self.predicted - 1, 1 - self.low / self.predicted)
        return reach >= SENSITIVE_SHARE - 1e-9  # 120 / 100 - 1 is 0.19999999999999996 in floats


def variants(scenario: Scenario) -> list[Variant]:
    """The scenario with each measured timing moved down and up (module docstring). The request path is moved as
    the host runs it (Scenario.host_overheads), and given explicitly, so the host-speed variants leave it alone."""
    ingress_us = scenario.host_overheads.ingress_us
    speed = scenario.hardware.resolved_host_speed
    out = []
    for sign, word in ((-1, "shorter"), (1, "longer")):
        moved = max(ingress_us + sign * SPREAD_INGRESS_US, 0.0)
        overheads = scenario.overheads.model_copy(update={"ingress_us": moved})
        # model_copy counts the field as set: given in the scenario, so on_host takes it as it is
        out.append(
            Variant(
                f"request path {SPREAD_INGRESS_US / 1e3:g} ms {word} ({moved / 1e3:.2f} ms)",
                scenario.model_copy(update={"overheads": overheads}),
            )
        )
    for factor in (1 - SPREAD_HOST_SPEED, 1 + SPREAD_HOST_SPEED):
        hardware = scenario.hardware.model_copy(update={"host_speed": speed * factor})
        out.append(
            Variant(
                f"host CPU {'slower' if factor < 1 else 'faster'} (host_speed {speed * factor:.3g})",
                scenario.model_copy(update={"hardware": hardware}),
            )
        )
    return out


def spread(
    scenario: Scenario,
    result: dict,
    predict: Callable[[Scenario], dict],
    on_variant: Callable[[str], None] | None = None,
) -> dict[str, MetricSpread]:
    """Each SPREAD_METRICS metric of `result` (the scenario's prediction) with its value under every variant;
    `predict` maps a scenario to its bench_serving-style result."""
    out = {name: MetricSpread(float(result[name])) for name in SPREAD_METRICS if name in result}
    for variant in variants(scenario):
        if on_variant is not None:
            on_variant(variant.name)
        moved = predict(variant.scenario)
        for name, metric in out.items():
            metric.by_variant[variant.name] = float(moved[name])
    return out


def spread_json(metrics: dict[str, MetricSpread]) -> dict:
    return {
        name: {
            "predicted": m.predicted,
            "low": m.low,
            "high": m.high,
            "sensitive": m.sensitive,
            **m.by_variant,
        }
        for name, m in metrics.items()
    }


def spread_lines(metrics: dict[str, MetricSpread]) -> list[str]:
    """The text report: one line per metric, then which variants were run."""
    lines = []
    for name, m in metrics.items():
        flag = "  SENSITIVE" if m.sensitive else ""
        lines.append(f"{name:<24} {m.predicted:>10.2f}   [{m.low:.2f} .. {m.high:.2f}]{flag}")
    if any(m.sensitive for m in metrics.values()):
        lines.append(
            f"SENSITIVE: moves {SENSITIVE_SHARE:.0%} or more when the request path moves "
            f"{SPREAD_INGRESS_US / 1e3:g} ms or the host CPU {SPREAD_HOST_SPEED:.0%}, as they vary between real "
            "servers: read the range, not the single value (docs/spread.md)"
        )
    variants_run = next(iter(metrics.values())).by_variant if metrics else {}
    lines.append("variants: " + "; ".join(variants_run))
    return lines
