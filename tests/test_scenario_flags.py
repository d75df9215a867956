"""`simperf predict` with bench_serving / launch_server flags: names as SGLang spells them, values mapped onto the
scenario, files and flags combined, --set, --save-scenario, --output-file like bench_serving."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from simperf.cli import app
from simperf.scenario.cmdline import scenario_from_command_line
from simperf.scenario.flags import (
    BY_NAME,
    DATASET_KINDS,
    DSA_ATTENTION_BACKENDS,
    FLAGS,
    SGLANG_ATTENTION_BACKENDS,
    SGLANG_DSA_KERNELS,
    FlagError,
    parse_flags,
)

runner = CliRunner()
SGLANG_FLAGS = json.loads((Path(__file__).parent / "fixtures" / "sglang" / "flags-0.5.17.json").read_text())

QWEN_FLAGS = [
    "--model-path", "qwen3-8b", "--gpu", "h100", "--dataset-name", "random", "--random-input-len", "512",
    "--random-output-len", "64", "--max-concurrency", "16", "--num-prompts", "48",
]  # fmt: skip


def sglang_flag(origin: str, name: str) -> dict | None:
    """SGLang's spec for a flag name, allowing argparse's unique-prefix abbreviation (`--tp` for `--tp-size`)."""
    flags = SGLANG_FLAGS[origin]
    if name in flags:
        return flags[name]
    matches = [f for f in flags if f.startswith(name)]
    return flags[matches[0]] if len(matches) == 1 else None


@pytest.mark.parametrize("flag", [f for f in FLAGS if f.origin != "simperf"], ids=lambda f: f.name)
def test_every_sglang_flag_name_exists_in_sglang_with_the_same_arity(flag):
    origin = flag.origin
    for name in (flag.name, *flag.aliases):
        spec = sglang_flag(origin, name)
        assert spec is not None, f"{name} is not a {origin} flag of SGLang {SGLANG_FLAGS['sglang_version']}"
        assert spec["value"] == flag.takes_value, f"{name}: SGLang says value={spec['value']}"


def test_simperf_own_flags_do_not_shadow_sglang_flags():
    for flag in FLAGS:
        if flag.origin == "simperf":
            assert (
                flag.name not in SGLANG_FLAGS["launch_server"]
                and flag.name not in SGLANG_FLAGS["bench_serving"]
            )


def test_translated_values_are_values_sglang_accepts():
    server = SGLANG_FLAGS["launch_server"]
    attention = set(server["--attention-backend"]["choices"])
    assert set(SGLANG_ATTENTION_BACKENDS) <= attention and set(DSA_ATTENTION_BACKENDS) <= attention
    assert set(SGLANG_DSA_KERNELS) <= set(server["--nsa-prefill-backend"]["choices"])
    assert {"auto", "bf16", "bfloat16", "fp8_e4m3"} <= set(server["--kv-cache-dtype"]["choices"])
    assert {"fcfs", "lpm"} <= set(server["--schedule-policy"]["choices"])
    assert {"round_robin", "total_requests", "auto"} <= set(server["--load-balance-method"]["choices"])
    assert "fp8" in server["--quantization"]["choices"]
    bench = set(SGLANG_FLAGS["bench_serving"]["--dataset-name"]["choices"])
    assert set(DATASET_KINDS) - {"trace"} <= bench  # "trace" is simperf's own name for any trace file


def test_flags_map_onto_scenario_fields_and_flags_win_over_the_file(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text(
        "name: base\nmodel: {name: qwen3-8b}\nhardware: {gpu: h100, count: 1}\nserving: {tp: 1, page_size: 16}\n"
        "workload:\n  dataset: {kind: random, input_len: 100, output_len: 10}\n  num_prompts: 10\n"
    )
    built = scenario_from_command_line(
        [
            str(base),
            "--tp-size",
            "2",
            "--random-input-len=300",
            "--disable-radix-cache",
            "--request-rate",
            "4",
        ],
        ["serving.page_size=32", "workload.seed=7"],
    )
    sc = built.scenario
    assert sc.name == "base" and sc.serving.tp == 2 and sc.hardware.count == 2  # count follows --tp-size
    assert sc.workload.dataset.input_len == 300 and sc.workload.dataset.output_len == 10  # the file's, kept
    assert sc.serving.disable_radix_cache and sc.workload.request_rate == 4.0
    assert sc.serving.page_size == 32 and sc.workload.seed == 7  # --set wins last


def test_sglang_backend_and_speculative_names_are_translated():
    sc = scenario_from_command_line(
        ["--model-path", "deepseek-v3.2", "--gpu", "h200", "--tp", "8", "--dataset-name", "random",
         "--attention-backend", "nsa", "--nsa-prefill-backend", "flashmla_sparse", "--nsa-decode-backend",
         "flashmla_kv", "--kv-cache-dtype", "fp8_e4m3", "--enable-dp-attention", "--dp-size", "8",
         "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "2", "--speculative-eagle-topk", "1",
         "--accept-length", "2.1"]
    ).scenario  # fmt: skip
    s = sc.serving
    assert (s.prefill_attention_backend, s.decode_attention_backend) == ("flashmla_sparse", "flashmla_kv")
    assert s.dp_attention == 8 and s.tp == 8 and s.kv_cache_dtype == "fp8_e4m3"
    assert s.speculative.algorithm == "mtp" and s.speculative.num_steps == 2
    assert s.speculative.accept_length.mean == 2.1


def test_speculative_algorithm_alone_takes_sglangs_draft_shape_for_llama():
    # SGLang 0.5.x auto-chooses (num_steps, eagle_topk, num_draft_tokens) = (5, 4, 8) for a Llama target when none
    # is given; simperf priced its own (3, 1, 4) chain
    def speculative(*extra: str):
        return scenario_from_command_line(
            ["--model-path", "llama-3.1-8b", "--gpu", "h100", "--dataset-name", "random",
             "--speculative-algorithm", "EAGLE3", "--accept-length", "2.5", *extra]
        ).scenario.serving.speculative  # fmt: skip

    auto = speculative()
    assert (auto.num_steps, auto.eagle_topk, auto.num_draft_tokens) == (5, 4, 8)
    given = speculative("--speculative-num-steps", "3", "--speculative-eagle-topk", "1")
    assert (given.num_steps, given.eagle_topk, given.num_draft_tokens) == (3, 1, None)


def test_model_path_takes_zoo_names_hf_repo_ids_and_local_config_dirs(tmp_path):
    from importlib import resources

    def model_of(path: str):
        return scenario_from_command_line(
            ["--model-path", path, "--gpu", "h100", "--dataset-name", "random"]
        ).scenario.model

    assert model_of("qwen3-8b").name == "qwen3-8b"
    fp8 = model_of("Qwen/Qwen3-8B-FP8")
    assert (fp8.name, fp8.weight_dtype) == ("qwen3-8b", "fp8")
    local = tmp_path / "My-Model"
    local.mkdir()
    (local / "config.json").write_text(
        (resources.files("simperf.models") / "zoo" / "qwen3-8b.json").read_text()
    )
    mine = model_of(str(local))
    assert mine.name == "my-model" and mine.config == (local / "config.json").resolve()


@pytest.mark.parametrize(
    "tokens, message",
    [
        (["--datset-name", "random"], "did you mean --dataset-name"),
        (["--model-path", "qwen3-9b", "--gpu", "h100"], "did you mean qwen3-8b"),
        (["--tp-size"], "--tp-size needs a value"),
        (["--tp-size", "two"], "--tp-size: got 'two'; expected int"),
        (["--model-path", "qwen3-8b", "--gpu", "h100", "--dataset-name", "sharegpt"], "simperf models random"),
        (["--model-path", "qwen3-8b", "--gpu", "h100", "--dataset-name", "random", "--dp-size", "2"],
         "--dp-size without --enable-dp-attention"),
        (["--model-path", "qwen3-8b", "--gpu", "h100", "--dataset-name", "random", "--attention-backend", "triton"],
         "--attention-backend: got 'triton'"),
        (["--model-path", "qwen3-8b", "--dataset-name", "random"], "--gpu: required without a scenario file"),
        (["--model-path", "deepseek-r1", "--gpu", "h200", "--dataset-name", "random", "--speculative-algorithm",
          "EAGLE"], "give --accept-length"),
        (["--disable-radix-cache=1"], "is a switch and takes no value"),
        # the nsa backend was dropped for a model without DSA and the default backend priced without a word
        (["--model-path", "qwen3-8b", "--gpu", "h100", "--dataset-name", "random", "--attention-backend", "nsa"],
         "--attention-backend nsa: SGLang's sparse-attention backend runs only DSA models"),
    ],
)  # fmt: skip
def test_bad_flags_fail_with_one_clear_message(tokens, message):
    with pytest.raises(FlagError, match=None) as e:
        scenario_from_command_line(tokens)
    assert message in str(e.value)


def test_set_rejects_unknown_fields_with_the_closest_names():
    with pytest.raises(FlagError, match="did you mean serving.page_size"):
        scenario_from_command_line(QWEN_FLAGS, ["serving.pagesize=16"])


def test_validation_errors_name_the_flag_that_set_the_field():
    from simperf.scenario.load import ScenarioError

    with pytest.raises(ScenarioError, match=r"serving.page_size: .* \[from --page-size\]"):
        scenario_from_command_line([*QWEN_FLAGS, "--page-size", "0"])


def test_tokenize_prompt_says_the_client_sends_token_ids():
    # bench_serving's default: text
    assert not scenario_from_command_line(QWEN_FLAGS).scenario.workload.tokenize_prompt
    assert scenario_from_command_line([*QWEN_FLAGS, "--tokenize-prompt"]).scenario.workload.tokenize_prompt


def test_max_concurrency_0_is_no_cap_as_in_bench_serving(tmp_path):
    """bench_serving 0.5.17 (benchmark/serving.py): `Semaphore(max_concurrency) if max_concurrency else None`, and
    it prints 0 as "not set". simperf refused --max-concurrency 0 (workload.max_concurrency >= 1)."""
    flags = [f for f in QWEN_FLAGS if f not in ("--max-concurrency", "16")]
    assert (
        scenario_from_command_line([*flags, "--max-concurrency", "0"]).scenario.workload.max_concurrency
        is None
    )
    capped = tmp_path / "capped.yaml"
    capped.write_text(
        yaml.safe_dump({**yaml.safe_load(_qwen_yaml()), "workload": {**_workload(), "max_concurrency": 4}})
    )
    uncapped = scenario_from_command_line([str(capped), "--max-concurrency", "0"]).scenario
    assert (
        uncapped.workload.max_concurrency is None
    )  # the flag lifts the file's cap, as bench_serving would run


def _workload() -> dict:
    return {
        "dataset": {"kind": "random", "input_len": 256, "output_len": 16},
        "num_prompts": 10,
        "request_rate": 5,
    }


def _qwen_yaml() -> str:
    return yaml.safe_dump(
        {"name": "q", "model": {"name": "qwen3-8b"}, "hardware": {"gpu": "h100"}, "serving": {"tp": 1}}
    )


def test_disable_ignore_eos_says_output_lengths_are_upper_bounds():
    """With --disable-ignore-eos the server stops at EOS, which simperf cannot know: it generates every output
    token, and the prediction says so rather than pass for the run."""
    flags = QWEN_FLAGS
    plain = runner.invoke(app, ["predict", *flags])
    stopping = runner.invoke(app, ["predict", *flags, "--disable-ignore-eos"])
    assert plain.exit_code == 0 and stopping.exit_code == 0, stopping.output
    assert "output lengths are upper bounds" not in plain.output
    assert "WARNING: output lengths are upper bounds: workload.ignore_eos is false" in stopping.output


def test_mooncake_replays_the_trace_timestamps_as_bench_serving_does(tmp_path):
    # bench_serving 0.5.17 (benchmark/serving.py, benchmark) sends --dataset-name mooncake through
    # get_mooncake_request_over_time, which replays the timestamps with or without --use-trace-timestamps
    trace = tmp_path / "mc.jsonl"
    trace.write_text(
        "".join(f'{{"timestamp": {500 * i}, "input_length": 100, "output_length": 10}}\n' for i in range(4))
    )
    flags = ["--model-path", "qwen3-8b", "--gpu", "h100", "--dataset-path", str(trace)]
    parsed = scenario_from_command_line([*flags, "--dataset-name", "mooncake"])
    mooncake = parsed.scenario.workload
    assert mooncake.dataset.use_timestamps and mooncake.request_rate == "inf"
    # and it says that bench_serving 0.5.17 itself cannot send this dataset (the straggler check plan's failure)
    assert any("bench_serving 0.5.17 itself fails" in note for note in parsed.notes)
    slowed = scenario_from_command_line(
        [*flags, "--dataset-name", "mooncake", "--mooncake-slowdown-factor", "2"]
    )
    assert slowed.scenario.workload.dataset.time_scale == 2.0
    own = scenario_from_command_line(
        [*flags, "--dataset-name", "trace", "--request-rate", "8"]
    ).scenario.workload
    assert not own.dataset.use_timestamps and own.request_rate == 8.0  # simperf's own name: lengths at a rate
    with pytest.raises(
        FlagError, match="--request-rate: bench_serving ignores it for --dataset-name mooncake"
    ):
        scenario_from_command_line([*flags, "--dataset-name", "mooncake", "--request-rate", "8"])


def test_ignored_flags_are_accepted_and_reported():
    settings = parse_flags(["--host", "0.0.0.0", "--port", "30000", "--trust-remote-code", "--tp", "2"])
    assert (
        settings.ignored == ["--host", "--port", "--trust-remote-code"] and settings.given("--tp-size") == 2
    )
    assert BY_NAME["--tp"].name == "--tp-size"


def _json_prediction(args: list[str]) -> dict:
    """`simperf predict ARGS -o json -q` as a dict, less how long this machine took (not a prediction)."""
    result = runner.invoke(app, ["predict", *args, "-o", "json", "-q"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    out["simperf"].pop("simulation_wall_s")
    return out


def test_flags_and_saved_yaml_give_identical_json(tmp_path, monkeypatch):
    """The issue's first "done when": a flag-driven run and the same run from a YAML file agree exactly."""
    monkeypatch.chdir(tmp_path)
    saved = tmp_path / "s.yaml"
    a = _json_prediction([*QWEN_FLAGS, "--save-scenario", str(saved)])
    b = _json_prediction([str(saved)])
    assert a == b and a["completed"] == 48 and a["max_concurrency"] == 16
    assert yaml.safe_load(saved.read_text())["workload"]["max_concurrency"] == 16


