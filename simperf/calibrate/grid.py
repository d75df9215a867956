"""The calibration grid: which points to measure, per op family, plus held-out and ragged samples.

The default grid is written here; a YAML grid file overrides it family by family (a family's keys are
replaced, not merged deeply), e.g.

    caps: {max_kv_tokens: 2097152}
    mla_decode: {num_heads: [128, 16], batch: [1, 64, 512]}
    moe: {enabled: false}

Everything here is deterministic (seeded), so a rerun regenerates the same points and resume can skip the
measured ones.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from simperf.calibrate import shapes
from simperf.calibrate.points import Point, dedupe, make_point, op_key_tuple, point_key
from simperf.perfdb.schema import OP_SPECS
from simperf.strictyaml import error_line, safe_load

POW2_M = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]

DEFAULT_GRID: dict[str, dict[str, Any]] = {
    "caps": {
        # total KV tokens resident in one decode point (bf16 latent MLA: 1152 B/token -> 4.8 GB)
        "max_kv_tokens": 4 * 1024 * 1024,
        # FLOPs of one prefill/extend launch: keeps a point under ~50 ms
        "max_attn_flop": 3.0e13,
    },
    "mla_decode": {
        "backends": ["flashinfer_fa2", "flashinfer_fa3", "flashmla"],
        "num_heads": [128, 64, 32, 16, 8],
        "batch": [1, 4, 16, 64, 128, 256, 512],
        "kv_len": [128, 512, 2048, 8192, 32768, 131072],
        # (kv_dtype, page_size) combinations per backend; flashmla is page 64 only
        "flashinfer_layouts": [["bf16", 1], ["bf16", 64], ["fp8", 64]],
        "flashmla_layouts": [["bf16", 64], ["fp8", 64]],
        # speculative verify widths: measured for these head counts only, at these (kv_dtype, page_size)
        "verify_q_len": [2, 4],
        "verify_heads": [128, 16],
        "verify_layouts": [["bf16", 64]],
        # other page sizes: bf16, these head counts only
        "extra_page_sizes": [32, 128],
        "extra_page_heads": [128, 16],
        # further keys, one [kv_dtype, page_size, num_heads, q_len] each (flashmla: page 64 ones only)
        "extra_keys": [],
    },
    "mla_extend": {
        "backends": ["flashinfer_fa2", "flashinfer_fa3"],
        "num_heads": [128, 32, 16, 8],
        "kv_dtype": ["bf16"],
        "page_size": [1],
        "batch": [1, 4, 16],
        "q_len": [64, 256, 1024, 4096],
        "prefix_len": [0, 1024, 8192, 32768],
        "max_tokens": 16384,
    },
    "mha_prefill": {
        "backends": ["flashinfer_fa3"],
        "mla_num_heads": [128, 64, 32, 16],
        "batch": [1, 2, 4, 8],
        # q 1 and 16: short queries over long KV (decode rows riding in an extend, DP ranks decoding as 1-token
        # extends). The MLA layouts take every q at every prefix, a full rectangle in (q, prefix) — the space
        # the perf database interpolates causal attention in. GQA layouts: no prefix, q >= gqa_min_q_len.
        "q_len": [1, 16, 128, 512, 1024, 2048, 4096, 8192, 16384],
        "mla_prefix_len": [0, 1024, 4096, 8192, 16384],
        "gqa_min_q_len": 128,
        # GQA layouts: cached prefixes (0 = fresh prefill only), and optionally only these [q heads, kv heads]
        "gqa_prefix_len": [0],
        "gqa_heads": None,
        "max_tokens": 16384,
    },
    "gqa_decode": {
        "backends": ["flashinfer"],
        "kv_dtype": ["bf16"],
        "page_size": [1],
        "batch": [1, 4, 16, 64, 128, 256, 512],
        "kv_len": [128, 512, 2048, 8192, 32768, 131072],
        # page 64 for these (q heads, kv heads) only
        "page64_heads": [[32, 8], [64, 8]],
        # further keys, one [kv_dtype, page_size, q heads, kv heads] each
        "extra_keys": [],
    },
    "nsa_decode": {
        "backends": ["flashmla_kv"],
        "num_heads": [64, 128],  # SGLang pads heads to 64 on SM90 (128 on SM100)
        "batch": [1, 4, 16, 64, 128, 256, 512],
        "kv_len": [2048, 8192, 32768, 131072],
    },
    "nsa_prefill": {
        "backends": ["flashmla_sparse"],
        "num_heads": [64, 128],
        "m": [128, 512, 2048, 8192, 16384],
        "kv_len": [2048, 8192, 32768, 131072],
    },
    "nsa_indexer": {"variants": ["prefill", "decode"], "m": [1, 1024], "kv_len": [4096, 65536]},
    "sm100": {
        "num_heads": [128, 64, 32, 16, 8],
        "batch": [1, 4, 16, 64, 128, 256, 512],
        "kv_len": [128, 512, 2048, 8192, 32768, 131072],
        "kv_dtype": ["bf16", "fp8"],
        "page_size": [64],
    },
    "gemm": {
        "m": POW2_M,
        "bf16": True,
        # fp8 for DeepSeek shapes (block-scaled where a kernel loads, rowwise always) and rowwise for dense
        "fp8_block": True,
        "fp8_rowwise_deepseek": True,
        "fp8_rowwise_dense": True,
        # block-scaled fp8 for dense shapes (block-quantized checkpoints such as Qwen3-*-FP8); off by default
        "fp8_block_dense": False,
    },
    "bmm": {"m": POW2_M, "num_heads": [128, 64, 32, 16, 8]},
    "moe": {
        "backends": ["torch_grouped_mm"],  # triton_fused_moe: calibration/grids/moe_triton.yaml
        "m": [1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384],
        "dtypes": ["bf16", "fp8_rowwise"],
        "routings": ["balanced", "zipf"],
        "models": ["DeepSeek-V3", "Qwen3-30B-A3B", "Qwen3-235B-A22B"],
        # also the EP-1 layouts with the shared experts fused into the layer (SGLang's default for DeepSeek)
        "fused_shared": False,
        "fused_shared_only": False,
        # optional filters: only these expert-parallel / TP-MoE degrees (default: every layout)
        # "ep": [1], "tp": [1, 8],
    },
    "elementwise": {
        "m": [1, 4, 16, 64, 256, 1024, 4096, 16384],
        "rmsnorm": [7168, 1536, 512, 2048, 4096, 5120, 8192],
        "add_rmsnorm": [7168, 2048, 4096, 5120, 8192],
        "silu_mul": [18432, 9216, 4608, 2304, 14336, 7168, 3584, 1792, 2048, 1024, 512, 256],
        # rope: n = q heads per rank * rope dim (DeepSeek 64-dim rope; dense models 128)
        "rope": [8192, 4096, 2048, 1024, 512],
        # fp8 activation quantisation (triton backend): input widths of the fp8 linears (DeepSeek at TP 1-8,
        # dense models' hidden and intermediate widths per rank)
        "fp8_group_quant": [7168, 1536, 2048, 4096, 8192, 16384, 2304, 4608, 9216, 18432, 12288, 14336, 5120],
    },
    "fake": {"enabled": False, "m": [1, 2, 4, 8, 16, 32, 64, 128]},
}

# --ops accepts these categories as well as exact op names.
OP_CATEGORIES: dict[str, tuple[str, ...]] = {
    "attention": (
        "attn_mla_decode",
        "attn_mla_extend",
        "attn_mha_prefill",
        "attn_gqa_decode",
        "attn_nsa_prefill",
        "attn_nsa_decode",
        "nsa_indexer",
    ),
    "gemm": ("gemm", "bmm"),
    "moe": ("moe",),
    "elementwise": ("elementwise",),
    "comm": ("allreduce", "allgather", "reducescatter", "alltoall"),
}

COMM_OPS = OP_CATEGORIES["comm"]


def expand_ops(selectors: Iterable[str] | None) -> set[str]:
    """Ops named by --ops (categories or op names); None means every op."""
    if not selectors:
        return set(OP_SPECS)
    ops: set[str] = set()
    for selector in selectors:
        if selector in OP_CATEGORIES:
            ops.update(OP_CATEGORIES[selector])
        elif selector in OP_SPECS:
            ops.add(selector)
        else:
            raise ValueError(f"unknown op or category {selector!r}; categories: {sorted(OP_CATEGORIES)}")
    return ops


def load_grid(path: Path | None) -> dict[str, dict[str, Any]]:
    grid = copy.deepcopy(DEFAULT_GRID)
    if path is None:
        return grid
    try:
        # simperf's loader: a family given twice kept its second axes without a word
        overrides = safe_load(Path(path).read_text()) or {}
    except yaml.YAMLError as err:
        # PyYAML's first line ("while parsing a flow sequence") named no file or line
        raise ValueError(f"not valid YAML: {error_line(err)}") from None
    if not isinstance(overrides, dict):  # a list or scalar ended in an AttributeError (an internal error)
        raise ValueError(
            f"a grid file maps op families to their axes, e.g. gemm: {{m: [1, 64]}}; got {overrides!r}"
        )
    for family, params in overrides.items():
        if family not in grid:
            raise ValueError(f"unknown grid family {family!r}; known: {sorted(grid)}")
        if params is not None and not isinstance(params, dict):
            raise ValueError(f"{family}: maps axis names to lists of values; got {params!r}")
        for key, value in (params or {}).items():
            _check_key(family, key, grid[family])
            _check_list(family, key, value, grid[family].get(key))
            _check_counts(family, key, value, grid[family].get(key))
            _check_choices(family, key, value)
        grid[family].update(params or {})
    return grid


# keys a family takes beyond its defaults whose values are lists (the moe layout filters)
OPTIONAL_LIST_KEYS = {"moe": ("ep", "tp")}
# other keys a family's generator reads beyond its defaults ("enabled" for every family but caps)
OPTIONAL_KEYS = {"gemm": ("by_dtype", "deep_gemm", "extra_nk", "include"), "gqa_decode": ("heads",)}


def _check_key(family: str, key: str, defaults: dict[str, Any]) -> None:
    """A misspelt key (gemm: {mm: [...]}) was kept and read by nothing: the default grid was measured instead."""
    known = {*defaults, *OPTIONAL_LIST_KEYS.get(family, ()), *OPTIONAL_KEYS.get(family, ())}
    known |= {"enabled"} if family != "caps" else set()
    if key not in known:
        raise ValueError(f"{family}.{key}: unknown key; known: {', '.join(sorted(known))}")


def _check_counts(family: str, key: str, value: Any, default: Any) -> None:
    """A list whose default holds sizes (token counts, batches, heads) holds whole numbers: >= 1, or >= 0 where
    the default has a 0 (prefix lengths). -8 or 8.5 was passed on to the kernels, 'x' failed naming no key."""
    if not (isinstance(default, list) and default) or not all(_is_int(v) for v in default):
        return
    low = 0 if min(default) == 0 else 1
    for v in value:
        if not (_is_int(v) and v >= low):
            raise ValueError(f"{family}.{key}: got {v!r}; expected whole numbers >= {low}")


# list keys whose values name something the workers know (backends/moe.py routes "balanced" and "zipf" only)
CHOICES = {("moe", "routings"): ("balanced", "zipf")}


def _check_choices(family: str, key: str, value: Any) -> None:
    """An unknown name was measured as 'unsupported' at every point, after the GPU run was paid for."""
    allowed = CHOICES.get((family, key))
    unknown = [v for v in value if v not in allowed] if allowed else []
    if unknown:
        raise ValueError(f"{family}.{key}: got {unknown[0]!r}; allowed values: {', '.join(allowed)}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_list(family: str, key: str, value: Any, default: Any) -> None:
    """A key whose default is a list, or an optional list key, must be given a list (a scalar would be iterated
    later, or fail there with a traceback)."""
    if (isinstance(default, list) or key in OPTIONAL_LIST_KEYS.get(family, ())) and not isinstance(
        value, list
    ):
        raise ValueError(
            f"{family}.{key}: expected a list (e.g. [{value!r}]), got {type(value).__name__} {value!r}"
        )


# ---------------------------------------------------------------- caps


def mla_flop(num_heads: int, q_len: int, kv_len: int, batch: int, causal: bool = True) -> float:
    """Absorbed-MLA FLOPs: 2*H*sum(q*S_eff)*(576+512), S_eff the mean visible keys under causality."""
    visible = kv_len - (q_len - 1) / 2 if causal else kv_len
    return 2.0 * num_heads * batch * q_len * visible * (576 + 512)


def mha_flop(num_heads: int, q_len: int, kv_len: int, batch: int, d_qk: int, d_v: int) -> float:
    visible = kv_len - (q_len - 1) / 2
    return 2.0 * num_heads * batch * q_len * visible * (d_qk + d_v)


def within_caps(point: Point, caps: dict[str, Any]) -> bool:
    op = point["op"]
    if op in ("attn_mla_decode", "attn_gqa_decode", "attn_nsa_decode"):
        if point.get("kv_lens"):
            total = sum(json.loads(point["kv_lens"]))
        else:
            total = point["batch"] * point["kv_len"]
        return total <= caps["max_kv_tokens"]
    if op == "attn_mla_extend":
        if point["kv_len"] < point["q_len"]:
            return False
        flop = mla_flop(point["num_heads"], point["q_len"], point["kv_len"], point["batch"])
        return flop <= caps["max_attn_flop"]
    if op == "attn_mha_prefill":
        if point["kv_len"] < point["q_len"]:
            return False
        flop = mha_flop(
            point["num_heads"],
            point["q_len"],
            point["kv_len"],
            point["batch"],
            point["head_dim"],
            point["head_dim_v"],
        )
        return flop <= caps["max_attn_flop"]
    if op == "attn_nsa_prefill":
        return point["kv_len"] >= point["m"]
    return True


# ---------------------------------------------------------------- per-family generators


# MLA's latent KV: one head of 576 (512 latent + 64 rope) read, 512 written
MLA_DIMS = {"num_kv_heads": 1, "head_dim": 576, "head_dim_v": 512}


def _product(op: str, backend: str, fixed: dict[str, Any], **axes: Iterable[Any]) -> list[Point]:
    """One point per combination of the axes' values (in order), with the fixed columns."""
    names = list(axes)
    return [
        make_point(op, backend, **fixed, **dict(zip(names, values, strict=True)))
        for values in itertools.product(*axes.values())
    ]


