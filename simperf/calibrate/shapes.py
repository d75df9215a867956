"""Per-rank kernel shapes of the zoo models, as SGLang runs them (docs/serving-model.md §4).

These are the shapes calibration measures, derived from the model zoo (simperf/models/zoo/*.json, through the
same parser the predictions use), so a model added to the zoo is calibrated at its own shapes on the next run.
Zoo models keep the names calibration grid files and shape names have always used (`GRID_NAMES`); a new one goes
by its zoo name.
"""

from __future__ import annotations

from dataclasses import dataclass

from simperf.models.arch import ModelArch
from simperf.models.zoo import load_arch, zoo_architectures
from simperf.perfdb.schema import fused_shared_routing

TP_DEGREES: tuple[int, ...] = (1, 2, 4, 8)


@dataclass(frozen=True)
class DenseModelShape:
    name: str
    hidden: int
    intermediate: int  # dense MLP intermediate (0 for MoE-only models)
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab: int


@dataclass(frozen=True)
class MoeModelShape:
    name: str
    num_experts: int
    topk: int
    intermediate: int  # per expert
    hidden: int
    shared_experts: int = 0  # same width as a routed expert; SGLang fuses them into the MoE at EP 1


# zoo name -> the name grids and shape names use, in grid order (DeepSeek first: the MoE grid starts with it)
GRID_NAMES: dict[str, str] = {
    "deepseek-v3": "DeepSeek-V3",
    "llama-3.1-8b": "Llama-3.1-8B",
    "llama-3.1-70b": "Llama-3.1-70B",
    "llama-2-7b": "Llama-2-7B",
    "qwen3-8b": "Qwen3-8B",
    "qwen3-32b": "Qwen3-32B",
    "qwen3-30b-a3b": "Qwen3-30B-A3B",
    "qwen3-235b-a22b": "Qwen3-235B-A22B",
}


def _zoo_archs() -> list[tuple[str, ModelArch]]:
    """(grid name, architecture) of every zoo model: the named ones in grid order, then the rest by name."""
    names = [n for n in GRID_NAMES if n in zoo_architectures()] + [
        n for n in zoo_architectures() if n not in GRID_NAMES
    ]
    return [(GRID_NAMES.get(n, n), load_arch(n)) for n in names]


def _gqa_shapes(moe: bool) -> tuple[DenseModelShape, ...]:
    """Attention and LM-head shapes of the GQA models (with their dense MLP; MoE models have none)."""
    return tuple(
        DenseModelShape(
            name,
            arch.hidden_size,
            0 if arch.is_moe else arch.intermediate_size,
            arch.num_heads,
            arch.num_kv_heads,
            arch.head_dim,
            arch.vocab_size,
        )
        for name, arch in _zoo_archs()
        if arch.attention == "gqa" and arch.is_moe == moe
    )


def _moe_shapes() -> tuple[MoeModelShape, ...]:
    """Routed-expert layers of the MoE models, one per distinct shape (DeepSeek-R1 and V3.2 share V3's)."""
    out: dict[tuple[int, ...], MoeModelShape] = {}
    for name, arch in _zoo_archs():
        if arch.is_moe:
            shape = MoeModelShape(
                name,
                arch.num_routed_experts,
                arch.experts_per_token,
                arch.moe_intermediate_size,
                arch.hidden_size,
                arch.num_shared_experts,
            )
            out.setdefault(
                (shape.num_experts, shape.topk, shape.intermediate, shape.hidden, shape.shared_experts), shape
            )
    return tuple(out.values())


DENSE_MODELS: tuple[DenseModelShape, ...] = _gqa_shapes(moe=False)
# Attention and lm_head of the GQA MoE models are dense-shaped too (intermediate 0: no dense MLP).
QWEN3_MOE_ATTENTION: tuple[DenseModelShape, ...] = _gqa_shapes(moe=True)
MOE_MODELS: tuple[MoeModelShape, ...] = _moe_shapes()

