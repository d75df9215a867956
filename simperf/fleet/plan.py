"""Capacity planning by simulating the fleet: the fewest replicas, under each router policy, that serve a target
rate within an SLA.

For each policy, the fleet is simulated at the target rate with n replicas of the scenario's one replica group,
n found by doubling until the SLA holds and then bisecting (assumes more replicas never hurt, which holds for
every policy here up to the noise of one routing decision; each answer is checked: n meets the SLA, n - 1 does
not or n is the lower bound). The winner is the policy needing the fewest GPUs, then the lowest p90 TTFT.
Unlike `simperf plan` on a sweep table, nothing is divided evenly: imbalance, cache affinity and bursts are in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from simperf.fleet.predict import FleetPrediction, predict_fleet
from simperf.scenario.models import Scenario, TraceDataset
from simperf.sweep.sla import METRICS, Sla

PLAN_POLICIES = ("round_robin", "power_of_two", "cache_aware")
# per-request attainment: which row column a bound on each metric is checked on
_PER_REQUEST = {"ttft": "ttft", "tpot": "tpot", "e2e": "latency", "itl": None}


class FleetPlanError(ValueError):
    """A fleet scenario that cannot be planned (the message says why and what to change)."""


@dataclass
class Trial:
    policy: str
    replicas: int
    gpus: int
    meets_sla: bool
    attainment: float  # share of requests within every per-request latency bound
    metrics: dict  # bench_serving's keys for the fleet
    prefix_hit_rate: float | None


@dataclass
class PolicyPlan:
    policy: str
    replicas: int | None  # fewest meeting the SLA; None when even `max_replicas` did not
    trials: list[Trial] = field(default_factory=list)

    @property
    def chosen(self) -> Trial | None:
        return next((t for t in self.trials if t.replicas == self.replicas), None)


@dataclass
class FleetPlan:
    target_rate: float
    sla: Sla
    policies: list[PolicyPlan]

    @property
    def winner(self) -> PolicyPlan | None:
        feasible = [p for p in self.policies if p.replicas is not None]
        if not feasible:
            return None
        return min(
            feasible, key=lambda p: (p.chosen.gpus, p.chosen.metrics.get("p90_ttft_ms", 0.0), p.policy)
        )


def at_rate(scenario: Scenario, rate: float) -> Scenario:
    """The scenario's workload offered at `rate` req/s (a trace keeps its shape and is re-timed)."""
    workload = scenario.workload
    dataset = workload.dataset
    if isinstance(dataset, TraceDataset) and dataset.use_timestamps:
        dataset = dataset.model_copy(update={"target_rate": rate, "time_scale": None})
        return scenario.model_copy(update={"workload": workload.model_copy(update={"dataset": dataset})})
    return scenario.model_copy(update={"workload": workload.model_copy(update={"request_rate": rate})})


def with_replicas(scenario: Scenario, policy: str, replicas: int) -> Scenario:
    fleet = scenario.fleet
    group = fleet.replicas[0].model_copy(update={"count": replicas})
    router = fleet.router.model_copy(update={"policy": policy})
    return scenario.model_copy(
        update={"fleet": fleet.model_copy(update={"replicas": [group], "router": router})}
    )


def check_plannable(scenario: Scenario) -> None:
    fleet = scenario.fleet
    if fleet is None:
        raise FleetPlanError("plan by simulation needs a scenario with a fleet: section (docs/fleet.md)")
    if fleet.is_pd or len(fleet.replicas or []) != 1:
        raise FleetPlanError(
            "fleet: planning varies the count of one replica group; give exactly one group under fleet.replicas"
        )
    if fleet.autoscale is not None:
        # each trial set the group's count and kept the schedule: the fleet ran at the schedule's counts whatever
        # count was tried (a schedule of 2 on a 1-server trial lost half the requests, and still "met" the SLA)
        raise FleetPlanError(
            "fleet.autoscale: planning tries replica counts itself (the group's count); a schedule would run "
            f"the fleet at its own counts ({', '.join(str(s.replicas) for s in fleet.autoscale.schedule)}) "
            "whatever count was tried; drop fleet.autoscale (fleet compare runs a schedule)"
        )


def attainment(prediction: FleetPrediction, sla: Sla) -> float:
    """Share of the requests whose own TTFT / TPOT / latency meets every bound's value (rejected ones do not)."""
    rows = prediction.rows
    total = len(prediction.assignment)
    if total == 0:
        return 0.0
    ok = np.ones(len(rows), dtype=bool)
    many = rows.output_len > 1
    per_metric = {
        "ttft": rows.ttft_s,
        "latency": rows.latency_s,
        "tpot": np.where(many, (rows.latency_s - rows.ttft_s) / np.maximum(rows.output_len - 1, 1), 0.0),
    }
    for bound in sla.bounds:
        column = _PER_REQUEST.get(bound.metric)
        if column is not None:
            ok &= per_metric[column] * 1000 <= bound.max_ms
    return float(ok.sum()) / total


