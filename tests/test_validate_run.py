"""simperf validate: resumable, crash-isolated runs (with a CPU stand-in for the GPU worker), the report,
and the command line. The real kernels run in test_validate_gpu.py (skipped without a GPU)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simperf.cli import app
from simperf.validate import execute
from simperf.validate.execute import ValidateError, done_samples, run_validation
from simperf.validate.plan import plan_validation
from simperf.validate.report import chart, format_rows, read_results, summarize, write_results

ROOT = Path(__file__).resolve().parents[1]
FAKE_WORKER = Path(__file__).parent / "fixtures" / "fake_validate_worker.py"


@pytest.fixture
def planned(tmp_path):
    scenario = tmp_path / "qwen.yaml"
    text = (ROOT / "scenarios/validate/qwen3-8b-h200.yaml").read_text()
    scenario.write_text(text.replace("num_prompts: 400", "num_prompts: 40"))
    out = tmp_path / "out"
    _, programs, _ = plan_validation(scenario, out, 6)
    return scenario, out, programs


def use_fake_worker(monkeypatch, out: Path, crash_on: list[int]) -> None:
    (out / "crash_on.json").write_text(json.dumps(crash_on))
    monkeypatch.setattr(execute, "WORKER_COMMAND", [sys.executable, str(FAKE_WORKER)])


def test_a_crashing_sample_is_recorded_failed_and_the_rest_still_run(planned, monkeypatch):
    _, out, programs = planned
    crash = programs[1].sample_id
    use_fake_worker(monkeypatch, out, [crash])
    seen = []
    rows = run_validation(out, on_sample=lambda done, n, row: seen.append((done, n, row["sample_id"])))
    assert [r["sample_id"] for r in rows] == [p.sample_id for p in programs]
    failed = [r for r in rows if r.get("error")]
    assert [r["sample_id"] for r in failed] == [crash]
    assert (
        "crashed the GPU process" in failed[0]["error"] and "while building attention" in failed[0]["error"]
    )
    assert seen[-1][:2] == (len(programs), len(programs))


def test_a_finished_run_is_not_repeated_and_failed_samples_can_be_retried(planned, monkeypatch):
    _, out, programs = planned
    crash = programs[0].sample_id
    use_fake_worker(monkeypatch, out, [crash])
    run_validation(out)
    before = (out / execute.JOURNAL_NAME).read_text()
    run_validation(out)
    assert (out / execute.JOURNAL_NAME).read_text() == before  # nothing left to do
    rows = run_validation(out, retry_failed=True)
    assert not any(r.get("error") for r in rows)  # the fake does not crash on a retry
    assert len(done_samples(out)) == len(programs)


def test_an_interrupted_sample_is_resumed_not_lost(planned, monkeypatch):
    _, out, programs = planned
    # a kill after the start marker of the third sample: two rows, then a marker without its row
    use_fake_worker(monkeypatch, out, [])
    journal = out / execute.JOURNAL_NAME
    run_validation(out)
    lines = journal.read_text().splitlines()
    keep = lines[:4] + [json.dumps({"sample_id": programs[2].sample_id, "started": True})]
    journal.write_text("\n".join(keep) + '\n{"sample_id": 9')  # and a torn last line
    done, in_flight = execute._journal(out)
    assert sorted(done) == [programs[0].sample_id, programs[1].sample_id]
    assert in_flight == {programs[2].sample_id}
    rows = run_validation(out)
    assert len(rows) == len(programs) and not any(r.get("error") for r in rows)


def test_without_a_gpu_the_error_says_what_to_do(planned):
    _, out, _ = planned
    with pytest.raises(ValidateError, match="CUDA GPU"):
        run_validation(out)


def test_without_a_plan_the_error_says_so(tmp_path):
    with pytest.raises(ValidateError, match="no complete plan"):
        run_validation(tmp_path)


def row(sid, kind, predicted, measured, error=None):
    return {"sample_id": sid, "kind": kind, "stratum": f"{kind}|x", "batch": 1, "num_rows": 1, "mean_kv": 10.0,
            "graph": True, "predicted_us": predicted, "measured_us": measured,
            "rel_error": None if measured is None else (predicted - measured) / measured, "error": error,
            "per_kind": {"moe": {"layers": 58}}, "unsupported": {}, "not_run": {"mlp_allreduce": "collective"}}  # fmt: skip


ROWS = [
    row(0, "decode", 101.0, 100.0),
    row(1, "decode", 90.0, 100.0),
    row(2, "decode", 103.0, 100.0),
    row(3, "prefill", 1200.0, 1000.0),
    row(4, "prefill", None, None, error="crashed"),
]


def test_summary_is_median_and_p90_of_the_absolute_relative_error_by_kind():
    by_kind = {s["kind"]: s for s in summarize(ROWS)}
    assert by_kind["decode"]["samples"] == 3
    assert by_kind["decode"]["median_abs_error"] == pytest.approx(0.03)
    # p90 of |err| = [0.01, 0.03, 0.10], linear between order statistics
    assert by_kind["decode"]["p90_abs_error"] == pytest.approx(0.03 + 0.8 * 0.07)
    assert by_kind["decode"]["median_signed_error"] == pytest.approx(0.01)
    assert by_kind["prefill"]["samples"] == 1 and by_kind["all"]["samples"] == 4
    assert "failed: crashed" in format_rows(ROWS)


def test_results_round_trip_through_parquet(tmp_path):
    write_results(ROWS, tmp_path / "v.parquet")
    back = read_results(tmp_path / "v.parquet")
    assert [r["rel_error"] for r in back] == [r["rel_error"] for r in ROWS]
    assert back[0]["per_kind"] == {"moe": {"layers": 58}} and back[4]["error"] == "crashed"


def test_chart_plots_measured_against_predicted_with_the_identity_line():
    spec = chart(ROWS, "t").to_dict()
    layers = spec["layer"]
    diagonal = layers[0]["data"]["values"]
    assert diagonal[0]["x"] == diagonal[0]["y"] and diagonal[1]["x"] == diagonal[1]["y"]
    points = layers[1]["data"]["values"]
    assert len(points) == 4  # the failed sample is not plotted
    assert {p["kind"] for p in points} == {"decode", "prefill"}


def test_cli_plan_only_then_report_only(tmp_path):
    scenario = tmp_path / "qwen.yaml"
    text = (ROOT / "scenarios/validate/qwen3-8b-h200.yaml").read_text()
    scenario.write_text(text.replace("num_prompts: 400", "num_prompts: 30"))
    out = tmp_path / "v"
    runner = CliRunner()
    result = runner.invoke(
        app, ["validate", str(scenario), "--samples", "4", "--out", str(out), "--plan-only"]
    )
    assert result.exit_code == 0, result.output
    assert "planned into" in result.output and (out / "programs.jsonl").exists()
    result = runner.invoke(app, ["validate", str(scenario), "--out", str(out), "--report-only"])
    assert result.exit_code == 2 and "nothing measured yet" in " ".join(result.output.split())


def test_cli_rejects_a_bad_scenario_with_its_field_path(tmp_path):
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(
        "name: x\nmodel: {name: qwen3-8b}\nhardware: {gpu: h200, count: 1}\nserving: {tp: 0}\n"
    )
    result = CliRunner().invoke(app, ["validate", str(scenario), "--plan-only", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "serving.tp" in result.output


def test_a_new_plan_sets_the_old_journal_aside_instead_of_resuming_from_it(planned, monkeypatch):
    """Sample ids restart at 0 in every plan: an earlier plan's journal would pass its rows off as this plan's
    finished samples. Re-planning keeps the old journal under another name and the new plan runs in full."""
    scenario, out, programs = planned
    use_fake_worker(monkeypatch, out, [])
    run_validation(out)
    old_journal = (out / execute.JOURNAL_NAME).read_text()
    _, new_programs, reused = plan_validation(scenario, out, 4)  # other settings: a new plan
    assert not reused
    assert not (out / execute.JOURNAL_NAME).exists()
    assert (out / "_journal.superseded-1.jsonl").read_text() == old_journal
    seen = []
    run_validation(out, on_sample=lambda done, n, row: seen.append(row["sample_id"]))
    assert sorted(seen) == sorted(p.sample_id for p in new_programs)


def test_a_plan_of_another_format_is_refused_with_how_to_replan(planned):
    _, out, _ = planned
    header = json.loads((out / "plan.json").read_text())
    header["plan_format"] = 3
    (out / "plan.json").write_text(json.dumps(header))
    with pytest.raises(ValidateError, match=r"plan format 3.*--plan-only"):
        run_validation(out)
