"""`simperf sweep / plan / report` through typer, on a tiny sweep file."""

from __future__ import annotations

import json

import polars as pl
import pytest
import typer
import yaml
from sweepfixtures import sweep_dict
from typer.testing import CliRunner

from simperf.sweep.cli import plan_command, report_command, sweep_command

runner = CliRunner()
app = typer.Typer()
app.command("sweep")(sweep_command)
app.command("plan")(plan_command)
app.command("report")(report_command)


@pytest.fixture
def sweep_file(tmp_path):
    data = sweep_dict(
        {"serving.page_size": [1, 16], "workload.request_rate": [2.0, 8.0]},
        plan={"rate": 20, "sla": ["ttft.p90 <= 2s", "tpot.p90 <= 50ms"]},
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_sweep_then_plan_from_the_table(sweep_file, tmp_path):
    out = tmp_path / "r.parquet"
    result = runner.invoke(app, ["sweep", str(sweep_file), "-o", str(out), "--executor", "serial"])
    assert result.exit_code == 0, result.output
    assert "4 points (ok: 4)" in result.output and out.exists()

    text = runner.invoke(app, ["plan", str(out)])
    assert text.exit_code == 0, text.output
    assert "Winner:" in text.output and "sustains" in text.output

    as_json = runner.invoke(app, ["plan", str(out), "-o", "json", "--rate", "50", "--sla", "ttft.p99 <= 5s"])
    assert as_json.exit_code == 0, as_json.output
    plan = json.loads(as_json.stdout)
    assert plan["target_rate"] == 50 and plan["sla"] == ["ttft.p99 <= 5000 ms"]
    winner = plan["winner"]
    assert winner["replicas"] * winner["sustained_rate"] >= 50
    assert winner["total_gpus"] == winner["replicas"] * winner["gpus_per_replica"]


def test_plan_exits_1_when_nothing_meets_the_sla(sweep_file, tmp_path):
    out = tmp_path / "r.parquet"
    runner.invoke(app, ["sweep", str(sweep_file), "-o", str(out), "--executor", "serial"])
    result = runner.invoke(app, ["plan", str(out), "--sla", "ttft.p90 <= 1ms"])
    assert result.exit_code == 1
    assert "No swept configuration meets the SLA" in result.output


def test_bad_sweep_file_exits_2_naming_the_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(sweep_dict({"serving.tpp": [1]})))
    result = runner.invoke(app, ["sweep", str(path)])
    assert result.exit_code == 2
    assert "serving.tpp" in result.output and "serving.tp" in result.output


def test_bad_sla_exits_2(sweep_file, tmp_path):
    out = tmp_path / "r.parquet"
    runner.invoke(app, ["sweep", str(sweep_file), "-o", str(out), "--executor", "serial"])
    result = runner.invoke(app, ["plan", str(out), "--sla", "ttft <= 2s"])
    assert result.exit_code == 2 and "METRIC.STAT" in result.output


def test_report_writes_one_page(sweep_file, tmp_path):
    out = tmp_path / "r.parquet"
    runner.invoke(app, ["sweep", str(sweep_file), "-o", str(out), "--executor", "serial"])
    page = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(out), "-o", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "Plan for 20 req/s" in text and text.count("vegaEmbed('#chart-") == 4


def test_a_sweep_in_which_no_point_ran_exits_non_zero_with_the_first_reason(tmp_path):
    """Every point invalid (tp 3 and 5 on one GPU) ended with exit 0, as if the sweep had run; the table stays
    (each row's reason), and the one error line gives the first."""
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(sweep_dict({"serving.tp": [3, 5]})))
    out = tmp_path / "r.parquet"
    result = runner.invoke(app, ["sweep", str(path), "-o", str(out), "--executor", "serial"])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no point of the sweep ran (invalid: 2)" in errors[0]
    assert "serving.tp (3) needs at least that many GPUs" in errors[0] and out.exists()


def test_points_whose_requests_were_shortened_to_the_context_length_are_said(tmp_path):
    # input_len 100000 on Qwen3-8B (40,960 tokens): the prompts were capped and the row still read input_len=100000
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(sweep_dict({"workload.dataset.input_len": [100000, 256]})))
    out = tmp_path / "r.parquet"
    result = runner.invoke(app, ["sweep", str(path), "-o", str(out), "--executor", "serial", "-q"])
    assert result.exit_code == 0, result.output
    capped = pl.read_parquet(out)["capped_requests"].to_list()
    assert capped[0] > 0 and capped[1] == 0
    note = "note: 1 of 2 points shortened requests to fit the model's context length (column capped_requests; first"
    assert note in " ".join(result.output.split())
    plan = runner.invoke(app, ["plan", str(out), "--rate", "1"])
    assert plan.exit_code == 0 and note in " ".join(plan.output.split()), plan.output
    # the report page said nothing of it (only the printed note did)
    page = tmp_path / "r.html"
    report = runner.invoke(app, ["report", str(out), "-o", str(page)])
    assert report.exit_code == 0, report.output
    assert "1 of 2 points shortened requests to fit the model&#x27;s context length" in page.read_text()
