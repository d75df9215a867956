"""The ops of one forward step on one rank: names, calibration-table keys, axes and per-step multiplicity.

Follows the docs/serving-model.md §4 (DeepSeek per-layer table §4.1, MLA/MHA selection §4.2, V3.2 additions §4.3)
and the usual Llama/Qwen layer for dense models. Ops that are the same in every layer of a kind appear once,
with `count` = number of such layers, so a step is a few dozen OpCalls, not layers × ops.

A step splits into two parts that the cost model caches differently:
* row ops: their shapes depend only on how many token rows the step carries (GEMMs, norms, MoE, collectives,
  lm_head) -> cached per padded decode batch / per extend token count;
* attention ops: their axes depend on the requests' lengths (attention kernels, the NSA indexer, and the MHA
  path's kv_b_proj over all KV tokens) -> evaluated per call, vectorised over decode steps.

An extend batch of requests with different lengths is costed as a work-equivalent batch without a made-up prefix
(`extend_group`): as many new tokens and as many causal query-key pairs, with the token-weighted query length and
cached prefix, and a fractional request count (docs/costmodel.md). A decode batch is costed at its mean KV length.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from simperf.capabilities import dsa_padded_heads, gqa_decode_tables, mha_prefill_tables
from simperf.layout import ParallelLayout
from simperf.models.arch import ModelArch
from simperf.models.kernels import (
    Key,
    bmm_keys,
    collective_keys,
    elementwise_keys,
    gemm_keys,
    key_candidates,
    kv_dtype_names,
    moe_keys,
    sglang_tunes_moe,
    table_attention_backends,
)
from simperf.sglang_defaults import (
    CHUNKED_PREFIX_CACHE_THRESHOLD,
    DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD,
    MAX_KV_CHUNK_CAPACITY,
    prefill_graph_replays,
)

Method = Literal["absorb", "mha", "sparse", "gqa"]
Phase = Literal["extend", "decode"]
# how DP attention pads and moves the MLP's rows (SGLang's DpPaddingMode): see dp_gathers
DpPadding = Literal["sum_len", "max_len"]
# How well a key is covered: 2 a table of the target GPU, 1 a table scaled from another GPU, 0 none (a bool
# works too: True counts as a table of the target GPU).
HasTable = Callable[[str, dict[str, Any]], int]

# DeepSeek's q_a_proj and kv_a_proj_with_mqa run as one fused GEMM (fused_qkv_a_proj_with_mqa) from SGLang v0.4.6
# on (sgl-project/sglang#5619, merged 2025-04-22; deepseek_v2.py in 0.5.17 still builds it when q_lora_rank is
# set); up to v0.4.5 they were two GEMMs.
LAST_UNFUSED_QKV_A_VERSION = (0, 4, 5)
# The DeepGEMM block-fp8 GEMM table (calibration/<gpu>/gemm.parquet, backend deep_gemm) times sgl-deep-gemm
# 0.1.5.post1, SGLang 0.5.17's pin. Earlier releases ran the DeepGEMM bundled in sgl-kernel (2025) before SGLang
# moved to the sgl-deep-gemm package in 2026 (sgl-project/sglang#26993 bumps it 0.1.0 -> 0.1.2, 2026-06-02):
# a different build, not measured here. Evidence that it does not transfer: the published Qwen3-8B-FP8 decodes
# on SGLang 0.5.3.post3 (gpustack, H100, rows D006/D010) are 13% slower than this table makes them, while their
# bf16 twin (D002) and our own SGLang 0.5.17 fp8 runs (groundtruth/experiments/fp8-h100) agree within 4%. Releases
# up to this one are priced from the cuBLASLt proxies on Hopper, as before the table (docs/perfdb.md).
LAST_VERSION_BEFORE_DEEP_GEMM_TABLE = (0, 5, 16)

# Kernels SGLang launches that no calibration table times (small per-token kernels); counted for the eager
# launch overhead only. Per layer: KV-cache store; MoE layers: grouped top-k; NSA layers: indexer k store +
# Hadamard/quant + top-k transform. Per step: embedding lookup, sampling (argmax + copy).
UNCOSTED_KERNELS_PER_LAYER = 1
UNCOSTED_KERNELS_PER_MOE_LAYER = 1
UNCOSTED_KERNELS_PER_NSA_LAYER = 3
UNCOSTED_KERNELS_PER_STEP = 3
# A routed-expert layer is several kernels (align/sort, gate_up grouped GEMM, activation, down GEMM, combine).
MOE_KERNELS_PER_CALL = 5


@dataclass(frozen=True)
class StepSettings:
    """What of the resolved server settings the op lists depend on."""

    layout: ParallelLayout
    weight_dtype: str  # bf16 | fp8
    kv_dtype: str  # bf16 | fp8_e4m3
    page_size: int
    prefill_backend: str  # scenario-level names (fa3, flashinfer, flashmla, ...)
    decode_backend: str
    sm_major: int = 9
    # SGLang's name of the GPU (sglang_defaults.SGLANG_DEVICE_NAMES): which tuned MoE configs it finds; "" unknown
    sglang_device_name: str = ""
    sglang_version: str = "0.5.23"
    # Extends of at most this many tokens replay a prefill (breakable) CUDA graph, which pins DeepSeek to the
    # absorbed MLA path (§4.2). 0: never captured (ResolvedServing has no such field yet).
    prefill_graph_max_tokens: int = 0
    dsa_dense_threshold: int = DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD
    # A DSA model's extends that SGLang runs under its breakable prefill CUDA graph, captured up to this many tokens
    # (sglang_defaults.prefill_graph_replays), take the sparse path whatever their length (select_nsa_method).
    # Apart from prefill_graph_max_tokens: the breakable graph's host time is priced per kernel
    # (Overheads.extend_launch_us), not as a replay. 0: no such graph (eager extends, or another model).
    dsa_sparse_graph_max_tokens: int = 0


@dataclass(frozen=True)
class OpCall:
    """One op of the step: `count` identical calls (e.g. one per MoE layer) with these axes."""

    name: str  # what it is in the model, e.g. "q_b_proj"
    op: str  # schema op, e.g. "gemm"
    candidates: tuple[Key, ...]  # table keys in preference order; kernels.choose_key picks the one used
    axes: Mapping[str, Any]  # axis values (scalars, or arrays over decode steps)
    count: int
    kernels: int = 1  # CUDA kernels per call, for the eager launch overhead
    # a ragged extend batch's longest request alone: the call lasts at least as long as at these axes (its CTAs
    # are the kernel's critical path, however the rest of the batch packs around them); None: no such bound
    floor_axes: Mapping[str, Any] | None = None
    # a ragged extend batch's own requests as (new tokens, KV lengths), for a key whose planner is modelled
    # (perfdb/prefillplan.py prices it from the busiest CTA instead of the work-equivalent batch); None: uniform
    requests: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    # a speculative verify or draft extend priced from the decode tables as (kind, q_len): SGLang's flashinfer
    # backend runs it as one paged prefill kernel over the decode's KV (perfdb/spec_verify.py); None: anything else
    spec_path: tuple[str, int] | None = None

    @property
    def key(self) -> dict[str, Any]:
        """The preferred key (what runs in SGLang, or its named proxy)."""
        return dict(self.candidates[0])


@dataclass(frozen=True)
class AttentionGroup:
    """Requests costed together as one uniform batch with the same attention work."""

    batch: float  # requests (fractional for a ragged extend batch: its work-equivalent request count)
    q_len: float  # new tokens per request (token-weighted mean for a ragged extend batch)
    kv_len: Any  # KV length per request, incl. new tokens, such that causal q-k pairs match (float or array)
    kv_tokens: Any  # sum of KV lengths: rows the MHA path decompresses through kv_b_proj
    context_mean: Any  # mean causal context of a query token (NSA indexer work per query)
    sparse_kv_len: Any  # NSA: mean min(index_topk, context) per query token, as a kv_len axis value
    # a ragged extend batch's request with the longest KV (ties: the most new tokens), as (q_len, kv_len): its
    # last query tile streams the most keys, so the kernel takes at least that request's time alone
    straggler: tuple[float, float] | None = None
    # a ragged extend batch's requests as (new tokens, KV lengths incl. them); None for a uniform batch
    requests: tuple[tuple[int, ...], tuple[int, ...]] | None = None


@dataclass(frozen=True)
class ExtendPlan:
    method: Method
    num_tokens: int  # rows of the step on this rank (new tokens + riding decode rows)
    num_logit_rows: int  # sequences whose last token goes through lm_head
    groups: tuple[AttentionGroup, ...]
    skip_indexer_logits: bool  # NSA prefill with all sequences <= index_topk: k-only indexer


# ---- method selection -------------------------------------------------------------------------------------------
# routed-expert counts SGLang fuses a single shared expert into (0.5.17 models/deepseek_v2.py)
SHARED_FUSION_ROUTED_EXPERTS: frozenset[int] = frozenset({256})


def select_mla_method(sum_prefix: int, captured_graph: bool = False) -> Method:
    """DeepSeek V3/R1 extend on fa3/flashinfer/flashmla (§4.2): MHA when no prefix or a long one, else MLA.

    Above MAX_KV_CHUNK_CAPACITY total KV SGLang runs MHA_CHUNKED_KV; it is costed as the same MHA work.
    """
    if captured_graph:
        return "absorb"
    if sum_prefix == 0 or sum_prefix >= CHUNKED_PREFIX_CACHE_THRESHOLD:
        return "mha"
    return "absorb"


def select_nsa_method(
    max_kv_len: int,
    sum_seq_lens: int,
    kv_dtype: str,
    sm_major: int,
    sglang_version: str,
    captured_graph: bool,
    dense_threshold: int = DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD,
) -> Method:
    """DeepSeek V3.2 extend (§4.3): dense MHA one-shot for short sequences, else sparse MLA.

    SM100 runs the dense path (TRT-LLM ragged MHA) from SGLang 0.5.6 on (sglang PR 12788; 0.5.5's
    deepseek_v2.handle_attention_nsa allowed SM90 only); dense_threshold 0 turns the path off (the what-if of
    the sparse-only prefill)."""
    arch_ok = sm_major == 9 or (sm_major == 10 and not _version_le(sglang_version, (0, 5, 5)))
    dtype_ok = kv_dtype == "bf16" or (
        kv_dtype.startswith("fp8") and not _version_le(sglang_version, (0, 5, 5))
    )
    if (
        arch_ok
        and dtype_ok
        and not captured_graph
        and max_kv_len <= dense_threshold
        and sum_seq_lens <= MAX_KV_CHUNK_CAPACITY
    ):
        return "mha"
    return "sparse"


def decode_method(arch: ModelArch) -> Method:
    return arch.caps.decode_method  # type: ignore[return-value]


def _prices_with_deep_gemm(s: StepSettings) -> bool:
    """Whether a block-fp8 linear layer's DeepGEMM table applies: on Hopper only from the SGLang release whose
    DeepGEMM build simperf timed (LAST_VERSION_BEFORE_DEEP_GEMM_TABLE); on Blackwell the imported AIConfigurator
    DeepGEMM table (docs/b200.md) applies as before."""
    return s.sm_major >= 10 or not _version_le(s.sglang_version, LAST_VERSION_BEFORE_DEEP_GEMM_TABLE)


def _version_le(version: str, bound: tuple[int, ...]) -> bool:
    parts: list[int] = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts) <= bound


# ---- batch descriptions -------------------------------------------------------------------------------------------
def _sum_min_topk(prefix: np.ndarray, q: np.ndarray, topk: int) -> np.ndarray:
    """Per request: sum over its new tokens of min(topk, causal context), context = prefix+1 .. prefix+q."""
    a = prefix + 1.0
    b = prefix + q
    below = (a + b) * q / 2.0
    above = topk * q
    split = (a + topk) * (topk - a + 1.0) / 2.0 + topk * (b - topk)
    return np.where(b <= topk, below, np.where(a > topk, above, split))


def extend_group(extend: np.ndarray, prefix: np.ndarray, topk: int) -> AttentionGroup:
    """The work-equivalent batch of requests with new tokens q_i over cached prefixes p_i: query length
    q' = Σq²/Σq (token-weighted), prefix p' = Σq·p/Σq (token-weighted), B' = Σq/q' requests. It has exactly the
    batch's new tokens (B'·q' = Σq) and causal query-key pairs (B'·(q'·p' + q'(q'+1)/2) = Σ q·p + q(q+1)/2), and
    a fresh batch keeps prefix 0 (the uniform batch at the mean query length that this replaces needed a made-up
    prefix to match the pairs, and priced a ragged fresh prefill 50-60% high through the prefix axis).
    A uniform batch is itself: B' = n, q' = q, p' = p. A ragged one also names its straggler (the request with
    the longest KV): the equivalent batch spreads the work evenly, the kernel does not (docs/costmodel.md)."""
    q = extend.astype(np.float64)
    p = prefix.astype(np.float64)
    sum_q = float(q.sum())
    q_eq = float((q * q).sum()) / sum_q
    prefix_eq = float((q * p).sum()) / sum_q
    # causal query-key pairs sum_j context_j, context_j = p + j for j = 1..q
    pairs = float((q * p + q * (q + 1.0) / 2.0).sum())
    context_mean = pairs / sum_q
    sparse = float(_sum_min_topk(p, q, topk).sum()) / sum_q if topk else context_mean
    sparse_kv = sparse if topk and sparse < topk - 1e-9 else context_mean
    uniform = bool((q == q[0]).all() and (p == p[0]).all())
    straggler = requests = None
    if not uniform:
        longest = int(np.lexsort((q, p + q))[-1])
        straggler = (float(q[longest]), float(q[longest] + p[longest]))
        requests = (tuple(int(x) for x in extend), tuple(int(x) for x in extend + prefix))
    return AttentionGroup(
        batch=int(q.size) if uniform else sum_q / q_eq,
        q_len=q_eq,
        kv_len=q_eq + prefix_eq,
        kv_tokens=float((p + q).sum()),
        context_mean=context_mean,
        sparse_kv_len=sparse_kv,
        straggler=straggler,
        requests=requests,
    )


def decode_group(bs: int, kv_len: Any) -> AttentionGroup:
    """`bs` requests decoding one token each over `kv_len` KV tokens (incl. the new one; scalar or per step)."""
    kv = np.asarray(kv_len, dtype=np.float64)
    return AttentionGroup(
        batch=bs, q_len=1.0, kv_len=kv, kv_tokens=kv * bs, context_mean=kv, sparse_kv_len=kv
    )


def plan_extend(
    arch: ModelArch,
    s: StepSettings,
    extend_lens: np.ndarray,
    prefix_lens: np.ndarray,
    decode_kv_lens: np.ndarray | None = None,
) -> ExtendPlan:
    extend_lens = np.asarray(extend_lens, dtype=np.int64)
    prefix_lens = np.asarray(prefix_lens, dtype=np.int64)
    if extend_lens.shape != prefix_lens.shape or extend_lens.size == 0:
        raise ValueError("extend_lens and prefix_lens must be non-empty and of equal length")
    if (extend_lens < 1).any() or (prefix_lens < 0).any():
        raise ValueError("extend lengths must be >= 1 and prefix lengths >= 0")
    dec = np.asarray(decode_kv_lens if decode_kv_lens is not None else [], dtype=np.int64)
    num_tokens = int(extend_lens.sum()) + int(dec.size)
    seq_lens = np.concatenate([extend_lens + prefix_lens, dec])
    # Mixed batches count as extend for method selection: decode rows' prefixes enter sum_prefix (§1.6).
    sum_prefix = int(prefix_lens.sum()) + int(np.maximum(dec - 1, 0).sum())
    captured = 0 < num_tokens <= s.prefill_graph_max_tokens
    topk = arch.index_topk
    method: Method
    graph = captured
    if arch.attention == "mla":
        method = select_mla_method(sum_prefix, captured)
    elif arch.attention == "dsa":
        # SGLang 0.5.17 layers/attention/dsa_backend.py, DeepseekSparseAttnBackend.set_dsa_prefill_impl: inside a
        # breakable (or tc_piecewise) prefill CUDA graph `use_mha = False` ("Can't branch on seq_lens_cpu in graph
        # replay"), so such an extend runs the sparse MLA path, however short; models/deepseek_common/
        # attention_backend_handler.py, handle_attention_dsa, reads that choice
        graph = captured or prefill_graph_replays(num_tokens, s.dsa_sparse_graph_max_tokens)
        method = select_nsa_method(
            int(seq_lens.max()),
            int(seq_lens.sum()),
            s.kv_dtype,
            s.sm_major,
            s.sglang_version,
            graph,
            s.dsa_dense_threshold,
        )
    else:
        method = "gqa"
    groups = [extend_group(extend_lens, prefix_lens, topk)]
    if dec.size:
        groups.append(extend_group(np.ones_like(dec), np.maximum(dec - 1, 0), topk))
    return ExtendPlan(
        method=method,
        num_tokens=num_tokens,
        num_logit_rows=int(extend_lens.size + dec.size),
        groups=tuple(groups),
        # dsa/dsa_indexer.py (0.5.17), the indexer's forward: the k-only fast path for sequences within index_topk
        # runs only outside a prefill CUDA graph ("We can only skip the logits computation if cuda graph is not
        # involved"); in the graph the logits and top-k run at any length
        skip_indexer_logits=bool(topk and int(seq_lens.max()) <= topk and not graph),
    )


# ---- the op lists -----------------------------------------------------------------------------------------------
def row_ops(
    arch: ModelArch,
    s: StepSettings,
    num_tokens: int,
    num_logit_rows: int,
    method: Method,
    has: HasTable | None = None,
    gathered_rows: int | None = None,
    gathered_logit_rows: int | None = None,
    part: Literal["all", "local", "gathered"] = "all",
    dp_padding: DpPadding = "sum_len",
) -> list[OpCall]:
    """Ops whose shapes depend only on the step's row counts (per rank).

    DP attention (§2.5): attention-side ops run on this rank's T rows; the per-layer gathers, the MLP/MoE and the
    LM head run on the rows gathered from every DP rank, G (and R logit rows). When the caller does not know the
    other ranks' rows, every rank is assumed to carry as many as this one (G = DP·T, SGLang's MAX_LEN padding, which
    is what a decode CUDA graph replays: DP x the bucket of the largest rank). `part` selects the rank-local or
    the gathered ops, so the two can be tabulated separately. `dp_padding` is how SGLang moves the rows around the
    MLP under DP attention (dp_gathers below): "max_len" in a decode step, "sum_len" in an extend.
    """
    lay = s.layout
    T = int(num_tokens)
    G = int(gathered_rows) if gathered_rows is not None else T * lay.dp_attention
    R = (
        int(gathered_logit_rows)
        if gathered_logit_rows is not None
        else int(num_logit_rows) * lay.dp_attention
    )
    h, L = arch.hidden_size, arch.num_layers
    ops: list[OpCall] = []

    def add(
        name: str, op: str, candidates: tuple[Key, ...], count: int, kernels: int = 1, **axes: Any
    ) -> None:
        if count > 0:
            ops.append(OpCall(name, op, candidates, axes, count, kernels))

    deep_gemm = _prices_with_deep_gemm(s)

    def gemm(name: str, n: int, k: int, m: int, count: int, dtype: str | None = None) -> None:
        weight_dtype = dtype or s.weight_dtype
        if weight_dtype == "fp8":
            # SGLang quantises an fp8 linear's bf16 input in its own kernel before the GEMM
            add(f"{name}.act_quant", "elementwise", elementwise_keys("fp8_group_quant", k), count, m=m)
        add(name, "gemm", gemm_keys(weight_dtype, n, k, deep_gemm), count, m=m)

    def norm(name: str, variant: str, n: int, m: int, count: int) -> None:
        add(name, "elementwise", elementwise_keys(variant, n), count, m=m)

    def allreduce(name: str, rows: int, count: int) -> None:
        if lay.tp > 1:
            add(name, "allreduce", collective_keys("allreduce", lay.tp), count, message_bytes=rows * h * 2)

    if part in ("all", "local"):
        if lay.dp_attention == 1:
            allreduce("embed_allreduce", T, 1)  # vocab-parallel embedding sums partial lookups
        norm("input_layernorm", "add_rmsnorm", h, T, L)
        if arch.is_mla:
            _mla_row_ops(arch, s, T, method, gemm, norm, add)
        else:
            _gqa_row_ops(arch, s, T, gemm, norm)
        norm("post_attention_layernorm", "add_rmsnorm", h, T, L)
        norm("final_norm", "add_rmsnorm", h, T, 1)
    if part == "local":
        return ops
    if lay.dp_attention > 1 and dp_padding == "max_len":
        gather, scatter = dp_gathers(lay, T, G, h, L)
        ops.extend(gather)
        _mlp_ops(arch, s, G, gemm, norm, add, has)
        ops.extend(scatter)
    else:
        allreduce("attn_allreduce", G, L)
        _mlp_ops(arch, s, G, gemm, norm, add, has)
        allreduce("mlp_allreduce", G, L)
    vocab = arch.vocab_per_rank(lay.tp)
    gemm("lm_head", vocab, h, R, 1, dtype="bf16")
    if lay.tp > 1:
        add(
            "logits_allgather",
            "allgather",
            collective_keys("allgather", lay.tp),
            1,
            message_bytes=R * vocab * lay.tp * 2,  # the gathered [R, vocab] bf16 tensor
        )
    return ops


def dp_gathers(lay: ParallelLayout, T: int, G: int, h: int, L: int) -> tuple[list[OpCall], list[OpCall]]:
    """The collectives around each layer's MLP under DP attention in SGLang's MAX_LEN padding: every rank's rows
    padded to the largest rank's, gathered with all_gather_into_tensor, and the MLP's output summed and handed
    back with reduce_scatter_tensor, in place of the two all-reduces of SUM_LEN (SGLang 0.5.17
    layers/dp_attention.py `_dp_gather_via_all_gather`, `dp_reduce_scatter_tensor`; layers/communicator.py
    `_scatter_hidden_states`). DpPaddingMode.get_dp_padding_mode picks MAX_LEN for a batch with no extend when
    sum_len x 2 >= max_len x dp (always at DP 2; a balanced decode above it), and a decode CUDA graph is captured in
    it (get_default_mode_in_cuda_graph). With attention TP > 1 each leg adds a collective inside the attention-TP
    group: a reduce-scatter of this rank's rows before the gather, an all-gather of them after the scatter.
    Served check (groundtruth/forwards/h200x2/served-deepseek-v2-lite-dp2-decode): NCCL AllGather and
    ReduceScatter kernels, one each per layer, where a TP decode runs two custom all-reduces."""
    a, tp, nbytes = lay.attn_tp, lay.tp, G * h * 2
    gather = [
        OpCall("dp_gather", "allgather", collective_keys("allgather", tp), {"message_bytes": nbytes}, L, 1)
    ]
    scatter = [
        OpCall(
            "dp_reduce_scatter",
            "reducescatter",
            collective_keys("reducescatter", tp),
            {"message_bytes": nbytes},
            L,
            1,
        )
    ]
    if a > 1:
        local = {"message_bytes": T * h * 2}
        gather.insert(
            0, OpCall("dp_gather.attn_tp", "reducescatter", collective_keys("reducescatter", a), local, L, 1)
        )
        scatter.append(
            OpCall("dp_reduce_scatter.attn_tp", "allgather", collective_keys("allgather", a), local, L, 1)
        )
    return gather, scatter


def _mla_row_ops(arch: ModelArch, s: StepSettings, T: int, method: Method, gemm, norm, add) -> None:
    lay, L, h = s.layout, arch.num_layers, arch.hidden_size
    H = arch.heads_per_rank(lay)
    qk = arch.qk_nope_head_dim + arch.qk_rope_head_dim
    if arch.q_lora_rank and not _version_le(s.sglang_version, LAST_UNFUSED_QKV_A_VERSION):
        gemm("fused_qkv_a_proj", arch.q_lora_rank + arch.kv_latent_dim, h, T, L)
        norm("q_a_layernorm", "rmsnorm", arch.q_lora_rank, T, L)
        gemm("q_b_proj", H * qk, arch.q_lora_rank, T, L)
    elif arch.q_lora_rank:
        gemm("q_a_proj", arch.q_lora_rank, h, T, L)
        gemm("kv_a_proj_with_mqa", arch.kv_latent_dim, h, T, L)
        norm("q_a_layernorm", "rmsnorm", arch.q_lora_rank, T, L)
        gemm("q_b_proj", H * qk, arch.q_lora_rank, T, L)
    else:
        gemm("kv_a_proj_with_mqa", arch.kv_latent_dim, h, T, L)
        gemm("q_proj", H * qk, h, T, L)
    norm("kv_a_layernorm", "rmsnorm", arch.kv_lora_rank, T, L)
    if arch.attention == "dsa":
        ih, idim = arch.index_n_heads, arch.index_head_dim
        gemm("indexer.wq_b", ih * idim, arch.q_lora_rank or h, T, L)
        gemm("indexer.wk", idim, h, T, L)
        gemm("indexer.weights_proj", ih, h, T, L, dtype="bf16")
        norm("indexer.rope", "rope", ih * arch.qk_rope_head_dim, T, L)
    if method in ("absorb", "sparse"):
        add("w_kc", "bmm", bmm_keys(H, arch.kv_lora_rank, arch.qk_nope_head_dim), L, m=T)
    norm("rope", "rope", H * arch.qk_rope_head_dim, T, L)
    if method in ("absorb", "sparse"):
        add("w_vc", "bmm", bmm_keys(H, arch.v_head_dim, arch.kv_lora_rank), L, m=T)
    gemm("o_proj", h, H * arch.v_head_dim, T, L)


def _gqa_row_ops(arch: ModelArch, s: StepSettings, T: int, gemm, norm) -> None:
    lay, L, h, hd = s.layout, arch.num_layers, arch.hidden_size, arch.head_dim
    H, KV = arch.heads_per_rank(lay), arch.kv_heads_per_rank(lay)
    gemm("qkv_proj", (H + 2 * KV) * hd, h, T, L)
    if arch.qk_norm:
        norm("q_norm", "rmsnorm", hd, T * H, L)
        norm("k_norm", "rmsnorm", hd, T * KV, L)
    norm("rope", "rope", H * hd, T, L)
    gemm("o_proj", h, H * hd, T, L)


def _mlp_ops(arch: ModelArch, s: StepSettings, G: int, gemm, norm, add, has: HasTable | None) -> None:
    lay, h = s.layout, arch.hidden_size
    tp, ep = lay.tp, max(1, lay.ep)
    n_dense = arch.num_dense_mlp_layers
    if n_dense:
        inter = arch.intermediate_size // tp
        gemm("mlp.gate_up_proj", 2 * inter, h, G, n_dense)
        norm("mlp.silu_mul", "silu_mul", inter, G, n_dense)
        gemm("mlp.down_proj", h, inter, G, n_dense)
    n_moe = arch.num_moe_layers
    if not n_moe:
        return
    E, topk = arch.num_routed_experts, arch.experts_per_token
    moe_inter = arch.moe_intermediate_size // max(1, tp // ep)
    gemm("moe.gate", E, h, G, n_moe, dtype="bf16")
    shared = arch.num_shared_experts
    # SGLang fuses the shared expert into the routed MoE as extra always-chosen experts when EP == 1 (§4.1), except
    # with the flashinfer_trtllm runner it defaults to on SM100, which sets --disable-shared-experts-fusion
    # (SGLang 0.5.17 arg_groups/overrides.py, `_moe_runner_fusion_disable`).
    # Only DeepSeek-V3/R1's layout is fused: 256 routed experts and one shared expert (0.5.17
    # models/deepseek_v2.py `determine_num_fused_shared_experts`); DeepSeek-V2(-Lite) runs its two shared experts
    # as a separate MLP.
    fusable = shared == 1 and E in SHARED_FUSION_ROUTED_EXPERTS
    fused = fusable and ep == 1 and s.sm_major < 10
    sm = s.sm_major
    dev = s.sglang_device_name
    fused_default = not sglang_tunes_moe(E + shared, moe_inter, dev, s.weight_dtype)
    fused_keys = moe_keys(
        s.weight_dtype,
        E + shared,
        E + shared,
        topk + shared,
        moe_inter,
        h,
        shared,
        sm,
        default_tiles=fused_default,
    )
    plain_default = not sglang_tunes_moe(E // ep, moe_inter, dev, s.weight_dtype)
    plain_keys = moe_keys(
        s.weight_dtype, E, E // ep, topk, moe_inter, h, sm_major=sm, default_tiles=plain_default
    )
    if fused and has is not None and _best_rank(has, "moe", fused_keys) < _best_rank(has, "moe", plain_keys):
        # The fused layout is not calibrated (as well as the plain one): the plain routed MoE plus a separate
        # shared MLP is its proxy.
        fused = False
    if fused:
        add("moe.experts", "moe", fused_keys, n_moe, MOE_KERNELS_PER_CALL, m=G)
        return
    add("moe.experts", "moe", plain_keys, n_moe, MOE_KERNELS_PER_CALL, m=G)
    if shared:
        si = arch.moe_intermediate_size * shared // tp
        gemm("moe.shared.gate_up_proj", 2 * si, h, G, n_moe)
        norm("moe.shared.silu_mul", "silu_mul", si, G, n_moe)
        gemm("moe.shared.down_proj", h, si, G, n_moe)


def _best_rank(has: HasTable, op: str, candidates: tuple[Key, ...]) -> int:
    return max(int(has(op, dict(k))) for k in candidates)


def attention_ops(
    arch: ModelArch,
    s: StepSettings,
    groups: tuple[AttentionGroup, ...],
    method: Method,
    phase: Phase,
    skip_indexer_logits: bool = False,
) -> list[OpCall]:
    """Ops whose axes depend on the requests' lengths, one set per attention group."""
    backend = s.decode_backend if phase == "decode" else s.prefill_backend
    backends = table_attention_backends(backend, s.sm_major)
    kv_dtypes = kv_dtype_names(s.kv_dtype)
    ops: list[OpCall] = []
    for i, g in enumerate(groups):
        suffix = "" if i == 0 else f"[{i}]"
        if method == "gqa":
            ops.append(_gqa_op(arch, s, g, phase, backend, kv_dtypes, suffix))
            continue
        H = arch.heads_per_rank(s.layout)
        if method == "mha":
            ops += _mla_as_mha_ops(arch, s, g, H, backend, suffix)
        elif method == "absorb":
            ops.append(_mla_absorb_op(arch, s, g, H, phase, backends, kv_dtypes, suffix))
        elif method == "sparse":
            ops += _nsa_ops(arch, s, g, H, phase, backends, kv_dtypes, skip_indexer_logits, suffix)
    return ops


