"""Roofline estimates for every op in schema.OP_SPECS: the fallback when no table covers a query, and the scale
by which measured points are extrapolated beyond their grid.

An op's work is either a kernel (FLOPs and minimum HBM bytes) or a collective (latency steps and bytes each GPU
sends over NVLink). Time of a kernel = max(FLOPs / achievable FLOP/s, bytes / achievable HBM B/s) + launch floor;
time of a collective = floor + steps * alpha + link bytes / achievable link B/s. docs/perfdb.md gives the formulas.
Every function is vectorised over the axis arrays (they broadcast); keys are scalars.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from simperf.hardware.catalog import GpuSpec, peak_key
from simperf.perfdb.keys import PerfDBError, check_axes, key_dict, normalize_key, op_spec

# MLA absorbed attention: latent KV is kv_lora_rank 512 + rope 64 per token; scores use 576, values 512.
MLA_QK_DIM = 576
MLA_V_DIM = 512

COLLECTIVE_OPS = frozenset({"allreduce", "allgather", "reducescatter", "alltoall"})


@dataclass(frozen=True)
class RooflineConstants:
    """Efficiency assumptions (estimates, see docs/perfdb.md). Measured ceilings in the catalogue override the
    compute and memory efficiencies: achievable = measured ceiling."""

    compute_efficiency: float = 0.7  # of the datasheet dense peak
    memory_efficiency: float = 0.8  # of the datasheet HBM bandwidth
    link_efficiency: float = 0.8  # of the NVLink per-direction bandwidth
    kernel_floor_us: float = 3.0  # launch + tail of one kernel
    collective_floor_us: float = 10.0  # launch + synchronisation of one collective
    collective_step_latency_us: float = 0.7  # per ring step (alpha)


DEFAULT_CONSTANTS = RooflineConstants()


@dataclass(frozen=True)
class KernelWork:
    flops: np.ndarray
    bytes: np.ndarray
    peak: str  # key into GpuSpec.peak_flops


@dataclass(frozen=True)
class CollectiveWork:
    steps: np.ndarray  # latency steps of the algorithm (ring)
    link_bytes: np.ndarray  # bytes each GPU sends in one direction


# Bytes per element of the dtype and kv_dtype names the tables and queries hold (vocabulary.py), and the few
# other plain names of a width. An unknown name was priced as 2 bytes without a word; it is refused instead.
# int4_wo, w4a16_mxfp4 and w4a8_mxfp4_mxfp8 (AIConfigurator's MoE dtypes, third-party tables only) keep the 2 bytes
# the old prefix rule gave them: their rooflines only shape curves between their own measured points.
DTYPE_BYTES: dict[str, float] = {
    "bf16": 2.0,
    "fp16": 2.0,
    "int4_wo": 2.0,
    "w4a16_mxfp4": 2.0,
    "w4a8_mxfp4_mxfp8": 2.0,
    "fp8": 1.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
    "fp8_block": 1.0,
    "fp8_rowwise": 1.0,
    "e4m3": 1.0,
    "e5m2": 1.0,
    "int8": 1.0,
    "fp4": 0.5,
    "nvfp4": 0.5,
    "mxfp4": 0.5,
    "fp32": 4.0,
    "float32": 4.0,
    "tf32": 4.0,
}


def dtype_bytes(dtype: object) -> float:
    """Bytes per element of a dtype name as written in the tables (bf16, fp8_e4m3, nvfp4, ...); None reads as
    bf16. An unknown name raises ValueError."""
    name = str(dtype or "bf16").lower()
    try:
        return DTYPE_BYTES[name]
    except KeyError:
        near = difflib.get_close_matches(name, sorted(DTYPE_BYTES), n=3, cutoff=0.5)
        hint = f"nearest: {', '.join(near)}; " if near else ""
        raise PerfDBError(
            f"unknown dtype {dtype!r}: its bytes per element are not known ({hint}known: {', '.join(sorted(DTYPE_BYTES))})"
        ) from None


def collective_steps(op: str, group_size: np.ndarray | float) -> np.ndarray:
    """Latency steps of the ring algorithm: all-reduce 2(g-1), the others g-1."""
    g = np.asarray(group_size, dtype=np.float64)
    steps = np.maximum(g - 1.0, 0.0)
    return 2.0 * steps if op == "allreduce" else steps


def collective_link_factor(op: str, group_size: np.ndarray | float) -> np.ndarray:
    """Bytes each GPU sends, per byte of message: all-reduce 2(g-1)/g, the others (g-1)/g.

    message_bytes is the whole tensor (nccl-tests' "size"): the all-reduce buffer, the gathered all-gather output,
    the reduce-scatter input, the all-to-all send buffer of one rank.
    """
    g = np.maximum(np.asarray(group_size, dtype=np.float64), 1.0)
    share = (g - 1.0) / g
    return 2.0 * share if op == "allreduce" else share


def op_work(
    op: str, key: Mapping[str, object], axes: Mapping[str, np.ndarray]
) -> KernelWork | CollectiveWork:
    """FLOPs and minimum bytes (or collective steps and link bytes) of one op call; axes broadcast."""
    a = {name: np.asarray(value, dtype=np.float64) for name, value in axes.items()}
    if op in COLLECTIVE_OPS:
        g = float(key["group_size"])  # type: ignore[arg-type]
        size = a["message_bytes"]
        return CollectiveWork(
            steps=np.broadcast_to(collective_steps(op, g), size.shape).astype(np.float64),
            link_bytes=collective_link_factor(op, g) * size,
        )
    builder = _KERNEL_WORK.get(op)
    if builder is None:
        raise PerfDBError(f"no roofline model for op {op!r}")
    return builder(key, a)


def _int(key: Mapping[str, object], column: str) -> float:
    value = key[column]
    if value is None:
        raise PerfDBError(f"roofline needs key column {column!r}, got None")
    return float(value)  # type: ignore[arg-type]


def _causal_pairs(q: np.ndarray, kv: np.ndarray) -> np.ndarray:
    """Query-key pairs of causal attention of q new tokens at the end of kv tokens: q*kv - q^2/2."""
    q_eff = np.minimum(q, kv)
    return q_eff * kv - 0.5 * q_eff * q_eff


def _mla_decode(key: Mapping[str, object], a: dict[str, np.ndarray]) -> KernelWork:
    heads, q = _int(key, "num_heads"), _int(key, "q_len")
    batch, kv = a["batch"], a["kv_len"]
    kvb = dtype_bytes(key["kv_dtype"])
    flops = batch * 2.0 * heads * q * kv * (MLA_QK_DIM + MLA_V_DIM)
    nbytes = batch * (kv * MLA_QK_DIM * kvb + q * heads * (MLA_QK_DIM + MLA_V_DIM) * 2.0)
    return KernelWork(flops, nbytes, "bf16")


def _mla_extend(key: Mapping[str, object], a: dict[str, np.ndarray]) -> KernelWork:
    heads = _int(key, "num_heads")
    batch, q, kv = a["batch"], a["q_len"], a["kv_len"]
    kvb = dtype_bytes(key["kv_dtype"])
    flops = batch * 2.0 * heads * _causal_pairs(q, kv) * (MLA_QK_DIM + MLA_V_DIM)
    nbytes = batch * (kv * MLA_QK_DIM * kvb + np.minimum(q, kv) * heads * (MLA_QK_DIM + MLA_V_DIM) * 2.0)
    return KernelWork(flops, nbytes, "bf16")


def _mha_prefill(key: Mapping[str, object], a: dict[str, np.ndarray]) -> KernelWork:
    heads, kv_heads = _int(key, "num_heads"), _int(key, "num_kv_heads")
    d_qk, d_v = _int(key, "head_dim"), _int(key, "head_dim_v")
    batch, q, kv = a["batch"], a["q_len"], a["kv_len"]
    b = dtype_bytes(key["dtype"])
    flops = batch * 2.0 * heads * _causal_pairs(q, kv) * (d_qk + d_v)
    q_eff = np.minimum(q, kv)
    nbytes = batch * (q_eff * heads * d_qk * b + kv * kv_heads * (d_qk + d_v) * b + q_eff * heads * d_v * 2.0)
    return KernelWork(flops, nbytes, _peak_name(key["dtype"]))


def _gqa_decode(key: Mapping[str, object], a: dict[str, np.ndarray]) -> KernelWork:
    heads, kv_heads, d = _int(key, "num_heads"), _int(key, "num_kv_heads"), _int(key, "head_dim")
    batch, kv = a["batch"], a["kv_len"]
    kvb = dtype_bytes(key["kv_dtype"])
    flops = batch * 2.0 * heads * kv * 2.0 * d
    nbytes = batch * (kv * kv_heads * 2.0 * d * kvb + heads * d * 2.0 * 2.0)
    return KernelWork(flops, nbytes, "bf16")


def _nsa_prefill(key: Mapping[str, object], a: dict[str, np.ndarray]) -> KernelWork:
    heads, topk = _int(key, "num_heads"), _int(key, "topk")
    m, kv = a["m"], a["kv_len"]
    kvb = dtype_bytes(key["kv_dtype"])
    selected = np.minimum(topk, kv)
    flops = m * 2.0 * heads * selected * (MLA_QK_DIM + MLA_V_DIM)
    # Minimum bytes: each distinct KV token read once (at most kv_len of them), plus q in and o out.
    distinct = np.minimum(kv, m * selected)
    nbytes = distinct * MLA_QK_DIM * kvb + m * heads * (MLA_QK_DIM + MLA_V_DIM) * 2.0
    return KernelWork(flops, nbytes, "bf16")


def _nsa_decode(key: Mapping[str, object], a: dict[str, np.ndarray]) -> KernelWork:
    heads, topk = _int(key, "num_heads"), _int(key, "topk")
    batch, kv = a["batch"], a["kv_len"]
    kvb = dtype_bytes(key["kv_dtype"])
    selected = np.minimum(topk, kv)
    # The sparse decode kernel walks all topk index slots in full tiles whatever the context: SGLang pads a short
    # request's top-k with -1 and the kernel masks those slots rather than skipping them. So its FLOPs are topk's;
    # only the KV rows it gathers are the selected ones. Measured (off-grid development set, FlashMLA sparse decode,
    # 64 heads): at KV 760-839 it takes 92-97% of its KV-2,048 time, where FLOPs over the selected tokens alone
    # scaled it to 38-45% (docs/perfdb.md).
    flops = batch * 2.0 * heads * float(topk) * (MLA_QK_DIM + MLA_V_DIM)
    nbytes = batch * (selected * MLA_QK_DIM * kvb + heads * (MLA_QK_DIM + MLA_V_DIM) * 2.0)
    return KernelWork(flops, nbytes, "bf16")


def _nsa_indexer(key: Mapping[str, object], a: dict[str, np.ndarray]) -> KernelWork:
    heads, d = _int(key, "num_heads"), _int(key, "head_dim")
    m, kv = a["m"], a["kv_len"]
    flops = 2.0 * m * heads * kv * d
    logits = 2.0 * m * kv * 4.0  # fp32 logits written, then read by the top-k
    per_token_k = d + 4.0  # fp8 key plus an fp32 scale
    if str(key["variant"]) == "decode":
        nbytes = m * kv * per_token_k + logits  # one query per request, each over its own kv_len
    else:
        nbytes = kv * per_token_k + m * heads * d + logits
    return KernelWork(flops, nbytes, "fp8")


def _gemm(key: Mapping[str, object], a: dict[str, np.ndarray]) -> KernelWork:
    n, k = _int(key, "n"), _int(key, "k")
    m = a["m"]
    b = dtype_bytes(key["dtype"])
    return KernelWork(2.0 * m * n * k, (m * k + k * n) * b + m * n * 2.0, _peak_name(key["dtype"]))


def _bmm(key: Mapping[str, object], a: dict[str, np.ndarray]) -> KernelWork:
    batch = _int(key, "batch")
    work = _gemm(key, a)
    return KernelWork(batch * work.flops, batch * work.bytes, work.peak)


def _moe(key: Mapping[str, object], a: dict[str, np.ndarray]) -> KernelWork:
    experts, local = _int(key, "num_experts"), _int(key, "experts_per_rank")
    topk, n, k = _int(key, "topk"), _int(key, "n"), _int(key, "k")
    m = a["m"]
    wb = dtype_bytes(key["dtype"])
    pick = min(topk / experts, 1.0)
    # m tokens route over all experts; this rank computes those landing on its experts_per_rank.
    routed = m * topk * (local / experts)
    flops = routed * 3.0 * k * n * 2.0  # gate and up (k->2n), down (n->k)
    # Expected distinct local experts hit under uniform routing: never more than experts_per_rank or routed.
    active = local * (1.0 - np.power(1.0 - pick, m))
    nbytes = active * 3.0 * k * n * wb + m * k * 2.0 + routed * k * 2.0
    return KernelWork(flops, nbytes, _peak_name(key["dtype"]))


def _elementwise(key: Mapping[str, object], a: dict[str, np.ndarray]) -> KernelWork:
    n = _int(key, "n")
    m = a["m"]
    if key.get("variant") == "kv_convert":
        nbytes = m * float(n)  # n = bytes read + written per token (KV layout conversion)
    elif key.get("variant") == "fp8_group_quant":
        nbytes = m * n * (2.0 + 1.0 + 4.0 / 128.0)  # read bf16, write fp8 and one fp32 scale per 128
    else:
        nbytes = 2.0 * m * n * 2.0  # read and write bf16
    return KernelWork(np.zeros_like(nbytes), nbytes, "bf16")


def _peak_name(dtype: object) -> str:
    """The dtype a GEMM-like kernel computes in; GpuSpec.peak_for maps it to a peak (fp8 GEMMs use the fp8 peak)."""
    return str(dtype or "bf16")


_KERNEL_WORK = {
    "attn_mla_decode": _mla_decode,
    "attn_mla_extend": _mla_extend,
    "attn_mha_prefill": _mha_prefill,
    "attn_gqa_decode": _gqa_decode,
    "attn_nsa_prefill": _nsa_prefill,
    "attn_nsa_decode": _nsa_decode,
    "nsa_indexer": _nsa_indexer,
    "gemm": _gemm,
    "bmm": _bmm,
    "moe": _moe,
    "elementwise": _elementwise,
}


def achievable_bytes_per_s(gpu: GpuSpec, constants: RooflineConstants = DEFAULT_CONSTANTS) -> float:
    if gpu.measured_copy_bytes_per_s:
        return gpu.measured_copy_bytes_per_s
    return constants.memory_efficiency * gpu.hbm_bytes_per_s


def compute_efficiency(gpu: GpuSpec, constants: RooflineConstants = DEFAULT_CONSTANTS) -> float:
    """Fraction of the datasheet peak a well-tuned kernel reaches; the measured bf16 GEMM ceiling where known
    (applied to every dtype: we have no fp8 ceiling yet)."""
    if gpu.measured_bf16_flops:
        return gpu.measured_bf16_flops / gpu.peak_flops["bf16"]
    return constants.compute_efficiency


def achievable_flops(gpu: GpuSpec, peak: str, constants: RooflineConstants = DEFAULT_CONSTANTS) -> float:
    return compute_efficiency(gpu, constants) * gpu.peak_flops[peak_key(peak, gpu)]


def achievable_link_bytes_per_s(gpu: GpuSpec, constants: RooflineConstants = DEFAULT_CONSTANTS) -> float:
    return constants.link_efficiency * gpu.nvlink_bytes_per_s


class Roofline:
    """The roofline of one op and exact key on one GPU, evaluated many times (key parsed once)."""

    def __init__(
        self,
        op: str,
        key: Mapping[str, object],
        gpu: GpuSpec,
        constants: RooflineConstants = DEFAULT_CONSTANTS,
    ) -> None:
        self.spec = op_spec(op)
        self.op = op
        self.key = key_dict(self.spec, normalize_key(self.spec, key))
        self.gpu = gpu
        self.constants = constants
        self._bandwidth = achievable_bytes_per_s(gpu, constants)
        self._link = achievable_link_bytes_per_s(gpu, constants)
        self._group = float(self.key["group_size"]) if op in COLLECTIVE_OPS else 0.0  # type: ignore[arg-type]

    def time_us(self, axes: Mapping[str, np.ndarray | float]) -> np.ndarray:
        work = op_work(self.op, self.key, axes)
        c = self.constants
        if isinstance(work, CollectiveWork):
            if self._group <= 1:
                return np.zeros_like(work.link_bytes)  # a group of one GPU communicates nothing
            return (
                c.collective_floor_us
                + work.steps * c.collective_step_latency_us
                + work.link_bytes / self._link * 1e6
            )
        compute_s = work.flops / achievable_flops(self.gpu, work.peak, c)
        memory_s = work.bytes / self._bandwidth
        return np.maximum(compute_s, memory_s) * 1e6 + c.kernel_floor_us

    def memory_bound(self, axes: Mapping[str, np.ndarray | float]) -> np.ndarray:
        """Per point: is the roofline's memory term the larger one (False for collectives)?"""
        work = op_work(self.op, self.key, axes)
        if isinstance(work, CollectiveWork):
            return np.zeros(np.shape(work.link_bytes), dtype=bool)
        compute_s = work.flops / achievable_flops(self.gpu, work.peak, self.constants)
        return np.asarray(work.bytes / self._bandwidth > compute_s)

    def time_us_scalar(self, axes: Mapping[str, float]) -> float:
        """time_us of one point, computed on Python floats: the same IEEE operations in the same order as the
        array path (so the same number), without numpy's per-operation cost on 0-d arrays (~10x cheaper). The
        grids' roofline extrapolation calls this once or twice per scalar query."""
        builder = _KERNEL_WORK.get(self.op)
        if builder is None:  # collectives: rare on the scalar path
            return float(self.time_us(axes))
        work = builder(self.key, {name: float(value) for name, value in axes.items()})  # type: ignore[arg-type]
        c = self.constants
        compute_s = work.flops / achievable_flops(self.gpu, work.peak, c)
        memory_s = work.bytes / self._bandwidth
        # np.maximum rather than max(): it propagates NaN whichever side it is on, as the array path does
        return float(np.maximum(compute_s, memory_s)) * 1e6 + c.kernel_floor_us

    def describe(self, axes: Mapping[str, float]) -> tuple[float, str]:
        """Scalar time and a human-readable account of the bound."""
        us = float(self.time_us(axes))
        work = op_work(self.op, self.key, axes)
        c = self.constants
        if isinstance(work, CollectiveWork):
            if self._group <= 1:
                return us, "roofline: group_size=1, no communication"
            return us, (
                f"roofline: ring {self.op} over {self._group:g} GPUs, {float(work.steps):g} steps x "
                f"{c.collective_step_latency_us:g} us + {_fmt_bytes(float(work.link_bytes))} at "
                f"{c.link_efficiency:.0%} of {_fmt_rate(self.gpu.nvlink_bytes_per_s)} NVLink "
                f"+ {c.collective_floor_us:g} us floor"
            )
        flops, nbytes = float(work.flops), float(work.bytes)
        compute_s = flops / achievable_flops(self.gpu, work.peak, c)
        memory_s = nbytes / self._bandwidth
        if compute_s >= memory_s:
            peak = self.gpu.peak_flops[peak_key(work.peak, self.gpu)]
            bound = (
                f"compute-bound, {flops / 1e9:.4g} GFLOP at {compute_efficiency(self.gpu, c):.0%} of "
                f"{peak / 1e12:.4g} TFLOP/s {peak_key(work.peak, self.gpu)}"
            )
        else:
            bound = (
                f"memory-bound, {_fmt_bytes(nbytes)} at {self._bandwidth / self.gpu.hbm_bytes_per_s:.0%} of "
                f"{_fmt_rate(self.gpu.hbm_bytes_per_s)}"
            )
        return us, f"roofline: {bound} + {c.kernel_floor_us:g} us launch"


def _fmt_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.3g} B"


def _fmt_rate(bytes_per_s: float) -> str:
    if bytes_per_s >= 1e12:
        return f"{bytes_per_s / 1e12:.3g} TB/s"
    return f"{bytes_per_s / 1e9:.3g} GB/s"


def roofline_us(
    op: str, key: Mapping[str, object], axes: Mapping[str, float], gpu: GpuSpec
) -> tuple[float, str]:
    """Roofline time of one op call in microseconds, and the detail naming its bound."""
    spec = op_spec(op)
    check_axes(spec, axes)
    return Roofline(op, key, gpu).describe(axes)
