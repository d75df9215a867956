"""The off-grid set: seeded random kernel calls of the zoo models, as SGLang runs them, off the tables' grids.

Each sample is one kernel call: a calibration point (op, table backend, key columns, axes; per-request
`kv_lens` / `q_lens` JSON lists for a ragged batch) that the calibration backends can time, plus where it came
from (model, layout, what it is). Samples are drawn per category with fixed counts:

- decode attention (MLA fa3 / flashinfer / FlashMLA, GQA flashinfer, NSA FlashMLA): page sizes 1/16/32/64 as
  the backend allows, bf16 or fp8 KV, heads per rank of TP 1-16 and DP attention, MTP verify widths, batch sizes on
  SGLang's CUDA-graph bucket list (or any size, as an eager step runs), 60% ragged (per-request KV lengths
  lognormal around a log-uniform median);
- extend attention (MHA prefill of DeepSeek's MHA path and of the dense models, absorbed MLA extend, NSA sparse
  prefill on the H200), 50% ragged (per-request new tokens and cached prefixes);
- every zoo model's GEMMs (and MLA's bmm) from its real op list at a random layout and token count;
- MoE (simperf's Triton fused MoE at the zoo MoE layouts), elementwise kernels (norms, SiLU, rope, fp8 quant).

Nothing here depends on a measurement: the seed (OFFGRID_SEED) and the counts were fixed before any result of
the set existed, and a draw that lands exactly on a measured grid point of its key is drawn again (`on_grid`).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simperf.calibrate.grid import ELEMENTWISE_BACKENDS, MLA_DIMS
from simperf.calibrate.points import Point, make_point
from simperf.models.arch import ModelArch
from simperf.models.kernels import gemm_keys
from simperf.models.ops import OpCall, StepSettings, row_ops
from simperf.models.zoo import load_arch, zoo_architectures
from simperf.scenario.resolved import ParallelLayout

OFFGRID_SEED = 19  # fixed with the category counts below before any off-grid result existed (issue 19)
CATEGORY_COUNTS = {"decode": 120, "extend": 60, "gemm": 80, "moe": 25, "elementwise": 30}
RAGGED_SHARE = {"decode": 0.6, "extend": 0.5}
MAX_KV_TOKENS = 4 * 1024 * 1024  # as the calibration grid's cap: what one point may hold resident
MAX_EXTEND_TOKENS = 16384  # SGLang's default chunked-prefill size on H200 / max_prefill_tokens
DSV3_INDEX_TOPK = 2048

# SGLang 0.5.17 server_args.py _generate_decode_cuda_graph_batch_sizes, up to 512 (the spec list for verify)
GRAPH_BS = (1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 497, 16), 512)
SPEC_GRAPH_BS = (*range(1, 9), *range(10, 33, 2), *range(40, 65, 4), *range(72, 257, 8))

OnGrid = Callable[[Point], bool]


@dataclass(frozen=True)
class Draw:
    """What a sampler drew: the point to time and where it came from."""

    point: Point
    model: str
    note: str

    @property
    def ragged(self) -> bool:
        return bool(self.point.get("kv_lens") or self.point.get("q_lens"))


# ---- small random helpers -------------------------------------------------------------------------------------


def _log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def _lognormal_lens(rng: random.Random, n: int, median: float, sigma: float, lo: int, hi: int) -> list[int]:
    return [max(lo, min(hi, int(rng.lognormvariate(math.log(median), sigma)))) for _ in range(n)]


def _fit_total(lens: list[int], cap: int, lo: int) -> list[int]:
    """Scale lengths down so that they sum to at most `cap` (memory of one point), keeping the shape."""
    total = sum(lens)
    if total <= cap:
        return lens
    return [max(lo, int(v * cap / total)) for v in lens]


def _tokens(rng: random.Random) -> int:
    """A step's token rows: a decode bucket (x1 or a few draft tokens) half the time, a prefill chunk otherwise."""
    if rng.random() < 0.5:
        return rng.choice(GRAPH_BS) * rng.choice((1, 1, 1, 2, 4))
    return max(1, int(_log_uniform(rng, 1, 16384)))


def _archs() -> dict[str, ModelArch]:
    return {name: load_arch(name) for name in zoo_architectures()}


