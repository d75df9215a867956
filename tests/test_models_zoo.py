"""Model zoo: loading configs, parameter counts, weight and KV-cache bytes per rank."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simperf.models.zoo import UnknownModelError, load_arch, zoo_names
from simperf.scenario.resolved import ParallelLayout

TP1 = ParallelLayout(tp=1, dp_attention=1, ep=1)
TP8 = ParallelLayout(tp=8, dp_attention=1, ep=1)

REQUIRED = [
    "deepseek-v3",
    "deepseek-r1",
    "deepseek-v3.2",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-2-7b",
    "qwen3-8b",
    "qwen3-32b",
]


def test_zoo_lists_the_required_models_with_lowercase_dashed_names():
    names = zoo_names()
    assert set(REQUIRED) <= set(names)
    for name in names:
        assert name == name.lower() and " " not in name and "_" not in name


@pytest.mark.parametrize("name", zoo_names())
def test_every_zoo_entry_loads_with_consistent_numbers(name):
    arch = load_arch(name)
    assert arch.name == name
    assert arch.num_layers > 0 and arch.hidden_size > 0 and arch.context_len >= 4096
    assert arch.num_moe_layers + arch.num_dense_mlp_layers == arch.num_layers


def test_unknown_model_name_error_lists_the_zoo():
    with pytest.raises(UnknownModelError) as err:
        load_arch("gpt-17")
    for name in REQUIRED:
        assert name in str(err.value)


@pytest.mark.parametrize(
    ("name", "params_b"),
    [
        ("deepseek-v3", 671.0),
        ("llama-3.1-8b", 8.03),
        ("llama-3.1-70b", 70.55),
        ("llama-2-7b", 6.74),
        ("qwen3-8b", 8.19),
        ("qwen3-32b", 32.76),
        ("qwen3-30b-a3b", 30.53),
        ("qwen3-235b-a22b", 235.09),
    ],
)
def test_parameter_counts_match_the_published_sizes(name, params_b):
    assert load_arch(name).num_params() / 1e9 == pytest.approx(params_b, rel=0.005)


def test_deepseek_families_dtypes_and_shapes():
    v3, v32, r1 = load_arch("deepseek-v3"), load_arch("deepseek-v3.2"), load_arch("deepseek-r1")
    assert (v3.family, v32.family) == ("mla_moe", "nsa_moe")
    assert v3.default_weight_dtype == "fp8" and load_arch("llama-3.1-8b").default_weight_dtype == "bf16"
    assert (v3.num_dense_layers, v3.num_moe_layers, v3.kv_latent_dim, v3.head_dim) == (3, 58, 576, 192)
    assert (v32.index_n_heads, v32.index_head_dim, v32.index_topk) == (64, 128, 2048)
    assert dataclasses.replace(r1, name="deepseek-v3") == v3  # R1 shares V3's architecture


@pytest.mark.parametrize(
    ("name", "kv_dtype", "backend", "expected"),
    [
        ("deepseek-v3", "bf16", "fa3", 70272),
        ("deepseek-v3", "fp8_e4m3", "flashmla", 35136),
        ("deepseek-v3.2", "fp8_e4m3", "flashmla_kv", 48068),
        ("deepseek-v3.2", "bf16", "flashmla_sparse", 78324),
        ("deepseek-v3.2", "fp8_e4m3", "trtllm", 61 * (576 + 132)),
        ("llama-3.1-8b", "bf16", "fa3", 2 * 8 * 128 * 2 * 32),
    ],
)
def test_kv_bytes_per_token(name, kv_dtype, backend, expected):
    assert load_arch(name).kv_bytes_per_token_per_rank(TP1, kv_dtype, backend) == expected


def test_mla_kv_is_replicated_and_gqa_kv_is_split_down_to_one_head():
    v3, l70 = load_arch("deepseek-v3"), load_arch("llama-3.1-70b")
    assert v3.kv_bytes_per_token_per_rank(TP8, "bf16", "fa3") == 70272
    one_head = 2 * 1 * 128 * 2 * 80
    assert l70.kv_bytes_per_token_per_rank(TP8, "bf16", "fa3") == one_head
    assert l70.kv_bytes_per_token_per_rank(ParallelLayout(16, 1, 1), "bf16", "fa3") == one_head


def test_deepseek_v3_fp8_weights_at_tp8_are_about_85_gb_per_gpu():
    v3 = load_arch("deepseek-v3")
    per_gpu = v3.weight_bytes_per_rank(TP8, "fp8")
    assert 80e9 < per_gpu < 90e9
    # bf16 weights are about twice as large
    assert 1.8 < v3.weight_bytes_per_rank(TP8, "bf16") / per_gpu < 2.1


def test_expert_parallel_holds_the_same_expert_bytes_as_tp_moe():
    v3 = load_arch("deepseek-v3")
    tp_moe = v3.weight_bytes_per_rank(TP8, "fp8")
    ep_moe = v3.weight_bytes_per_rank(ParallelLayout(8, 1, 8), "fp8")
    assert ep_moe == pytest.approx(tp_moe, rel=0.01)


def test_dp_attention_replicates_attention_weights():
    v3 = load_arch("deepseek-v3")
    dp8 = v3.weight_bytes_per_rank(ParallelLayout(8, 8, 1), "fp8")
    assert dp8 > v3.weight_bytes_per_rank(TP8, "fp8") + 5e9  # 61 layers of full-head MLA weights + embedding


@given(st.sampled_from(zoo_names()), st.sampled_from([1, 2, 4]))
def test_weight_bytes_shrink_with_tensor_parallelism(name, tp):
    arch = load_arch(name)
    dtype = arch.default_weight_dtype
    small = arch.weight_bytes_per_rank(ParallelLayout(tp * 2, 1, 1), dtype)
    large = arch.weight_bytes_per_rank(ParallelLayout(tp, 1, 1), dtype)
    assert small < large
    # whole-model bytes at TP1 are about params x bytes per weight
    if tp == 1 and dtype == "bf16":
        assert large == pytest.approx(2 * arch.num_params(), rel=0.01)


def test_user_config_of_a_known_family_loads(tmp_path):
    config = {
        "architectures": ["MistralForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 32768,
        "max_position_embeddings": 32768,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    arch = load_arch("my-mistral", path)
    assert (arch.family, arch.head_dim, arch.context_len) == ("dense", 128, 32768)


def test_unknown_architecture_is_a_clear_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"architectures": ["MambaForCausalLM"], "hidden_size": 1}))
    with pytest.raises(UnknownModelError, match="MambaForCausalLM.*supported"):
        load_arch("mamba", path)


def test_missing_field_names_the_field(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 8}))
    with pytest.raises(UnknownModelError, match="num_attention_heads"):
        load_arch("broken", path)


@pytest.mark.parametrize(
    "rope_scaling, context",
    [
        (None, 40960),
        ({"type": "yarn", "factor": 4.0}, 163840),  # was held to max_position_embeddings, 40,960
        ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, 40960),
        ({"rope_type": "llama3", "factor": 8.0}, 40960),
    ],
)
def test_context_length_counts_a_rope_scaling_factor_as_sglang_does(rope_scaling, context):
    """SGLang's get_context_length: max_position_embeddings x rope_scaling.factor, unless the scaling names its
    original_max_position_embeddings or is Llama 3's."""
    from simperf.models.zoo import _zoo_config, arch_from_hf_config

    config = {**_zoo_config("qwen3-8b"), "rope_scaling": rope_scaling}
    assert arch_from_hf_config("x", config).context_len == context
