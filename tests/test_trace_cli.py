"""`simperf trace inspect|convert|export` through typer, as the main CLI will register them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from simperf.workload.cli import convert_command, export_command, inspect_command
from simperf.workload.summary import hit_rate_over_time
from simperf.workload.trace import read_trace

TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"

app = typer.Typer()
app.command("inspect")(inspect_command)
app.command("convert")(convert_command)
app.command("export")(export_command)
runner = CliRunner()


def shared_trace(name: str) -> Path:
    path = TRACES / name
    if not path.is_file():
        pytest.skip(f"shared trace {name} not present")
    return path


def test_inspect_reports_counts_rates_lengths_and_prefix_reuse():
    result = runner.invoke(
        app, ["inspect", str(shared_trace("mooncake_synthetic_trace.jsonl")), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["count"] == 3993 and summary["format"] == "mooncake"
    assert len(summary["rate_over_time"]) == 12
    assert summary["input_len"]["mean"] == pytest.approx(15325, rel=0.01)  # README: avg 15,325
    reuse = summary["prefix_reuse"]
    assert 0 < reuse["ratio"] < 1 and reuse["block_tokens"] == 512


def test_inspect_prints_a_table_and_a_bounded_cache_reuses_less():
    path = str(shared_trace("mooncake_synthetic_trace.jsonl"))
    text = runner.invoke(app, ["inspect", path])
    assert text.exit_code == 0 and "prefix reuse" in text.output and "3,993" in text.output
    unbounded = json.loads(runner.invoke(app, ["inspect", path, "-o", "json"]).output)
    bounded = json.loads(
        runner.invoke(app, ["inspect", path, "-o", "json", "--cache-tokens", "200000"]).output
    )
    assert bounded["prefix_reuse"]["ratio"] < unbounded["prefix_reuse"]["ratio"]


def test_inspect_names_the_bad_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 5, "output_length": 1}\n{"timestamp": 1}\n')
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 2 and "bad.jsonl:2" in result.output


def test_convert_writes_simperf_schema_that_reads_back(tmp_path):
    src = shared_trace("azure_llm_inference_2023_code.csv")
    dst = tmp_path / "code.parquet"
    result = runner.invoke(app, ["convert", str(src), str(dst), "--limit", "100"])
    assert result.exit_code == 0, result.output
    again, original = read_trace(dst), read_trace(src, limit=100)
    assert again.format == "simperf" and again.input_len.tolist() == original.input_len.tolist()


def test_convert_needs_a_rate_for_a_file_without_times(tmp_path):
    src = tmp_path / "run.jsonl"
    src.write_text(
        json.dumps({"input_lens": [5, 6, 7], "output_lens": [1, 2, 3], "errors": ["", "", "boom"]}) + "\n"
    )
    refused = runner.invoke(app, ["convert", str(src), str(tmp_path / "a.jsonl")])
    assert refused.exit_code == 2 and "give --rate" in refused.output
    done = runner.invoke(app, ["convert", str(src), str(tmp_path / "a.jsonl"), "--rate", "2"])
    assert done.exit_code == 0 and "skipped request 2: failed (boom)" in done.output
    assert read_trace(tmp_path / "a.jsonl").input_len.tolist() == [5, 6]


def test_export_writes_a_generated_workload_with_its_block_ids(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "model: {name: qwen3-8b}\nhardware: {gpu: h100}\n"
        "workload:\n  dataset: {kind: shared_prefix, num_groups: 2, prompts_per_group: 3}\n  request_rate: 1\n"
    )
    dst = tmp_path / "gsp.jsonl"
    result = runner.invoke(app, ["export", str(scenario), str(dst)])
    assert result.exit_code == 0, result.output
    trace = read_trace(dst)
    assert len(trace) == 6 and trace.hash_block_tokens == 64 and trace.block_hashes is not None


def test_reuse_over_time_grows_as_an_unbounded_cache_warms():
    path = str(shared_trace("mooncake_conversation_trace.jsonl"))
    reuse = json.loads(runner.invoke(app, ["inspect", path, "-o", "json", "--bins", "4"]).output)[
        "prefix_reuse"
    ]
    assert len(reuse["ratio_over_time"]) == 4 and reuse["ratio_over_time"][0] < reuse["ratio_over_time"][-1]


def test_hit_rate_over_time_weights_by_prompt_tokens():
    times = np.array([0.0, 1.0, 2.0, 9.0, 10.0])
    rates = hit_rate_over_time(times, np.array([0, 50, 0, 10, 30]), np.array([100, 100, 100, 20, 40]), bins=2)
    assert rates == pytest.approx([50 / 300, 40 / 60])
    assert np.isnan(hit_rate_over_time(times, times, times + 1, bins=20)[5])


@pytest.mark.parametrize("times,expected", [((0.0, 0.5), "rate per 0.0417 s"), ((0.0, 0.0), "every request")])
def test_inspect_labels_short_bins_and_no_rate_for_one_instant(tmp_path, times, expected):
    """A sub-second trace was labelled "rate per 0 s"; requests all at 0 s printed "mean rate inf req/s"."""
    path = tmp_path / "t.jsonl"
    path.write_text(
        "".join(json.dumps({"arrival_s": t, "input_len": 5, "output_len": 1}) + "\n" for t in times)
    )
    result = runner.invoke(app, ["inspect", str(path)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert expected in result.output and "inf" not in result.output and "per 0 s" not in result.output


def _export_output(tmp_path: Path, workload: str) -> str:
    """`trace export` of a Qwen3-8B / H100 scenario with this workload (YAML lines under `workload:`): its output,
    whitespace folded (a note may wrap)."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text("model: {name: qwen3-8b}\nhardware: {gpu: h100}\nworkload:\n" + workload)
    result = runner.invoke(app, ["export", str(scenario), str(tmp_path / "out.jsonl")])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_export_of_multi_turn_says_the_turns_are_no_longer_held(tmp_path):
    """A multi_turn client holds each later turn until the previous answer is complete; a trace keeps only the
    planned send times, so its replay sends them open-loop. The export said nothing of it."""
    text = _export_output(
        tmp_path,
        "  dataset: {kind: multi_turn, num_conversations: 2, turns: 3, input_len: 64, output_len: 8}\n"
        "  request_rate: 1\n",
    )
    assert "note: 4 of the requests are later turns" in text
    assert "open-loop" in text


