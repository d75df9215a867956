"""SGLang's numbers that the model reproduces, named, each with the SGLang version and source file it comes from.

Paths are relative to the `sglang` package (`python/sglang/` of SGLang's repository). Where a value was read in
SGLang 0.5.23 for docs/serving-model.md and is unchanged in 0.5.17 (the version the shipped tables and the
ground-truth corpus were measured with), both are named. Environment-variable defaults are the server's defaults:
a deployment that sets the variable differs.
"""

from __future__ import annotations

# ---- admission and the new-token ratio (docs/serving-model.md §1.4, §1.7, §1.8) ----------------------------------
# srt/environ.py (0.5.17): SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION. Admission reserves at most this many output tokens
# per request, however large its max_new_tokens.
CLIP_MAX_NEW_TOKENS = 4096
# srt/environ.py (0.5.17): SGLANG_INIT_NEW_TOKEN_RATIO, _MIN_NEW_TOKEN_RATIO_FACTOR, _NEW_TOKEN_RATIO_DECAY_STEPS;
# combined in srt/managers/scheduler_components/new_token_ratio_tracker.py (NewTokenRatioTracker.from_server_args):
# init = min(0.7 x schedule_conservativeness, 1), min = init x 0.14, decay = (init - min) / 600 per decode step.
INIT_NEW_TOKEN_RATIO = 0.7
MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
NEW_TOKEN_RATIO_DECAY_STEPS = 600
# srt/environ.py (0.5.17): SGLANG_RETRACT_DECODE_STEPS; after a retraction the ratio is re-estimated as
# (decoded + 20 x running) / Σ max_new_tokens (NewTokenRatioTracker.estimate_new_token_ratio_after_retract).
RETRACT_DECODE_STEPS = 20
# srt/server_args.py (0.5.17, ServerArgs, the enable_dp_attention branch): DP attention scales
# schedule_conservativeness by 0.3, so each rank admits against a smaller output reservation.
DP_ATTENTION_CONSERVATIVENESS = 0.3
# From SGLang 0.5.6 on, PrefillAdder reserves the whole remaining output (ratio 1) of ignore_eos requests when
# the radix cache is disabled (0.5.17 srt/managers/schedule_policy.py, _get_running_request_total_token_offset).
IGNORE_EOS_FULL_RESERVATION_SINCE = (0, 5, 6)

# ---- memory-dependent defaults (docs/serving-model.md §1.5, §1.10, §1.12) --------------------------------------------
# srt/server_args.py (0.5.17, ServerArgs._handle_gpu_memory_settings), by GPU memory in GiB: below each bound,
# (chunked_prefill_size, decode cuda_graph_max_bs below TP 4, at TP >= 4); above the last, the last row.
GPU_MEMORY_DEFAULTS: tuple[tuple[float, int, int, int], ...] = (
    (20, 2048, 8, 8),
    (35, 2048, 24, 80),
    (60, 4096, 32, 160),
    (160, 8192, 256, 512),
    (float("inf"), 16384, 512, 512),
)
CUDA_GRAPH_MAX_BS_TP_THRESHOLD = 4
# Memory each rank's torch.distributed / NCCL / custom all-reduce set-up holds before weights load, beyond what a
# single-GPU server's holds, by tensor-parallel size: measured from SGLang 0.5.17's own log line "Init torch
# distributed ends. mem usage=" (srt/distributed/bootstrap.py), on the rank with the least memory left (it sets the
# pool): 0.09 GiB at TP 1, 1.08 at TP 2, 1.30 at TP 4 (groundtruth/h100/qwen3-8b-tp2 and llama-3.1-8b-tp4,
# server_facts.json, a 4xH100 host). Larger groups use the TP 4 value (not measured).
DISTRIBUTED_INIT_EXTRA_MIB: tuple[tuple[int, float], ...] = (
    (2, (1.08 - 0.09) * 1024),
    (4, (1.30 - 0.09) * 1024),
)


def distributed_init_extra_mib(tp: int) -> float:
    """The per-rank memory a TP group's distributed set-up takes beyond TP 1 (0 at TP 1)."""
    extra = 0.0
    for size, mib in DISTRIBUTED_INIT_EXTRA_MIB:
        if tp >= size:
            extra = mib
    return extra