# DeepSeek-V3's dimensions (its MLA and DSA shapes are written out below from these).
_DSV3 = load_arch("deepseek-v3")
_DSV32 = load_arch("deepseek-v3.2")
DSV3_HIDDEN = _DSV3.hidden_size
DSV3_HEADS = _DSV3.num_heads
DSV3_Q_LORA = _DSV3.q_lora_rank
DSV3_KV_LORA = _DSV3.kv_lora_rank
DSV3_QK_NOPE = _DSV3.qk_nope_head_dim
DSV3_QK_ROPE = _DSV3.qk_rope_head_dim
DSV3_V_HEAD = _DSV3.v_head_dim
DSV3_DENSE_INTER = _DSV3.intermediate_size
DSV3_SHARED_INTER = _DSV3.moe_intermediate_size * _DSV3.num_shared_experts
DSV3_VOCAB = _DSV3.vocab_size
DSV3_INDEX_HEADS = _DSV32.index_n_heads
DSV3_INDEX_HEAD_DIM = _DSV32.index_head_dim
DSV3_INDEX_TOPK = _DSV32.index_topk

MLA_HEADS_PER_RANK: tuple[int, ...] = (128, 64, 32, 16, 8)


@dataclass(frozen=True)
class GemmShape:
    """out[m, n] = x[m, k] @ w[k, n]; `name` says where it occurs (first model that has it)."""

    n: int
    k: int
    name: str


