"""SGLang's defaults that depend on a server's PD role (--disaggregation-mode): the mem_fraction_static reservation
and the DP controller's load_balance_method (docs/serving-model.md §1.12, §2.2, docs/disaggregation.md).

The reservation, from SGLang 0.5.17 server_args.py (_handle_gpu_memory_settings, reserve_for_graph_mb), in MB:
    reserved = 512 + 1.5 x max(activation tokens, 2048) + 1024 x TP / 8 + graph reserve, at least 10240 on GPUs
    above 60 GiB; mem_fraction_static = round((GPU MiB - reserved) / GPU MiB, 3)
    graph reserve = 2 x max_bs (decode graph on) + 3 x max_bs x DP (+ 1.5 x max_bs x DP above max_bs 300) under DP
    attention, + the prefill graph's where it is on (off here: MLA non-DSA, and PD, as simperf resolves it)
    - no PD: activation tokens = the chunk (before the DP split)
    - PD prefill: the same activations, and no decode graph nor DP term (`disaggregation_mode != "prefill"`)
    - PD decode: activation tokens = (max_running_requests or the decode graph's max_bs or 1)
      x (speculative_num_draft_tokens or 1)
SGLang <= 0.5.5 reserved the no-PD amount on every server. GPU MiB: H100 81559, H200 143771 (hardware/gpus.yaml).
"""

from __future__ import annotations

import numpy as np
import pytest
from simfakes import LinearCost, make_serving
from test_sim_scheduler import simulate

from simperf.plan.commands import server_flags
from simperf.scenario.load import parse_scenario
from simperf.scenario.models import ServingSpec
from simperf.scenario.resolve import resolve
from simperf.scenario.resolved import ParallelLayout
from simperf.sim.engine import BOOTSTRAP_ROOM_END, BOOTSTRAP_ROOM_STREAM

H100_MIB = 81559
H200_MIB = 143771
WORKLOAD = {"dataset": {"kind": "random", "input_len": 16, "output_len": 4}, "num_prompts": 2}


def _scenario(model: str, gpu: str, **serving):
    return parse_scenario(
        {
            "model": {"name": model},
            "hardware": {"gpu": gpu, "count": serving.get("tp", 1)},
            "serving": serving,
            "workload": WORKLOAD,
        }
    )


def _fraction(model: str, gpu: str, role: str | None, **serving) -> float:
    scenario = _scenario(model, gpu, **serving)
    s = resolve(scenario, disaggregated=role is not None, pd_decode=role == "decode")[0]
    note = next(n for n in s.notes if n.startswith("mem_fraction_static="))
    return float(note.split("=")[1].split()[0])


def _mf(gpu_mib: int, reserved: float) -> float:
    return round((gpu_mib - max(reserved, 10240)) / gpu_mib, 3)


def test_deepseek_r1_pd_pair_on_h200_reserves_by_role():
    """The shipped r1-1p1d-h200 layout. Prefill TP8, chunk 8192, max_bs 512:
    no PD 512 + 1.5 x 8192 + 1024 + 2 x 512 = 14848 -> 0.897; PD prefill drops 2 x 512: 13824 -> 0.904.
    Decode TP8 DP8, max_bs 512, no draft: activations max(512 x 1, 2048) = 2048 instead of the chunk's 8192;
    graph 2 x 512 + 3 x 512 x 8 + 1.5 x 512 x 8 = 19456; 512 + 3072 + 1024 + 19456 = 24064 -> 0.833 (no PD:
    512 + 12288 + 1024 + 19456 = 33280 -> 0.769)."""
    assert _mf(H200_MIB, 512 + 12288 + 1024 + 1024) == 0.897
    assert _fraction("deepseek-r1", "h200", None, tp=8) == 0.897
    assert _mf(H200_MIB, 512 + 12288 + 1024) == 0.904
    assert _fraction("deepseek-r1", "h200", "prefill", tp=8) == 0.904
    assert _mf(H200_MIB, 512 + 1.5 * 2048 + 1024 + 19456) == 0.833
    assert _fraction("deepseek-r1", "h200", "decode", tp=8, dp_attention=8) == 0.833
    assert _mf(H200_MIB, 512 + 12288 + 1024 + 19456) == 0.769
    assert _fraction("deepseek-r1", "h200", None, tp=8, dp_attention=8) == 0.769


def test_a_pd_decode_server_sizes_activations_by_running_requests_times_draft_tokens():
    """R1 decode TP8 DP8 with MTP, 5 steps (draft 6 tokens, which simperf's launch command passes): 512 x 6 = 3072
    tokens, 4608 MB; 512 + 4608 + 1024 + 19456 = 25600 -> 0.822.
    Qwen3-8B decode TP1 on an H100, max_running_requests 6144 (max_bs stays 256): 1.5 x 6144 = 9216;
    512 + 9216 + 128 + 512 = 10368 -> 0.873 (no PD: the chunk's 12288 and the prefill graph's 58 sizes x 8 MB,
    13904 -> 0.83)."""
    mtp = {"algorithm": "mtp", "num_steps": 5}
    assert _mf(H200_MIB, 512 + 1.5 * 3072 + 1024 + 19456) == 0.822
    assert _fraction("deepseek-r1", "h200", "decode", tp=8, dp_attention=8, speculative=mtp) == 0.822
    assert _mf(H100_MIB, 512 + 1.5 * 6144 + 128 + 512) == 0.873
    assert _fraction("qwen3-8b", "h100", "decode", max_running_requests=6144) == 0.873
    assert _mf(H100_MIB, 512 + 12288 + 128 + 512 + 58 * 8) == 0.83
    assert _fraction("qwen3-8b", "h100", None, max_running_requests=6144) == 0.83


