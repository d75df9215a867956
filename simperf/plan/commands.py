"""The SGLang commands that would run a planned configuration, and the bench_serving command that checks it.

Flag names are SGLang 0.5.x's (tests/test_plan_commands.py parses every command with the flag list extracted from
SGLang 0.5.17's ServerArgs and bench_serving). Only settings the scenario fixes are written; everything else is
left to SGLang's defaults, which are the rules simperf applied (simperf/scenario/resolve.py).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from simperf import capabilities
from simperf.models.hf_names import checkpoint_for
from simperf.models.zoo import load_arch
from simperf.scenario.flags import SGLANG_ATTENTION_BACKENDS
from simperf.scenario.models import Scenario, ServingSpec
from simperf.scenario.resolve import auto_load_balance_method, default_load_balance_method, draft_tokens

LAUNCH = ("python", "-m", "sglang.launch_server")
# `sglang.bench_serving` runs on every 0.5.x release (0.5.17 moved it to sglang.benchmark.serving and keeps this
# path with a deprecation warning)
BENCH = ("python", "-m", "sglang.bench_serving")
ROUTER = ("python", "-m", "sglang_router.launch_router")  # the separate sglang-router package
BASE_PORT = 30000
ROUTER_PORT = 8000
SCENARIO_TO_SGLANG_BACKEND = {v: k for k, v in SGLANG_ATTENTION_BACKENDS.items()}
# serving field -> launch_server flag, for fields that map one to one (the rest are written below)
PLAIN_FIELDS = (
    ("page_size", "--page-size"),
    ("chunked_prefill_size", "--chunked-prefill-size"),
    ("max_running_requests", "--max-running-requests"),
    ("max_total_tokens", "--max-total-tokens"),
    ("mem_fraction_static", "--mem-fraction-static"),
    ("cuda_graph_max_bs", "--cuda-graph-max-bs"),
)
SWITCHES = (
    ("disable_cuda_graph", "--disable-cuda-graph"),
    ("disable_overlap_schedule", "--disable-overlap-schedule"),
    ("enable_mixed_chunk", "--enable-mixed-chunk"),
    ("disable_radix_cache", "--disable-radix-cache"),
)


@dataclass(frozen=True)
class Command:
    comment: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()

    def shell(self) -> str:
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env)
        return (prefix + " " if prefix else "") + shlex.join(self.argv)


def _backend_flags(s: ServingSpec, family: str) -> list[str]:
    prefill = s.prefill_attention_backend or s.attention_backend
    decode = s.decode_attention_backend or s.attention_backend
    if capabilities.family(family).attention == "dsa" and (prefill or decode):
        # DSA models run SGLang's nsa backend; the kernel per phase is --nsa-{prefill,decode}-backend
        out = ["--attention-backend", "nsa"]
        out += ["--nsa-prefill-backend", prefill] if prefill else []
        out += ["--nsa-decode-backend", decode] if decode else []
        return out
    out = []
    if s.attention_backend is not None:
        out += [
            "--attention-backend",
            SCENARIO_TO_SGLANG_BACKEND.get(s.attention_backend, s.attention_backend),
        ]
    for role, name in (("prefill", s.prefill_attention_backend), ("decode", s.decode_attention_backend)):
        if name is not None:
            out += [f"--{role}-attention-backend", SCENARIO_TO_SGLANG_BACKEND.get(name, name)]
    return out


def _speculative_flags(s: ServingSpec, family: str) -> list[str]:
    sp = s.speculative
    if sp is None:
        return []
    # DeepSeek MTP runs as EAGLE on the checkpoint's nextn layer (SGLang converts NEXTN to EAGLE)
    algorithm = {"mtp": "EAGLE", "eagle": "EAGLE", "eagle3": "EAGLE3"}[sp.algorithm]
    out = ["--speculative-algorithm", algorithm, "--speculative-num-steps", str(sp.num_steps)]
    out += ["--speculative-eagle-topk", str(sp.eagle_topk)]
    return out + ["--speculative-num-draft-tokens", str(draft_tokens(sp))]


def server_flags(scenario: Scenario, s: ServingSpec, role: str | None = None) -> list[str]:
    """launch_server flags for one server of the scenario (the model, its layout and the fields it sets); role: its
    --disaggregation-mode (prefill or decode), None for a server of its own."""
    arch = load_arch(scenario.model.name, scenario.model.config)
    weight_dtype = scenario.model.weight_dtype or arch.default_weight_dtype
    checkpoint = checkpoint_for(scenario.model.name, weight_dtype)
    out = ["--model-path", str(scenario.model.config.parent) if scenario.model.config else checkpoint.repo]
    out += ["--quantization", checkpoint.quantization] if checkpoint.quantization else []
    out += ["--trust-remote-code"] if arch.caps.trust_remote_code else []
    out += ["--tp-size", str(s.tp)]
    if s.dp_attention > 1:
        out += ["--dp-size", str(s.dp_attention), "--enable-dp-attention"]
    if s.ep > 1:
        out += ["--ep-size", str(s.ep)]
    out += _backend_flags(s, arch.family)
    if s.kv_cache_dtype != "auto":
        out += ["--kv-cache-dtype", s.kv_cache_dtype]
    for name, flag in PLAIN_FIELDS:
        value = getattr(s, name)
        if value is not None:
            out += [flag, str(value)]
    if s.max_prefill_tokens != ServingSpec.model_fields["max_prefill_tokens"].default:
        out += ["--max-prefill-tokens", str(s.max_prefill_tokens)]
    out += [flag for name, flag in SWITCHES if getattr(s, name)]
    if s.schedule_policy != "fcfs":
        out += ["--schedule-policy", s.schedule_policy]
    # SGLang's default ("auto") is round_robin but on a PD prefill server, which follows the bootstrap room
    # (0.5.17 server_args.py, _handle_load_balance_method): a method that differs from it is passed
    balance = default_load_balance_method(s, role)
    if s.dp_attention > 1 and balance != auto_load_balance_method(role):
        out += ["--load-balance-method", balance]
    return out + _speculative_flags(s, arch.family)


def _gpu_groups(gpus_per_server: int, servers: int, node_gpus: int = 8) -> list[str | None]:
    """CUDA_VISIBLE_DEVICES per server when several share a node (None: the server has a node to itself)."""
    if gpus_per_server >= node_gpus:
        return [None] * servers
    per_node = node_gpus // gpus_per_server
    groups = []
    for i in range(servers):
        first = (i % per_node) * gpus_per_server
        groups.append(",".join(str(first + k) for k in range(gpus_per_server)))
    return groups


def launch_commands(scenario: Scenario, replicas: int) -> list[Command]:
    """One launch_server per server (ports from 30000), and the router in front when there is more than one."""
    commands: list[Command] = []
    if scenario.disaggregation is None:
        groups = _gpu_groups(scenario.serving.tp, replicas)
        for i in range(replicas):
            env = (("CUDA_VISIBLE_DEVICES", groups[i]),) if groups[i] else ()
            where = f"node {i * scenario.serving.tp // 8}" if groups[i] else f"node {i}"
            argv = (
                *LAUNCH,
                *server_flags(scenario, scenario.serving),
                "--host",
                "0.0.0.0",
                "--port",
                str(BASE_PORT + i),
            )
            commands.append(Command(f"replica {i + 1} of {replicas} ({where})", argv, env))
        if replicas > 1:
            urls = [f"http://127.0.0.1:{BASE_PORT + i}" for i in range(replicas)]
            commands.append(
                Command(
                    "router: spreads requests over the replicas (replace 127.0.0.1 with each replica's host)",
                    (*ROUTER, "--worker-urls", *urls, "--port", str(ROUTER_PORT)),
                )  # fmt: skip
            )
        return commands
    d = scenario.disaggregation
    prefill_urls, decode_urls = [], []
    for i in range(replicas):
        for role, spec, port in (
            ("prefill", d.prefill, BASE_PORT + 2 * i),
            ("decode", d.decode, BASE_PORT + 2 * i + 1),
        ):
            argv = (*LAUNCH, *server_flags(scenario, spec, role), "--disaggregation-mode", role, "--host", "0.0.0.0",
                    "--port", str(port))  # fmt: skip
            commands.append(Command(f"pair {i + 1} of {replicas}: {role} server (its own node)", argv))
            (prefill_urls if role == "prefill" else decode_urls).append(f"http://127.0.0.1:{port}")
    argv = (*ROUTER, "--pd-disaggregation")
    for url in prefill_urls:
        argv += ("--prefill", url)
    for url in decode_urls:
        argv += ("--decode", url)
    commands.append(
        Command(
            "router: sends each request to a prefill and a decode server (replace 127.0.0.1 with their hosts)",
            (*argv, "--port", str(ROUTER_PORT)),
        )  # fmt: skip
    )
    return commands


def bench_argv(
    scenario: Scenario, port: int, rate: float | str, num_prompts: int, output_file: str
) -> tuple[str, ...]:
    w = scenario.workload
    d = w.dataset
    argv: list[Any] = [
        *BENCH,
        "--backend",
        "sglang",
        "--host",
        "127.0.0.1",
        "--port",
        port,
        "--dataset-name",
        "random",
    ]
    argv += ["--random-input-len", d.input_len, "--random-output-len", d.output_len]
    argv += ["--random-range-ratio", getattr(d, "range_ratio", 1.0), "--num-prompts", num_prompts]
    argv += ["--request-rate", rate]
    if w.max_concurrency is not None:
        argv += ["--max-concurrency", w.max_concurrency]
    argv += ["--seed", w.seed, "--output-file", output_file, "--output-details"]
    return tuple(str(a) for a in argv)


def bench_commands(scenario: Scenario, replicas: int, total_rate: float | None) -> list[Command]:
    """bench_serving against the whole deployment at the target rate, and against one replica at its share (the
    run the saved scenario predicts: `simperf compare prediction.json one-replica.jsonl`)."""
    w = scenario.workload
    share = w.request_rate
    front = ROUTER_PORT if replicas > 1 or scenario.disaggregation is not None else BASE_PORT
    one = BASE_PORT if scenario.disaggregation is None else ROUTER_PORT
    out = [
        Command(
            "one replica at its planned load: compare with the prediction (simperf compare prediction.json "
            "one-replica.jsonl)",
            bench_argv(scenario, one, share, w.num_prompts, "one-replica.jsonl"),
        )
    ]
    if replicas > 1:
        rate = total_rate if total_rate is not None else "inf"
        prompts = w.num_prompts * replicas
        if w.max_concurrency is not None:
            scenario = scenario.model_copy(
                update={"workload": w.model_copy(update={"max_concurrency": w.max_concurrency * replicas})}
            )
        out.append(Command(f"the whole deployment ({replicas} replicas) at the target load",
                           bench_argv(scenario, front, rate, prompts, "deployment.jsonl")))  # fmt: skip
    return out