# ---- decode attention ----------------------------------------------------------------------------------------


def _decode_batch(rng: random.Random, q_len: int) -> int:
    if rng.random() < 0.85:
        return rng.choice(SPEC_GRAPH_BS if q_len > 1 else GRAPH_BS)
    return rng.randint(1, 600)  # an eager step (graphs off, or more running requests than the largest bucket)


def _decode_lens(rng: random.Random, batch: int, q_len: int, ragged: bool) -> tuple[int, list[int] | None]:
    """(mean KV length, per-request KV lengths or None); KV includes the q_len new tokens."""
    if ragged:
        median = _log_uniform(rng, 128, 16384)
        lens = _lognormal_lens(rng, batch, median, rng.uniform(0.4, 1.3), max(16, q_len), 131072)
        lens = _fit_total(lens, MAX_KV_TOKENS, max(16, q_len))
        return round(sum(lens) / batch), lens
    kv = int(_log_uniform(rng, 64, 65536))
    kv = max(q_len, min(kv, MAX_KV_TOKENS // batch))
    return kv, None


def _mla_decode(rng: random.Random, arch: ModelArch, ragged: bool) -> Draw:
    heads = rng.choice((128, 128, 64, 32, 16, 16, 8))  # DP attention / TP1, TP2, TP4, TP8, TP16
    scenario_backend = rng.choice(("fa3", "fa3", "flashinfer", "flashmla", "flashmla"))
    if scenario_backend == "flashmla":
        backend, page = "flashmla", 64
    else:  # SGLang's fa3 MLA and (on SM90) flashinfer's auto backend: flashinfer's fa3 MLA kernels
        backend, page = "flashinfer_fa3", rng.choice((1, 1, 16, 32, 64))
    kv_dtype = "fp8" if rng.random() < 0.2 else "bf16"
    q_len = rng.choice((2, 3, 4)) if rng.random() < 0.15 else 1
    batch = _decode_batch(rng, q_len)
    kv_len, lens = _decode_lens(rng, batch, q_len, ragged)
    point = make_point(
        "attn_mla_decode", backend, dtype="bf16", kv_dtype=kv_dtype, page_size=page, num_heads=heads,
        q_len=q_len, batch=batch, kv_len=kv_len, kv_lens=lens, **MLA_DIMS,
    )  # fmt: skip
    return Draw(point, arch.name, f"{scenario_backend} MLA decode, {heads} heads/rank, page {page}")


def _nsa_decode(rng: random.Random, arch: ModelArch, ragged: bool) -> Draw:
    heads = rng.choice((128, 16, 32))  # DP attention; TP8 / TP4 ranks pad to 64 on SM90
    padded = 64 if heads <= 64 else 128
    batch = _decode_batch(rng, 1)
    kv_len, lens = _decode_lens(rng, batch, 1, ragged)
    point = make_point(
        "attn_nsa_decode", "flashmla_kv", dtype="bf16", kv_dtype="fp8", page_size=64, num_heads=padded,
        topk=DSV3_INDEX_TOPK, q_len=1, batch=batch, kv_len=max(kv_len, 1), kv_lens=lens, **MLA_DIMS,
    )  # fmt: skip
    return Draw(point, arch.name, f"flashmla_kv sparse decode, {heads} heads/rank (run as {padded})")


def _gqa_decode(rng: random.Random, arch: ModelArch, ragged: bool) -> Draw:
    tp = rng.choice((1, 1, 2, 4, 8))
    layout = ParallelLayout(tp, 1, 1)
    heads, kv_heads = arch.heads_per_rank(layout), arch.kv_heads_per_rank(layout)
    page = rng.choice((1, 1, 16, 32, 64))
    kv_dtype = "fp8" if rng.random() < 0.25 else "bf16"
    batch = _decode_batch(rng, 1)
    kv_len, lens = _decode_lens(rng, batch, 1, ragged)
    point = make_point(
        "attn_gqa_decode", "flashinfer", dtype="bf16", kv_dtype=kv_dtype, page_size=page, num_heads=heads,
        num_kv_heads=kv_heads, head_dim=arch.head_dim, head_dim_v=arch.head_dim, q_len=1, batch=batch,
        kv_len=kv_len, kv_lens=lens,
    )  # fmt: skip
    return Draw(point, arch.name, f"flashinfer GQA decode at TP{tp}, page {page}, {kv_dtype} KV")


def _pick(rng: random.Random, archs: dict[str, ModelArch], families: tuple[str, ...]) -> ModelArch:
    return archs[rng.choice(sorted(n for n, a in archs.items() if a.family in families))]


def decode_draw(rng: random.Random, archs: dict[str, ModelArch], ragged: bool) -> Draw:
    """MLA models 45%, DeepSeek-V3.2's sparse decode 10%, the GQA models 45% (by family, not by zoo entry: the
    zoo has three DeepSeek checkpoints of one shape)."""
    r = rng.random()
    if r < 0.45:
        return _mla_decode(rng, _pick(rng, archs, ("mla_moe",)), ragged)
    if r < 0.55:
        return _nsa_decode(rng, _pick(rng, archs, ("nsa_moe",)), ragged)
    return _gqa_decode(rng, _pick(rng, archs, ("dense", "gqa_moe")), ragged)


# ---- extend attention ----------------------------------------------------------------------------------------


def _extend_lens(rng: random.Random, ragged: bool, prefix_share: float) -> tuple[list[int], list[int]]:
    """(new tokens, cached prefix) per request of one extend batch, at most MAX_EXTEND_TOKENS new tokens."""
    if ragged:
        n = rng.randint(2, 12)
        q = _lognormal_lens(rng, n, _log_uniform(rng, 32, 4096), rng.uniform(0.5, 1.3), 1, MAX_EXTEND_TOKENS)
        q = _fit_total(q, MAX_EXTEND_TOKENS, 1)
        prefix = [0 if rng.random() > prefix_share else int(_log_uniform(rng, 16, 16384)) for _ in range(n)]
        return q, prefix
    n = rng.choice((1, 1, 1, 2, 3, 4, 6, 8))
    q_len = max(1, int(_log_uniform(rng, 16, MAX_EXTEND_TOKENS / n)))
    p = 0 if rng.random() > prefix_share else int(_log_uniform(rng, 16, 16384))
    return [q_len] * n, [p] * n


def _with_lens(point: Point, q: list[int], prefix: list[int]) -> Point:
    """The point's axes from per-request lengths (rounded means), and the lists when the batch is ragged."""
    kv = [a + b for a, b in zip(q, prefix, strict=True)]
    out = dict(point, batch=len(q), q_len=round(sum(q) / len(q)), kv_len=round(sum(kv) / len(kv)))
    if len(set(q)) > 1 or len(set(prefix)) > 1:
        out.update(q_lens=json.dumps(q), kv_lens=json.dumps(kv))
    return out


def _mha_prefill(rng: random.Random, arch: ModelArch, ragged: bool) -> Draw:
    if arch.is_mla:  # DeepSeek's MHA path: no prefix, or a long one (MHA_CHUNKED_KV)
        heads = rng.choice((128, 64, 32, 16, 16, 8))
        kv_heads, d_qk, d_v = heads, arch.qk_nope_head_dim + arch.qk_rope_head_dim, arch.v_head_dim
    else:
        tp = rng.choice((1, 1, 2, 4, 8))
        layout = ParallelLayout(tp, 1, 1)
        heads, kv_heads = arch.heads_per_rank(layout), arch.kv_heads_per_rank(layout)
        d_qk = d_v = arch.head_dim
    q, prefix = _extend_lens(rng, ragged, prefix_share=0.4)
    point = make_point(
        "attn_mha_prefill", "flashinfer_fa3", dtype="bf16", kv_dtype="bf16", num_heads=heads,
        num_kv_heads=kv_heads, head_dim=d_qk, head_dim_v=d_v, batch=1, q_len=1, kv_len=1,
    )  # fmt: skip
    return Draw(
        _with_lens(point, q, prefix), arch.name, f"fa3 MHA prefill, {heads}/{kv_heads} heads, {d_qk}/{d_v}"
    )


def _mla_extend(rng: random.Random, arch: ModelArch, ragged: bool) -> Draw:
    heads = rng.choice((128, 64, 32, 16, 16, 8))
    page = rng.choice((1, 1, 16, 64))
    q, prefix = _extend_lens(rng, ragged, prefix_share=0.9)
    point = make_point(
        "attn_mla_extend", "flashinfer_fa3", dtype="bf16", kv_dtype="bf16", page_size=page, num_heads=heads,
        num_kv_heads=1, head_dim=576, head_dim_v=512, batch=1, q_len=1, kv_len=1,
    )  # fmt: skip
    return Draw(
        _with_lens(point, q, prefix), arch.name, f"absorbed MLA extend, {heads} heads/rank, page {page}"
    )


def _nsa_prefill(rng: random.Random, arch: ModelArch) -> Draw:
    heads = rng.choice((64, 128))
    m = max(1, int(_log_uniform(rng, 64, MAX_EXTEND_TOKENS)))
    kv_len = max(m, int(_log_uniform(rng, 2048, 131072)))
    point = make_point(
        "attn_nsa_prefill", "flashmla_sparse", dtype="bf16", kv_dtype="bf16", topk=DSV3_INDEX_TOPK,
        num_heads=heads, m=m, kv_len=kv_len, **MLA_DIMS,
    )  # fmt: skip
    return Draw(point, arch.name, f"flashmla_sparse prefill, {heads} heads")


def extend_draw(rng: random.Random, archs: dict[str, ModelArch], ragged: bool) -> Draw:
    """Absorbed MLA extend 25%, DeepSeek's MHA path 25%, NSA sparse prefill 10% of the uniform draws, the GQA
    models' prefill the rest."""
    r = rng.random()
    if r < 0.25:
        return _mla_extend(rng, _pick(rng, archs, ("mla_moe",)), ragged)
    if r < 0.5:
        return _mha_prefill(rng, _pick(rng, archs, ("mla_moe", "nsa_moe")), ragged)
    if r < 0.6 and not ragged:
        return _nsa_prefill(rng, _pick(rng, archs, ("nsa_moe",)))
    return _mha_prefill(rng, _pick(rng, archs, ("dense", "gqa_moe")), ragged)


# ---- row ops: GEMMs, MoE, elementwise ------------------------------------------------------------------------


def _layout(rng: random.Random, arch: ModelArch) -> ParallelLayout:
    tp = rng.choice((1, 2, 4, 8))
    if arch.is_mla:
        dp = rng.choice((1, 1, tp))
        return ParallelLayout(tp, dp, rng.choice((1, tp)) if arch.is_moe else 1)
    return ParallelLayout(tp, 1, rng.choice((1, tp)) if arch.is_moe else 1)


def _row_ops(rng: random.Random, arch: ModelArch) -> tuple[list[OpCall], str, int]:
    layout = _layout(rng, arch)
    dtype = arch.default_weight_dtype if arch.is_mla else rng.choice(("bf16", "bf16", "fp8"))
    settings = StepSettings(layout, dtype, "bf16", 1, "fa3", "fa3")
    tokens = _tokens(rng)
    method = "absorb" if arch.is_mla else "gqa"
    ops = row_ops(arch, settings, tokens, min(tokens, 256), method)
    if arch.is_mla:  # the MHA path's kv_b_proj decompresses the KV of the batch (new and cached tokens)
        heads = arch.heads_per_rank(layout)
        kv_b = gemm_keys(dtype, heads * (arch.qk_nope_head_dim + arch.v_head_dim), arch.kv_lora_rank)
        kv_tokens = tokens * rng.choice((1, 1, 2, 8))
        ops.append(OpCall("kv_b_proj", "gemm", kv_b, {"m": min(kv_tokens, 131072)}, arch.num_layers))
    where = f"TP{layout.tp}" + (f" DP{layout.dp_attention}" if layout.dp_attention > 1 else "")
    where += f" EP{layout.ep}" if layout.ep > 1 else ""
    return ops, f"{where}, {dtype} weights", tokens


def _gemm_point(op: OpCall) -> Point:
    key = dict(op.candidates[0])
    m = int(op.axes["m"])
    if op.op == "bmm":
        return make_point("bmm", "torch", dtype="bf16", batch=key["batch"], n=key["n"], k=key["k"], m=m)
    n, k, dtype = int(key["n"]), int(key["k"]), str(key["dtype"])
    if dtype == "fp8_block" and (n % 128 or k % 128):
        dtype = "fp8_rowwise"  # 128x128 block scales need n and k divisible by 128
    backend = "torch" if dtype == "bf16" else "torch_scaled_mm"
    return make_point("gemm", backend, dtype=dtype, n=n, k=k, m=m)


def gemm_draw(rng: random.Random, arch: ModelArch) -> Draw:
    ops, where, _ = _row_ops(rng, arch)
    gemms = [o for o in ops if o.op in ("gemm", "bmm")]
    op = rng.choice(gemms)
    return Draw(_gemm_point(op), arch.name, f"{op.name} ({where})")


def moe_draw(rng: random.Random, archs: dict[str, ModelArch]) -> Draw:
    arch = archs[rng.choice(sorted(n for n, a in archs.items() if a.is_moe))]
    ops, where, _ = _row_ops(rng, arch)
    op = next(o for o in ops if o.op == "moe")
    key = dict(op.candidates[0])
    point = make_point("moe", "triton_fused_moe", **{c: v for c, v in key.items() if c != "backend"},
                       m=int(op.axes["m"]))  # fmt: skip
    if rng.random() < 0.3:
        point["routing"] = point["routing"].replace("balanced", "zipf")
    return Draw(point, arch.name, f"routed experts ({where}, {point['routing']})")


def elementwise_draw(rng: random.Random, arch: ModelArch) -> Draw:
    ops, where, _ = _row_ops(rng, arch)
    kernels = [
        o for o in ops if o.op == "elementwise" and dict(o.candidates[0])["variant"] in ELEMENTWISE_BACKENDS
    ]
    op = rng.choice(kernels)
    variant, n = dict(op.candidates[0])["variant"], int(dict(op.candidates[0])["n"])
    point = make_point("elementwise", ELEMENTWISE_BACKENDS[variant], variant=variant, dtype="bf16", n=n,
                       m=int(op.axes["m"]))  # fmt: skip
    return Draw(point, arch.name, f"{op.name} ({where})")


# ---- the set ---------------------------------------------------------------------------------------------------


def _draw(category: str, rng: random.Random, archs: dict[str, ModelArch], ragged: bool) -> Draw:
    if category == "decode":
        return decode_draw(rng, archs, ragged)
    if category == "extend":
        return extend_draw(rng, archs, ragged)
    if category == "moe":
        return moe_draw(rng, archs)
    arch = archs[rng.choice(sorted(archs))]
    return gemm_draw(rng, arch) if category == "gemm" else elementwise_draw(rng, arch)


def generate(on_grid: OnGrid | None = None, seed: int = OFFGRID_SEED) -> list[dict[str, Any]]:
    """The off-grid set: CATEGORY_COUNTS samples per category, the first RAGGED_SHARE of the decode and extend
    ones ragged. One set serves every GPU (so that two GPUs' times of the same calls can be compared); a uniform
    draw on a measured grid point of its key (`on_grid`, on any GPU's tables) is drawn again."""
    archs = _archs()
    samples: list[dict[str, Any]] = []
    for category, count in CATEGORY_COUNTS.items():
        rng = random.Random(f"{seed}:{category}")
        ragged_count = round(count * RAGGED_SHARE.get(category, 0.0))
        for i in range(count):
            ragged = i < ragged_count
            for _ in range(100):
                draw = _draw(category, rng, archs, ragged)
                if draw.ragged or on_grid is None or not on_grid(draw.point):
                    break
            samples.append(
                {
                    "id": len(samples),
                    "category": category,
                    "ragged": draw.ragged,
                    "model": draw.model,
                    "note": draw.note,
                    "point": {**draw.point, "sample": "heldout"},  # never a grid row
                }
            )
    return samples


def generate_ragged_extends(count: int, seed: int) -> list[dict[str, Any]]:
    """A development set apart from the off-grid set: `count` ragged extend batches drawn as the off-grid set draws
    its ragged extends (`extend_draw`), from another seed, for working on the ragged-extend pricing without
    looking at the held-out set."""
    archs = _archs()
    rng = random.Random(f"{seed}:ragged-extend")
    samples: list[dict[str, Any]] = []
    while len(samples) < count:
        draw = extend_draw(rng, archs, True)
        if not draw.ragged:  # a draw whose lengths came out equal is uniform: not what this set is for
            continue
        samples.append(
            {
                "id": len(samples),
                "category": "extend",
                "ragged": True,
                "model": draw.model,
                "note": draw.note,
                "point": {**draw.point, "sample": "heldout"},
            }
        )
    return samples


# A designed (not random) development set: GQA decode batches of short requests with one long one. Where the batch
# is too large for flashinfer to split the KV (batch x kv_heads beyond its grid), the long request is one CTA per KV
# head that runs on after the rest finish: its time says how fast one CTA streams KV alone, which the tables'
# uniform batches never show. Layouts: 32q/8kv (tensor-core decode), 32q/32kv (CUDA-core), 8q/1kv (one KV head).
STRAGGLER_LAYOUTS = ((32, 8), (32, 32), (8, 1))
STRAGGLER_BATCHES = (64, 128, 256, 512)
STRAGGLER_LONG = (8192, 32768, 131072)
STRAGGLER_SHORT = (64, 1024)
# appended after the first 72 (their ids stay): the page sizes and the fp8 KV cache SGLang also runs, at short 64
STRAGGLER_VARIANTS = (("bf16", 16), ("bf16", 64), ("fp8", 1))
STRAGGLER_VARIANT_LAYOUTS = ((32, 8), (32, 32))
STRAGGLER_VARIANT_BATCHES = (128, 512)
STRAGGLER_VARIANT_LONG = (32768, 131072)
# appended after those (2026-11-28, twenty-third session): the CUDA-core kernel at group sizes 2 and 3, whose CTAs
# hold fewer KV tokens per stage than group 1's (tile_size_per_bdx 1, bdz 128 / (16 x group)), so one CTA streams at
# its own rate; batches of 256 and 512 on 8 KV heads stay unsplit on their 1,188-CTA grid
STRAGGLER_GROUP_LAYOUTS = ((16, 8), (24, 8))
STRAGGLER_GROUP_PAGES = (1, 16, 64)
STRAGGLER_GROUP_BATCHES = (256, 512)


def _straggler(
    heads: int,
    kv_heads: int,
    batch: int,
    long: int,
    short: int,
    kv_dtype: str,
    page: int,
    backend: str = "flashinfer",
) -> Draw:
    lens = [short] * (batch - 1) + [long]
    point = make_point(
        "attn_gqa_decode", backend, dtype="bf16", kv_dtype=kv_dtype, page_size=page, num_heads=heads,
        num_kv_heads=kv_heads, head_dim=128, head_dim_v=128, q_len=1, batch=batch, kv_len=round(sum(lens) / batch),
        kv_lens=json.dumps(lens),
    )  # fmt: skip
    note = f"{batch - 1} x {short} + 1 x {long} KV, {heads}q/{kv_heads}kv"
    if (kv_dtype, page) != ("bf16", 1):
        note += f", page {page}, {kv_dtype} KV"
    return Draw(point, "designed", note)


# The same design for SGLang's own FA3 decode (`sgl_fa3`, SGLang's default attention backend on Hopper; page size 1):
# one kernel for every group size, whose split heuristic (num_splits_heuristic) stops splitting once the batch's
# tiles fill the SMs, so a long request in a large batch may run on one CTA per KV head as in flashinfer.
FA3_STRAGGLER_LAYOUTS = ((32, 8), (64, 8), (32, 32))
FA3_STRAGGLER_LONG = (8192, 32768, 131072)


def generate_fa3_stragglers() -> list[dict[str, Any]]:
    """Every FA3 layout x batch x long at short 64: the designed straggler set of the `sgl_fa3` decode."""
    draws = [
        _straggler(heads, kv_heads, batch, long, 64, "bf16", 1, "sgl_fa3")
        for heads, kv_heads in FA3_STRAGGLER_LAYOUTS
        for batch in STRAGGLER_BATCHES
        for long in FA3_STRAGGLER_LONG
    ]
    return _designed(draws)


def _designed(draws: list[Draw]) -> list[dict[str, Any]]:
    """A set's rows: every draw a ragged decode call, numbered in order."""
    return [
        {
            "id": i,
            "category": "decode",
            "ragged": True,
            "model": d.model,
            "note": d.note,
            "point": {**d.point, "sample": "heldout"},
        }  # fmt: skip
        for i, d in enumerate(draws)
    ]


def generate_stragglers() -> list[dict[str, Any]]:
    """Every layout x batch x long x short of the STRAGGLER_* axes (page 1, bf16: SGLang's defaults), then every
    variant layout x page/dtype x batch x long at short 64, then the group-2/3 layouts x page x batch x long at short
    64: batch - 1 requests of `short` KV tokens and one of `long`, flashinfer GQA decode."""
    draws = [
        _straggler(heads, kv_heads, batch, long, short, "bf16", 1)
        for heads, kv_heads in STRAGGLER_LAYOUTS
        for batch in STRAGGLER_BATCHES
        for long in STRAGGLER_LONG
        for short in STRAGGLER_SHORT
    ]
    draws += [
        _straggler(heads, kv_heads, batch, long, 64, kv_dtype, page)
        for heads, kv_heads in STRAGGLER_VARIANT_LAYOUTS
        for kv_dtype, page in STRAGGLER_VARIANTS
        for batch in STRAGGLER_VARIANT_BATCHES
        for long in STRAGGLER_VARIANT_LONG
    ]
    draws += [
        _straggler(heads, kv_heads, batch, long, 64, "bf16", page)
        for heads, kv_heads in STRAGGLER_GROUP_LAYOUTS
        for page in STRAGGLER_GROUP_PAGES
        for batch in STRAGGLER_GROUP_BATCHES
        for long in STRAGGLER_VARIANT_LONG
    ]
    return _designed(draws)


# A seeded held-out set for the straggler cost (`--straggler-check N --seed S`): flashinfer GQA decode batches of
# random short requests with one or two long ones, over the KV-head layouts SGLang's per-rank heads give (group
# sizes 1-3 run the CUDA-core kernel, whose grid size depends on its occupancy; 4+ the tensor-core one), page sizes
# 1/16/32/64, and batch sizes on both sides of the CUDA-core grid (4-8 CTAs per SM x 132 SMs / KV heads).
CHECK_GROUPS = (1, 2, 3, 4)
CHECK_KV_HEADS = (1, 2, 4, 8)
CHECK_PAGES = (1, 16, 32, 64)


def _straggler_check_draw(rng: random.Random, backend: str) -> Draw:
    if backend == "sgl_fa3":  # one kernel for every group size; SGLang's fa3 backend pages by 1
        group, kv_heads, page = rng.choice((1, 2, 4, 8)), rng.choice(CHECK_KV_HEADS), 1
    else:
        group, kv_heads, page = rng.choice(CHECK_GROUPS), rng.choice(CHECK_KV_HEADS), rng.choice(CHECK_PAGES)
    batch = int(_log_uniform(rng, 32, 600))
    longs = [int(_log_uniform(rng, 4096, 65536)) for _ in range(rng.choice((1, 2)))]
    shorts = _lognormal_lens(
        rng, batch - len(longs), _log_uniform(rng, 64, 1024), rng.uniform(0.3, 1.0), 16, 4096
    )
    lens = shorts + longs
    rng.shuffle(lens)
    point = make_point(
        "attn_gqa_decode", backend, dtype="bf16", kv_dtype="bf16", page_size=page, num_heads=group * kv_heads,
        num_kv_heads=kv_heads, head_dim=128, head_dim_v=128, q_len=1, batch=batch, kv_len=round(sum(lens) / batch),
        kv_lens=json.dumps(lens),
    )  # fmt: skip
    note = f"{batch - len(longs)} short + {len(longs)} long ({max(longs)}) KV, {group * kv_heads}q/{kv_heads}kv, page {page}"
    return Draw(point, "straggler-check", note)


def generate_straggler_check(count: int, seed: int, backend: str = "flashinfer") -> list[dict[str, Any]]:
    """`count` seeded straggler batches (see CHECK_GROUPS) of one decode backend: a held-out set for the straggler
    cost."""
    rng = random.Random(seed)
    return _designed([_straggler_check_draw(rng, backend) for _ in range(count)])


def set_header(seed: int = OFFGRID_SEED) -> dict[str, Any]:
    """What a sample file records about how it was drawn."""
    return {"seed": seed, "counts": CATEGORY_COUNTS, "ragged_share": RAGGED_SHARE, "generator": __name__}
