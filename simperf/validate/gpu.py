"""Run StepPrograms on this GPU: build each op's kernel through the calibration backend that timed it, chain
`replicas` layers of each layer kind, and time the chain as SGLang runs a decode step (one CUDA graph, replayed;
eager events only if the chain cannot be captured). Imports torch lazily; needs no simulator dependencies.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simperf.calibrate.backends import group_for
from simperf.calibrate.measure import Unsupported, is_fatal_error
from simperf.calibrate.provenance import DeviceInfo
from simperf.calibrate.timing import TimingConfig
from simperf.validate.program import ProgramOp, StepProgram

Launcher = Callable[[], Any]

# What the GPU was doing last, so that a crash that takes the CUDA context down can still be attributed.
CURRENT_ACTIVITY = {"what": "starting"}


@dataclass
class BuildContext:
    """What the calibration backends expect of a worker context, set up to hand back one launcher per op.

    l2_bytes = 1 makes every backend allocate a single input set (a chain of layers with their own buffers
    already keeps each kernel's data out of L2; rotation sets would only waste memory)."""

    device: DeviceInfo
    timing: TimingConfig = field(default_factory=TimingConfig)
    cache: dict[str, Any] = field(default_factory=dict)
    l2_bytes: int = 1

    @property
    def sm_major(self) -> int | None:
        return self.device.sm_major


def release_workspaces() -> None:
    """Free what the last chain left cached: library workspaces keyed by stream, then the allocator's cache."""
    import torch

    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()
    torch.cuda.empty_cache()


def is_context_lost(exc: BaseException) -> bool:
    """A CUDA error after which this process cannot launch anything (the sample fails, a new process runs on);
    the same markers the calibration workers restart on."""
    return type(exc).__name__ == "AcceleratorError" or is_fatal_error(str(exc))


def build_launcher(op: ProgramOp, ctx: BuildContext, probe: bool = False) -> Launcher:
    """The op's kernel with fresh inputs of its shapes; Unsupported if the backend cannot run it here.

    probe: launch it once now, so that a kernel refusing these shapes is reported as that op's failure
    instead of failing the whole chain later."""
    CURRENT_ACTIVITY["what"] = f"building {op.name} ({op.op}, backend {op.point['backend']})"
    group = group_for(op.op, op.point["backend"])
    if group.requires_sm_major is not None and ctx.sm_major != group.requires_sm_major:
        raise Unsupported(
            f"{group.name} kernels need SM{group.requires_sm_major}x; this GPU is SM{ctx.sm_major}x"
        )
    module = importlib.import_module(group.module)
    collected: list[Launcher] = []
    ctx.timing.collect = collected
    try:
        module.run_point(dict(op.point), ctx)
    finally:
        ctx.timing.collect = None
    if not collected:
        raise Unsupported(f"backend {group.name} returned no kernel for {op.name}")
    if probe:
        import torch

        try:
            collected[0]()
            torch.cuda.synchronize()
        except RuntimeError as exc:
            if is_context_lost(exc):
                raise
            raise Unsupported(
                f"{group.name} failed on these shapes: {str(exc).splitlines()[0][:240]}"
            ) from None
    return collected[0]


def time_chain(
    launchers: list[Launcher], target_ms: float = 60.0, graph_target_us: float = 3000.0
) -> tuple[float, str]:
    """Median time of one pass over `launchers` (µs) and how it was timed.

    The chain is captured `passes` times into one CUDA graph (enough for ~3 ms per replay), so that the
    replay's own launch cost (~10 µs) is spread thin, as in a server's graph of a whole model."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on the capture stream: JIT, autotune, library handles
        for launch in launchers:
            launch()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    def eager() -> None:
        for launch in launchers:
            launch()

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    eager()
    end.record()
    end.synchronize()
    pass_us = max(start.elapsed_time(end) * 1000.0, 1.0)
    passes = int(min(64, max(1, math.ceil(graph_target_us / pass_us))))
    method = "cuda_graph_replay"
    graph = torch.cuda.CUDAGraph()
    try:
        # capture on the stream the chain was warmed on: library workspaces (cuBLASLt split-K) then exist
        # before capture instead of being taken from this graph's private pool
        with torch.cuda.graph(graph, stream=side):
            for _ in range(passes):
                eager()
        run: Callable[[], Any] = graph.replay
    except Exception:  # noqa: BLE001 - a kernel that cannot be captured: time the chain eagerly instead
        torch.cuda.synchronize()
        graph, passes, run, method = None, 1, eager, "cuda_events_eager"
    run()
    torch.cuda.synchronize()
    start.record()
    run()
    end.record()
    end.synchronize()
    estimate_us = max(start.elapsed_time(end) * 1000.0, 1.0)
    repeats = int(min(40, max(5, math.ceil(target_ms * 1000.0 / estimate_us))))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for i in range(repeats):
        starts[i].record()
        run()
        ends[i].record()
    torch.cuda.synchronize()
    samples = sorted(s.elapsed_time(e) * 1000.0 / passes for s, e in zip(starts, ends, strict=True))
    del graph
    return samples[len(samples) // 2], method


def run_program(program: StepProgram, ctx: BuildContext, replicas: int = 4) -> dict[str, Any]:
    """Measure one program; the returned row compares the prediction of exactly the ops that ran."""
    import torch

    unsupported: dict[str, str] = {}
    kinds = {"step": 1, **program.layer_kinds}
    per_kind: dict[str, dict[str, Any]] = {}
    predicted_us = measured_us = 0.0
    methods = set()
    for kind, layers in kinds.items():
        ops = [op for op in program.ops_of(kind) if op.runnable and op.name not in unsupported]
        if not ops:
            continue
        reps = 1 if kind == "step" else max(1, min(replicas, layers))
        chain: list[
            tuple[str, Launcher]
        ] = []  # (op name, launcher) in execution order, replica after replica
        by_op: dict[str, list[Launcher]] = {}
        for r in range(reps):
            for op in ops:
                if op.name in unsupported:
                    continue
                try:
                    launch = build_launcher(op, ctx, probe=r == 0)
                except Unsupported as exc:
                    unsupported[op.name] = str(exc)
                    continue
                chain.append((op.name, launch))
                by_op.setdefault(op.name, []).append(launch)
        ran = [op for op in ops if op.name in by_op and op.name not in unsupported]
        if not ran:
            continue
        # an op found unsupported in a later replica leaves the chain of every replica
        launchers = [launch for name, launch in chain if name not in unsupported]
        CURRENT_ACTIVITY["what"] = f"timing the chain of {reps} {kind} layer(s)"
        chain_us, method = time_chain(launchers)
        methods.add(method)
        layer_us = chain_us / reps
        layer_pred = sum(op.predicted_us for op in ran)
        # each op alone (its replicas chained): where a step's error comes from
        op_us = {op.name: time_chain(by_op[op.name], target_ms=20.0)[0] / len(by_op[op.name]) for op in ran}
        per_kind[kind] = {
            "layers": layers,
            "replicas": reps,
            "measured_us_per_layer": layer_us,
            "predicted_us_per_layer": layer_pred,
            "ops": {
                op.name: {"predicted_us": op.predicted_us, "measured_us": op_us[op.name], "source": op.source}
                for op in ran
            },
        }
        measured_us += layers * layer_us
        predicted_us += layers * layer_pred
        del chain, launchers, by_op
        ctx.cache.pop("moe_triton_weights", None)
        torch.cuda.synchronize()
        release_workspaces()
    unmeasured = program.predicted_unmeasured_us() + sum(
        op.predicted_us * op.count for op in program.ops if op.name in unsupported
    )
    return {
        **program.identity(),
        "predicted_us": predicted_us,
        "measured_us": measured_us,
        "rel_error": (predicted_us - measured_us) / measured_us if measured_us > 0 else None,
        "predicted_unmeasured_us": unmeasured,
        "predicted_step_us": predicted_us + unmeasured,
        "timing_method": "+".join(sorted(methods)),
        "per_kind": per_kind,
        "unsupported": unsupported,
        "not_run": {op.name: op.reason for op in program.ops if not op.runnable},
        "gpu": ctx.device.gpu,
        "gpu_name": ctx.device.gpu_name,
        "error": None,
    }
