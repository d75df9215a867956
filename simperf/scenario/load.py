"""Reading scenario files, with errors a user can act on (field path, what was given, what is allowed)."""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from simperf.scenario.models import Quoted, Scenario, YamlBool
from simperf.spelling import did_you_mean
from simperf.strictyaml import error_line, read_error, safe_load


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message lists every problem, one per line."""


def _field_path(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif (
            item in ("random", "fixed", "trace", "shared_prefix", "multi_turn")
            and parts
            and parts[-1].endswith("dataset")
        ):
            # the discriminated union adds the chosen variant to the path; the user did not write it
            continue
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "(top level)"


# how pydantic names the members of a union in an error's location ("float", "literal['inf']"): not fields
_UNION_MEMBER = re.compile(r"^(float|int|str|bool|list|dict|none)$|[\[\](),'\"-]")


def _is_union_member(item: Any) -> bool:
    return isinstance(item, str) and bool(_UNION_MEMBER.search(item))


def _expected(e: dict[str, Any]) -> str:
    if e["type"] == "literal_error":
        return str(e.get("ctx", {}).get("expected", ""))
    if e["type"] == "path_type":  # pydantic's "Input is not a valid path for <class 'pathlib.Path'>"
        return "a file path"
    return e["msg"].removeprefix("Input should be ").split(",")[0]


def model_types(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (through Optional, unions, lists and Annotated)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return model_types(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in model_types(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def _allowed_keys(loc: tuple[Any, ...], root: type[BaseModel]) -> list[str]:
    """The keys of the block an unknown key at `loc` was written in, found by walking the models from `root` along
    its path (a union member's tag in it, such as a dataset's 'random', picks that member)."""
    models: list[type[BaseModel]] = [root]
    for item in loc[:-1]:
        fields = [m for m in models if item in m.model_fields]
        if fields:
            models = [sub for m in fields for sub in _item_types(m.model_fields[item].annotation)]
            continue
        tagged = [m for m in models if "kind" in m.model_fields and m.model_fields["kind"].default == item]
        models = tagged or models  # a list index or pydantic's name of a validator: the same block
    return sorted({name for m in models for name in m.model_fields})


def _item_types(annotation: Any) -> list[type[BaseModel]]:
    """model_types, and those of a list's items (fleet.replicas)."""
    found = model_types(annotation)
    for arg in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(arg) is list:
            found += [m for a in typing.get_args(arg) for m in model_types(a)]
    return found


def _unknown_key_message(loc: tuple[Any, ...], root: type[BaseModel] | None) -> str:
    """'unknown key' with the nearest allowed spellings in its block: the file's typos got only 'check the
    spelling', where --set and sweep axes suggest the nearest field. Outside a scenario (a sweep file's keys)
    `simperf schema` lists none of them: the block's keys are listed instead."""
    if root is None or not loc:
        return "unknown key (check the spelling; `simperf schema` lists every allowed key)"
    allowed = _allowed_keys(loc, root)
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=3, cutoff=0.6)
    where = (
        "`simperf schema` lists every allowed key" if root is Scenario else f"allowed: {', '.join(allowed)}"
    )
    if close:
        return f"unknown key; did you mean {', '.join(close)}? ({where})"
    return f"unknown key (check the spelling; {where})"


def _nearest_value(given: Any, expected: str) -> str:
    """' (did you mean 'h100'?)' for a word that is an allowed value in another case or punctuation (hardware.gpu:
    H100, kv_cache_dtype: fp8-e4m3), else ''."""
    return did_you_mean(given, re.findall(r"'([^']*)'", expected))


def problem_message(errors: list[dict[str, Any]], root: type[BaseModel] | None = None) -> str:
    """What is wrong with one field, from pydantic's errors at its path (several: a union none of whose members
    took the value). `root`: the model the errors' paths start from, for an unknown key's nearest spellings."""
    quoted = errors[0].get("input")
    # models._Strict: a number or true/false in quotes, which YAML reads as text
    if isinstance(quoted, Quoted):
        expected = " or ".join(dict.fromkeys(_expected(e) for e in errors))
        return f"got {quoted!r}, text in quotes; expected {expected}, written without quotes"
    if isinstance(quoted, YamlBool):  # models._Strict: name: no, which YAML 1.1 reads as false
        literal = errors[0]["type"] == "literal_error"
        return quoted.message(str(errors[0].get("ctx", {}).get("expected", "")) if literal else None)
    if len(errors) > 1:
        expected = " or ".join(dict.fromkeys(_expected(e) for e in errors))
        return f"got {errors[0].get('input')!r}; expected {expected}"
    e = errors[0]
    kind = e["type"]
    if kind == "extra_forbidden":
        return _unknown_key_message(tuple(e.get("loc", ())), root)
    if kind == "literal_error":
        expected = str(e.get("ctx", {}).get("expected", ""))
        return f"got {e.get('input')!r}{_nearest_value(e.get('input'), expected)}; allowed values: {expected}"
    if kind == "missing":
        return "required field is missing"
    if kind == "union_tag_invalid":
        return (
            f"got kind {e.get('input', {}).get('kind')!r}; allowed: {e.get('ctx', {}).get('expected_tags')}"
        )
    if kind == "path_type":  # not pydantic's "Input is not a valid path for <class 'pathlib.Path'>"
        return f"Input should be a file path (got {e.get('input')!r})"
    if kind == "value_error" and isinstance(e.get("input"), dict | list):
        # a check across a block's fields: its message names them; the whole block echoed back is noise
        return e["msg"].removeprefix("Value error, ")
    # a validator's own message, without pydantic's "Value error, " in front of it
    return f"{e['msg'].removeprefix('Value error, ')} (got {e.get('input')!r})"