PD_DP_YAML = """
name: pd-dp
model: {name: deepseek-v2-lite}
hardware: {gpu: h100, count: 4}
disaggregation:
  prefill: {tp: 2, dp_attention: 2}
  decode: {tp: 2, dp_attention: 2}
  kv_link_gbytes_per_s: 50
  kv_link_latency_us: 50
workload:
  dataset: {kind: random, input_len: 1024, output_len: 32, range_ratio: 0.5}
  num_prompts: 48
  request_rate: 8
"""


@pytest.mark.parametrize(
    "scenario",
    [PD_DP_YAML, _qwen_yaml() + yaml.safe_dump({"workload": _workload()})],
    ids=["pd-dp-attention", "qwen3-8b"],
)
def test_like_saved_scenario_reloads_to_the_same_prediction(tmp_path, scenario):
    """`predict --like RUN --save-scenario S.yaml` saves what the command ran, as given: S.yaml predicts the same.
    A full dump wrote every default as if chosen: a PD prefill server's load_balance_method pinned to round_robin
    (SGLang 0.5.17 server_args.py _handle_load_balance_method: auto follows the bootstrap room there), the
    overheads as given (no longer scaled to the host), top-level serving beside disaggregation and the DSA threshold
    on a non-DSA model, each refused on reload."""
    source, run, saved = tmp_path / "s.yaml", tmp_path / "run.jsonl", tmp_path / "saved.yaml"
    source.write_text(scenario)
    measured = runner.invoke(app, ["predict", str(source), "-q", "--output-file", str(run)])
    assert measured.exit_code == 0, measured.output
    a = _json_prediction([str(source), "--like", str(run), "--save-scenario", str(saved)])
    assert a == _json_prediction([str(saved)])
    written = yaml.safe_load(saved.read_text())
    assert "overheads" not in written and "load_balance_method" not in saved.read_text()


