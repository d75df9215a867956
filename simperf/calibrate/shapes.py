"""Per-rank kernel shapes of the zoo models, as SGLang runs them (shared model doc section 4).

These are the shapes calibration measures; they are written out here (not read from simperf/models/zoo)
so that the GPU-side runner has no dependency beyond this package. Numbers come from each model's HF
config.json.
"""

from __future__ import annotations

from dataclasses import dataclass

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


DENSE_MODELS: tuple[DenseModelShape, ...] = (
    DenseModelShape("Llama-3.1-8B", 4096, 14336, 32, 8, 128, 128256),
    DenseModelShape("Llama-3.1-70B", 8192, 28672, 64, 8, 128, 128256),
    DenseModelShape("Llama-2-7B", 4096, 11008, 32, 32, 128, 32000),
    DenseModelShape("Qwen3-8B", 4096, 12288, 32, 8, 128, 151936),
    DenseModelShape("Qwen3-32B", 5120, 25600, 64, 8, 128, 151936),
)

# Attention and lm_head of the Qwen3 MoE models are dense-shaped too (intermediate 0: no dense MLP).
QWEN3_MOE_ATTENTION: tuple[DenseModelShape, ...] = (
    DenseModelShape("Qwen3-30B-A3B", 2048, 0, 32, 4, 128, 151936),
    DenseModelShape("Qwen3-235B-A22B", 4096, 0, 64, 4, 128, 151936),
)

MOE_MODELS: tuple[MoeModelShape, ...] = (
    MoeModelShape("DeepSeek-V3", 256, 8, 2048, 7168, shared_experts=1),
    MoeModelShape("Qwen3-30B-A3B", 128, 8, 768, 2048),
    MoeModelShape("Qwen3-235B-A22B", 128, 8, 1536, 4096),
)

# DeepSeek-V3 dimensions used below.
DSV3_HIDDEN = 7168
DSV3_HEADS = 128
DSV3_Q_LORA = 1536
DSV3_KV_LORA = 512
DSV3_QK_NOPE = 128
DSV3_QK_ROPE = 64
DSV3_V_HEAD = 128
DSV3_DENSE_INTER = 18432
DSV3_SHARED_INTER = 2048
DSV3_VOCAB = 129280
DSV3_INDEX_HEADS = 64
DSV3_INDEX_HEAD_DIM = 128
DSV3_INDEX_TOPK = 2048

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
        GemmShape(256, DSV3_HIDDEN, "dsv3.router"),
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
