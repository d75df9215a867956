"""`simperf accuracy`: index handling, every truth row placed (predicted, flagged or not predicted with a reason),
an end-to-end run on one small scenario, the FlashMLA kernel rows and the shipped published scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simperf.accuracy.kernels import flashmla_available, parse_shape
from simperf.accuracy.run import IndexError_, load_index, markdown, report_json, run_accuracy
from simperf.accuracy.truth import read_truth
from simperf.hardware.catalog import device_gpu_key
from simperf.perfdb.db import shipped_calibration_dir
from simperf.scenario.load import load_scenario

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "scenarios" / "published"
TRUTH = Path(__file__).resolve().parents[2] / "shared" / "data" / "published-runs.csv"

HEADER = "id,source,date,gpu,n_gpu,engine,backend_flags,model,isl,osl,num_prompts,concurrency_or_rate,metric,value,unit,notes\n"
QWEN = "src/a docs/q/h100.md,d,H100 SXM,1,SGLang,default,Qwen3-8B,64,16,12,max_concurrency=4"

SCENARIO = {
    "name": "tiny-qwen",
    "model": {"name": "qwen3-8b"},
    "hardware": {"gpu": "h100", "count": 1},
    "serving": {"tp": 1},
    "workload": {
        "dataset": {"kind": "fixed", "input_len": 64, "output_len": 16},
        "num_prompts": 12,
        "max_concurrency": 4,
    },
}


def make_dir(tmp_path: Path, index: dict) -> tuple[Path, Path]:
    directory = tmp_path / "published"
    directory.mkdir()
    (directory / "tiny.yaml").write_text(yaml.safe_dump(SCENARIO))
    (directory / "index.yaml").write_text(yaml.safe_dump(index))
    truth = tmp_path / "truth.csv"
    truth.write_text(
        HEADER
        + f"T1,{QWEN},ttft_mean,30,ms,\n"
        + f"T2,{QWEN},tpot_mean,7,ms,\n"
        + f"T3,{QWEN},output_throughput,500,tok/s,\n"
        + f"T4,{QWEN},goodput,2,req/s,\n"
        + "T5,src/b,d,H200,8,SGLang,--tp 8,R1,1,1,1,c=1,tpot_mean,10,ms,\n"
        + "T6,src/b,d,H200,8,SGLang,--tp 8,R1,1,1,1,c=1,tpot_mean,10,ms,\n"
        + f"T7,{QWEN},tpot_median,7,ms,\n".replace("H100 SXM,1", "H200,1")
    )
    return directory, truth


def test_every_row_is_predicted_or_listed_with_a_reason(tmp_path):
    directory, truth = make_dir(
        tmp_path,
        {
            "scenarios": {"tiny.yaml": ["T1", "T2", "T3", "T4", "T7"]},
            "flagged": {"T3": "assumed something"},
            "unpredictable": {"T5": "torch.compile is not modelled"},
        },
    )
    report = run_accuracy(directory, truth)
    predicted = {r.row.id: r for r in report.rows}
    reasons = {u.row.id: u.reason for u in report.unpredicted}
    assert set(predicted) == {"T1", "T2", "T3"}
    assert set(predicted) | set(reasons) == {f"T{i}" for i in range(1, 8)}
    assert reasons["T5"] == "torch.compile is not modelled"
    assert "no scenario" in reasons["T6"]
    assert "not mapped" in reasons["T4"]
    assert "h100" in reasons["T7"] and "H200" in reasons["T7"]  # the scenario's GPU is not the row's
    # predictions are the pipeline's numbers, errors relative to the measurement
    t2 = predicted["T2"]
    assert t2.config == "tiny-qwen" and t2.measured == 7.0
    assert t2.ape == pytest.approx(abs(t2.predicted - 7.0) / 7.0)
    assert 0.0 < t2.measured_share <= 1.0
    assert predicted["T3"].flag == "assumed something"
    # flagged rows are summarised apart
    assert {s.group for s in report.by_metric()} == {"ttft_mean", "tpot_mean"}
    assert {("tiny-qwen", "decode"), ("tiny-qwen", "prefill")} <= set(report.composition)
    data = json.loads(report_json(report))
    assert {r["id"] for r in data["rows"]} == {"T1", "T2", "T3"}
    assert {r["id"] for r in data["not_predicted"]} == {"T4", "T5", "T6", "T7"}
    text = markdown(report)
    assert "| T5 | tpot_mean | torch.compile is not modelled |" in text


def test_a_failing_scenario_is_reported_per_row(tmp_path):
    directory, truth = make_dir(tmp_path, {"scenarios": {"tiny.yaml": ["T1"], "broken.yaml": ["T2"]}})
    (directory / "broken.yaml").write_text(
        "name: broken\nmodel: {name: no-such-model}\nhardware: {gpu: h100}\n"
    )
    report = run_accuracy(directory, truth)
    reasons = {u.row.id: u.reason for u in report.unpredicted}
    assert reasons["T2"].startswith("broken.yaml: prediction failed")


def test_inconsistent_index_is_an_error(tmp_path):
    directory, _ = make_dir(tmp_path, {"scenarios": {"tiny.yaml": ["T1"], "absent.yaml": ["T2"]}})
    with pytest.raises(IndexError_, match="absent.yaml: no such scenario file"):
        load_index(directory)
    (directory / "index.yaml").write_text(
        yaml.safe_dump({"scenarios": {"tiny.yaml": ["T1"]}, "unpredictable": {"T1": "x"}})
    )
    with pytest.raises(IndexError_, match="T1 is listed unpredictable"):
        load_index(directory)


def test_kernel_shapes_parse_from_the_flashmla_rows():
    from simperf.accuracy.truth import TruthRow

    row = TruthRow(
        "B",
        "deepseek-ai/FlashMLA",
        "H100 SXM (Modal)",
        1,
        "BF16 KV, page 64, causal",
        "b=128 s_q=2 mean_sk=4096 h_q=32 h_kv=1 d=576 dv=512 varlen=True",
        "kernel_time",
        223.0,
        "us",
        "",
    )
    shape = parse_shape(row)
    assert (shape.batch, shape.q_len, shape.kv_len, shape.num_heads) == (128, 2, 4096, 32)
    assert shape.kv_dtype == "bf16" and shape.page_size == 64 and shape.varlen
    assert device_gpu_key("H100 SXM (Modal)") == "h100" and device_gpu_key("MI300X") is None


needs_truth = pytest.mark.skipif(not TRUTH.is_file(), reason="../shared/data/published-runs.csv not present")


@needs_truth
def test_published_index_places_every_truth_row_once_and_scenarios_validate():
    index = load_index(PUBLISHED)
    ids = {r.id for r in read_truth(TRUTH)}
    placed = (
        [i for rows in index.scenarios.values() for i in rows] + index.kernels + list(index.unpredictable)
    )
    assert sorted(placed) == sorted(ids)
    for name in index.scenarios:
        scenario = load_scenario(PUBLISHED / name)
        assert (
            scenario.name == Path(name).stem
        )  # a scenario's name is its file's, so reports can be traced back


@needs_truth
@pytest.mark.skipif(
    not flashmla_available(shipped_calibration_dir("h100")), reason="no FlashMLA rows in calibration/h100"
)
def test_flashmla_kernel_rows_are_checked_against_the_h100_tables(tmp_path):
    directory = tmp_path / "kernels"
    directory.mkdir()
    index = load_index(PUBLISHED)
    (directory / "index.yaml").write_text(yaml.safe_dump({"kernels": index.kernels, "flagged": {}}))
    report = run_accuracy(directory, TRUTH)
    kernel_rows = {r.row.id: r for r in report.rows}
    assert set(kernel_rows) == set(index.kernels)
    for r in kernel_rows.values():
        assert r.predicted > 0 and r.detail
        if r.flag is None:  # calibrated shapes: the measured tables answer
            assert r.measured_share == 1.0


def test_update_doc_rewrites_only_the_generated_block(tmp_path):
    from simperf.accuracy.run import DOC_BEGIN, DOC_END, generated_block, replace_generated_block

    doc = tmp_path / "a.md"
    doc.write_text(f"# head\n{DOC_BEGIN}\nold\n{DOC_END}\ntail\n")
    replace_generated_block(doc, "| new |\n")
    assert doc.read_text().startswith("# head\n") and doc.read_text().endswith(f"{DOC_END}\ntail\n")
    assert generated_block(doc) == "| new |\n"
    (tmp_path / "b.md").write_text("no markers\n")
    with pytest.raises(ValueError, match="needs exactly one"):
        replace_generated_block(tmp_path / "b.md", "x")


def test_rows_of_another_variant_or_launch_flags_are_listed_not_scored(tmp_path):
    """Model names matched exactly once normalised (case, org prefix, a dtype suffix or note), not by substring; a
    weight dtype or an SGLang launch flag the scenario does not run keeps the row out of the summaries, with the
    reason naming it. The scenario is bf16 Qwen3-8B on one H100 with SGLang's default backend (fa3)."""
    directory, truth = make_dir(tmp_path, {"scenarios": {"tiny.yaml": [f"V{i}" for i in range(1, 9)]}})
    rows = {
        "V1": ("default", "Qwen/QWEN3-8B", "ttft_mean"),  # org prefix and case: the same model
        "V2": ("--tp-size 1 --attention-backend fa3", "Qwen3-8B (BF16)", "tpot_mean"),  # flags it runs
        "V3": ("--tp 1", "Qwen3-8B-FP8", "ttft_median"),  # another checkpoint
        "V4": ("--attention-backend flashinfer", "Qwen3-8B", "tpot_median"),
        "V5": ("Qwen/Qwen3-8B-FP8 (FA3)", "Qwen3-8B", "itl_median"),
        "V6": ("--tp 1", "Qwen3-8B-Instruct-2507", "e2e_mean"),  # a longer name: once matched by substring
        "V7": ("--page-size 16", "Qwen3-8B", "e2e_median"),
        "V8": ("--stream-interval 1", "Qwen3-8B", "itl_mean"),  # left out by the scenario: SGLang's default
    }
    with truth.open("a") as handle:
        for i, (flags, model, metric) in rows.items():
            handle.write(f"{i},src/v,d,H100 SXM,1,SGLang,{flags},{model},64,16,12,c=4,{metric},10,ms,\n")
    report = run_accuracy(directory, truth)
    assert {r.row.id for r in report.rows} == {"V1", "V2", "V8"}
    reasons = {u.row.id: u.reason for u in report.unpredicted}
    assert "the row's model Qwen3-8B-FP8 has fp8 weights" in reasons["V3"]
    assert "--attention-backend flashinfer, the scenario's prefill attention backend is fa3" in reasons["V4"]
    assert "checkpoint Qwen/Qwen3-8B-FP8 has fp8 weights" in reasons["V5"]
    assert "the scenario runs qwen3-8b, the row's model is Qwen3-8B-Instruct-2507" in reasons["V6"]
    assert "--page-size 16, the scenario's serving.page_size is 1" in reasons["V7"]


