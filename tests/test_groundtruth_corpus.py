"""The committed ground-truth corpus: every run is usable, every host-cost default is what the corpus measured, and
the accuracy and overheads sections of the docs are the commands' output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from realcost import zoo_cost

from simperf.accuracy import corpus as corpus_accuracy
from simperf.accuracy.run import generated_block
from simperf.groundtruth.cli import OVERHEADS_BEGIN, OVERHEADS_END
from simperf.groundtruth.decompose import corpus_stages, markdown, service_times
from simperf.scenario.models import Overheads

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "groundtruth"


@pytest.fixture(scope="module")
def stages():
    return corpus_stages(CORPUS)


@pytest.fixture(scope="module")
def report():
    return corpus_accuracy.run_corpus(CORPUS)


def test_every_recorded_run_is_complete_and_joined_to_its_server_records():
    runs = sorted(CORPUS.glob("*/*/*/run.json"))
    assert len(runs) >= 45
    for path in runs:
        status = json.loads(path.read_text())
        assert status["status"] == "ok", path
        assert (
            status["requests_with_server_times"] == status["requests_with_client_times"] == status["requests"]
        )
        assert (path.parent / "bench_cmd.txt").exists() and (path.parent / "requests.parquet").exists()


def test_every_request_passes_the_server_stages_in_order(stages):
    """The server's own timestamps of each request come in pipeline order; stages measured across the client's and
    the server's clocks (`http_in`, `to_client`) are in order at the median (single requests may differ by the
    two processes' wall-clock conversions, a few ms)."""
    from simperf.groundtruth.decompose import _stage_arrays

    for path in sorted(CORPUS.glob("*/*/*/requests.parquet")):
        per_request, _ = _stage_arrays(path)
        for name in ("api_server", "to_scheduler", "queue", "prefill", "out"):
            assert np.nanmin(per_request[name]) >= 0.0, f"{path}: {name}"
    for s in stages:
        assert min(s.stages_ms.values()) >= 0.0, s.run


def test_host_cost_defaults_are_the_corpus_measurements(stages):
    from simperf.pipeline import predict
    from simperf.scenario.models import Scenario

    measured = service_times(stages)
    defaults = Overheads()
    assert defaults.ingress_us == pytest.approx(measured.ingress_ms * 1e3, abs=5)
    assert defaults.egress_us == pytest.approx(measured.egress_ms * 1e3, abs=5)
    # the extend forward's host time: the short-prompt run's prefill stage, less the scheduler's per-iteration costs
    # already in the simulator, over the kernels of that forward
    scenario = Scenario.model_validate(
        {
            "model": {"name": "qwen3-8b"},
            "hardware": {"gpu": "h100"},
            "workload": {"dataset": {"kind": "fixed", "input_len": 128, "output_len": 2}, "num_prompts": 1},
        }
    )
    cost = predict(scenario).cost
    kernels = cost.breakdown_extend(np.array([128]), np.array([0]))[-1].count
    per_iteration_us = defaults.scheduler_us_per_iteration + defaults.process_us_per_iteration
    assert set(measured.host_bound_prefill_ms) == {"flashinfer", "fa3"}
    for backend, prefill_ms in measured.host_bound_prefill_ms.items():
        host_us = prefill_ms * 1e3 - per_iteration_us
        assert defaults.extend_launch_us(backend)[0] == pytest.approx(host_us / kernels, abs=0.1), backend


def test_eager_extend_and_per_request_host_costs_are_the_one_batch_measurements():
    from simperf.accuracy.hostcosts import (
        eager_extend_us_per_kernel,
        eager_extend_us_per_kernel_dense,
        process_us_per_running_request,
    )

    defaults = Overheads()
    eager = eager_extend_us_per_kernel(CORPUS)
    assert defaults.eager_extend_us_per_kernel == pytest.approx(eager.value_us, abs=0.1), eager.detail
    dense = eager_extend_us_per_kernel_dense(CORPUS)
    assert defaults.eager_extend_us_per_kernel_dense == pytest.approx(dense.value_us, abs=0.1), dense.detail
    per_request = process_us_per_running_request(CORPUS)
    assert defaults.process_us_per_running_request == pytest.approx(per_request.value_us, abs=0.1), (
        per_request.detail
    )


def test_the_eager_rank_factors_are_the_four_rank_one_batch_measurements():
    """Overheads.eager_extend_rank_factor(_dense): one_batch forwards at TP 4 over TP 1 on the same 4-GPU host, per
    kernel simperf counts at each size, the median over the hosts (groundtruth/forwards/h200x4/)."""
    from simperf.accuracy.hostcosts import eager_extend_rank_factor

    defaults = Overheads()
    mla_moe = eager_extend_rank_factor(CORPUS, "mla_moe")
    assert defaults.eager_extend_rank_factor == pytest.approx(mla_moe.value, abs=0.001), mla_moe.detail
    dense = eager_extend_rank_factor(CORPUS, "dense")
    assert defaults.eager_extend_rank_factor_dense == pytest.approx(dense.value, abs=0.001), dense.detail
    # both hosts saw four ranks run longer per kernel, by more than their run-to-run noise
    assert all(float(part.rsplit("= ", 1)[1]) > 1.3 for part in mla_moe.detail.split("; ")), mla_moe.detail


