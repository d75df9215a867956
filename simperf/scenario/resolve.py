"""SGLang's default rules, applied once: Scenario -> ResolvedServing.

Each rule cites its section of docs/serving-model.md and the SGLang source (docs/simulator.md lists them). Numbers the user gives win;
numbers the server log gives (max_total_tokens) win over derived ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from simperf import capabilities
from simperf.hardware.catalog import GpuSpec, get_gpu, max_measured_pre_load_used_bytes
from simperf.models.arch import ModelArch
from simperf.models.zoo import load_arch
from simperf.scenario.backends import check_backends
from simperf.scenario.layout import check_layout
from simperf.scenario.models import Scenario, ServingSpec, SpeculativeSpec
from simperf.scenario.resolved import ParallelLayout, ResolvedServing, SpecSettings
from simperf.sglang_defaults import (
    CUDA_GRAPH_MAX_BS_TP_THRESHOLD,
    DP_ATTENTION_CONSERVATIVENESS,
    DP_GRAPH_RESERVE_LARGE_BS,
    DP_GRAPH_RESERVE_MB_PER_BS,
    DP_GRAPH_RESERVE_MB_PER_LARGE_BS,
    GPU_MEMORY_DEFAULTS,
    GRAPH_RESERVE_MB_PER_BS,
    INIT_NEW_TOKEN_RATIO,
    MAX_RUNNING_REQUESTS_CEIL,
    MAX_RUNNING_REQUESTS_FLOOR,
    MAX_RUNNING_REQUESTS_PER_CONTEXT,
    MIN_ACTIVATION_TOKENS,
    MIN_NEW_TOKEN_RATIO_FACTOR,
    MLA_PREFILL_GRAPH_RESERVE_MB,
    NEW_TOKEN_RATIO_DECAY_STEPS,
    PD_ROLE_RESERVE_AFTER,
    PREFILL_GRAPH_RESERVE_MB_PER_SIZE,
    RESERVED_BASE_MB,
    RESERVED_FLOOR_ABOVE_GIB,
    RESERVED_FLOOR_MB,
    RESERVED_MB_PER_8_TP_RANKS,
    RESERVED_MB_PER_ACTIVATION_TOKEN,
    SPECULATIVE_MAX_RUNNING_REQUESTS,
    SPECULATIVE_RESERVE_MB,
    SPECULATIVE_RESERVE_MB_UNTIL,
    distributed_init_extra_mib,
    prefill_cuda_graph_off_reason,
    prefill_graph_capture_count,
    version_tuple,
)

MIB = 1024 * 1024
# SGLang's load_balance_method that sends a request to the DP rank of its bootstrap room (default_load_balance_method)
FOLLOW_BOOTSTRAP_ROOM = "follow_bootstrap_room"


def default_backends(
    arch: ModelArch, gpu: GpuSpec, kv_dtype: str, serving: ServingSpec | None = None
) -> tuple[str, str]:
    """(prefill, decode) attention backends SGLang picks when none is given (docs/serving-model.md §4.2, §4.3);
    `serving`: the server's arguments, whose speculative settings move an MHA model's default."""
    sp = serving.speculative if serving is not None else None
    topk = sp.eagle_topk if sp is not None and "eagle_topk" in sp.model_fields_set else None
    page = serving.page_size if serving is not None else None
    return capabilities.default_backends(arch.family, gpu.sm, kv_dtype, topk, sp is not None, page)


def default_page_size(arch: ModelArch, prefill: str, decode: str, attention: str | None = None) -> int:
    """docs/serving-model.md §1.11: FlashMLA forces 64, trtllm_mla 64, trtllm_mha 64, cutlass_mla 128, DSA 64,
    otherwise 1."""
    return capabilities.default_page_size(arch.family, prefill, decode, attention)


def _memory_defaults(gpu: GpuSpec) -> tuple[float, int, int, int]:
    gib = gpu.memory_bytes / 1024**3
    return next(row for row in GPU_MEMORY_DEFAULTS if gib < row[0])


def default_chunked_prefill_size(gpu: GpuSpec) -> int:
    """docs/serving-model.md §1.5: by GPU memory (sglang_defaults.GPU_MEMORY_DEFAULTS)."""
    return _memory_defaults(gpu)[1]


def default_cuda_graph_max_bs(gpu: GpuSpec, tp: int) -> int:
    """docs/serving-model.md §1.10: by GPU memory and TP (H100/H200 256 below TP 4, else 512; B200 512)."""
    _, _, small_tp, large_tp = _memory_defaults(gpu)
    return large_tp if tp >= CUDA_GRAPH_MAX_BS_TP_THRESHOLD else small_tp


def decode_graph_buckets(max_bs: int, speculative: bool) -> tuple[int, ...]:
    """Decode CUDA-graph batch sizes (docs/serving-model.md §1.10), up to and including max_bs."""
    if speculative:
        sizes = list(range(1, 9)) + list(range(10, 33, 2)) + list(range(40, 65, 4))
        sizes += list(range(72, 257, 8)) + list(range(272, max(max_bs, 272) + 1, 16))
    else:
        sizes = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 497, 16))
        sizes += list(range(512, max(max_bs, 512) + 1, 32))
    kept = sorted({s for s in sizes if s <= max_bs} | {max_bs})
    return tuple(kept)


def decode_graph_reserve_mb(max_bs: int, dp: int, decode_graph: bool, role: str | None = None) -> float:
    """What SGLang's reservation rule sets aside for the decode CUDA graphs (docs/serving-model.md §1.12); nothing
    on a PD prefill server (role "prefill": 0.5.17 ServerArgs.reserve_for_graph_mb counts both the decode graph and
    DP attention's padding only where disaggregation_mode != "prefill")."""
    if role == "prefill":
        return 0.0
    reserve = GRAPH_RESERVE_MB_PER_BS * max_bs if decode_graph else 0.0
    if dp > 1:
        large = DP_GRAPH_RESERVE_MB_PER_LARGE_BS * max_bs * dp if max_bs > DP_GRAPH_RESERVE_LARGE_BS else 0
        reserve += DP_GRAPH_RESERVE_MB_PER_BS * max_bs * dp + large
    return reserve


def activation_reserve_mb(activation_tokens: int) -> float:
    """What the rule sets aside for a prefill's activations (docs/serving-model.md §1.12)."""
    return RESERVED_MB_PER_ACTIVATION_TOKEN * max(activation_tokens, MIN_ACTIVATION_TOKENS)


def default_mem_fraction_static(
    gpu: GpuSpec,
    chunk: int,
    tp: int,
    max_bs: int,
    dp: int,
    *,
    decode_graph: bool = True,
    prefill_graph_mb: float = 0.0,
    speculative_mb: float = 0.0,
    role: str | None = None,
) -> float:
    """docs/serving-model.md §1.12: reserve activations, graphs and the like; the rest is static (weights + KV).
    chunk: the tokens the activations are sized by (the prefill chunk; `pd_activation_tokens` on a PD decode
    server); prefill_graph_mb: what the prefill CUDA graph reserves (`prefill_graph_reserve_mb`); speculative_mb:
    what a draft model reserves in versions that reserved for it (`speculative_reserve_mb`); role: the server's PD
    role where its version reserves by it (`reserve_role`): a PD prefill server reserves no decode graph."""
    gpu_mib = gpu.memory_bytes / MIB
    reserved = (
        RESERVED_BASE_MB
        + activation_reserve_mb(chunk)
        + RESERVED_MB_PER_8_TP_RANKS * tp / 8
        + decode_graph_reserve_mb(max_bs, dp, decode_graph, role)
        + prefill_graph_mb
    )
    if gpu_mib > RESERVED_FLOOR_ABOVE_GIB * 1024:
        reserved = max(reserved, RESERVED_FLOOR_MB)
    reserved += speculative_mb  # on top of the floor (SGLang <= 0.5.5 added it after the max)
    return round((gpu_mib - reserved) / gpu_mib, 3)


def prefill_graph_reserve_mb(mla: bool, chunk: int, max_total_tokens: int | None) -> float:
    """What SGLang 0.5.17 reserves for a prefill CUDA graph that is on (ServerArgs.reserve_for_graph_mb): 1536 MB
    for an MLA backend, else 8 MB per captured size up to the chunked-prefill size (capped by --max-total-tokens);
    with chunked prefill off (chunk <= 0) no size is captured."""
    if mla:
        return float(MLA_PREFILL_GRAPH_RESERVE_MB)
    limit = chunk if max_total_tokens is None else min(chunk, max_total_tokens)
    return float(PREFILL_GRAPH_RESERVE_MB_PER_SIZE * prefill_graph_capture_count(limit))


def speculative_reserve_mb(algorithm: str | None, sglang_version: str) -> float:
    """SGLang <= 0.5.5 reserved 2048 MB more for an EAGLE / MTP draft (docs/serving-model.md §1.12)."""
    if algorithm is None or algorithm == "ngram":
        return 0.0
    if version_tuple(sglang_version) > SPECULATIVE_RESERVE_MB_UNTIL:
        return 0.0
    return float(SPECULATIVE_RESERVE_MB)


def memory_before_weights(gpu: GpuSpec, tp: int) -> tuple[int, str]:
    """Bytes free on each GPU when SGLang starts loading weights, and where the number comes from: the GPU's
    memory less what a TP-1 server holds then (the catalogue's `pre_load_used_bytes`, measured on our hosts, or
    the largest measured value as an estimate for a GPU without one) less a TP group's distributed set-up."""
    used, source = gpu.pre_load_used_bytes, "measured"
    if used is None:
        used, source = max_measured_pre_load_used_bytes(), "estimate: the largest measured GPU's"
    return int(gpu.memory_bytes - used - distributed_init_extra_mib(tp) * MIB), source


def reserve_role(role: str | None, sglang_version: str) -> str | None:
    """The PD role ("prefill", "decode" or None) SGLang's mem_fraction_static rule reserves by: the server's in
    versions after 0.5.5, None (the same rule on every server) up to 0.5.5 (sglang_defaults.PD_ROLE_RESERVE_AFTER)."""
    if role is None or version_tuple(sglang_version) <= PD_ROLE_RESERVE_AFTER:
        return None
    return role


def draft_tokens(speculative: SpeculativeSpec) -> int:
    """The verify width simperf's launch command passes as --speculative-num-draft-tokens (plan/commands.py): the
    given num_draft_tokens, else num_steps + 1 for a chain (eagle_topk 1), num_steps x eagle_topk + 1 for a tree."""
    sp = speculative
    return sp.num_draft_tokens or (
        sp.num_steps + 1 if sp.eagle_topk == 1 else sp.num_steps * sp.eagle_topk + 1
    )


def pd_decode_activation_tokens(s: ServingSpec, gpu: GpuSpec) -> int:
    """The tokens a PD decode server's activation reserve is sized by (0.5.17 server_args.py,
    _handle_gpu_memory_settings, disaggregation_mode "decode"): running requests x draft tokens, where running
    requests are --max-running-requests as given (the whole server's, before DP splits it; the speculative hook's
    48 comes later), else the decode CUDA graph's max_bs (--cuda-graph-max-bs or the GPU-memory default, not yet
    capped by anything), and draft tokens are --speculative-num-draft-tokens (which simperf's launch command always
    passes with a draft; 1 without one). activation_reserve_mb applies the 2048-token minimum."""
    running = s.max_running_requests or s.cuda_graph_max_bs or default_cuda_graph_max_bs(gpu, s.tp)
    return running * (draft_tokens(s.speculative) if s.speculative is not None else 1)


def _activation_tokens(s: ServingSpec, gpu: GpuSpec, chunk: int, role: str | None) -> int:
    """What the reservation sizes activations by: a PD decode server's running requests (where its version
    reserves by role), else the whole chunk (before DP splits it), or max_prefill_tokens without one."""
    if role == "decode":
        return pd_decode_activation_tokens(s, gpu)
    full_chunk = chunk * s.dp_attention
    return full_chunk if full_chunk > 0 else s.max_prefill_tokens


def auto_load_balance_method(role: str | None) -> str:
    """SGLang's load_balance_method "auto" (0.5.17 server_args.py, _handle_load_balance_method): follow_bootstrap_room
    on a PD prefill server (role "prefill"), round_robin on a PD decode server and on a server of its own."""
    return FOLLOW_BOOTSTRAP_ROOM if role == "prefill" else "round_robin"


def default_load_balance_method(s: ServingSpec, role: str | None) -> str:
    """The DP controller's load_balance_method: the one given, else SGLang's "auto" (0.5.17 server_args.py,
    _handle_load_balance_method): follow_bootstrap_room on a PD prefill server, round_robin on any other. Under
    follow_bootstrap_room a request goes to rank bootstrap_room % DP (managers/data_parallel_controller.py,
    follow_bootstrap_room_scheduler), and the room is a uniformly random 63-bit integer drawn per request by the
    PD router (sgl-router src/routers/http/pd_types.rs, generate_room_id: a random u64 masked to i64::MAX; the
    Python mini load balancer drew random.randint(0, 2**63 - 1)): each request lands on a uniformly random rank,
    independently of the others (sim/engine.py draws it). 0.5.17's rule for every version simperf models (older
    releases' round_robin followed the room on both PD sides; the release that changed it is not checked)."""
    if "load_balance_method" in s.model_fields_set:
        return s.load_balance_method
    return auto_load_balance_method(role)


def _default_mem_fraction(
    s: ServingSpec,
    gpu: GpuSpec,
    mla: bool,
    chunk: int,
    max_bs: int,
    decode_graph: bool,
    prefill_graph: bool,
    role: str | None = None,
) -> float:
    """SGLang's mem_fraction_static for serving arguments `s` (docs/serving-model.md §1.12): activations sized by
    the whole chunk (before DP splits it), or by max_prefill_tokens without one; the prefill graph's reserve only
    where the graph is on. role: the server's PD role as `reserve_role` gives it; a PD prefill server then reserves
    no decode graph, a PD decode server sizes its activations by its running requests and reserves no prefill graph
    (its prefill graph is off: 0.5.17 server_args.py, _apply_cuda_graph_disaggregation_roles)."""
    full_chunk = chunk * s.dp_attention
    prefill_graph_mb = (
        prefill_graph_reserve_mb(mla, full_chunk, s.max_total_tokens)
        if prefill_graph and role != "decode"
        else 0.0
    )
    return default_mem_fraction_static(
        gpu,
        _activation_tokens(s, gpu, chunk, role),
        s.tp,
        max_bs,
        s.dp_attention,
        decode_graph=decode_graph,
        prefill_graph_mb=prefill_graph_mb,
        speculative_mb=speculative_reserve_mb(
            s.speculative.algorithm if s.speculative else None, s.sglang_version
        ),
        role=role,
    )


# SGLang's request-to-token table: int32 rows of context_len + 4 token slots, one per running request and one spare
# (SGLang 0.5.17 srt/mem_cache/memory_pool.py ReqToTokenPool, sized in kv_cache_configurator.py)
REQ_TO_TOKEN_EXTRA_SLOTS = 4
REQ_TO_TOKEN_BYTES = 4


def _check_request_pool(max_running: int, context_len: int, gpu: GpuSpec, field: str) -> None:
    """A max_running_requests whose request-to-token table alone outgrows the GPU: SGLang fails to allocate it at
    start-up, and simperf's per-request state would run the host out of memory (1e9 did). One line, the field."""
    table_bytes = (max_running + 1) * (context_len + REQ_TO_TOKEN_EXTRA_SLOTS) * REQ_TO_TOKEN_BYTES
    if table_bytes > gpu.memory_bytes:
        raise ValueError(
            f"{field}.max_running_requests: {max_running} requests per rank need a {table_bytes / 1024**3:,.0f} GiB "
            f"request-to-token table ({context_len} + {REQ_TO_TOKEN_EXTRA_SLOTS} int32 slots each, SGLang's "
            f"ReqToTokenPool), more than a {gpu.key}'s {gpu.memory_bytes / 1024**3:.0f} GiB; give fewer"
        )


def _nothing_left_message(
    s: ServingSpec,
    gpu: GpuSpec,
    field: str,
    chunk: int,
    max_bs: int,
    decode_graph: bool,
    mem_fraction: float,
    role: str | None = None,
) -> str:
    """Why SGLang's reservation rule leaves no static memory, naming the setting that reserves the most. The bound
    is physical: what the rule reserves (activations and CUDA graphs) cannot exceed the GPU's memory; SGLang itself
    takes such a cuda_graph_max_bs or chunk and computes a negative mem_fraction_static (it has no upper bound).
    role: as `_default_mem_fraction`'s."""
    gib = gpu.memory_bytes / 1024**3
    graph_mb = decode_graph_reserve_mb(max_bs, s.dp_attention, decode_graph, role)
    activation_mb = activation_reserve_mb(_activation_tokens(s, gpu, chunk, role))
    if graph_mb >= activation_mb:
        name, value = "cuda_graph_max_bs", s.cuda_graph_max_bs
        why = f"{GRAPH_RESERVE_MB_PER_BS} MB per decode CUDA-graph batch size, {graph_mb / 1024:.1f} GiB here"
    elif role == "decode":
        # a PD decode server sizes activations by its running requests (times the draft's tokens)
        given = s.max_running_requests is not None
        name = "max_running_requests" if given else "cuda_graph_max_bs"
        value = s.max_running_requests if given else s.cuda_graph_max_bs
        why = (
            f"{RESERVED_MB_PER_ACTIVATION_TOKEN} MB of activations per running request and draft token on a PD "
            f"decode server, {activation_mb / 1024:.1f} GiB here"
        )
    else:
        name = "chunked_prefill_size" if chunk > 0 else "max_prefill_tokens"
        value = s.chunked_prefill_size if chunk > 0 else s.max_prefill_tokens
        why = f"{RESERVED_MB_PER_ACTIVATION_TOKEN} MB of activations per prefill token, {activation_mb / 1024:.1f} GiB here"
    shown = f"{value}" if value is not None else f"SGLang's default for a {gpu.key}"
    return (
        f"{field}.{name}: {shown} leaves no memory for weights and KV cache: SGLang's mem_fraction_static rule "
        f"(srt/server_args.py, _handle_gpu_memory_settings) reserves {why}, more than a {gpu.key}'s {gib:.1f} GiB "
        f"(mem_fraction_static would be {mem_fraction}); give a smaller {name}, or {field}.mem_fraction_static"
    )


def _check_pool_fits(max_total_tokens: int, kv_bytes: float, gpu: GpuSpec, field: str) -> None:
    """A given KV pool must fit the GPU: 10^9 tokens was simulated as if a rank could hold them."""
    need = max_total_tokens * kv_bytes
    if need > gpu.memory_bytes:
        raise ValueError(
            f"{field}.max_total_tokens: {max_total_tokens:,} tokens x {kv_bytes:,.0f} B of KV per token need "
            f"{need / 1e9:,.1f} GB per GPU; a {gpu.key} has {gpu.memory_bytes / 1e9:.1f} GB (give the pool size "
            "from the server's startup log, max_total_num_tokens)"
        )


def _check_page_size(s: ServingSpec, arch: ModelArch, prefill: str, decode: str, field: str) -> None:
    """A given page_size SGLang would change at startup (it only logs a warning): simperf priced the page size
    given while the server runs another. DSA models always run 64 (0.5.17 arg_groups/overrides.py, the DeepSeek
    DSA override); FlashMLA, cutlass_mla, trtllm_mla and trtllm_mha snap to the sizes they support
    (_mla_backend_page_constraints)."""
    if s.page_size is None:
        return
    forced = capabilities.family(arch.family).page_size
    if forced is not None and s.page_size != forced:
        raise ValueError(
            f"{field}.page_size: {s.page_size}: SGLang runs {arch.name} with page_size {forced} whatever is given; "
            f"give {forced} or leave page_size out"
        )
    for name in sorted(b for b in {s.attention_backend, decode, prefill} if b is not None):
        caps = capabilities.BACKENDS.get(name)
        if caps is None or caps.page_sizes is None or s.page_size in caps.page_sizes:
            continue
        if name == prefill and name not in (s.attention_backend, decode) and not caps.page_rule_on_prefill:
            continue
        allowed = " or ".join(str(p) for p in caps.page_sizes)
        raise ValueError(
            f"{field}.page_size: {s.page_size}: SGLang runs the {name} attention backend with page_size {allowed} "
            f"and changes other values at startup; give {allowed} or leave page_size out"
        )


# backends that draft a tree (eagle_topk > 1) over pages longer than one token: 0.5.17 arg_groups/speculative_hook.py,
# _PAGE_TREE_SPEC_BACKENDS (triton too, which simperf does not model)
PAGE_TREE_SPEC_BACKENDS = ("flashinfer", "fa3")


def _check_draft_tree(
    s: ServingSpec, arch: ModelArch, prefill: str, decode: str, page_size: int, field: str
) -> None:
    """SGLang 0.5.17 (arg_groups/speculative_hook.py) refuses to start a draft tree (eagle_topk > 1) on trtllm_mha,
    and with page_size > 1 on any attention backend but flashinfer, fa3 and triton; simperf priced both."""
    sp = s.speculative
    if sp is None or sp.eagle_topk == 1:
        return
    where = f"{field}.speculative.eagle_topk: {sp.eagle_topk} (a draft tree)"
    if arch.attention != "dsa" and "trtllm" in (s.attention_backend, prefill, decode):
        raise ValueError(
            f"{where}: SGLang's trtllm_mha backend drafts with eagle_topk 1 only; use eagle_topk 1"
        )
    backend = s.attention_backend or decode
    if page_size > 1 and (arch.attention == "dsa" or backend not in PAGE_TREE_SPEC_BACKENDS):
        name = "the DSA backends" if arch.attention == "dsa" else backend
        raise ValueError(
            f"{where} with page_size {page_size} runs only on the flashinfer and fa3 attention backends; SGLang "
            f"refuses {name} at startup; use eagle_topk 1 or attention_backend fa3 or flashinfer"
        )


def _check_speculative_model(speculative: SpeculativeSpec | None, arch: ModelArch, field: str) -> None:
    """MTP drafts with the checkpoint's own next-token layers (num_nextn_predict_layers in its config): SGLang
    0.5.17 turns --speculative-algorithm NEXTN into EAGLE with the target checkpoint as its draft, which only the
    models that ship those layers have. On any other model mtp was priced as an EAGLE draft of one decoder layer
    that the checkpoint does not have (and mtp is the algorithm's default)."""
    if speculative is None or speculative.algorithm != "mtp" or arch.num_nextn_predict_layers > 0:
        return
    raise ValueError(
        f"{field}.speculative.algorithm: mtp (the default) drafts with the checkpoint's own MTP layers, and "
        f"{arch.name} has none (num_nextn_predict_layers: 0); use eagle or eagle3 with its draft model, or drop "
        f"{field}.speculative"
    )


def resolve(
    scenario: Scenario,
    field: str = "serving",
    disaggregated: bool | None = None,
    pd_decode: bool | None = None,
) -> tuple[ResolvedServing, ModelArch, GpuSpec]:
    """field: where the server arguments sit in the scenario file, for error messages (a PD pool's are under
    disaggregation.prefill / .decode). disaggregated: the server is one side of a PD pair (a PD prefill server keeps
    its prefill CUDA graph and drops the decode one; a PD decode server the reverse: 0.5.17 server_args.py,
    _apply_cuda_graph_disaggregation_roles); by default, when its arguments sit under disaggregation. pd_decode: the
    server is a PD decode server (it runs no chunked prefill); by default, when its arguments sit under
    disaggregation.decode."""
    s = scenario.serving
    gpu = get_gpu(scenario.hardware.gpu)
    arch = load_arch(scenario.model.name, scenario.model.config)
    attn = _attention_setup(scenario, arch, gpu, field)
    _check_stream_interval(s, arch, field)
    notes: list[str] = []
    decode_server = field.startswith("disaggregation.decode") if pd_decode is None else pd_decode
    chunk = _chunk_per_rank(s, gpu, attn.page_size, decode_server, field, notes)
    pd = field.startswith("disaggregation") if disaggregated is None else disaggregated
    role = ("decode" if decode_server else "prefill") if pd else None  # --disaggregation-mode
    capacity = _capacity(s, arch, gpu, attn, chunk, role, field, notes)
    init_ratio, min_ratio = _new_token_ratios(s)
    balance = _load_balance_method_noted(s, role, notes)
    if capacity.eager_reason is not None:
        notes.append(f"extends run eagerly, without SGLang's prefill CUDA graph ({capacity.eager_reason})")

    resolved = ResolvedServing(
        layout=attn.layout,
        gpu=gpu.key,
        weight_dtype=attn.weight_dtype,
        kv_dtype=attn.kv_dtype,
        page_size=attn.page_size,
        prefill_backend=attn.prefill_backend,
        decode_backend=attn.decode_backend,
        chunked_prefill_size=chunk,
        max_prefill_tokens=s.max_prefill_tokens,
        max_running_requests=capacity.max_running_requests,
        max_total_tokens=capacity.max_total_tokens,
        cuda_graph_max_bs=capacity.cuda_graph_max_bs,
        cuda_graph_bs=capacity.cuda_graph_bs,
        overlap_schedule=not s.disable_overlap_schedule,
        # a PD decode server has no prefill chunk to mix into (pd.DECODE_UNREAD; a PD fleet's decode group may share
        # the scenario's serving with its prefill groups, where the setting does apply)
        enable_mixed_chunk=s.enable_mixed_chunk and not decode_server,
        enable_metrics=s.enable_metrics,
        incremental_streaming_output=s.incremental_streaming_output,
        stream_interval=s.stream_interval,
        schedule_policy=s.schedule_policy,
        init_new_token_ratio=init_ratio,
        min_new_token_ratio=min_ratio,
        new_token_ratio_decay=(init_ratio - min_ratio) / NEW_TOKEN_RATIO_DECAY_STEPS,
        context_len=arch.context_len,
        speculative=_spec_settings(s),
        sglang_version=s.sglang_version,
        disable_radix_cache=s.disable_radix_cache,
        prefill_cuda_graph=capacity.eager_reason is None,
        dsa_dense_prefill_threshold=s.dsa_prefill_dense_attn_kv_len_threshold,
        load_balance_method=balance,
        notes=tuple(notes),
    )
    return resolved, arch, gpu


@dataclass(frozen=True)
class _AttentionSetup:
    """What the model settings, dtypes, attention backends and page size resolve to, before any memory sizing."""

    layout: ParallelLayout
    weight_dtype: str
    kv_dtype: str
    prefill_backend: str
    decode_backend: str
    page_size: int


def _attention_setup(scenario: Scenario, arch: ModelArch, gpu: GpuSpec, field: str) -> _AttentionSetup:
    """The model settings checked, then the KV dtype, the attention backends and the page size (SGLang's defaults
    where not given), each checked against the model and the GPU in that order."""
    s = scenario.serving
    weight_dtype = _check_model_settings(scenario, arch, field)
    layout = ParallelLayout(tp=s.tp, dp_attention=s.dp_attention, ep=s.ep)
    kv_dtype = (
        s.kv_cache_dtype if s.kv_cache_dtype != "auto" else capabilities.auto_kv_dtype(arch.family, gpu.sm)
    )

    auto_prefill, auto_decode = default_backends(arch, gpu, kv_dtype, s)
    prefill_backend = s.prefill_attention_backend or s.attention_backend or auto_prefill
    decode_backend = s.decode_attention_backend or s.attention_backend or auto_decode
    check_backends(arch, gpu, prefill_backend, decode_backend, kv_dtype, field)
    _check_page_size(s, arch, prefill_backend, decode_backend, field)
    page_size = s.page_size or default_page_size(arch, prefill_backend, decode_backend, s.attention_backend)
    _check_draft_tree(s, arch, prefill_backend, decode_backend, page_size, field)
    if page_size > arch.context_len:
        # a page (tokens, not bytes) longer than any request: each request took a whole page and the run ended
        # with every request rejected, an error that named no setting
        raise ValueError(
            f"{field}.page_size: {page_size} tokens per page is more than {arch.name}'s context length "
            f"({arch.context_len:,} tokens); a page size counts tokens (SGLang's default for this backend: "
            f"{default_page_size(arch, prefill_backend, decode_backend, s.attention_backend)})"
        )
    return _AttentionSetup(layout, weight_dtype, kv_dtype, prefill_backend, decode_backend, page_size)


def _check_stream_interval(s: ServingSpec, arch: ModelArch, field: str) -> None:
    """A stream interval longer than the context length is an error that names the setting."""
    if s.stream_interval > arch.context_len:
        # the simulator keeps a slot per token of the interval: 10**12 ended in "out of memory ... lower
        # workload.num_prompts", naming the wrong field; past the context length no request streams before its end
        raise ValueError(
            f"{field}.stream_interval: {s.stream_interval:,} tokens between streamed chunks is more than "
            f"{arch.name}'s context length ({arch.context_len:,} tokens); give at most that (every request then "
            "streams its output in one chunk at its end)"
        )


@dataclass(frozen=True)
class _Capacity:
    """The KV pool, the running-request cap and the CUDA graphs sized for one server."""

    max_total_tokens: int
    max_running_requests: int
    cuda_graph_max_bs: int  # 0 with CUDA graphs off
    cuda_graph_bs: tuple[int, ...]
    eager_reason: str | None  # why extends run without the prefill CUDA graph; None where they use it


def _capacity(
    s: ServingSpec,
    arch: ModelArch,
    gpu: GpuSpec,
    attn: _AttentionSetup,
    chunk: int,
    role: str | None,
    field: str,
    notes: list[str],
) -> _Capacity:
    """mem_fraction_static (SGLang's reservation rule where not given), then the KV pool it leaves, the running
    requests that pool takes, and the decode CUDA graph buckets capped by them."""
    graphs_on = not s.disable_cuda_graph
    # the decode graph's max_bs as 0.5.17 server_args.py, _handle_gpu_memory_settings, leaves it when it computes
    # mem_fraction_static (reserve_for_graph_mb: 2 MB per batch, the DP-attention padding terms): --cuda-graph-max-bs
    # or the GPU-memory default, not capped by --max-running-requests (nothing in server_args.py caps it; only the
    # runtime's capture list is, by the request pool: model_executor/runner/base_cuda_graph_runner.py,
    # get_batch_sizes_to_capture), so the reserve takes it uncapped; the buckets below take the cap
    max_bs = s.cuda_graph_max_bs or default_cuda_graph_max_bs(gpu, s.tp)

    mla = arch.is_mla
    # 0.5.17 server_args.py: _disable_breakable_cudagraph_if_incompatible (MLA non-DSA) and
    # _apply_cuda_graph_disaggregation_roles (PD decode); DP attention and a PD prefill server keep the graph
    # (versions before sglang_defaults.BREAKABLE_PREFILL_RULE_FROM keep the earlier rule)
    eager_reason = prefill_cuda_graph_off_reason(
        mla_non_dsa=mla and arch.attention != "dsa",
        pd_role=role,
        disable_cuda_graph=s.disable_cuda_graph,
        dp_attention=s.dp_attention,
        sglang_version=s.sglang_version,
    )
    mem_fraction = s.mem_fraction_static
    if mem_fraction is None:
        graphs = (max_bs, graphs_on, eager_reason is None)
        mem_fraction = _default_mem_fraction_noted(s, gpu, mla, chunk, graphs, role, field, notes)

    kv_bytes = arch.kv_bytes_per_token_per_rank(attn.layout, attn.kv_dtype, attn.decode_backend)
    pool = _PoolInputs(attn.layout, attn.weight_dtype, kv_bytes, attn.page_size, mem_fraction)
    max_total_tokens = _kv_pool_tokens(s, arch, gpu, pool, field, notes)
    max_running = _max_running_requests(s, arch, gpu, max_total_tokens, field)
    max_bs = min(max_bs, max_running)
    buckets = decode_graph_buckets(max_bs, s.speculative is not None) if graphs_on else ()
    return _Capacity(max_total_tokens, max_running, max_bs if graphs_on else 0, buckets, eager_reason)


def _new_token_ratios(s: ServingSpec) -> tuple[float, float]:
    """SGLang's initial and minimum new-token ratios (the share of a running request's remaining max_new_tokens the
    scheduler reserves), the initial one scaled by DP attention's conservativeness."""
    dp_factor = DP_ATTENTION_CONSERVATIVENESS if s.dp_attention > 1 else 1.0
    init_ratio = min(INIT_NEW_TOKEN_RATIO * s.schedule_conservativeness * dp_factor, 1.0)
    return init_ratio, init_ratio * MIN_NEW_TOKEN_RATIO_FACTOR


def _load_balance_method_noted(s: ServingSpec, role: str | None, notes: list[str]) -> str:
    """The DP load-balance method this server runs, with a note where SGLang's default replaces the given one."""
    balance = default_load_balance_method(s, role)
    if balance != s.load_balance_method and s.dp_attention > 1:
        notes.append(
            f"load_balance_method={balance} by SGLang's default for a PD prefill server: each request goes to the DP "
            "rank its random bootstrap room names, modulo the ranks (uniformly at random)"
        )
    return balance


def _default_mem_fraction_noted(
    s: ServingSpec,
    gpu: GpuSpec,
    mla: bool,
    chunk: int,
    graphs: tuple[int, bool, bool],
    role: str | None,
    field: str,
    notes: list[str],
) -> float:
    """SGLang's default mem_fraction_static for this server (graphs: decode max_bs, decode graphs on, prefill
    graph on), with its note; an error where it leaves nothing and no pool size is given."""
    max_bs, graphs_on, prefill_graph = graphs
    by_role = reserve_role(role, s.sglang_version)
    mem_fraction = _default_mem_fraction(s, gpu, mla, chunk, max_bs, graphs_on, prefill_graph, by_role)
    # only where the pool comes from this fraction: a given max_total_tokens uses it in no number (unchanged)
    if mem_fraction <= 0 and s.max_total_tokens is None:
        raise ValueError(
            _nothing_left_message(s, gpu, field, chunk, max_bs, graphs_on, mem_fraction, by_role)
        )
    how = {
        None: "",
        "prefill": " for a PD prefill server (no decode CUDA graph)",
        "decode": f" for a PD decode server (activations for max({pd_decode_activation_tokens(s, gpu)}, "
        f"{MIN_ACTIVATION_TOKENS}) tokens: running requests x draft tokens; no prefill CUDA graph)",
    }[by_role]
    notes.append(f"mem_fraction_static={mem_fraction} by SGLang's reservation rule{how}")
    return mem_fraction


def _check_model_settings(scenario: Scenario, arch: ModelArch, field: str) -> str:
    """The layout, DSA-only and speculative settings checked against the model; returns the weight dtype."""
    s = scenario.serving
    check_layout(arch, s.tp, s.dp_attention, s.ep, field)
    if "dsa_prefill_dense_attn_kv_len_threshold" in s.model_fields_set and arch.attention != "dsa":
        raise ValueError(
            f"{field}.dsa_prefill_dense_attn_kv_len_threshold: applies to DSA models (DeepSeek-V3.2); "
            f"{arch.name} has {arch.attention} attention"
        )
    _check_speculative_model(s.speculative, arch, field)
    if scenario.model.weight_dtype == "bf16" and arch.default_weight_dtype == "fp8":
        # SGLang 0.5.17 ModelConfig._verify_quantization takes the quantisation from the checkpoint's
        # quantization_config (another --quantization is an error or a requantisation, never bf16; --dtype sets the
        # activations): the fp8 checkpoint is served as fp8, and pricing bf16 weights answered another deployment
        raise ValueError(
            f"model.weight_dtype: bf16, but {arch.name}'s checkpoint stores fp8 weights (its config's "
            "quantization_config) and SGLang serves them as fp8 whatever --dtype says; leave weight_dtype out, or "
            "for a bf16 what-if give model.config: the config.json of a bf16 checkpoint (one without a "
            "quantization_config)"
        )
    return scenario.model.weight_dtype or arch.default_weight_dtype


def _chunk_per_rank(
    s: ServingSpec, gpu: GpuSpec, page_size: int, decode_server: bool, field: str, notes: list[str]
) -> int:
    """The chunked-prefill size per DP rank (SGLang's GPU-memory default where not given)."""
    if s.chunked_prefill_size is None:
        chunk = default_chunked_prefill_size(gpu)
        notes.append(f"chunked_prefill_size={chunk} by SGLang's GPU-memory rule")
    else:
        chunk = s.chunked_prefill_size
    if chunk > 0 and s.dp_attention > 1:
        chunk = chunk // s.dp_attention  # docs/serving-model.md §1.5: C is split across DP ranks
    if chunk > 0 and chunk % page_size != 0 and not decode_server:
        # 0.5.17 server_args.py, check_server_args: `chunked_prefill_size % page_size == 0` (after the DP split,
        # skipped on a PD decode server) or the server does not start; simperf predicted chunks that end mid-page
        per_rank = f" per DP rank ({s.dp_attention} ranks)" if s.dp_attention > 1 else ""
        raise ValueError(
            f"{field}.chunked_prefill_size: {chunk} tokens{per_rank} is not a multiple of the page size "
            f"({page_size}), which SGLang refuses at startup; give a multiple of {page_size * s.dp_attention}"
        )
    return chunk


@dataclass(frozen=True)
class _PoolInputs:
    layout: ParallelLayout
    weight_dtype: str
    kv_bytes: int  # per token per rank
    page_size: int
    mem_fraction: float | None


def _kv_pool_tokens(
    s: ServingSpec, arch: ModelArch, gpu: GpuSpec, pool: _PoolInputs, field: str, notes: list[str]
) -> int:
    """KV pool tokens per rank: the given max_total_tokens, or (memory before the weights x mem_fraction_static -
    the weights) / KV bytes per token, whole pages."""
    if s.max_total_tokens is not None:
        _check_pool_fits(s.max_total_tokens, pool.kv_bytes, gpu, field)
        notes.append("max_total_tokens given by the user (server log)")
        tokens = s.max_total_tokens
    else:
        fraction = pool.mem_fraction
        assert fraction is not None  # resolve computes it whenever the pool is not given
        pre_load, pre_load_source = memory_before_weights(gpu, s.tp)
        weights = arch.weight_bytes_per_rank(pool.layout, pool.weight_dtype)
        draft_weights, kv_bytes, draft_note = _draft_memory(s, arch, pool)
        weights += draft_weights
        rest = pre_load * fraction - weights
        if rest <= 0:
            raise ValueError(
                f"{arch.name} needs {weights / 1e9:.1f} GB of weights per GPU with tp={s.tp}, ep={s.ep}, "
                f"dp_attention={s.dp_attention}; a {gpu.key} leaves {pre_load * fraction / 1e9:.1f} GB "
                f"at mem_fraction_static={fraction}: it does not fit"
            )
        tokens = int(rest // kv_bytes) // pool.page_size * pool.page_size
        notes.append(
            f"KV pool {tokens} tokens/rank = ({pre_load / 1e9:.2f} GB free before the weights "
            f"({pre_load_source}) x {fraction} - weights {weights / 1e9:.2f} GB{draft_note}) / {kv_bytes} B per "
            f"token (estimated; give serving.max_total_tokens from the server log to override)"
        )
    if tokens < pool.page_size * 2:
        raise ValueError(f"KV pool of {tokens} tokens per rank is too small to serve anything")
    return tokens


def _draft_memory(s: ServingSpec, arch: ModelArch, pool: _PoolInputs) -> tuple[int, int, str]:
    """(draft weight bytes, KV bytes per token of target and draft together, note) of a speculative server.

    SGLang 0.5.17 loads the draft model before it sizes the KV pool, and gives the draft its own pool of as many
    tokens as the target's, one layer deep (server log of groundtruth/h200/llama-3.1-8b-eagle-chain: draft load
    "mem usage=2.43 GB", then two pools of 859,077 tokens, 52.43 and 1.64 GB of K). The draft is loaded whole
    before it takes the target's embedding and LM head (speculative/eagle_worker_v2.py, set_embed_and_head), so
    its weights are one decoder layer of the target's shape with its own embedding, LM head and the [embedding,
    hidden] projection: 2.61 GB for Llama-3.1-8B's EAGLE draft, the 2.43 GiB logged."""
    if s.speculative is None:
        return 0, pool.kv_bytes, ""
    draft = arch.speculative_draft()
    eh_proj = 2 * arch.hidden_size * arch.hidden_size * 2  # bf16, replicated on every rank
    weights = draft.weight_bytes_per_rank(pool.layout, pool.weight_dtype) + eh_proj
    kv_bytes = -(-pool.kv_bytes * (arch.num_layers + 1) // arch.num_layers)
    return (
        weights,
        kv_bytes,
        f" incl. the draft's {weights / 1e9:.2f} GB, its KV layer in the bytes per token",
    )


def _max_running_requests(
    s: ServingSpec, arch: ModelArch, gpu: GpuSpec, max_total_tokens: int, field: str
) -> int:
    """Running requests per DP rank: the given cap, the speculative default, or SGLang's pool-size rule."""
    if s.max_running_requests is not None:
        max_running = max(1, s.max_running_requests // s.dp_attention)
        _check_request_pool(max_running, arch.context_len, gpu, field)
        return max_running
    if s.speculative is not None:
        max_running = SPECULATIVE_MAX_RUNNING_REQUESTS
    else:
        by_context = max_total_tokens / arch.context_len * MAX_RUNNING_REQUESTS_PER_CONTEXT
        clamped = min(max(by_context, MAX_RUNNING_REQUESTS_FLOOR), MAX_RUNNING_REQUESTS_CEIL)
        max_running = int(min(clamped, max_total_tokens // 2))
    _check_default_request_pool(max_running, arch, gpu, field)
    return max_running


def _check_default_request_pool(max_running: int, arch: ModelArch, gpu: GpuSpec, field: str) -> None:
    """SGLang's default running requests against the model's context: a config.json of max_position_embeddings 1e15
    was predicted as served, while SGLang's request-to-token table for it cannot be allocated."""
    row_bytes = (arch.context_len + REQ_TO_TOKEN_EXTRA_SLOTS) * REQ_TO_TOKEN_BYTES
    table_bytes = (max_running + 1) * row_bytes
    if table_bytes <= gpu.memory_bytes:
        return
    fit = gpu.memory_bytes // row_bytes - 1
    remedy = (
        f"give {field}.max_running_requests of at most {fit}"
        if fit >= 1
        else "no request fits: the model's context length (max_position_embeddings) is too long for one GPU"
    )
    raise ValueError(
        f"model: {arch.name}'s context length of {arch.context_len:,} tokens needs a {table_bytes / 1024**3:,.0f} GiB "
        f"request-to-token table for SGLang's default {max_running} running requests per rank ({arch.context_len} + "
        f"{REQ_TO_TOKEN_EXTRA_SLOTS} int32 slots each, ReqToTokenPool), more than a {gpu.key}'s "
        f"{gpu.memory_bytes / 1024**3:.0f} GiB; {remedy}"
    )


def _spec_settings(s: ServingSpec) -> SpecSettings | None:
    if s.speculative is None:
        return None
    sp = s.speculative
    return SpecSettings(
        sp.algorithm,
        sp.num_steps,
        sp.eagle_topk,
        draft_tokens(sp),
        sp.accept_length.mean if sp.accept_length else None,
        # the spread across requests: it was accepted here and dropped, so a min/max changed nothing
        sp.accept_length.min if sp.accept_length else None,
        sp.accept_length.max if sp.accept_length else None,
    )