def test_metric_and_unit_names_in_capitals_are_scored(tmp_path):
    # `TTFT_mean` in `MS` was listed "metric 'TTFT_mean' in 'MS' is not mapped" and left out of the summaries
    directory, truth = make_dir(tmp_path, {"scenarios": {"tiny.yaml": ["C1", "C2", "T4"]}})
    with truth.open("a") as handle:
        handle.write(f"C1,{QWEN},TTFT_mean,30,MS,\n")
        handle.write(f"C2,{QWEN},Output_Throughput,500,TOK/S,\n")
    report = run_accuracy(directory, truth)
    assert {r.row.id for r in report.rows} == {"C1", "C2"}
    assert [(u.row.id, u.reason) for u in report.unpredicted if u.row.id in ("C1", "C2", "T4")] == [
        ("T4", "metric 'goodput' in 'req/s' is not mapped")
    ]


def test_rows_of_pcie_or_nvl_parts_are_not_scored_against_the_sxm_catalogue(tmp_path):
    # the catalogue's h100 is the SXM part: an H100 PCIe row (2.0 TB/s, 350 W) was predicted and scored as one
    directory, truth = make_dir(tmp_path, {"scenarios": {"tiny.yaml": ["P1", "P2", "P3"]}})
    with truth.open("a") as handle:
        for i, gpu in (("P1", "H100 PCIe"), ("P2", "H100 NVL"), ("P3", "NVIDIA H100 SXM5")):
            handle.write(f"{i},src/{i},d,{gpu},1,SGLang,default,Qwen3-8B,64,16,12,c=4,ttft_mean,30,ms,\n")
    report = run_accuracy(directory, truth)
    assert {r.row.id for r in report.rows} == {"P3"}
    reasons = {u.row.id: u.reason for u in report.unpredicted}
    assert reasons["P1"] == "tiny.yaml runs on 1x h100, the row on 1x H100 PCIe"
    assert reasons["P2"] == "tiny.yaml runs on 1x h100, the row on 1x H100 NVL"


