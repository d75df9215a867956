"""The model zoo: HF config.json files shipped with simperf, and the parser that turns one into a ModelArch.

A zoo entry is a verbatim subset of the model's public HF config.json (simperf/models/zoo/<name>.json), so a
user's own config.json of a known family goes through exactly the same parser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import fields
from importlib import resources
from pathlib import Path
from typing import Any

from simperf.capabilities import FAMILIES, FamilyCaps, family_of_architecture
from simperf.models.arch import ModelArch


class UnknownModelError(ValueError):
    pass


def zoo_names() -> list[str]:
    """Names of the shipped zoo entries, sorted."""
    zoo = resources.files("simperf.models") / "zoo"
    return sorted(p.name.removesuffix(".json") for p in zoo.iterdir() if p.name.endswith(".json"))


def _zoo_config(name: str) -> dict[str, Any]:
    return json.loads(
        (resources.files("simperf.models") / "zoo" / f"{name}.json").read_text(encoding="utf-8")
    )


def _weight_variants() -> dict[str, str]:
    """Zoo entries that repeat another entry with other weights (the config less `quantization_config` is that
    entry's, as Qwen3-8B-FP8's is Qwen3-8B's) -> that entry. Every zoo file is read once."""
    configs = {name: _zoo_config(name) for name in zoo_names()}
    variants: dict[str, str] = {}
    for name, config in configs.items():
        if "quantization_config" in config:
            bare = {k: v for k, v in config.items() if k != "quantization_config"}
            base = next((other for other, c in configs.items() if other != name and c == bare), None)
            if base is not None:
                variants[name] = base
    return variants


def weight_variant_of(name: str) -> str | None:
    """The zoo entry this one repeats with other weights, or None."""
    return _weight_variants().get(name)


def zoo_architectures() -> list[str]:
    """Zoo names less weight variants (weight_variant_of): one per architecture, for what enumerates shapes by
    architecture (the calibration grid's shape families, the fixed off-grid set)."""
    variants = _weight_variants()
    return [name for name in zoo_names() if name not in variants]


def zoo_suggestion(name: str) -> str | None:
    """The zoo entry a name not in the zoo means: the same name in another case or punctuation ('Qwen3-8B',
    'qwen3_8b', 'llama3.1-8b'), or the HF repo id of a zoo checkpoint ('Qwen/Qwen3-8B-FP8', with the weight dtype
    it stores). No nearest spelling: deepseek-v3.1 is not deepseek-v3.2."""
    from simperf.models.hf_names import zoo_entry_for_repo

    repo = zoo_entry_for_repo(name)
    if repo is not None:
        entry, dtype = repo
        return f"{entry!r} (the checkpoint {name.strip()} is {entry} with model.weight_dtype: {dtype})"
    wanted = _bare(name)
    return next((repr(known) for known in zoo_names() if _bare(known) == wanted), None)


def _bare(name: str) -> str:
    return re.sub(r"[\s_.\-]", "", name.lower())


def load_arch(name: str, config_path: Path | None = None) -> ModelArch:
    """The architecture of a zoo model, or of a user's HF config.json (then `name` is only a label)."""
    if config_path is not None:
        try:
            with open(config_path, encoding="utf-8") as f:
                config = json.load(f)
        except json.JSONDecodeError as e:
            raise UnknownModelError(f"model.config {config_path}: not valid JSON: {e}") from None
        except OSError as e:
            # a directory or an unreadable file: the OS's words alone ("Is a directory") did not say which setting
            raise UnknownModelError(f"model.config {config_path}: {e.strerror or e}") from None
        if not isinstance(config, dict):
            raise UnknownModelError(f"model.config {config_path}: a config.json holds one JSON object")
        arch = arch_from_hf_config(name, config, source=str(config_path))
        _check_label(name, arch, config_path)
        return arch
    if name not in zoo_names():
        hint = zoo_suggestion(name)
        raise UnknownModelError(
            f"model.name: {name!r} is not in the zoo{f' (did you mean {hint}?)' if hint else ''}; known: "
            f"{', '.join(zoo_names())} (or give model.config: path to a HF config.json)"
        )
    return arch_from_hf_config(name, _zoo_config(name), source=f"zoo/{name}.json")


def _check_label(name: str, arch: ModelArch, config_path: Path) -> None:
    """With model.config, model.name is only a label: a zoo name over another model's config labelled its results
    with the zoo model (a sweep axis over model.name printed qwen3-8b's numbers as qwen3-32b's)."""
    if name not in zoo_names():
        return
    zoo = load_arch(name)
    # the same model with its weights stored otherwise (docs/models.md's bf16 what-if of DeepSeek-V3) keeps its name
    weights = {"default_weight_dtype", "weight_block_size"}
    differ = next(
        (
            f.name
            for f in fields(ModelArch)
            if f.name not in weights and getattr(arch, f.name) != getattr(zoo, f.name)
        ),
        None,
    )
    if differ is None:
        return
    raise UnknownModelError(
        f"model.name: {name!r} is the zoo's model, but model.config {config_path} is another ({differ} "
        f"{getattr(arch, differ)!r}, the zoo's {getattr(zoo, differ)!r}), and its results would be labelled {name}; "
        "give the config's model a name of its own, or leave out model.config"
    )


def arch_from_hf_config(name: str, config: Mapping[str, Any], source: str = "config") -> ModelArch:
    archs = config.get("architectures") or []
    # a bare string was read letter by letter: "Qwen3ForCausalLM" became the architecture 'Q'
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise UnknownModelError(
            f'{source}: architectures: got {archs!r}; a list of class names, such as ["Qwen3ForCausalLM"]'
        )
    hf_arch = archs[0] if archs else ""
    caps = family_of_architecture(hf_arch)
    if caps is None:
        supported = sorted(a for f in FAMILIES.values() for a in f.hf_architectures)
        raise UnknownModelError(
            f"{source}: architecture {hf_arch or '(none)'!r} is not supported; supported: {', '.join(supported)}"
        )
    _check_config_values(config, source)
    if not caps.moe:
        _check_no_experts(config, hf_arch, source)
    try:
        arch = _parse(name, hf_arch, caps, config, source)
    except KeyError as e:
        raise UnknownModelError(f"{source}: {hf_arch} config lacks the field {e.args[0]!r}") from None
    _check_sizes(arch, source)
    _check_expert_and_latent_sizes(arch, caps, source)
    return arch


# ModelArch fields that count something a model has at least one of, and the config.json key each comes from
POSITIVE_SIZES = {
    "hidden_size": "hidden_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "num_kv_heads": "num_key_value_heads",
    "head_dim": "head_dim",
    "intermediate_size": "intermediate_size",
    "vocab_size": "vocab_size",
    "context_len": "max_position_embeddings",
}


# every other config.json count _parse reads
OTHER_COUNTS = (
    "num_experts", "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step", "moe_layer_freq",
    "qk_nope_head_dim", "qk_rope_head_dim", "q_lora_rank", "kv_lora_rank", "v_head_dim", "first_k_dense_replace",
    "n_routed_experts", "n_shared_experts", "num_nextn_predict_layers", "index_n_heads", "index_head_dim",
    "index_topk",
)  # fmt: skip


# counts a config.json may leave null, as HF's own configs do: num_key_value_heads null is multi-head attention,
# head_dim null is hidden_size / num_attention_heads, q_lora_rank null an unfactored query
NULLABLE_COUNTS = frozenset({"num_key_value_heads", "head_dim", "q_lora_rank", "n_shared_experts"})
# config.json switches _parse reads as booleans: bool("false") is True
BOOLEANS = ("tie_word_embeddings", "attention_bias")


def _check_config_values(config: Mapping[str, Any], source: str) -> None:
    """Counts that are not whole numbers, and weights in a format simperf does not price, were read anyway:
    num_key_value_heads 8.5 became 8 (int()), and an AWQ / GPTQ checkpoint's quantization_config was dropped, so
    its 4-bit weights were priced as bf16. A count of 0 where HF's configs allow null (num_key_value_heads,
    head_dim) was taken for null: 0 KV heads priced multi-head attention, a KV cache 4x Qwen3-8B's."""
    for key in (*POSITIVE_SIZES.values(), *OTHER_COUNTS):
        if key not in config:
            continue
        value = config[key]
        if value is None and key in NULLABLE_COUNTS:
            continue
        if value is None or isinstance(value, bool) or not isinstance(value, int):
            shown = "null" if value is None else repr(value)
            raise UnknownModelError(f"{source}: {key}: got {shown}; a count is a whole number")
        # q_lora_rank 0 was read as null (no query compression), which is how HF says it
        if key == "q_lora_rank" and value == 0:
            raise UnknownModelError(
                f"{source}: q_lora_rank: got 0; null (no query compression) or at least 1"
            )
        if key in POSITIVE_SIZES.values() and value < 1:
            raise UnknownModelError(f"{source}: {key}: got {value}; a model has at least 1")
        if value < 0:
            raise UnknownModelError(f"{source}: {key}: got {value}; a count is at least 0")
    for key in BOOLEANS:
        value = config.get(key)
        if value is not None and not isinstance(value, bool):
            raise UnknownModelError(f"{source}: {key}: got {value!r}; allowed values: true, false")
    scaling = config.get("rope_scaling") or {}
    if not isinstance(scaling, Mapping):
        raise UnknownModelError(
            f'{source}: rope_scaling: got {scaling!r}; a JSON object, such as {{"factor": 4.0}}'
        )
    factor = scaling.get("factor", 1)
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor < float("inf"):
        raise UnknownModelError(f"{source}: rope_scaling.factor: got {factor!r}; a positive number")
    quant = config.get("quantization_config") or {}
    if not isinstance(quant, Mapping):
        raise UnknownModelError(
            f'{source}: quantization_config: got {quant!r}; a JSON object, such as {{"quant_method": "fp8"}}'
        )
    block = quant.get("weight_block_size")
    if block is not None and not (
        isinstance(block, list)
        and len(block) == 2
        and all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in block)
    ):
        raise UnknownModelError(
            f"{source}: quantization_config.weight_block_size: got {block!r}; two whole numbers of at least 1, "
            "such as [128, 128]"
        )
    method = quant.get("quant_method")
    if quant and method is None:  # {"bits": 4} was priced as bf16 weights
        raise UnknownModelError(
            f"{source}: quantization_config: has no quant_method, so its weights' format is unknown; allowed "
            "quant_method: fp8 (or remove quantization_config for bf16 weights)"
        )
    if method not in (None, "fp8"):
        raise UnknownModelError(
            f"{source}: quantization_config.quant_method: {method!r} is not modelled; simperf prices bf16 weights "
            "and fp8 ones (quant_method fp8, or model.weight_dtype: fp8 with the quantization_config removed)"
        )


