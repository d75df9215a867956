"""Launch and bench commands a plan writes parse with SGLang's own flags (extracted from SGLang 0.5.17's source
into tests/fixtures/sglang; CI has no SGLang)."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

import pytest

from simperf.plan.commands import BENCH, LAUNCH, ROUTER, bench_commands, launch_commands
from simperf.scenario.load import parse_scenario

FLAGS = json.loads((Path(__file__).parent / "fixtures" / "sglang" / "flags-0.5.17.json").read_text())


def sglang_parser(origin: str) -> argparse.ArgumentParser:
    """argparse as SGLang builds it, from the vendored flag list: arity and choices, no abbreviations."""
    parser = argparse.ArgumentParser(prog=origin, allow_abbrev=False, exit_on_error=False)
    for name, spec in FLAGS[origin].items():
        if spec["value"]:
            parser.add_argument(name, dest=name, choices=spec["choices"])
        else:
            parser.add_argument(name, dest=name, action="store_true")
    return parser


LAUNCH_PARSER = sglang_parser("launch_server")
BENCH_PARSER = sglang_parser("bench_serving")


def check_accepted(command_line: str) -> dict:
    """Parse one shell line as SGLang would; fail on any flag or value SGLang would refuse."""
    argv = shlex.split(command_line)
    argv = [a for a in argv if "=" not in a or a.startswith("--")]  # drop leading VAR=value
    if tuple(argv[:3]) == LAUNCH:
        parser = LAUNCH_PARSER
    elif tuple(argv[:3]) == BENCH:
        parser = BENCH_PARSER
    else:
        assert tuple(argv[:3]) == ROUTER, argv
        return {}
    try:
        ns, unknown = parser.parse_known_args(argv[3:])
    except argparse.ArgumentError as e:
        raise AssertionError(f"SGLang would refuse {command_line!r}: {e}") from None
    assert not unknown, f"not SGLang {FLAGS['sglang_version']} flags: {unknown}"
    return {k: v for k, v in vars(ns).items() if v not in (None, False)}


def scenario(
    serving=None, disaggregation=None, model="deepseek-r1", gpu="h200", count=8, dtype=None, **workload
):
    data = {
        "name": "t",
        "model": {"name": model, **({"weight_dtype": dtype} if dtype else {})},
        "hardware": {"gpu": gpu, "count": count},
        "workload": {"dataset": {"kind": "random", "input_len": 1024, "output_len": 256, "range_ratio": 1.0},
                     "num_prompts": 100, "request_rate": 2.5, **workload},
    }  # fmt: skip
    if serving is not None:
        data["serving"] = serving
    if disaggregation is not None:
        data["disaggregation"] = disaggregation
    return parse_scenario(data)


CASES = {
    "r1 dp-attention ep mtp flashmla": (
        scenario({"tp": 8, "dp_attention": 8, "ep": 8, "attention_backend": "flashmla",
                  "speculative": {"algorithm": "mtp", "num_steps": 3, "accept_length": {"mean": 2.4}}}),
        1,
    ),
    "v3.2 dsa kernels fp8 kv": (
        scenario({"tp": 8, "prefill_attention_backend": "flashmla_sparse", "decode_attention_backend": "flashmla_kv",
                  "kv_cache_dtype": "fp8_e4m3", "page_size": 64}, model="deepseek-v3.2"),
        1,
    ),
    "qwen3 fp8 tp2 x4 on one node": (
        scenario({"tp": 2, "attention_backend": "flashinfer", "chunked_prefill_size": 4096, "disable_radix_cache": True,
                  "max_running_requests": 128}, model="qwen3-8b", gpu="h100", count=2, dtype="fp8"),
        4,
    ),
    "llama bf16 online fp8": (scenario({"tp": 1}, model="llama-3.1-8b", gpu="h100", count=1, dtype="fp8"), 2),
    "r1 1p1d pairs": (
        scenario(disaggregation={"prefill": {"tp": 8}, "decode": {"tp": 8, "dp_attention": 8, "ep": 8}}, count=16),
        2,
    ),
    "concurrency-driven": (scenario({"tp": 8}, max_concurrency=32, request_rate="inf"), 2),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_every_written_command_parses_with_sglangs_flags(name):
    sc, replicas = CASES[name]
    commands = launch_commands(sc, replicas) + bench_commands(sc, replicas, 10.0)
    for c in commands:
        check_accepted(c.shell())


def test_launch_flags_carry_the_scenarios_settings():
    sc, _ = CASES["r1 dp-attention ep mtp flashmla"]
    args = check_accepted(launch_commands(sc, 1)[0].shell())
    assert args["--model-path"] == "deepseek-ai/DeepSeek-R1" and args["--tp-size"] == "8"
    assert args["--dp-size"] == "8" and args["--enable-dp-attention"] and args["--ep-size"] == "8"
    assert args["--attention-backend"] == "flashmla" and args["--speculative-algorithm"] == "EAGLE"
    assert args["--speculative-num-draft-tokens"] == "4"  # num_steps + 1 for a top-1 chain

    dsa = check_accepted(launch_commands(CASES["v3.2 dsa kernels fp8 kv"][0], 1)[0].shell())
    assert dsa["--attention-backend"] == "nsa" and dsa["--nsa-decode-backend"] == "flashmla_kv"
    assert dsa["--kv-cache-dtype"] == "fp8_e4m3" and dsa["--page-size"] == "64"

    qwen = check_accepted(launch_commands(CASES["qwen3 fp8 tp2 x4 on one node"][0], 4)[0].shell())
    assert qwen["--model-path"] == "Qwen/Qwen3-8B-FP8" and "--quantization" not in qwen
    assert qwen["--disable-radix-cache"] and qwen["--chunked-prefill-size"] == "4096"
    llama = check_accepted(launch_commands(CASES["llama bf16 online fp8"][0], 2)[0].shell())
    assert llama["--quantization"] == "fp8"  # no fp8 checkpoint known: SGLang quantises online


def test_replicas_share_a_node_with_disjoint_gpus_and_sit_behind_a_router():
    sc, replicas = CASES["qwen3 fp8 tp2 x4 on one node"]
    commands = launch_commands(sc, replicas)
    devices = [dict(c.env)["CUDA_VISIBLE_DEVICES"] for c in commands[:replicas]]
    assert devices == ["0,1", "2,3", "4,5", "6,7"]
    ports = [check_accepted(c.shell())["--port"] for c in commands[:replicas]]
    assert len(set(ports)) == replicas
    router = shlex.split(commands[-1].shell())
    assert tuple(router[:3]) == ROUTER and all(f"http://127.0.0.1:{p}" in router for p in ports)


def test_disaggregated_pairs_get_a_prefill_and_a_decode_server_each():
    sc, replicas = CASES["r1 1p1d pairs"]
    modes = [check_accepted(c.shell()).get("--disaggregation-mode") for c in launch_commands(sc, replicas)]
    assert modes == ["prefill", "decode", "prefill", "decode", None]  # the last one is the router


def test_bench_commands_replay_the_predicted_workload():
    sc, replicas = CASES["qwen3 fp8 tp2 x4 on one node"]
    one, whole = (check_accepted(c.shell()) for c in bench_commands(sc, replicas, 10.0))
    assert one["--request-rate"] == "2.5" and one["--num-prompts"] == "100"
    assert one["--random-input-len"] == "1024" and one["--random-range-ratio"] == "1.0"
    assert whole["--request-rate"] == "10.0" and whole["--num-prompts"] == "400"
    capped = [check_accepted(c.shell()) for c in bench_commands(CASES["concurrency-driven"][0], 2, None)]
    assert capped[0]["--max-concurrency"] == "32" and capped[1]["--max-concurrency"] == "64"