def _mla_decode(cfg: dict[str, Any]) -> list[Point]:
    pts: list[Point] = []
    for backend in cfg["backends"]:
        layouts = cfg["flashmla_layouts"] if backend == "flashmla" else cfg["flashinfer_layouts"]
        combos: list[tuple[str, int, int, int]] = []  # kv_dtype, page, heads, q_len
        for kv_dtype, page in layouts:
            combos += [(kv_dtype, page, h, 1) for h in cfg["num_heads"]]
        for kv_dtype, page in cfg.get("verify_layouts", [["bf16", 64]]):
            for q_len in cfg["verify_q_len"]:
                combos += [(kv_dtype, page, h, q_len) for h in cfg["verify_heads"]]
        if backend != "flashmla":
            for page in cfg["extra_page_sizes"]:
                combos += [("bf16", page, h, 1) for h in cfg["extra_page_heads"]]
        combos += [(d, int(p), int(h), int(q)) for d, p, h, q in cfg.get("extra_keys", [])]
        if backend == "flashmla":  # FlashMLA runs page 64 only
            combos = [c for c in combos if c[1] == 64]
        for kv_dtype, page, heads, q_len in combos:
            fixed = dict(
                kv_dtype=kv_dtype, dtype="bf16", page_size=page, num_heads=heads, q_len=q_len, **MLA_DIMS
            )
            pts += _product("attn_mla_decode", backend, fixed, batch=cfg["batch"], kv_len=cfg["kv_len"])
    # a verify step's q_len new tokens are part of its KV
    return [p if p["kv_len"] >= p["q_len"] else {**p, "kv_len": p["q_len"]} for p in pts]