def _gqa_op(
    arch: ModelArch,
    s: StepSettings,
    g: AttentionGroup,
    phase: Phase,
    backend: str,
    kv_dtypes: tuple[str, ...],
    suffix: str,
) -> OpCall:
    """MHA/GQA attention of one group: the decode kernel for a decode step of one query token per request, else
    (an extend, or a decode step of several query tokens per request) the prefill kernel."""
    lay, L = s.layout, arch.num_layers
    H, KV, hd = arch.heads_per_rank(lay), arch.kv_heads_per_rank(lay), arch.head_dim
    if phase == "decode" and float(g.q_len) == 1.0:
        keys = key_candidates(
            "attn_gqa_decode",
            backend=gqa_decode_tables(backend, s.sm_major),
            kv_dtype=kv_dtypes,
            num_heads=H,
            num_kv_heads=KV,
            head_dim=hd,
            page_size=s.page_size,
        )
        return OpCall(
            "attention" + suffix, "attn_gqa_decode", keys, {"batch": g.batch, "kv_len": g.kv_len}, L
        )
    return _mha_prefill_op(arch, s, g, H, KV, hd, hd, backend, L, suffix)


def _mla_as_mha_ops(
    arch: ModelArch, s: StepSettings, g: AttentionGroup, H: int, backend: str, suffix: str
) -> list[OpCall]:
    """An MLA extend run as MHA: kv_b_proj expands every KV token's latent into per-head K and V, then MHA
    prefill over them."""
    L = arch.num_layers
    kv_b_n = H * (arch.qk_nope_head_dim + arch.v_head_dim)
    kv_b_proj = OpCall(
        "kv_b_proj" + suffix,
        "gemm",
        gemm_keys(s.weight_dtype, kv_b_n, arch.kv_lora_rank, _prices_with_deep_gemm(s)),
        {"m": g.kv_tokens},
        L,
    )
    qk = arch.qk_nope_head_dim + arch.qk_rope_head_dim
    return [kv_b_proj, _mha_prefill_op(arch, s, g, H, H, qk, arch.v_head_dim, backend, L, suffix)]


