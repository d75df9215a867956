"""Dotted field paths into a scenario mapping (`serving.tp`, `workload.dataset.input_len`): which exist, get, set."""

from __future__ import annotations

import copy
import difflib
import types
import typing
from functools import cache
from typing import Any

from pydantic import BaseModel

from simperf.scenario.models import Scenario


def _model_types(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (through Optional, unions and Annotated)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_types(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _model_types(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


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


def unknown_path_message(path: str) -> str:
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