def _mla_extend(cfg: dict[str, Any]) -> list[Point]:
    pts: list[Point] = []
    for backend in cfg["backends"]:
        for kv_dtype in cfg["kv_dtype"]:
            for page in cfg["page_size"]:
                for heads in cfg["num_heads"]:
                    for batch in cfg["batch"]:
                        for q_len in cfg["q_len"]:
                            if batch * q_len > cfg["max_tokens"]:
                                continue
                            for prefix in cfg["prefix_len"]:
                                pts.append(
                                    make_point(
                                        "attn_mla_extend",
                                        backend,
                                        kv_dtype=kv_dtype,
                                        dtype="bf16",
                                        page_size=page,
                                        num_heads=heads,
                                        num_kv_heads=1,
                                        head_dim=576,
                                        head_dim_v=512,
                                        batch=batch,
                                        q_len=q_len,
                                        kv_len=q_len + prefix,
                                    )
                                )
    return pts


def _mha_prefill(cfg: dict[str, Any]) -> list[Point]:
    pts: list[Point] = []
    layouts: list[tuple[int, int, int, int, list[int]]] = []  # heads, kv heads, d_qk, d_v, prefixes
    for heads in cfg["mla_num_heads"]:
        layouts.append((heads, heads, 192, 128, cfg["mla_prefix_len"]))
    gqa_heads = shapes.gqa_heads_per_rank()
    if cfg.get("gqa_heads") is not None:  # a grid file may restrict the (q heads, kv heads) pairs
        gqa_heads = [tuple(h) for h in cfg["gqa_heads"]]
    for heads, kv_heads in gqa_heads:
        layouts.append((heads, kv_heads, 128, 128, cfg.get("gqa_prefix_len", [0])))
    for backend in cfg["backends"]:
        for heads, kv_heads, d_qk, d_v, prefixes in layouts:
            min_q = 1 if d_qk == 192 else cfg.get("gqa_min_q_len", 1)
            for batch in cfg["batch"]:
                for q_len in cfg["q_len"]:
                    if batch * q_len > cfg["max_tokens"] or q_len < min_q:
                        continue
                    for prefix in prefixes:
                        pts.append(
                            make_point(
                                "attn_mha_prefill",
                                backend,
                                dtype="bf16",
                                kv_dtype="bf16",
                                num_heads=heads,
                                num_kv_heads=kv_heads,
                                head_dim=d_qk,
                                head_dim_v=d_v,
                                batch=batch,
                                q_len=q_len,
                                kv_len=q_len + prefix,
                            )
                        )
    return pts