def _mla_absorb_op(
    arch: ModelArch,
    s: StepSettings,
    g: AttentionGroup,
    H: int,
    phase: Phase,
    backends: tuple[str, ...],
    kv_dtypes: tuple[str, ...],
    suffix: str,
) -> OpCall:
    """MLA attention over the latent KV (kv_b_proj absorbed into the query and output): the decode kernel, or the
    extend kernel (the backend's tables first, then flashinfer's FA3 and FA2)."""
    L = arch.num_layers
    if phase == "decode":
        keys = key_candidates(
            "attn_mla_decode",
            backend=backends,
            kv_dtype=kv_dtypes,
            num_heads=H,
            page_size=s.page_size,
            q_len=max(1, int(round(float(g.q_len)))),  # > 1 for a speculative verify step
        )
        axes = {"batch": g.batch, "kv_len": g.kv_len}
        return OpCall("attention" + suffix, "attn_mla_decode", keys, axes, L)
    keys = key_candidates(
        "attn_mla_extend",
        backend=(*backends, "flashinfer_fa3", "flashinfer_fa2"),
        kv_dtype=kv_dtypes,
        num_heads=H,
        page_size=s.page_size,
    )
    axes = {"batch": g.batch, "q_len": g.q_len, "kv_len": g.kv_len}
    return OpCall("attention" + suffix, "attn_mla_extend", keys, axes, L, floor_axes=straggler_axes(g))