def test_model_names_match_zoo_checkpoints_and_revisions():
    from simperf.accuracy.row_match import launch_flags, model_mismatch, normalise_model

    assert normalise_model("Qwen/Qwen3-8B-FP8") == "qwen3-8b-fp8"
    assert normalise_model("DeepSeek-R1-0528 (FP8)") == "deepseek-r1-0528"
    assert model_mismatch("DeepSeek-R1-0528 (FP8)", "deepseek-r1", "fp8", "model") is None  # same config.json
    assert model_mismatch("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", "bf16", "model") is None
    assert model_mismatch("Qwen3-8B-FP8", "qwen3-8b-fp8", "fp8", "model") is None  # the zoo's own fp8 entry
    assert model_mismatch("Qwen3-8B-FP8", "qwen3-8b", "fp8", "model") is None  # the fp8 what-if of qwen3-8b
    assert model_mismatch("DeepSeek-R1 (BF16)", "deepseek-r1", "fp8", "model") is not None
    assert model_mismatch("DeepSeek-V3", "deepseek-r1", "fp8", "model") is not None
    # notes are not flags; a flag's value is read with it; only launch_server flags count
    flags = launch_flags("TP=8 --tp 8 --enable-dp-attention --dp=8 --num-prompts 5 (recipe)")
    assert [(f.written, f.text) for f in flags] == [
        ("--tp", "8"),
        ("--enable-dp-attention", ""),
        ("--dp", "8"),
    ]


def test_two_scenario_files_of_one_name_are_an_error(tmp_path):
    """Rows are listed under their scenario's name and step compositions keyed by it: a second file of the same name
    mixed its rows with the first's and replaced its composition."""
    directory, truth = make_dir(tmp_path, {"scenarios": {"tiny.yaml": ["T1"], "copy.yaml": ["T2"]}})
    (directory / "copy.yaml").write_text(yaml.safe_dump({**SCENARIO, "serving": {"tp": 1, "page_size": 16}}))
    with pytest.raises(IndexError_, match="scenarios copy.yaml and tiny.yaml are both named 'tiny-qwen'"):
        run_accuracy(directory, truth)


def test_kernel_and_unpredictable_ids_missing_from_the_truth_file_are_warned(tmp_path):
    directory, truth = make_dir(
        tmp_path, {"scenarios": {"tiny.yaml": ["T1"]}, "kernels": ["B99"], "unpredictable": {"T66": "typo"}}
    )
    report = run_accuracy(directory, truth)
    assert "index: kernels names row B99, which the truth file does not have" in report.warnings
    assert "index: unpredictable names row T66, which the truth file does not have" in report.warnings
