"""A fleet's server groups: each group is an ordinary single-server scenario (its hardware, its server arguments),
resolved and priced exactly as `simperf predict` would price it alone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simperf.costmodel.step import SGLangStepCost
from simperf.hardware.catalog import GpuSpec
from simperf.models.arch import ModelArch
from simperf.perfdb.db import PerfDB, shipped_calibration_dir
from simperf.scenario.fleet import ReplicaGroup
from simperf.scenario.models import Overheads, Scenario
from simperf.scenario.resolve import resolve
from simperf.scenario.resolved import ResolvedServing
from simperf.sim.engine import Simulator


@dataclass
class ServerGroup:
    kind: str  # replicas | prefill | decode
    index: int  # within its kind
    label: str
    count: int
    scenario: Scenario  # the group as a single-server scenario
    serving: ResolvedServing
    arch: ModelArch
    gpu: GpuSpec
    cost: SGLangStepCost
    db: PerfDB
    calibration_dir: Path | None
    field: str = "serving"  # where its server arguments sit in the scenario file, for error messages

    @property
    def gpus_per_server(self) -> int:
        return self.scenario.hardware.count


def group_scenario(scenario: Scenario, group: ReplicaGroup, kind: str = "replicas") -> Scenario:
    """The single-server scenario one server of `group` runs."""
    update = {"fleet": None, "disaggregation": None}
    serving = group.serving or scenario.serving
    update["serving"] = serving
    if group.hardware is not None:
        update["hardware"] = group.hardware
    elif kind != "replicas":
        # as a PD pair's servers (pipeline._pool_scenario): one server spans serving.tp GPUs
        update["hardware"] = scenario.hardware.model_copy(update={"count": serving.tp})
    return scenario.model_copy(update=update)


def build_groups(
    scenario: Scenario, kind: str, groups: list[ReplicaGroup], calibration_dir: Path | None
) -> list[ServerGroup]:
    from simperf.pipeline import open_perfdb  # the single-server pipeline's own table loading

    databases: dict[tuple[str, str, str], tuple[PerfDB, Path | None]] = {}
    built = []
    for i, group in enumerate(groups):
        single = group_scenario(scenario, group, kind)
        field = f"fleet.{kind}[{i}].serving" if group.serving is not None else "serving"
        serving, arch, gpu = resolve(
            single, field, disaggregated=kind != "replicas", pd_decode=kind == "decode"
        )
        directory = calibration_dir or single.calibration_dir or shipped_calibration_dir(gpu.key)
        key = (str(directory), gpu.key, single.serving.sglang_version)
        if key not in databases:
            # a group's own GPU is its field's: "hardware.gpu is h200" named the scenario's h100
            gpu_field = f"fleet.{kind}[{i}].hardware.gpu" if group.hardware is not None else "hardware.gpu"
            databases[key] = open_perfdb(single, gpu, calibration_dir, gpu_field=gpu_field)
        db, directory = databases[key]
        cost = SGLangStepCost(arch, serving, db, single.host_overheads)
        label = group.name or (f"{kind}[{i}]" if len(groups) > 1 else kind)
        built.append(
            ServerGroup(kind, i, label, group.count, single, serving, arch, gpu, cost, db, directory, field)
        )
    return built


def new_simulator(
    group: ServerGroup, overheads: Overheads, cls: type[Simulator] = Simulator, *, text_prompts: bool = False
) -> Simulator:
    """text_prompts: the requests reach this server as text, which its API server tokenises."""
    # the fleet's overheads, on this group's host
    simulator = cls(group.serving, group.cost, overheads.on_host(group.scenario.hardware.resolved_host_speed))
    simulator.text_prompts = text_prompts
    return simulator


@dataclass(frozen=True)
class ServerSlot:
    """One server of the fleet: its position, its group."""

    index: int  # 0-based over the fleet's servers of one kind (the router's worker index)
    group: ServerGroup


def expand(groups: list[ServerGroup]) -> list[ServerSlot]:
    slots: list[ServerSlot] = []
    for group in groups:
        for _ in range(group.count):
            slots.append(ServerSlot(len(slots), group))
    return slots
