"""The profiled-forward summary: GPU busy time is a union of intervals, launches are counted from the CPU side."""

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simperf.cli import app
from simperf.groundtruth.trace import short_name, summarize


def _events():
    return [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 4},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "ts": 6, "dur": 2},
        {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "ts": 16, "dur": 5},
        {"ph": "X", "cat": "kernel", "name": "gemm_kernel<128, 64>(float*)", "ts": 10, "dur": 10},
        {
            "ph": "X",
            "cat": "kernel",
            "name": "gemm_kernel<128, 128>(float*)",
            "ts": 15,
            "dur": 10,
        },  # overlaps
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 40, "dur": 5},
        {"ph": "i", "cat": "kernel", "name": "instant", "ts": 50},
    ]


def test_busy_time_is_the_union_and_launch_calls_are_counted():
    s = summarize(_events())
    assert s.gpu_busy_us == 20.0  # [10, 25) and [40, 45)
    assert s.kernel_sum_us == 20.0 and s.kernels == 2
    assert s.window_us == 45.0  # first CPU op at 0 -> memcpy end at 45
    assert s.launches == 2  # the memcpy call is not a launch
    assert s.host_issue_us == 20.0 and s.host_us_per_launch == 10.0
    assert [(g.name, g.count, g.total_us) for g in s.top] == [("gemm_kernel", 2, 20.0)]


def test_a_trace_without_gpu_activity_is_refused():
    with pytest.raises(ValueError, match="no GPU activity"):
        summarize(_events()[:2])


def test_short_names_drop_templates_and_parameters():
    assert short_name("void flashinfer::BatchPrefill<true>(Params)") == "void flashinfer::BatchPrefill"
    assert short_name("elementwise_kernel") == "elementwise_kernel"


def test_the_command_reads_gzipped_traces(tmp_path):
    path = tmp_path / "t.trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": _events()}, f)
    out = CliRunner().invoke(app, ["groundtruth", "trace", str(path), "--top", "1"])
    assert out.exit_code == 0, out.output
    row = json.loads(out.stdout)
    assert row["trace"] == "t.trace.json.gz" and row["gpu_busy_us"] == 20.0 and len(row["top"]) == 1
    bad = CliRunner().invoke(app, ["groundtruth", "trace", str(tmp_path / "missing.json")])
    assert bad.exit_code == 2


@pytest.mark.parametrize(
    "name, content",
    [
        ("cut.json.gz", None),
        ("list.json", b"[1, 2]"),
        ("nokey.json", b'{"a": 1}'),
        ("text.json", b"not json"),
    ],
)
def test_a_file_that_is_not_a_trace_gives_one_error_line(tmp_path, name, content):
    path = tmp_path / name
    if content is None:  # a gzip cut short
        full = gzip.compress(json.dumps({"traceEvents": _events()}).encode())
        path.write_bytes(full[: len(full) // 2])
    else:
        path.write_bytes(content)
    out = CliRunner().invoke(app, ["groundtruth", "trace", str(path)])
    assert out.exit_code == 2
    assert str(path) in out.output and "internal error" not in out.output


def test_the_command_splits_a_served_decode_into_replays_and_refuses_a_trace_without_one(tmp_path):
    served = Path(__file__).resolve().parents[1] / "groundtruth/forwards/h100/served-llama-3.1-8b-decode"
    out = CliRunner().invoke(
        app, ["groundtruth", "trace", "--decode-replays", str(served / "c1.trace.json.gz")]
    )
    assert out.exit_code == 0, out.output
    row = json.loads(out.stdout.strip())
    assert row["iterations"] >= 5 and row["replay_kernels"] == 420 and 6000 < row["period_us"] < 7000
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": _events()}))
    bad = CliRunner().invoke(app, ["groundtruth", "trace", "--decode-replays", str(path)])
    assert bad.exit_code != 0 and "no decode replay found" in bad.output
    assert len(bad.output.strip().splitlines()) == 1
