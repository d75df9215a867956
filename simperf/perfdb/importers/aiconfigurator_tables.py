"""AIConfigurator's tables, one by one, onto simperf's ops, keys and conventions (docs/calibration.md,
"Third-party tables"). Each converter takes one published Parquet table as a polars frame and returns the rows in
simperf's schema columns, plus how many rows it left out and why. What each table means was read from
AIConfigurator's public collector source; the constants below name where a convention comes from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

# The sglang MLA collector builds its KV pool with this page size (collector/sglang/collect_mla.py, MLA_PAGE_SIZE).
MLA_PAGE_SIZE = 64
# Non-absorbed MLA prefill (the trtllm ragged path on Blackwell): q/k head dim nope 128 + rope 64, v 128.
MLA_MHA_HEAD_DIM = 192
MLA_MHA_HEAD_DIM_V = 128

# Kernel sources -> simperf backend names. Where AIConfigurator timed the kernel SGLang itself runs, the name is
# the one simperf's own tables (or the cost model's aliases) use for that kernel; see docs/calibration.md.
MLA_DECODE_BACKENDS = {"trtllm_mla": "trtllm_mla", "flash_attention": "fa3"}
GEMM_BACKENDS: dict[tuple[str, str], tuple[str, str]] = {
    ("sglang_torch_linear", "bfloat16"): ("torch", "bf16"),
    ("sglang_deepgemm_gemm_nt_f8f8bf16", "fp8_block"): ("deep_gemm", "fp8_block"),
    ("sglang_sgl_kernel_fp8_scaled_mm", "fp8"): ("sgl_kernel", "fp8_rowwise"),
    ("sglang_flashinfer_cutedsl_nvfp4", "nvfp4"): ("flashinfer_cutedsl", "nvfp4"),
}
BMM_BACKENDS = {"sglang_torch_bmm": "torch", "sglang_sgl_kernel_bmm_fp8": "sgl_kernel"}
MOE_BACKENDS = {
    "sglang_fused_moe_triton": "triton_fused_moe",
    "sglang_flashinfer_trtllm_moe": "flashinfer_trtllm",
    "sglang_mxfp4_flashinfer_trtllm_moe": "flashinfer_trtllm_mxfp4",
}
NCCL_OPS = {
    "all_reduce": "allreduce",
    "all_gather": "allgather",
    "reduce_scatter": "reducescatter",
    "alltoall": "alltoall",
}
CUSTOM_ALLREDUCE_BACKENDS = {"sglang_graph": "sglang_custom_ar", "sglang_eager": "sglang_custom_ar_eager"}
# nccl-tests' -d half: same bytes and the same NCCL code path as bf16, which is what simperf's keys name.
NCCL_DTYPES = {"half": ("bf16", 2), "int8": ("int8", 1)}

_DTYPE_NAMES = {"bfloat16": "bf16", "float16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block"}


class AIConfiguratorImportError(ValueError):
    """The package data could not be found or a table does not have the columns its converter expects."""


@dataclass(frozen=True)
class Converted:
    frame: pl.DataFrame  # schema columns, one row per imported point
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows left out


@dataclass(frozen=True)
class SourceTable:
    family: str  # directory under systems/data/<system>/
    framework: str  # directory under the family: sglang | nccl
    file: str
    convert: Callable[[pl.DataFrame], Converted]


def _require(frame: pl.DataFrame, columns: tuple[str, ...], table: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise AIConfiguratorImportError(
            f"{table}: expected columns {missing} not found (has {frame.columns})"
        )


def _dtype_name(column: str) -> pl.Expr:
    return pl.col(column).replace_strict(_DTYPE_NAMES, default=pl.col(column))


def _time_us() -> pl.Expr:
    """AIConfigurator stores milliseconds."""
    return (pl.col("latency").cast(pl.Float64) * 1000.0).alias("time_us")


def _split_known(frame: pl.DataFrame, known: pl.Expr, reason: str, dropped: dict[str, int]) -> pl.DataFrame:
    kept = frame.filter(known)
    if frame.height - kept.height:
        dropped[reason] = dropped.get(reason, 0) + frame.height - kept.height
    return kept


def convert_generation_mla(frame: pl.DataFrame) -> Converted:
    """MLA decode (absorbed, 576/512): one new token per request over isl + step KV tokens, paged at 64."""
    _require(
        frame, ("kernel_source", "kv_cache_dtype", "num_heads", "batch_size", "isl", "step", "latency"), "mla"
    )
    dropped: dict[str, int] = {}
    frame = _split_known(
        frame, pl.col("kernel_source").is_in(list(MLA_DECODE_BACKENDS)), "unknown kernel_source", dropped
    )
    out = frame.select(
        op=pl.lit("attn_mla_decode"),
        backend=pl.col("kernel_source").replace_strict(MLA_DECODE_BACKENDS),
        kv_dtype=_dtype_name("kv_cache_dtype"),
        num_heads=pl.col("num_heads"),
        page_size=pl.lit(MLA_PAGE_SIZE),
        q_len=pl.lit(1),
        batch=pl.col("batch_size"),
        kv_len=pl.col("isl") + pl.col("step"),  # the collector's seq_lens: history + the new token
        time_us=_time_us(),
    )
    return Converted(out, dropped)


def convert_context_mla(frame: pl.DataFrame) -> Converted:
    """MLA prefill without prefix. On Blackwell the sglang collector runs trtllm_mla's ragged non-absorbed path
    (q/k 192, v 128, one KV head per query head): simperf's attn_mha_prefill. Elsewhere it runs FA3 over the
    absorbed latent (576/512, one KV head): simperf's attn_mla_extend with q_len = kv_len."""
    _require(frame, ("kernel_source", "kv_cache_dtype", "num_heads", "batch_size", "isl", "latency"), "mla")
    dropped: dict[str, int] = {}
    frame = _split_known(
        frame, pl.col("kernel_source").is_in(list(MLA_DECODE_BACKENDS)), "unknown kernel_source", dropped
    )
    ragged = frame.filter(pl.col("kernel_source") == "trtllm_mla")
    # The ragged prefill computes on the bf16 projections whatever the cache dtype; attn_mha_prefill has no KV
    # dtype in its key, so the fp8-cache rows (which add the cache quantisation) are left out.
    ragged = _split_known(
        ragged,
        pl.col("kv_cache_dtype") != "fp8",
        "trtllm_mla prefill with fp8 KV cache (attn_mha_prefill has no KV dtype)",
        dropped,
    )
    mha = ragged.select(
        op=pl.lit("attn_mha_prefill"),
        backend=pl.lit("trtllm"),
        dtype=pl.lit("bf16"),
        num_heads=pl.col("num_heads"),
        num_kv_heads=pl.col("num_heads"),
        head_dim=pl.lit(MLA_MHA_HEAD_DIM),
        head_dim_v=pl.lit(MLA_MHA_HEAD_DIM_V),
        batch=pl.col("batch_size"),
        q_len=pl.col("isl"),
        kv_len=pl.col("isl"),
        time_us=_time_us(),
    )
    absorbed = frame.filter(pl.col("kernel_source") != "trtllm_mla").select(
        op=pl.lit("attn_mla_extend"),
        backend=pl.col("kernel_source").replace_strict(MLA_DECODE_BACKENDS),
        kv_dtype=_dtype_name("kv_cache_dtype"),
        num_heads=pl.col("num_heads"),
        page_size=pl.lit(MLA_PAGE_SIZE),
        batch=pl.col("batch_size"),
        q_len=pl.col("isl"),
        kv_len=pl.col("isl"),
        time_us=_time_us(),
    )
    return Converted(pl.concat([mha, absorbed], how="diagonal"), dropped)


