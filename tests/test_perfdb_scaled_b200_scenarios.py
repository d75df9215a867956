"""The B200 scenarios load, and a prediction from the shipped B200 tables names where each op's time comes from."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simperf.scenario.load import load_scenario

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((REPO / "scenarios" / "b200").glob("*.yaml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_b200_scenario_is_valid(path):
    scenario = load_scenario(path)
    assert scenario.hardware.gpu == "b200" and scenario.name == path.stem


def test_a_b200_prediction_labels_every_op_with_its_provenance():
    if not (REPO / "calibration" / "b200").is_dir() or not (REPO / "calibration" / "h200").is_dir():
        pytest.skip("shipped calibration/b200 or calibration/h200 absent")
    from simperf.pipeline import predict

    scenario = load_scenario(REPO / "scenarios" / "b200" / "dsr1-tp4-trtllm-mla-p64-c1.yaml")
    workload = scenario.workload.model_copy(
        update={
            "num_prompts": 2,
            "dataset": scenario.workload.dataset.model_copy(update={"output_len": 64}),
        }
    )
    prediction = predict(scenario.model_copy(update={"workload": workload}))
    assert prediction.db.provenance()["scaled_from"] == "h200"
    rows = prediction.cost.breakdown_decode(1, 1, 2048, True)
    by_name = {r.name: r for r in rows}
    attention = by_name["attention"]
    assert "third-party:aiconfigurator" in attention.detail or attention.source == "third_party"
    scaled = [r for r in rows if r.detail.startswith("scaled-from:h200")]
    assert scaled and all(r.source == "extrapolated" for r in scaled)
    assert all(r.source and r.detail for r in rows)
    assert np.isfinite(prediction.result["mean_tpot_ms"])
