"""`simperf predict` end to end through the CLI, on small scenarios (no GPU, no torch)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from clierrors import one_error_line
from typer.testing import CliRunner

from simperf.cli import app
from simperf.report.metrics import summarize
from simperf.report.output import read_requests_parquet

runner = CliRunner()

SMALL = """
name: tiny
model: {name: qwen3-8b}
hardware: {gpu: h100, count: 1}
workload:
  dataset: {kind: random, input_len: 512, output_len: 64}
  num_prompts: 40
  request_rate: 8
"""


def test_predict_prints_bench_block(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SMALL)
    result = runner.invoke(app, ["predict", str(path)])
    assert result.exit_code == 0, result.output
    assert "Serving Benchmark Result" in result.output
    assert "Successful requests:" in result.output and "40" in result.output
    assert "Step time from measured tables" in result.output


def test_predict_json_has_bench_serving_keys_and_requests_parquet_recomputes_them(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SMALL)
    out = tmp_path / "req.parquet"
    result = runner.invoke(app, ["predict", str(path), "-o", "json", "--requests", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in ("completed", "mean_ttft_ms", "median_tpot_ms", "p99_itl_ms", "output_throughput", "duration"):
        assert key in data
    assert data["completed"] == 40
    shares = data["simperf"]["step_time_share_by_source"]
    assert abs(sum(shares.values()) - 1.0) < 1e-9
    # invariant 7: metrics are a pure function of the per-request records
    again = summarize(read_requests_parquet(out))
    assert again["mean_ttft_ms"] == data["mean_ttft_ms"]
    assert again["median_itl_ms"] == data["median_itl_ms"]


def test_bad_scenario_exits_2_with_field_path(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SMALL.replace("gpu: h100", "gpu: h300"))
    result = runner.invoke(app, ["predict", str(path)])
    assert result.exit_code == 2
    assert "hardware.gpu" in result.output


def test_speculative_without_accept_length_is_refused_with_field_path(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SMALL + "serving:\n  speculative: {num_steps: 3}\n")
    result = runner.invoke(app, ["predict", str(path)])
    assert result.exit_code == 2 and "serving.speculative.accept_length" in result.output


def test_speculative_decoding_lowers_tpot_at_low_load(tmp_path):
    plain = tmp_path / "plain.yaml"
    plain.write_text(SMALL.replace("request_rate: 8", "request_rate: 1"))
    # an EAGLE draft model: the small scenario's model has no MTP layers of its own
    eagle = tmp_path / "eagle.yaml"
    eagle.write_text(
        plain.read_text()
        + "serving:\n  speculative: {algorithm: eagle, num_steps: 3, accept_length: {mean: 2.5}}\n"
    )
    a = json.loads(runner.invoke(app, ["predict", str(plain), "-o", "json"]).stdout)
    b = json.loads(runner.invoke(app, ["predict", str(eagle), "-o", "json"]).stdout)
    assert b["median_tpot_ms"] < a["median_tpot_ms"]


def test_a_spread_of_accept_lengths_reaches_the_simulator(tmp_path):
    """accept_length.min/max were validated and then dropped on the way to the simulator: a spread across requests
    changed nothing. The same mean with a spread must give another prediction (per-request means drawn over it)."""
    base = (
        SMALL.replace("request_rate: 8", "request_rate: 1")
        + "serving:\n  speculative: {algorithm: eagle, num_steps: 3, "
    )
    narrow, wide = tmp_path / "narrow.yaml", tmp_path / "wide.yaml"
    narrow.write_text(base + "accept_length: {mean: 2.5}}\n")
    wide.write_text(base + "accept_length: {mean: 2.5, min: 1.5, max: 3.5}}\n")
    a = json.loads(runner.invoke(app, ["predict", str(narrow), "-o", "json"]).stdout)
    b = json.loads(runner.invoke(app, ["predict", str(wide), "-o", "json"]).stdout)
    assert a["median_tpot_ms"] != b["median_tpot_ms"]
    # the population mean is kept: the spread moves the mean TPOT by a few percent, not more
    assert abs(b["mean_tpot_ms"] / a["mean_tpot_ms"] - 1) < 0.1


def test_schema_command_prints_json_schema():
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    assert "workload" in json.loads(result.stdout)["properties"]


def test_predict_path_never_imports_torch(tmp_path):
    import subprocess

    path = tmp_path / "s.yaml"
    path.write_text(SMALL)
    # a fresh interpreter: other tests in this process may have imported torch themselves
    code = (
        "import sys; from typer.testing import CliRunner; from simperf.cli import app; "
        f"r = CliRunner().invoke(app, ['predict', {str(path)!r}, '-o', 'json']); "
        "assert r.exit_code == 0, r.output; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_calibrate_subcommand_passes_its_arguments_through(tmp_path):
    result = runner.invoke(
        app, ["calibrate", "--dry-run", "--ops", "gemm", "--gpu", "h200", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output


def test_trace_request_prints_one_requests_life_to_stderr(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SMALL)
    result = runner.invoke(app, ["predict", str(path), "-o", "json", "--trace-request", "5"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)  # stdout stays the JSON document
    trace = result.stderr
    assert "request 5" in trace
    for what in ("queued", "admitted", "chunk", "token", "finished", "TTFT"):
        assert what in trace, trace


def test_trace_request_is_refused_for_a_pd_pair():
    pd_pair = Path(__file__).resolve().parents[1] / "scenarios" / "layouts" / "r1-1p1d-h200.yaml"
    result = runner.invoke(app, ["predict", str(pd_pair), "--trace-request", "1"])
    assert result.exit_code != 0
    assert "--trace-request" in result.output


def test_a_traces_unused_accept_len_is_said(tmp_path):
    """A simperf trace's per-request accept_len is read but no simulator takes it: a trace of accept lengths 1.2
    predicted exactly what one of 3.9 did, and nothing said so. The prediction now warns."""
    trace = tmp_path / "t.jsonl"
    rows = [{"arrival_s": i * 0.5, "input_len": 256, "output_len": 32, "accept_len": 1.2} for i in range(8)]
    trace.write_text("".join(json.dumps(row) + "\n" for row in rows))
    path = tmp_path / "s.yaml"
    path.write_text(
        SMALL.replace(
            "dataset: {kind: random, input_len: 512, output_len: 64}",
            f"dataset: {{kind: trace, path: {trace}}}",
        ).replace("  request_rate: 8\n", "")
        + "serving:\n  speculative: {algorithm: eagle, num_steps: 3, accept_length: {mean: 2.5}}\n"
    )
    result = runner.invoke(app, ["predict", str(path), "-q"])
    assert result.exit_code == 0, result.output
    assert "WARNING: the trace's accept_len is not used" in result.output
    plain = tmp_path / "plain.jsonl"
    plain.write_text(
        "".join(json.dumps({k: v for k, v in row.items() if k != "accept_len"}) + "\n" for row in rows)
    )
    path.write_text(path.read_text().replace(str(trace), str(plain)))
    assert "accept_len" not in runner.invoke(app, ["predict", str(path), "-q"]).output


def test_json_output_carries_the_text_outputs_notes_and_warnings(tmp_path):
    """-o json left out the simperf section's lines: a JSON reader never saw that output lengths are upper bounds
    (ignore_eos false) or how many requests were capped to the KV pool."""
    path = tmp_path / "s.yaml"
    path.write_text(
        SMALL.replace("num_prompts: 40", "num_prompts: 8\n  ignore_eos: false")
        + "serving: {max_total_tokens: 300}\n"
    )
    text = runner.invoke(app, ["predict", str(path), "-q"])
    data = json.loads(runner.invoke(app, ["predict", str(path), "-q", "-o", "json"]).stdout)
    notes = data["simperf"]["notes"]
    assert "WARNING: output lengths are upper bounds" in notes
    assert int(notes["Requests capped to the context length"]) > 0
    for label in notes:
        assert label in text.output


def test_an_option_repeated_with_its_own_value_is_accepted(tmp_path):
    """Only a repeat with another value is refused (as the launch_server flags do): -q -q and -o json --output=json
    mean one thing."""
    path = tmp_path / "s.yaml"
    path.write_text(SMALL.replace("num_prompts: 40", "num_prompts: 4"))
    result = runner.invoke(app, ["predict", str(path), "-q", "--quiet", "-o", "json", "--output=json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["completed"] == 4


def test_eager_decode_steps_take_an_eager_forwards_measured_host_time(tmp_path):
    """Decode without CUDA graphs was priced at a 5 us-per-kernel guess, so --disable-cuda-graph predicted a lower
    TPOT than the graphs did. An eager decode runs SGLang's Python per layer like an eager extend, and the decode
    steps of the same one_batch records took as long (Qwen3-8B, H100, batch 1: 26.8 ms): at batch 1 the step is
    its 437 kernels x the dense model's 64.5 us (x the single-H100 host's speed), and the prediction says so."""
    path = tmp_path / "s.yaml"
    path.write_text(
        SMALL.replace("num_prompts: 40", "num_prompts: 4").replace("request_rate: 8", "request_rate: 0.5")
    )
    graphs = runner.invoke(app, ["predict", str(path), "-q", "-o", "json"])
    eager = runner.invoke(app, ["predict", str(path), "-q", "-o", "json", "--disable-cuda-graph"])
    assert graphs.exit_code == 0 and eager.exit_code == 0, eager.output
    graph_tpot, eager_tpot = (json.loads(r.stdout)["median_tpot_ms"] for r in (graphs, eager))
    assert graph_tpot < 10.0 < 20.0 < eager_tpot < 35.0
    notes = json.loads(eager.stdout)["simperf"]["notes"]
    assert "(serving.disable_cuda_graph)" in notes["Decode steps without a CUDA graph"]
    assert "eager_extend_us_per_kernel_dense" in notes["Decode steps without a CUDA graph"]


def test_a_set_value_that_is_not_yaml_is_named_on_one_line():
    """`--set serving.tp=[a` printed PyYAML's report over four lines (problem, source line, caret, problem); fleet
    compare|plan read the same flag in their own copy, which was one line: both now read it in one place."""
    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "qwen3-8b-h100.yaml"
    line = one_error_line(["predict", str(scenario), "--set", "serving.tp=[a"])
    assert "--set serving.tp: value '[a' is not valid YAML" in line


def test_an_error_in_a_pipe_is_one_line_without_a_blank_one_before_it(tmp_path):
    """The transient progress display, meant to print nothing off a terminal, still ended with a newline: the one
    error line came second, after a blank one."""
    path = tmp_path / "s.yaml"
    path.write_text(SMALL.replace("qwen3-8b", "gpt-17"))
    result = runner.invoke(app, ["predict", str(path)])
    assert result.exit_code == 2 and result.output.startswith("error: "), repr(result.output)
    assert len(result.output.splitlines()) == 1, repr(result.output)


def test_what_the_workload_left_out_is_said(tmp_path):
    """A trace shorter than an explicit num_prompts ran its 3 requests where 10 were asked for, and a bench_serving
    file's failed requests were left out of the replay, both without a word (RequestSet.notes reached no output);
    now each is a Workload note in the text and the JSON. The default num_prompts (not given) says nothing."""
    (tmp_path / "t.jsonl").write_text(
        "".join(json.dumps({"arrival_s": i, "input_len": 100, "output_len": 10}) + "\n" for i in range(3))
    )
    (tmp_path / "bs.jsonl").write_text(
        json.dumps({"input_lens": [5, 6, 7], "output_lens": [2, 0, 3], "errors": ["", "timeout", ""]}) + "\n"
    )
    trace = SMALL.replace("  dataset: {kind: random, input_len: 512, output_len: 64}", "  dataset: {kind: trace, "
                          "path: t.jsonl}").replace("  request_rate: 8\n", "").replace("num_prompts: 40", "num_prompts: 10")  # fmt: skip
    cases = {
        "short.yaml": (
            trace,
            "workload.num_prompts is 10 and the trace holds 3 requests in all: all 3 replayed",
        ),
        "failed.yaml": (
            SMALL.replace(
                "{kind: random, input_len: 512, output_len: 64}",
                "{kind: trace, path: bs.jsonl, use_timestamps: false}",
            ).replace("  num_prompts: 40\n", ""),  # fmt: skip
            "1 failed request(s) of the recorded run left out (first: request 1: failed (timeout))",
        ),
    }
    for name, (text, note) in cases.items():
        (tmp_path / name).write_text(text)
        shown = runner.invoke(app, ["predict", str(tmp_path / name), "-q"])
        assert shown.exit_code == 0 and note in shown.output, shown.output
        data = json.loads(runner.invoke(app, ["predict", str(tmp_path / name), "-q", "-o", "json"]).stdout)
        assert data["simperf"]["notes"]["Workload"] == note
    (tmp_path / "whole.yaml").write_text(trace.replace("  num_prompts: 10\n", ""))
    assert "Workload" not in runner.invoke(app, ["predict", str(tmp_path / "whole.yaml"), "-q"]).output
