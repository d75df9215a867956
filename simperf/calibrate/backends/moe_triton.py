"""Routed-expert compute of one MoE layer on one rank, timed with simperf's own Triton fused-MoE kernels.

The layer is structured the way SGLang's Triton `fused_moe` path runs it (written here from the algorithm,
not from SGLang's code):

1. align: the (token, slot) assignments whose expert lives on this rank are grouped by expert and each
   expert's segment is padded to a multiple of BLOCK_M. Outputs: sorted slot ids (padding = the sentinel
   m * topk), the expert of each M-block, and the padded total. Three small Triton kernels (count with
   atomics, padded prefix sum + block owners, scatter with atomic cursors), no host sync: graph-capturable.
2. gate_up grouped GEMM: each program computes a BLOCK_M x BLOCK_N tile of one M-block; A rows are gathered
   by token (slot // topk), B is that block's expert weight [2n, k]. fp8: per 128-wide K block the partial
   product is multiplied by the activation's 1x128 scale and the weight's 128x128 block scale.
3. SiLU(gate) * up (fp8: fused with 1x128 per-token-group quantisation of the result).
4. down grouped GEMM (A rows are the slots themselves), multiplied by the router weight.
5. sum over the top-k slots of each token (slots routed to other ranks are skipped).

m, routing and the busiest-rank convention are as in backends/moe.py (torch_grouped_mm, the older proxy).
torch and triton are imported lazily / guarded so that the runner can import this module without them.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, replace
from typing import Any

from simperf.calibrate.measure import Measurement, Unsupported

try:  # the runner (no GPU stack) and CI import this module without triton
    import triton
    import triton.language as tl

    HAVE_TRITON = True
except ImportError:  # pragma: no cover - exercised where triton is absent
    HAVE_TRITON = False

FP8_MAX = 448.0
SCALE_GROUP = 128  # 1x128 activation groups and 128x128 weight blocks (DeepSeek-V3 fp8 checkpoints)
DTYPES = ("bf16", "fp8_block")
ELEMENTWISE_GROUPS = 4  # 128-wide groups per program of the activation / quantisation kernel
ALIGN_BLOCK = 1024  # slots per program of the count and scatter kernels
OWNER_CHUNK = 64  # M-blocks per program of the block-owner kernel
SUM_BLOCK = 1024  # columns per program of the top-k sum
MAX_ROUTING_SETS = 8  # routing draws cycled per timing to keep the weights out of L2


@dataclass(frozen=True)
class BlockConfig:
    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_warps: int
    num_stages: int


# Table backend of the same kernel run with SGLang's untuned tiles: what SGLang launches for a shape it ships no
# tuned configuration for (simperf/models/sglang_moe_configs_0_5_17.txt lists the ones it ships).
SGLANG_DEFAULT_TILES_BACKEND = "triton_fused_moe_default"


def sglang_default_config(m: int, num_experts: int, dtype: str) -> BlockConfig:
    """SGLang 0.5.17's `get_default_config` (srt/layers/moe/moe_runner/triton_utils/fused_moe_triton_config.py)
    for the dtypes measured here, m the number of tokens and num_experts the local experts. bf16: BLOCK 16x32x64,
    GROUP 1 when m <= E, else 64x64x32, GROUP 8; block-fp8: 64 x 128 x 128, GROUP 32, 4 warps, 3 stages. Where the
    dict names no num_warps/num_stages, Triton's launch defaults (4 warps, 3 stages) apply."""
    if dtype == "fp8_block":
        return BlockConfig(64, SCALE_GROUP, SCALE_GROUP, 32, 4, 3)
    if m <= num_experts:
        return BlockConfig(16, 32, 64, 1, 4, 3)
    return BlockConfig(64, 64, 32, 8, 4, 3)


