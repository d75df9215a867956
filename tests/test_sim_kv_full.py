"""When the KV pool fills: SGLang 0.5.17's admission stop and retraction order, against a real run's server timestamps.

groundtruth/h100/qwen3-8b-flashinfer/c256-1k-1k: 512 requests of 1024/1024 tokens, 256 at a time, on a
363,119-token pool. The server admitted 207 requests (new_token_ratio 0.7), refused the 208th (`NO_TOKEN`, which
sets `batch_is_full`) and then admitted nothing for ~700 decode steps while new_token_ratio decayed to its floor,
until requests left the batch; when the pool filled it retracted the most recently admitted requests one at a time
(their waiting-queue entry time is reset by the retraction). Removing either mechanism fails these tests: without
the sticky `batch_is_full` simperf admitted 222 requests in the first wave, one more every ~12 decode steps, and
retracted 75; with the old tie-break it retracted request 0 first.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from simperf.accuracy.corpus import scenario_of
from simperf.pipeline import predict

RUN = Path(__file__).resolve().parents[1] / "groundtruth/h100/qwen3-8b-flashinfer/c256-1k-1k"


@pytest.fixture(scope="module")
def measured() -> pl.DataFrame:
    return pl.read_parquet(RUN / "requests.parquet").sort("client_send_s")


@pytest.fixture(scope="module")
def simulated():
    records = predict(scenario_of(RUN)).records
    order = np.argsort(records.send_s, kind="stable")
    return records, order


def _measured_first_wave(d: pl.DataFrame) -> int:
    first = d["server_first_scheduled_s"].to_numpy()
    return int((first < d["server_finished_s"].to_numpy().min()).sum())


def _retracted(d: pl.DataFrame) -> np.ndarray:
    # a retracted request re-enters the waiting queue after it was first scheduled
    return np.nonzero(d["server_waiting_entry_s"].to_numpy() > d["server_first_scheduled_s"].to_numpy())[0]


def test_a_refused_request_stops_admission_until_a_request_leaves(measured, simulated):
    records, order = simulated
    first_wave = int((records.first_token_s < records.finish_s.min()).sum())
    truth = _measured_first_wave(measured)
    assert truth == 207
    # simperf's pool is 1.8% larger than the server's (docs/accuracy.md), so ~2% more fit; a decaying ratio
    # admitting during the decode stretch would add one request every ~12 steps (222 before the fix)
    assert truth <= first_wave <= truth * 1.025


def test_retraction_takes_the_most_recently_admitted_requests_and_as_many_as_the_server(measured, simulated):
    records, order = simulated
    sim_retracted = np.nonzero(records.retractions[order] > 0)[0]
    truth = _retracted(measured)
    assert abs(len(sim_retracted) - len(truth)) <= 0.1 * len(truth)
    first_episode = sim_retracted[sim_retracted < 256]
    # the server retracted requests 177-206 of the first wave (the last admitted), never its first requests
    assert first_episode.min() >= truth[truth < 256].min() - 5
    assert 0 not in sim_retracted
