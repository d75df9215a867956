"""SGLang's default rules as simperf applies them (docs/serving-model.md §1.5, §1.10–1.12, §4.3)."""

from __future__ import annotations

import pytest

from simperf.scenario.load import parse_scenario
from simperf.scenario.resolve import decode_graph_buckets, resolve


def scenario(model="deepseek-v3", gpu="h200", count=8, **serving):
    return parse_scenario(
        {
            "model": {"name": model},
            "hardware": {"gpu": gpu, "count": count},
            "serving": {"tp": count, **serving},
            "workload": {"dataset": {"kind": "random", "input_len": 16, "output_len": 4}, "num_prompts": 2},
        }
    )


def test_deepseek_on_h200_tp8_gets_fa3_page1_chunk8192_graphs512():
    s, arch, gpu = resolve(scenario())
    assert (s.prefill_backend, s.decode_backend, s.page_size) == ("fa3", "fa3", 1)
    assert s.chunked_prefill_size == 8192
    assert s.cuda_graph_max_bs == 512 and s.cuda_graph_bs[-1] == 512
    assert s.kv_dtype == "bf16" and s.weight_dtype == "fp8"
    # 8xH200 with ~85 GB of FP8 weights per GPU leaves a few hundred thousand 70 KB tokens
    assert 300_000 < s.max_total_tokens < 800_000


def test_dp_attention_splits_chunk_and_lowers_new_token_ratio():
    s, _, _ = resolve(scenario(dp_attention=8))
    assert s.chunked_prefill_size == 1024
    assert s.init_new_token_ratio == pytest.approx(0.21)
    assert s.min_new_token_ratio == pytest.approx(0.21 * 0.14)


def test_flashmla_forces_page_64_and_v32_uses_nsa_backends_on_hopper():
    s, _, _ = resolve(scenario(attention_backend="flashmla"))
    assert s.page_size == 64
    s, _, _ = resolve(scenario(model="deepseek-v3.2"))
    assert (s.prefill_backend, s.decode_backend, s.page_size) == ("flashmla_sparse", "fa3", 64)
    s, _, _ = resolve(scenario(model="deepseek-v3.2", kv_cache_dtype="fp8_e4m3"))
    assert (s.prefill_backend, s.decode_backend) == ("flashmla_kv", "flashmla_kv")


def test_trtllm_mha_runs_page_64_unless_given_one_it_takes():
    """SGLang 0.5.17 turns a trtllm_mha page size outside 16-128, its default 1 included, into 64; simperf
    priced page 1. A size it takes stays; one it would change is refused."""
    s, _, _ = resolve(scenario(model="qwen3-8b", gpu="b200", count=1, attention_backend="trtllm"))
    assert s.page_size == 64
    s, _, _ = resolve(
        scenario(model="qwen3-8b", gpu="b200", count=1, attention_backend="trtllm", page_size=32)
    )
    assert s.page_size == 32
    with pytest.raises(
        ValueError, match="page_size: 1: SGLang runs the trtllm attention backend with page_size 16"
    ):
        resolve(scenario(model="qwen3-8b", gpu="b200", count=1, attention_backend="trtllm", page_size=1))


def test_attention_backends_page_rule_holds_beside_both_phase_backends():
    """--attention-backend flashmla with fa3 for both phases: SGLang still forces FlashMLA's 64-token pages."""
    both = dict(prefill_attention_backend="fa3", decode_attention_backend="fa3")
    s, _, _ = resolve(scenario(attention_backend="flashmla", **both))
    assert (s.prefill_backend, s.decode_backend, s.page_size) == ("fa3", "fa3", 64)
    s, _, _ = resolve(scenario(**both))
    assert s.page_size == 1


def test_mha_models_default_to_fa3_on_hopper_and_trtllm_on_blackwell_unless_a_draft_tree():
    """SGLang 0.5.17 _get_default_attn_backend: a draft tree (eagle_topk > 1) moves an MHA model to flashinfer; on
    Blackwell the default is trtllm_mha at page 64 (simperf had flashinfer at page 1 there)."""
    tree = {
        "algorithm": "eagle",
        "eagle_topk": 4,
        "num_steps": 3,
        "num_draft_tokens": 8,
        "accept_length": {"mean": 2},
    }
    chain = {"algorithm": "eagle", "eagle_topk": 1, "num_steps": 3, "accept_length": {"mean": 2}}
    cases = [
        ("h100", {}, "fa3", 1),
        ("h100", {"speculative": tree}, "flashinfer", 1),
        ("h100", {"speculative": chain}, "fa3", 1),
        ("b200", {}, "trtllm", 64),
        ("b200", {"speculative": tree}, "flashinfer", 1),
        ("b200", {"speculative": chain}, "trtllm", 64),
    ]
    for gpu, serving, backend, page in cases:
        s, _, _ = resolve(scenario(model="qwen3-8b", gpu=gpu, count=1, **serving))
        assert (s.prefill_backend, s.decode_backend, s.page_size) == (backend, backend, page), (gpu, serving)
    # an EAGLE chain whose eagle_topk is left to SGLang: not trtllm on Blackwell
    implicit = {"algorithm": "eagle", "num_steps": 3, "accept_length": {"mean": 2}}
    s, _, _ = resolve(scenario(model="qwen3-8b", gpu="b200", count=1, speculative=implicit))
    assert s.decode_backend == "flashinfer"


