"""A closed loop's first burst as SGLang's API server received it (simperf/accuracy/burst.py on
groundtruth/experiments/api-server-burst-h100/): the numbers docs/overheads.md states, recomputed."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from simperf.accuracy.burst import bursts, long_collections, longest_same_stack

EXPERIMENT = Path(__file__).resolve().parents[1] / "groundtruth" / "experiments" / "api-server-burst-h100"


def test_a_receipt_does_not_get_dearer_with_concurrency():
    found = bursts(EXPERIMENT / "requests.csv")
    assert [b.requests for b in found] == [64, 128, 256, 512]
    assert [round(b.median_gap_ms, 2) for b in found] == [0.31, 0.31, 0.28, 0.28]


def test_the_receive_phase_stops_for_pauses_the_first_growing_with_the_burst():
    found = bursts(EXPERIMENT / "requests.csv")
    first = [b.pauses_ms[0] for b in found]
    assert all(b.pause_after[0] == 0 for b in found)
    assert (
        first == sorted(first)
        and first[0] == pytest.approx(10.5, abs=0.1)
        and first[-1] == pytest.approx(39.7, abs=0.1)
    )
    assert [round(b.paused_ms) for b in found] == [26, 52, 488, 221]
    assert max(max(b.pauses_ms) for b in found) == pytest.approx(462.1, abs=0.1)
    # on average a request's receipt took 0.75-2.2 ms where the receipts themselves take ~0.3
    per_request = [b.span_ms / (b.requests - 1) for b in found]
    assert min(per_request) > 0.7 and max(per_request) == pytest.approx(2.22, abs=0.01)


def test_the_long_pause_is_one_trivial_line_for_376_ms():
    samples, frame = longest_same_stack(EXPERIMENT / "api-c256.txt")
    assert samples == 188 and frame.startswith("EnvField._resolve_default")
    assert max(longest_same_stack(EXPERIMENT / f"api-c{c}.txt")[0] for c in (64, 128, 512)) < 30


def test_a_burst_needs_more_than_its_warm_up_request(tmp_path):
    path = tmp_path / "requests.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["prompt_tokens", "request_received_ts"])
        w.writerows([[128, 0.0], [128, 2.0], [128, 2.0003], [128, 2.0203], [6, 2.03], [128, 2.0206]])
    (burst,) = bursts(path)
    assert burst.requests == 4 and burst.pauses_ms == pytest.approx((20.0,)) and burst.pause_after == (1,)


GC_RUN = EXPERIMENT.parent / "api-server-gc-h100"


def test_the_api_server_logged_one_full_collection_of_half_a_second_and_none_after_freezing():
    collections = long_collections(GC_RUN / "server.log")
    full = [c for c in collections if c.generation == 2]
    assert (
        len(full) == 1
        and full[0].seconds == pytest.approx(0.522, abs=0.001)
        and full[0].gen2_objects == 768521
    )
    frozen_at = next(
        line[1:24]
        for line in (GC_RUN / "server.log").read_text().splitlines()
        if "Freezing GC in Tokenizer" in line
    )
    assert all(c.at < frozen_at for c in collections)  # none longer than 5 ms after /freeze_gc


def test_pauses_without_a_collection_remain_after_freezing():
    before_256, before_512, after = bursts(GC_RUN / "requests.csv")
    assert (before_256.requests, before_512.requests, after.requests) == (256, 512, 255)
    assert [round(p, 1) for p in before_256.pauses_ms] == [117.4, 45.5]
    assert [round(p, 1) for p in after.pauses_ms] == [24.3, 71.1]
    samples, frame = longest_same_stack(GC_RUN / "api-c512.txt")  # the 0.52 s collection, while connecting
    assert samples == 276 and frame.startswith("ConnectionState.__init__")