def _check_sizes(arch: ModelArch, source: str) -> None:
    """A config.json count below 1 (0 attention heads, -3 layers) was costed as given: 0 heads predicted a
    faster model without a word, negative layers ended in a 'KV pool of -5,584,961 tokens' naming no field."""
    for field, key in POSITIVE_SIZES.items():
        value = getattr(arch, field)
        if value < 1:
            raise UnknownModelError(f"{source}: {key}: got {value}; a model has at least 1")
    # grouped-query attention: each KV head serves num_attention_heads / num_key_value_heads query heads
    # (SGLang's flashinfer_backend.py takes gqa_group_size = num_qo_heads // num_kv_heads): 30 heads over 8 KV
    # heads, or 64 KV heads for 32, is no model, and was priced as given
    if arch.num_heads % arch.num_kv_heads:
        raise UnknownModelError(
            f"{source}: num_key_value_heads: {arch.num_kv_heads} does not divide num_attention_heads "
            f"{arch.num_heads}; each KV head serves a whole group of query heads"
        )


# config.json keys that give a model routed experts, read only by a MoE architecture
EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")


def _check_no_experts(config: Mapping[str, Any], hf_arch: str, source: str) -> None:
    """A dense architecture's parser reads no expert field: a config naming Qwen3ForCausalLM with 128 experts was
    priced as a dense model of intermediate_size without a word."""
    for key in EXPERT_KEYS:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            moe = sorted(a for f in FAMILIES.values() if f.moe for a in f.hf_architectures)
            raise UnknownModelError(
                f"{source}: {key}: {value} routed experts, but {hf_arch} is a dense architecture, read without "
                f"experts; the MoE architectures simperf models: {', '.join(moe)}"
            )