def test_the_two_rank_factor_is_the_served_extends_measurement():
    """Overheads.eager_extend_rank_factor_tp2: DeepSeek-V2-Lite served at TP 2 and TP 1 on one host, one request at a
    time, its prefill stage per kernel simperf counts, the median over two prompt lengths
    (groundtruth/plans/h200x2-eager-extend-tp.yaml): not the check plan's runs that found it missing."""
    from simperf.accuracy.hostcosts import SERVED_RANK_SERVERS, served_eager_rank_factor_tp2

    measured = served_eager_rank_factor_tp2(CORPUS)
    assert Overheads().eager_extend_rank_factor_tp2 == pytest.approx(measured.value, abs=0.001), (
        measured.detail
    )
    # both prompt lengths ran longer per kernel at two ranks, by more than one request's spread at one
    assert all(float(part.rsplit("= ", 1)[1]) > 1.3 for part in measured.detail.split("; ")), measured.detail
    assert not any("check" in str(server) for server in SERVED_RANK_SERVERS.values())


def test_the_served_four_rank_extend_agrees_with_the_one_batch_factor():
    """Overheads.eager_extend_rank_factor was measured with one_batch (no scheduler); at 2 ranks the served forward
    had differed from one_batch by 1.5x. DeepSeek-V2-Lite served at TP 4 and TP 1 on one 4-GPU host
    (groundtruth/plans/h200x4-eager-extend-tp4.yaml, twenty-seventh session) measured 1.70 per kernel, the median
    over two prompt lengths: the one_batch value holds for the served forward at 4 ranks."""
    from simperf.accuracy.hostcosts import SERVED_RANK_SERVERS_TP4, served_eager_rank_factor

    measured = served_eager_rank_factor(CORPUS, SERVED_RANK_SERVERS_TP4)
    assert Overheads().eager_extend_rank_factor == pytest.approx(measured.value, rel=0.02), measured.detail
    assert all(float(part.rsplit("= ", 1)[1]) > 1.3 for part in measured.detail.split("; ")), measured.detail


def test_the_api_server_time_per_chunk_is_the_saturated_runs_measurement():
    from simperf.accuracy.hostcosts import frontend_us_per_chunk

    measured = frontend_us_per_chunk(CORPUS)
    # the corpus' servers all ran --enable-metrics and streamed cumulatively: their mean time per chunk is both
    # parts plus the tokens the run's chunks carried on average (512 outputs: 256.5), grown by its 128 open requests
    o = Overheads()
    with_metrics = (
        o.frontend_us_per_chunk_for(enable_metrics=True) + o.frontend_us_per_token_for(False) * 256.5
    ) * (1 + 128 * o.frontend_share_per_open_request)
    assert with_metrics == pytest.approx(measured.value_us, abs=0.1), measured.detail
    # it is the API server that saturates there: the first chunk waits two orders longer than on an idle server
    assert "first chunk 198 ms" in measured.detail


def test_the_schedulers_cpu_per_iteration_is_the_overlap_off_runs_measurement():
    from simperf.accuracy.hostcosts import SCHEDULER_SHARE, cpu_us_per_iteration

    measured = cpu_us_per_iteration(CORPUS)
    o = Overheads()
    total = o.scheduler_us_per_iteration + o.process_us_per_iteration
    assert total == pytest.approx(measured.value_us, abs=0.5), measured.detail
    assert o.scheduler_us_per_iteration == pytest.approx(SCHEDULER_SHARE * total, abs=0.5)
    # both hosts' runs: a served iteration well above its GPU step (1.5-2 ms of CPU work in series)
    assert measured.detail.count("served") == 2


def test_the_api_servers_tokenisation_is_the_text_prompt_runs_measurement():
    from simperf.accuracy.hostcosts import tokenize_us_per_prompt_token

    measured = tokenize_us_per_prompt_token(CORPUS)
    assert Overheads().tokenize_us_per_prompt_token == pytest.approx(measured.value_us, abs=0.01), (
        measured.detail
    )
    # eight servers ran text prompts beside token ids; a text prompt's handling is ~20x a token-id prompt's
    assert measured.detail.count("tokens") == 8


def test_the_corpus_scenarios_say_how_their_prompts_were_sent():
    from simperf.accuracy.corpus import scenario_of

    ids = scenario_of(CORPUS / "h100/qwen3-8b-flashinfer/c16-1k-512")
    text = scenario_of(CORPUS / "h100/qwen3-8b-flashinfer/gsp-c16")
    assert ids.workload.tokenize_prompt and not text.workload.tokenize_prompt