def _mha_prefill_op(
    arch: ModelArch,
    s: StepSettings,
    g: AttentionGroup,
    H: int,
    KV: int,
    d_qk: int,
    d_v: int,
    backend: str,
    count: int,
    suffix: str,
) -> OpCall:
    # MHA/GQA prefill runs FA3 on Hopper (flashinfer's FA3 as proxy); flashinfer's ragged prefill asks for
    # backend="auto" (FA3 on SM90, FA2 elsewhere); SM100 TRT-LLM ragged prefill for trtllm_mla / trtllm and DSA's
    # dense short prefill on SM100 (sglang PR 12788): simperf/capabilities.py `mha_prefill_tables`
    backends = mha_prefill_tables(backend, arch.family, s.sm_major)
    keys = key_candidates(
        "attn_mha_prefill",
        backend=backends,
        dtype="bf16",
        num_heads=H,
        num_kv_heads=KV,
        head_dim=d_qk,
        head_dim_v=d_v,
    )
    axes = {"batch": g.batch, "q_len": g.q_len, "kv_len": g.kv_len}
    return OpCall(
        "attention" + suffix,
        "attn_mha_prefill",
        keys,
        axes,
        count,
        floor_axes=straggler_axes(g),
        requests=g.requests,
    )


def straggler_axes(g: AttentionGroup) -> dict[str, float] | None:
    """The axes of a ragged extend group's straggler alone (OpCall.floor_axes), or None."""
    if g.straggler is None:
        return None
    q_len, kv_len = g.straggler
    return {"batch": 1.0, "q_len": q_len, "kv_len": kv_len}


