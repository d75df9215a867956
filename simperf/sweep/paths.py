"""Dotted field paths into a scenario mapping (`serving.tp`, `workload.dataset.input_len`): which exist, get, set."""

from __future__ import annotations

import copy
import difflib
import inspect
import re
import typing
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError, create_model

from simperf.scenario.load import model_types as _model_types
from simperf.scenario.load import problem_message
from simperf.scenario.models import Scenario, _Strict


def _paths_of(model: type[BaseModel], prefix: str) -> set[str]:
    out: set[str] = set()
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        out.add(path)
        for sub in _model_types(info.annotation):
            out |= _paths_of(sub, path + ".")
    return out


@cache
def scenario_field_paths() -> frozenset[str]:
    """Every field a sweep axis may set, including whole sub-blocks (`serving.speculative`)."""
    return frozenset(_paths_of(Scenario, ""))


@cache
def dataset_kind_fields() -> dict[str, frozenset[str]]:
    """Each workload dataset kind ('random', 'trace', ...) with the fields it takes."""
    kinds: dict[str, frozenset[str]] = {}
    for model, _ in _owners("workload.dataset.kind"):
        kinds[str(model.model_fields["kind"].default)] = frozenset(model.model_fields)
    return kinds


def _holds_model(annotation: Any) -> bool:
    """Whether a type holds a pydantic model anywhere (a whole block: it may need the scenario's directory)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_holds_model(arg) for arg in typing.get_args(annotation))


def _owners(path: str) -> list[tuple[type[BaseModel], str]]:
    """The models that hold the field at `path`, with its name: several where the path runs through a union
    (workload.dataset.input_len is a field of every dataset kind that has it)."""
    models: list[type[BaseModel]] = [Scenario]
    *parents, leaf = path.split(".")
    for part in parents:
        models = [
            sub
            for m in models
            if part in m.model_fields
            for sub in _model_types(m.model_fields[part].annotation)
        ]
    return [(m, leaf) for m in models if leaf in m.model_fields]


@cache
def _one_field_model(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    info = model.model_fields[name]
    if _holds_model(info.annotation):
        return None
    # the field alone, under the scenario's own config and true/false check: its type, allowed values and bounds
    return create_model(f"_{model.__name__}_{name}", __base__=_Strict, value=(info.annotation, info))


def _alone_problem(model: type[BaseModel], name: str, value: Any) -> str | None:
    checker = _one_field_model(model, name)
    if checker is None:
        return None
    try:
        checked = checker.model_validate({"value": value}).value
    except ValidationError as err:
        return problem_message(err.errors())
    for decorator in model.__pydantic_decorators__.field_validators.values():
        # the field's own checks (a positive rate); those reading other fields (info) depend on them
        if name not in decorator.info.fields or decorator.info.mode != "after":
            continue
        if len(inspect.signature(decorator.func).parameters) != 1:
            continue
        try:
            decorator.func(checked)
        except ValueError as err:
            return f"{err} (got {value!r})"
    return None


def never_valid(path: str, value: Any) -> str | None:
    """Why `value` can never be valid at the scenario field `path`, whatever the other fields (its type, an
    allowed value, a bound); None when some scenario may take it. Whole blocks (`serving.speculative`) are not
    judged here: their checks read each other's fields and the scenario's directory."""
    owners = _owners(path)
    problems = [_alone_problem(model, name, value) for model, name in owners]
    if not problems or any(p is None for p in problems):
        return None
    allowed = [typing.get_args(m.model_fields[n].annotation) if _is_literal(m.model_fields[n].annotation) else None
               for m, n in owners]  # fmt: skip
    if len(owners) > 1 and all(a is not None for a in allowed):
        # one union member's allowed values are not the field's (workload.dataset.kind: every dataset kind's)
        merged = dict.fromkeys(v for a in allowed for v in a)
        return f"got {value!r}; allowed values: {', '.join(map(repr, merged))}"
    return problems[0]


def _is_literal(annotation: Any) -> bool:
    return typing.get_origin(annotation) is typing.Literal


def _list_item_path(path: str) -> str | None:
    """The list field a path indexes into ('fleet.replicas' of 'fleet.replicas[0].count' or 'fleet.replicas.0'),
    if it is a scenario field; else None."""
    match = re.match(r"^([A-Za-z_][\w.]*?)(?:\[\s*-?\d+\s*\]|\.-?\d+)(?:[.\[].*)?$", path)
    if match is None or match.group(1) not in scenario_field_paths():
        return None
    owners = _owners(match.group(1))
    return match.group(1) if any(_holds_list(m.model_fields[n].annotation) for m, n in owners) else None


def _holds_list(annotation: Any) -> bool:
    """Whether a type is a list (through Optional, unions and Annotated)."""
    if typing.get_origin(annotation) is list:
        return True
    return any(_holds_list(arg) for arg in typing.get_args(annotation))


def unknown_path_message(path: str) -> str:
    listed = _list_item_path(path)
    if listed is not None:
        # was "not a scenario field; did you mean fleet.replicas?", which left open whether an index was read
        return (
            f"{path!r}: list items have no field paths (an index is not read); set {listed} whole, as a list"
        )
    close = difflib.get_close_matches(path, sorted(scenario_field_paths()), n=3, cutoff=0.6)
    hint = (
        f"; did you mean {', '.join(close)}?" if close else "; `simperf schema` lists the scenario's fields"
    )
    return f"{path!r} is not a scenario field{hint}"


def get_path(mapping: dict[str, Any], path: str, default: Any = None) -> Any:
    node: Any = mapping
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def with_values(base: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `base` with each dotted path set; missing intermediate blocks are created."""
    out = copy.deepcopy(base)
    for path, value in values.items():
        parts = path.split(".")
        node = out
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = copy.deepcopy(value)
    return out
