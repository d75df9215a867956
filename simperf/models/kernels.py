"""Which calibration-table key stands for each kernel SGLang runs: backend proxies and dtype names.

An op of the step is given an ordered tuple of candidate keys; the cost model takes the first one a table of the
target GPU covers, else the first one a table scaled from another GPU covers (PerfDB.table_rank, `choose_key`),
and otherwise the first one (the db then answers with its labelled fallback). Aliases
cover both the names in the brief/scenario and the names the calibration grid writes (e.g. "fp8" vs "fp8_e4m3").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from importlib import resources
from itertools import product
from typing import Any

from simperf.capabilities import BACKENDS
from simperf.perfdb.schema import OP_SPECS, fused_shared_routing

Key = tuple[tuple[str, Any], ...]  # (column, value) pairs in OpSpec.key_columns order


def make_key(op: str, **values: Any) -> Key:
    columns = OP_SPECS[op].key_columns
    if set(values) != set(columns):
        raise ValueError(f"key for {op!r} needs exactly {list(columns)}, got {sorted(values)}")
    return tuple((c, values[c]) for c in columns)


def key_candidates(op: str, **choices: Any) -> tuple[Key, ...]:
    """Every combination of the given values, in preference order (a tuple/list value lists alternatives)."""
    columns = OP_SPECS[op].key_columns
    options: list[Iterable[Any]] = []
    for c in columns:
        v = choices[c]
        options.append(_dedupe(v) if isinstance(v, tuple | list) else (v,))
    if set(choices) != set(columns):
        raise ValueError(f"key for {op!r} needs exactly {list(columns)}, got {sorted(choices)}")
    return tuple(tuple(zip(columns, combo, strict=True)) for combo in product(*options))


# tuned fused-MoE configurations SGLang 0.5.17 ships (listed from its wheel)
SGLANG_MOE_CONFIGS = "sglang_moe_configs_0_5_17.txt"


def choose_key(candidates: tuple[Key, ...], rank: Callable[[Key], int]) -> Key:
    """The first candidate of the highest table rank (2: a table of the target GPU, 1: a table scaled from
    another GPU, 0: none); with no table at all, the preferred (first) candidate."""
    best = max(rank(k) for k in candidates)
    return next(k for k in candidates if rank(k) == best) if best > 0 else candidates[0]


def _dedupe(values: Iterable[Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return tuple(out)


def table_attention_backends(scenario_backend: str, sm_major: int = 9) -> tuple[str, ...]:
    """Table backends that price a scenario attention backend's kernels on a GPU of this compute capability, first
    preferred (the capability table's `tables`: e.g. SGLang's `fa3` runs sgl-kernel's FA3, priced with
    flashinfer's FA3 kernels as its proxy; `flashinfer` asks flashinfer for backend="auto", FA3 on SM90)."""
    caps = BACKENDS.get(scenario_backend)
    return (scenario_backend,) if caps is None else caps.table_backends(sm_major)


def kv_dtype_names(kv_dtype: str) -> tuple[str, ...]:
    """Table spellings of a KV dtype: the resolved "fp8_e4m3" is written "fp8" by some calibrations."""
    return ("fp8_e4m3", "fp8") if kv_dtype in ("fp8_e4m3", "fp8") else (kv_dtype,)


def gemm_keys(weight_dtype: str, n: int, k: int, deep_gemm: bool = True) -> tuple[Key, ...]:
    """Dense linear layer: block-scaled fp8 (DeepGEMM preferred where `deep_gemm`: the SGLang release runs the
    DeepGEMM its table measured, ops.LAST_VERSION_BEFORE_DEEP_GEMM_TABLE) or cuBLASLt blockwise / rowwise fp8 as proxies;
    bf16 via torch."""
    if weight_dtype == "fp8":
        deep = (make_key("gemm", backend="deep_gemm", dtype="fp8_block", n=n, k=k),) if deep_gemm else ()
        return (
            *deep,
            make_key("gemm", backend="torch_scaled_mm", dtype="fp8_block", n=n, k=k),
            make_key("gemm", backend="torch_scaled_mm", dtype="fp8_rowwise", n=n, k=k),
            make_key("gemm", backend="sgl_kernel", dtype="fp8_rowwise", n=n, k=k),
        )
    return (make_key("gemm", backend="torch", dtype="bf16", n=n, k=k),)


def bmm_keys(batch: int, n: int, k: int) -> tuple[Key, ...]:
    return (make_key("bmm", backend="torch", dtype="bf16", batch=batch, n=n, k=k),)


def moe_keys(
    weight_dtype: str,
    num_experts: int,
    experts_per_rank: int,
    topk: int,
    n: int,
    k: int,
    fused_shared: int = 0,
    sm_major: int = 9,
    default_tiles: bool = False,
) -> tuple[Key, ...]:
    """Routed experts, in the order SGLang picks its MoE runner: on Hopper SGLang's own Triton fused MoE with the
    tiles it picks (`sglang_fused_moe`, calibrate/backends/moe_sglang.py) where a table has the shape, then
    simperf's Triton fused MoE, then the grouped-GEMM proxy; on Blackwell (SM100+) SGLang's DeepSeek FP8 default
    `flashinfer_trtllm` first (SGLang 0.5.17 arg_groups/overrides.py, `_deepseek_moe_quant_resolution`), from
    third-party (AIConfigurator) tables. fp8 weights prefer block-scaled tables (DeepSeek-V3 checkpoints) over
    rowwise ones. fused_shared: that many shared experts ride in the layer (counted in num_experts and topk),
    chosen by every token. default_tiles: SGLang ships no tuned Triton configuration for this shape on this GPU
    (`sglang_tunes_moe`), so it runs its default tiles: simperf's table of them comes before its tuned one."""
    dtypes = ("fp8_block", "fp8_rowwise", "fp8") if weight_dtype == "fp8" else ("bf16",)
    backends: tuple[str, ...] = ("triton_fused_moe", "flashinfer_trtllm", "torch_grouped_mm")
    if default_tiles:
        backends = ("triton_fused_moe_default", *backends)
    backends = ("sglang_fused_moe", *backends)
    if sm_major >= 10:
        backends = ("flashinfer_trtllm", "triton_fused_moe", "torch_grouped_mm")
    return key_candidates(
        "moe",
        backend=backends,
        dtype=dtypes,
        num_experts=num_experts,
        experts_per_rank=experts_per_rank,
        topk=topk,
        n=n,
        k=k,
        routing=fused_shared_routing("balanced", fused_shared),
    )


def elementwise_keys(variant: str, n: int) -> tuple[Key, ...]:
    return key_candidates("elementwise", backend=("torch", "flashinfer", "triton"), variant=variant, n=n)


def collective_keys(op: str, group_size: int) -> tuple[Key, ...]:
    keys = (make_key(op, backend="nccl", dtype="bf16", group_size=group_size),)
    if op == "allreduce":
        # SGLang all-reduces through its custom kernel on one NVLink node (NCCL only for large messages); use a
        # table of it where one exists (today third-party), else NCCL's
        keys = (make_key(op, backend="sglang_custom_ar", dtype="bf16", group_size=group_size), *keys)
    return keys


@functools.lru_cache(maxsize=1)
def _sglang_moe_config_names() -> frozenset[str]:
    text = resources.files("simperf.models").joinpath(SGLANG_MOE_CONFIGS).read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def sglang_tunes_moe(local_experts: int, n: int, device_name: str, weight_dtype: str) -> bool:
    """Whether SGLang 0.5.17 ships a tuned Triton fused-MoE configuration for this per-rank shape on this GPU (its
    get_moe_configs: a config file E=<local experts>,N=<per-rank intermediate>,device_name=..., in any Triton
    version directory). An unknown GPU counts as tuned: the tuned tables stay its price."""
    if not device_name:
        return True
    dtype = ",dtype=fp8_w8a8,block_shape=[128, 128]" if weight_dtype == "fp8" else ""
    return f"E={local_experts},N={n},device_name={device_name}{dtype}" in _sglang_moe_config_names()