def _gqa_decode(cfg: dict[str, Any]) -> list[Point]:
    pts: list[Point] = []
    heads = shapes.gqa_heads_per_rank()
    if cfg.get("heads"):  # a grid file may restrict the (q heads, kv heads) pairs
        wanted = {tuple(h) for h in cfg["heads"]}
        heads = [h for h in heads if tuple(h) in wanted]
    combos = [(kv_dtype, page, h) for kv_dtype in cfg["kv_dtype"] for page in cfg["page_size"]
              for h in heads]  # fmt: skip
    combos += [("bf16", 64, tuple(h)) for h in cfg["page64_heads"]]
    combos += [(d, int(p), (int(q), int(kv))) for d, p, q, kv in cfg.get("extra_keys", [])]
    for backend in cfg["backends"]:
        for kv_dtype, page, (q_heads, kv_heads) in combos:
            fixed = dict(
                dtype="bf16", kv_dtype=kv_dtype, page_size=page, num_heads=q_heads, num_kv_heads=kv_heads,
                head_dim=128, head_dim_v=128, q_len=1,
            )  # fmt: skip
            pts += _product("attn_gqa_decode", backend, fixed, batch=cfg["batch"], kv_len=cfg["kv_len"])
    return pts


def _nsa_decode(cfg: dict[str, Any]) -> list[Point]:
    fixed = dict(dtype="bf16", kv_dtype="fp8", page_size=64, topk=shapes.DSV3_INDEX_TOPK, q_len=1, **MLA_DIMS)
    return [
        point
        for backend in cfg["backends"]
        for heads in cfg["num_heads"]
        for point in _product(
            "attn_nsa_decode",
            backend,
            {**fixed, "num_heads": heads},
            batch=cfg["batch"],
            kv_len=cfg["kv_len"],
        )
    ]


