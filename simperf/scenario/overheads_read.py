"""Which named overheads a scenario's servers read, and the refusal of an override none of them reads.

Each Overheads field prices one thing (docs/costmodel.md "Named overheads"): an extend's host time per kernel is
read from one of four fields, chosen by the server (SGLang's prefill CUDA graph or eager, the fa3 backend or
another) and the model (dense, or MoE / MLA); the MoE router's time is read only for a model with routed experts;
the metrics and streamed-token costs only with their server flags; the decode replay costs only where decode runs
in CUDA graphs. An override of a field no server of the scenario reads was accepted and changed nothing
(overheads.extend_launch_us_per_kernel: 500 on a Qwen3-8B fa3 server predicted the default TTFT), so it is
refused with the reason. Fields every server reads (the scheduler's, the API server's, the client's) have no rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from simperf.models.arch import ModelArch
from simperf.scenario.models import EAGER_RANKS_MEASURED, EAGER_RANKS_SERVED, Scenario, eager_rank_field
from simperf.scenario.resolved import ResolvedServing

Server = tuple[ResolvedServing, ModelArch]


@dataclass(frozen=True)
class Reader:
    reads: Callable[[ResolvedServing, ModelArch], bool]
    when: str  # where the field is read, for the error
    fact: Callable[[ResolvedServing, ModelArch], str]  # what this server is instead


def _dense(arch: ModelArch) -> bool:
    return not (arch.is_moe or arch.is_mla)


def _eager_forward(serving: ResolvedServing) -> bool:
    """An eager forward's host time is read by extends without a prefill graph, and by decode steps outside CUDA
    graphs unless eager_launch_us_per_kernel overrides it there (Overheads.eager_decode_us)."""
    return not serving.prefill_cuda_graph or _eager_decode(serving)


def _eager(serving: ResolvedServing, arch: ModelArch, dense: bool) -> bool:
    return _eager_forward(serving) and _dense(arch) == dense


def _rank_factor(field: str) -> Callable[[ResolvedServing, ModelArch], bool]:
    """Whether an eager forward reads `field`, the rank factor eager_rank_field picks at its ranks."""
    return lambda s, a: _eager_forward(s) and eager_rank_field(_dense(a), s.layout.tp) == field


def _eager_decode(serving: ResolvedServing) -> bool:
    graphs = serving.cuda_graph_bs
    return not graphs or serving.max_running_requests > graphs[-1]


def _extends(s: ResolvedServing, a: ModelArch) -> str:
    graph = "in its prefill CUDA graph" if s.prefill_cuda_graph else "without a prefill CUDA graph"
    return f"{a.name} ({a.family} family) at tp {s.layout.tp} runs its extends {graph} on {s.prefill_backend}"


def _decode_graphs(s: ResolvedServing, a: ModelArch) -> str:
    if not s.cuda_graph_bs:
        return "decode runs without CUDA graphs"
    return f"every decode batch (at most {s.max_running_requests} requests) fits the CUDA graphs (to {s.cuda_graph_bs[-1]})"


READERS: dict[str, Reader] = {
    "extend_launch_us_per_kernel": Reader(
        lambda s, a: s.prefill_cuda_graph and s.prefill_backend != "fa3",
        "read for extends SGLang runs in its prefill CUDA graph on an attention backend other than fa3",
        _extends,
    ),
    "extend_launch_us_per_kernel_fa3": Reader(
        lambda s, a: s.prefill_cuda_graph and s.prefill_backend == "fa3",
        "read for extends SGLang runs in its prefill CUDA graph on the fa3 attention backend",
        _extends,
    ),
    "eager_extend_us_per_kernel": Reader(
        lambda s, a: _eager(s, a, dense=False),
        "read for eager forwards (extends without a prefill CUDA graph, decode steps outside CUDA graphs) of an "
        "MoE or MLA model",
        _extends,
    ),
    "eager_extend_us_per_kernel_dense": Reader(
        lambda s, a: _eager(s, a, dense=True),
        "read for eager forwards (extends without a prefill CUDA graph, decode steps outside CUDA graphs) of a "
        "dense model",
        _extends,
    ),
    "eager_extend_rank_factor": Reader(
        _rank_factor("eager_extend_rank_factor"),
        f"read for eager forwards of an MoE or MLA model at tp {EAGER_RANKS_MEASURED} or more",
        _extends,
    ),
    "eager_extend_rank_factor_tp2": Reader(
        _rank_factor("eager_extend_rank_factor_tp2"),
        f"read for eager forwards of an MoE or MLA model at tp {EAGER_RANKS_SERVED} to {EAGER_RANKS_MEASURED - 1}",
        _extends,
    ),
    "eager_extend_rank_factor_dense": Reader(
        _rank_factor("eager_extend_rank_factor_dense"),
        f"read for eager forwards of a dense model at tp {EAGER_RANKS_MEASURED} or more",
        _extends,
    ),
    "decode_moe_router_us": Reader(
        lambda s, a: a.is_moe,
        "read for a model with routed experts (MoE)",
        lambda s, a: f"{a.name} has none",
    ),
    "metrics_us_per_chunk": Reader(
        lambda s, a: s.enable_metrics,
        "read where the server runs --enable-metrics",
        lambda s, a: "serving.enable_metrics is off",
    ),
    "frontend_us_per_streamed_token": Reader(
        lambda s, a: not s.incremental_streaming_output,
        "read where the server streams cumulatively",
        lambda s, a: "serving.incremental_streaming_output is on",
    ),
    "decode_between_replays_us": Reader(
        lambda s, a: bool(s.cuda_graph_bs), "read for decode steps replayed from CUDA graphs", _decode_graphs
    ),
    "decode_graph_gap_us_per_kernel": Reader(
        lambda s, a: bool(s.cuda_graph_bs), "read for decode steps replayed from CUDA graphs", _decode_graphs
    ),
    "eager_launch_us_per_kernel": Reader(
        lambda s, a: _eager_decode(s),
        "read for decode steps outside CUDA graphs (graphs disabled, or a batch above the largest graph)",
        _decode_graphs,
    ),
    "cuda_graph_replay_us": Reader(
        lambda s, a: False,
        "read by no prediction: an extend in SGLang's prefill CUDA graph is priced with "
        "extend_launch_us_per_kernel (or its _fa3 value)",
        lambda s, a: "",
    ),
}


def check_overheads_read(scenario: Scenario, servers: Sequence[Server]) -> None:
    """Refuse an overheads field the scenario gives that none of its servers reads (READERS), and
    tokenize_us_per_prompt_token where the client sends token ids."""
    given = scenario.overheads.model_fields_set
    if "tokenize_us_per_prompt_token" in given and scenario.workload.tokenize_prompt:
        raise ValueError(
            "overheads.tokenize_us_per_prompt_token: not read: the client sends token ids "
            "(workload.tokenize_prompt: true), which SGLang's API server does not tokenise; drop it"
        )
    for name in sorted(given & READERS.keys()):
        reader = READERS[name]
        if any(reader.reads(serving, arch) for serving, arch in servers):
            continue
        facts = [f for f in dict.fromkeys(reader.fact(serving, arch) for serving, arch in servers) if f]
        here = f" (here {'; '.join(facts)})" if facts else ""
        raise ValueError(f"overheads.{name}: not read by this scenario: {reader.when}{here}; drop it")
