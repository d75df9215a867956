"""Notes a prediction prints beside its numbers (pipeline._finish): the prefix cache's share of prompt tokens and the
API server's pacing, with the real cost model and shipped tables (Qwen3-0.6B on an H200)."""

from __future__ import annotations

import re

import pytest

from simperf.pipeline import API_SERVER_PACED, ONE_TIME_COMPILES, predict
from simperf.scenario.models import Scenario


def _shared_prefix(radix_off: bool) -> Scenario:
    spec = {
        "model": {"name": "qwen3-0.6b"},
        "hardware": {"gpu": "h200"},
        "serving": {"attention_backend": "flashinfer", "disable_radix_cache": radix_off},
        "workload": {
            "dataset": {"kind": "shared_prefix", "num_groups": 2, "prompts_per_group": 4, "system_prompt_len": 512,
                        "question_len": 64, "output_len": 4},
            "max_concurrency": 1,
        },
    }  # fmt: skip
    return Scenario.model_validate(spec)


def _hit_percent(note: str) -> float:
    return float(re.search(r"([0-9.]+)% of prompt tokens hit", note).group(1))


def test_the_prefix_cache_note_gives_the_share_of_prompt_tokens_the_cache_served():
    on = predict(_shared_prefix(radix_off=False))
    # one at a time, two groups of four: each group's later three prompts reuse its 512-token system prompt
    expected = 100 * float(on.records.cached_tokens.sum()) / float(on.records.input_len.sum())
    assert on.notes["Prefix cache"].startswith("on, ")
    assert _hit_percent(on.notes["Prefix cache"]) == pytest.approx(expected, abs=0.05)
    assert 6 * 512 / (8 * 576) * 100 == pytest.approx(expected, rel=0.05)
    off = predict(_shared_prefix(radix_off=True))
    assert off.notes["Prefix cache"] == "off (--disable-radix-cache), 0.0% of prompt tokens hit"


def test_an_unpaced_prediction_carries_no_pacing_warning():
    assert API_SERVER_PACED not in predict(_shared_prefix(radix_off=False)).notes


def _random(model: str, gpu: str, input_len: int, range_ratio: float, eager: bool = False) -> Scenario:
    spec = {
        "model": {"name": model},
        "hardware": {"gpu": gpu},
        "serving": {"disable_cuda_graph": eager},
        "workload": {
            "dataset": {"kind": "random", "input_len": input_len, "output_len": 4, "range_ratio": range_ratio},
            "num_prompts": 8, "max_concurrency": 4, "seed": 1,
        },
    }  # fmt: skip
    return Scenario.model_validate(spec)


@pytest.mark.parametrize(
    "model, gpu, input_len, range_ratio, eager, noted",
    [
        # the first-wave check's load (MLA: no prefill graph): 6 experts per token, sampled lengths (seed 1 draws
        # 959 tokens: 5,754 rows)
        ("deepseek-v2-lite", "h200", 1024, 0.8, False, True),
        # 6 x 1024 rows: divisible by 16, the variants the corpus' fixed-length loads ran without compiling
        ("deepseek-v2-lite", "h200", 1024, 1.0, False, False),
        # 8 experts per token: an odd prompt gives 8 x odd rows, compiled at run time only without the prefill
        # graph, whose replays run captured sizes
        ("qwen3-30b-a3b", "h200", 1023, 1.0, True, True),
        ("qwen3-30b-a3b", "h200", 1022, 1.0, True, False),
        ("qwen3-30b-a3b", "h200", 1023, 1.0, False, False),
        # a dense model runs no fused-MoE kernel
        ("qwen3-8b", "h200", 1024, 0.8, True, False),
    ],
)  # fmt: skip
def test_the_one_time_compile_note_marks_moe_extends_with_row_counts_triton_has_not_compiled(
    model, gpu, input_len, range_ratio, eager, noted
):
    # groundtruth/experiments/first-wave-h200: fused_moe_kernel variants compiled at the first extend whose
    # top-k x tokens was not divisible by 16, never for the fixed 1,024-token prompts before it
    prediction = predict(_random(model, gpu, input_len, range_ratio, eager))
    assert (ONE_TIME_COMPILES in prediction.notes) is noted


def test_a_pd_pair_and_a_fleet_read_the_compile_note_from_the_servers_that_prefill():
    # a PD pair's decode server has no prefill graph, so its cost model said "eager" for a Qwen3-MoE whose prefill
    # server replays every extend in its graph; the note must follow the prefill server
    def scenario(model: str, extra: dict) -> Scenario:
        spec = {
            "model": {"name": model},
            "hardware": {"gpu": "h200", "count": 2},
            "workload": {"dataset": {"kind": "random", "input_len": 1023, "output_len": 4, "range_ratio": 1.0},
                         "num_prompts": 4, "request_rate": 4},
            **extra,
        }  # fmt: skip
        return Scenario.model_validate(spec)

    pair = {"disaggregation": {"prefill": {"tp": 1}, "decode": {"tp": 1}}}
    assert ONE_TIME_COMPILES not in predict(scenario("qwen3-30b-a3b", pair)).notes
    # an MLA model prefills without the graph on its prefill server too
    assert ONE_TIME_COMPILES in predict(scenario("deepseek-v2-lite", pair)).notes
    fleet = {"fleet": {"replicas": [{"count": 2}]}}
    assert (
        ONE_TIME_COMPILES
        in predict(scenario("qwen3-30b-a3b", {"serving": {"disable_cuda_graph": True}, **fleet})).notes
    )
    assert ONE_TIME_COMPILES not in predict(scenario("qwen3-30b-a3b", fleet)).notes