# srt/server_args.py (0.5.17), the same function's mem_fraction_static: reserved MB = base + per activation token x max(C, min tokens)
# + TP slack per 8 ranks + graph reserve, at least the floor on GPUs above 60 GiB; graph reserve
# (ServerArgs.reserve_for_graph_mb) = 2 MB per decode graph batch (decode graphs on), + 3 (and 1.5 more above 300)
# x max_bs x DP under DP attention, and, where the prefill CUDA graph is on when the rule runs
# (_handle_cuda_graph_config has already turned it off for MLA other than DSA and on a PD decode server, not for DP
# attention nor a PD prefill server; see prefill_cuda_graph_off_reason), 8 MB per captured prefill size
# (prefill_graph_capture_sizes) or, for an MLA backend, 1536 MB. max_bs there is the decode graph's max_bs as
# _handle_gpu_memory_settings leaves it (--cuda-graph-max-bs or the GPU-memory default), not capped by
# --max-running-requests: only the runtime's capture list is (get_batch_sizes_to_capture). Checked against every
# ground-truth server's logged mem_fraction_static (tests).
RESERVED_BASE_MB = 512
RESERVED_MB_PER_ACTIVATION_TOKEN = 1.5
MIN_ACTIVATION_TOKENS = 2048
RESERVED_MB_PER_8_TP_RANKS = 1024
RESERVED_FLOOR_MB = 10240
RESERVED_FLOOR_ABOVE_GIB = 60
GRAPH_RESERVE_MB_PER_BS = 2
DP_GRAPH_RESERVE_MB_PER_BS = 3
DP_GRAPH_RESERVE_LARGE_BS = 300
DP_GRAPH_RESERVE_MB_PER_LARGE_BS = 1.5
MLA_PREFILL_GRAPH_RESERVE_MB = 1536
PREFILL_GRAPH_RESERVE_MB_PER_SIZE = 8
# SGLang <= 0.5.5 (server_args.py, the same rule): EAGLE / MTP draft models and their graphs reserve 2048 MB more
# (STANDALONE 6144, NGRAM none); 0.5.17 counts the draft's weights as loaded instead.
SPECULATIVE_RESERVE_MB_UNTIL = (0, 5, 5)
SPECULATIVE_RESERVE_MB = 2048
# The same rule by a server's PD role (--disaggregation-mode), 0.5.17 (server_args.py, _handle_gpu_memory_settings,
# reserve_for_graph_mb): a PD prefill server reserves nothing for the decode CUDA graph nor for DP attention's graph
# padding (both `disaggregation_mode != "prefill"`; _apply_cuda_graph_disaggregation_roles also turns its decode
# graph off); a PD decode server sizes its activations by max(running requests x draft tokens, MIN_ACTIVATION_TOKENS)
# instead of the prefill chunk (running requests: --max-running-requests, else the decode graph's max_bs; draft
# tokens: --speculative-num-draft-tokens as given, else 1), and reserves nothing for a prefill CUDA graph (its
# prefill graph is off). SGLang <= 0.5.5 (server_args.py, the same function) reserved the chunk's activations,
# cuda_graph_max_bs x 2 and the DP terms on every server, whatever its disaggregation mode.
PD_ROLE_RESERVE_AFTER = (0, 5, 5)


def prefill_graph_capture_sizes(max_tokens: int) -> list[int]:
    """The token counts SGLang 0.5.17 captures prefill CUDA graphs at, up to `max_tokens`
    (ServerArgs._generate_prefill_cuda_graph_batch_sizes): 4-32 by 4, 48-256 by 16, 288-512 by 32, 576-1024 by 64,
    1280-4096 by 256, then by 512."""
    sizes = (
        list(range(4, 33, 4))
        + list(range(48, 257, 16))
        + list(range(288, 513, 32))
        + list(range(576, 1025, 64))
        + list(range(1280, 4097, 256))
        + list(range(4608, max_tokens + 1, 512))
    )
    return [n for n in sizes if n <= max_tokens]


