"""ModelArch: the architecture numbers of one model, and what they imply for memory on one rank.

Everything here is arithmetic on the HF config numbers; nothing is measured. The sharding rules follow SGLang
(docs/serving-model.md §1.12, §2.1): MLA attention weights are sharded over the attention-TP group (A = TP/DP) and
replicated across DP ranks; routed experts are sharded over TP (TP-MoE) or split over EP with the remaining TP
factor sharding each expert; the vocabulary is split over TP.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simperf import capabilities
from simperf.capabilities import FamilyCaps, dsa_fp8_layout
from simperf.layout import ParallelLayout

Family = str  # a key of simperf.capabilities.FAMILIES

# Bytes per element of the dtype names used in scenarios and tables.
DTYPE_BYTES: dict[str, int] = {"bf16": 2, "fp16": 2, "fp8": 1, "fp8_e4m3": 1, "fp32": 4}

# DSA/NSA KV layouts (docs/serving-model.md §1.12, §4.3): FlashMLA's fp8 layout stores 512 fp8 nope values, one fp32
# scale per 128 of them and the 64 rope dims in bf16; trtllm/tilelang keep the raw 576-dim latent.
NSA_FLASHMLA_FP8_BYTES_PER_LAYER = 512 + (512 // 128) * 4 + 64 * 2  # 656
NSA_INDEXER_K_BYTES_PER_LAYER = 128 + 4  # fp8 key + one fp32 scale
# SGLang pads the vocabulary of VocabParallelEmbedding / ParallelLMHead to a multiple of 64.
VOCAB_PAD = 64


def dtype_bytes(dtype: str) -> int:
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; known: {sorted(DTYPE_BYTES)}") from None


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class ModelArch:
    name: str
    family: Family
    hf_architecture: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int  # GQA kv heads; MLA: the config value (unused, one latent head is cached)
    head_dim: int  # GQA head dim; MLA: qk_nope + qk_rope (the q/k dim of the MHA path)
    intermediate_size: int  # dense MLP width
    vocab_size: int
    context_len: int
    default_weight_dtype: str  # fp8 when the checkpoint ships fp8 weights, else bf16
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    qk_norm: bool = False  # Qwen3: per-head RMSNorm on q and k
    weight_block_size: tuple[int, int] | None = None  # fp8 block-scale tile of the checkpoint
    # MLA (0 when not MLA; q_lora_rank 0 means q is projected directly from hidden)
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # MoE (0 when dense)
    num_dense_layers: int = 0  # leading dense-MLP layers (DeepSeek first_k_dense_replace)
    num_routed_experts: int = 0
    num_shared_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    # DSA / NSA lightning indexer (V3.2)
    index_n_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0
    num_nextn_predict_layers: int = 0

    # ---- derived shape facts -------------------------------------------------------------------------------
    @property
    def caps(self) -> FamilyCaps:
        """The family's row of the capability table."""
        return capabilities.family(self.family)

    @property
    def attention(self) -> str:
        """gqa | mla | dsa: which attention op-list code the family runs."""
        return capabilities.family(self.family).attention

    @property
    def is_mla(self) -> bool:
        return capabilities.family(self.family).is_mla

    @property
    def is_moe(self) -> bool:
        return self.num_routed_experts > 0

    @property
    def num_moe_layers(self) -> int:
        return self.num_layers - self.num_dense_layers if self.is_moe else 0

    @property
    def num_dense_mlp_layers(self) -> int:
        return self.num_layers - self.num_moe_layers

    @property
    def kv_latent_dim(self) -> int:
        """MLA: dims cached per token per layer (latent + rope key), 576 for DeepSeek."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def padded_vocab(self) -> int:
        return _ceil_div(self.vocab_size, VOCAB_PAD) * VOCAB_PAD

    def speculative_draft(self) -> ModelArch:
        """The speculative draft a server runs beside this model: the checkpoint's single MTP / EAGLE decoder layer
        of the target's shape (MoE for DeepSeek), with its own embedding and LM head until SGLang shares the
        target's. The step cost prices its forwards, the KV pool its weights and KV layer."""
        return replace(self, name=f"{self.name}-draft", num_layers=1, num_dense_layers=0)

    def heads_per_rank(self, layout: ParallelLayout) -> int:
        return max(1, self.num_heads // layout.attn_tp)

    def kv_heads_per_rank(self, layout: ParallelLayout) -> int:
        """GQA kv heads on one rank: split over attention TP, replicated when there are fewer than ranks."""
        return max(1, self.num_kv_heads // layout.attn_tp)

    def vocab_per_rank(self, tp: int) -> int:
        return _ceil_div(self.padded_vocab, tp)

    # ---- parameters ------------------------------------------------------------------------------------------
    def _linear_shapes(self) -> list[_Tensor]:
        """Every weight tensor of the main model (no MTP layer), with its sharding class and layer count."""
        h, L = self.hidden_size, self.num_layers
        t: list[_Tensor] = [
            _Tensor("embed_tokens", self.vocab_size, h, 1, "vocab", quantizable=False),
            _Tensor("final_norm", 1, h, 1, "replicated", quantizable=False),
        ]
        if not self.tie_word_embeddings:
            t.append(_Tensor("lm_head", self.vocab_size, h, 1, "vocab", quantizable=False))
        t.append(_Tensor("layer_norms", 2, h, L, "replicated", quantizable=False))
        t += self._attention_tensors()
        t += self._mlp_tensors()
        return t

    def _attention_tensors(self) -> list[_Tensor]:
        h, L, H = self.hidden_size, self.num_layers, self.num_heads
        if not self.is_mla:
            hd = self.head_dim
            t = [
                _Tensor("q_proj", H * hd, h, L, "attn_heads"),
                _Tensor("k_proj", self.num_kv_heads * hd, h, L, "attn_kv_heads"),
                _Tensor("v_proj", self.num_kv_heads * hd, h, L, "attn_kv_heads"),
                _Tensor("o_proj", h, H * hd, L, "attn_heads_in"),
            ]
            if self.attention_bias:
                t.append(_Tensor("qkv_bias", 1, (H + 2 * self.num_kv_heads) * hd, L, "attn_heads", False))
            if self.qk_norm:
                t.append(_Tensor("qk_norm", 2, hd, L, "replicated", quantizable=False))
            return t
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        t = []
        if self.q_lora_rank:
            t += [
                _Tensor("fused_qkv_a_proj", self.q_lora_rank + self.kv_latent_dim, h, L, "replicated"),
                _Tensor("q_a_layernorm", 1, self.q_lora_rank, L, "replicated", quantizable=False),
                _Tensor("q_b_proj", H * qk, self.q_lora_rank, L, "attn_heads"),
            ]
        else:
            t += [
                _Tensor("kv_a_proj_with_mqa", self.kv_latent_dim, h, L, "replicated"),
                _Tensor("q_proj", H * qk, h, L, "attn_heads"),
            ]
        t += [
            _Tensor("kv_a_layernorm", 1, self.kv_lora_rank, L, "replicated", quantizable=False),
            _Tensor(
                "kv_b_proj", H * (self.qk_nope_head_dim + self.v_head_dim), self.kv_lora_rank, L, "attn_heads"
            ),
            _Tensor("o_proj", h, H * self.v_head_dim, L, "attn_heads_in"),
        ]
        if self.attention == "dsa":
            ih, idim = self.index_n_heads, self.index_head_dim
            q_in = self.q_lora_rank or h
            t += [
                _Tensor("indexer.wq_b", ih * idim, q_in, L, "replicated"),
                _Tensor("indexer.wk", idim, h, L, "replicated"),
                _Tensor("indexer.k_norm", 2, idim, L, "replicated", quantizable=False),
                _Tensor("indexer.weights_proj", ih, h, L, "replicated", quantizable=False),
            ]
        return t

    def _mlp_tensors(self) -> list[_Tensor]:
        h = self.hidden_size
        t = []
        if self.num_dense_mlp_layers:
            n = self.num_dense_mlp_layers
            t += [
                _Tensor("mlp.gate_up_proj", 2 * self.intermediate_size, h, n, "mlp"),
                _Tensor("mlp.down_proj", h, self.intermediate_size, n, "mlp_in"),
            ]
        if self.num_moe_layers:
            n, E, mi = self.num_moe_layers, self.num_routed_experts, self.moe_intermediate_size
            t += [
                _Tensor("moe.gate", E, h, n, "replicated", quantizable=False),
                _Tensor("moe.experts.w13", E * 2 * mi, h, n, "experts"),
                _Tensor("moe.experts.w2", E * h, mi, n, "experts_in"),
            ]
            if self.is_mla:  # noaux_tc routing keeps a per-expert fp32 bias
                t.append(_Tensor("moe.gate.e_score_correction_bias", 1, E, n, "replicated", False, fp32=True))
            if self.num_shared_experts:
                si = mi * self.num_shared_experts
                t += [
                    _Tensor("moe.shared.gate_up_proj", 2 * si, h, n, "mlp"),
                    _Tensor("moe.shared.down_proj", h, si, n, "mlp_in"),
                ]
        return t

    def num_params(self) -> int:
        """Parameters of the main model (the checkpoint's MTP/nextn layers excluded)."""
        return sum(t.rows * t.cols * t.layers for t in self._linear_shapes())

    def weight_bytes_per_rank(self, layout: ParallelLayout, weight_dtype: str) -> int:
        """Weight memory of one GPU: sharded per SGLang's rules, fp8 block scales included.

        Router gates, norms, embeddings and lm_head stay bf16 when the linear weights are fp8. DeepSeek's
        absorbed-MLA path also keeps bf16 copies of w_kc / w_vc (split from kv_b_proj at load time).
        """
        if weight_dtype not in ("bf16", "fp16", "fp8"):
            raise ValueError(f"weight_dtype must be bf16 or fp8, got {weight_dtype!r}")
        total = 0
        for t in self._linear_shapes():
            rows, cols = _shard(t, layout, self)
            total += t.layers * _tensor_bytes(rows, cols, t, weight_dtype, self)
        if self.is_mla:
            heads = self.heads_per_rank(layout)
            per_layer = heads * self.kv_lora_rank * (self.qk_nope_head_dim + self.v_head_dim) * 2
            total += per_layer * self.num_layers
        return int(total)

    def _scale_bytes(self, rows: int, cols: int) -> int:
        if self.weight_block_size:
            bn, bk = self.weight_block_size
            return _ceil_div(rows, bn) * _ceil_div(cols, bk) * 4
        return rows * 4  # per-output-channel scales of online fp8 quantization

    def kv_bytes_per_token_per_rank(self, layout: ParallelLayout, kv_dtype: str, backend: str) -> int:
        """KV cache bytes per token on one rank (main model only; an MTP draft layer has its own pool).

        MLA caches one latent head, replicated on every attention-TP rank (not divided by TP).
        """
        b = dtype_bytes(kv_dtype)
        L = self.num_layers
        if self.attention == "mla":
            return self.kv_latent_dim * b * L
        if self.attention == "dsa":
            if b == 1:
                main = (
                    NSA_FLASHMLA_FP8_BYTES_PER_LAYER
                    if dsa_fp8_layout(backend) == "fp8_flashmla_656"
                    else self.kv_latent_dim  # raw 576-byte layout (trtllm, tilelang)
                )
            else:
                main = self.kv_latent_dim * b
            return (main + NSA_INDEXER_K_BYTES_PER_LAYER) * L
        return 2 * self.kv_heads_per_rank(layout) * self.head_dim * b * L


@dataclass(frozen=True)
class _Tensor:
    name: str
    rows: int  # output features
    cols: int  # input features
    layers: int  # how many copies in the model
    shard: str  # how it is split across ranks, see _shard
    quantizable: bool = True  # stored as fp8 when the linear weights are fp8
    fp32: bool = False  # kept in fp32 whatever the weight dtype


def _shard(t: _Tensor, layout: ParallelLayout, arch: ModelArch) -> tuple[int, int]:
    """(rows, cols) of one rank's slice."""
    A, tp, ep = layout.attn_tp, layout.tp, max(1, layout.ep)
    if t.shard == "replicated":
        return t.rows, t.cols
    if t.shard == "vocab":
        # SGLang's DeepSeek replicates the input embedding under DP attention; lm_head stays vocab-parallel.
        if t.name == "embed_tokens" and layout.dp_attention > 1:
            return arch.padded_vocab, t.cols
        return arch.vocab_per_rank(tp), t.cols
    if t.shard == "attn_heads":
        return _ceil_div(t.rows, A), t.cols
    if t.shard == "attn_heads_in":
        return t.rows, _ceil_div(t.cols, A)
    if t.shard == "attn_kv_heads":
        return arch.kv_heads_per_rank(layout) * arch.head_dim, t.cols
    if t.shard == "mlp":
        return _ceil_div(t.rows, tp), t.cols
    if t.shard == "mlp_in":
        return t.rows, _ceil_div(t.cols, tp)
    # Experts: E/EP experts per rank, each sharded over the remaining TP/EP ranks: total / TP either way.
    moe_tp = max(1, tp // ep)
    if t.shard == "experts":
        per_expert = t.rows // arch.num_routed_experts
        return _ceil_div(arch.num_routed_experts, ep) * _ceil_div(per_expert, moe_tp), t.cols
    if t.shard == "experts_in":
        return _ceil_div(arch.num_routed_experts, ep) * arch.hidden_size, _ceil_div(t.cols, moe_tp)
    raise ValueError(f"unknown shard class {t.shard!r}")


def _tensor_bytes(rows: int, cols: int, t: _Tensor, weight_dtype: str, arch: ModelArch) -> int:
    if t.fp32:
        return rows * cols * 4
    if weight_dtype == "fp8" and t.quantizable:
        return rows * cols + arch._scale_bytes(rows, cols)
    return rows * cols * 2
