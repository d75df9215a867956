"""On a CUDA machine with flashinfer: validate two sampled steps of a dense scenario end to end (skipped
elsewhere). The scenario is planned for this GPU's catalogue entry so the GPU check passes."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("flashinfer")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

ROOT = Path(__file__).resolve().parents[1]


def test_sampled_steps_run_their_kernels_and_land_near_the_prediction(tmp_path):
    from simperf.calibrate.provenance import detect_device
    from simperf.validate.execute import run_validation
    from simperf.validate.plan import plan_validation

    gpu = detect_device().gpu or "h200"
    text = (ROOT / "scenarios/validate/qwen3-8b-h200.yaml").read_text()
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        text.replace("gpu: h200", f"gpu: {gpu}").replace("num_prompts: 400", "num_prompts: 30")
    )
    out = tmp_path / "v"
    plan_validation(scenario, out, 2)
    rows = run_validation(out, replicas=1)
    assert len(rows) == 2
    for row in rows:
        assert row["error"] is None, row["error"]
        assert row["timing_method"] == "cuda_graph_replay"
        assert abs(row["rel_error"]) < 0.5