def test_the_eager_prefill_is_host_bound_in_its_profile():
    """Why the eager extend is priced by host time: its kernels keep the GPU busy about a third of the forward."""
    from simperf.groundtruth.trace import read_trace, summarize

    trace = (
        CORPUS
        / "forwards/h200/deepseek-v2-lite-prefill/profile_batch1_input1024_output4_prefill.trace.json.gz"
    )
    summary = summarize(read_trace(trace))
    assert summary.launches == summary.kernels == 742
    assert summary.gpu_busy_us < 0.2 * summary.window_us  # under the profiler the host is slower still
    clean_ms = (
        json.loads(
            (CORPUS / "forwards/h200/deepseek-v2-lite-prefill/clean.jsonl").read_text().splitlines()[-2]
        )["prefill_latency"]
        * 1e3
    )
    assert summary.gpu_busy_us / 1e3 < 0.4 * clean_ms


def test_docs_overheads_block_is_the_commands_output(stages):
    assert generated_block(REPO / "docs" / "overheads.md", OVERHEADS_BEGIN, OVERHEADS_END) == markdown(stages)


def test_service_times_no_run_measured_are_said_not_measured(stages):
    """A corpus without concurrency-1 runs (or whose c1 runs all met a busy scheduler) printed "**nan ms** (median
    of )" in bold, as a measurement."""
    from dataclasses import replace

    loaded = [s for s in stages if not s.run.split("/")[-1].startswith("c1-")]
    text = markdown(loaded)
    assert "nan" not in text and "service times at concurrency 1: not measured: no concurrency-1 run" in text
    busy = [replace(s, stages_ms={**s.stages_ms, "to_scheduler": 9.0}) for s in stages]
    text = markdown(busy)
    assert (
        "nan" not in text
        and "ingress (client send → scheduler waiting queue, idle scheduler) not measured" in text
    )
    assert "egress (prefill result processed → first chunk parsed by the client) **" in text


def test_docs_accuracy_corpus_block_is_the_commands_output(report):
    block = generated_block(REPO / "docs" / "accuracy.md", corpus_accuracy.DOC_BEGIN, corpus_accuracy.DOC_END)
    assert block == corpus_accuracy.markdown(report), (
        "docs/accuracy.md is stale: run `simperf accuracy groundtruth/ -o markdown --update-doc docs/accuracy.md`"
    )


def test_every_run_is_predicted_from_what_it_recorded(report):
    assert not report.skipped and len(report.runs) >= 45
    for r in report.runs:
        assert r.kv_measured and r.kv_predicted
        assert set(corpus_accuracy.TARGET_METRICS) <= set(r.predicted)


def test_a_launch_flag_simperf_does_not_model_refuses_the_run_with_the_reason():
    with pytest.raises(corpus_accuracy.Unmodelled, match="--enable-lora"):
        corpus_accuracy.serving_from_flags({"enable-lora": True, "attention-backend": "flashinfer"}, "0.5.17")
    assert corpus_accuracy.serving_from_flags({"tp-size": "2", "port": "1"}, "0.5.17") == {
        "tp": 2,
        "sglang_version": "0.5.17",
    }


def test_a_recorded_servers_flags_are_read_as_simperf_predict_reads_them():
    """The corpus reads server_cmd.txt through predict's own flag parser (scenario/cmdline.py): DP attention, which
    the corpus' own flag table did not know, comes out as predict gives it, and a rule predict applies to a flag
    refuses the run the same way."""
    flags = {"tp-size": "2", "dp-size": "2", "enable-dp-attention": True, "attention-backend": "flashinfer"}
    assert corpus_accuracy.serving_from_flags(flags, "0.5.17") == {
        "tp": 2,
        "dp_attention": 2,
        "attention_backend": "flashinfer",
        "sglang_version": "0.5.17",
    }
    with pytest.raises(corpus_accuracy.Unmodelled, match="--dp-size without --enable-dp-attention"):
        corpus_accuracy.serving_from_flags({"tp-size": "2", "dp-size": "2"}, "0.5.17")


def test_the_kv_pool_is_within_one_percent_of_what_every_server_logged(report):
    """simperf's KV pool (SGLang's memory accounting, scenario/resolve.py) against `max_total_num_tokens` from
    each recorded server's start-up log: within 0.15% on pools of 0.26-3.3 M tokens, +0.7% (30 MiB) on Qwen3-32B's
    16,798 tokens on one H100. It was +1.8% (one GiB too many) on every GQA server, and +22% on that small pool,
    while the prefill CUDA graph's reservation and the memory in use before the weights were missing."""
    for r in report.runs:
        assert abs(r.kv_predicted - r.kv_measured) <= 0.01 * r.kv_measured, (
            r.run,
            r.kv_predicted,
            r.kv_measured,
        )


def _servers():
    return sorted(p.parent for p in CORPUS.glob("*/*/server_facts.json"))