def block_config(m: int, topk: int, num_experts: int, dtype: str) -> BlockConfig:
    """The untuned tile rule, by expected rows per expert m * topk / num_experts: the first candidate of
    `candidate_configs`, so that tuning can only improve on it.

    Few rows per expert (decode) is weight-bandwidth bound: BLOCK_M 16 wastes the least padding. More rows
    move to 64 and then 128-row tiles with 8 warps (compute bound). fp8 always uses BLOCK_K = 128 so that a
    K block meets exactly one activation/weight scale; BLOCK_N 128 (one weight-scale row per tile), bf16 64.
    """
    fp8 = dtype == "fp8_block"
    rows = m * topk / num_experts
    if rows < 16:
        return BlockConfig(16, 128 if fp8 else 64, 128, 1, 4, 4)
    if rows < 128:
        return BlockConfig(64, 128, 128 if fp8 else 64, 8, 4, 3)
    return BlockConfig(128, 128, 128 if fp8 else 64, 8, 8, 3)


def candidate_configs(m: int, topk: int, num_experts: int, dtype: str) -> tuple[BlockConfig, ...]:
    """The tile configurations tried for one shape: the untuned rule first, then a small space per regime.

    SGLang runs its fused-MoE kernel with a configuration tuned per (experts, n, GPU, dtype) and per m (its
    shipped config files, chosen by the nearest tuned m); the proxy searches a comparable space per measured
    point and keeps the fastest, so that the table times a tuned kernel, not a fixed rule. With few rows per
    expert the GEMMs are weight-read bound and too few programs run at BLOCK_N 128 (8 experts x 4 N-blocks
    at m = 1), so narrower N tiles and deeper pipelines are tried; with many rows, wider M tiles and 8 warps.
    BLOCK_K stays 128: fp8 needs one scale per K block. Configurations that do not fit shared memory fail
    to compile and are skipped when measured."""
    rows = m * topk / num_experts
    if rows < 16:
        space = [BlockConfig(16, n, 128, 1, 4, s) for n in (32, 64, 128) for s in (3, 4, 5)]
    elif rows < 128:
        space = [BlockConfig(bm, n, 128, 8, 4, s) for bm in (32, 64) for n in (64, 128) for s in (3, 4)]
    else:
        space = [BlockConfig(bm, 128, 128, 8, w, s) for bm in (64, 128) for w in (4, 8) for s in (3, 4)]
    rule = block_config(m, topk, num_experts, dtype)
    return (rule, *[cfg for cfg in space if cfg != rule])


def config_label(cfg: BlockConfig) -> str:
    """Compact name of a tile configuration, recorded with each tuned measurement (`parse_config_label` reads
    it back)."""
    return (
        f"BM{cfg.block_m}_BN{cfg.block_n}_BK{cfg.block_k}_G{cfg.group_m}_W{cfg.num_warps}_S{cfg.num_stages}"
    )


_LABEL = re.compile(r"BM(\d+)_BN(\d+)_BK(\d+)_G(\d+)_W(\d+)_S(\d+)")
_TUNED = " tuned "  # timing_method of a tuned row: "<timer> tuned <label> (best of <N>)"
_TUNED_METHOD = re.compile(re.escape(_TUNED) + r"(\S+) \(best of \d+\)")


def parse_config_label(label: str) -> BlockConfig:
    """The tile configuration named by `config_label`; ValueError for anything else."""
    match = _LABEL.fullmatch(label)
    if match is None:
        raise ValueError(f"not a tile configuration label (BM.._BN.._BK.._G.._W.._S..): {label!r}")
    return BlockConfig(*(int(g) for g in match.groups()))


def tuned_timing_method(method: str, cfg: BlockConfig, tried: int) -> str:
    """The timing_method of a tuned row: the timer, then the configuration kept and how many were timed."""
    return f"{method}{_TUNED}{config_label(cfg)} (best of {tried})"


def recorded_config(timing_method: str | None) -> BlockConfig | None:
    """The configuration a row's timing_method records, or None for a row measured untuned (the rule: the
    first candidate) or not by this backend. ValueError for a tuned record that cannot be read."""
    if not timing_method or _TUNED not in timing_method:
        return None
    match = _TUNED_METHOD.search(timing_method)
    if match is None:
        raise ValueError(f"unreadable tuned timing_method: {timing_method!r}")
    return parse_config_label(match.group(1))


# Point field that `simperf validate` fills (validate/build.py): the config_label of the configuration to run.
VALIDATION_CONFIG = "tile_config"


