"""Decode attention over a shared prefix: the designed set that measures what reading the same pages saves.

With SGLang's radix cache on, requests that hit one cached prefix (a system prompt, a few-shot header) point at
the same KV pages, and a decode kernel's CTAs of those requests read them at about the same moment: all but the
first read come from L2, not HBM. The calibration tables time requests with distinct pages, so they cannot see
it. This set times the same batches twice on one GPU, once with distinct pages (`prefix_groups` absent) and once
with each group's prefix pages shared (`PrefixGroups`), across batch, prefix, own tokens and requests per group;
the ratio of the two is what `perfdb.shared_reads` reads.

Every sample is a calibration point timed by `python -m simperf.perfdb.offgrid time` with the tables' protocol
(CUDA-graph replay, input sets rotated past twice the L2, so that only reads within one launch can hit L2).
Group membership is drawn at random (SEED): SGLang's running batch holds requests in admission order, not
grouped. A pair shares an `id // 2`: even ids distinct, odd ids shared.
"""

from __future__ import annotations

import random
from typing import Any

from simperf.calibrate.grid import MLA_DIMS
from simperf.calibrate.points import make_point
from simperf.perfdb.shared_reads import PrefixGroups

SEED = 20261127
# (op, backend, q heads, kv heads): the GQA layouts of the corpus' dense and MoE models at TP1 (Llama-3.1-8B and
# Qwen3-8B 32/8, Qwen3-32B 64/8, Qwen3-30B-A3B 32/4) and TP8 (8/1); MLA at 16 heads per rank (DeepSeek-V2-Lite
# TP1, DeepSeek-R1 TP8) and 128 (DP attention), with SGLang's flashinfer page size 1
LAYOUTS = (
    ("attn_gqa_decode", "flashinfer", 32, 8),
    ("attn_gqa_decode", "flashinfer", 64, 8),
    ("attn_gqa_decode", "flashinfer", 32, 4),
    ("attn_gqa_decode", "flashinfer", 8, 1),
    ("attn_mla_decode", "flashinfer_fa3", 16, 1),
    ("attn_mla_decode", "flashinfer_fa3", 128, 1),
)
# SGLang's own FA3 kernel (sgl-kernel's flash_attn_with_kvcache, its Hopper default): the layouts the H100 tables
# hold for it; timed on Hopper only, in a set of its own (`--shared-prefix sgl_fa3`)
FA3_LAYOUTS = (
    ("attn_gqa_decode", "sgl_fa3", 32, 8),
    ("attn_gqa_decode", "sgl_fa3", 64, 8),
    ("attn_gqa_decode", "sgl_fa3", 32, 4),
)
SETS = {"flashinfer": LAYOUTS, "sgl_fa3": FA3_LAYOUTS}
BATCHES = (8, 16, 32, 64, 128)
PREFIXES = (512, 2048, 8192)
OWN_TOKENS = (64, 512)
PER_GROUP = (2, 4, 8, 16)


def _point(op: str, backend: str, heads: int, kv_heads: int, lens: list[int]) -> dict[str, Any]:
    dims = (
        MLA_DIMS
        if op == "attn_mla_decode"
        else {"num_kv_heads": kv_heads, "head_dim": 128, "head_dim_v": 128}
    )
    return make_point(
        op, backend, sample="heldout", dtype="bf16", kv_dtype="bf16", page_size=1, num_heads=heads, q_len=1,
        batch=len(lens), kv_len=round(sum(lens) / len(lens)), kv_lens=lens, **dims,
    )  # fmt: skip


def _groups(rng: random.Random, batch: int, per_group: int) -> list[int]:
    group = [i // per_group for i in range(batch)]
    rng.shuffle(group)
    return group


def generate(layouts: tuple[tuple[str, str, int, int], ...] = LAYOUTS) -> list[dict[str, Any]]:
    """Pairs of samples (distinct pages, then shared prefix pages) over layouts x BATCHES x PREFIXES x
    OWN_TOKENS x PER_GROUP (requests per group at most the batch). A request's KV is its group's prefix plus
    its own tokens, spread ±25% at random so that the batch is ragged as a served one is."""
    rng = random.Random(SEED)
    samples: list[dict[str, Any]] = []
    for op, backend, heads, kv_heads in layouts:
        for batch in BATCHES:
            for prefix in PREFIXES:
                for own in OWN_TOKENS:
                    for per_group in (g for g in PER_GROUP if g <= batch):
                        lens = [prefix + max(1, round(own * rng.uniform(0.75, 1.25))) for _ in range(batch)]
                        shared = PrefixGroups(prefix, tuple(_groups(rng, batch, per_group)))
                        point = _point(op, backend, heads, kv_heads, lens)
                        note = (
                            f"{batch} requests, {prefix}-token prefix shared by {per_group} per group, "
                            f"~{own} own tokens, {heads}q/{kv_heads}kv"
                        )
                        for with_sharing in (False, True):
                            p = dict(point)
                            if with_sharing:
                                p["prefix_groups"] = shared.to_json()
                            samples.append(
                                {
                                    "id": len(samples),
                                    "category": "decode",
                                    "ragged": True,
                                    "model": "designed",
                                    "note": note
                                    + (" (shared pages)" if with_sharing else " (distinct pages)"),
                                    "point": p,
                                }  # fmt: skip
                            )
    return samples


def set_header(samples: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "seed": SEED,
        "counts": {"decode": len(samples)},
        "ragged_share": {"decode": 1.0},
        "generator": f"{__name__}.generate",
    }
