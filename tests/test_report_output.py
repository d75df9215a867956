"""Result JSON, the printed block, and the per-request Parquet round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from simperf.records import RequestRecords
from simperf.report.arguments import bench_arguments
from simperf.report.metrics import summarize
from simperf.report.output import read_requests_parquet, result_json, write_requests_parquet
from simperf.report.text import bench_block_lines, print_bench_block
from simperf.scenario.models import WorkloadSpec


def make_records(
    per_request: list[list[tuple[float, int]]], send: list[float], duration: float
) -> RequestRecords:
    n = len(send)
    counts = [len(c) for c in per_request]
    return RequestRecords(
        request_id=np.arange(n, dtype=np.int64) + 100,
        send_s=np.asarray(send, dtype=np.float64),
        input_len=np.arange(n, dtype=np.int64) * 7 + 3,
        output_len=np.asarray([sum(k for _, k in c) for c in per_request], dtype=np.int64),
        first_token_s=np.asarray([c[0][0] for c in per_request], dtype=np.float64),
        finish_s=np.asarray([c[-1][0] for c in per_request], dtype=np.float64),
        chunk_offsets=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        chunk_time_s=np.asarray([t for c in per_request for t, _ in c], dtype=np.float64),
        chunk_num_tokens=np.asarray([k for c in per_request for _, k in c], dtype=np.int64),
        dp_rank=np.arange(n, dtype=np.int64) % 2,
        retractions=np.arange(n, dtype=np.int64) % 3,
        cached_tokens=np.arange(n, dtype=np.int64) * 5,
        duration_s=duration,
        extra={"note": "x"},
    )


SMALL = make_records([[(0.5, 1), (0.6, 1), (0.9, 2)], [(1.2, 1), (1.5, 1)], [(2.5, 1)]], [0.0, 0.2, 1.0], 2.5)


def test_parquet_columns_and_token_times(tmp_path):
    path = tmp_path / "requests.parquet"
    write_requests_parquet(SMALL, path)
    table = pq.read_table(path)
    for name in (
        "request_id send_s first_token_s finish_s input_len output_len ttft_ms e2e_ms tpot_ms dp_rank "
        "retractions cached_tokens token_times_s"
    ).split():
        assert name in table.column_names
    rows = table.to_pylist()
    assert rows[0]["token_times_s"] == [0.5, 0.6, 0.9, 0.9]  # a 2-token chunk: two equal times
    assert rows[0]["ttft_ms"] == pytest.approx(500.0)
    assert rows[0]["e2e_ms"] == pytest.approx(900.0)
    assert rows[0]["tpot_ms"] == pytest.approx(400 / 3)
    assert rows[2]["tpot_ms"] is None  # one output token: no TPOT
    assert rows[1]["request_id"] == 101


def test_parquet_round_trip_is_exact(tmp_path):
    path = tmp_path / "requests.parquet"
    write_requests_parquet(SMALL, path)
    back = read_requests_parquet(path)
    for name in (
        "request_id send_s input_len output_len first_token_s finish_s chunk_offsets chunk_time_s "
        "chunk_num_tokens dp_rank retractions cached_tokens"
    ).split():
        np.testing.assert_array_equal(getattr(back, name), getattr(SMALL, name), err_msg=name)
    assert back.duration_s == SMALL.duration_s
    assert back.extra == SMALL.extra


@st.composite
def random_records(draw) -> RequestRecords:
    n = draw(st.integers(1, 6))
    send, per = [], []
    for _ in range(n):
        s = draw(st.floats(0, 100, allow_nan=False))
        t = s
        chunks = []
        for gap, k in draw(
            st.lists(st.tuples(st.floats(1e-4, 5), st.integers(1, 5)), min_size=1, max_size=5)
        ):
            t += gap
            chunks.append((t, k))
        send.append(s)
        per.append(chunks)
    end = max(c[-1][0] for c in per)
    return make_records(per, send, end + draw(st.floats(0, 3)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(random_records())
def test_metrics_recomputed_from_parquet_are_identical(tmp_path, rec):
    path = tmp_path / "r.parquet"
    write_requests_parquet(rec, path)
    before, after = summarize(rec), summarize(read_requests_parquet(path))
    assert before.keys() == after.keys()
    for key in before:
        assert before[key] == after[key] or (math.isnan(before[key]) and math.isnan(after[key])), key


def test_result_json_keeps_bench_serving_keys_and_nests_extras():
    result = {
        **bench_arguments(WorkloadSpec(dataset={"kind": "random", "input_len": 8, "output_len": 4})),
        **summarize(SMALL),
    }
    text = result_json(result, {"measured_share": np.float64(0.831), "num_capped": np.int64(0)})
    # strict JSON (issue 18): no Infinity token, an unlimited rate is the string a scenario accepts
    back = json.loads(text, parse_constant=lambda token: pytest.fail(f"non-JSON token {token}"))
    assert back["mean_ttft_ms"] == pytest.approx(result["mean_ttft_ms"])
    assert back["request_rate"] == "inf"
    assert back["backend"] == "sglang" and back["random_range_ratio"] == 0.0
    assert back["simperf"] == {"measured_share": 0.831, "num_capped": 0}
    with pytest.raises(ValueError):
        result_json({"simperf": 1}, {})


def test_bench_arguments_for_a_replayed_trace_say_trace(tmp_path):
    args = bench_arguments(
        WorkloadSpec(dataset={"kind": "trace", "path": tmp_path / "t.jsonl"}, max_concurrency=8)
    )
    assert args["request_rate"] == "trace" and args["max_concurrency"] == 8
    fixed = bench_arguments(
        WorkloadSpec(dataset={"kind": "fixed", "input_len": 8, "output_len": 4}, request_rate=2)
    )
    assert fixed["random_range_ratio"] == 1.0 and fixed["request_rate"] == 2.0


def test_printed_block_follows_bench_serving_layout():
    result = {
        **bench_arguments(WorkloadSpec(dataset={"kind": "random", "input_len": 8, "output_len": 4})),
        **summarize(SMALL),
    }
    lines = bench_block_lines(result, "Serving Benchmark Result", {"Step time from measured tables": "83.1%"})
    assert lines[1] == "============ Serving Benchmark Result ============"
    assert lines[-1] == "=" * 50
    labels = [line[:40].strip() for line in lines[2:] if not line.startswith(("-", "="))]
    assert labels[:6] == [
        "Backend:",
        "Traffic request rate:",
        "Max request concurrency:",
        "Successful requests:",
        "Benchmark duration (s):",
        "Total input tokens:",
    ]
    assert "Peak output token throughput (tok/s):" in labels
    assert (
        labels.index("Concurrency:")
        < labels.index("Mean E2E Latency (ms):")
        < labels.index("Mean TTFT (ms):")
    )
    assert labels.index("Mean TPOT (ms):") < labels.index("Mean ITL (ms):") < labels.index("Max ITL (ms):")
    assert "Step time from measured tables:" in labels
    assert "Max request concurrency:                 not set" in "\n".join(lines)
    assert "Benchmark duration (s):                  2.50" in "\n".join(lines)
    assert "----------------End-to-End Latency----------------" in lines
    assert "-----Time per Output Token (excl. 1st token)------" in lines


def test_print_bench_block_writes_the_lines_to_the_console():
    console = Console(record=True, width=200)
    print_bench_block(summarize(SMALL), console, "Serving Benchmark Result", None)
    text = console.export_text()
    assert "Mean TTFT (ms):" in text and "1000.00" in text
    assert "simperf" not in text  # no notes, no simperf section


def test_json_output_names_the_ops_priced_by_the_bare_roofline():
    """The text output's WARNING line (no table of these ops on this GPU at all) was missing from the JSON, which
    carried only the roofline share: a script could not tell which numbers are estimates."""
    from typer.testing import CliRunner

    from simperf.cli import app

    flags = ["--model-path", "deepseek-v3.2", "--gpu", "h200", "--gpus", "8", "--tp-size", "8",
             "--dataset-name", "random", "--random-input-len", "512", "--random-output-len", "8",
             "--num-prompts", "4", "-o", "json", "-q"]  # fmt: skip
    result = CliRunner().invoke(app, ["predict", *flags])
    assert result.exit_code == 0, result.output
    bare = json.loads(result.stdout)["simperf"]["bare_roofline_ops"]
    assert bare and all(op.startswith("nsa_indexer (") for op in bare)
    from pathlib import Path

    shipped = Path(__file__).resolve().parents[1] / "scenarios" / "qwen3-8b-h100.yaml"
    qwen = CliRunner().invoke(app, ["predict", str(shipped), "-o", "json", "-q"])
    assert json.loads(qwen.stdout)["simperf"]["bare_roofline_ops"] == []
