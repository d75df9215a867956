"""What-if sweeps over scenario fields, Pareto fronts, SLA filters and capacity planning (docs/sweeps.md).

Sits above the pipeline: a sweep point is a scenario, run through `simperf.pipeline.predict` like any other.
"""

from simperf.sweep.expand import SweepPoint, expand
from simperf.sweep.pareto import pareto_front, pareto_mask
from simperf.sweep.plan import Candidate, Plan, plan_capacity
from simperf.sweep.runner import SweepRun, run_sweep
from simperf.sweep.sla import LatencyBound, Sla, parse_sla
from simperf.sweep.spec import SweepError, SweepSpec, load_sweep_file, parse_sweep
from simperf.sweep.table import read_table

__all__ = [
    "Candidate",
    "LatencyBound",
    "Plan",
    "Sla",
    "SweepError",
    "SweepPoint",
    "SweepRun",
    "SweepSpec",
    "expand",
    "load_sweep_file",
    "pareto_front",
    "pareto_mask",
    "parse_sla",
    "parse_sweep",
    "plan_capacity",
    "read_table",
    "run_sweep",
]
