"""One-shot planning: candidates follow SGLang's layout rules; the plan runs, ranks, resumes and saves commands."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from simperf.cli import app
from simperf.models.zoo import load_arch
from simperf.plan.candidates import generate_candidates, layouts
from simperf.plan.oneshot import PlanRequest, base_scenario, build_points, loads

runner = CliRunner()


def request(**kw) -> PlanRequest:
    args = dict(model="deepseek-r1", gpu="h200", total_gpus=16, isl=1024, osl=1024, range_ratio=1.0, rate=10.0,
                sla=("ttft.p90<=2s",), mtp_accept_length=2.4)  # fmt: skip
    return PlanRequest(**{**args, **kw})


def candidates_for(req: PlanRequest):
    return generate_candidates(
        load_arch(req.model),
        req.gpu,
        req.total_gpus,
        base_scenario(req),
        req.mtp_accept_length,
        req.disaggregation,
    )


def test_deepseek_on_16_h200_tries_what_fits_one_node_with_dp_ep_backends_mtp_and_pd_pairs():
    found = candidates_for(request())
    labels = {c.label for c in found.candidates}
    agg = [c for c in found.candidates if c.kind == "aggregated"]
    assert {c.gpus_per_replica for c in agg} == {8}  # TP4 and below do not hold R1's fp8 weights on an H200
    assert {c.columns["layout"] for c in agg} == {"TP8", "TP8 EP8", "TP8 DP8-attn", "TP8 DP8-attn EP8"}
    assert {c.columns["backend"] for c in agg} == {"fa3 (default)", "flashinfer", "flashmla"}
    assert {c.columns["mtp"] for c in agg} == {False, True}
    assert len(agg) == 4 * 3 * 2
    assert "1P1D: prefill TP8 + decode TP8 DP8-attn EP8" in labels
    why = dict(found.skipped)
    assert "does not fit" in why["TP4"] and "spans nodes" in why["TP16 (one server over 16 GPUs)"]
    # the time budget of the command (5 minutes on 2 cores) rests on this count: ~0.3 s per point
    assert len(build_points(request(), found.candidates, base_dir=__import__("pathlib").Path("."))) <= 150


def test_dense_models_get_plain_tp_layouts_only_and_heads_must_split_evenly():
    found = candidates_for(request(model="qwen3-8b", gpu="h100", total_gpus=4, disaggregation=False))
    assert {c.columns["layout"] for c in found.candidates} == {"TP1", "TP2", "TP4"}
    assert not any(c.columns["mtp"] for c in found.candidates)  # no nextn layer in the checkpoint
    moe = load_arch("qwen3-30b-a3b")  # 32 heads, 128 experts: DP attention and EP where they divide
    assert {(x.dp_attention, x.ep) for x in layouts(moe, 8)} == {(1, 1), (1, 8), (8, 1), (8, 8)}


def test_loads_are_the_per_replica_share_of_the_target_and_a_ladder_around_it():
    req = request()
    cand = next(c for c in candidates_for(req).candidates if c.gpus_per_replica == 8)
    rates = [x["workload.request_rate"] for x in loads(req, cand)]
    assert rates == [2.5, 5.0, 10.0, 20.0]  # 10 req/s over the 2 replicas the budget holds is 5 each
    closed = loads(request(rate=None), cand)
    assert [x["workload.max_concurrency"] for x in closed] == [1, 4, 16, 64, 256]


def test_bad_plan_inputs_fail_with_one_line():
    for args, message in (
        (["--model", "qwen3-9b", "--gpu", "h100", "--total-gpus", "2"], "--model qwen3-9b: not a zoo model"),
        (["--model", "qwen3-8b", "--gpu", "h300", "--total-gpus", "2"], "--gpu: got 'h300'"),
        (["--model", "qwen3-8b", "--gpu", "h100"], "--total-gpus: required"),
        (["--model", "qwen3-8b", "--gpu", "h100", "--total-gpus", "2", "--sla", "ttft<2"], "--sla"),
    ):
        result = runner.invoke(app, ["plan", *args])
        assert result.exit_code == 2 and message in result.output, result.output


def test_model_is_read_as_predict_reads_model_path():
    # --model took only zoo names: Qwen/Qwen3-8B and Qwen3-8B, which predict --model-path reads, were refused
    from simperf.plan.cli import _zoo_model

    assert _zoo_model("Qwen/Qwen3-8B") == ("qwen3-8b", None)
    assert _zoo_model("Qwen3-8B") == ("qwen3-8b", None)
    assert _zoo_model("meta-llama/Llama-3.1-8B-Instruct") == ("llama-3.1-8b", None)
    assert _zoo_model("Qwen/Qwen3-8B-FP8") == ("qwen3-8b", "fp8")  # the checkpoint's weights are planned
    fp8 = request(model="qwen3-8b", weight_dtype="fp8")
    assert base_scenario(fp8)["model"] == {"name": "qwen3-8b", "weight_dtype": "fp8"}
    assert fp8.name.startswith("plan-qwen3-8b-fp8-weights-") and fp8.label == "qwen3-8b (fp8 weights)"


def test_fp8_checkpoint_plan_fits_and_sizes_with_fp8_weight_bytes():
    # the candidates' fit rule and the KV pool each point runs with come from resolve(), as predict's do: an fp8
    # checkpoint's plan admits TP4 on H100s (118 GB of fp8 weights per GPU at TP2, 59 at TP4), a bf16 one needs
    # TP8, and the fp8 plan's TP8 point gets the larger KV pool predict gives the fp8 checkpoint
    from simperf.scenario.load import parse_scenario
    from simperf.scenario.resolve import resolve
    from simperf.sweep.paths import with_values

    def plan(weight_dtype):
        req = request(model="qwen3-235b-a22b", gpu="h100", total_gpus=8, weight_dtype=weight_dtype,
                      disaggregation=False)  # fmt: skip
        return req, candidates_for(req)

    (bf16_req, bf16), (fp8_req, fp8) = plan(None), plan("fp8")
    assert {c.gpus_per_replica for c in bf16.candidates} == {8}
    assert "TP4" in {c.columns["layout"] for c in fp8.candidates}
    assert "does not fit" in dict(bf16.skipped)["TP4"]

    def pool(req, cands):
        tp8 = next(c for c in cands.candidates if c.columns["layout"] == "TP8")
        config = with_values(base_scenario(req), tp8.changes)
        return resolve(parse_scenario(config, "point"))[0].max_total_tokens

    predicted = resolve(
        parse_scenario(with_values(base_scenario(fp8_req), {"hardware.count": 8, "serving": {"tp": 8}}), "p")
    )[0]
    assert pool(fp8_req, fp8) == predicted.max_total_tokens > pool(bf16_req, bf16)


@pytest.fixture
def small_plan(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["plan", "--model", "qwen3-8b", "--gpu", "h100", "--total-gpus", "2", "--isl", "256", "--osl", "32",
            "--rate", "6", "--sla", "ttft.p90<=2s", "--sla", "tpot.p90<=40ms", "--num-prompts", "40",
            "--executor", "serial", "--top", "1", "--save-dir", "out", "-q"]  # fmt: skip
    return tmp_path, args


def test_small_plan_ranks_saves_commands_and_resumes(small_plan):
    tmp_path, args = small_plan
    first = runner.invoke(app, [*args, "-o", "json"])
    assert first.exit_code == 0, first.output
    plan = json.loads(first.stdout)
    winner = plan["winner"]
    assert winner["total_gpus"] <= 2 and winner["capacity_req_s"] >= 6.0
    assert winner["at_sustained_load"]["p90_ttft_ms"] <= 2000
    saved = [tmp_path / p for p in plan["saved"]]
    assert len(saved) == 2  # the winner and one runner-up
    for directory in saved:
        assert {p.name for p in directory.iterdir()} == {
            "launch.sh",
            "bench.sh",
            "scenario.yaml",
            "prediction.json",
        }
        assert "sglang.launch_server" in (directory / "launch.sh").read_text()
    rerun = runner.invoke(app, ["predict", str(saved[0] / "scenario.yaml"), "-o", "json", "-q"])
    assert rerun.exit_code == 0, rerun.output
    predicted = json.loads((saved[0] / "prediction.json").read_text())
    again = json.loads(rerun.stdout)
    assert again["median_tpot_ms"] == predicted["median_tpot_ms"]  # the saved scenario is the predicted one
    scenario = yaml.safe_load((saved[0] / "scenario.yaml").read_text())
    assert scenario["workload"]["request_rate"] == pytest.approx(6.0 / winner["replicas"])

    text = runner.invoke(app, args)  # the same command again: every point comes from the table
    assert text.exit_code == 0 and "Winner:" in text.stdout
    from simperf.sweep.table import read_table

    table, meta = read_table(tmp_path / "out" / "plan.sweep.parquet")
    assert meta["oneshot"]["model"] == "qwen3-8b" and table["status"].to_list().count("ok") == table.height
    from_table = runner.invoke(app, ["plan", str(tmp_path / "out" / "plan.sweep.parquet"), "-o", "json"])
    assert from_table.exit_code == 0, from_table.output  # the table form reads a one-shot table


def test_a_plan_saved_again_leaves_none_of_an_earlier_plans_runner_ups(small_plan):
    """--save-dir holding the same request's plan of a larger --top (here a winner's directory it wrote): that
    directory stayed beside the new plan's two, as if it were this plan's. Now removed; a file of the user's in
    one is kept."""
    tmp_path, args = small_plan
    first = runner.invoke(app, [*args, "-o", "json"])
    assert first.exit_code == 0, first.output
    runner_up = tmp_path / json.loads(first.stdout)["saved"][1]
    (runner_up.parent / "05-old-label").mkdir()
    (runner_up.parent / "05-old-label" / "launch.sh").write_text("# an earlier plan's\n")
    (runner_up.parent / "06-mine").mkdir()
    (runner_up.parent / "06-mine" / "notes.txt").write_text("mine\n")
    again = runner.invoke(app, [*args, "-o", "json"])
    assert again.exit_code == 0, again.output
    out = tmp_path / "out"
    saved = {tmp_path.joinpath(p).name for p in json.loads(again.stdout)["saved"]}
    assert {p.name for p in out.iterdir() if p.is_dir()} == saved | {"06-mine"}
    assert (out / "06-mine" / "notes.txt").read_text() == "mine\n"