def nsa_padded_heads(heads: int, backend: str, sm_major: int) -> int:
    """Query heads as the DSA kernels of `backend` run them (simperf/capabilities.py `dsa_padded_heads`)."""
    return dsa_padded_heads(heads, backend, sm_major)


def _nsa_ops(
    arch: ModelArch,
    s: StepSettings,
    g: AttentionGroup,
    H: int,
    phase: Phase,
    backends: tuple[str, ...],
    kv_dtypes: tuple[str, ...],
    skip_indexer_logits: bool,
    suffix: str,
) -> list[OpCall]:
    L, topk = arch.num_layers, arch.index_topk
    heads = nsa_padded_heads(H, s.decode_backend if phase == "decode" else s.prefill_backend, s.sm_major)
    ops: list[OpCall] = []
    if phase == "decode":
        keys = key_candidates(
            "attn_nsa_decode",
            backend=backends,
            kv_dtype=kv_dtypes,
            num_heads=heads,
            topk=topk,
            page_size=s.page_size,
        )
        ops.append(
            OpCall("attention" + suffix, "attn_nsa_decode", keys, {"batch": g.batch, "kv_len": g.kv_len}, L)
        )
        indexer_axes = {"m": g.batch, "kv_len": g.kv_len}
    else:
        keys = key_candidates(
            "attn_nsa_prefill", backend=backends, kv_dtype=kv_dtypes, num_heads=heads, topk=topk
        )
        m = g.batch * g.q_len
        ops.append(
            OpCall("attention" + suffix, "attn_nsa_prefill", keys, {"m": m, "kv_len": g.sparse_kv_len}, L)
        )
        indexer_axes = {"m": m, "kv_len": g.context_mean}
    if not (phase == "extend" and skip_indexer_logits):
        keys = key_candidates(
            "nsa_indexer",
            backend="deep_gemm",
            variant=phase if phase == "decode" else "prefill",
            num_heads=arch.index_n_heads,
            head_dim=arch.index_head_dim,
            topk=topk,
        )
        ops.append(OpCall("indexer.logits_topk" + suffix, "nsa_indexer", keys, indexer_axes, L))
    return ops


