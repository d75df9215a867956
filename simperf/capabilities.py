"""What SGLang runs where: one table of attention backends and one of model families, plus the scheduling
policies a scenario may name.

Everything that depends on *which* backend or family a scenario uses reads these rows: scenario validation
(`scenario/backends.py`), SGLang's defaults (`scenario/resolve.py`), the model zoo's parser (`models/zoo.py`), the op
lists and their table keys (`models/kernels.py`, `models/ops.py`), the cost model's fast paths
(`costmodel/step.py`), `simperf backends` and the planner. Adding a backend or a family is adding a row here
(docs/extending.md says what else, if anything, it needs). Sources: SGLang 0.5.17's `srt/server_args.py`,
`srt/arg_groups/overrides.py` and the attention backends under `srt/layers/attention/`, read for
docs/serving-model.md §1.11, §4.2–4.3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

GpuArch = Literal["hopper", "blackwell"]
AttentionKind = Literal["gqa", "mla", "dsa"]  # the op-list code each kind has (models/ops.py)

# Fields of BackendCaps.family_refusal: field (the scenario key), backend, model, family.
_MLA_ONLY = "{field}: {backend} is an MLA backend; {model} uses {family} attention"
_DSA_ONLY = "{field}: {backend} is a sparse-MLA (NSA/DSA) backend; {model} is not a DSA model"


def gpu_arch(sm: float | int | str) -> GpuArch:
    """The architecture of a GPU by compute capability: SM100 and later are Blackwell (the catalogue has SM90 and
    SM100 parts only)."""
    return "blackwell" if float(sm) >= 10.0 else "hopper"


@dataclass(frozen=True)
class BackendCaps:
    """One value of SGLang's `--attention-backend` (and of `--prefill/--decode-attention-backend`)."""

    name: str
    gpus: frozenset[GpuArch]  # where SGLang runs it
    gpu_refusal: str  # why it is refused elsewhere (after "{field}: {backend} ")
    tables: tuple[str, ...]  # calibration-table backend names that price its kernels, first preferred
    # the model families it serves, by attention kind or by name; None: every family
    attentions: frozenset[AttentionKind] | None = None
    families: frozenset[str] | None = None
    family_refusal: str = ""  # template of the refusal for other families
    tables_on_hopper: tuple[str, ...] | None = None  # `tables` on SM90 when they differ
    # the MHA/GQA ragged-prefill kernel's tables (attn_mha_prefill); None: flashinfer's FA3 as proxy
    mha_prefill_tables: dict[GpuArch, tuple[str, ...]] | None = None
    # the GQA paged-decode kernel's tables (attn_gqa_decode), first preferred; None: flashinfer's decode (the only
    # GQA decode table simperf had before a backend's own kernel was timed), then `tables`
    gqa_decode_tables: tuple[str, ...] | None = None
    page_size: int | None = None  # page size it forces (docs/serving-model.md §1.11)
    # the page sizes SGLang runs it with: a given --page-size outside them is changed at startup (0.5.17
    # arg_groups/overrides.py, _mla_backend_page_constraints: as --attention-backend or --decode-attention-backend,
    # and as --prefill-attention-backend too where page_rule_on_prefill); None: any
    page_sizes: tuple[int, ...] | None = None
    page_rule_on_prefill: bool = False
    kv_dtype: str | None = None  # KV dtype it requires
    kv_dtype_refusal: str = ""
    dsa_fp8_layout: str = "fp8_raw_576"  # how a DSA model's fp8 KV is laid out for it (§4.3)
    # query heads as its DSA kernels run them (§2.1): padded to a multiple per GPU, or to the smallest of sizes
    dsa_head_multiple: dict[GpuArch, int] | None = None
    dsa_head_sizes: tuple[int, ...] | None = None
    # its value of SGLang's --attention-backend (None: chosen only per phase for DSA models), and whether DSA
    # models select it with --nsa-{prefill,decode}-backend
    sglang_flag: str | None = None
    dsa_kernel: bool = False
    sglang: str = ""  # where SGLang defines it (0.5.17 unless said otherwise)

    def serves(self, family_name: str) -> bool:
        if self.families is not None and family_name not in self.families:
            return False
        return self.attentions is None or family(family_name).attention in self.attentions

    def table_backends(self, sm_major: int) -> tuple[str, ...]:
        if self.tables_on_hopper is not None and sm_major == 9:
            return self.tables_on_hopper
        return self.tables


