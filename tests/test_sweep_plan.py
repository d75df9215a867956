"""The capacity planner on constructed tables whose answer is known."""

from __future__ import annotations

import polars as pl
import pytest

from simperf.sweep.plan import plan_capacity
from simperf.sweep.sla import parse_sla

SLA = parse_sla(["ttft.p90 <= 2s", "tpot.p90 <= 50ms"])


def config_rows(label: str, gpus: int, ttft_by_rate: dict[float, float], tpot: float = 20.0, **extra):
    return [
        {
            "point_id": f"{label}@{rate}",
            "config_id": label,
            "config_label": label,
            "gpu": "h100",
            "num_gpus": gpus,
            "status": "ok",
            "reason": None,
            "request_rate": rate,
            "max_concurrency": None,
            "request_throughput": rate * 0.97,
            "failed_requests": 0,
            "p90_ttft_ms": ttft,
            "p90_tpot_ms": tpot,
            "output_throughput_per_gpu": 100.0 * rate / gpus,
            **extra,
        }
        for rate, ttft in ttft_by_rate.items()
    ]


def table_of(*groups) -> pl.DataFrame:
    return pl.DataFrame([row for g in groups for row in g])


def test_fewest_gpus_wins_and_runner_ups_follow():
    table = table_of(
        # 1 GPU sustaining 4 req/s: 30 req/s needs 8 replicas = 8 GPUs
        config_rows("tp1", 1, {2.0: 100, 4.0: 900, 8.0: 5000}),
        # 2 GPUs sustaining 10 req/s: 3 replicas = 6 GPUs, the fewest
        config_rows("tp2", 2, {2.0: 80, 5.0: 90, 10.0: 1500, 20.0: 4000}),
        # 4 GPUs sustaining 20 req/s: 2 replicas = 8 GPUs, ties tp1 on GPUs but serves more per GPU (5 vs 4)
        config_rows("tp4", 4, {5.0: 50, 10.0: 60, 20.0: 300, 40.0: 2500}, tpot=30.0),
        # 8 GPUs: TPOT misses the SLA at every load
        config_rows("tp8", 8, {8.0: 40, 32.0: 100}, tpot=60.0),
    )
    plan = plan_capacity(table, 30.0, SLA)
    assert [(c.config_label, c.sustained_rate, c.replicas, c.total_gpus) for c in plan.ranked] == [
        ("tp2", 10.0, 3, 6),
        ("tp4", 20.0, 2, 8),
        ("tp1", 4.0, 8, 8),
    ]
    assert plan.winner.point_id == "tp2@10.0"
    assert not plan.winner.lower_bound and plan.winner.sustained_text == "10"
    assert plan.winner.per_replica_rate == pytest.approx(10.0)
    assert [label for label, _ in plan.infeasible] == ["tp8"]
    assert "lightest swept load" in plan.infeasible[0][1]


def test_sustained_rate_stops_at_the_first_failing_load():
    # a fluke pass at a higher load after a failure does not count: the SLA must hold at every lighter load
    table = table_of(config_rows("c", 1, {1.0: 100, 2.0: 3000, 4.0: 100}))
    plan = plan_capacity(table, 5.0, SLA)
    assert plan.winner.sustained_rate == 1.0 and plan.winner.replicas == 5


def test_replicas_round_up_and_headroom_is_reported():
    table = table_of(config_rows("a", 2, {3.0: 10, 6.0: 10}), config_rows("b", 1, {2.0: 10, 2.5: 3000}))
    plan = plan_capacity(table, 13.0, SLA)
    a = next(c for c in plan.ranked if c.config_label == "a")
    assert a.replicas == 3 and a.total_gpus == 6 and a.headroom == pytest.approx(18 / 13 - 1)
    b = next(c for c in plan.ranked if c.config_label == "b")
    assert b.replicas == 7 and b.total_gpus == 7
    assert a.lower_bound and a.sustained_text == "6+"  # passed at every swept load: only a lower bound
    assert plan.winner.config_label == "a"  # 6 GPUs beat 7


