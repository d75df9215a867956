"""SGLang 0.5.17's rule for running extends without its breakable prefill CUDA graph, as simperf resolves it: the
reason lands in the notes, and a PD pair's servers follow it whether they come from `disaggregation:` or a fleet.

The rule, from 0.5.17 srt/server_args.py (ServerArgs._handle_cuda_graph_config, which runs before
_handle_gpu_memory_settings computes mem_fraction_static): on CUDA the prefill phase defaults to Backend.BREAKABLE
(model_executor/cuda_graph_config.py, default_prefill_backend); _apply_cuda_graph_compatibility then runs only the
rules of the backend in effect, `_disable_breakable_cudagraph_if_incompatible`, whose one rule a scenario can express
is "MLA attention (non-DSA)". "DP attention" and "PD disaggregation" are rules of
`_disable_tc_piecewise_cudagraph_if_incompatible`, which runs only for the tc_piecewise backend, so they do not
apply. `_apply_cuda_graph_disaggregation_roles` turns the prefill graph off on a PD decode server (and the decode
graph on a PD prefill server, which keeps its prefill graph).
"""

from __future__ import annotations

import pytest

from simperf.fleet.servers import build_groups
from simperf.scenario.load import parse_scenario
from simperf.scenario.resolve import prefill_graph_reserve_mb, resolve
from simperf.sglang_defaults import prefill_cuda_graph_off_reason

WORKLOAD = {"dataset": {"kind": "fixed", "input_len": 256, "output_len": 8}, "num_prompts": 4}


def _resolve(model: str, gpu: str = "h200", count: int = 1, **serving):
    spec = {"model": {"name": model}, "hardware": {"gpu": gpu, "count": count}, "workload": WORKLOAD}
    if serving:
        spec["serving"] = serving
    return resolve(parse_scenario(spec))[0]


@pytest.mark.parametrize(
    "model, count, serving, reason",
    [
        ("qwen3-8b", 1, {}, None),  # plain TP, MHA/GQA: breakable graph on
        ("qwen3-8b", 4, {"tp": 4}, None),
        ("deepseek-v2-lite", 1, {}, "MLA attention (non-DSA)"),
        ("deepseek-v3", 8, {"tp": 8}, "MLA attention (non-DSA)"),
        ("deepseek-v3", 8, {"tp": 8, "dp_attention": 8}, "MLA attention (non-DSA)"),
        ("deepseek-v3.2", 8, {"tp": 8}, None),  # DSA is exempt from the MLA rule: the graph stays
        ("qwen3-8b", 1, {"disable_cuda_graph": True}, "--disable-cuda-graph"),
    ],
)
def test_the_reason_sglang_runs_extends_eagerly_is_in_the_notes(model, count, serving, reason):
    resolved = _resolve(model, count=count, **serving)
    assert resolved.prefill_cuda_graph is (reason is None)
    eager_notes = [n for n in resolved.notes if "extends run eagerly" in n]
    assert eager_notes == ([] if reason is None else [eager_notes[0]])
    if reason is not None:
        assert reason in eager_notes[0]


@pytest.mark.parametrize(
    "model, count, serving",
    [
        ("deepseek-v3.2", 8, {"tp": 8, "dp_attention": 8}),  # DSA (MLA arch, but exempt) under DP attention
        ("qwen3-30b-a3b", 4, {"tp": 4, "dp_attention": 4}),  # GQA MoE under DP attention
    ],
)
def test_dp_attention_keeps_the_breakable_prefill_graph(model, count, serving):
    """0.5.17: "DP attention" is a rule of `_disable_tc_piecewise_cudagraph_if_incompatible` only; the breakable
    backend CUDA runs by default has no DP-attention rule (`_disable_breakable_cudagraph_if_incompatible`), so the
    graph stays on, extends take the graphed host cost and the reserve counts the prefill graph. (simperf took DP
    attention for a reason to run eagerly, citing a `_disable_prefill_cuda_graph_if_incompatible` that 0.5.17 does
    not have.)"""
    resolved = _resolve(model, count=count, **serving)
    assert resolved.prefill_cuda_graph
    assert not [n for n in resolved.notes if "extends run eagerly" in n]


def test_the_dsa_dp_attention_reserve_counts_the_mla_prefill_graph():
    """reserve_for_graph_mb adds 1.5 GiB for a prefill graph on an MLA backend (DSA is one) whenever the graph is on
    and the server is not a PD decode server: V3.2 at TP 8 / DP 8 on an H200 (C 8192 before the DP split, decode
    max_bs 512) reserves it on top of the decode graph and DP padding terms."""
    from simperf.hardware.catalog import get_gpu
    from simperf.scenario.resolve import default_mem_fraction_static

    on = _resolve("deepseek-v3.2", count=8, tp=8, dp_attention=8)
    gpu = get_gpu("h200")
    expected = default_mem_fraction_static(gpu, 8192, 8, 512, 8, prefill_graph_mb=1536)
    assert expected < default_mem_fraction_static(gpu, 8192, 8, 512, 8)
    assert prefill_graph_reserve_mb(True, 8192, None) == 1536
    assert f"mem_fraction_static={expected} by SGLang's reservation rule" in on.notes