def validation_config(point: dict[str, Any]) -> BlockConfig:
    """The configuration `simperf validate` runs for a point: the one its plan carries (what the calibration
    table recorded for that shape), else the untuned rule (what untuned rows measured). Never a search: a
    search at validation time could keep another configuration than the table timed."""
    label = point.get(VALIDATION_CONFIG)
    if label:
        return parse_config_label(str(label))
    return block_config(int(point["m"]), int(point["topk"]), int(point["num_experts"]), point["dtype"])


def point_candidates(point: dict[str, Any]) -> tuple[BlockConfig, ...]:
    """The configurations a point times: SGLang's default tiles alone for the default-tiles backend (nothing is
    tuned: that is what SGLang runs without a tuned file), else the tuning candidates."""
    m, dtype = int(point["m"]), point["dtype"]
    if point.get("backend") == SGLANG_DEFAULT_TILES_BACKEND:
        return (sglang_default_config(m, int(point["experts_per_rank"]), dtype),)
    return candidate_configs(m, int(point["topk"]), int(point["num_experts"]), dtype)


def compile_signature(point: dict[str, Any]) -> tuple[Any, ...]:
    """Points with the same signature share compiled kernels (the runner warms one point per signature)."""
    cfgs = point_candidates(point)
    return (point["dtype"], int(point["topk"]), cfgs)


def check_supported(dtype: str, n: int, k: int) -> None:
    if dtype not in DTYPES:
        raise Unsupported(f"triton_fused_moe measures dtypes {DTYPES}, not {dtype!r}")
    if dtype == "fp8_block" and (n % SCALE_GROUP or k % SCALE_GROUP):
        # SGLang refuses block-fp8 MoE weights whose per-rank intermediate is not a multiple of 128.
        raise Unsupported(f"fp8_block needs n and k divisible by {SCALE_GROUP} (n={n}, k={k})")


# ---------------------------------------------------------------- Triton kernels