@pytest.mark.parametrize("fleet", [None, {"replicas": [{"count": 2}], "router": {"policy": "round_robin"}}])
def test_like_and_saved_yaml_give_identical_json(tmp_path, monkeypatch, fleet):
    """--like with --save-scenario wrote every defaulted field out, and the saved file did not load: on Qwen3-8B
    serving.dsa_prefill_dense_attn_kv_len_threshold (a DSA-only key), on a round_robin fleet router.cache_threshold
    (read only by cache_aware). The saved file now runs the same prediction."""
    monkeypatch.chdir(tmp_path)
    scenario = {"name": "s", "model": {"name": "qwen3-8b"}, "hardware": {"gpu": "h100", "count": 1},
                "workload": {"dataset": {"kind": "random", "input_len": 256, "output_len": 16}, "num_prompts": 10,
                             "request_rate": 5}}  # fmt: skip
    if fleet is not None:
        scenario["fleet"] = fleet
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario))
    run = {"completed": 3, "duration": 1.0, "input_lens": [100, 120, 130], "output_lens": [10, 12, 14],
           "request_rate": 4}  # fmt: skip
    (tmp_path / "run.json").write_text(json.dumps(run))
    saved = tmp_path / "saved.yaml"
    a = _json_prediction(["s.yaml", "--like", "run.json", "--save-scenario", str(saved)])
    assert a == _json_prediction([str(saved)]) and a["completed"] == 3


