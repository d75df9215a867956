"""Scheduling policies: how a rank orders its waiting queue before admission (SGLang's `SchedulePolicy`).

SGLang splits the choice of the next prefill batch in two: `SchedulePolicy.calc_priority` orders the waiting
queue, then `PrefillAdder` takes requests from its head while the budgets allow (simperf/sim/admission.py). Each
policy here is one module defining one class registered under SGLang's name for it; this package imports every
module beside it, so a new policy is a new file (docs/extending.md).
"""

from __future__ import annotations

import importlib
import pkgutil

from simperf.sim.policy.base import POLICIES, SchedulePolicy, WaitingQueue, make_policy, register_policy

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["POLICIES", "SchedulePolicy", "WaitingQueue", "make_policy", "register_policy"]
