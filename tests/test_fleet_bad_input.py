"""`simperf fleet compare|plan` on careless scenario files and --set values: one `error:` line that names the file
or the option, never an internal error or a multi-line report."""

from __future__ import annotations

from pathlib import Path

import pytest
from clierrors import one_error_line

FLEET = """
name: f
model: {name: qwen3-8b}
hardware: {gpu: h100, count: 1}
fleet:
  replicas: [{count: 2}]
workload:
  dataset: {kind: random, input_len: 64, output_len: 4}
  num_prompts: 4
  request_rate: 5
"""
COMMANDS = (("fleet", "compare"), ("fleet", "plan", "--rate", "5"))


def _with_scenario(command: tuple[str, ...], path: Path, *extra: str) -> list[str]:
    return [*command[:2], str(path), *command[2:], *extra]


@pytest.mark.parametrize("command", COMMANDS, ids=["compare", "plan"])
def test_a_list_scenario_with_a_set_is_named_not_an_internal_error(tmp_path: Path, command):
    """--set walked into the list and failed with 'internal error (TypeError: list indices must be integers ...)'."""
    path = tmp_path / "l.yaml"
    path.write_text("- a\n- b\n")
    line = one_error_line(_with_scenario(command, path, "--set", "fleet.router.seed=1"))
    assert "l.yaml: a scenario must be a mapping of keys to values, got list" in line


@pytest.mark.parametrize("command", COMMANDS, ids=["compare", "plan"])
def test_a_scenario_that_is_not_utf8_names_the_file(tmp_path: Path, command):
    """The error was Python's "'utf-8' codec can't decode byte 0xe9 ...", naming no file."""
    path = tmp_path / "latin1.yaml"
    path.write_bytes(FLEET.replace("name: f", "name: caf\xe9").encode("latin-1"))
    line = one_error_line(_with_scenario(command, path))
    assert "latin1.yaml: cannot read the scenario" in line


def test_a_directory_is_not_reported_as_missing(tmp_path: Path):
    """A directory was reported as 'no such scenario file', which it is not."""
    line = one_error_line(["fleet", "compare", str(tmp_path)])
    assert "cannot read the scenario" in line and "no such" not in line


def test_an_empty_scenario_file_is_one_line(tmp_path: Path):
    """An empty file was read as {} and reported as three missing fields over four lines."""
    path = tmp_path / "empty.yaml"
    path.write_text("")
    line = one_error_line(["fleet", "compare", str(path)])
    assert "empty.yaml: a scenario must be a mapping of keys to values" in line


def test_a_set_value_that_is_not_yaml_names_the_option(tmp_path: Path):
    """PyYAML's report ('while parsing a flow sequence ...') was printed over six lines, naming no --set."""
    path = tmp_path / "f.yaml"
    path.write_text(FLEET)
    line = one_error_line(["fleet", "compare", str(path), "--set", "fleet.router.policy=[a"])
    assert "--set fleet.router.policy: value '[a' is not valid YAML" in line


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("fleet.router.polcy=x", "--set fleet.router.polcy: 'fleet.router.polcy' is not a scenario field"),
        # was 'f.yaml: fleet: unknown key': the list index was added as a key and then dropped from the message
        (
            "fleet.replicas[0].count=0",
            "--set fleet.replicas[0].count: 'fleet.replicas[0].count': list items have no field paths (an index "
            "is not read); set fleet.replicas whole, as a list",
        ),
    ],
    ids=["misspelt", "list-index"],
)
def test_a_set_path_that_is_no_field_names_the_option(tmp_path: Path, item: str, expected: str):
    """A misspelt --set path was blamed on the scenario file ('f.yaml: fleet.router.polcy: unknown key')."""
    path = tmp_path / "f.yaml"
    path.write_text(FLEET)
    assert expected in one_error_line(["fleet", "compare", str(path), "--set", item])
