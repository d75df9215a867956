"""Sweep files and axis expansion: grid, groups moving together, subsets, stable ids, errors with field paths."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sweepfixtures import BASE, sweep_dict

from simperf.sweep.evaluate import DOES_NOT_FIT, INVALID, OK, evaluate_point
from simperf.sweep.expand import expand
from simperf.sweep.spec import SweepError, load_sweep_file, parse_sweep

SHIPPED = Path(__file__).resolve().parents[1] / "scenarios" / "sweeps"


def points_of(axes, **extra):
    return expand(parse_sweep(sweep_dict(axes, **extra)), BASE, "/tmp")


def test_grid_runs_every_combination_with_each_value_in_its_field():
    points = points_of({"serving.page_size": [1, 16], "workload.request_rate": [1.0, 2.0, 4.0]})
    assert len(points) == 6
    combos = {(p.scenario["serving"]["page_size"], p.scenario["workload"]["request_rate"]) for p in points}
    assert combos == {(a, b) for a in (1, 16) for b in (1.0, 2.0, 4.0)}
    assert [p.index for p in points] == list(range(6))
    assert points[0].columns == {"serving.page_size": 1, "workload.request_rate": 1.0}
    # the base is not modified by expansion
    assert "serving" not in BASE


def test_group_axis_moves_its_fields_together():
    layouts = [{"serving.tp": 1, "hardware.count": 1}, {"serving.tp": 2, "hardware.count": 2}]
    points = points_of({"layout": layouts, "hardware.gpu": ["h100", "h200"]})
    assert len(points) == 4
    for p in points:
        assert p.scenario["serving"]["tp"] == p.scenario["hardware"]["count"]
        assert p.columns["layout"] == f"tp={p.columns['serving.tp']} count={p.columns['hardware.count']}"
    assert points[0].config_label == "tp=1 count=1 gpu=h100"


def test_load_points_of_one_configuration_share_a_config_id_and_ids_are_stable():
    axes = {"serving.page_size": [1, 16], "workload.request_rate": [1.0, 2.0]}
    first, again = points_of(axes), points_of(axes)
    assert [p.point_id for p in first] == [p.point_id for p in again]
    assert len({p.point_id for p in first}) == 4
    by_config = {}
    for p in first:
        by_config.setdefault(p.config_id, set()).add(p.scenario["workload"]["request_rate"])
    assert list(by_config.values()) == [{1.0, 2.0}, {1.0, 2.0}]
    # renaming the sweep changes scenario names but not what is simulated, so ids stay
    renamed = expand(parse_sweep({**sweep_dict(axes), "name": "other"}), BASE, "/tmp")
    assert [p.point_id for p in renamed] == [p.point_id for p in first]


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    n=st.integers(1, 30),
    seed=st.integers(0, 1000),
    method=st.sampled_from(["random", "lhs"]),
)
def test_subsets_draw_at_most_n_distinct_configurations_and_cross_every_load(sizes, n, seed, method):
    axes = {
        f"serving.{f}": list(range(1, k + 1))
        for f, k in zip(
            ["page_size", "max_running_requests", "cuda_graph_max_bs", "max_prefill_tokens"],
            sizes,
            strict=False,
        )
    }
    axes["workload.request_rate"] = [1.0, 2.0]
    total = 1
    for k in sizes:
        total *= k
    if n > total:  # more configurations than the axes make: refused (the whole grid ran without a word)
        with pytest.raises(
            SweepError, match=f"sample.n: {n} configurations asked for, and the axes make {total}"
        ):
            points_of(axes, sample={"method": method, "n": n, "seed": seed})
        return
    points = points_of(axes, sample={"method": method, "n": n, "seed": seed})
    configs = {p.config_id for p in points}
    assert len(configs) == n if method == "random" else len(configs) <= n
    assert len(points) == 2 * len(configs)
    assert len({p.point_id for p in points}) == len(points)
    if method == "lhs" and n >= max(sizes):
        # Latin hypercube: every value of every axis is drawn at least once when n >= its size
        for path, values in axes.items():
            if path != "workload.request_rate":
                assert {p.columns[path] for p in points} == set(values)


def test_unknown_field_is_rejected_with_its_path_and_a_suggestion():
    with pytest.raises(SweepError) as e:
        parse_sweep(sweep_dict({"serving.tpp": [1, 2]}), "s.yaml")
    assert "axes" in str(e.value) and "serving.tp" in str(e.value)
    with pytest.raises(SweepError) as e:
        parse_sweep(sweep_dict({"layout": [{"serving.tp": 1, "hardware.cnt": 1}]}), "s.yaml")
    assert "layout[0].hardware.cnt" in str(e.value) and "hardware.count" in str(e.value)


def test_sweep_file_rejects_unknown_keys_and_sampling_without_n():
    with pytest.raises(SweepError, match="axess"):
        parse_sweep({**sweep_dict({"serving.tp": [1]}), "axess": {}}, "s.yaml")
    with pytest.raises(SweepError, match="needs n"):
        parse_sweep(sweep_dict({"serving.tp": [1]}, sample={"method": "lhs"}), "s.yaml")
    with pytest.raises(SweepError, match="unknown metric"):
        parse_sweep(sweep_dict({"serving.tp": [1]}, plan={"sla": ["ttfx.p90 <= 2s"]}), "s.yaml")


def test_sampling_options_that_would_draw_nothing_are_refused():
    # a grid draws nothing, and load axes always run in full: seed (and n) were accepted and unread
    with pytest.raises(SweepError, match="seed applies to method random or lhs"):
        parse_sweep(sweep_dict({"serving.tp": [1]}, sample={"seed": 3}), "s.yaml")
    rates_only = sweep_dict({"workload.request_rate": [1, 2, 4]}, sample={"method": "random", "n": 1})
    with pytest.raises(SweepError, match=r"every axis here is a load axis \(workload.request_rate\)"):
        parse_sweep(rates_only, "s.yaml")
    parse_sweep(
        sweep_dict(
            {"workload.request_rate": [1, 2], "serving.page_size": [1, 16]}, sample=rates_only["sample"]
        )
    )


def test_a_value_valid_only_with_other_axes_stays_a_row_and_one_never_valid_is_refused():
    # each is valid at some point (turns with a multi_turn dataset, bucket as the prefill side's policy), so the
    # sweep loads; the point where it meets the rest is judged when it runs
    parse_sweep(
        sweep_dict({"workload.dataset.kind": ["random", "multi_turn"], "workload.dataset.turns": [3]})
    )
    parse_sweep(sweep_dict({"fleet.router.prefill_policy": ["bucket"], "serving.tp": [2]}))
    rows = [evaluate_point(p) for p in points_of({"serving.tp": [2]})]  # tp 2 on one GPU: only together
    assert [r["status"] for r in rows] == [INVALID]
    # no point could take these: refused at load, naming the axis and the value
    with pytest.raises(
        SweepError, match=r"fleet.router.decode_policy: got 'bucket'; allowed values: 'round_robin'"
    ):
        parse_sweep(sweep_dict({"fleet.router.decode_policy": ["bucket"]}))
    with pytest.raises(SweepError, match=r"workload.request_rate: must be a positive number .* \(got 0\)"):
        parse_sweep(sweep_dict({"workload.request_rate": [0, 1]}))


def test_invalid_and_oversized_configurations_become_rows_with_reasons():
    axes = {
        "layout": [
            {"serving.tp": 2, "hardware.count": 1},  # more TP ranks than GPUs: the scenario is invalid
            {"model.name": "llama-3.1-70b", "serving.mem_fraction_static": 0.5},  # weights do not fit one GPU
            {"serving.page_size": 1},
        ]
    }
    rows = [evaluate_point(p) for p in points_of(axes)]
    assert [r["status"] for r in rows] == [INVALID, DOES_NOT_FIT, OK]
    assert "serving.tp" in rows[0]["reason"] or "tp" in rows[0]["reason"]
    assert "does not fit" in rows[1]["reason"]
    assert rows[2]["completed"] == 20 and rows[2]["failed_requests"] == 0
    assert rows[2]["output_throughput_per_gpu"] == rows[2]["output_throughput"]
    assert rows[2]["tokens_per_s_per_user"] == pytest.approx(1000 / rows[2]["median_tpot_ms"])


def test_failed_requests_count_the_requests_the_workload_made(tmp_path):
    """num_prompts - completed counted a 16-request multi_turn workload (num_prompts left at its default 1000)
    and a 2-request trace as 984 and 998 failed requests, so no such point ever met an SLA."""
    (tmp_path / "t.jsonl").write_text(
        '{"arrival_s": 0.0, "input_len": 100, "output_len": 10}\n'
        '{"arrival_s": 0.5, "input_len": 120, "output_len": 10}\n'
    )
    base = {**BASE, "workload": {"seed": 1}}
    multi_turn = {"kind": "multi_turn", "num_conversations": 8, "turns": 2, "input_len": 100, "output_len": 8,
                  "turn_interval_s": 1}  # fmt: skip
    axes = {
        "load": [
            {"workload.dataset": multi_turn, "workload.request_rate": 4},
            {"workload.dataset": {"kind": "trace", "path": "t.jsonl"}},
        ]
    }
    points = expand(parse_sweep(sweep_dict(axes)), base, str(tmp_path))
    rows = [evaluate_point(p) for p in points]
    assert [r["status"] for r in rows] == [OK, OK]
    assert [r["completed"] for r in rows] == [16, 2]
    assert [r["failed_requests"] for r in rows] == [0, 0]
    # the num_prompts column showed workload.num_prompts, 1000 by default, for both: now the requests made
    assert [r["num_prompts"] for r in rows] == [16, 2]
    # a point that did not run shows none for a dataset that ignores num_prompts
    unfit = {
        "layout": [
            {"workload.dataset": multi_turn, "workload.request_rate": 4, "model.name": "llama-3.1-70b"}
        ]
    }
    [row] = [evaluate_point(p) for p in expand(parse_sweep(sweep_dict(unfit)), base, str(tmp_path))]
    assert row["status"] == DOES_NOT_FIT and row["num_prompts"] is None


def test_dropped_requests_fail_in_a_fleet_row_as_in_a_single_server_row():
    """A fleet's notes counted capped requests but not those `over_context: drop` left out, so a fleet row lost 8
    of 10 requests with failed_requests 0 (and could meet an SLA) where the same workload on one server had 8."""
    base = {**BASE, "workload": {"dataset": {"kind": "random", "input_len": 60000, "output_len": 8,
            "range_ratio": 0.6}, "over_context": "drop", "num_prompts": 10, "request_rate": 2, "seed": 1}}  # fmt: skip
    axes = {"setup": [{"serving.page_size": 1}, {"fleet": {"replicas": [{"count": 2}]}}]}
    rows = [evaluate_point(p) for p in expand(parse_sweep(sweep_dict(axes)), base, "/tmp")]
    assert [r["status"] for r in rows] == [OK, OK]
    completed = [r["completed"] for r in rows]
    assert completed[0] == completed[1] < 10
    assert [r["failed_requests"] for r in rows] == [10 - completed[0]] * 2


def test_shipped_sweep_example_loads_and_expands():
    files = sorted(SHIPPED.glob("*.yaml"))
    assert files, "scenarios/sweeps/ ships an example"
    for path in files:
        spec, base, base_dir = load_sweep_file(path)
        points = expand(spec, base, str(base_dir))
        assert 1 <= len(points) <= 200
        assert spec.plan.rate and spec.plan.sla