def _per_rank(total: int, tp: int) -> int:
    return max(1, total // tp)


def deepseek_gemm_shapes() -> list[GemmShape]:
    shapes = [
        GemmShape(DSV3_Q_LORA + DSV3_KV_LORA + DSV3_QK_ROPE, DSV3_HIDDEN, "dsv3.fused_qkv_a"),
        # SGLang before v0.4.6 (sgl-project/sglang#5619) ran q_a_proj and kv_a_proj_with_mqa as two GEMMs
        GemmShape(DSV3_Q_LORA, DSV3_HIDDEN, "dsv3.q_a_unfused"),
        GemmShape(DSV3_KV_LORA + DSV3_QK_ROPE, DSV3_HIDDEN, "dsv3.kv_a_unfused"),
        GemmShape(_DSV3.num_routed_experts, DSV3_HIDDEN, "dsv3.router"),
        # DeepSeek-V3.2 lightning indexer projections (replicated)
        GemmShape(DSV3_INDEX_HEADS * DSV3_INDEX_HEAD_DIM, DSV3_Q_LORA, "dsv32.indexer.wq_b"),
        GemmShape(DSV3_INDEX_HEAD_DIM, DSV3_HIDDEN, "dsv32.indexer.wk"),
        GemmShape(DSV3_INDEX_HEADS, DSV3_HIDDEN, "dsv32.indexer.weights_proj"),
    ]
    for tp in TP_DEGREES:
        heads = DSV3_HEADS // tp
        shapes += [
            GemmShape(heads * (DSV3_QK_NOPE + DSV3_QK_ROPE), DSV3_Q_LORA, f"dsv3.q_b.tp{tp}"),
            GemmShape(heads * (DSV3_QK_NOPE + DSV3_V_HEAD), DSV3_KV_LORA, f"dsv3.kv_b.tp{tp}"),
            GemmShape(DSV3_HIDDEN, heads * DSV3_V_HEAD, f"dsv3.o_proj.tp{tp}"),
            GemmShape(2 * DSV3_DENSE_INTER // tp, DSV3_HIDDEN, f"dsv3.dense_gate_up.tp{tp}"),
            GemmShape(DSV3_HIDDEN, DSV3_DENSE_INTER // tp, f"dsv3.dense_down.tp{tp}"),
            GemmShape(2 * DSV3_SHARED_INTER // tp, DSV3_HIDDEN, f"dsv3.shared_gate_up.tp{tp}"),
            GemmShape(DSV3_HIDDEN, DSV3_SHARED_INTER // tp, f"dsv3.shared_down.tp{tp}"),
            GemmShape(DSV3_VOCAB // tp, DSV3_HIDDEN, f"dsv3.lm_head.tp{tp}"),
        ]
    return _dedupe_shapes(shapes)


def dense_gemm_shapes() -> list[GemmShape]:
    shapes: list[GemmShape] = []
    for model in DENSE_MODELS + QWEN3_MOE_ATTENTION:
        for tp in TP_DEGREES:
            q = _per_rank(model.num_heads, tp) * model.head_dim
            kv = _per_rank(model.num_kv_heads, tp) * model.head_dim
            shapes += [
                GemmShape(q + 2 * kv, model.hidden, f"{model.name}.qkv.tp{tp}"),
                GemmShape(model.hidden, q, f"{model.name}.o_proj.tp{tp}"),
                GemmShape(model.vocab // tp, model.hidden, f"{model.name}.lm_head.tp{tp}"),
            ]
            if model.intermediate:
                shapes += [
                    GemmShape(2 * model.intermediate // tp, model.hidden, f"{model.name}.gate_up.tp{tp}"),
                    GemmShape(model.hidden, model.intermediate // tp, f"{model.name}.down.tp{tp}"),
                ]
    return _dedupe_shapes(shapes)


def _dedupe_shapes(shapes: list[GemmShape]) -> list[GemmShape]:
    seen: dict[tuple[int, int], GemmShape] = {}
    for shape in shapes:
        seen.setdefault((shape.n, shape.k), shape)
    return list(seen.values())


def gqa_heads_per_rank() -> list[tuple[int, int]]:
    """Distinct (q heads, kv heads) per rank over the dense zoo and TP 1/2/4/8 (kv heads replicate below 1)."""
    pairs: list[tuple[int, int]] = []
    for model in DENSE_MODELS + QWEN3_MOE_ATTENTION:
        for tp in TP_DEGREES:
            pair = (_per_rank(model.num_heads, tp), _per_rank(model.num_kv_heads, tp))
            if pair not in pairs:
                pairs.append(pair)
    return pairs


@dataclass(frozen=True)
class MoeRankShape:
    """One rank's share of a MoE layer: experts_per_rank experts of width n (intermediate per rank)."""

    model: MoeModelShape
    ep: int
    tp: int  # TP-MoE degree (intermediate split); 1 under EP
    fused_shared: bool = False  # the model's shared experts ride in the layer as always-chosen experts

    @property
    def num_experts(self) -> int:
        return self.model.num_experts + (self.model.shared_experts if self.fused_shared else 0)

    @property
    def topk(self) -> int:
        return self.model.topk + (self.model.shared_experts if self.fused_shared else 0)

    @property
    def experts_per_rank(self) -> int:
        return self.num_experts // self.ep

    def routing(self, base: str) -> str:
        return fused_shared_routing(base, self.model.shared_experts if self.fused_shared else 0)

    @property
    def n(self) -> int:
        return self.model.intermediate // self.tp

    @property
    def k(self) -> int:
        return self.model.hidden


def moe_rank_shapes(fused_shared: bool = False) -> list[MoeRankShape]:
    """EP 1/2/4/8 and TP-MoE 2/4/8 shapes of every MoE model; with fused_shared, also the EP-1 layouts (TP-MoE
    1/2/4/8) of models with shared experts, fused into the routed layer as SGLang runs them."""
    shapes = []
    for model in MOE_MODELS:
        for ep in TP_DEGREES:
            shapes.append(MoeRankShape(model, ep, 1))
        for tp in TP_DEGREES[1:]:
            shapes.append(MoeRankShape(model, 1, tp))
        if fused_shared and model.shared_experts:
            shapes += [MoeRankShape(model, 1, tp, fused_shared=True) for tp in TP_DEGREES]
    return shapes