def _check_expert_and_latent_sizes(arch: ModelArch, caps: FamilyCaps, source: str) -> None:
    """Expert and MLA latent sizes of 0 were costed as given (a top-0 MoE priced by a bare roofline, 0 experts as
    a dense model), and a top-k above the experts a token can choose from as if there were that many."""
    sizes: dict[str, tuple[int, str]] = {}
    experts_key = "n_routed_experts" if arch.is_mla else "num_experts"
    if caps.moe:
        sizes |= {
            experts_key: (arch.num_routed_experts, "a MoE model has at least 1"),
            "num_experts_per_tok": (arch.experts_per_token, "each token is routed to at least 1 expert"),
            "moe_intermediate_size": (arch.moe_intermediate_size, "an expert has at least 1"),
        }
    if arch.is_mla:
        for key in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            sizes[key] = (getattr(arch, key), "MLA has at least 1")
    # the sparse-attention indexer: 0 heads or a top-0 selection was priced as given
    if caps.attention == "dsa":
        for key in ("index_n_heads", "index_head_dim", "index_topk"):
            sizes[key] = (getattr(arch, key), "the sparse-attention indexer has at least 1")
    for key, (value, why) in sizes.items():
        if value < 1:
            raise UnknownModelError(f"{source}: {key}: got {value}; {why}")
    if caps.moe and arch.experts_per_token > arch.num_routed_experts:
        raise UnknownModelError(
            f"{source}: num_experts_per_tok: {arch.experts_per_token} is more than the {arch.num_routed_experts} "
            f"experts ({experts_key}) a token is routed among"
        )
    if arch.is_mla and arch.num_dense_layers >= arch.num_layers:
        raise UnknownModelError(
            f"{source}: first_k_dense_replace: {arch.num_dense_layers} leaves no MoE layer of the "
            f"{arch.num_layers} (num_hidden_layers); give at most {arch.num_layers - 1}"
        )