def test_the_rule_by_pd_role():
    """_apply_cuda_graph_disaggregation_roles: a PD decode server drops its prefill graph, a PD prefill server its
    decode graph only; MLA (non-DSA) is off whatever the role."""
    assert prefill_cuda_graph_off_reason(False, None, False) is None
    assert prefill_cuda_graph_off_reason(False, "prefill", False) is None
    assert prefill_cuda_graph_off_reason(False, "decode", False) == "PD decode server"
    assert prefill_cuda_graph_off_reason(True, "prefill", False) == "MLA attention (non-DSA)"
    assert prefill_cuda_graph_off_reason(False, "prefill", True) == "--disable-cuda-graph"


def test_a_pd_prefill_server_keeps_its_graph_and_a_decode_server_drops_it_as_a_pair_and_as_fleet_pools():
    """0.5.17: a PD prefill server's prefill backend stays breakable (only its decode graph is turned off by
    _apply_cuda_graph_disaggregation_roles), so its extends take the graphed host cost and its reserve counts the
    prefill graph; the decode server's prefill graph is off. simperf ran both sides eagerly."""
    base = {"model": {"name": "qwen3-8b"}, "hardware": {"gpu": "h100", "count": 2}, "workload": WORKLOAD}
    pair = parse_scenario({**base, "disaggregation": {"prefill": {"tp": 1}, "decode": {"tp": 1}}})
    alone = pair.model_copy(update={"disaggregation": None})
    prefill, _, _ = resolve(alone, "disaggregation.prefill")
    assert prefill.prefill_cuda_graph
    decode, _, _ = resolve(alone, "disaggregation.decode")
    assert not decode.prefill_cuda_graph
    assert any("PD decode server" in n for n in decode.notes)
    fleet = parse_scenario(
        {
            **base,
            "fleet": {
                "prefill": [{"count": 1}],
                "decode": [{"count": 1}],
                "router": {"policy": "round_robin"},
            },
        }
    )
    (group,) = build_groups(fleet, "prefill", fleet.fleet.prefill, None)
    assert group.serving.prefill_cuda_graph
    (group,) = build_groups(fleet, "decode", fleet.fleet.decode, None)
    assert not group.serving.prefill_cuda_graph
    replicas = parse_scenario({**base, "fleet": {"replicas": [{"count": 2}]}})
    (group,) = build_groups(replicas, "replicas", replicas.fleet.replicas, None)
    assert group.serving.prefill_cuda_graph  # replicas serve whole requests: the graph stays


def test_a_pd_prefill_server_reserves_its_prefill_graph():
    """reserve_for_graph_mb counts the prefill graph where disaggregation_mode != "decode" and it is on: 8 MB per
    captured size (74 sizes up to C = 16384: 592 MB) on a GQA model's PD prefill server, which reserves no decode
    graph; that C keeps the reserve above the 10 GiB floor, so the prefill graph's share shows in the fraction."""
    from simperf.hardware.catalog import get_gpu
    from simperf.scenario.resolve import default_mem_fraction_static

    base = {"model": {"name": "qwen3-8b"}, "hardware": {"gpu": "h100", "count": 2}, "workload": WORKLOAD}
    pair = parse_scenario(
        {
            **base,
            "disaggregation": {
                "prefill": {"tp": 1, "chunked_prefill_size": 16384, "sglang_version": "0.5.17"},
                "decode": {"tp": 1, "sglang_version": "0.5.17"},
            },
        }
    )
    alone = pair.model_copy(update={"disaggregation": None, "serving": pair.disaggregation.prefill})
    prefill, _, _ = resolve(alone, "disaggregation.prefill")
    note = next(n for n in prefill.notes if n.startswith("mem_fraction_static="))
    graph_mb = prefill_graph_reserve_mb(False, 16384, None)
    assert graph_mb == 8 * 74
    expected = default_mem_fraction_static(
        get_gpu("h100"), 16384, 1, 256, 1, prefill_graph_mb=graph_mb, role="prefill"
    )
    without = default_mem_fraction_static(get_gpu("h100"), 16384, 1, 256, 1, role="prefill")
    assert expected < without
    assert note.startswith(f"mem_fraction_static={expected} ")