def convert_gemm(frame: pl.DataFrame) -> Converted:
    _require(frame, ("kernel_source", "gemm_dtype", "m", "n", "k", "latency"), "gemm")
    dropped: dict[str, int] = {}
    pairs = pl.concat_str([pl.col("kernel_source"), pl.col("gemm_dtype")], separator="|")
    mapping = {f"{ks}|{dt}": value for (ks, dt), value in GEMM_BACKENDS.items()}
    frame = _split_known(frame, pairs.is_in(list(mapping)), "unknown kernel_source/gemm_dtype", dropped)
    pairs = pl.concat_str([pl.col("kernel_source"), pl.col("gemm_dtype")], separator="|")
    out = frame.select(
        op=pl.lit("gemm"),
        backend=pairs.replace_strict({k: v[0] for k, v in mapping.items()}),
        dtype=pairs.replace_strict({k: v[1] for k, v in mapping.items()}),
        n=pl.col("n"),
        k=pl.col("k"),
        m=pl.col("m"),
        time_us=_time_us(),
    )
    return Converted(out, dropped)


def convert_mla_bmm(frame: pl.DataFrame) -> Converted:
    """MLA's absorbed batched matmuls per head: mla_gen_pre is w_kc (k = qk_nope 128 -> n = kv_lora 512),
    mla_gen_post is w_vc (k = kv_lora 512 -> n = v_head 128); simperf's bmm with batch = heads per rank."""
    _require(
        frame, ("op_name", "kernel_source", "bmm_dtype", "num_tokens", "num_heads", "latency"), "mla_bmm"
    )
    dropped: dict[str, int] = {}
    frame = _split_known(
        frame,
        pl.col("kernel_source").is_in(list(BMM_BACKENDS))
        & pl.col("op_name").is_in(["mla_gen_pre", "mla_gen_post"]),
        "unknown kernel_source/op_name",
        dropped,
    )
    pre = pl.col("op_name") == "mla_gen_pre"
    out = frame.select(
        op=pl.lit("bmm"),
        backend=pl.col("kernel_source").replace_strict(BMM_BACKENDS),
        dtype=_dtype_name("bmm_dtype"),
        batch=pl.col("num_heads"),
        n=pl.when(pre).then(512).otherwise(128),
        k=pl.when(pre).then(128).otherwise(512),
        m=pl.col("num_tokens"),
        time_us=_time_us(),
    )
    return Converted(out, dropped)