def test_a_pd_prefill_server_on_h100_reserves_no_decode_graph():
    """Qwen3-8B TP1 on an H100, chunk 8192, max_bs 256. A PD prefill server keeps its breakable prefill graph (0.5.17
    server_args.py, _apply_cuda_graph_disaggregation_roles turns only its decode graph off), so the reserve counts
    the prefill graph's 58 sizes x 8 MB but not the decode graph: 512 + 12288 + 128 + 464 = 13392 -> 0.836 (with the
    decode graph's 2 x 256 as well: 13904 -> 0.83, the server alone)."""
    assert _mf(H100_MIB, 512 + 12288 + 128 + 58 * 8) == 0.836
    assert _fraction("qwen3-8b", "h100", "prefill") == 0.836
    assert _mf(H100_MIB, 512 + 12288 + 128 + 58 * 8 + 512) == 0.83
    assert _fraction("qwen3-8b", "h100", None) == 0.83


def test_sglang_up_to_0_5_5_reserved_the_same_on_either_side():
    """SGLang <= 0.5.5 (server_args.py, _handle_gpu_memory_settings) had no role in the rule."""
    old = {"tp": 8, "dp_attention": 8, "sglang_version": "0.5.5"}
    assert _fraction("deepseek-r1", "h200", "decode", **old) == 0.769
    assert _fraction("deepseek-r1", "h200", "prefill", tp=8, sglang_version="0.5.5") == 0.897


def test_a_pd_decode_server_gets_the_larger_kv_pool():
    s = _scenario("deepseek-r1", "h200", tp=8, dp_attention=8)
    alone = resolve(s)[0].max_total_tokens
    decode = resolve(s, disaggregated=True, pd_decode=True)[0].max_total_tokens
    assert decode > alone * 1.5


def _balance(role: str | None, **serving) -> str:
    s = _scenario("deepseek-r1", "h200", tp=8, dp_attention=8, **serving)
    return resolve(s, disaggregated=role is not None, pd_decode=role == "decode")[0].load_balance_method


def test_a_pd_prefill_server_follows_the_bootstrap_room_unless_told_otherwise():
    """SGLang's load_balance_method "auto" (server_args.py, _handle_load_balance_method): follow_bootstrap_room
    on a PD prefill server, round_robin elsewhere; a method given wins."""
    assert _balance("prefill") == "follow_bootstrap_room"
    assert _balance("decode") == "round_robin"
    assert _balance(None) == "round_robin"
    assert _balance("prefill", load_balance_method="round_robin") == "round_robin"
    assert _balance("prefill", load_balance_method="total_requests") == "total_requests"


def test_the_launch_command_passes_a_method_that_differs_from_sglangs_auto():
    scenario = _scenario("deepseek-r1", "h200", tp=8, dp_attention=8)
    given = ServingSpec(tp=8, dp_attention=8, load_balance_method="round_robin")
    default = ServingSpec(tp=8, dp_attention=8)
    assert "--load-balance-method" not in server_flags(scenario, default, "prefill")
    assert server_flags(scenario, given, "prefill")[-2:] == ["--load-balance-method", "round_robin"]
    assert "--load-balance-method" not in server_flags(scenario, given, "decode")
    assert "--load-balance-method" not in server_flags(scenario, given)


def test_follow_bootstrap_room_sends_each_request_to_its_random_rooms_rank():
    """Each request's bootstrap room is uniform over [0, 2^63) (the PD router's generate_room_id) and picks rank
    room % DP: the ranks are independent uniform draws, not a rotation."""
    serving = make_serving(layout=ParallelLayout(4, 4, 1), load_balance_method="follow_bootstrap_room")
    n = 400
    _, records, stats = simulate([32] * n, [2] * n, serving=serving, cost=LinearCost(), seed=7)
    rooms = np.random.default_rng([7, BOOTSTRAP_ROOM_STREAM]).integers(0, BOOTSTRAP_ROOM_END, size=n)
    expected = rooms % 4
    assert list(records.dp_rank[np.argsort(records.request_id)]) == expected.tolist()
    assert stats.per_rank_requests == np.bincount(expected, minlength=4).tolist()
    assert stats.per_rank_requests != [100] * 4  # round robin's
    rr = make_serving(layout=ParallelLayout(4, 4, 1))
    _, _, rr_stats = simulate([32] * n, [2] * n, serving=rr, cost=LinearCost(), seed=7)
    assert rr_stats.per_rank_requests == [100] * 4


@pytest.mark.parametrize("seed", [0, 1])
def test_the_rooms_spread_requests_evenly_on_average(seed):
    serving = make_serving(layout=ParallelLayout(8, 8, 1), load_balance_method="follow_bootstrap_room")
    n = 2000
    counts = simulate([16] * n, [1] * n, serving=serving, cost=LinearCost(), seed=seed)[2].per_rank_requests
    # 250 expected per rank, binomial sd ~ 14.8: within 5 sd
    assert all(abs(c - 250) < 75 for c in counts)
