"""A scenario with every SGLang default rule applied: what the server would actually run.

`resolve(scenario)` (in simperf.scenario.resolve) turns user input into this; the cost model and the simulator read
only this, so SGLang's defaulting rules live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from simperf.layout import ParallelLayout
from simperf.sglang_defaults import CLIP_MAX_NEW_TOKENS, DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD

__all__ = ["CLIP_MAX_NEW_TOKENS", "ParallelLayout", "ResolvedServing", "SpecSettings"]


@dataclass(frozen=True)
class SpecSettings:
    algorithm: str
    num_steps: int
    eagle_topk: int
    num_draft_tokens: int
    accept_length_mean: float | None
    accept_length_min: float | None = None
    accept_length_max: float | None = None


@dataclass(frozen=True)
class ResolvedServing:
    layout: ParallelLayout
    gpu: str  # hardware catalogue key
    weight_dtype: str  # bf16 | fp8
    kv_dtype: str  # bf16 | fp8_e4m3
    page_size: int
    prefill_backend: str  # scenario-level names: fa3 | flashinfer | flashmla | flashmla_sparse | ...
    decode_backend: str
    chunked_prefill_size: int  # per DP rank; -1 = disabled
    max_prefill_tokens: int
    max_running_requests: int  # per DP rank
    max_total_tokens: int  # KV pool tokens per DP rank
    cuda_graph_max_bs: int  # 0 when graphs are disabled
    cuda_graph_bs: tuple[int, ...]  # decode graph buckets, ascending
    overlap_schedule: bool
    enable_mixed_chunk: bool
    schedule_policy: str
    init_new_token_ratio: float
    min_new_token_ratio: float
    new_token_ratio_decay: float
    context_len: int
    speculative: SpecSettings | None
    sglang_version: str
    disable_radix_cache: bool = False
    enable_metrics: bool = False  # --enable-metrics: the API server pays Overheads.metrics_us_per_chunk too
    # --incremental-streaming-output: chunks carry only new tokens (no Overheads.frontend_us_per_streamed_token)
    incremental_streaming_output: bool = False
    # --stream-interval: a request's chunks go after its first token, every this many tokens, and at its end
    stream_interval: int = 1
    # SGLang captures extends in its breakable prefill CUDA graph (False: every extend is eager; the reason is in
    # notes; sglang_defaults.prefill_cuda_graph_off_reason)
    prefill_cuda_graph: bool = True
    dsa_dense_prefill_threshold: int = DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD
    # how the DP controller spreads requests over DP attention ranks: round_robin, total_requests, or
    # follow_bootstrap_room (a PD prefill server's default: each request's random bootstrap room modulo the ranks)
    load_balance_method: str = "round_robin"
    # how each number was obtained, for the report ("default rule", "user", "server log")
    notes: tuple[str, ...] = ()
