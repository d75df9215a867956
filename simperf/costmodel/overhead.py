"""The named constant costs a step adds on top of its kernels (scenario.models.Overheads).

Decode steps replaying a CUDA graph pay one `cuda_graph_replay_us`; eager steps pay `eager_launch_us_per_kernel`
for every kernel they launch (a decode step of small kernels is launch-bound when eager). Extend steps follow
the same rule (graph when a prefill graph is replayed, else eager launches).

SOURCES has no label for assumed constants; they are booked in the "roofline" column, the column of estimates
that are not measured, and the breakdown names them.
"""

from __future__ import annotations

from dataclasses import dataclass

from simperf.scenario.models import Overheads

OVERHEAD_SOURCE = "roofline"


@dataclass(frozen=True)
class StepOverhead:
    name: str  # "cuda_graph_replay" | "eager_launch"
    count: int  # 1 replay, or the number of kernels launched
    us_per_count: float
    detail: str

    @property
    def us(self) -> float:
        return self.count * self.us_per_count


def step_overhead(overheads: Overheads, graph: bool, kernels: int) -> StepOverhead:
    if graph:
        return StepOverhead(
            "cuda_graph_replay",
            1,
            overheads.cuda_graph_replay_us,
            "named overhead Overheads.cuda_graph_replay_us",
        )
    return StepOverhead(
        "eager_launch",
        kernels,
        overheads.eager_launch_us_per_kernel,
        f"named overhead Overheads.eager_launch_us_per_kernel x {kernels} kernels (kernel count is an estimate)",
    )
