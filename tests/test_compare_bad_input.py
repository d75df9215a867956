"""`simperf compare PREDICTED MEASURED` on careless result files: refused with one `error:` line naming the file,
never compared as something else."""

from __future__ import annotations

import json
from pathlib import Path

from clierrors import one_error_line

RESULT = {
    "backend": "sglang",
    "dataset_name": "random",
    "completed": 20,
    "duration": 3.5,
    "request_throughput": 5.7,
    "median_ttft_ms": 19.0,
    "mean_ttft_ms": 19.5,
}


def test_a_result_giving_a_metric_twice_is_refused(tmp_path: Path):
    """json.loads kept the last median_ttft_ms: the comparison read 1900 ms where the file said 19 first."""
    predicted = tmp_path / "pred.json"
    predicted.write_text(json.dumps(RESULT))
    measured = tmp_path / "meas.json"
    measured.write_text(json.dumps(RESULT)[:-1] + ', "median_ttft_ms": 1900.0}')
    line = one_error_line(["compare", str(predicted), str(measured)])
    assert "meas.json" in line and "'median_ttft_ms' is given twice" in line


def test_a_file_compared_with_itself_is_refused(tmp_path: Path):
    """The same path twice printed +0.0% on every metric, a prediction that looked exact."""
    path = tmp_path / "pred.json"
    path.write_text(json.dumps(RESULT))
    line = one_error_line(["compare", str(path), str(tmp_path / "." / "pred.json")])
    assert "is also the PREDICTED file" in line


def test_a_result_with_a_byte_order_mark_is_read_as_json(tmp_path: Path):
    """A UTF-8 byte-order mark hid the opening '{': the JSON was parsed as a printed result block and refused as
    'no benchmark result found'."""
    from typer.testing import CliRunner

    from simperf.cli import app

    predicted = tmp_path / "pred.json"
    predicted.write_text(json.dumps(RESULT))
    measured = tmp_path / "meas.json"
    measured.write_bytes(b"\xef\xbb\xbf" + json.dumps({**RESULT, "median_ttft_ms": 20.0}).encode())
    result = CliRunner().invoke(app, ["compare", str(predicted), str(measured), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert "median_ttft_ms" in result.output and "20.0" in result.output
