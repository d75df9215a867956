"""What a user writes: the sweep file (a base scenario, axes over its fields, sampling, planning defaults)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from simperf.scenario.load import format_validation_error
from simperf.scenario.models import _Strict as ScenarioStrict
from simperf.strictyaml import error_line, read_error, safe_load
from simperf.sweep.paths import (
    dataset_kind_fields,
    get_path,
    never_valid,
    scenario_field_paths,
    unknown_path_message,
)
from simperf.sweep.sla import SlaError, parse_sla


class SweepError(ValueError):
    """A sweep file that cannot be used; the message names the field path and what is allowed."""


class _Strict(ScenarioStrict):
    # plan.rate: .inf passed here and failed later in `simperf plan` as "cannot convert float infinity to integer";
    # plan.rate: true planned for 1 req/s, sample.n: true drew one configuration (the scenario's bool refusal)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class SampleSpec(_Strict):
    method: Literal["grid", "random", "lhs"] = Field(
        default="grid",
        description="grid: every combination; random: n combinations drawn without replacement; "
        "lhs: n Latin-hypercube draws over the axes' value indices",
    )
    n: int | None = Field(
        default=None, ge=1, description="configurations to draw (random, lhs); load axes are always crossed"
    )
    seed: int = Field(default=0, ge=0)  # numpy's generators take no negative seed

    @model_validator(mode="after")
    def _n_given_when_sampling(self) -> SampleSpec:
        if self.method != "grid" and self.n is None:
            raise ValueError(f"method {self.method!r} needs n (how many configurations to draw)")
        if self.method == "grid" and self.n is not None:
            # a grid runs every combination: n was accepted and drew nothing
            raise ValueError("n applies to method random or lhs; a grid runs every combination")
        if self.method == "grid" and "seed" in self.model_fields_set:
            # a grid draws nothing: the seed was accepted and unread
            raise ValueError(
                "seed applies to method random or lhs; a grid runs every combination and draws nothing"
            )
        return self


class PlanSpec(_Strict):
    rate: float | None = Field(default=None, gt=0, description="target request rate (req/s) to serve")
    sla: list[str] = Field(
        default_factory=list, description="bounds like 'ttft.p90 <= 2s', 'tpot.p90 <= 50ms'"
    )
    top: int = Field(default=5, ge=1, description="runner-ups to show")

    @field_validator("sla")
    @classmethod
    def _bounds_parse(cls, v: list[str]) -> list[str]:
        try:
            parse_sla(v)
        except SlaError as e:
            raise ValueError(str(e)) from None
        return v


class SweepSpec(_Strict):
    name: str = "sweep"
    base: Path | dict[str, Any] = Field(
        description="the scenario every point starts from: a scenario file (relative to the sweep file) or inline"
    )
    axes: dict[str, list[Any]] = Field(
        description="dotted scenario field -> values; or a group name -> list of {field: value} mappings "
        "whose fields move together (e.g. serving.tp with hardware.count)"
    )
    sample: SampleSpec = SampleSpec()
    plan: PlanSpec = PlanSpec()

    @field_validator("name")
    @classmethod
    def _name_is_a_file_name(cls, v: str) -> str:
        # the default table is ./<name>.sweep.parquet: 'name: ../x' or '/tmp/x' wrote it outside the directory
        if "/" in v or v in (".", ".."):
            raise ValueError("the default table is ./<name>.sweep.parquet: give a name without /")
        if not v.strip():  # '' wrote the hidden table ./.sweep.parquet and named every point '-<index>'
            raise ValueError("the default table is ./<name>.sweep.parquet: give a non-empty name")
        return v

    @field_validator("axes")
    @classmethod
    def _axes_address_fields(cls, axes: dict[str, list[Any]]) -> dict[str, list[Any]]:
        if not axes:
            raise ValueError("give at least one axis")
        fields = scenario_field_paths()
        problems: list[str] = []
        for key, values in axes.items():
            problems += _repeated_values(key, values)
            if not values:
                problems.append(f"{key}: an axis needs at least one value")
            elif key in fields:
                problems += _never_valid_values(key, [(key, v) for v in values])
            elif all(isinstance(v, dict) for v in values):
                for i, option in enumerate(values):
                    if not option:
                        problems.append(f"{key}[{i}]: an empty group option sets nothing")
                    problems += [
                        f"{key}[{i}].{p}: {unknown_path_message(p)}" for p in option if p not in fields
                    ]
                    problems += _never_valid_values(
                        f"{key}[{i}]", [(p, v) for p, v in option.items() if p in fields]
                    )
            else:
                problems.append(
                    f"{key}: {unknown_path_message(key)} (a group axis instead takes a list of "
                    "{field: value} mappings)"
                )
        # a field two axes set took the later axis' value at every point: the earlier axis multiplied the points
        # and changed nothing
        setters: dict[str, list[str]] = {}
        for key, values in axes.items():
            paths = (
                {key}
                if key in fields
                else {p for option in values if isinstance(option, dict) for p in option}
            )
            for path in paths:
                setters.setdefault(path, []).append(key)
        for key in setters.pop(
            "name", []
        ):  # every point is renamed <sweep name>-<index>: it only repeated points
            where = "name" if key == "name" else f"{key}: name"
            problems.append(
                f"{where}: each point is named <sweep name>-<index>; an axis over the scenario's name changes "
                "nothing simulated"
            )
        # where and how a fleet's servers run (identical results by design, docs/fleet.md) and the size of its
        # timelines (no sweep row holds them): every point of such an axis was the same simulation
        for path in ("fleet.executor", "fleet.workers", "fleet.ray_address", "fleet.timeline_bins"):
            for key in setters.pop(path, []):
                where = path if key == path else f"{key}: {path}"
                problems.append(
                    f"{where}: sets where a fleet's servers run or how its timelines are binned, which changes "
                    "nothing simulated; each point would repeat the same run"
                )
        problems += [f"{path}: set by axes {' and '.join(keys)}; give it one axis" for path, keys in setters.items()
                     if len(keys) > 1]  # fmt: skip
        if problems:
            raise ValueError("; ".join(problems))
        return axes

    @model_validator(mode="after")
    def _something_to_draw(self) -> SweepSpec:
        from simperf.sweep.expand import LOAD_PATHS  # expand imports this module

        if self.sample.method == "grid":
            return self
        fields = scenario_field_paths()
        paths = {
            p
            for key, values in self.axes.items()
            for p in ({key} if key in fields else {q for v in values if isinstance(v, dict) for q in v})
        }
        if paths <= set(LOAD_PATHS):
            # load axes are always crossed in full, so n and seed drew nothing: the run was the grid
            raise ValueError(
                f"sample: method {self.sample.method} draws configurations, and every axis here is a load axis "
                f"({', '.join(sorted(paths))}), which always runs in full; use method grid or add a configuration axis"
            )
        return self


def _never_valid_values(where: str, values: list[tuple[str, Any]]) -> list[str]:
    """A value no point could take (a word for a rate, a policy the router lacks): every point holding it was an
    `invalid` row, whatever the other axes. Combinations invalid only together stay rows."""
    problems = []
    for path, value in values:
        why = never_valid(path, value)
        if why is not None:
            name = path if where == path else f"{where}.{path}"
            problems.append(f"{name}: {why}; no point of the sweep could take it")
    return problems


def _repeated_values(key: str, values: list[Any]) -> list[str]:
    """An axis value listed twice ran the same point twice (two rows with one point_id)."""
    seen: set[str] = set()
    problems = []
    for value in values:
        text = json.dumps(value, sort_keys=True, default=str)
        if text in seen:
            problems.append(f"{key}: {value!r} is listed twice; give each value once")
        seen.add(text)
    return problems


def parse_sweep(data: Any, source: str = "<sweep>") -> SweepSpec:
    if not isinstance(data, dict):
        raise SweepError(f"{source}: a sweep must be a mapping of keys to values, got {type(data).__name__}")
    try:
        return SweepSpec.model_validate(data)
    except ValidationError as err:
        raise SweepError(
            format_validation_error(err, source, SweepSpec).replace(" in the scenario", " in the sweep", 1)
        ) from None


def load_sweep_file(path: Path | str) -> tuple[SweepSpec, dict[str, Any], Path]:
    """(spec, the base scenario as a mapping, the directory its relative paths are relative to)."""
    path = Path(path)
    if not path.exists():
        raise SweepError(f"{path}: no such sweep file")
    try:
        data = safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise SweepError(f"{path}: not valid YAML: {error_line(err)}") from None
    except (OSError, UnicodeDecodeError) as err:
        # a directory, a Latin-1 file: Python's message ('Is a directory', 'utf-8' codec ...) named no file
        raise SweepError(f"{path}: cannot read the sweep: {read_error(err)}") from None
    spec = parse_sweep(data, str(path))
    base, base_dir = base_mapping(spec, path.parent)
    problems = dataset_axis_problems(spec.axes, base)
    if problems:
        raise SweepError(f"{path}: axes: {'; '.join(problems)}")
    return spec, base, base_dir


DATASET = "workload.dataset"


def _axis_options(key: str, values: list[Any]) -> list[dict[str, Any]]:
    """The {path: value} settings an axis makes, one per value (a group axis' options as given)."""
    if key in scenario_field_paths():
        return [{key: value} for value in values]
    return [option for option in values if isinstance(option, dict)]


def _kinds_set_by(option: dict[str, Any]) -> set[Any]:
    """The dataset kind a point's settings give it (empty where they leave the kind alone)."""
    if f"{DATASET}.kind" in option:
        return {option[f"{DATASET}.kind"]}
    if isinstance(option.get(DATASET), dict):
        return {option[DATASET].get("kind")}
    return set()


def dataset_axis_problems(axes: dict[str, list[Any]], base: dict[str, Any]) -> list[str]:
    """Axes over a field of a dataset kind no point has (workload.dataset.num_groups over a `random` base): every
    point was an invalid row, found only once each had been simulated."""
    kinds = dataset_kind_fields()
    possible = {get_path(base, f"{DATASET}.kind")}
    for key, values in axes.items():
        for option in _axis_options(key, values):
            possible |= _kinds_set_by(option)
    possible = {k for k in possible if k in kinds}  # an unknown kind is refused with the scenario's own words
    if not possible:
        return []
    problems: list[str] = []
    for key, values in axes.items():
        for i, option in enumerate(_axis_options(key, values)):
            own = {k for k in _kinds_set_by(option) if k in kinds} or possible
            for path in option:
                field = path.removeprefix(f"{DATASET}.").split(".")[0]
                if not path.startswith(f"{DATASET}.") or any(field in kinds[k] for k in own):
                    continue
                takers = ", ".join(k for k, fields in kinds.items() if field in fields)
                where = key if path == key else f"{key}[{i}].{path}"
                problem = (
                    f"{where}: a field of the {takers} dataset, and every point with it has a "
                    f"{' or '.join(sorted(own))} dataset (workload.dataset.kind); no point could take it"
                )
                if problem not in problems:
                    problems.append(problem)
    return problems


def base_mapping(spec: SweepSpec, sweep_dir: Path) -> tuple[dict[str, Any], Path]:
    if isinstance(spec.base, dict):
        return dict(spec.base), sweep_dir.resolve()
    base_path = spec.base if spec.base.is_absolute() else sweep_dir / spec.base
    if not base_path.exists():
        raise SweepError(f"base: no such scenario file {base_path}")
    try:
        data = safe_load(base_path.read_text())
    except yaml.YAMLError as err:
        raise SweepError(f"base: {base_path} is not valid YAML: {error_line(err)}") from None
    except (OSError, UnicodeDecodeError) as err:  # named neither base nor the file
        raise SweepError(f"base: {base_path}: cannot read the scenario: {read_error(err)}") from None
    if not isinstance(data, dict):
        raise SweepError(f"base: {base_path} must hold a mapping, got {type(data).__name__}")
    return data, base_path.parent.resolve()