def convert_moe(frame: pl.DataFrame) -> Converted:
    """Routed experts of one layer on one rank: num_tokens enter the layer (before routing), experts split over
    moe_ep_size ranks, each expert's intermediate size over moe_tp_size."""
    columns = ("kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts")
    _require(frame, (*columns, "moe_tp_size", "moe_ep_size", "distribution", "latency"), "moe")
    dropped: dict[str, int] = {}
    frame = _split_known(
        frame, pl.col("kernel_source").is_in(list(MOE_BACKENDS)), "unknown kernel_source", dropped
    )
    frame = _split_known(
        frame,
        (pl.col("num_experts") % pl.col("moe_ep_size") == 0)
        & (pl.col("inter_size") % pl.col("moe_tp_size") == 0),
        "experts or intermediate size not divisible by the parallel split",
        dropped,
    )
    out = frame.select(
        op=pl.lit("moe"),
        backend=pl.col("kernel_source").replace_strict(MOE_BACKENDS),
        dtype=_dtype_name("moe_dtype"),
        num_experts=pl.col("num_experts"),
        experts_per_rank=pl.col("num_experts") // pl.col("moe_ep_size"),
        topk=pl.col("topk"),
        n=pl.col("inter_size") // pl.col("moe_tp_size"),
        k=pl.col("hidden_size"),
        routing=pl.col("distribution"),
        m=pl.col("num_tokens"),
        time_us=_time_us(),
    )
    return Converted(out, dropped)


def convert_nccl(frame: pl.DataFrame) -> Converted:
    """nccl-tests runs: message_size is the element count of nccl-tests' "size", i.e. the whole tensor."""
    _require(frame, ("op_name", "nccl_dtype", "num_gpus", "message_size", "latency"), "nccl")
    dropped: dict[str, int] = {}
    frame = _split_known(
        frame,
        pl.col("op_name").is_in(list(NCCL_OPS)) & pl.col("nccl_dtype").is_in(list(NCCL_DTYPES)),
        "unknown op_name/nccl_dtype",
        dropped,
    )
    out = frame.select(
        op=pl.col("op_name").replace_strict(NCCL_OPS),
        backend=pl.lit("nccl"),
        dtype=pl.col("nccl_dtype").replace_strict({k: v[0] for k, v in NCCL_DTYPES.items()}),
        group_size=pl.col("num_gpus"),
        message_bytes=pl.col("message_size")
        * pl.col("nccl_dtype").replace_strict({k: v[1] for k, v in NCCL_DTYPES.items()}),
        time_us=_time_us(),
    )
    return Converted(out, dropped)


def convert_custom_allreduce(frame: pl.DataFrame) -> Converted:
    """SGLang's custom all-reduce, in a CUDA graph (as decode runs it) and eager; message_size counts bf16
    elements of the whole tensor."""
    _require(frame, ("backend", "allreduce_dtype", "num_gpus", "message_size", "latency"), "custom_allreduce")
    dropped: dict[str, int] = {}
    frame = _split_known(
        frame,
        pl.col("backend").is_in(list(CUSTOM_ALLREDUCE_BACKENDS)) & (pl.col("allreduce_dtype") == "bfloat16"),
        "unknown backend/allreduce_dtype",
        dropped,
    )
    out = frame.select(
        op=pl.lit("allreduce"),
        backend=pl.col("backend").replace_strict(CUSTOM_ALLREDUCE_BACKENDS),
        dtype=pl.lit("bf16"),
        group_size=pl.col("num_gpus"),
        message_bytes=pl.col("message_size") * 2,
        time_us=_time_us(),
    )
    return Converted(out, dropped)


SOURCE_TABLES: tuple[SourceTable, ...] = (
    SourceTable("mla", "sglang", "generation_mla_perf.parquet", convert_generation_mla),
    SourceTable("mla", "sglang", "context_mla_perf.parquet", convert_context_mla),
    SourceTable("mla_bmm", "sglang", "mla_bmm_perf.parquet", convert_mla_bmm),
    SourceTable("gemm", "sglang", "gemm_perf.parquet", convert_gemm),
    SourceTable("moe", "sglang", "moe_perf.parquet", convert_moe),
    SourceTable("comm", "nccl", "nccl_perf.parquet", convert_nccl),
    SourceTable("comm", "sglang", "custom_allreduce_perf.parquet", convert_custom_allreduce),
)
