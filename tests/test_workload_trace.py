"""Trace readers: the real public samples, the three schemas, and malformed rows named by line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simperf.scenario.models import WorkloadSpec
from simperf.workload.requests import build_requests
from simperf.workload.trace import TraceError, read_trace

TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"


def shared_trace(name: str) -> Path:
    path = TRACES / name
    if not path.is_file():
        pytest.skip(f"shared trace {name} not present")
    return path


def test_mooncake_conversation_sample():
    trace = read_trace(shared_trace("mooncake_conversation_trace.jsonl"))
    assert trace.format == "mooncake" and len(trace) == 12031
    assert trace.arrival_s[0] == 0.0 and np.all(np.diff(trace.arrival_s) >= 0)
    assert trace.input_len.mean() == pytest.approx(12035, rel=0.01)  # README: avg 12,035 input
    assert trace.output_len.mean() == pytest.approx(343, rel=0.01)
    assert trace.arrival_s[-1] == pytest.approx(3600, rel=0.05)  # one hour, timestamps in ms
    assert trace.block_hashes is not None
    # hash_ids name 512-token blocks covering the prompt
    blocks = np.array([h.size for h in trace.block_hashes])
    assert np.all(blocks == -(-trace.input_len // 512))


def test_azure_conversation_sample():
    trace = read_trace(shared_trace("azure_llm_inference_2023_conv.csv"))
    assert trace.format == "azure" and len(trace) == 19366
    assert trace.block_hashes is None
    assert trace.arrival_s[0] == 0.0 and np.all(np.diff(trace.arrival_s) >= 0)
    # second row is 2023-11-16 18:15:50.9951690, first 18:15:46.6805900
    assert trace.arrival_s[1] == pytest.approx(4.314579, abs=1e-6)
    assert (trace.input_len[0], trace.output_len[0]) == (374, 44)
    assert trace.arrival_s[-1] == pytest.approx(3600, rel=0.05)


def test_num_prompts_limits_a_trace_and_timestamps_are_replayed():
    path = shared_trace("mooncake_synthetic_trace.jsonl")
    got = build_requests(WorkloadSpec(dataset={"kind": "trace", "path": path}, num_prompts=3))
    assert len(got) == 3
    np.testing.assert_allclose(got.arrival_s, [0.0, 0.0, 0.040])
    assert got.input_len.tolist() == [40160, 36640, 23769] and got.output_len.tolist() == [6, 4, 3]
    assert got.hash_block_tokens == 512 and got.warmup == (40160, 6)
    assert got.sender_done_s == pytest.approx(0.040)


def test_trace_without_timestamps_uses_poisson_from_the_rate(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(
        "".join(
            json.dumps({"arrival_s": 9.0 * i, "input_len": 10, "output_len": 2}) + "\n" for i in range(400)
        )
    )
    got = build_requests(
        WorkloadSpec(
            dataset={"kind": "trace", "path": path, "use_timestamps": False}, request_rate=5.0, seed=1
        )
    )
    gaps = np.random.RandomState(1).exponential(0.2, size=400)
    np.testing.assert_allclose(got.arrival_s[1:], np.cumsum(gaps)[:-1])


def test_simperf_jsonl_is_sorted_by_time_and_shifted_to_zero(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [
        {"arrival_s": 5.0, "input_len": 10, "output_len": 2, "hash_ids": [1, 2], "hash_block_tokens": 8},
        {"arrival_s": 3.5, "input_len": 20, "output_len": 3, "hash_ids": [1], "hash_block_tokens": 8},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    trace = read_trace(path)
    assert trace.format == "simperf"
    assert trace.arrival_s.tolist() == [0.0, 1.5]
    assert trace.input_len.tolist() == [20, 10]
    assert [h.tolist() for h in trace.block_hashes] == [[1], [1, 2]]


def test_simperf_parquet(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(
        pa.table(
            {
                "arrival_s": [0.0, 0.25],
                "input_len": [5, 6],
                "output_len": [1, 9],
                "hash_ids": [[7], [7, 8]],
                "hash_block_tokens": [4, 4],  # two ids of a 15-token request
            }
        ),
        path,
    )
    trace = read_trace(path, limit=2)
    assert trace.format == "simperf" and trace.output_len.tolist() == [1, 9]
    assert [h.tolist() for h in trace.block_hashes] == [[7], [7, 8]]


def test_parquet_bad_length_names_the_row(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(
        pa.table({"arrival_s": [0.0, 1.0, 2.0], "input_len": [5, 0, 6], "output_len": [1, 1, 1]}), path
    )
    with pytest.raises(TraceError, match=r"row 1: input_len"):
        read_trace(path)


@pytest.mark.parametrize(
    "lines,line_no,what",
    [
        (
            ['{"timestamp": 0, "input_length": 5, "output_length": 1}', '{"timestamp": 1, "input_length": 5'],
            2,
            "invalid JSON",
        ),
        (
            [
                '{"timestamp": 0, "input_length": 5, "output_length": 1}',
                "",
                '{"timestamp": 1, "input_length": "x", "output_length": 1}',
            ],
            3,
            "input_length",
        ),
        (
            [
                '{"timestamp": 0, "input_length": 5, "output_length": 1}',
                '{"timestamp": 1, "input_length": 5}',
            ],
            2,
            "missing output_length",
        ),
        (['{"timestamp": 0, "input_length": 5, "output_length": 0}'], 1, "output_length must be >= 1"),
        (
            [
                '{"arrival_s": 0, "input_len": 5, "output_len": 1}',
                '{"arrival_s": "soon", "input_len": 5, "output_len": 1}',
            ],
            2,
            "arrival_s",
        ),
        (['{"arrival_s": 0, "input_len": 5, "output_len": 1, "hash_ids": [1, "a"]}'], 1, "hash_ids"),
        (["[1, 2, 3]"], 1, "JSON object"),
        (
            [
                '{"arrival_s": 0, "input_len": 5, "output_len": 1, "hash_ids": [1]}',
                '{"arrival_s": 1, "input_len": 5, "output_len": 1}',
            ],
            2,
            "hash_ids missing",
        ),
    ],
)
def test_malformed_jsonl_rows_name_their_line(tmp_path, lines, line_no, what):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=rf"bad\.jsonl:{line_no}: .*{what}"):
        read_trace(path)


@pytest.mark.parametrize(
    "body,line_no,what",
    [
        ("2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,abc,109\n", 3, "ContextTokens"),
        ("2023-11-16 18:15:46.6805900,374,44\nyesterday,396,109\n", 3, "TIMESTAMP is not a date-time"),
        ("2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396\n", 3, "expected 3 fields"),
        ("2023-11-16 18:15:46.6805900,374,-4\n", 2, "GeneratedTokens must be >= 1"),
    ],
)
def test_malformed_azure_rows_name_their_line(tmp_path, body, line_no, what):
    path = tmp_path / "bad.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + body)
    with pytest.raises(TraceError, match=rf"bad\.csv:{line_no}: {what}"):
        read_trace(path)


def test_unknown_columns_list_what_is_expected(tmp_path):
    path = tmp_path / "odd.jsonl"
    path.write_text('{"t": 0, "prompt": 5}\n')
    with pytest.raises(TraceError, match="unrecognised trace columns.*mooncake: timestamp"):
        read_trace(path)


def test_empty_trace_is_an_error(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    with pytest.raises(TraceError, match="no requests"):
        read_trace(path)


def test_format_comes_from_columns_not_the_file_name(tmp_path):
    renamed = tmp_path / "requests.txt"
    renamed.write_text('{"timestamp": 2000, "input_length": 5, "output_length": 3}\n')
    assert read_trace(renamed).format == "mooncake"
    bom_csv = tmp_path / "export.csv"
    bom_csv.write_text(
        "\ufeffarrival_s,input_len,output_len\n0.5,10,2\n1.5,11,3\n0.0,12,4\n", encoding="utf-8"
    )
    trace = read_trace(bom_csv, limit=2)
    assert trace.format == "simperf"
    assert trace.arrival_s.tolist() == [0.0, 1.0] and trace.input_len.tolist() == [10, 11]
