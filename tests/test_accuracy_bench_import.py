"""Reading bench_serving results (JSONL and printed block), `compare` deltas and `predict --like` workloads."""

from __future__ import annotations

import json

import pytest

from simperf.accuracy.bench_import import (
    BenchImportError,
    compare_results,
    normalize_keys,
    parse_text_block,
    read_bench_result,
    scenario_like,
    setting_differences,
    workload_from_bench,
)
from simperf.scenario.load import parse_scenario

# Keys as sglang.bench_serving writes them with --output-file (an infinite rate is written Infinity).
RUN = {
    "backend": "sglang",
    "dataset_name": "random",
    "request_rate": float("inf"),
    "max_concurrency": 16,
    "sharegpt_output_len": None,
    "random_input_len": 1024,
    "random_output_len": 512,
    "random_range_ratio": 0.5,
    "duration": 40.0,
    "completed": 200,
    "total_input_tokens": 150000,
    "total_output_tokens": 77000,
    "request_throughput": 5.0,
    "output_throughput": 1925.0,
    "total_throughput": 5675.0,
    "mean_ttft_ms": 120.5,
    "median_tpot_ms": 8.25,
    "median_itl_ms": 8.0,
    "accept_length": None,
}

BLOCK = """
============ Serving Benchmark Result ============
Backend:                                 sglang
Traffic request rate:                    inf
Max request concurrency:                 not set
Successful requests:                     1000
Benchmark duration (s):                  52.31
Total input tokens:                      219000
Total generated tokens:                  201000
Total generated tokens (retokenized):    200950
Request throughput (req/s):              19.12
Output token throughput (tok/s):         3842.50
Total token throughput (tok/s):          8029.12
Concurrency:                             512.40
----------------End-to-End Latency----------------
Mean E2E Latency (ms):                   26000.10
---------------Time to First Token----------------
Mean TTFT (ms):                          6948.08
Median TTFT (ms):                        6001.00
P99 TTFT (ms):                           15000.00
-----Time per Output Token (excl. 1st token)------
Median TPOT (ms):                        216.55
---------------Inter-Token Latency----------------
Median ITL (ms):                         51.66
P95 ITL (ms):                            90.00
==================================================
"""


def test_jsonl_run_is_read_with_infinity_as_an_infinite_rate(tmp_path):
    path = tmp_path / "bench.jsonl"
    path.write_text(json.dumps(RUN) + "\n")  # json.dumps writes Infinity, as bench_serving does
    result = read_bench_result(path)
    assert result["request_rate"] == float("inf")
    assert result["mean_ttft_ms"] == 120.5 and result["completed"] == 200


def test_several_runs_need_a_choice_and_the_error_lists_them(tmp_path):
    path = tmp_path / "bench.jsonl"
    second = {**RUN, "max_concurrency": 32}
    path.write_text(json.dumps(RUN) + "\n" + json.dumps(second) + "\n")
    with pytest.raises(BenchImportError, match="2 runs.*concurrency 16.*concurrency 32"):
        read_bench_result(path)
    assert read_bench_result(path, run=1)["max_concurrency"] == 32
    with pytest.raises(BenchImportError, match="run 5 does not exist"):
        read_bench_result(path, run=5)


def test_bad_jsonl_line_is_named(tmp_path):
    path = tmp_path / "bench.jsonl"
    path.write_text(json.dumps(RUN) + "\n{not json\n")
    with pytest.raises(BenchImportError, match=r"bench.jsonl:2"):
        read_bench_result(path)


def test_printed_block_parses_to_result_keys(tmp_path):
    path = tmp_path / "bench.txt"
    path.write_text(BLOCK)
    r = read_bench_result(path)
    assert r["completed"] == 1000 and r["request_rate"] == float("inf")
    assert r["max_concurrency"] is None  # "not set"
    assert r["duration"] == pytest.approx(52.31)
    assert r["total_output_tokens_retokenized"] == 200950
    assert r["mean_ttft_ms"] == pytest.approx(6948.08)
    assert r["p99_ttft_ms"] == pytest.approx(15000.0)
    assert r["median_tpot_ms"] == pytest.approx(216.55)
    assert r["p95_itl_ms"] == pytest.approx(90.0)
    assert r["mean_e2e_latency_ms"] == pytest.approx(26000.10)
    assert r["concurrency"] == pytest.approx(512.4)


def test_text_without_a_result_is_an_error():
    with pytest.raises(BenchImportError, match="no benchmark result"):
        parse_text_block("hello: world\n")


def test_vllm_names_are_normalised_to_bench_serving_names():
    r = normalize_keys(
        {"total_token_throughput": 10.0, "mean_e2el_ms": 5.0, "p99_e2el_ms": 9.0, "num_prompts": 3}
    )
    assert r == {
        "total_throughput": 10.0,
        "mean_e2e_latency_ms": 5.0,
        "p99_e2e_latency_ms": 9.0,
        "num_prompts": 3,
    }
    # vLLM's printed block labels its end-to-end latency "E2EL"
    assert parse_text_block("Successful requests: 3\nMean E2EL (ms): 12.5\n")["mean_e2e_latency_ms"] == 12.5


def test_workload_from_a_random_run_keeps_its_settings():
    w = workload_from_bench(RUN)
    assert w == {
        "dataset": {"kind": "random", "input_len": 1024, "output_len": 512, "range_ratio": 0.5},
        "num_prompts": 200,
        "request_rate": "inf",
        "max_concurrency": 16,
    }


