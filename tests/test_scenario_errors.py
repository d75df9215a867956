"""Scenario files: bad input is rejected with the field path and what is allowed."""

from __future__ import annotations

import json

import pytest

from simperf.scenario.load import ScenarioError, load_scenario, parse_scenario, scenario_json_schema

GOOD = {
    "model": {"name": "qwen3-8b"},
    "hardware": {"gpu": "h100", "count": 1},
    "workload": {"dataset": {"kind": "random", "input_len": 128, "output_len": 32}, "num_prompts": 10},
}


def with_changes(**sections):
    data = json.loads(json.dumps(GOOD))
    for section, value in sections.items():
        if isinstance(value, dict) and isinstance(data.get(section), dict):
            data[section].update(value)
        else:
            data[section] = value
    return data


def error_of(data) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data, "s.yaml")
    return str(info.value)


def test_good_scenario_parses_with_sglang_defaults():
    sc = parse_scenario(GOOD)
    assert sc.serving.tp == 1 and sc.serving.schedule_policy == "fcfs"
    assert sc.workload.request_rate == "inf" and sc.workload.seed == 42


def test_unknown_key_is_rejected_with_its_path():
    msg = error_of(with_changes(serving={"tp": 1, "pagesize": 16}))
    assert "serving.pagesize" in msg and "unknown key" in msg


def test_bad_enum_lists_allowed_values():
    msg = error_of(with_changes(hardware={"gpu": "h300"}))
    assert "hardware.gpu" in msg and "'h100'" in msg and "'b200'" in msg


def test_out_of_range_number_names_field():
    msg = error_of(
        with_changes(
            workload={"dataset": {"kind": "random", "input_len": 10, "output_len": 5, "range_ratio": 2}}
        )
    )
    assert "workload.dataset.range_ratio" in msg


def test_unknown_dataset_kind_lists_kinds():
    msg = error_of(with_changes(workload={"dataset": {"kind": "sharegpt"}}))
    assert "workload.dataset" in msg and "'random'" in msg and "'trace'" in msg


def test_negative_rate_rejected():
    msg = error_of(with_changes(workload={"request_rate": -2}))
    assert "workload.request_rate" in msg and "'inf'" in msg


def test_yaml_infinity_is_an_infinite_request_rate(tmp_path):
    """`request_rate: .inf`, YAML's own infinity, was refused with "got inf; expected a finite number or 'inf'"."""
    path = tmp_path / "s.yaml"
    path.write_text(
        "model: {name: qwen3-8b}\nhardware: {gpu: h100}\n"
        "workload: {dataset: {kind: random, input_len: 128, output_len: 32}, num_prompts: 10, request_rate: .inf}\n"
    )
    assert load_scenario(path).workload.request_rate == "inf"
    assert "request_rate" in error_of(with_changes(workload={"request_rate": float("-inf")}))


def test_yaml11_yes_no_on_off_stay_true_false_for_switches_and_are_named_for_text(tmp_path):
    """A bool field keeps YAML 1.1's yes/no/on/off (disable_cuda_graph: yes); a text field given one is refused
    naming the word (name: no was 'Input should be a valid string (got False)'); the loaded file dumps as before."""
    import yaml

    from simperf.scenario.load import load_scenario_mapping

    path = tmp_path / "s.yaml"
    text = (
        "name: {name}\nmodel: {{name: qwen3-8b}}\nhardware: {{gpu: h100}}\nserving: {{disable_cuda_graph: {switch}}}\n"
        "workload: {{dataset: {{kind: random, input_len: 128, output_len: 32}}, num_prompts: 10}}\n"
    )
    path.write_text(text.format(name="runs", switch="yes"))
    assert load_scenario(path).serving.disable_cuda_graph is True
    path.write_text(text.format(name="runs", switch="Off"))
    assert load_scenario(path).serving.disable_cuda_graph is False
    assert yaml.safe_load(yaml.safe_dump(load_scenario_mapping(path)))["serving"] == {
        "disable_cuda_graph": False
    }
    path.write_text(text.format(name="no", switch="yes"))
    with pytest.raises(ScenarioError, match="name: YAML 1.1 reads no as false; quote it: 'no'"):
        load_scenario(path)
    path.write_text(text.format(name="'no'", switch="yes"))
    assert load_scenario(path).name == "no"
    # a mapping built in code has no file words: the value is named, and quoting is still the remedy
    assert "name: got false, which YAML reads as true/false" in error_of({**GOOD, "name": False})


def test_layout_must_be_consistent():
    assert "dp_attention (3) must divide tp (8)" in error_of(
        with_changes(hardware={"count": 8}, serving={"tp": 8, "dp_attention": 3})
    )
    assert "needs at least that many GPUs" in error_of(with_changes(serving={"tp": 2}))


def test_missing_required_field_reported():
    data = with_changes()
    del data["hardware"]
    assert "hardware: required field is missing" in error_of(data)


def test_all_problems_reported_at_once():
    msg = error_of(with_changes(hardware={"gpu": "x"}, serving={"tpp": 1}))
    assert "2 problem(s)" in msg


def test_yaml_syntax_error_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(bad)
    with pytest.raises(ScenarioError, match="no such scenario file"):
        load_scenario(tmp_path / "missing.yaml")


def test_trace_path_is_relative_to_the_scenario_file(tmp_path):
    (tmp_path / "t.jsonl").write_text('{"arrival_s": 0, "input_len": 5, "output_len": 2}\n')
    (tmp_path / "s.yaml").write_text(
        "model: {name: qwen3-8b}\nhardware: {gpu: h100}\nworkload:\n  dataset: {kind: trace, path: t.jsonl}\n"
    )
    sc = load_scenario(tmp_path / "s.yaml")
    assert sc.workload.dataset.path == tmp_path / "t.jsonl"


def test_json_schema_exports_every_section():
    schema = json.loads(scenario_json_schema())
    assert {"model", "hardware", "serving", "workload", "overheads"} <= set(schema["properties"])