MLA_KINDS: frozenset[AttentionKind] = frozenset({"mla", "dsa"})  # DSA models run MLA with a sparse selection

BACKENDS: dict[str, BackendCaps] = {}


def register_backend(caps: BackendCaps) -> BackendCaps:
    if caps.name in BACKENDS:
        raise ValueError(f"attention backend {caps.name!r} is registered twice")
    BACKENDS[caps.name] = caps
    return caps


for _caps in (
    BackendCaps(
        "fa3",
        frozenset({"hopper"}),
        "(FlashAttention-3) runs on Hopper (SM90) only",
        # sgl-kernel's FA3: its own measured tables (`sgl_fa3`, simperf/calibrate/backends/fa3_sgl.py: GQA decode
        # and extend/prefill) where the GPU has them, else flashinfer's FA3 kernels as its proxy (and for MLA)
        ("sgl_fa3", "flashinfer_fa3"),
        mha_prefill_tables={
            "hopper": ("sgl_fa3", "flashinfer_fa3"),
            "blackwell": ("sgl_fa3", "flashinfer_fa3"),
        },
        gqa_decode_tables=("sgl_fa3", "flashinfer"),
        sglang_flag="fa3",
        dsa_kernel=True,
        sglang="srt/layers/attention/flashattention_backend.py",
    ),
    BackendCaps(
        "flashinfer",
        frozenset({"hopper", "blackwell"}),
        "",
        ("flashinfer_fa2",),
        # its MLA and ragged prefill ask flashinfer for backend="auto": FA3 on SM90, FA2 elsewhere (flashinfer
        # utils.determine_attention_backend)
        tables_on_hopper=("flashinfer_fa3", "flashinfer_fa2"),
        mha_prefill_tables={
            "hopper": ("flashinfer_fa3", "flashinfer_fa2"),
            "blackwell": ("flashinfer_fa2", "flashinfer_fa3"),
        },
        sglang_flag="flashinfer",
        sglang="srt/layers/attention/flashinfer_backend.py, flashinfer_mla_backend.py",
    ),
    BackendCaps(
        "flashmla",
        frozenset({"hopper", "blackwell"}),
        "",
        ("flashmla",),
        attentions=MLA_KINDS,
        family_refusal=_MLA_ONLY,
        page_size=64,
        page_sizes=(64,),
        dsa_fp8_layout="fp8_flashmla_656",
        sglang_flag="flashmla",
        sglang="srt/layers/attention/flashmla_backend.py",
    ),
    BackendCaps(
        "flashmla_sparse",
        frozenset({"hopper", "blackwell"}),
        "",
        ("flashmla_sparse",),
        attentions=frozenset({"dsa"}),
        family_refusal=_DSA_ONLY,
        dsa_fp8_layout="fp8_flashmla_656",
        dsa_head_multiple={"hopper": 64, "blackwell": 128},
        dsa_kernel=True,
        sglang="srt/layers/attention/dsa_backend.py (--nsa-prefill/decode-backend)",
    ),
    BackendCaps(
        "flashmla_kv",
        frozenset({"hopper", "blackwell"}),
        "",
        ("flashmla_kv",),
        attentions=frozenset({"dsa"}),
        family_refusal=_DSA_ONLY,
        kv_dtype="fp8_e4m3",
        kv_dtype_refusal="serving.kv_cache_dtype: flashmla_kv reads the fp8 KV layout; set kv_cache_dtype: fp8_e4m3",
        dsa_fp8_layout="fp8_flashmla_656",
        dsa_head_sizes=(64, 128),
        dsa_kernel=True,
        sglang="srt/layers/attention/dsa_backend.py (--nsa-prefill/decode-backend)",
    ),
    BackendCaps(
        "trtllm_mla",
        frozenset({"blackwell"}),
        "requires a Blackwell GPU (SM100)",
        ("trtllm_mla", "trtllm_gen"),
        attentions=MLA_KINDS,
        family_refusal=_MLA_ONLY,
        mha_prefill_tables={
            "hopper": ("trtllm", "flashinfer_fa3"),
            "blackwell": ("trtllm", "flashinfer_fa3"),
        },
        page_size=64,
        page_sizes=(32, 64),
        sglang_flag="trtllm_mla",
        sglang="srt/layers/attention/trtllm_mla_backend.py",
    ),
    BackendCaps(
        "cutlass_mla",
        frozenset({"blackwell"}),
        "requires a Blackwell GPU (SM100)",
        ("cutlass_mla", "cutlass"),
        attentions=MLA_KINDS,
        family_refusal=_MLA_ONLY,
        page_size=128,
        page_sizes=(128,),
        sglang_flag="cutlass_mla",
        sglang="srt/layers/attention/cutlass_mla_backend.py",
    ),
    BackendCaps(
        "trtllm",
        frozenset({"blackwell"}),
        "requires a Blackwell GPU (SM100)",
        ("trtllm", "trtllm_gen"),
        families=frozenset({"nsa_moe", "dense", "gqa_moe"}),  # every GQA family: SGLang's SM100 default
        family_refusal="{field}: trtllm serves DSA models and dense attention; use trtllm_mla for {model}",
        mha_prefill_tables={
            "hopper": ("trtllm", "flashinfer_fa3"),
            "blackwell": ("trtllm", "flashinfer_fa3"),
        },
        # a page size outside 16-128, the default 1 included, becomes 64 at startup (0.5.17 arg_groups/overrides.py,
        # _mla_backend_page_constraints: "TensorRT-LLM MHA only supports page_size of 16, 32, 64 or 128")
        page_size=64,
        page_sizes=(16, 32, 64, 128),
        page_rule_on_prefill=True,
        sglang_flag="trtllm_mha",
        dsa_kernel=True,
        sglang="srt/layers/attention/trtllm_mha_backend.py; DSA: dsa_backend.py",
    ),
):
    register_backend(_caps)