def prefill_graph_capture_count(max_tokens: int) -> int:
    """len(prefill_graph_capture_sizes(max_tokens)), counted without listing them: a chunked_prefill_size of 10**12
    listed two billion sizes and hung the prediction (it now ends in the reserve's 'does not fit' error)."""
    listed = len(prefill_graph_capture_sizes(min(max_tokens, 4096)))
    return listed + (max(0, (max_tokens - 4608) // 512 + 1) if max_tokens >= 4608 else 0)


# srt/server_args.py (0.5.17, _handle_gpu_memory_settings): the prefill graph's max_bs, its largest captured token
# count, is the chunked-prefill size, but 2048 for an MLA-arch model (DeepSeek-V3.2's DSA included: use_mla_backend),
# capped by --max-total-tokens.
MLA_PREFILL_GRAPH_MAX_TOKENS = 2048
# model_executor/runner/prefill_cuda_graph_runner.py (0.5.17): _MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR. An extend
# replays the graph only when its bucket is at most this many times its own token count (can_replay_locally).
PREFILL_GRAPH_PADDING_FACTOR = 2


def prefill_graph_replays(num_tokens: int, max_tokens: int) -> bool:
    """Whether an extend of `num_tokens` tokens (decode rows riding in it included: SGLang counts input_ids) fits
    SGLang 0.5.17's prefill CUDA graph captured up to `max_tokens` (prefill_cuda_graph_runner.py,
    PrefillCudaGraphRunner.can_replay_locally: at most the largest captured size, padded to the next one by at most
    PREFILL_GRAPH_PADDING_FACTOR). The other conditions there (logprobs, input embeddings, LoRA, a verify) do not
    arise in simperf's extends; under DP attention SGLang also needs every rank to hold tokens and vote yes, which
    a single rank's extend does not see (not modelled)."""
    sizes = prefill_graph_capture_sizes(max_tokens)
    if num_tokens < 1 or not sizes or num_tokens > sizes[-1]:
        return False
    bucket = next(size for size in sizes if size >= num_tokens)
    return bucket <= num_tokens * PREFILL_GRAPH_PADDING_FACTOR


# ---- max_running_requests (docs/serving-model.md §1.12, §3) --------------------------------------------------------
# srt/mem_cache/kv_cache_configurator.py (0.5.17, KVCacheConfigurator.resolve_max_num_reqs):
# min(clamp(pool tokens / context_len x 512, 2048, 4096), pool tokens // 2) per DP rank.
MAX_RUNNING_REQUESTS_PER_CONTEXT = 512
MAX_RUNNING_REQUESTS_FLOOR = 2048
MAX_RUNNING_REQUESTS_CEIL = 4096
# srt/arg_groups/speculative_hook.py (0.5.17): EAGLE / MTP set max_running_requests to 48 when it is not given.
SPECULATIVE_MAX_RUNNING_REQUESTS = 48

# ---- scheduling policies (docs/serving-model.md §1.9) ------------------------------------------------------------
# srt/managers/schedule_policy.py (0.5.17, SchedulePolicy._determine_active_policy): lpm runs as fcfs above this
# many waiting requests.
LPM_MAX_QUEUE = 128
# srt/managers/schedule_policy.py (0.5.17): IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD / _DEPRIORITIZE_THRESHOLD.
IN_BATCH_CHECK_TOKENS = 32
IN_BATCH_DEPRIORITIZE_TOKENS = 32

# ---- DeepSeek-V3.2 sparse attention (docs/serving-model.md §4.3) -------------------------------------------------
# srt/environ.py (0.5.17): SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD. Prefills whose longest KV is at most this
# run dense MHA instead of the sparse path.
DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD = 2048

# ---- DeepSeek-V3/R1 prefill attention method (docs/serving-model.md §4.2) ----------------------------------------
# srt/environ.py (0.5.17): SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD. An extend whose summed cached prefix is non-zero
# but below this runs the absorbed MLA path; none or a longer one runs MHA.
CHUNKED_PREFIX_CACHE_THRESHOLD = 8192
# srt/environ.py (0.5.17): SGLANG_MAX_KV_CHUNK_CAPACITY. Above this many KV tokens MHA runs in KV chunks
# (MHA_CHUNKED_KV), costed here like one shot.
MAX_KV_CHUNK_CAPACITY = 131072


# ---- prefill CUDA graph (0.5.17 srt/server_args.py) ------------------------------------------------------------------
# The first version whose prefill-graph rule was read from its source (0.5.17: breakable is CUDA's default prefill
# backend, and DP attention / PD prefill keep it). Versions before it keep simperf's earlier rule, where DP attention
# and either PD role also run every extend eagerly: the rule of the torch-compile piecewise graph that preceded the
# breakable default (sglang PR 23906, the CUDA-graph backend refactor, made breakable the default; the piecewise
# backend's rules, kept in 0.5.17 as `_disable_tc_piecewise_cudagraph_if_incompatible`, list "DP attention" and
# "PD disaggregation"; before sglang PR 16331 prefill graphs were opt in). The release that first shipped the
# breakable default is not checked, so the new rule starts at the version that was read.
BREAKABLE_PREFILL_RULE_FROM = (0, 5, 17)


def prefill_cuda_graph_off_reason(
    mla_non_dsa: bool,
    pd_role: str | None,
    disable_cuda_graph: bool,
    dp_attention: int = 1,
    sglang_version: str = "0.5.17",
) -> str | None:
    """Why SGLang runs every extend eagerly (no breakable prefill CUDA graph), or None when it captures one.

    0.5.17 (srt/server_args.py, ServerArgs._handle_cuda_graph_config, before _handle_gpu_memory_settings sizes the
    reserve) resolves the prefill phase's backend to Backend.BREAKABLE on CUDA (model_executor/cuda_graph_config.py,
    default_prefill_backend) and then turns it off only where:
    * --disable-cuda-graph sets both phases to DISABLED and locks them (_parse_cuda_graph_config), so no
      compatibility rule runs;
    * `_disable_breakable_cudagraph_if_incompatible` (called by _apply_cuda_graph_compatibility for BREAKABLE) matches:
      of its rules only "MLA attention (non-DSA)" can be expressed in a simperf scenario (use_mla_backend() and not
      is_deepseek_dsa; logged by our DeepSeek-V2-Lite server). DP attention and PD disaggregation are NOT among its
      rules: they are rules of `_disable_tc_piecewise_cudagraph_if_incompatible`, which only runs for the
      tc_piecewise backend (non-CUDA hardware, validated multimodal models);
    * `_apply_cuda_graph_disaggregation_roles`: a PD decode server (--disaggregation-mode decode) turns its prefill
      graph off (a PD prefill server turns its decode graph off instead and keeps the prefill graph).
    So plain TP and DP attention keep the graph on an MHA/GQA model or a DSA model; an MLA (non-DSA) model runs
    eagerly on any layout. (`_disable_prefill_cuda_graph_for_deepseek_trtllm_mla` also turns it off for
    DeepseekV3ForCausalLM on trtllm_mla, a non-DSA MLA arch the MLA rule has already turned off.)
    pd_role: "prefill", "decode" or None (--disaggregation-mode). Before BREAKABLE_PREFILL_RULE_FROM, DP attention
    (dp_attention > 1) and either PD role also turn it off (simperf's earlier rule, kept for those versions).
    """
    if disable_cuda_graph:
        return "--disable-cuda-graph"
    if mla_non_dsa:
        return "MLA attention (non-DSA)"
    if version_tuple(sglang_version) < BREAKABLE_PREFILL_RULE_FROM:
        if dp_attention > 1:
            return "DP attention"
        if pd_role is not None:
            return "PD disaggregation"
        return None
    if pd_role == "decode":
        return "PD decode server"
    return None


# The releases serving.sglang_version may name: the version-dependent rules are read from SGLang 0.5.23's
# python/sglang/srt/server_args.py and srt/managers/ (docs/serving-model.md §0) and go back to the 0.4 series
# (models/ops.py, LAST_UNFUSED_QKV_A_VERSION 0.4.5; the published scenarios' 0.4.10). A later release was priced
# with 0.5.23's rules, an earlier one with 0.4's, and the prediction said nothing of it.
NEWEST_MODELLED_SGLANG = (0, 5, 23)
OLDEST_MODELLED_SGLANG = (0, 4, 0)


def version_tuple(version: str) -> tuple[int, ...]:
    """'0.5.17' -> (0, 5, 17); suffixes such as '.post3' are ignored."""
    import re

    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


# ---- Triton fused-MoE tiles ------------------------------------------------------------------------------------------
# torch.cuda.get_device_name() with spaces as underscores, as SGLang names its tuned MoE config files
# (0.5.17 srt/layers/moe/moe_runner/triton_utils/fused_moe_triton_config.py, get_config_file_name).
SGLANG_DEVICE_NAMES: dict[str, str] = {
    "h100": "NVIDIA_H100_80GB_HBM3",
    "h200": "NVIDIA_H200",
    "b200": "NVIDIA_B200",
}


# ---- extend launches that wait for the GPU (docs/overheads.md, "The extend launch") ----------------------------
# flashinfer's prefill plan() copies its index pointers to the host with a blocking copy: SGLang 0.5.17's own
# comment on fast_prefill_plan (srt/layers/attention/flashinfer_backend.py) says it "drains the GPU queue every
# replay", and the flashinfer MLA backend's ragged extend reads `prefix_lens.sum().item()` (flashinfer_mla_backend.py,
# FlashInferMLAIndicesUpdaterPrefill.update). So an extend's launch on these backends starts only once the GPU has
# finished the previous iteration. No such copy was found on the other prefill backends' extend path.
EXTEND_PLAN_DRAINS_GPU_BACKENDS = frozenset({"flashinfer"})


def extend_plan_drains_gpu(prefill_backend: str) -> bool:
    """Whether an extend on this prefill backend waits for the GPU before its kernels are launched."""
    return prefill_backend in EXTEND_PLAN_DRAINS_GPU_BACKENDS