def _nsa_prefill(cfg: dict[str, Any]) -> list[Point]:
    fixed = dict(dtype="bf16", kv_dtype="bf16", topk=shapes.DSV3_INDEX_TOPK, **MLA_DIMS)
    return [
        point
        for backend in cfg["backends"]
        for heads in cfg["num_heads"]
        for point in _product(
            "attn_nsa_prefill", backend, {**fixed, "num_heads": heads}, m=cfg["m"], kv_len=cfg["kv_len"]
        )
    ]


def _nsa_indexer(cfg: dict[str, Any]) -> list[Point]:
    return [
        make_point(
            "nsa_indexer",
            "deep_gemm",
            variant=variant,
            dtype="fp8",
            num_heads=shapes.DSV3_INDEX_HEADS,
            head_dim=shapes.DSV3_INDEX_HEAD_DIM,
            topk=shapes.DSV3_INDEX_TOPK,
            m=m,
            kv_len=kv_len,
        )
        for variant in cfg["variants"]
        for m in cfg["m"]
        for kv_len in cfg["kv_len"]
    ]


def _sm100(cfg: dict[str, Any]) -> list[Point]:
    pts: list[Point] = []
    for backend in ("trtllm_gen", "cutlass"):
        for kv_dtype in cfg["kv_dtype"]:
            for page in cfg["page_size"]:
                for heads in cfg["num_heads"]:
                    fixed = dict(
                        dtype="bf16", kv_dtype=kv_dtype, page_size=page, num_heads=heads, q_len=1, **MLA_DIMS
                    )
                    pts += _product(
                        "attn_mla_decode", backend, fixed, batch=cfg["batch"], kv_len=cfg["kv_len"]
                    )
    for batch in cfg["batch"]:
        for kv_len in cfg["kv_len"]:
            pts.append(
                make_point(
                    "attn_nsa_decode",
                    "trtllm",
                    dtype="bf16",
                    kv_dtype="fp8",
                    page_size=64,
                    num_heads=128,
                    num_kv_heads=1,
                    head_dim=576,
                    head_dim_v=512,
                    topk=shapes.DSV3_INDEX_TOPK,
                    q_len=1,
                    batch=batch,
                    kv_len=max(kv_len, shapes.DSV3_INDEX_TOPK),
                )
            )
    for heads in cfg["num_heads"]:
        for q_len in (512, 2048, 8192):
            pts.append(
                make_point(
                    "attn_mha_prefill",
                    "trtllm",
                    dtype="bf16",
                    kv_dtype="bf16",
                    num_heads=heads,
                    num_kv_heads=heads,
                    head_dim=192,
                    head_dim_v=128,
                    batch=1,
                    q_len=q_len,
                    kv_len=q_len,
                )
            )
    return pts