@dataclass(frozen=True)
class FamilyCaps:
    """A model family: the HF architectures that map to it and what SGLang does differently for it."""

    name: str
    attention: AttentionKind
    moe: bool
    hf_architectures: tuple[str, ...]  # config.json `architectures[0]` values parsed as this family
    default_backends: dict[GpuArch, tuple[str, str]]  # (prefill, decode) SGLang picks when none is given
    # the same with an fp8 KV cache, where that differs (DSA on Hopper)
    default_backends_fp8_kv: dict[GpuArch, tuple[str, str]] = field(default_factory=dict)
    auto_kv_dtype: dict[GpuArch, str] = field(default_factory=dict)  # kv_cache_dtype=auto; default bf16
    page_size: int | None = None  # page size the family forces (§1.11)
    dp_attention: bool = False  # SGLang allows --enable-dp-attention (ServerArgs help, 0.5.17)
    trust_remote_code: bool = False  # its checkpoints need --trust-remote-code
    # the backend SGLang falls back to where speculative decoding rules the default out (keeps_fast_default);
    # None: the default stands
    draft_fallback_backend: str | None = None
    # a Blackwell GPU runs its dense MHA prefill with TRT-LLM's ragged kernel (where a table has it)
    blackwell_mha_prefill_tables: tuple[str, ...] | None = None
    sglang: str = ""

    @property
    def is_mla(self) -> bool:
        return self.attention in ("mla", "dsa")

    @property
    def decode_method(self) -> str:
        """models/ops.py's attention method of a decode step."""
        return {"gqa": "gqa", "mla": "absorb", "dsa": "sparse"}[self.attention]

    @property
    def decode_table(self) -> str:
        """The table its decode attention kernel is looked up in."""
        return {"gqa": "attn_gqa_decode", "mla": "attn_mla_decode", "dsa": "attn_nsa_decode"}[self.attention]

    @property
    def fresh_prefill_method(self) -> str | None:
        """The attention method of a prefill without cached prefix, when it does not depend on its length (a
        cost-model table over the length can then price it); None when it does (DSA's dense/sparse switch)."""
        return {"gqa": "gqa", "mla": "mha", "dsa": None}[self.attention]


