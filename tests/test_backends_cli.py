"""`simperf backends` agrees with what a scenario accepts, and every table command's output is complete when piped."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simperf.cli import app
from simperf.hardware.catalog import get_gpu
from simperf.models.zoo import load_arch
from simperf.scenario.backend_matrix import backend_options
from simperf.scenario.backends import BackendError
from simperf.scenario.load import parse_scenario
from simperf.scenario.resolve import resolve

runner = CliRunner()


@pytest.mark.parametrize(
    "model, gpu", [("deepseek-r1", "h200"), ("qwen3-8b", "h100"), ("deepseek-v3.2", "h200")]
)
def test_listed_refusals_are_the_refusals_a_scenario_gets(model, gpu):
    for option in backend_options(load_arch(model), get_gpu(gpu)):
        serving = {"tp": 8, "attention_backend": option.backend}
        if option.needs:
            serving["kv_cache_dtype"] = "fp8_e4m3"
        sc = parse_scenario(
            {
                "model": {"name": model},
                "hardware": {"gpu": gpu, "count": 8},
                "serving": serving,
                "workload": {"dataset": {"kind": "random", "input_len": 10, "output_len": 10}},
            }  # fmt: skip
        )
        if option.usable:
            resolve(sc)
        else:
            with pytest.raises(BackendError) as e:
                resolve(sc)
            assert option.reason.split("; ")[0] in str(e.value)


def test_defaults_and_needs_are_marked():
    r1 = {o.backend: o for o in backend_options(load_arch("deepseek-r1"), get_gpu("h200"))}
    assert r1["fa3"].default_for == "prefill and decode" and r1["fa3"].decode_table.startswith("measured")
    assert not r1["trtllm_mla"].usable and "Blackwell" in r1["trtllm_mla"].reason
    v32 = {o.backend: o for o in backend_options(load_arch("deepseek-v3.2"), get_gpu("h200"))}
    assert v32["flashmla_kv"].usable and v32["flashmla_kv"].needs == "kv_cache_dtype: fp8_e4m3"
    assert v32["flashmla_sparse"].default_for == "prefill" and v32["fa3"].default_for == "decode"


def test_backends_json_and_piped_text_are_complete():
    data = json.loads(runner.invoke(app, ["backends", "--gpu", "h200", "-o", "json"]).stdout)
    assert {r["gpu"] for r in data} == {"h200"} and all(
        set(r) >= {"backend", "usable", "reason"} for r in data
    )
    text = runner.invoke(app, ["backends", "--gpu", "h200", "--model", "qwen3-8b"]).stdout
    longest = max((r["reason"] for r in data if r["model"] == "qwen3-8b"), key=len)
    assert longest in text and "…" not in text  # a pipe gets every cell in full
    tsv = runner.invoke(
        app, ["backends", "--gpu", "h200", "--model", "qwen3-8b", "-o", "tsv"]
    ).stdout.splitlines()
    assert tsv[1].split("\t")[:3] == ["gpu", "model", "backend"] and len(tsv) == 2 + 8
    bad = runner.invoke(app, ["backends", "--gpu", "h300"])
    assert bad.exit_code == 2 and "unknown h300" in bad.output


def test_model_is_read_as_predict_reads_model_path():
    # --model took only zoo names: 'unknown Qwen/Qwen3-8B', which predict --model-path and plan --model read
    args = ["backends", "--gpu", "h100", "-o", "json"]
    zoo = json.loads(runner.invoke(app, [*args, "--model", "qwen3-8b"]).stdout)
    for name in ("Qwen/Qwen3-8B", "Qwen3-8B", "Qwen/Qwen3-8B-FP8"):
        result = runner.invoke(app, [*args, "--model", name])
        assert result.exit_code == 0 and json.loads(result.stdout) == zoo, result.output


@pytest.mark.parametrize(
    "args",
    [
        ["models"],
        ["perfdb", "coverage", "calibration/h200"],
        ["perfdb", "check", "calibration/h200"],
    ],
)
def test_table_commands_print_whole_cells_when_piped_and_json_on_request(args):
    from simperf.perfdb.db import shipped_calibration_dir

    if "calibration/h200" in args and shipped_calibration_dir("h200") is None:
        pytest.skip("no shipped H200 tables")
    args = [str(shipped_calibration_dir("h200")) if a == "calibration/h200" else a for a in args]
    text = runner.invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "…" not in text.stdout and "┃" not in text.stdout  # plain, complete columns
    as_json = runner.invoke(app, [*args, "-o", "json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)


def test_compare_and_trace_inspect_print_complete_tables_when_piped(tmp_path):
    """A predicted run written as bench_serving writes it reads back through `compare` and `trace inspect`."""
    flags = ["--model-path", "qwen3-8b", "--gpu", "h100", "--dataset-name", "random", "--random-input-len", "300",
             "--random-output-len", "20", "--num-prompts", "30", "--request-rate", "5", "-q"]  # fmt: skip
    runs = tmp_path / "runs.jsonl"
    predicted = runner.invoke(
        app, ["predict", *flags, "-o", "json", "--output-file", str(runs), "--output-details"]
    )
    assert predicted.exit_code == 0, predicted.output
    (tmp_path / "pred.json").write_text(predicted.stdout)
    compared = runner.invoke(app, ["compare", str(tmp_path / "pred.json"), str(runs)])
    assert compared.exit_code == 0 and "median_ttft_ms" in compared.stdout and "…" not in compared.stdout
    inspected = runner.invoke(app, ["trace", "inspect", str(runs)])
    assert inspected.exit_code == 0, inspected.output
    assert "requests" in inspected.stdout and "30" in inspected.stdout and "…" not in inspected.stdout