def _context_len(c: Mapping[str, Any]) -> int:
    """SGLang's context length (hf_transformers_utils.get_context_length): max_position_embeddings times a
    rope_scaling factor, unless the scaling names its original_max_position_embeddings (then max_position_embeddings
    already counts it) or is Llama 3's. A config of rope_scaling {"type": "yarn", "factor": 4} was held to a
    quarter of the context SGLang serves it with, its longer requests cut without a word."""
    context = int(c["max_position_embeddings"])
    scaling = c.get("rope_scaling")
    if not scaling:
        return context
    if "original_max_position_embeddings" in scaling or scaling.get("rope_type") == "llama3":
        return context
    return int(scaling.get("factor", 1) * context)  # _check_config_values: a mapping, a positive factor


def _parse(name: str, hf_arch: str, caps: FamilyCaps, c: Mapping[str, Any], source: str) -> ModelArch:
    heads = int(c["num_attention_heads"])
    hidden = int(c["hidden_size"])
    quant = c.get("quantization_config") or {}
    is_fp8 = quant.get("quant_method") == "fp8"
    block = quant.get("weight_block_size")
    common: dict[str, Any] = dict(
        name=name,
        family=caps.name,
        hf_architecture=hf_arch,
        hidden_size=hidden,
        num_layers=int(c["num_hidden_layers"]),
        num_heads=heads,
        num_kv_heads=int(c.get("num_key_value_heads") or heads),
        intermediate_size=int(c["intermediate_size"]),
        vocab_size=int(c["vocab_size"]),
        context_len=_context_len(c),
        default_weight_dtype="fp8" if is_fp8 else "bf16",
        tie_word_embeddings=bool(c.get("tie_word_embeddings", False)),
        weight_block_size=tuple(int(x) for x in block) if block else None,
    )
    if caps.attention == "gqa":
        common.update(
            head_dim=int(c.get("head_dim") or (hidden // heads if heads else 0)),  # 0 heads: _check_sizes
            # Qwen2 always has q/k/v biases; Llama and Qwen3 say so in attention_bias.
            attention_bias=bool(c.get("attention_bias", hf_arch == "Qwen2ForCausalLM")),
            qk_norm=hf_arch.startswith("Qwen3"),
        )
        if caps.moe:
            if c.get("mlp_only_layers"):
                raise UnknownModelError(
                    f"{source}: mlp_only_layers: got {c['mlp_only_layers']!r}; mixed dense/MoE Qwen3 is not "
                    "modelled (allowed: [] or leave it out)"
                )
            if int(c.get("decoder_sparse_step", 1)) != 1:
                raise UnknownModelError(
                    f"{source}: decoder_sparse_step: got {c['decoder_sparse_step']}; only 1 (every layer MoE) is "
                    "modelled"
                )
            common.update(
                num_routed_experts=int(c["num_experts"]),
                experts_per_token=int(c["num_experts_per_tok"]),
                moe_intermediate_size=int(c["moe_intermediate_size"]),
            )
        return ModelArch(**common)

    # MLA families (DeepSeek V3 / V3.2)
    if int(c.get("moe_layer_freq", 1)) != 1:
        raise UnknownModelError(
            f"{source}: moe_layer_freq: got {c['moe_layer_freq']}; only 1 (every layer past first_k_dense_replace "
            "MoE) is modelled"
        )
    nope, rope = int(c["qk_nope_head_dim"]), int(c["qk_rope_head_dim"])
    common.update(
        head_dim=nope + rope,
        q_lora_rank=int(c.get("q_lora_rank") or 0),
        kv_lora_rank=int(c["kv_lora_rank"]),
        qk_nope_head_dim=nope,
        qk_rope_head_dim=rope,
        v_head_dim=int(c["v_head_dim"]),
        num_dense_layers=int(c["first_k_dense_replace"]),
        num_routed_experts=int(c["n_routed_experts"]),
        num_shared_experts=int(c.get("n_shared_experts") or 0),
        experts_per_token=int(c["num_experts_per_tok"]),
        moe_intermediate_size=int(c["moe_intermediate_size"]),
        num_nextn_predict_layers=int(c.get("num_nextn_predict_layers", 0)),
    )
    if caps.attention == "dsa":
        common.update(
            index_n_heads=int(c["index_n_heads"]),
            index_head_dim=int(c["index_head_dim"]),
            index_topk=int(c["index_topk"]),
        )
    return ModelArch(**common)