@pytest.mark.parametrize("server", _servers(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_mem_fraction_static_is_the_one_each_server_chose(server):
    """SGLang's reservation rule as simperf applies it gives every recorded server's own mem_fraction_static (its
    server_args, logged at start-up): GQA and MLA models, decode graphs of 256 and 512, TP 1, 2 and 4."""
    from simperf.scenario.resolve import resolve

    facts = json.loads((server / "server_facts.json").read_text())
    first_run = sorted(p for p in server.iterdir() if (p / "run.json").exists())[0]
    resolved, _, _ = resolve(corpus_accuracy.scenario_of(first_run))
    chosen = [n for n in resolved.notes if n.startswith("mem_fraction_static=")]
    assert chosen == [
        f"mem_fraction_static={facts['server_info']['mem_fraction_static']} by SGLang's reservation rule"
    ]


DEEPGEMM_KIT_PLANS = frozenset(
    {"h200-check-eagle.yaml", "h200-spec-first-token.yaml", "h200-check-eagle-qwen3.yaml"}
)


def _plan_of(server: Path) -> str:
    run = next(server.glob("*/run.json"))
    return Path(json.loads(run.read_text())["plan"]).name


def test_the_memory_in_use_before_the_weights_is_what_the_tp1_servers_logged():
    """gpus.yaml's pre_load_used_bytes against every single-GPU server's 'Load weight begin. avail mem' (GiB with
    two decimals, so within 10 MiB)."""
    import re

    from simperf.hardware.catalog import get_gpu
    from simperf.scenario.resolve import memory_before_weights

    used: dict[str, list[float]] = {}
    for server in _servers():
        facts = json.loads((server / "server_facts.json").read_text())
        # the servers recorded with DeepGEMM in the kit (.dgkit, which SGLang's EAGLE worker needs) hold ~41 MiB
        # more before their weights, the plain one among them too (1,342.8 MiB against 1,301.9): DeepGEMM's import,
        # not the draft. Their KV pools are still within 0.1% of the logs (tests/test_spec_verify.py, accuracy)
        if facts["server_info"]["tp_size"] != 1 or _plan_of(server) in DEEPGEMM_KIT_PLANS:
            continue
        line = next(x for x in facts["startup_log"] if "Load weight begin" in x)
        avail_mib = float(re.search(r"avail mem=([\d.]+) GB", line).group(1)) * 1024
        gpu = get_gpu(server.parent.name)
        assert facts["env"]["gpu_memory_mib"] * 2**20 == gpu.memory_bytes
        used.setdefault(server.parent.name, []).append(facts["env"]["gpu_memory_mib"] - avail_mib)
    assert sum(len(v) for v in used.values()) >= 10
    for key, values in used.items():
        free_mib = memory_before_weights(get_gpu(key), 1)[0] / 2**20  # what the KV pool is computed from
        catalogue_mib = get_gpu(key).memory_bytes / 2**20 - free_mib
        assert abs(float(np.median(values)) - catalogue_mib) <= 6, (
            key,
            values,
        )  # the log's 0.01 GiB rounding
        assert max(abs(v - catalogue_mib) for v in values) <= 25, (key, values)


def test_the_decode_replay_costs_are_the_served_profiles_measurement():
    from simperf.accuracy.hostcosts import (
        decode_between_replays_us,
        decode_graph_gap_us_per_kernel,
        decode_moe_router_us,
    )

    o = Overheads()
    gap = decode_graph_gap_us_per_kernel(CORPUS)
    assert o.decode_graph_gap_us_per_kernel == pytest.approx(gap.value_us, abs=0.001), gap.detail
    router = decode_moe_router_us(CORPUS)
    assert o.decode_moe_router_us == pytest.approx(router.value_us, abs=0.005), router.detail
    between = decode_between_replays_us(CORPUS)
    assert o.decode_between_replays_us == pytest.approx(between.value_us, abs=0.1), between.detail


def test_the_speculative_workers_idle_is_the_served_eagle_profiles_measurement():
    """Overheads.spec_worker_idle_us (and its growth per running request) are recomputed from the profiled served
    EAGLE decodes: each unprofiled iteration less the profiled GPU busy time and its short gaps, on a line over the
    running requests. The idle is real on every point (1.3-2.6 ms of a 8-30 ms iteration), grows with the batch,
    and the profile saw the iterations it was asked for (35 / 37 paged-prefill kernels each: the target's 32 verify
    layers, the draft's decode steps and its extend)."""
    from simperf.accuracy.hostcosts import spec_idle_points, spec_worker_idle
    from simperf.groundtruth.trace import read_trace

    o = Overheads()
    per_iteration, per_request = spec_worker_idle(CORPUS)
    assert o.spec_worker_idle_us == pytest.approx(per_iteration.value_us, abs=0.1), per_iteration.detail
    assert o.spec_worker_idle_us_per_running_request == pytest.approx(per_request.value_us, abs=0.01)
    points = spec_idle_points(CORPUS)
    assert len(points) == 6
    for p in points:
        assert 1000 < p.idle_us < 3000, p
        assert 0.05 < p.idle_us / p.iteration_us < 0.25, p
    assert 10 < per_request.value_us < 40
    for server, per_iteration_kernels in (("chain", 35), ("tree", 37)):
        trace = CORPUS / f"forwards/h200/served-llama-3.1-8b-eagle-idle-{server}/c1.trace.json.gz"
        paged = [e for e in read_trace(trace) if "BatchPrefillWithPagedKVCacheKernel" in e.get("name", "")]
        assert len(paged) == 10 * per_iteration_kernels, server


def test_the_speculative_launch_wait_is_one_per_launch_and_the_prefills_rest_is_the_drafts_host_time():
    """Overheads.spec_launch_wait_us is recomputed from the chain's host-side profiles: from the later of (the next
    launch starts, the previous batch's GPU work ends) to that batch's processing, at 1, 16 and 48 requests within
    15% of each other (the engine's one wait per launch), taken off the profiler by the host-bound one-request
    iteration's unprofiled / profiled ratio. Overheads.spec_draft_prefill_host_us is the rest of what a served
    speculative prefill waits beyond its plain twin on one host (less the draft's profiled prefill, ~1.1 ms): every
    such point is several ms, and it does not grow with the draft's steps (on the probe's host the 4-step top-2
    draft waited less than the 3-step chain)."""
    from simperf.accuracy.hostcosts import (
        draft_prefill_busy_us,
        spec_draft_prefill_host,
        spec_launch_profiles,
        spec_launch_wait,
        spec_launch_wait_points,
    )

    o = Overheads()
    wait = spec_launch_wait(CORPUS)
    assert o.spec_launch_wait_us == pytest.approx(wait.value_us, abs=0.1), wait.detail
    rest = spec_draft_prefill_host(CORPUS)
    assert o.spec_draft_prefill_host_us == pytest.approx(rest.value_us, abs=0.1), rest.detail
    profiles = spec_launch_profiles(CORPUS)
    assert [p.running for p in profiles] == [1, 16, 48]
    waits = [p.wait_us for p in profiles]
    assert max(waits) < 1.15 * min(waits), profiles
    # one request is host-bound: the wait is most of its iteration, and the profiler stretched it
    assert 0.6 < profiles[0].wait_us / profiles[0].period_us < 0.9
    assert 0.5 < profiles[0].unprofiled_iteration_us / profiles[0].period_us < 0.9
    points = dict(spec_launch_wait_points(CORPUS))
    assert len(points) == 4 and all(4000 < us < 12000 for us in points.values()), points
    assert points["probe qwen3-8b-eagle one-token"] < points["probe llama-3.1-8b-chain one-token"]
    assert 1000 < rest.value_us < 4000
    for server in ("llama-3.1-8b-chain", "qwen3-8b-eagle"):
        assert 900 < draft_prefill_busy_us(CORPUS, server) < 1300


def test_the_tree_drafts_top_k_sampling_is_the_served_profiles_measurement():
    """Overheads.spec_draft_topk_us_per_step / _per_row are recomputed from the tree server's profiled decodes: its
    softmax / top-k kernels per iteration grow with the rows sampled (17 per request for 5 steps of top-k 4); the
    chain's argmax sampling is microseconds and is not priced."""
    from simperf.accuracy.hostcosts import DRAFT_TOPK_KERNELS, spec_draft_topk
    from simperf.groundtruth.trace import read_trace

    o = Overheads()
    per_step, per_row = spec_draft_topk(CORPUS)
    assert o.spec_draft_topk_us_per_step == pytest.approx(per_step.value_us, abs=0.1), per_step.detail
    assert o.spec_draft_topk_us_per_row == pytest.approx(per_row.value_us, abs=0.001), per_row.detail
    assert 1.0 < per_row.value_us < 5.0 and 20 < per_step.value_us < 200
    chain = read_trace(CORPUS / "forwards/h200/served-llama-3.1-8b-eagle-idle-chain/c48.trace.json.gz")
    sampled = sum(
        float(e["dur"])
        for e in chain
        if e.get("cat") == "kernel" and DRAFT_TOPK_KERNELS.search(e.get("name", ""))
    )
    assert sampled / 10 < 30  # us an iteration at 48 requests


def test_a_served_decode_iteration_is_its_replay_plus_the_work_between_replays():
    from simperf.groundtruth.trace import decode_replays, read_trace

    served = CORPUS / "forwards/h100/served-llama-3.1-8b-decode"
    for name in ("c1.trace.json.gz", "c16.trace.json.gz"):
        r = decode_replays(read_trace(served / name))
        assert r.iterations >= 5, name
        parts = r.replay_busy_us + r.replay_gap_us + r.between_us
        # medians of each part need not add up exactly, but the parts are the whole iteration
        assert parts == pytest.approx(r.period_us, rel=0.005), (name, r)
        # the GPU idles between a replay's kernels: ~0.35-0.4 us each, 2-3% of the step
        assert 0.2 < r.replay_gap_us / r.replay_kernels < 0.6, r
    # the corpus' own served iteration at one running request (same model, GPU, backend, unprofiled) is the
    # profiled one: the profiler did not stretch it
    state = json.loads((CORPUS / "h100/llama-3.1-8b-flashinfer/c1-1k-256/server_state.json").read_text())
    unprofiled_us = float(np.median(state["decode_step_time_s"]["1"][2:])) * 1e6
    profiled = decode_replays(read_trace(served / "c1.trace.json.gz"))
    assert profiled.period_us == pytest.approx(unprofiled_us, rel=0.01)


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen3-8b", "qwen3-30b-a3b"])
def test_the_tables_price_a_decode_replays_kernels_as_one_batch_ran_them(model):
    """The shipped H100 tables against SGLang's own one_batch decode (profiled, 1,024-token prompts): the step's
    kernels, without the named overheads, are the GPU's busy time within ~4.5%. (Qwen3-30B-A3B at batch 1 sits at
    +4.6% since its 32q/4kv decode attention is measured at KV 1,024 itself rather than interpolated from 512 and
    2,048: what is left is the kernels timed alone against the same kernels inside a forward pass.)"""
    from simperf.costmodel.step import SOURCE_INDEX
    from simperf.groundtruth.trace import decode_replays, read_trace

    cost = zoo_cost(model)
    for bs in (1, 16, 64):
        trace = (
            CORPUS / f"forwards/h100/{model}-decode/profile_batch{bs}_input1024_output16_decode.trace.json.gz"
        )
        busy = decode_replays(read_trace(trace), cut_edges=False).replay_busy_us
        step = cost.decode_steps(bs, bs, np.array([1034.5 * bs]), True)[0]
        kernels_us = float(step.sum()) - float(step[SOURCE_INDEX["constant"]])
        assert kernels_us == pytest.approx(busy, rel=0.05), (model, bs)


def test_a_repeated_fixed_length_closed_loop_run_repeats_its_mean_ttft_not_its_median():
    """groundtruth/experiments/waves-h100: the corpus' Qwen3-8B c16 run recorded twice on one server, and on servers
    without the per-request export and without metrics (docs/overheads.md). The docs' reading of the corpus' c16
    median-TTFT errors rests on these numbers."""
    runs = CORPUS / "experiments/waves-h100/h100"

    def bench(server: str, run: str) -> dict:
        return json.loads((runs / server / run / "bench.json").read_text(encoding="utf-8"))

    first, again = (
        bench("qwen3-8b-flashinfer", "c16-1k-512"),
        bench("qwen3-8b-flashinfer", "c16-1k-512-again"),
    )
    assert again["mean_ttft_ms"] == pytest.approx(first["mean_ttft_ms"], rel=0.01)
    assert abs(again["median_ttft_ms"] / first["median_ttft_ms"] - 1) > 0.2
    for server in ("qwen3-8b-flashinfer-no-export", "qwen3-8b-flashinfer-no-metrics"):
        assert bench(server, "c16-1k-512")["mean_ttft_ms"] == pytest.approx(first["mean_ttft_ms"], rel=0.03)
    # the experiments stay out of the corpus' 92 runs
    assert not any("experiments" in str(p) for p in corpus_accuracy.run_dirs(CORPUS))


@pytest.mark.parametrize(
    ("model", "running"),
    [
        ("qwen3-8b", 1),
        ("qwen3-8b", 16),
        ("qwen3-30b-a3b", 16),
        # -3.7% (a strict expected failure) until the decode attention was timed as SGLang plans it for its CUDA
        # graph (docs/perfdb.md): now -1.6%
        ("qwen3-30b-a3b", 1),
    ],
)
def test_held_out_served_decode_iterations_are_the_predicted_decode_steps(model, running):
    """Two served decodes profiled after the replay costs were measured on Llama-3.1-8B (same host, backend and
    driver: groundtruth/profile_served.sh), a dense and a MoE model. The whole iteration the GPU ran (replay kernels,
    their gaps, the work between replays) against simperf's decode step with the shipped tables and defaults."""
    from simperf.groundtruth.trace import decode_replays, read_trace

    cost = zoo_cost(model)
    served = decode_replays(
        read_trace(CORPUS / f"forwards/h100/served-{model}-decode" / f"c{running}.trace.json.gz")
    )
    # the profile starts ~0.6 s (1 request) and ~1.5 s (16) after the sends: ~100 tokens into the outputs
    step = cost.decode_steps(running, running, np.array([1124.0 * running]), True)[0]
    assert float(step.sum()) == pytest.approx(served.period_us, rel=0.03), (model, running, served)


def test_the_metrics_share_of_the_time_per_chunk_is_the_two_hosts_measurement():
    """Two hosts ran the same paced load with and without --enable-metrics: on each, metrics make a chunk dearer;
    the defaults split the H200 host's time per chunk (metrics on) in the median share, and a server without
    metrics streams faster. The first host's run with metrics stalled in its second wave (a first-use kernel
    build): its mean TTFT is five times its median, so it is read on its first wave."""
    from simperf.accuracy.hostcosts import METRICS_PAIRS, _paced_tpot_per_chunk_us, frontend_split

    experiments = CORPUS / "experiments"
    for without, with_metrics in METRICS_PAIRS:
        assert _paced_tpot_per_chunk_us(experiments / without) < _paced_tpot_per_chunk_us(
            experiments / with_metrics
        )
    stalled = json.loads((experiments / METRICS_PAIRS[0][1] / "bench.json").read_text())
    assert stalled["mean_ttft_ms"] > 5 * stalled["median_ttft_ms"]

    frontend, metrics, per_token = frontend_split(CORPUS, CORPUS / "experiments" / "metrics-cost-h200")
    defaults = Overheads()
    assert defaults.frontend_us_per_chunk == pytest.approx(frontend.value_us, abs=0.05), frontend.detail
    assert defaults.metrics_us_per_chunk == pytest.approx(metrics.value_us, abs=0.05), metrics.detail
    assert defaults.frontend_us_per_streamed_token == pytest.approx(per_token.value_us, abs=5e-4), (
        per_token.detail
    )
    assert defaults.frontend_us_per_chunk_for(enable_metrics=False) < defaults.frontend_us_per_chunk_for(True)


def test_the_api_servers_time_per_chunk_grows_with_open_requests_as_its_cpu_time_measured():
    """One host ran the same paced Qwen3-0.6B load at 64-512 streams with every process' CPU time sampled
    (groundtruth/experiments/api-server-cpu-h100): the API server was the one process at a full core while the
    client and the detokenizer were not, its CPU time per chunk grew with the streams, and the share per open
    request taken from that is what the defaults carry."""
    import csv

    from simperf.accuracy.hostcosts import (
        API_SERVER_CPU_RUNS,
        api_server_cpu_us_per_chunk,
        frontend_open_request_share,
    )

    experiment = CORPUS / "experiments" / "api-server-cpu-h100"
    per_chunk = {c: api_server_cpu_us_per_chunk(experiment / run) for c, run in API_SERVER_CPU_RUNS.items()}
    assert per_chunk[512] > 1.2 * per_chunk[128], per_chunk
    share, detail = frontend_open_request_share(experiment)
    assert Overheads().frontend_share_per_open_request == pytest.approx(share, rel=2e-3), detail
    # over the 512-stream run's serving phase, the API server is busy all the time, the others are not
    rows = list(csv.DictReader((experiment / "plain" / "cpu-c512.csv").open()))
    busy: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        busy.setdefault(row["process"], []).append((float(row["t_s"]), float(row["cpu_s"])))

    def cores(process: str, t0: float, t1: float) -> float:
        t, cpu = np.array(busy[process]).T
        return float(np.diff(np.interp([t0, t1], t, cpu))[0] / (t1 - t0))

    t, cpu = np.array(busy["api"]).T
    serving = t[
        np.nonzero(np.diff(cpu) > 0.5 * np.diff(t))[0]
    ]  # where the API server ran more than half a core
    t0, t1 = serving[0] + 1.0, serving[-1] - 1.0
    assert cores("api", t0, t1) > 0.95
    assert cores("client", t0, t1) < 0.9 and cores("detokenizer", t0, t1) < 0.5


def test_cumulative_streaming_costs_per_carried_token_as_the_paired_servers_measured():
    """One host ran the same paced Qwen3-0.6B loads on two servers differing only in
    --incremental-streaming-output (groundtruth/experiments/streaming-h100): cumulative chunks cost more on every
    run, by more where outputs are longer, and the per-token share taken from the cumulative server's growth with
    the output is what the defaults carry."""
    from simperf.accuracy.corpus import scenario_of
    from simperf.accuracy.hostcosts import STREAMING_RUNS, STREAMING_SERVERS, streamed_token_share

    host = CORPUS / "experiments" / "streaming-h100" / "h100"
    tpot = {
        (server, run): json.loads((host / server / run / "bench.json").read_text())["median_tpot_ms"]
        for server in STREAMING_SERVERS
        for run in STREAMING_RUNS
    }
    gain = {run: tpot[STREAMING_SERVERS[0], run] / tpot[STREAMING_SERVERS[1], run] for run in STREAMING_RUNS}
    assert all(1.1 < g < 1.4 for g in gain.values()), gain
    assert gain["c256-128-1024"] > gain["c256-128-512"]  # twice the output: chunks carry twice as much
    share, detail = streamed_token_share(host.parent)
    assert 1.5e-3 < share < 2.5e-3, detail
    o = Overheads()
    # the share is the defaults' per-token time over their per-chunk time without it (metrics on, as measured)
    assert o.frontend_us_per_streamed_token / o.frontend_us_per_chunk_for(True) == pytest.approx(
        share, rel=1e-2
    )
    on = scenario_of(host / STREAMING_SERVERS[1] / "c256-128-512")
    off = scenario_of(host / STREAMING_SERVERS[0] / "c256-128-512")
    assert on.serving.incremental_streaming_output and not off.serving.incremental_streaming_output


def test_an_incremental_stream_on_the_h200_did_not_slow_with_the_output():
    """Why an incremental chunk is priced flat: on an H200 host's --incremental-streaming-output server
    (groundtruth/experiments/output-growth-check-h200), 256 streams of 128-token prompts and 1,024 outputs, where the
    API server set the pace, a request's late inter-token gaps are no longer than its early ones; the cumulative
    server of the lent H100 slowed by a third from 512 to 1,024 outputs."""
    import pyarrow.parquet as pq

    run = (
        CORPUS
        / "experiments"
        / "output-growth-check-h200"
        / "h200"
        / "qwen3-0.6b-incremental"
        / "c256-128-1k"
    )
    itl = pq.read_table(run / "requests.parquet", columns=["itl_us"]).column("itl_us").to_pylist()
    early = np.median([np.mean(gaps[10:200]) for gaps in itl])
    late = np.median([np.mean(gaps[-200:-10]) for gaps in itl])
    assert late / early < 1.1, (early, late)
    cumulative = CORPUS / "experiments" / "streaming-h100" / "h100" / "qwen3-0.6b-cumulative"
    short, long = (
        json.loads((cumulative / r / "bench.json").read_text())["median_tpot_ms"]
        for r in ("c256-128-512", "c256-128-1024")
    )
    assert long / short > 1.25


def test_corpus_servers_run_with_metrics_as_their_command_lines_say():
    from simperf.accuracy.corpus import scenario_of

    on = scenario_of(
        CORPUS / "experiments" / "metrics-cost-h200" / "h200" / "qwen3-0.6b-metrics" / "c64-128-512"
    )
    off = scenario_of(
        CORPUS / "experiments" / "metrics-cost-h200" / "h200" / "qwen3-0.6b-no-metrics" / "c64-128-512"
    )
    assert on.serving.enable_metrics and not off.serving.enable_metrics


def test_later_waves_reach_the_server_slower_than_the_first():
    """docs/overheads.md "Later waves reach the server slower": a closed loop's later waves arrive ~4x further apart
    than its first although the client sends them as fast; the documented medians are this command's."""
    from simperf.accuracy.wave_receives import corpus_receives

    rows = corpus_receives(CORPUS)
    assert len(rows) == 49
    slower = [r for r in rows if r.later_receive_gap_ms > r.first_receive_gap_ms + 0.3]
    assert len(slower) >= 0.85 * len(rows)
    medians = [
        np.median([getattr(r, f) for r in rows])
        for f in ("first_receive_gap_ms", "later_receive_gap_ms", "later_send_gap_ms")
    ]
    assert medians == pytest.approx([0.456, 1.773, 0.420], abs=0.005)
    doc = (REPO / "docs" / "overheads.md").read_text(encoding="utf-8")
    assert "0.46 ms apart (median over 49 runs)" in doc and "**1.77 ms** apart" in doc


def test_the_module_entry_point_ends_a_bad_corpus_in_one_error_line(tmp_path):
    """`python -m simperf.groundtruth index` on a malformed run printed a Python traceback (the `simperf` entry
    point's error boundary was not on this path)."""
    import subprocess
    import sys

    run = tmp_path / "h100" / "srv" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text("[1]")
    done = subprocess.run(
        [sys.executable, "-m", "simperf.groundtruth", "index", str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [f"error: {run}/run.json: expected a JSON object, got list"]


def test_runs_of_a_gpu_the_catalogue_does_not_describe_are_listed_not_predicted(tmp_path):
    import shutil

    from simperf.groundtruth.index import write_index

    for gpu in ("h100", "nvidia-h100-pcie"):
        (tmp_path / gpu).mkdir()
        shutil.copy(CORPUS / "h100" / "env.json", tmp_path / gpu / "env.json")
        shutil.copytree(
            CORPUS / "h100" / "qwen3-8b-flashinfer-check", tmp_path / gpu / "qwen3-8b-flashinfer-check"
        )
    write_index(tmp_path)
    report = corpus_accuracy.run_corpus(tmp_path)
    assert report.runs and all(r.gpu == "h100" for r in report.runs)
    assert len(report.skipped) == len(report.runs)
    assert all(
        "GPU nvidia-h100-pcie: not in simperf's hardware catalogue" in why for _, why in report.skipped
    )