FAMILIES: dict[str, FamilyCaps] = {}


def register_family(caps: FamilyCaps) -> FamilyCaps:
    if caps.name in FAMILIES:
        raise ValueError(f"model family {caps.name!r} is registered twice")
    FAMILIES[caps.name] = caps
    return caps


# SGLang 0.5.17's MHA defaults (server_args.py `_get_default_attn_backend`); speculative decoding can move them to
# the family's draft_fallback_backend (keeps_fast_default)
_GQA_DEFAULTS: dict[GpuArch, tuple[str, str]] = {
    "hopper": ("fa3", "fa3"),
    "blackwell": ("trtllm", "trtllm"),
}
for _family in (
    FamilyCaps(
        "dense",
        "gqa",
        False,
        ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"),
        _GQA_DEFAULTS,
        draft_fallback_backend="flashinfer",
        sglang="srt/models/llama.py, qwen2.py, qwen3.py",
    ),
    FamilyCaps(
        "gqa_moe",
        "gqa",
        True,
        ("Qwen3MoeForCausalLM",),
        _GQA_DEFAULTS,
        draft_fallback_backend="flashinfer",
        dp_attention=True,
        sglang="srt/models/qwen3_moe.py",
    ),
    FamilyCaps(
        "mla_moe",
        "mla",
        True,
        # DeepSeek-V2 (e.g. V2-Lite: no q LoRA, 64 experts) runs the same SGLang model file as V3
        ("DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM"),
        {"hopper": ("fa3", "fa3"), "blackwell": ("trtllm_mla", "trtllm_mla")},
        dp_attention=True,
        trust_remote_code=True,
        sglang="srt/models/deepseek_v2.py",
    ),
    FamilyCaps(
        "nsa_moe",
        "dsa",
        True,
        ("DeepseekV32ForCausalLM",),
        {"hopper": ("flashmla_sparse", "fa3"), "blackwell": ("trtllm", "trtllm")},
        default_backends_fp8_kv={"hopper": ("flashmla_kv", "flashmla_kv"), "blackwell": ("trtllm", "trtllm")},
        auto_kv_dtype={"blackwell": "fp8_e4m3"},
        page_size=64,
        dp_attention=True,
        trust_remote_code=True,
        blackwell_mha_prefill_tables=("trtllm", "flashinfer_fa3"),
        sglang="srt/models/deepseek_v2.py, srt/layers/attention/dsa_backend.py (0.5.23 for docs/serving-model.md)",
    ),
):
    register_family(_family)


# SGLang's `--schedule-policy` values that simperf models (0.5.17 srt/server_args.py lists these plus priority
# and routing-key); each is one module under simperf/sim/policy/.
SCHEDULE_POLICIES: tuple[str, ...] = ("fcfs", "lof", "random", "lpm", "dfs-weight")


def backend(name: str) -> BackendCaps:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown attention backend {name!r}; known: {', '.join(BACKENDS)}") from None


def family(name: str) -> FamilyCaps:
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown model family {name!r}; known: {', '.join(FAMILIES)}") from None


def family_of_architecture(hf_architecture: str) -> FamilyCaps | None:
    for caps in FAMILIES.values():
        if hf_architecture in caps.hf_architectures:
            return caps
    return None


def keeps_fast_default(
    arch: GpuArch, eagle_topk: int | None, speculative: bool, page_size: int | None
) -> bool:
    """Whether SGLang 0.5.17 keeps an MHA model's fast default backend (fa3 on Hopper, trtllm_mha on Blackwell:
    server_args.py `_get_default_attn_backend`, with utils/common.py `is_no_spec_infer_or_topk_one`): not for a
    draft tree (eagle_topk > 1) or a chain over pages longer than one token, and on Blackwell not where
    speculative decoding is on without an explicit eagle_topk. eagle_topk: as given by the user (None: not given)."""
    topk_one = eagle_topk is None or (eagle_topk == 1 and page_size in (None, 1))
    if arch == "hopper":
        return topk_one
    return topk_one and (not speculative or eagle_topk is not None)


