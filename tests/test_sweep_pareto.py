"""Pareto front against a brute-force reference; SLA parsing and filtering."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simperf.sweep.pareto import pareto_front, pareto_mask
from simperf.sweep.sla import SlaError, parse_bound, parse_sla


def brute_force_front(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    keep = np.zeros(x.size, dtype=bool)
    for i in range(x.size):
        if math.isnan(x[i]) or math.isnan(y[i]):
            continue
        dominated = any(
            x[j] >= x[i] and y[j] >= y[i] and (x[j] > x[i] or y[j] > y[i])
            for j in range(x.size)
            if not (math.isnan(x[j]) or math.isnan(y[j]))
        )
        keep[i] = not dominated
    return keep


# small integer grids make ties and duplicates common, which is where fronts go wrong
coordinate = st.one_of(st.integers(0, 6).map(float), st.just(float("nan")))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(coordinate, coordinate), max_size=40))
def test_pareto_mask_matches_brute_force(points):
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    assert pareto_mask(x, y).tolist() == brute_force_front(x, y).tolist()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e4), st.floats(0, 1e4)), min_size=1, max_size=60))
def test_pareto_front_of_a_table_is_sorted_non_dominated_rows_that_ran(points):
    table = pl.DataFrame(
        {
            "status": ["ok"] * len(points) + ["does_not_fit"],
            "tokens_per_s_per_user": [p[0] for p in points] + [1e9],
            "output_throughput_per_gpu": [p[1] for p in points] + [1e9],
        }
    )
    front = pareto_front(table)
    assert front.height >= 1 and (front["status"] == "ok").all()
    xs = front["tokens_per_s_per_user"].to_list()
    assert xs == sorted(xs)
    ys = front["output_throughput_per_gpu"].to_list()
    assert all(a >= b for a, b in zip(ys, ys[1:], strict=False))  # moving right on the front costs throughput


@pytest.mark.parametrize(
    ("text", "column", "max_ms"),
    [
        ("ttft.p90 <= 2s", "p90_ttft_ms", 2000.0),
        ("tpot:p90<=50ms", "p90_tpot_ms", 50.0),
        ("e2e_p99 <= 30 s", "p99_e2e_latency_ms", 30000.0),
        ("itl.median<=12.5", "median_itl_ms", 12.5),
        ("TTFT.P50 <= 1.5e3ms", "median_ttft_ms", 1500.0),
    ],
)
def test_sla_bounds_parse_to_bench_serving_columns(text, column, max_ms):
    bound = parse_bound(text)
    assert bound.column == column and bound.max_ms == max_ms


@pytest.mark.parametrize(
    "text", ["ttft <= 2s", "ttfx.p90 <= 2s", "ttft.p42 <= 1s", "ttft.p90 <= 2h", "ttft.p90 <= 0"]
)
def test_bad_sla_bounds_say_what_is_allowed(text):
    with pytest.raises(SlaError, match="METRIC.STAT|unknown|positive"):
        parse_bound(text)


def test_sla_filter_keeps_rows_meeting_every_bound_without_lost_requests():
    table = pl.DataFrame(
        {
            "point_id": ["a", "b", "c", "d", "e"],
            "status": ["ok", "ok", "ok", "ok", "does_not_fit"],
            "failed_requests": [0, 0, 0, 3, None],
            "p90_ttft_ms": [1999.0, 2001.0, 10.0, 10.0, None],
            "p90_tpot_ms": [50.0, 10.0, float("nan"), 10.0, None],
        }
    )
    sla = parse_sla(["ttft.p90 <= 2s", "tpot.p90 <= 50ms"])
    assert sla.passing_ids(table) == {"a"}
    assert parse_sla([]).passing_ids(table) == {"a", "b", "c"}
    # a table in which nothing ran has no metric columns: nothing passes, nothing raises
    assert sla.passing_ids(pl.DataFrame({"point_id": ["x"], "status": ["invalid"]})) == set()
