"""Round trips of every trace format through simperf's schema, bench_serving outputs, and malformed-input errors."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from simperf.workload.trace import Trace, TraceError, read_trace
from simperf.workload.trace_write import write_trace

TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"


def shared_trace(name: str) -> Path:
    path = TRACES / name
    if not path.is_file():
        pytest.skip(f"shared trace {name} not present")
    return path


def assert_same_requests(a: Trace, b: Trace) -> None:
    np.testing.assert_array_equal(a.arrival_s, b.arrival_s)
    np.testing.assert_array_equal(a.input_len, b.input_len)
    np.testing.assert_array_equal(a.output_len, b.output_len)
    assert (a.block_hashes is None) == (b.block_hashes is None)
    if a.block_hashes is not None:
        assert all(np.array_equal(x, y) for x, y in zip(a.block_hashes, b.block_hashes, strict=True))
        assert a.hash_block_tokens == b.hash_block_tokens
    if a.accept_len is not None or b.accept_len is not None:
        np.testing.assert_array_equal(a.accept_len, b.accept_len)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
@pytest.mark.parametrize(
    "name",
    [
        "mooncake_conversation_trace.jsonl",
        "mooncake_synthetic_trace.jsonl",
        "azure_llm_inference_2023_conv.csv",
    ],
)
def test_shared_traces_round_trip_through_simperf_schema(tmp_path, name, suffix):
    original = read_trace(shared_trace(name), limit=500)
    out = write_trace(original, tmp_path / f"t{suffix}")
    again = read_trace(out)
    assert again.format == "simperf"
    assert_same_requests(original, again)


def test_azure_round_trips_through_csv(tmp_path):
    original = read_trace(shared_trace("azure_llm_inference_2023_code.csv"))
    again = read_trace(write_trace(original, tmp_path / "t.csv"))
    assert_same_requests(original, again)


def test_block_size_and_accept_lengths_survive_a_round_trip(tmp_path):
    trace = Trace(
        arrival_s=np.array([0.0, 0.125, 0.3]),
        input_len=np.array([100, 64, 130]),
        output_len=np.array([5, 6, 7]),
        block_hashes=[np.array([1, 2]), np.array([1]), np.array([1, 2, 3])],
        format="simperf",
        hash_block_tokens=64,
        accept_len=np.array([2.5, 3.0, 1.75]),
    )
    for suffix in (".jsonl", ".parquet"):
        again = read_trace(write_trace(trace, tmp_path / f"t{suffix}"))
        assert_same_requests(trace, again)
        assert again.hash_block_tokens == 64


def test_csv_cannot_hold_block_ids(tmp_path):
    trace = read_trace(shared_trace("mooncake_synthetic_trace.jsonl"), limit=3)
    with pytest.raises(TraceError, match="CSV cannot hold hash_ids"):
        write_trace(trace, tmp_path / "t.csv")


def bench_result(n: int, **extra) -> dict:
    result = {
        "backend": "sglang",
        "request_rate": 4.0,
        "input_lens": [100 + i for i in range(n)],
        "output_lens": [10 + i for i in range(n)],
        "ttfts": [0.1] * n,
        "itls": [[0.01] * 3] * n,
        "generated_texts": ["x"] * n,
        "errors": [""] * n,
    }
    result.update(extra)
    return result


def test_bench_serving_output_with_start_times(tmp_path):
    path = tmp_path / "run.jsonl"
    starts = [1000.5, 1000.0, 1001.25]
    path.write_text(json.dumps(bench_result(3, start_times=starts)) + "\n")
    trace = read_trace(path)
    assert trace.format == "bench_serving" and trace.has_times
    assert trace.arrival_s.tolist() == [0.0, 0.5, 1.25]
    assert trace.input_len.tolist() == [101, 100, 102] and trace.output_len.tolist() == [11, 10, 12]
    again = read_trace(write_trace(trace, tmp_path / "t.jsonl"))
    assert_same_requests(trace, again)


def test_bench_serving_failed_requests_are_listed_not_silently_dropped(tmp_path):
    path = tmp_path / "run.jsonl"
    result = bench_result(3)
    result["errors"][1] = "HTTP 500: context too long"
    result["output_lens"][1] = 0
    path.write_text(json.dumps(result) + "\n")
    trace = read_trace(path)
    assert len(trace) == 2 and not trace.has_times
    assert trace.skipped == ("request 1: failed (HTTP 500: context too long)",)


def test_bench_serving_file_with_several_runs_needs_a_choice(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(bench_result(2)) + "\n" + json.dumps(bench_result(4)) + "\n")
    with pytest.raises(TraceError, match=r"holds 2 bench_serving runs .*1 \(line 2\)"):
        read_trace(path)
    assert len(read_trace(path, run=1)) == 4
    with pytest.raises(TraceError, match="run 2 requested"):
        read_trace(path, run=2)


@pytest.mark.parametrize(
    "mutate,line_no,what",
    [
        (lambda r: r.pop("output_lens"), 2, "without output_lens .*--output-details"),
        (lambda r: r["input_lens"].__setitem__(1, "long"), 2, "request 1: input_lens must be an integer"),
        (lambda r: r["output_lens"].pop(), 2, "output_lens has 2 entries, input_lens 3"),
        (
            lambda r: r.update(start_times=[0.0, None, 1.0]),
            2,
            "request 1: start_times must be a finite number",
        ),
    ],
)
def test_malformed_bench_serving_results_name_their_line(tmp_path, mutate, line_no, what):
    good, bad = bench_result(3), bench_result(3)
    mutate(bad)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(TraceError, match=rf"bad\.jsonl:{line_no}: .*{what}"):
        read_trace(path, run=1)


@pytest.mark.parametrize(
    "row,what",
    [
        ({"arrival_s": 1, "input_len": 5, "output_len": 1, "accept_len": 0.5}, "accept_len must be >= 1"),
        (
            {"arrival_s": 1, "input_len": 5, "output_len": 1, "hash_ids": [1], "hash_block_tokens": 32},
            "differs",
        ),
        ({"arrival_s": 1, "input_len": 5, "output_len": 1}, "accept_len missing"),
    ],
)
def test_malformed_simperf_extras_name_their_line(tmp_path, row, what):
    first = {"arrival_s": 0, "input_len": 5, "output_len": 1, "accept_len": 2.0}
    if "hash_ids" in row:
        first = {"arrival_s": 0, "input_len": 5, "output_len": 1, "hash_ids": [1], "hash_block_tokens": 64}
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(TraceError, match=rf"bad\.jsonl:2: .*{what}"):
        read_trace(path)


def test_a_written_trace_keeps_request_order_for_equal_times(tmp_path):
    trace = read_trace(shared_trace("mooncake_synthetic_trace.jsonl"), limit=50)
    shuffled = replace(trace, format="simperf")
    again = read_trace(write_trace(shuffled, tmp_path / "t.parquet"))
    assert_same_requests(trace, again)


@pytest.mark.parametrize(
    "extra,what",
    [
        ({"hash_ids": [1, 2]}, r"column hash_ids must be a list of integer block ids, found int64"),
        ({"hash_ids": [["a"], ["b"]]}, r"column hash_ids must be a list of integer block ids"),
        ({"hash_ids": [[1], [2, None]]}, r"row 1: hash_ids holds a null block id"),
        (
            {"hash_ids": [[1], [2]], "hash_block_tokens": [16.5, 16.5]},
            r"hash_block_tokens must be one positive integer, found \[16\.5\]",
        ),
    ],
)
def test_malformed_parquet_block_ids_are_refused_not_cast(tmp_path, extra, what):
    """A scalar or string hash_ids column used to crash; null ids and a fractional block size were cast silently."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "bad.parquet"
    pq.write_table(
        pa.table({"arrival_s": [0.0, 1.0], "input_len": [5, 6], "output_len": [1, 2], **extra}), path
    )
    with pytest.raises(TraceError, match=rf"bad\.parquet: {what}"):
        read_trace(path)