def meets(prediction: FleetPrediction, sla: Sla) -> bool:
    if any(o.rejected for o in prediction.outcomes):
        return False
    for bound in sla.bounds:
        value = prediction.result.get(bound.column)
        if value is None or value != value or value > bound.max_ms:
            return False
    return True


def burst_note(plan: FleetPlan, scenario: Scenario) -> str | None:
    """A note when the planned rate was a burst, not a sustained load: the winner's requests all arrived within
    less than a request's median end-to-end latency (completed / rate), so no queue could build up and the plan
    holds for that burst only. Four prompts at 1e12 req/s planned one replica for 1e12 req/s without a word.
    Not for multi-turn workloads, whose later turns wait for the answers rather than the rate."""
    winner = plan.winner
    if winner is None or winner.chosen is None or scenario.workload.dataset.kind == "multi_turn":
        return None
    metrics = winner.chosen.metrics
    completed, e2e_ms = metrics.get("completed") or 0, metrics.get("median_e2e_latency_ms") or 0.0
    window_s = completed / plan.target_rate
    if window_s * 1e3 >= e2e_ms:
        return None
    return (
        f"the {completed:,} requests arrive within {window_s:.3g} s at {plan.target_rate:g} req/s, less than "
        f"a request's median end-to-end latency ({e2e_ms / 1e3:.3g} s): this plans one burst, not a sustained "
        "load at that rate; give more prompts (workload.num_prompts)"
    )


def plan_fleet(
    scenario: Scenario,
    target_rate: float,
    sla: Sla,
    policies: tuple[str, ...] = PLAN_POLICIES,
    max_replicas: int = 64,
    on_trial: Callable[[Trial], None] | None = None,
    memory_limit: float | None = None,
) -> FleetPlan:
    """memory_limit: bytes each trial's run may be estimated to need (predict_fleet's default when None)."""
    check_plannable(scenario)
    if target_rate <= 0:
        raise FleetPlanError(f"--rate: must be positive, got {target_rate}")
    if not sla.bounds:
        # a fleet meets "no bound" whenever it rejects nothing, and a queue only grows: every policy was planned at
        # 1 replica whatever the rate (1e9 req/s included)
        raise FleetPlanError(
            f"--sla: give at least one latency bound (METRIC.STAT <= VALUE, METRIC in {', '.join(METRICS)}, e.g. "
            "'ttft.p90 <= 2s'); without one a single replica serves any rate, its queue only growing"
        )
    offered = at_rate(scenario, target_rate)
    plans = []
    for policy in policies:
        trials: dict[int, Trial] = {}

        def trial(n: int, policy: str = policy, trials: dict[int, Trial] = trials) -> Trial:
            if n not in trials:
                prediction = predict_fleet(with_replicas(offered, policy, n), memory_limit=memory_limit)
                trials[n] = Trial(
                    policy, n, prediction.num_gpus, meets(prediction, sla), attainment(prediction, sla),
                    prediction.result, prediction.extra()["fleet"]["prefix_hit_rate"],
                )  # fmt: skip
                if on_trial is not None:
                    on_trial(trials[n])
            return trials[n]

        plans.append(PolicyPlan(policy, _fewest(trial, max_replicas), []))
        plans[-1].trials = [trials[n] for n in sorted(trials)]
    return FleetPlan(target_rate, sla, plans)


# doubling stops when this many doublings in a row raised the share of requests within the SLA by less than
# STALL_GAIN: more replicas do not help that policy (e.g. cache_aware sending a shared prefix to one replica)
STALL_DOUBLINGS = 2
STALL_GAIN = 0.005


def _fewest(trial: Callable[[int], Trial], max_replicas: int) -> int | None:
    """Smallest n in [1, max_replicas] meeting the SLA, by doubling then bisection; None when none does."""
    low, high = 0, 1  # low fails (0 replicas serve nothing), high is the candidate
    stalled = 0
    while not trial(high).meets_sla:
        if high >= max_replicas:
            return None
        if low and trial(high).attainment - trial(low).attainment < STALL_GAIN:
            stalled += 1
            if stalled >= STALL_DOUBLINGS:
                return None
        else:
            stalled = 0
        low, high = high, min(2 * high, max_replicas)
    while high - low > 1:
        mid = (low + high) // 2
        if trial(mid).meets_sla:
            high = mid
        else:
            low = mid
    return high