def decode_row_ops(
    arch: ModelArch, s: StepSettings, padded_bs: int, has: HasTable | None = None
) -> list[OpCall]:
    """Row ops of a decode step: every GEMM, collective and MoE runs on the padded (CUDA-graph bucket) rows; under
    DP attention in MAX_LEN padding (dp_gathers)."""
    return row_ops(arch, s, padded_bs, padded_bs, decode_method(arch), has, dp_padding="max_len")


# decode backends whose speculative verify and draft extend run flashinfer's paged prefill kernel over the decode's
# paged KV (SGLang 0.5.17 layers/attention/flashinfer_backend.py: use_ragged=False for both forward modes)
SPEC_PAGED_PREFILL_BACKENDS = frozenset({"flashinfer"})


def decode_attention_ops(
    arch: ModelArch, s: StepSettings, bs: int, kv_len: Any, q_len: int = 1, spec_kind: str | None = None
) -> list[OpCall]:
    """Attention of a decode step: the real `bs` requests at KV length `kv_len` (scalar or one per step);
    q_len > 1 for a speculative verify or draft-extend step (q_len query tokens per request, `spec_kind` says
    which: on flashinfer with GQA that is the decode table's kernel times a measured ratio, perfdb/spec_verify.py)."""
    group = decode_group(bs, kv_len)
    method = decode_method(arch)
    if (
        q_len > 1
        and spec_kind is not None
        and method == "gqa"
        and s.decode_backend in SPEC_PAGED_PREFILL_BACKENDS
    ):
        ops = attention_ops(arch, s, (group,), method, "decode")
        return [replace(op, spec_path=(spec_kind, q_len)) for op in ops]
    if q_len > 1:
        group = AttentionGroup(
            batch=bs,
            q_len=float(q_len),
            kv_len=group.kv_len,
            kv_tokens=group.kv_tokens,
            context_mean=group.context_mean,
            sparse_kv_len=group.sparse_kv_len,
        )
    return attention_ops(arch, s, (group,), method, "decode")