def _gemm(cfg: dict[str, Any]) -> list[Point]:
    pts: list[Point] = []
    include = cfg.get("include")  # optional substrings of shape names (smoke grids)
    deepseek = [s for s in shapes.deepseek_gemm_shapes() if not include or any(i in s.name for i in include)]
    dense = [s for s in shapes.dense_gemm_shapes() if not include or any(i in s.name for i in include)]
    combos: list[tuple[str, str, shapes.GemmShape]] = []
    if cfg["bf16"]:
        combos += [("torch", "bf16", s) for s in deepseek + dense]
    if cfg["fp8_block"]:
        combos += [("torch_scaled_mm", "fp8_block", s) for s in deepseek]
    if cfg["fp8_rowwise_deepseek"]:
        combos += [("torch_scaled_mm", "fp8_rowwise", s) for s in deepseek]
    if cfg["fp8_rowwise_dense"]:
        combos += [("torch_scaled_mm", "fp8_rowwise", s) for s in dense]
    if cfg.get("fp8_block_dense"):
        combos += [("torch_scaled_mm", "fp8_block", s) for s in dense]
    combos += _gemm_by_dtype(cfg.get("by_dtype") or {})
    # DeepGEMM block-fp8 (what SGLang runs for these layers on Hopper; backends/gemm.py): named shapes
    combos += [
        ("deep_gemm", "fp8_block", s)
        for s in _named_gemm_shapes(cfg.get("deep_gemm") or [], "gemm.deep_gemm")
    ]
    combos += _gemm_extra_nk(cfg.get("extra_nk") or {})
    for backend, dtype, shape in combos:
        for m in cfg["m"]:
            pts.append(make_point("gemm", backend, dtype=dtype, n=shape.n, k=shape.k, m=m))
    return pts


GEMM_DTYPE_BACKENDS = {"bf16": "torch", "fp8_block": "torch_scaled_mm", "fp8_rowwise": "torch_scaled_mm"}


def _gemm_by_dtype(by_dtype: dict[str, list[str]]) -> list[tuple[str, str, shapes.GemmShape]]:
    """Exactly the named shapes per dtype ({fp8_block: [dsv3.q_b.tp8, ...]}): a grid file that adds M points to
    chosen GEMMs without re-running every shape in every dtype."""
    combos: list[tuple[str, str, shapes.GemmShape]] = []
    for dtype, names in by_dtype.items():
        if dtype not in GEMM_DTYPE_BACKENDS:
            raise ValueError(
                f"gemm.by_dtype: unknown dtype {dtype!r}; allowed: {sorted(GEMM_DTYPE_BACKENDS)}"
            )
        combos += [
            (GEMM_DTYPE_BACKENDS[dtype], dtype, s)
            for s in _named_gemm_shapes(names, f"gemm.by_dtype.{dtype}")
        ]
    return combos


def _named_gemm_shapes(names: list[str], field: str) -> list[shapes.GemmShape]:
    """The GEMM shapes named (shapes.py's names), in the order given; `field` names the grid entry in errors."""
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{field}: expected a list of shape names, got {names!r}")
    by_name = {s.name: s for s in shapes.deepseek_gemm_shapes() + shapes.dense_gemm_shapes()}
    unknown = sorted(set(names) - set(by_name))
    if unknown:
        raise ValueError(f"{field}: unknown shape names {unknown}")
    return [by_name[n] for n in names]


