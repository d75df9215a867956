"""Axes -> sweep points: the grid, or a random / Latin-hypercube subset of configurations crossed with every load.

A *configuration* is everything but the offered load; the load axes (request rate, max concurrency) are always
crossed in full so that every configuration gets its latency-vs-load curve, which the planner needs.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from simperf.sweep.paths import get_path, scenario_field_paths, with_values
from simperf.sweep.spec import SampleSpec, SweepError, SweepSpec

LOAD_PATHS = ("workload.request_rate", "workload.max_concurrency")


@dataclass(frozen=True)
class Axis:
    name: str  # a dotted scenario field, or a group's name
    options: tuple[dict[str, Any], ...]  # each option: {dotted field: value}
    labels: tuple[str, ...]

    @property
    def is_group(self) -> bool:
        return not (len(self.options[0]) == 1 and self.name in self.options[0])

    @property
    def is_load(self) -> bool:
        return all(path in LOAD_PATHS for option in self.options for path in option)


@dataclass(frozen=True)
class SweepPoint:
    index: int
    point_id: str  # stable hash of the point's scenario: the resume key
    config_id: str  # stable hash of the scenario without its load: groups a configuration's load points
    config_label: str
    columns: dict[str, Any]  # axis columns of the result table
    scenario: dict[str, Any]  # the full scenario mapping, validated when the point runs
    base_dir: str  # relative paths in the scenario are relative to this


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def stable_hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:16]


def _short(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def _format(value: Any) -> str:
    return canonical_json(value) if isinstance(value, dict | list) else str(value)


def build_axes(spec: SweepSpec) -> list[Axis]:
    fields = scenario_field_paths()
    axes: list[Axis] = []
    for name, values in spec.axes.items():
        if name not in fields:  # the spec admits only fields and groups of {field: value} mappings
            options = tuple(dict(v) for v in values)
            labels = tuple(" ".join(f"{_short(p)}={_format(x)}" for p, x in o.items()) for o in options)
        else:
            options = tuple({name: v} for v in values)
            labels = tuple(f"{_short(name)}={_format(v)}" for v in values)
        axes.append(Axis(name, options, labels))
    return axes


def _column_value(values: list[Any]) -> list[Any]:
    """One table column's values: numbers, strings or booleans kept when the axis is of one kind, else text."""
    present = [v for v in values if v is not None]
    if all(isinstance(v, bool) for v in present):
        return values
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        if all(isinstance(v, int) for v in present):
            return values
        return [None if v is None else float(v) for v in values]
    if all(isinstance(v, str) for v in present):
        return values
    return [None if v is None else _format(v) for v in values]


def _sample_configs(sizes: list[int], sample: SampleSpec) -> list[tuple[int, ...]]:
    total = int(np.prod(sizes)) if sizes else 1
    if sample.n is not None and sizes and sample.n > total:
        # the whole grid ran, fewer configurations than asked for, without a word
        raise SweepError(
            f"sample.n: {sample.n} configurations asked for, and the axes make {total:,} (load axes aside); give "
            f"at most {total:,}, or method: grid"
        )
    if sample.method == "grid" or not sizes or (sample.n is not None and sample.n >= total):
        return list(itertools.product(*[range(k) for k in sizes]))
    rng = np.random.default_rng(sample.seed)
    n = int(sample.n or total)
    if sample.method == "random":
        flat = np.sort(rng.choice(total, size=n, replace=False))
        return [tuple(int(i) for i in np.unravel_index(f, sizes)) for f in flat]
    # Latin hypercube over index space: draw i of n falls in stratum floor((i + u) k / n) of an axis of k values,
    # strata shuffled per axis. One offset u per axis keeps the strata evenly spaced, so when n >= k every value
    # appears (n / k times, rounded); duplicate combinations are dropped (n is an upper bound).
    columns = [((rng.permutation(n) + rng.random()) * k / n).astype(int).clip(0, k - 1) for k in sizes]
    seen: dict[tuple[int, ...], None] = {}
    for row in zip(*columns, strict=True):
        seen.setdefault(tuple(int(i) for i in row), None)
    return list(seen)


def _integral_floats_as_ints(value: Any) -> Any:
    """2.0 as 2, inside mappings and lists too: a scenario reads the two alike."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral_floats_as_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral_floats_as_ints(v) for v in value]
    return value


def _refuse_repeated_points(scenarios: list[dict[str, Any]], labels: list[str]) -> None:
    """Two points of one scenario (rate 2 and 2.0, group options that come to the same fields) ran it twice and
    entered the plan as two configurations or two loads of one; a SweepError naming both."""
    seen: dict[str, int] = {}
    for index, scenario in enumerate(scenarios):
        identity = _integral_floats_as_ints({k: v for k, v in scenario.items() if k != "name"})
        first = seen.setdefault(canonical_json(identity), index)
        if first != index:
            raise SweepError(
                f"axes: points {first} ({labels[first]}) and {index} ({labels[index]}) are the same scenario; "
                "give each axis value (or group option) once"
            )


def expand(spec: SweepSpec, base: dict[str, Any], base_dir: str) -> list[SweepPoint]:
    axes = build_axes(spec)
    config_axes = [a for a in axes if not a.is_load]
    load_axes = [a for a in axes if a.is_load]
    configs = _sample_configs([len(a.options) for a in config_axes], spec.sample)
    loads = list(itertools.product(*[range(len(a.options)) for a in load_axes]))

    choices: list[list[tuple[Axis, int]]] = []
    for c in configs:
        for ld in loads:
            choices.append(list(zip(config_axes, c, strict=True)) + list(zip(load_axes, ld, strict=True)))

    # the table's axis columns: one per group (its option's label) and one per field any axis sets
    field_paths = list(dict.fromkeys(p for a in axes for o in a.options for p in o))
    group_names = [a.name for a in axes if a.is_group]
    raw_columns: dict[str, list[Any]] = {name: [] for name in group_names + field_paths}
    scenarios: list[dict[str, Any]] = []
    labels: list[str] = []
    for chosen in choices:
        values: dict[str, Any] = {}
        for axis, i in chosen:
            values.update(axis.options[i])
        scenario = with_values(base, values)
        scenarios.append(scenario)
        for axis, i in chosen:
            if axis.is_group:
                raw_columns[axis.name].append(axis.labels[i])
        for path in field_paths:
            raw_columns[path].append(get_path(scenario, path))
        labels.append(" ".join(axis.labels[i] for axis, i in chosen if not axis.is_load) or "base")
    columns = {name: _column_value(vals) for name, vals in raw_columns.items()}

    _refuse_repeated_points(scenarios, [" ".join(axis.labels[i] for axis, i in chosen) for chosen in choices])
    points: list[SweepPoint] = []
    for index, (scenario, label) in enumerate(zip(scenarios, labels, strict=True)):
        named = {**scenario, "name": f"{spec.name}-{index}"}
        identity = {k: v for k, v in scenario.items() if k != "name"}
        without_load = with_values(identity, {p: None for p in LOAD_PATHS})
        points.append(
            SweepPoint(
                index=index,
                point_id=stable_hash(identity),
                config_id=stable_hash(without_load),
                config_label=label,
                columns={name: col[index] for name, col in columns.items()},
                scenario=named,
                base_dir=base_dir,
            )
        )
    return points