def decode_ops(
    arch: ModelArch, s: StepSettings, bs: int, padded_bs: int, kv_len: Any, has: HasTable | None = None
) -> list[OpCall]:
    return decode_row_ops(arch, s, padded_bs, has) + decode_attention_ops(arch, s, bs, kv_len)


def extend_ops(
    arch: ModelArch,
    s: StepSettings,
    extend_lens: np.ndarray,
    prefix_lens: np.ndarray,
    decode_kv_lens: np.ndarray | None = None,
    has: HasTable | None = None,
) -> list[OpCall]:
    plan = plan_extend(arch, s, extend_lens, prefix_lens, decode_kv_lens)
    return row_ops(arch, s, plan.num_tokens, plan.num_logit_rows, plan.method, has) + attention_ops(
        arch, s, plan.groups, plan.method, "extend", plan.skip_indexer_logits
    )


def uncosted_kernels_per_step(arch: ModelArch) -> int:
    n = UNCOSTED_KERNELS_PER_STEP + UNCOSTED_KERNELS_PER_LAYER * arch.num_layers
    n += UNCOSTED_KERNELS_PER_MOE_LAYER * arch.num_moe_layers
    if arch.attention == "dsa":
        n += UNCOSTED_KERNELS_PER_NSA_LAYER * arch.num_layers
    return n


def kernels_per_step(ops: list[OpCall], arch: ModelArch) -> int:
    return sum(o.count * o.kernels for o in ops) + uncosted_kernels_per_step(arch)
