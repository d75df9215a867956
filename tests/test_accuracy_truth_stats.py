"""Truth-file parsing, metric-name mapping and error statistics of `simperf accuracy`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simperf.accuracy.stats import ape, summarize_errors, target_for
from simperf.accuracy.truth import (
    METRICS,
    TruthError,
    measured_in_key_units,
    predicted_value,
    read_truth,
    source_label,
    unit_factor,
)

HEADER = "id,source,date,gpu,n_gpu,engine,backend_flags,model,isl,osl,num_prompts,concurrency_or_rate,metric,value,unit,notes\n"


def write_truth(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "truth.csv"
    path.write_text(HEADER + "".join(line + "\n" for line in lines))
    return path


def test_publisher_metric_names_map_to_bench_serving_keys_and_units():
    assert METRICS["ttft_mean"].key == "mean_ttft_ms"
    assert METRICS["tpot_median"].key == "median_tpot_ms"
    assert METRICS["itl_median"].key == "median_itl_ms"
    assert METRICS["e2e_p99"].key == "p99_e2e_latency_ms"
    assert METRICS["output_throughput"].key == "output_throughput"
    assert METRICS["total_throughput"].unit == "tok/s"
    per_gpu = METRICS["output_throughput_per_gpu"]
    assert per_gpu.key == "output_throughput" and per_gpu.per_gpu and per_gpu.unit == "tok/s/GPU"


def test_rows_read_with_units_converted_and_per_gpu_divided(tmp_path):
    path = write_truth(
        tmp_path,
        [
            'X1,"src/a doc/x/y.md",d,H200,8,SGLang,--tp 8,R1,1,1,10,c=4,ttft_mean,1.5,s,"a, b"',
            "X2,src/b issue,d,H200,8,SGLang,--tp 8,R1,1,1,10,c=4,output_throughput_per_gpu,100,tok/s/GPU,",
            "X3,src/b issue,d,H200,8,SGLang,--tp 8,R1,1,1,10,c=4,goodput,3,req/s,",
        ],
    )
    rows = read_truth(path)
    assert [r.id for r in rows] == ["X1", "X2", "X3"]
    assert rows[0].notes == "a, b" and rows[0].n_gpu == 8 and rows[0].config == "--tp 8"
    assert measured_in_key_units(rows[0]) == pytest.approx(1500.0)  # seconds -> ms
    assert predicted_value(rows[1], {"output_throughput": 800.0}, num_gpus=8) == pytest.approx(100.0)
    assert predicted_value(rows[1], {}, num_gpus=8) is None
    assert unit_factor(rows[2]) is None  # unknown metric: reported as not mapped, never guessed
    with pytest.raises(TruthError):
        measured_in_key_units(rows[2])


def test_truth_file_errors_name_the_problem(tmp_path):
    with pytest.raises(TruthError, match="no such truth file"):
        read_truth(tmp_path / "absent.csv")
    dup = write_truth(tmp_path, ["X,s,d,H100,1,e,f,m,1,1,1,c,ttft_mean,1,ms,"] * 2)
    with pytest.raises(TruthError, match="duplicate row id"):
        read_truth(dup)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,value\nX,1\n")
    with pytest.raises(TruthError, match="missing column"):
        read_truth(bad)


def test_truth_file_as_a_spreadsheet_writes_it(tmp_path):
    # a spreadsheet's export starts with a BOM, and a hand-written header may space its names: both were read as
    # "missing column(s) id" (or every column), though the file had them
    row = "X,s,d,H100,1,e,f,m,1,1,1,c,ttft_mean,1,ms,"
    bom = tmp_path / "bom.csv"
    bom.write_bytes(("\ufeff" + HEADER + row + "\n").encode("utf-8"))
    assert [r.id for r in read_truth(bom)] == ["X"]
    spaced = tmp_path / "spaced.csv"
    spaced.write_text(HEADER.replace(",", ", ") + "\n" + row + "\n")  # and a blank line, skipped as before
    assert [(r.id, r.value) for r in read_truth(spaced)] == [("X", 1.0)]
    short = tmp_path / "short.csv"
    short.write_text(HEADER + row.rsplit(",", 2)[0] + "\n")
    with pytest.raises(TruthError, match="short.csv:2: expected 16 fields like the header, got 14"):
        read_truth(short)


def test_metric_and_unit_names_in_another_case_are_read_as_simperf_spells_them(tmp_path):
    # 'TTFT_mean' in 'MS' was "not mapped" and never scored; only case and spacing are forgiven
    path = write_truth(
        tmp_path,
        [
            "X1,s,d,H100,1,e,f,m,1,1,1,c,TTFT_mean,30,MS,",
            "X2,s,d,H100,1,e,f,m,1,1,1,c, Output_Throughput_Per_GPU ,100,Tok / s / gpu,",
            "X3,s,d,H100,1,e,f,m,1,1,1,c,Kernel_Time,5,US,",
            "X4,s,d,H100,1,e,f,m,1,1,1,c,TTFT mean,30,ms,",
            "X5,s,d,H100,1,e,f,m,1,1,1,c,Goodput,3,Req/S,",
        ],
    )
    rows = {r.id: r for r in read_truth(path)}
    assert (rows["X1"].metric, rows["X1"].unit) == ("ttft_mean", "ms")
    assert measured_in_key_units(rows["X1"]) == pytest.approx(30.0)
    assert (rows["X2"].metric, rows["X2"].unit) == ("output_throughput_per_gpu", "tok/s/GPU")
    assert (rows["X3"].metric, rows["X3"].unit) == ("kernel_time", "us")
    assert rows["X4"].metric == "TTFT mean" and unit_factor(rows["X4"]) is None  # not a spelling of ttft_mean
    assert (rows["X5"].metric, rows["X5"].unit) == ("Goodput", "req/s")  # unknown metric kept as given
    assert unit_factor(rows["X5"]) is None


def test_source_label_keeps_repository_and_cited_document():
    assert source_label("gpustack/gpustack docs/performance-lab/qwen3-8b/h100-latency.md") == (
        "gpustack/gpustack qwen3-8b/h100-latency.md"
    )
    assert source_label("SemiAnalysisAI/InferenceX issue #870 'x'") == "SemiAnalysisAI/InferenceX"


def test_ape_is_relative_to_the_measurement():
    assert ape(110.0, 100.0) == pytest.approx(0.10)
    assert ape(90.0, 100.0) == pytest.approx(0.10)
    with pytest.raises(ValueError):
        ape(1.0, 0.0)


def test_summaries_give_median_p90_mean_and_signed_error_per_group():
    items = [("tpot_mean", p, 100.0) for p in (101.0, 95.0, 120.0, 100.0, 70.0)]
    items.append(("ttft_mean", 130.0, 100.0))
    by = {s.group: s for s in summarize_errors(items, target_for)}
    errors = np.array([0.01, 0.05, 0.20, 0.0, 0.30])
    tpot = by["tpot_mean"]
    assert tpot.n == 5
    assert tpot.median_ape == pytest.approx(np.median(errors))
    assert tpot.p90_ape == pytest.approx(np.percentile(errors, 90))
    assert tpot.mean_ape == pytest.approx(errors.mean())
    assert tpot.median_signed == pytest.approx(0.0)  # signed errors -0.3, -0.05, 0, 0.01, 0.2
    assert tpot.target == 0.10 and tpot.meets_target is True
    assert by["ttft_mean"].target == 0.20 and by["ttft_mean"].meets_target is False
    assert target_for("output_throughput_per_gpu") == 0.10
    assert target_for("total_throughput") is None