def test_user_values_win_over_rules():
    s, _, _ = resolve(scenario(max_total_tokens=123_456, max_running_requests=64, chunked_prefill_size=4096))
    assert s.max_total_tokens == 123_456
    assert s.max_running_requests == 64 and s.cuda_graph_max_bs == 64
    assert s.chunked_prefill_size == 4096


def test_model_that_does_not_fit_is_a_clear_error():
    with pytest.raises(ValueError, match="does not fit"):
        resolve(scenario(model="deepseek-v3", gpu="h100", count=1))


def test_decode_graph_buckets_follow_sglang_list():
    buckets = decode_graph_buckets(512, speculative=False)
    assert buckets[:6] == (1, 2, 4, 8, 12, 16)
    assert 256 in buckets and 272 in buckets and 496 in buckets and buckets[-1] == 512
    assert decode_graph_buckets(100, speculative=False)[-1] == 100
    spec = decode_graph_buckets(48, speculative=True)
    assert spec[:8] == (1, 2, 3, 4, 5, 6, 7, 8) and spec[-1] == 48


def _mem_fraction(s) -> float:
    note = next(n for n in s.notes if n.startswith("mem_fraction_static="))
    return float(note.split("=")[1].split()[0])


def test_the_reservation_follows_what_the_prefill_graph_and_the_version_reserve():
    """SGLang 0.5.17 reserves 8 MB per captured prefill-graph size while the graph is on (464 MB at C = 8192: 0.83
    on an H100 where 0.835 without it); below the 10 GiB floor it does not show; SGLang <= 0.5.5 reserved 2048 MB
    more for an EAGLE draft (docs/serving-model.md §1.12)."""
    dense = dict(model="qwen3-8b", gpu="h100", count=1)
    on, _, _ = resolve(scenario(**dense))
    no_chunk, _, _ = resolve(scenario(**dense, chunked_prefill_size=512))
    assert _mem_fraction(on) == 0.83  # what every single-H100 server of the corpus logged
    # a 512-token chunk captures 30 sizes instead of 58, and the activation reserve is the floor of 2048 tokens
    gpu_mib = 81559
    assert _mem_fraction(no_chunk) == round(
        (gpu_mib - max(512 + 1.5 * 2048 + 128 + 512 + 30 * 8, 10240)) / gpu_mib, 3
    )
    eagle = {"algorithm": "eagle3", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}
    new, _, _ = resolve(scenario(**dense, speculative=eagle))
    old, _, _ = resolve(scenario(**dense, speculative=eagle, sglang_version="0.5.3"))
    assert _mem_fraction(new) - _mem_fraction(old) == pytest.approx(round(2048 / gpu_mib, 3), abs=0.0011)
    assert old.max_total_tokens < new.max_total_tokens


def test_a_pd_decode_server_mixes_no_chunk():
    """A PD fleet's decode group may share enable_mixed_chunk with its prefill groups: SGLang's decode server has no
    prefill chunk to mix into (disaggregation/decode.py), so its resolved arguments drop it."""
    mixed = scenario(model="qwen3-8b", gpu="h100", count=1, enable_mixed_chunk=True)
    assert resolve(mixed, pd_decode=False)[0].enable_mixed_chunk
    assert not resolve(mixed, pd_decode=True)[0].enable_mixed_chunk


@pytest.mark.parametrize(
    "setting",
    [{"enable_mixed_chunk": True}, {"chunked_prefill_size": 4096}, {"max_prefill_tokens": 4096},
     {"schedule_policy": "lof"}],
)  # fmt: skip
def test_pd_decode_server_refuses_settings_it_does_not_read(setting):
    from simperf.scenario.models import ServingSpec
    from simperf.scenario.pd import check_decode_settings

    check_decode_settings(ServingSpec(tp=2), "d")
    with pytest.raises(ValueError, match=rf"^d\.{next(iter(setting))}: not read by a PD decode server"):
        check_decode_settings(ServingSpec(tp=2, **setting), "d")


@pytest.mark.parametrize(
    "setting", [{"cuda_graph_max_bs": 64}, {"disable_cuda_graph": True}, {"enable_mixed_chunk": True}]
)
def test_pd_prefill_server_refuses_settings_it_does_not_read(setting):
    from simperf.scenario.models import ServingSpec
    from simperf.scenario.pd import check_prefill_settings

    check_prefill_settings(ServingSpec(tp=2), "p")
    with pytest.raises(ValueError, match=rf"^p\.{next(iter(setting))}: not read by a PD prefill server"):
        check_prefill_settings(ServingSpec(tp=2, **setting), "p")
