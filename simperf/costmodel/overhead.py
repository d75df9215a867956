"""The named constant costs a step adds on top of its kernels (scenario.models.Overheads).

A decode step replaying CUDA graphs pays, per replay, the GPU work SGLang runs between replays
(`decode_between_replays_us`: the sampler and the next iteration's input preparation) and, per kernel, the GPU's
idle time between a replay's kernels (`decode_graph_gap_us_per_kernel`); both measured on a profiled served decode
(docs/overheads.md). An extend replaying a prefill graph pays one `cuda_graph_replay_us` (an estimate). Eager
steps launch every kernel from the CPU, which runs ahead of the GPU while kernels are long: the launches cost time
only when the CPU cannot keep up, so an eager step lasts max(kernel time, kernels x host time per kernel) and the
overhead is the excess over the kernel time (a decode step of small kernels is host-bound; a long prefill is not).
An eager decode takes the eager forward's measured host time per kernel (`Overheads.eager_decode_us`) unless
`eager_launch_us_per_kernel` is set. Booked under the "constant" source.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simperf.scenario.models import ExtendHostTime, Overheads

OVERHEAD_SOURCE = "constant"


@dataclass(frozen=True)
class StepOverhead:
    name: str  # "cuda_graph_replay" | "eager_launch"
    count: int  # kernels (decode replay, eager launch) or 1 (extend replay)
    us_per_count: float
    detail: str
    fixed_us: float = 0.0  # decode replays: the GPU work between replays, once per replay

    @property
    def us(self) -> float:
        """Replay: the replay cost. Eager: the full launch time; `excess_us` gives what the step actually pays."""
        return self.fixed_us + self.count * self.us_per_count

    def excess_us(self, kernel_us):
        """What the step pays on top of its kernels' time (vectorised over kernel_us for eager steps)."""
        if self.name == "cuda_graph_replay":
            return self.us
        return np.maximum(self.us - kernel_us, 0.0)


def step_overhead(
    overheads: Overheads,
    graph: bool,
    kernels: int,
    extend_host: ExtendHostTime | None = None,
    replays: int = 1,
    eager_decode: ExtendHostTime | None = None,
) -> StepOverhead:
    """The overhead of one step. `extend_host`: for an extend (prefill) forward, its host time per kernel and the
    label naming where it comes from (Overheads.extend_launch_us: measured on the ground-truth corpus per attention
    backend, eager or with SGLang's prefill graph) rather than a bare launch gap. `replays`: the CUDA graphs a
    decode step replays (1, or a speculative step's draft and verify forwards); `kernels` counts all of theirs."""
    if extend_host is not None and not graph:
        us, label = extend_host.us, extend_host.label
        return StepOverhead(
            "eager_launch",
            kernels,
            us,
            f"named overhead Overheads.{label} x {kernels} kernels (measured host time of an extend forward, "
            "docs/overheads.md; kernel count is an estimate)",
        )
    if graph and extend_host is not None:
        return StepOverhead(
            "cuda_graph_replay",
            1,
            overheads.cuda_graph_replay_us,
            "named overhead Overheads.cuda_graph_replay_us (an estimate)",
        )
    if graph:
        return StepOverhead(
            "cuda_graph_replay",
            kernels,
            overheads.decode_graph_gap_us_per_kernel,
            f"named overheads Overheads.decode_between_replays_us x {replays} replay(s) + "
            f"Overheads.decode_graph_gap_us_per_kernel x {kernels} kernels (measured on a served decode, "
            "docs/overheads.md; kernel count is an estimate)",
            fixed_us=overheads.decode_between_replays_us * replays,
        )
    host = eager_decode or overheads.eager_decode_us()
    measured = host.field != "eager_launch_us_per_kernel"
    return StepOverhead(
        "eager_launch",
        kernels,
        host.us,
        f"named overhead Overheads.{host.label} x {kernels} kernels ("
        + ("an eager forward's measured host time, docs/overheads.md; " if measured else "")
        + "kernel count is an estimate)",
    )
