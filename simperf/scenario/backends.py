"""Which attention backends can serve which model on which GPU, and what KV layout each one stores.

SGLang refuses a backend that cannot run (an SM100 kernel on Hopper, an MLA kernel for a GQA model, a sparse-MLA
backend for a dense-attention model); simperf refuses the same scenarios with the reason, instead of predicting a
configuration that would not start. When the prefill backend reads another KV layout than the decode backend
stores, the prefill converts the request's KV once (docs/serving-model.md §4.3: FlashMLA's fp8 kernels read a 656-byte
block-scaled layout, trtllm's a raw 576-byte fp8 layout); that conversion is costed by the cost model.
"""

from __future__ import annotations

from simperf.capabilities import backend, family, gpu_arch
from simperf.hardware.catalog import GpuSpec
from simperf.models.arch import ModelArch


class BackendError(ValueError):
    """An attention-backend choice SGLang would refuse."""


def check_backends(
    arch: ModelArch, gpu: GpuSpec, prefill: str, decode: str, kv_dtype: str, serving: str = "serving"
) -> None:
    """Refuse what SGLang would refuse, with the reasons, from the capability table (simperf/capabilities.py);
    `serving`: where the server's arguments sit in the scenario file (disaggregation.decode, a fleet group's)."""
    problems = []
    where = gpu_arch(gpu.sm)
    for role, name in (("prefill", prefill), ("decode", decode)):
        field = f"{serving}.{role}_attention_backend"
        caps = backend(name)
        if where not in caps.gpus:
            problems.append(f"{field}: {name} {caps.gpu_refusal}; {gpu.key} is SM{gpu.sm}")
        if not caps.serves(arch.family):
            problems.append(
                caps.family_refusal.format(field=field, backend=name, model=arch.name, family=arch.family)
            )
    for name in dict.fromkeys((prefill, decode)):
        caps = backend(name)
        if caps.kv_dtype is not None and kv_dtype != caps.kv_dtype:
            problems.append(caps.kv_dtype_refusal.replace("serving.", f"{serving}.", 1))
    if problems:
        raise BackendError("; ".join(problems))


def kv_layout(arch: ModelArch, backend_name: str, kv_dtype: str) -> str:
    """The KV-cache layout a backend reads: stored as the decode backend's, converted for the prefill's."""
    if kv_dtype == "bf16" or not arch.is_mla:
        return f"{kv_dtype}"
    if family(arch.family).attention == "dsa":
        return backend(backend_name).dsa_fp8_layout
    return "fp8_raw_576"


def conversion_bytes_per_token_per_layer(src: str, dst: str) -> tuple[int, int]:
    """(bytes read, bytes written) to convert one token's KV of one layer between layouts."""
    size = {"fp8_flashmla_656": 656, "fp8_raw_576": 576, "bf16": 1152, "fp8_e4m3": 576}
    return size.get(src, 576), size.get(dst, 576)