def format_validation_error(err: ValidationError, source: str, root: type[BaseModel] | None = None) -> str:
    """One line for one problem (`source: field: reason`); a header and one line per problem otherwise. A value
    that matches none of a union's members (request_rate: 'fast') is one problem listing what each accepts."""
    by_path: dict[str, list[dict[str, Any]]] = {}
    for e in err.errors():
        *parents, last = e["loc"] or ("",)
        # an unknown key is the user's own, never a union member's name: 'page-size' or 'replicas[0]' was dropped
        # and the error read 'serving: unknown key', naming no key
        keep_last = e["type"] == "extra_forbidden" or not _is_union_member(last)
        loc = tuple(item for item in parents if not _is_union_member(item)) + ((last,) if keep_last else ())
        by_path.setdefault(_field_path(loc), []).append(e)
    lines = [f"{source}: {len(by_path)} problem(s) in the scenario"]
    for path, errors in by_path.items():
        msg = problem_message(errors, root)
        # a check across the whole scenario names its own fields: "(top level)" before them says nothing
        top_level_check = path == "(top level)" and errors[0]["type"] == "value_error" and len(errors) == 1
        lines.append(f"  {msg}" if top_level_check else f"  {path}: {msg}")
    if len(lines) == 2:
        return f"{source}: {lines[1].strip()}"
    return "\n".join(lines)


def require_mapping(data: Any, source: str) -> dict[str, Any]:
    """`data` if a scenario file's top level is a mapping; else the one-line ScenarioError naming `source`."""
    if not isinstance(data, dict):
        raise ScenarioError(
            f"{source}: a scenario must be a mapping of keys to values, got {type(data).__name__}"
        )
    return data


def parse_scenario(
    data: Any, source: str = "<scenario>", base_dir: Path | None = None, context: dict[str, Any] | None = None
) -> Scenario:
    """`context`: pydantic's validation context, for validators that read it (scenario/fleet.py COMPARED_POLICIES)."""
    try:
        scenario = Scenario.model_validate(require_mapping(data, source), context=context)
    except ValidationError as err:
        raise ScenarioError(format_validation_error(err, source, Scenario)) from None
    return _resolve_relative_paths(scenario, base_dir) if base_dir else scenario


def load_scenario_mapping(path: Path | str) -> Any:
    """The YAML of a scenario file, unvalidated (flags may still change it)."""
    path = Path(path)
    if not path.exists():
        raise ScenarioError(f"{path}: no such scenario file")
    try:
        return safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ScenarioError(f"{path}: not valid YAML: {error_line(err)}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ScenarioError(f"{path}: cannot read the scenario: {read_error(err)}") from None


def load_scenario(path: Path | str) -> Scenario:
    path = Path(path)
    return parse_scenario(load_scenario_mapping(path), str(path), base_dir=path.parent)


def _resolve_relative_paths(scenario: Scenario, base_dir: Path) -> Scenario:
    """Paths inside a scenario are relative to the scenario file, so a scenario directory can move as a whole."""

    def fix(p: Path | None) -> Path | None:
        if p is None or p.is_absolute():
            return p
        candidate = base_dir / p
        return candidate if candidate.exists() or not p.exists() else p

    updates: dict[str, Any] = {}
    if scenario.model.config is not None:
        updates["model"] = scenario.model.model_copy(update={"config": fix(scenario.model.config)})
    dataset = scenario.workload.dataset
    if dataset.kind == "trace":
        new_ds = dataset.model_copy(update={"path": fix(dataset.path)})
        updates["workload"] = scenario.workload.model_copy(update={"dataset": new_ds})
    if scenario.calibration_dir is not None:
        updates["calibration_dir"] = fix(scenario.calibration_dir)
    return scenario.model_copy(update=updates) if updates else scenario


def scenario_json_schema() -> str:
    return json.dumps(Scenario.model_json_schema(), indent=2)
