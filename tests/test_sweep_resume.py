"""Running sweeps: an interrupted sweep resumes where it stopped; parallel runs give the serial answer."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from sweepfixtures import BASE, sweep_dict

from simperf.sweep.evaluate import evaluate_point
from simperf.sweep.journal import journal_path
from simperf.sweep.runner import run_sweep
from simperf.sweep.spec import parse_sweep
from simperf.sweep.table import read_table

AXES = {"serving.page_size": [1, 16], "workload.request_rate": [2.0, 4.0, 8.0]}
METRICS = ["point_id", "status", "completed", "mean_ttft_ms", "p90_tpot_ms", "output_throughput_per_gpu"]


def spec():
    return parse_sweep(sweep_dict(AXES))


class Interrupt:
    """on_row hook that stops the sweep like Ctrl-C after `after` finished points."""

    def __init__(self, after: int) -> None:
        self.after, self.seen = after, 0

    def __call__(self, row) -> None:
        self.seen += 1
        if self.seen >= self.after:
            raise KeyboardInterrupt


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, point):
        self.calls += 1
        return evaluate_point(point)


def test_interrupted_sweep_resumes_without_recomputing_finished_points(tmp_path):
    out = tmp_path / "t.parquet"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec(), BASE, tmp_path, out, executor="serial", on_row=Interrupt(after=2))
    assert not out.exists()
    assert len(journal_path(out).read_text().splitlines()) == 2

    counting = Counting()
    run = run_sweep(spec(), BASE, tmp_path, out, executor="serial", evaluate=counting)
    assert counting.calls == 4 and run.computed == 4 and run.reused == 2
    assert run.frame.height == 6 and run.status_counts == {"ok": 6}
    assert not journal_path(out).exists()  # compacted into the table

    again = Counting()
    rerun = run_sweep(spec(), BASE, tmp_path, out, executor="serial", evaluate=again)
    assert again.calls == 0 and rerun.reused == 6

    # parallel from scratch: the same rows as the interrupted-then-resumed serial run
    fresh = run_sweep(spec(), BASE, tmp_path, tmp_path / "fresh.parquet", executor="process", workers=2)
    assert fresh.frame.select(METRICS).equals(run.frame.select(METRICS))
    table, meta = read_table(out)
    assert table.select(METRICS).equals(run.frame.select(METRICS))
    assert meta["name"] == "tiny-sweep" and meta["axis_columns"] == list(AXES)
    assert table["point_index"].to_list() == list(range(6))


def test_failed_rows_are_retried_and_a_torn_journal_line_is_ignored(tmp_path):
    out = tmp_path / "t.parquet"
    first = run_sweep(spec(), BASE, tmp_path, out, executor="serial")
    # make the table hold a failure for point 0, and leave a half-written line in the journal
    rows = first.frame.to_dicts()
    rows[0] = {
        k: v for k, v in rows[0].items() if k in ("point_index", "point_id", "config_id", "config_label")
    }
    rows[0].update(status="failed", reason="RuntimeError: boom")
    journal = journal_path(out)
    journal.write_text(json.dumps(rows[0]) + "\n" + '{"point_id": "trunc')
    counting = Counting()
    run = run_sweep(spec(), BASE, tmp_path, out, executor="serial", evaluate=counting)
    assert counting.calls == 1 and run.status_counts == {"ok": 6}


def test_fresh_ignores_earlier_results(tmp_path):
    out = tmp_path / "t.parquet"
    run_sweep(spec(), BASE, tmp_path, out, executor="serial")
    counting = Counting()
    run_sweep(spec(), BASE, tmp_path, out, executor="serial", evaluate=counting, fresh=True)
    assert counting.calls == 6


def test_edited_sweep_keeps_rows_of_points_it_still_has(tmp_path):
    out = tmp_path / "t.parquet"
    run_sweep(spec(), BASE, tmp_path, out, executor="serial")
    wider = parse_sweep(sweep_dict({**AXES, "workload.request_rate": [2.0, 4.0, 8.0, 16.0]}))
    counting = Counting()
    run = run_sweep(wider, BASE, tmp_path, out, executor="serial", evaluate=counting)
    assert counting.calls == 2 and run.frame.height == 8
    assert run.frame.filter(pl.col("request_rate") == 16.0).height == 2


def test_base_scenario_file_is_found_relative_to_the_sweep_file(tmp_path: Path, monkeypatch):
    import yaml

    from simperf.sweep.spec import load_sweep_file

    (tmp_path / "sweeps").mkdir()
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(BASE))
    sweep_file = tmp_path / "sweeps" / "s.yaml"
    sweep_file.write_text(
        yaml.safe_dump({"name": "rel", "base": "../base.yaml", "axes": {"serving.page_size": [1]}})
    )
    monkeypatch.chdir(tmp_path / "sweeps")
    loaded, base, base_dir = load_sweep_file(Path("s.yaml"))
    assert base_dir == tmp_path.resolve()
    run = run_sweep(loaded, base, base_dir, tmp_path / "t.parquet", executor="serial")
    assert run.frame["status"].to_list() == ["ok"]
