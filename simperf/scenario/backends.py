"""Which attention backends can serve which model on which GPU, and what KV layout each one stores.

SGLang refuses a backend that cannot run (an SM100 kernel on Hopper, an MLA kernel for a GQA model, a sparse-MLA
backend for a dense-attention model); simperf refuses the same scenarios with the reason, instead of predicting a
configuration that would not start. When the prefill backend reads another KV layout than the decode backend
stores, the prefill converts the request's KV once (docs/serving-model.md §4.3: FlashMLA's fp8 kernels read a 656-byte
block-scaled layout, trtllm's a raw 576-byte fp8 layout); that conversion is costed by the cost model.
"""

from __future__ import annotations

from simperf.hardware.catalog import GpuSpec
from simperf.models.arch import ModelArch

SM100_ONLY = {"trtllm_mla", "cutlass_mla", "trtllm"}
HOPPER_ONLY = {"fa3"}  # SGLang's fa3 backend runs FlashAttention-3, a Hopper kernel
NSA_ONLY = {"flashmla_sparse", "flashmla_kv"}
MLA_ONLY = {"flashmla", "trtllm_mla", "cutlass_mla"}


class BackendError(ValueError):
    """An attention-backend choice SGLang would refuse."""


def check_backends(arch: ModelArch, gpu: GpuSpec, prefill: str, decode: str, kv_dtype: str) -> None:
    problems = []
    blackwell = float(gpu.sm) >= 10.0
    for role, backend in (("prefill", prefill), ("decode", decode)):
        field = f"serving.{role}_attention_backend"
        if backend in SM100_ONLY and not blackwell:
            problems.append(f"{field}: {backend} requires a Blackwell GPU (SM100); {gpu.key} is SM{gpu.sm}")
        if backend in HOPPER_ONLY and blackwell:
            problems.append(
                f"{field}: {backend} (FlashAttention-3) runs on Hopper (SM90) only; {gpu.key} is SM{gpu.sm}"
            )
        if backend in NSA_ONLY and arch.family != "nsa_moe":
            problems.append(
                f"{field}: {backend} is a sparse-MLA (NSA/DSA) backend; {arch.name} is not a DSA model"
            )
        if backend in MLA_ONLY and not arch.is_mla:
            problems.append(f"{field}: {backend} is an MLA backend; {arch.name} uses {arch.family} attention")
        if backend == "trtllm" and arch.family not in ("nsa_moe", "dense"):
            problems.append(
                f"{field}: trtllm serves DSA models and dense attention; use trtllm_mla for {arch.name}"
            )
    if "flashmla_kv" in (prefill, decode) and kv_dtype != "fp8_e4m3":
        problems.append(
            "serving.kv_cache_dtype: flashmla_kv reads the fp8 KV layout; set kv_cache_dtype: fp8_e4m3"
        )
    if problems:
        raise BackendError("; ".join(problems))


def kv_layout(arch: ModelArch, backend: str, kv_dtype: str) -> str:
    """The KV-cache layout a backend reads: stored as the decode backend's, converted for the prefill's."""
    if kv_dtype == "bf16" or not arch.is_mla:
        return f"{kv_dtype}"
    if arch.family == "nsa_moe" and backend.startswith("flashmla"):
        return "fp8_flashmla_656"  # nope fp8 + per-128 scales + bf16 rope
    return "fp8_raw_576"


def conversion_bytes_per_token_per_layer(src: str, dst: str) -> tuple[int, int]:
    """(bytes read, bytes written) to convert one token's KV of one layer between layouts."""
    size = {"fp8_flashmla_656": 656, "fp8_raw_576": 576, "bf16": 1152, "fp8_e4m3": 576}
    return size.get(src, 576), size.get(dst, 576)