def _gemm_extra_nk(extra: dict[str, list[list[int]]]) -> list[tuple[str, str, shapes.GemmShape]]:
    """Explicit [n, k] shapes per dtype ({bf16: [[3072, 2048], ...]}): the GEMMs of a model whose layout the
    named shape families do not cover (e.g. DeepSeek-V2-Lite: MLA without q LoRA)."""
    combos: list[tuple[str, str, shapes.GemmShape]] = []
    for dtype, pairs in extra.items():
        if dtype not in GEMM_DTYPE_BACKENDS:
            raise ValueError(
                f"gemm.extra_nk: unknown dtype {dtype!r}; allowed: {sorted(GEMM_DTYPE_BACKENDS)}"
            )
        for pair in pairs:
            if len(pair) != 2 or not all(isinstance(v, int) and v > 0 for v in pair):
                raise ValueError(f"gemm.extra_nk.{dtype}: {pair!r} is not [n, k] of positive integers")
            n, k = pair
            combos.append((GEMM_DTYPE_BACKENDS[dtype], dtype, shapes.GemmShape(n, k, f"nk.{n}x{k}")))
    return combos


def _bmm(cfg: dict[str, Any]) -> list[Point]:
    pts: list[Point] = []
    for heads in cfg["num_heads"]:
        # w_kc: [H,T,128] x [H,128,512];  w_vc: [H,T,512] x [H,512,128]
        for n, k in ((shapes.DSV3_KV_LORA, shapes.DSV3_QK_NOPE), (shapes.DSV3_V_HEAD, shapes.DSV3_KV_LORA)):
            for m in cfg["m"]:
                pts.append(make_point("bmm", "torch", dtype="bf16", batch=heads, n=n, k=k, m=m))
    return pts


def _moe(cfg: dict[str, Any]) -> list[Point]:
    pts: list[Point] = []
    for rank_shape in shapes.moe_rank_shapes(fused_shared=bool(cfg.get("fused_shared", False))):
        if rank_shape.model.name not in cfg["models"]:
            continue
        if cfg.get("fused_shared_only") and not rank_shape.fused_shared:
            continue
        if rank_shape.ep not in cfg.get("ep", (rank_shape.ep,)) or rank_shape.tp not in cfg.get(
            "tp", (rank_shape.tp,)
        ):
            continue
        for backend, dtype in ((b, d) for b in cfg["backends"] for d in cfg["dtypes"]):
            for routing in cfg["routings"]:
                for m in cfg["m"]:
                    pts.append(
                        make_point(
                            "moe",
                            backend,
                            dtype=dtype,
                            num_experts=rank_shape.num_experts,
                            experts_per_rank=rank_shape.experts_per_rank,
                            topk=rank_shape.topk,
                            n=rank_shape.n,
                            k=rank_shape.k,
                            routing=rank_shape.routing(routing),
                            m=m,
                        )
                    )
    return pts


# the backend that times each elementwise variant (fp8_group_quant: simperf's Triton quantisation kernel)
ELEMENTWISE_BACKENDS = {
    "rmsnorm": "flashinfer",
    "add_rmsnorm": "flashinfer",
    "silu_mul": "flashinfer",
    "rope": "flashinfer",
    "fp8_group_quant": "triton",
}


def _elementwise(cfg: dict[str, Any]) -> list[Point]:
    pts: list[Point] = []
    for variant, backend in ELEMENTWISE_BACKENDS.items():
        for n in cfg.get(variant, []):
            for m in cfg["m"]:
                pts.append(make_point("elementwise", backend, variant=variant, dtype="bf16", n=n, m=m))
    return pts


def _fake(cfg: dict[str, Any]) -> list[Point]:
    return [make_point("gemm", "fake", dtype="bf16", n=64, k=64, m=m) for m in cfg["m"]]


FAMILIES: dict[str, Callable[[dict[str, Any]], list[Point]]] = {
    "mla_decode": _mla_decode,
    "mla_extend": _mla_extend,
    "mha_prefill": _mha_prefill,
    "gqa_decode": _gqa_decode,
    "nsa_decode": _nsa_decode,
    "nsa_prefill": _nsa_prefill,
    "nsa_indexer": _nsa_indexer,
    "sm100": _sm100,
    "gemm": _gemm,
    "bmm": _bmm,
    "moe": _moe,
    "elementwise": _elementwise,
    "fake": _fake,
}


def grid_points(grid: dict[str, dict[str, Any]]) -> list[Point]:
    """Every grid point of every enabled family, within the caps."""
    pts: list[Point] = []
    for family, generate in FAMILIES.items():
        cfg = grid[family]
        if not cfg.get("enabled", True):
            continue
        pts += [p for p in generate(cfg) if within_caps(p, grid["caps"])]
    return dedupe(pts)


# ---------------------------------------------------------------- held-out and ragged samples


def _rng(*parts: object) -> random.Random:
    return random.Random(zlib.crc32(repr(parts).encode()))