def test_export_of_a_concurrency_limited_workload_says_the_limit_is_not_in_the_trace(tmp_path):
    """A client capped at max_concurrency sends each request when a slot frees; the trace keeps only the planned
    send times (all 0 s without a rate), so its replay sends them uncapped. The export said nothing of it."""
    text = _export_output(
        tmp_path,
        "  dataset: {kind: random, input_len: 64, output_len: 8}\n  num_prompts: 4\n  max_concurrency: 2\n",
    )
    assert "note: the scenario's client keeps at most 2 requests in flight (workload.max_concurrency)" in text


def test_export_names_the_client_settings_the_trace_does_not_keep(tmp_path):
    """ignore_eos, tokenize_prompt and warmup_requests shape the run but have no trace column: a scenario replaying
    the export ran the defaults, and the export said nothing of it (settings at their defaults stay unnamed)."""
    text = _export_output(
        tmp_path,
        "  dataset: {kind: random, input_len: 64, output_len: 8}\n  num_prompts: 4\n  request_rate: 2\n"
        "  ignore_eos: false\n  tokenize_prompt: true\n  warmup_requests: 1\n",
    )
    assert "not the client's settings (workload.ignore_eos: false, workload.tokenize_prompt: true)" in text


def test_a_reuse_bin_without_requests_prints_a_dash_not_nan(tmp_path: Path):
    """A bin no request arrived in has no hit ratio: the text summary printed it as 'nan%'."""
    path = tmp_path / "gap.jsonl"
    row = '{"timestamp": %d, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\n'
    path.write_text(row % 0 + row % 10_000)
    result = runner.invoke(app, ["inspect", str(path), "--bins", "4"])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if "reuse per" in line)
    assert "nan" not in line and "0% - - " in line, line