if HAVE_TRITON:

    @triton.jit(do_not_specialize=["num_slots"])
    def _count_kernel(slot_expert_ptr, counts_ptr, num_slots, BLOCK: tl.constexpr):
        """Assignments per local expert (slots of other ranks carry expert -1 and are skipped)."""
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        expert = tl.load(slot_expert_ptr + offs, mask=offs < num_slots, other=-1)
        valid = expert >= 0
        tl.atomic_add(counts_ptr + tl.where(valid, expert, 0), 1, mask=valid)

    @triton.jit(do_not_specialize=["max_blocks"])
    def _block_owner_kernel(
        counts_ptr,
        cursor_ptr,
        total_ptr,
        block_expert_ptr,
        num_experts,
        max_blocks,
        BLOCK_M: tl.constexpr,
        E_POW2: tl.constexpr,
        CHUNK: tl.constexpr,
    ):
        """Padded segment starts (program 0 writes them as scatter cursors, plus the padded total) and the
        owning expert of each M-block. Every program redoes the tiny prefix sum instead of a second pass."""
        e = tl.arange(0, E_POW2)
        e_mask = e < num_experts
        counts = tl.load(counts_ptr + e, mask=e_mask, other=0)
        padded = (counts + BLOCK_M - 1) // BLOCK_M * BLOCK_M
        end = tl.cumsum(padded, 0)
        pid = tl.program_id(0)
        if pid == 0:
            tl.store(cursor_ptr + e, end - padded, mask=e_mask)
            tl.store(total_ptr, tl.sum(padded, 0))
        blocks = pid * CHUNK + tl.arange(0, CHUNK)
        row = blocks * BLOCK_M
        # owner = number of experts whose padded segment ends at or before the block's first row
        before = (end[None, :] <= row[:, None]) & e_mask[None, :]
        owner = tl.sum(before.to(tl.int32), 1)
        tl.store(block_expert_ptr + blocks, owner, mask=blocks < max_blocks)

    @triton.jit(do_not_specialize=["num_slots"])
    def _scatter_kernel(slot_expert_ptr, cursor_ptr, sorted_ids_ptr, num_slots, BLOCK: tl.constexpr):
        """Each assignment takes the next free row of its expert's segment (order inside it is irrelevant)."""
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        expert = tl.load(slot_expert_ptr + offs, mask=offs < num_slots, other=-1)
        valid = expert >= 0
        pos = tl.atomic_add(cursor_ptr + tl.where(valid, expert, 0), 1, mask=valid)
        tl.store(sorted_ids_ptr + pos, offs, mask=valid)

    # Arguments that change with m (or with scale-tensor widths) are not specialised on, so one compiled kernel
    # serves every m of a block config.
    @triton.jit(do_not_specialize=["num_slots", "max_blocks", "stride_as_m", "stride_bs_e", "stride_bs_n"])
    def _grouped_gemm_kernel(
        a_ptr,
        b_ptr,
        c_ptr,
        a_scale_ptr,
        b_scale_ptr,
        weight_ptr,
        sorted_ids_ptr,
        block_expert_ptr,
        total_ptr,
        num_slots,
        max_blocks,
        a_row_div,
        N,
        K,
        stride_am,
        stride_be,
        stride_bn,
        stride_cm,
        stride_as_m,
        stride_bs_e,
        stride_bs_n,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr,
        SCALE_GROUP: tl.constexpr,
        BLOCK_SCALED: tl.constexpr,
        MUL_WEIGHT: tl.constexpr,
        DOT_F32: tl.constexpr,
    ):
        """C[slot, :] = A[slot // a_row_div, :] @ B[expert]^T for the slots of one M-block; B is [E, N, K]."""
        # Programs of GROUP_M consecutive M-blocks sweep N together: an expert's weight tile is read from
        # L2 by all of its M-blocks instead of once per block from HBM.
        pid = tl.program_id(0)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        per_group = GROUP_M * num_pid_n
        first_m = (pid // per_group) * GROUP_M
        group_size = tl.minimum(max_blocks - first_m, GROUP_M)
        pid_m = first_m + (pid % per_group) % group_size
        pid_n = (pid % per_group) // group_size
        if pid_m * BLOCK_M >= tl.load(total_ptr):
            return  # padding blocks beyond this launch's assignments
        expert = tl.load(block_expert_ptr + pid_m).to(tl.int64)
        ids = tl.load(sorted_ids_ptr + pid_m * BLOCK_M + tl.arange(0, BLOCK_M))
        valid = ids < num_slots
        a_rows = (ids // a_row_div).to(tl.int64)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        n_mask = offs_n < N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + a_rows[:, None] * stride_am + offs_k[None, :]
        b_ptrs = b_ptr + expert * stride_be + offs_n[None, :].to(tl.int64) * stride_bn + offs_k[:, None]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            k_left = K - k0
            a = tl.load(a_ptrs, mask=valid[:, None] & (offs_k[None, :] < k_left), other=0.0)
            b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & n_mask[None, :], other=0.0)
            if DOT_F32:  # Triton's CPU interpreter computes bf16/fp8 dots wrongly; tests upcast first
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            if BLOCK_SCALED:
                # BLOCK_K == SCALE_GROUP: the K block at k0 has one activation scale per row and one weight
                # scale per 128-row block of N.
                a_s = tl.load(a_scale_ptr + a_rows * stride_as_m + k0 // SCALE_GROUP, mask=valid, other=0.0)
                b_s = tl.load(
                    b_scale_ptr
                    + expert * stride_bs_e
                    + (offs_n // SCALE_GROUP) * stride_bs_n
                    + k0 // SCALE_GROUP,
                    mask=n_mask,
                    other=0.0,
                )
                acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
            else:
                acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K
        if MUL_WEIGHT:
            acc *= tl.load(weight_ptr + ids, mask=valid, other=0.0)[:, None]
        c_ptrs = c_ptr + ids[:, None].to(tl.int64) * stride_cm + offs_n[None, :]
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=valid[:, None] & n_mask[None, :])

    @triton.jit(do_not_specialize=["stride_scale"])
    def _act_quant_kernel(
        in_ptr,
        out_ptr,
        scale_ptr,
        slot_expert_ptr,
        width,
        stride_in,
        stride_out,
        stride_scale,
        ACT: tl.constexpr,
        QUANT: tl.constexpr,
        SKIP_REMOTE: tl.constexpr,
        GROUPS: tl.constexpr,
        GROUP: tl.constexpr,
        QMAX: tl.constexpr,
    ):
        """One row x GROUPS 128-wide groups: optional SiLU(gate)*up, optional 1x128 fp8 quantisation."""
        row = tl.program_id(0)
        groups = tl.program_id(1) * GROUPS + tl.arange(0, GROUPS)
        cols = groups[:, None] * GROUP + tl.arange(0, GROUP)[None, :]
        mask = cols < width
        group_mask = groups * GROUP < width
        if SKIP_REMOTE:  # a slot routed to another rank: its gate_up row was never written, touch nothing
            local = tl.load(slot_expert_ptr + row) >= 0
            mask = mask & local
            group_mask = group_mask & local
        src = in_ptr + row.to(tl.int64) * stride_in + cols
        if ACT:
            gate = tl.load(src, mask=mask, other=0.0).to(tl.float32)
            up = tl.load(src + width, mask=mask, other=0.0).to(tl.float32)
            y = gate * tl.sigmoid(gate) * up
        else:
            y = tl.load(src, mask=mask, other=0.0).to(tl.float32)
        dst = out_ptr + row.to(tl.int64) * stride_out + cols
        if QUANT:
            scale = tl.maximum(tl.max(tl.abs(y), 1), 1e-10) / QMAX
            q = tl.clamp(y / scale[:, None], -QMAX, QMAX)
            tl.store(dst, q.to(out_ptr.dtype.element_ty), mask=mask)
            tl.store(scale_ptr + row * stride_scale + groups, scale, mask=group_mask)
        else:
            tl.store(dst, y.to(out_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _topk_sum_kernel(
        c_ptr, out_ptr, slot_expert_ptr, width, stride_c, stride_out, TOPK: tl.constexpr, BLOCK: tl.constexpr
    ):
        """out[t] = sum of the token's slot rows that this rank computed (remote slots are not read)."""
        token = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        col_mask = cols < width
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for j in tl.static_range(TOPK):
            slot = token * TOPK + j
            local = tl.load(slot_expert_ptr + slot) >= 0
            row = c_ptr + slot.to(tl.int64) * stride_c + cols
            acc += tl.load(row, mask=col_mask & local, other=0.0).to(tl.float32)
        tl.store(
            out_ptr + token.to(tl.int64) * stride_out + cols, acc.to(out_ptr.dtype.element_ty), mask=col_mask
        )


# ---------------------------------------------------------------- the layer


@dataclass
class MoeWeights:
    """w13 [E, 2n, k] (gate rows then up rows), w2 [E, k, n]; fp8: fp32 block scales [E, N/128, K/128]."""

    w13: Any
    w2: Any
    s13: Any | None = None
    s2: Any | None = None


@dataclass
class MoeBuffers:
    """Every tensor the layer writes, allocated once per point so that the timed launch only launches."""

    counts: Any
    cursor: Any
    total: Any
    sorted_ids: Any
    block_expert: Any
    xq: Any | None
    x_scale: Any | None
    gate_up: Any
    act: Any
    act_scale: Any | None
    down: Any
    out: Any


def max_blocks(num_slots: int, experts: int, block_m: int) -> int:
    """Upper bound on M-blocks after padding: every local expert may waste up to BLOCK_M - 1 rows."""
    return math.ceil((num_slots + experts * (block_m - 1)) / block_m)


def alloc_buffers(x: Any, weights: MoeWeights, topk: int, cfg: BlockConfig, fp8: bool) -> MoeBuffers:
    import torch

    m, k = x.shape
    experts, two_n, _ = weights.w13.shape
    n = two_n // 2
    slots = m * topk
    dev = x.device
    qdtype = weights.w13.dtype  # fp8 storage (or float32 when emulated under the interpreter)
    blocks = max_blocks(slots, experts, cfg.block_m)
    return MoeBuffers(
        counts=torch.empty(experts, dtype=torch.int32, device=dev),
        cursor=torch.empty(experts, dtype=torch.int32, device=dev),
        total=torch.empty(1, dtype=torch.int32, device=dev),
        sorted_ids=torch.empty(blocks * cfg.block_m, dtype=torch.int32, device=dev),
        block_expert=torch.empty(blocks, dtype=torch.int32, device=dev),
        xq=torch.empty(m, k, dtype=qdtype, device=dev) if fp8 else None,
        x_scale=torch.empty(m, k // SCALE_GROUP, dtype=torch.float32, device=dev) if fp8 else None,
        gate_up=torch.empty(slots, two_n, dtype=x.dtype, device=dev),
        act=torch.empty(slots, n, dtype=qdtype if fp8 else x.dtype, device=dev),
        act_scale=torch.empty(slots, n // SCALE_GROUP, dtype=torch.float32, device=dev) if fp8 else None,
        down=torch.empty(slots, k, dtype=x.dtype, device=dev),
        out=torch.empty(m, k, dtype=x.dtype, device=dev),
    )


def align(slot_expert: Any, buf: MoeBuffers, block_m: int) -> None:
    """Sorted slot ids padded per expert to BLOCK_M, each block's expert, and the padded total."""
    slots = slot_expert.numel()
    experts = buf.counts.numel()
    blocks = buf.block_expert.numel()
    buf.counts.zero_()
    buf.sorted_ids.fill_(slots)  # sentinel: padding rows are skipped by the GEMMs
    _count_kernel[(triton.cdiv(slots, ALIGN_BLOCK),)](slot_expert, buf.counts, slots, BLOCK=ALIGN_BLOCK)
    _block_owner_kernel[(triton.cdiv(blocks, OWNER_CHUNK),)](
        buf.counts,
        buf.cursor,
        buf.total,
        buf.block_expert,
        experts,
        blocks,
        BLOCK_M=block_m,
        E_POW2=triton.next_power_of_2(experts),
        CHUNK=OWNER_CHUNK,
    )
    _scatter_kernel[(triton.cdiv(slots, ALIGN_BLOCK),)](
        slot_expert, buf.cursor, buf.sorted_ids, slots, BLOCK=ALIGN_BLOCK
    )


def grouped_gemm(
    a: Any,
    a_scale: Any | None,
    b: Any,
    b_scale: Any | None,
    out: Any,
    buf: MoeBuffers,
    a_row_div: int,
    router_weights: Any | None,
    cfg: BlockConfig,
) -> None:
    """out[slot] = a[slot // a_row_div] @ b[expert of slot]^T (times the router weight when given)."""
    experts, n_out, k_in = b.shape
    blocks = buf.block_expert.numel()
    scaled = a_scale is not None
    grid = (blocks * triton.cdiv(n_out, cfg.block_n),)
    _grouped_gemm_kernel[grid](
        a,
        b,
        out,
        a_scale if scaled else a,
        b_scale if scaled else b,
        router_weights if router_weights is not None else out,
        buf.sorted_ids,
        buf.block_expert,
        buf.total,
        out.shape[0],
        blocks,
        a_row_div,
        n_out,
        k_in,
        a.stride(0),
        b.stride(0),
        b.stride(1),
        out.stride(0),
        a_scale.stride(0) if scaled else 0,
        b_scale.stride(0) if scaled else 0,
        b_scale.stride(1) if scaled else 0,
        BLOCK_M=cfg.block_m,
        BLOCK_N=cfg.block_n,
        BLOCK_K=cfg.block_k,
        GROUP_M=cfg.group_m,
        SCALE_GROUP=SCALE_GROUP,
        BLOCK_SCALED=scaled,
        MUL_WEIGHT=router_weights is not None,
        DOT_F32=os.environ.get("TRITON_INTERPRET") == "1",
        num_warps=cfg.num_warps,
        num_stages=cfg.num_stages,
    )


def act_quant(
    src: Any, out: Any, scale: Any | None, slot_expert: Any, width: int, act: bool, skip_remote: bool
) -> None:
    rows = src.shape[0]
    chunks = triton.cdiv(width, ELEMENTWISE_GROUPS * SCALE_GROUP)
    quant = scale is not None
    _act_quant_kernel[(rows, chunks)](
        src,
        out,
        scale if quant else src,
        slot_expert,
        width,
        src.stride(0),
        out.stride(0),
        scale.stride(0) if quant else 0,
        ACT=act,
        QUANT=quant,
        SKIP_REMOTE=skip_remote,
        GROUPS=ELEMENTWISE_GROUPS,
        GROUP=SCALE_GROUP,
        QMAX=FP8_MAX,
    )


def fused_moe(
    x: Any,
    weights: MoeWeights,
    router_weights: Any,
    slot_expert: Any,
    topk: int,
    buf: MoeBuffers,
    cfg: BlockConfig,
) -> Any:
    """The timed layer. x [m, k]; router_weights fp32 [m * topk]; slot_expert int32 [m * topk] holds the
    local expert of each (token, slot) or -1 when the expert lives on another rank. Returns buf.out."""
    fp8 = weights.s13 is not None
    n = weights.w2.shape[2]
    k = x.shape[1]
    align(slot_expert, buf, cfg.block_m)
    a = x
    if fp8:
        act_quant(x, buf.xq, buf.x_scale, slot_expert, k, act=False, skip_remote=False)
        a = buf.xq
    grouped_gemm(a, buf.x_scale, weights.w13, weights.s13, buf.gate_up, buf, topk, None, cfg)
    act_quant(buf.gate_up, buf.act, buf.act_scale, slot_expert, n, act=True, skip_remote=True)
    grouped_gemm(buf.act, buf.act_scale, weights.w2, weights.s2, buf.down, buf, 1, router_weights, cfg)
    _topk_sum_kernel[(x.shape[0], triton.cdiv(k, SUM_BLOCK))](
        buf.down, buf.out, slot_expert, k, buf.down.stride(0), buf.out.stride(0), TOPK=topk, BLOCK=SUM_BLOCK
    )
    return buf.out


# ---------------------------------------------------------------- calibration entry point


def busiest_rank_slots(topk_ids: Any, experts_per_rank: int) -> Any:
    """int32 [m * topk]: local expert of each slot on the rank with the most assignments, else -1."""
    import torch

    ranks = topk_ids // experts_per_rank
    load = torch.bincount(ranks.flatten(), minlength=int(ranks.max()) + 1)
    rank = int(load.argmax())
    local = torch.where(ranks == rank, topk_ids - rank * experts_per_rank, torch.full_like(topk_ids, -1))
    return local.flatten().to(torch.int32)


def make_weights(experts: int, n: int, k: int, fp8: bool, device: str = "cuda") -> MoeWeights:
    """Random weights (never zeros); fp8 weights come with positive 128x128 block scales."""
    import torch

    from simperf.calibrate.timing import random_tensor

    if not fp8:
        w13 = random_tensor((experts, 2 * n, k), torch.bfloat16, device=device, scale=0.05)
        w2 = random_tensor((experts, k, n), torch.bfloat16, device=device, scale=0.05)
        return MoeWeights(w13, w2)
    w13 = random_tensor((experts, 2 * n, k), torch.float8_e4m3fn, device=device)
    w2 = random_tensor((experts, k, n), torch.float8_e4m3fn, device=device)
    g = SCALE_GROUP
    s13 = torch.rand(experts, 2 * n // g, k // g, device=device) * 0.01 + 0.005
    s2 = torch.rand(experts, k // g, n // g, device=device) * 0.01 + 0.005
    return MoeWeights(w13, w2, s13, s2)


def _cached_weights(point: dict[str, Any], ctx: Any) -> MoeWeights:
    """Weights of the current shape, kept across the points that share it (allocation is the slow part)."""
    import torch

    experts, n, k = int(point["experts_per_rank"]), int(point["n"]), int(point["k"])
    key = (experts, n, k, point["dtype"])
    cached = ctx.cache.get("moe_triton_weights")
    if cached is not None and cached[0] == key:
        return cached[1]
    ctx.cache.pop("moe_triton_weights", None)
    torch.cuda.empty_cache()
    weights = make_weights(experts, n, k, point["dtype"] == "fp8_block")
    ctx.cache["moe_triton_weights"] = (key, weights)
    return weights


def _warm_twin(point: dict[str, Any]) -> dict[str, Any]:
    """A tiny point that compiles the same kernels (same dtype, top-k and specialisations; the config is
    passed explicitly), so that parallel warm-up processes do not each allocate a full expert set."""
    return {**point, "num_experts": 16, "experts_per_rank": 16, "n": 128, "k": 256, "m": 64}


def _routing_sets(point: dict[str, Any], weights: MoeWeights, max_sets: int = MAX_ROUTING_SETS) -> list[Any]:
    """Slot-to-local-expert maps for the launches of one timing: one per routing draw, as many as it takes for
    the experts they touch to exceed twice the L2 cache. In a server consecutive MoE layers read different
    weights; replaying one small-m launch would instead find its few experts' weights in L2."""
    import torch

    from simperf.calibrate.backends.moe import route

    m, topk, experts = int(point["m"]), int(point["topk"]), int(point["num_experts"])
    per_expert_bytes = sum(w[0].numel() * w.element_size() for w in (weights.w13, weights.w2))
    l2_bytes = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    sets: list[Any] = []
    touched = 0
    while not sets or (touched < 2 * l2_bytes and len(sets) < max_sets):
        topk_ids = route(m, experts, topk, point["routing"], seed=m + 7919 * len(sets))
        slots = busiest_rank_slots(topk_ids, int(point["experts_per_rank"])).cuda()
        sets.append(slots)
        touched += int(torch.unique(slots[slots >= 0]).numel()) * per_expert_bytes
    return sets


def _launchers(
    point: dict[str, Any], weights: MoeWeights, routings: list[Any], cfg: BlockConfig
) -> list[Any]:
    import torch

    from simperf.calibrate.timing import random_tensor

    m, k, topk = int(point["m"]), int(point["k"]), int(point["topk"])
    fp8 = weights.s13 is not None
    launchers = []
    for slot_expert in routings:
        router_weights = torch.rand(m * topk, device="cuda", dtype=torch.float32)
        x = random_tensor((m, k), torch.bfloat16)
        buf = alloc_buffers(x, weights, topk, cfg, fp8=fp8)

        def launch(x=x, rw=router_weights, se=slot_expert, buf=buf) -> None:
            fused_moe(x, weights, rw, se, topk, buf, cfg)

        launchers.append(launch)
    return launchers


def _is_config_failure(exc: BaseException) -> bool:
    """A tile configuration this GPU cannot run (shared memory, registers): skip it, keep tuning."""
    text = f"{type(exc).__name__} {exc}"
    return "OutOfResources" in text or "out of resource" in text


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    """Tune the tile configuration for this shape (short timings of every candidate), then time the fastest
    with the run's full timing settings; the configuration is recorded in the row's timing_method.

    When the timer collects launchers instead of timing (`simperf validate`), the kernel is built with
    `validation_config(point)`, on one routing draw (only the first launcher is taken), and nothing is tuned."""
    from simperf.calibrate.timing import TimingConfig, time_graph_replay

    if not HAVE_TRITON:
        raise Unsupported("triton is not installed")
    dtype = point["dtype"]
    check_supported(dtype, int(point["n"]), int(point["k"]))
    if ctx.timing.collect is not None:
        weights = _cached_weights(point, ctx)
        routings = _routing_sets(point, weights, max_sets=1)
        time_graph_replay(_launchers(point, weights, routings, validation_config(point)), ctx.timing)
        return None
    candidates = point_candidates(point)
    if ctx.timing.warm_only:  # compile every candidate on a tiny twin of the shape
        twin = _warm_twin(point)
        weights = make_weights(16, 128, 256, dtype == "fp8_block")
        # compiling needs one launch set, not L2-cold ones
        routings = _routing_sets(twin, weights, max_sets=1)
        for cfg in candidates:
            try:
                time_graph_replay(_launchers(twin, weights, routings, cfg), ctx.timing)
            except Exception as exc:  # noqa: BLE001 - a config that does not fit is skipped, as when tuning
                if not _is_config_failure(exc):
                    raise
        return None
    weights = _cached_weights(point, ctx)
    routings = _routing_sets(point, weights)
    best, tried = candidates[0], 0
    if len(candidates) > 1:
        search = TimingConfig(target_ms=8.0, min_repeats=3, max_repeats=10)
        best_us = float("inf")
        for cfg in candidates:
            try:
                measured = time_graph_replay(_launchers(point, weights, routings, cfg), search)
            except Exception as exc:  # noqa: BLE001
                if not _is_config_failure(exc):
                    raise
                continue
            tried += 1
            if measured is not None and measured.time_us < best_us:
                best, best_us = cfg, measured.time_us
    final = time_graph_replay(_launchers(point, weights, routings, best), ctx.timing)
    if final is None:
        return None
    return replace(final, timing_method=tuned_timing_method(final.timing_method, best, tried))