def test_a_dp_attention_extend_takes_the_graphed_host_cost():
    """The extend's host time per kernel follows the graph (costmodel/step.py, Overheads.extend_launch_us): under DP
    attention on a GQA MoE model 0.5.17 keeps the breakable prefill graph, so the extend is priced at
    extend_launch_us_per_kernel(_fa3), not the eager MoE value x the rank factor simperf used."""
    from simperf.pipeline import predict
    from simperf.scenario.models import Scenario

    scenario = Scenario.model_validate(
        {
            "model": {"name": "qwen3-30b-a3b"},
            "hardware": {"gpu": "h200", "count": 4},
            "serving": {"tp": 4, "dp_attention": 4},
            "workload": {"dataset": {"kind": "fixed", "input_len": 256, "output_len": 4}, "num_prompts": 4},
        }
    )
    prediction = predict(scenario)
    host = prediction.cost.extend_host_us_per_kernel
    assert host.field.startswith("extend_launch_us_per_kernel")  # (_fa3 on Hopper's default backend)
    assert host == prediction.cost.overheads.extend_launch_us(prediction.serving.prefill_backend)


@pytest.mark.parametrize(
    "model, count, serving, max_bs, chunk, prefill_mb",
    [
        # plain TP: 2 MB x 256, not 2 MB x 64
        ("qwen3-8b", 1, {"max_running_requests": 64}, 256, 8192, 464.0),
        # DP attention: the decode graph's 512 at TP 8 x DP 8 padding terms, not 128 / 8 = 16 per rank
        ("deepseek-v3", 8, {"tp": 8, "dp_attention": 8, "max_running_requests": 128}, 512, 8192, 0.0),
    ],
)
def test_the_graph_reserve_takes_the_decode_max_bs_before_max_running_requests_caps_it(
    model, count, serving, max_bs, chunk, prefill_mb
):
    """0.5.17 server_args.py, _handle_gpu_memory_settings: the decode graph's max_bs is --cuda-graph-max-bs or the
    GPU-memory default (256 below TP 4, else 512 on an H100/H200) when mem_fraction_static is computed, and
    reserve_for_graph_mb reads it there (2 MB per batch; 3 and, above 300, 1.5 more x DP under DP attention).
    Nothing in server_args.py caps it by --max-running-requests; only the runtime's capture list is capped by the
    request pool (base_cuda_graph_runner.py, get_batch_sizes_to_capture). simperf capped it at
    max_running_requests / DP first, reserving too little and predicting a larger KV pool."""
    from simperf.hardware.catalog import get_gpu
    from simperf.scenario.resolve import default_mem_fraction_static

    gpu_key = "h100" if count == 1 else "h200"
    resolved = _resolve(model, gpu=gpu_key, count=count, **serving)
    dp = serving.get("dp_attention", 1)
    expected = default_mem_fraction_static(
        get_gpu(gpu_key), chunk, serving.get("tp", 1), max_bs, dp, prefill_graph_mb=prefill_mb
    )
    assert f"mem_fraction_static={expected} by SGLang's reservation rule" in resolved.notes
    # the captured decode graphs still stop at the running requests per rank
    assert resolved.cuda_graph_max_bs == serving["max_running_requests"] // dp


@pytest.mark.parametrize(
    "version, dp, role, reason",
    [
        ("0.5.8", 8, None, "DP attention"),
        ("0.5.8", 1, "prefill", "PD disaggregation"),
        ("0.5.8", 1, "decode", "PD disaggregation"),
        ("0.5.8", 1, None, None),
        ("0.5.17", 8, None, None),
        ("0.5.17", 1, "prefill", None),
        ("0.5.23", 8, "prefill", None),
    ],
)
def test_versions_before_the_one_read_keep_the_earlier_rule(version, dp, role, reason):
    """The 0.5.17 rule applies from the version whose source was read (BREAKABLE_PREFILL_RULE_FROM); before it the
    prefill graph was the torch-compile piecewise one (or opt in), whose rules ("DP attention", "PD
    disaggregation": 0.5.17 keeps them as _disable_tc_piecewise_cudagraph_if_incompatible) simperf followed until
    now, e.g. for the pinned 0.5.6 / 0.5.8 DeepSeek-V3.2 DP8 scenarios compared with sglang PRs in docs/b200.md."""
    assert (
        prefill_cuda_graph_off_reason(False, role, False, dp_attention=dp, sglang_version=version) == reason
    )
    resolved = _resolve("deepseek-v3.2", count=8, tp=8, dp_attention=dp, sglang_version=version)
    if role is None:
        assert resolved.prefill_cuda_graph is (reason is None)


def test_the_prefill_graph_reserve_counts_its_sizes_without_listing_them():
    """A chunked_prefill_size of 10**12 listed two billion captured sizes to count them and hung the prediction;
    the count is now arithmetic, equal to the listing's length wherever that can be made."""
    from simperf.sglang_defaults import prefill_graph_capture_count, prefill_graph_capture_sizes

    for tokens in [*range(0, 10_000, 37), 4095, 4096, 4607, 4608, 5119, 5120, 16384, 65536]:
        assert prefill_graph_capture_count(tokens) == len(prefill_graph_capture_sizes(tokens)), tokens
    assert prefill_graph_reserve_mb(False, 10**12, None) == 8.0 * prefill_graph_capture_count(10**12)
