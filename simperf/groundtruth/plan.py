"""A ground-truth plan: which SGLang servers to start and which bench_serving runs to drive against each.

What a user writes (YAML), validated with field paths like every other simperf input:

```yaml
name: h100-dense
defaults:
  server: {attention-backend: flashinfer}          # launch_server flags, SGLang's spelling without "--"
  client: {dataset-name: random, seed: 1}          # bench_serving flags
servers:
  - name: qwen3-8b-flashinfer
    model: qwen3-8b                                # zoo name, or a directory/config.json of a HF model
    server: {mem-fraction-static: 0.85}            # merged over defaults.server
    runs:
      - {name: c16-1k-256, client: {random-input-len: 1024, random-output-len: 256,
                                    random-range-ratio: 1, max-concurrency: 16, num-prompts: 64}}
```

A flag's value `true` writes the bare flag, `false` or `null` leaves it out, a list writes several values.
Flags are passed through to SGLang as written: the runner never renames them, so a run is reproduced by the
command lines it records (`server_cmd.txt`, `<run>/bench_cmd.txt`).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from simperf.strictyaml import error_line, read_error, safe_load

FlagValue = str | int | float | bool | list[str | int | float] | None
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_FLAG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
# Set by the runner itself (paths, ports, where the per-request timings go); a plan must not set them.
RUNNER_SERVER_FLAGS = frozenset(
    {"model-path", "tokenizer-path", "host", "port", "load-format", "export-metrics-to-file-dir"}
)
RUNNER_CLIENT_FLAGS = frozenset(
    {
        "host",
        "port",
        "base-url",
        "model",
        "tokenizer",
        "output-file",
        "output-details",
        "dataset-path",
        "backend",
    }
)


class PlanError(ValueError):
    """A plan file that cannot be used; the message names the file and the field."""


class _Strict(BaseModel):
    # startup_timeout_s: .inf waited for a server that never came up for ever (the scenario's models refuse it too)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _check_flags(flags: dict[str, FlagValue], reserved: frozenset[str]) -> dict[str, FlagValue]:
    for name in flags:
        if name.startswith("-"):
            raise ValueError(f"write flag {name!r} without leading dashes ({name.lstrip('-')!r})")
        if not _FLAG.match(name):
            raise ValueError(f"{name!r} is not a flag name (lower-case words joined by '-')")
        if name in reserved:
            raise ValueError(f"{name!r} is set by the runner; leave it out")
    return flags


def _check_name(v: str) -> str:
    if not _NAME.match(v):
        raise ValueError(f"{v!r}: use letters, digits, '.', '_' or '-'")
    return v


# a directory name; launch_server flags; bench_serving flags (each checked against what the runner sets itself)
Name = Annotated[str, AfterValidator(_check_name)]
ServerFlags = Annotated[dict[str, FlagValue], AfterValidator(lambda v: _check_flags(v, RUNNER_SERVER_FLAGS))]
# datasets whose rows are the run's own file, so its --dataset-path comes from the plan, after the runner's prompt
# source (bench_serving's parser keeps the last): a Mooncake trace (bench_serving replays its timestamps and
# lengths) and a `custom` dataset of conversations (benchmark/datasets/custom.py: the prompts we wrote)
TRACE_DATASETS = frozenset({"mooncake", "custom"})


def _check_client_flags(flags: dict[str, FlagValue]) -> dict[str, FlagValue]:
    reserved = RUNNER_CLIENT_FLAGS
    if flags.get("dataset-name") in TRACE_DATASETS:
        if not flags.get("dataset-path"):
            raise ValueError(f"dataset-name {flags['dataset-name']!r} needs its own file as dataset-path")
        reserved = reserved - {"dataset-path"}
    return _check_flags(flags, reserved)


ClientFlags = Annotated[dict[str, FlagValue], AfterValidator(_check_client_flags)]


class RunSpec(_Strict):
    name: Name = Field(description="directory name of the run (letters, digits, . _ -)")
    client: ClientFlags = Field(default_factory=dict, description="bench_serving flags")
    expected_s: float | None = Field(
        default=None,
        gt=0,
        description="planning estimate of the run's wall time; a run is not started when "
        "less than this is left before the runner's deadline",
    )


class ServerSpec(_Strict):
    name: Name = Field(description="directory name of the server (letters, digits, . _ -)")
    model: str = Field(
        description="zoo model name, or a directory holding a HF config.json, or a config.json"
    )
    weights: str = Field(
        default="dummy",
        description="'dummy' (random weights: --load-format dummy, same kernels and speed) or a checkpoint dir",
    )
    draft_model: str | None = Field(
        default=None,
        description="the speculative draft as `model` is given (a zoo name, or a directory/config.json): written "
        "beside the model with random weights and passed as --speculative-draft-model-path",
    )
    server: ServerFlags = Field(default_factory=dict, description="launch_server flags")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment of the server process")
    startup_timeout_s: float = Field(
        default=900.0, gt=0, description="give up on a server not healthy by then"
    )
    runs: list[RunSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_runs(self) -> ServerSpec:
        seen: set[str] = set()
        for run in self.runs:
            if run.name in seen:
                raise ValueError(f"run name {run.name!r} appears twice")
            seen.add(run.name)
        return self


class Defaults(_Strict):
    server: ServerFlags = Field(default_factory=dict)
    client: ClientFlags = Field(default_factory=dict)


class GroundTruthPlan(_Strict):
    name: str = "groundtruth"
    defaults: Defaults = Defaults()
    servers: list[ServerSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_servers(self) -> GroundTruthPlan:
        seen: set[str] = set()
        for s in self.servers:
            if s.name in seen:
                raise ValueError(f"server name {s.name!r} appears twice")
            seen.add(s.name)
        return self

    def server_flags(self, server: ServerSpec) -> dict[str, FlagValue]:
        return {**self.defaults.server, **server.server}

    def client_flags(self, run: RunSpec) -> dict[str, FlagValue]:
        return {**self.defaults.client, **run.client}


def flags_to_argv(flags: dict[str, FlagValue]) -> list[str]:
    """{'tp-size': 2, 'enable-metrics': True, 'cuda-graph-bs': [1, 2]} -> ['--tp-size', '2', '--enable-metrics',
    '--cuda-graph-bs', '1', '2'] (False/None leave the flag out)."""
    argv: list[str] = []
    for name, value in flags.items():
        if value is None or value is False:
            continue
        argv.append(f"--{name}")
        if value is True:
            continue
        if isinstance(value, list):
            argv.extend(_scalar(v) for v in value)
        else:
            argv.append(_scalar(value))
    return argv


def _scalar(value: str | int | float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else repr(value)
    return str(value)


def server_fingerprint(server: ServerSpec, flags: dict[str, FlagValue]) -> str:
    """What makes two servers interchangeable: a running one is reused by a later call only if this matches."""
    blob = json.dumps(
        {
            "model": server.model,
            "draft": server.draft_model,
            "weights": server.weights,
            "flags": flags,
            "env": server.env,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def load_plan(path: Path) -> GroundTruthPlan:
    # read as the scenario's YAML is: a flag given twice in one mapping kept the last without a word, a file that is
    # not UTF-8 failed naming no file, and PyYAML's report spanned several lines
    try:
        raw: Any = safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(f"{path}: cannot read ({read_error(e)})") from None
    except yaml.YAMLError as e:
        raise PlanError(f"{path}: not valid YAML ({error_line(e)})") from None
    if not isinstance(raw, dict):
        raise PlanError(f"{path}: expected a mapping with 'servers:'")
    try:
        return GroundTruthPlan.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise PlanError(f"{path}: {where}: {first['msg']}") from None