def default_backends(
    family_name: str,
    sm: float | int | str,
    kv_dtype: str,
    eagle_topk: int | None = None,
    speculative: bool = False,
    page_size: int | None = None,
) -> tuple[str, str]:
    """(prefill, decode) attention backends SGLang picks when none is given (docs/serving-model.md §4.1.1, §4.2,
    §4.3). The speculative settings (eagle_topk as the user gave it, None if not) move a family with a
    `draft_fallback_backend` off its default where SGLang does."""
    caps = family(family_name)
    arch = gpu_arch(sm)
    if kv_dtype == "fp8_e4m3" and arch in caps.default_backends_fp8_kv:
        return caps.default_backends_fp8_kv[arch]
    fallback = caps.draft_fallback_backend
    if fallback is not None and not keeps_fast_default(arch, eagle_topk, speculative, page_size):
        return fallback, fallback
    return caps.default_backends[arch]


def default_page_size(family_name: str, prefill: str, decode: str, attention: str | None = None) -> int:
    """The family's page size if it forces one, else the largest the backends force, else 1 (§1.11). `attention`:
    --attention-backend where both per-phase backends are given too: SGLang 0.5.17 still applies its page rule
    (arg_groups/overrides.py, _mla_backend_page_constraints reads attention_backend first)."""
    forced = family(family_name).page_size
    if forced is not None:
        return forced
    named = (prefill, decode) if attention is None else (prefill, decode, attention)
    sizes = [BACKENDS[b].page_size for b in named if b in BACKENDS and BACKENDS[b].page_size]
    return max(sizes, default=1)


def auto_kv_dtype(family_name: str, sm: float | int | str) -> str:
    return family(family_name).auto_kv_dtype.get(gpu_arch(sm), "bf16")


def gqa_decode_tables(backend_name: str, sm_major: int) -> tuple[str, ...]:
    """Table backends of the GQA paged-decode kernel a decode backend runs, first preferred."""
    caps = BACKENDS.get(backend_name)
    if caps is not None and caps.gqa_decode_tables is not None:
        return caps.gqa_decode_tables
    return ("flashinfer", *(caps.table_backends(sm_major) if caps is not None else (backend_name,)))


def mha_prefill_tables(backend_name: str, family_name: str, sm_major: int) -> tuple[str, ...]:
    """Table backends of the MHA/GQA ragged prefill kernel a prefill backend runs."""
    caps = BACKENDS.get(backend_name)
    if caps is not None and caps.mha_prefill_tables is not None:
        return caps.mha_prefill_tables["hopper" if sm_major == 9 else "blackwell"]
    fam = FAMILIES.get(family_name)
    if fam is not None and fam.blackwell_mha_prefill_tables is not None and sm_major >= 10:
        return fam.blackwell_mha_prefill_tables
    return ("flashinfer_fa3",)


def dsa_fp8_layout(backend_name: str) -> str:
    """The fp8 KV layout a DSA kernel reads; SGLang's FlashMLA variants outside the table (flashmla_sparse_q8,
    flashmla_auto) read FlashMLA's."""
    caps = BACKENDS.get(backend_name)
    if caps is not None:
        return caps.dsa_fp8_layout
    return "fp8_flashmla_656" if backend_name.startswith("flashmla") else "fp8_raw_576"


def dsa_padded_heads(heads: int, backend_name: str, sm_major: int) -> int:
    """Query heads as a DSA backend's kernels run them (docs/serving-model.md §2.1): flashmla_sparse pads to a
    multiple of 64 (SM90) / 128 (SM100+), flashmla_kv to 64 when <= 64 else 128, others run them as they are."""
    caps = BACKENDS.get(backend_name)
    if caps is None:
        return heads
    if caps.dsa_head_multiple is not None:
        mult = caps.dsa_head_multiple[gpu_arch(sm_major)]
        return -(-heads // mult) * mult
    if caps.dsa_head_sizes is not None:
        return next((size for size in caps.dsa_head_sizes if heads <= size), caps.dsa_head_sizes[-1])
    return heads
