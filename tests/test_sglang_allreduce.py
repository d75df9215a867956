"""SGLang's tensor-parallel all-reduce on H100 (simperf/calibrate/sglang_allreduce.py): the shipped table is what
the tensor-parallel steps are priced from, and the recorder keeps the rows and how each size was served."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from simperf.calibrate import sglang_allreduce
from simperf.calibrate.points import make_point
from simperf.pipeline import predict
from simperf.scenario.models import Scenario


def test_the_h100_table_is_sglangs_all_reduce_timed_by_graph_replay_at_tp2_and_tp4():
    table = pq.read_table("calibration/h100/allreduce.parquet")
    t = table.filter(pc.equal(table["backend"], "sglang_custom_ar")).to_pydict()
    assert set(t["timing_method"]) == {"cuda_graph_replay"} and set(t["status"]) == {"ok"}
    assert sorted(set(t["group_size"])) == [2, 4]
    for g in (2, 4):
        sizes = [m for m, gs in zip(t["message_bytes"], t["group_size"], strict=True) if gs == g]
        assert sizes == sorted(sizes) and len(sizes) == len(sglang_allreduce.MESSAGE_BYTES)
    served = json.loads(open("calibration/h100/runs/2026-11-26-sglang-allreduce-g4.json").read())
    by_size = {s["message_bytes"]: s["method"] for s in served["sizes"]}
    assert by_size[8192] == "ca" and served["sizes"][0]["communicator"] == "CustomAllReduceV2"


def test_a_tp4_decode_step_prices_its_all_reduces_from_the_measured_table():
    scenario = Scenario.model_validate(
        {
            "model": {"name": "llama-3.1-8b"},
            "hardware": {"gpu": "h100", "count": 4},
            "serving": {"tp": 4, "attention_backend": "flashinfer"},
            "workload": {"dataset": {"kind": "fixed", "input_len": 128, "output_len": 4}, "num_prompts": 1},
        }
    )
    cost = predict(scenario).cost
    rows = [r for r in cost.breakdown_decode(1, 1, 1200, True) if r.op == "allreduce"]
    assert rows and all(r.source == "measured" for r in rows)
    # SGLang's custom all-reduce of a decode-sized message: ~2 us, where the roofline floor alone is 10 us
    assert all(1.5 < r.us_per_call < 3.0 for r in rows)


def test_recording_appends_the_rows_and_says_how_each_size_was_served(tmp_path):
    shutil.copy("calibration/h100/device.json", tmp_path)
    row = {
        **make_point("allreduce", "sglang_custom_ar", dtype="bf16", group_size=2, message_bytes=1024),
        "gpu": "h100",
        "time_us": 2.0,
        "time_us_p10": 1.9,
        "time_us_p90": 2.1,
        "repeats": 30,
        "timing_method": "cuda_graph_replay",
        "status": "ok",
        "source": "measured",
        "date": "2026-11-26T00:00:00Z",
    }
    how = {"message_bytes": 1024, "method": "ca", "communicator": "CustomAllReduceV2"}
    line = sglang_allreduce.ROW_MARKER + json.dumps({"row": row, "how": how}) + "\n"  # as read from the ranks
    assert sglang_allreduce.record(["rank log line\n", line], tmp_path, 2) == 1
    table = pq.read_table(tmp_path / "allreduce.parquet").to_pydict()
    assert np.allclose(table["time_us"], [2.0]) and table["backend"] == ["sglang_custom_ar"]
    (written,) = (tmp_path / "runs").glob("*-sglang-allreduce-g2.json")
    assert json.loads(written.read_text())["sizes"] == [how]


def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    assert sglang_allreduce.main(["--group-size", "1", "--out", str(tmp_path)]) == 2
    assert "at least 2 GPUs" in capsys.readouterr().err
    assert sglang_allreduce.record(["no rows here\n"], tmp_path, 2) == 0
    assert not any(tmp_path.iterdir())