def test_output_file_appends_bench_serving_lines_with_details(tmp_path):
    from simperf.accuracy.bench_import import read_bench_result

    out = tmp_path / "runs.jsonl"
    for extra in ([], ["--output-details"]):
        result = runner.invoke(app, ["predict", *QWEN_FLAGS, "--output-file", str(out), "-q", *extra])
        assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert len(lines) == 2  # appended, as bench_serving does
    plain, detailed = (json.loads(line) for line in lines)
    assert "input_lens" not in plain and plain["completed"] == 48
    n = detailed["completed"]
    assert len(detailed["input_lens"]) == len(detailed["ttfts"]) == len(detailed["itls"]) == n
    # without speculative decoding every token after the first has one ITL entry
    assert sum(len(x) for x in detailed["itls"]) == detailed["total_output_tokens"] - n
    assert sum(detailed["output_lens"]) == detailed["total_output_tokens"]
    assert read_bench_result(out, run=1)["median_ttft_ms"] == pytest.approx(detailed["median_ttft_ms"])


def test_a_short_shared_prompt_from_the_flags_is_one_prefix_block(tmp_path):
    """bench_serving's --gsp-system-prompt-len 16 with no block_tokens of the user's: the default 64-token block
    would never match it (a 0% prefix hit where SGLang reuses the prompt), so the block is the prompt; a block the
    user gives that is longer is refused."""
    from simperf.scenario.models import SharedPrefixDataset

    assert SharedPrefixDataset(kind="shared_prefix", system_prompt_len=16).block_tokens == 16
    assert SharedPrefixDataset(kind="shared_prefix", system_prompt_len=4096).block_tokens == 64
    with pytest.raises(ValueError, match=r"block_tokens \(64\) is longer than system_prompt_len \(16\)"):
        SharedPrefixDataset(kind="shared_prefix", system_prompt_len=16, block_tokens=64)


def test_dp_attention_flag_without_a_dp_size_says_sglang_turns_it_off():
    # SGLang (server_args.py, _handle_data_parallelism) turns DP attention off at dp_size 1: predicted without it, as
    # before, but the flag was dropped without a word
    flags = ["--model-path", "qwen3-30b-a3b", "--gpu", "h100", "--dataset-name", "random", "--tp-size", "2"]
    alone = scenario_from_command_line([*flags, "--enable-dp-attention"])
    assert alone.scenario.serving.dp_attention == 1
    assert any("--enable-dp-attention without a --dp-size above 1" in note for note in alone.notes)
    sized = scenario_from_command_line([*flags, "--enable-dp-attention", "--dp-size", "2"])
    assert sized.scenario.serving.dp_attention == 2
    assert not any("--enable-dp-attention" in note for note in sized.notes)