def test_concurrency_capped_points_count_their_measured_throughput():
    rows = config_rows("c", 1, {float("inf"): 500})
    rows[0].update(max_concurrency=16, request_throughput=3.3)
    plan = plan_capacity(table_of(rows), 10.0, SLA)
    assert plan.winner.sustained_rate == pytest.approx(3.3) and plan.winner.replicas == 4


def test_rows_that_could_not_run_make_a_configuration_infeasible_with_the_reason():
    rows = [
        {
            "point_id": "x",
            "config_id": "big",
            "config_label": "big",
            "status": "does_not_fit",
            "reason": "weights do not fit",
            "num_gpus": 1,
            "request_rate": 1.0,
            "max_concurrency": None,
        }
    ]
    plan = plan_capacity(table_of(rows, config_rows("ok", 1, {1.0: 10})), 1.0, SLA)
    assert plan.winner.config_label == "ok"
    assert plan.infeasible == [("big", "does_not_fit: weights do not fit")]


def test_a_fleet_configuration_is_planned_as_copies_of_the_whole_fleet(capsys):
    """A fleet sweep's row is a whole fleet (its servers behind its router): the plan said '4 replica(s) x 2 h100
    ... one replica sustains 8 req/s' of a 2-server fleet, as if four 2-GPU servers served 30 req/s."""
    import json

    from rich.console import Console

    from simperf.sweep.cli import plan_json, print_plan

    fleet = {"replicas": [{"count": 2}], "router": {"policy": "round_robin"}}
    table = table_of(
        config_rows("fleet", 2, {4.0: 100, 8.0: 200}, scenario_json=json.dumps({"fleet": fleet})),
        config_rows("server", 1, {2.0: 100, 4.0: 200}, scenario_json=json.dumps({"serving": {"tp": 1}})),
    )
    plan = plan_capacity(table, 30.0, SLA)
    by_label = {c.config_label: c for c in plan.ranked}
    # the arithmetic is unchanged: 4 copies of the 2-GPU fleet, 8 single-GPU servers
    assert [(c.replicas, c.total_gpus, c.fleet_servers) for c in (by_label["fleet"], by_label["server"])] == [
        (4, 8, 2),
        (8, 8, 0),
    ]
    assert by_label["fleet"].replicas_text == "4 x fleet of 2 servers"
    assert by_label["server"].replicas_text == "8"
    assert plan_json(plan, 5)["winner"]["replica_is_fleet_of_servers"] == 2
    print_plan(plan, 5, Console(width=200))
    out = capsys.readouterr().out
    assert "fleet: 4 x fleet of 2 servers (2 h100 per fleet) = 8 GPUs (one fleet sustains 8+ req/s)" in out
    assert "A fleet's replica is the whole fleet behind its router" in out


def test_a_tiny_target_still_needs_one_replica():
    # 1e-300 req/s against a configuration sustaining 4 planned "0 replica(s) x 1 h100 = 0 GPUs", headroom -100%
    plan = plan_capacity(table_of(config_rows("a", 1, {2.0: 10, 4.0: 10})), 1e-300, SLA)
    assert plan.winner.replicas == 1 and plan.winner.total_gpus == 1 and plan.winner.headroom > 0


def test_a_table_where_no_point_ran_is_read_without_metric_columns(tmp_path):
    """Rows of points that did not run carry no metrics: the table's own checks need the metric columns only when a
    point ran (plan then names each configuration's reason)."""
    from simperf.sweep.table import read_table, write_table

    row = {"point_index": 0, "point_id": "p0", "config_id": "c0", "config_label": "tp=2", "status": "invalid",
           "reason": "serving.tp (2) needs at least that many GPUs", "scenario_json": "{}"}  # fmt: skip
    write_table(pl.DataFrame([row]), tmp_path / "t.sweep.parquet", {})
    frame, _ = read_table(tmp_path / "t.sweep.parquet")
    assert frame["status"].to_list() == ["invalid"]