def test_workload_from_a_sharegpt_run_matches_its_mean_lengths():
    run = {**RUN, "dataset_name": "sharegpt", "completed": 1000, "total_input_tokens": 219000}
    run["total_output_tokens"] = 201000
    w = workload_from_bench(run)
    assert w["dataset"] == {"kind": "random", "input_len": 437, "output_len": 401, "range_ratio": 0.0}
    # uniform on 1..L has mean (L + 1) / 2: the run's means are kept
    assert (w["dataset"]["input_len"] + 1) / 2 == pytest.approx(219)


def test_workload_from_a_run_with_details_replays_it_as_a_trace(tmp_path):
    run = {**RUN, "request_rate": 4.0, "max_concurrency": None, "input_lens": [10, 20], "output_lens": [5, 6]}
    path = tmp_path / "bench.jsonl"
    w = workload_from_bench(run, path=path)
    assert w["dataset"] == {"kind": "trace", "path": str(path), "use_timestamps": False}
    assert w["num_prompts"] == 2 and w["request_rate"] == 4.0 and w["max_concurrency"] is None
    # without the file's path there is nothing to replay: the lengths' means stand in
    assert workload_from_bench({**run, "dataset_name": "sharegpt"})["dataset"]["kind"] == "random"


def test_predict_like_overrides_the_workload_where_the_run_says(tmp_path):
    scenario = parse_scenario(
        {
            "model": {"name": "qwen3-8b"},
            "hardware": {"gpu": "h100"},
            "workload": {
                "dataset": {"kind": "fixed", "input_len": 100, "output_len": 10},
                "num_prompts": 5,
                "request_rate": 2,
                "ignore_eos": False,
                "warmup_requests": 3,
            },
        }
    )
    path = tmp_path / "bench.jsonl"
    path.write_text(json.dumps(RUN) + "\n")
    like = scenario_like(scenario, path)
    w = like.workload
    assert w.dataset.kind == "random" and w.dataset.input_len == 1024 and w.dataset.range_ratio == 0.5
    assert w.num_prompts == 200 and w.request_rate == "inf" and w.max_concurrency == 16
    assert w.ignore_eos is False and w.warmup_requests == 3  # not in the result: the scenario's stay
    assert like.model == scenario.model and like.hardware == scenario.hardware


def test_compare_gives_deltas_for_shared_metrics_and_flags_different_settings():
    predicted = {**RUN, "mean_ttft_ms": 132.55, "output_throughput": 1732.5, "max_concurrency": 8}
    rows = {r["metric"]: r for r in compare_results(predicted, RUN)}
    assert rows["mean_ttft_ms"]["delta"] == pytest.approx(12.05)
    assert rows["mean_ttft_ms"]["delta_pct"] == pytest.approx(10.0)
    assert rows["output_throughput"]["delta_pct"] == pytest.approx(-10.0)
    assert "accept_length" not in rows  # null on both sides
    assert setting_differences(predicted, RUN) == ["max_concurrency: predicted run 8, measured run 16"]
    assert setting_differences({"request_rate": "inf"}, {"request_rate": float("inf")}) == []


def test_compare_flags_a_measured_run_of_another_dataset_or_server():
    # bench_serving writes its --random-* defaults whatever the dataset: a sharegpt run's 1024/1024 are no setting
    sharegpt = {**RUN, "dataset_name": "sharegpt", "random_input_len": 1024, "random_output_len": 1024}
    predicted = {**RUN, "random_input_len": 256, "random_output_len": 16}
    assert setting_differences(predicted, sharegpt) == [
        "dataset_name: predicted run random, measured run sharegpt"
    ]
    gsp = {**RUN, "dataset_name": "generated-shared-prefix"}
    assert setting_differences(RUN, gsp) == [
        "dataset_name: predicted run random, measured run generated-shared-prefix"
    ]
    assert setting_differences(RUN, {**RUN, "dataset_name": "random-ids"}) == []  # the same length draws
    replay = {**RUN, "dataset_name": "trace"}
    assert setting_differences(replay, gsp) == []  # predict --like replays any dataset as a trace
    (vllm,) = setting_differences(RUN, {**RUN, "backend": "vllm"})
    assert vllm.startswith("backend: measured run vllm, which bench_serving uses for another server")
    assert setting_differences(RUN, {**RUN, "backend": "sglang-oai-chat"}) == []


def test_compare_flags_runs_of_another_size_or_length_mix():
    # a prediction of 200 prompts against a measured run of 1,000 (or of other lengths, where no --random-* setting
    # says so) printed deltas without a warning
    more = {**RUN, "completed": 1000, "total_input_tokens": 750000, "total_output_tokens": 385000}
    assert setting_differences(RUN, more) == [
        "completed: predicted run 200 requests, measured run 1000 (another --num-prompts, or requests that failed "
        "or were dropped)"
    ]
    sharegpt = {**RUN, "dataset_name": "sharegpt"}
    longer = {**sharegpt, "total_input_tokens": 300000}
    assert setting_differences(sharegpt, longer) == [
        "mean input tokens per request: predicted run 750, measured run 1,500"
    ]
    assert (
        setting_differences(sharegpt, {**sharegpt, "total_input_tokens": 160000}) == []
    )  # within sampling noise
    # a random run's own setting says it once
    assert setting_differences(RUN, {**RUN, "random_input_len": 4096, "total_input_tokens": 600000}) == [
        "random_input_len: predicted run 1024, measured run 4096"
    ]


def test_simperf_json_output_reads_as_a_result(tmp_path):
    path = tmp_path / "pred.json"
    path.write_text(json.dumps({**RUN, "simperf": {"scenario": "x"}}, indent=2))
    assert read_bench_result(path)["mean_ttft_ms"] == 120.5