def _log_uniform_int(rng: random.Random, lo: int, hi: int) -> int:
    if hi <= lo:
        return lo
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def heldout_points(grid_pts: list[Point], per_op: int, caps: dict[str, Any]) -> list[Point]:
    """`per_op` random off-grid points per op: a random grid key, axis values log-uniform in its range.

    Axis values that fall on a grid value are redrawn, so these points test interpolation, not lookup.
    """
    if per_op <= 0:
        return []
    by_op: dict[str, list[Point]] = {}
    for point in grid_pts:
        if point["sample"] == "grid":
            by_op.setdefault(point["op"], []).append(point)
    out: list[Point] = []
    on_grid = {point_key({**p, "sample": "heldout"}) for p in grid_pts}
    for op, pts in sorted(by_op.items()):
        axes = [a for a in OP_SPECS[op].axis_columns if pts[0].get(a) is not None]
        if not axes:
            continue
        by_key: dict[tuple[Any, ...], list[Point]] = {}
        for point in pts:
            by_key.setdefault(_surface_key(point, axes), []).append(point)
        keys = sorted(by_key, key=repr)
        rng = _rng("heldout", op)
        made = 0
        attempts = 0
        while made < per_op and attempts < per_op * 50:
            attempts += 1
            members = by_key[keys[rng.randrange(len(keys))]]
            template = dict(members[0])
            for axis in axes:
                values = sorted({p[axis] for p in members})
                if len(values) < 2:
                    continue
                value = _log_uniform_int(rng, values[0], values[-1])
                if value in values:
                    value += 1 if value < values[-1] else -1
                template[axis] = value
            _fix_dependent_columns(template)
            template["sample"] = "heldout"
            if point_key(template) in on_grid:  # no axis could move off the grid for this key
                continue
            if within_caps(template, caps) and template not in out:
                out.append(template)
                made += 1
    return out


def _surface_key(point: Point, axes: list[str]) -> tuple[Any, ...]:
    """Everything but the axes: one interpolation surface (wider than the op key, e.g. head_dim)."""
    return tuple((k, v) for k, v in sorted(point.items()) if k not in axes and k != "sample")


def _fix_dependent_columns(point: Point) -> None:
    if point["op"] in ("attn_mla_extend", "attn_mha_prefill") and point["kv_len"] < point["q_len"]:
        point["kv_len"] = point["q_len"]
    if point["op"] == "attn_nsa_prefill" and point["kv_len"] < point["m"]:
        point["kv_len"] = point["m"]


RAGGED_OPS = ("attn_mla_decode", "attn_gqa_decode")


def ragged_points(grid_pts: list[Point], per_backend: int, caps: dict[str, Any]) -> list[Point]:
    """Decode batches whose requests have different KV lengths (lognormal around a log-uniform mean)."""
    if per_backend <= 0:
        return []
    templates: dict[tuple[str, str], list[Point]] = {}
    for point in grid_pts:
        if point["op"] in RAGGED_OPS and point["sample"] == "grid" and point.get("q_len") == 1:
            templates.setdefault((point["op"], point["backend"]), []).append(point)
    out: list[Point] = []
    for (op, backend), pts in sorted(templates.items()):
        keys = sorted({op_key_tuple(p) for p in pts}, key=repr)
        first_of_key = {op_key_tuple(p): p for p in reversed(pts)}
        rng = _rng("ragged", op, backend)
        made = 0
        attempts = 0
        while made < per_backend and attempts < per_backend * 50:
            attempts += 1
            template = dict(first_of_key[keys[rng.randrange(len(keys))]])
            batch = _log_uniform_int(rng, 2, 256)
            mean = _log_uniform_int(rng, 256, 32768)
            sigma = rng.uniform(0.5, 1.2)
            lens = [
                max(16, min(131072, int(rng.lognormvariate(math.log(mean), sigma)))) for _ in range(batch)
            ]
            template.update(
                sample="ragged",
                batch=batch,
                kv_len=int(round(sum(lens) / batch)),
                kv_lens=json.dumps(lens),
            )
            if within_caps(template, caps):
                out.append(template)
                made += 1
    return out


def all_points(
    grid: dict[str, dict[str, Any]],
    heldout: int,
    ragged: int,
    runnable: Callable[[Point], bool] | None = None,
) -> list[Point]:
    """Grid, held-out and ragged points. `runnable` (when given) says which grid points this device can
    run; held-out and ragged samples are drawn from those only, so none is wasted on a recorded
    'unsupported' key."""
    pts = grid_points(grid)
    caps = grid["caps"]
    sample_from = [p for p in pts if runnable(p)] if runnable is not None else pts
    return dedupe(pts + heldout_points(sample_from, heldout, caps) + ragged_points(sample_from, ragged, caps))
