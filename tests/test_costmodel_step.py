"""SGLangStepCost: step times from the perf database, their source split, caching and vectorisation."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simperf.costmodel.step import SGLangStepCost
from simperf.hardware.catalog import get_gpu
from simperf.models.zoo import load_arch
from simperf.perfdb.db import PerfDB
from simperf.perfdb.schema import SOURCE_INDEX, SOURCES
from simperf.scenario.models import Overheads
from simperf.scenario.resolved import ParallelLayout, ResolvedServing, SpecSettings


def serving(tp=8, dp=1, ep=1, weight="fp8", kv="bf16", page=1, prefill="fa3", decode="fa3", spec=None):
    return ResolvedServing(
        layout=ParallelLayout(tp, dp, ep),
        gpu="h200",
        weight_dtype=weight,
        kv_dtype=kv,
        page_size=page,
        prefill_backend=prefill,
        decode_backend=decode,
        chunked_prefill_size=8192,
        max_prefill_tokens=16384,
        max_running_requests=256,
        max_total_tokens=500_000,
        cuda_graph_max_bs=256,
        cuda_graph_bs=(1, 2, 4, 8, 16, 24, 32),
        overlap_schedule=True,
        enable_mixed_chunk=False,
        schedule_policy="fcfs",
        init_new_token_ratio=0.7,
        min_new_token_ratio=0.098,
        new_token_ratio_decay=0.001,
        context_len=163840,
        speculative=spec,
        sglang_version="0.5.23",
    )


@pytest.fixture(scope="module")
def empty_db():
    return PerfDB.empty(get_gpu("h200"))


@pytest.fixture(scope="module")
def v3(empty_db):
    return SGLangStepCost(load_arch("deepseek-v3"), serving(), empty_db, Overheads())


@pytest.fixture(scope="module")
def llama(empty_db):
    return SGLangStepCost(load_arch("llama-3.1-8b"), serving(tp=1, weight="bf16"), empty_db, Overheads())


def test_decode_step_grows_with_kv_length(v3, llama):
    for cm in (v3, llama):
        kv = np.array([16 * 100, 16 * 1000, 16 * 10000, 16 * 100000], dtype=float)
        times = cm.decode_steps(16, 16, kv, True).sum(axis=1)
        assert (np.diff(times) > 0).all()


def test_decode_step_grows_with_batch(v3, llama):
    for cm in (v3, llama):
        times = [cm.decode_steps(bs, bs, np.array([bs * 2000.0]), True).sum() for bs in (1, 8, 32, 128)]
        assert (np.diff(times) > 0).all()


def test_graph_padding_runs_gemm_rows_and_attention_at_the_bucket_with_the_real_kv_bytes(v3):
    real = v3.decode_steps(20, 20, np.array([20 * 3000.0]), True).sum()
    padded = v3.decode_steps(20, 24, np.array([20 * 3000.0]), True).sum()
    assert padded > real
    rows = {r.name: r for r in v3.breakdown_decode(20, 24, 20 * 3000, True)}
    # the graph replays 24 rows; the 4 padding rows attend one token each (SGLang's fill value)
    assert rows["q_b_proj"].axes["m"] == 24 and rows["attention"].axes["batch"] == 24
    assert rows["attention"].axes["kv_len"] == pytest.approx((20 * 3000 + 4) / 24)
    eager = {r.name: r for r in v3.breakdown_decode(20, 20, 20 * 3000, False)}
    assert eager["attention"].axes["batch"] == 20


@settings(max_examples=25, deadline=None)
@given(bs=st.integers(1, 64), kv0=st.integers(1, 20000), k=st.integers(2, 40), graph=st.booleans())
def test_vectorised_decode_equals_one_step_at_a_time(v3, bs, kv0, k, graph):
    kv_total = bs * kv0 + bs * np.arange(k, dtype=float)
    together = v3.decode_steps(bs, bs, kv_total, graph)
    assert together.shape == (k, len(SOURCES))
    one_by_one = np.vstack([v3.decode_steps(bs, bs, kv_total[j : j + 1], graph) for j in range(k)])
    np.testing.assert_allclose(together, one_by_one, rtol=1e-9)


def test_breakdown_rows_sum_to_the_step_and_split_by_source(v3):
    bs, kv_total = 32, 32 * 4096
    step = v3.decode_steps(bs, bs, np.array([float(kv_total)]), False)[0]
    rows = v3.breakdown_decode(bs, bs, kv_total, False)
    assert sum(r.total_us for r in rows) == pytest.approx(step.sum(), rel=1e-9)
    per_source = np.zeros(len(SOURCES))
    for r in rows:
        per_source[SOURCE_INDEX[r.source]] += r.total_us
    np.testing.assert_allclose(per_source, step, rtol=1e-9)
    assert rows[-1].name == "eager_launch" and rows[-1].count > 61 * 10


@pytest.mark.parametrize(
    ("ext", "pre", "dec"),
    [([8192], [0], None), ([1024], [2048], None), ([700, 300], [0, 10000], [100, 5000])],
)
def test_extend_breakdown_matches_extend_step(v3, ext, pre, dec):
    dec_arr = None if dec is None else np.array(dec)
    step = v3.extend_step(np.array(ext), np.array(pre), dec_arr)
    rows = v3.breakdown_extend(np.array(ext), np.array(pre), dec_arr)
    assert sum(r.total_us for r in rows) == pytest.approx(step.sum(), rel=1e-9)
    assert step.sum() > 0 and (step >= 0).all()


def test_extend_step_grows_with_tokens_and_cache_returns_copies(llama):
    short = llama.extend_step(np.array([512]), np.array([0]))
    long = llama.extend_step(np.array([4096]), np.array([0]))
    assert long.sum() > short.sum()
    short[:] = -1.0  # callers may mutate what they get back
    again = llama.extend_step(np.array([512]), np.array([0]))
    assert again.sum() > 0


def test_cuda_graph_replay_replaces_per_kernel_launches(v3):
    kv = np.array([8 * 1000.0])
    graph = v3.decode_steps(8, 8, kv, True)
    eager = v3.decode_steps(8, 8, kv, False)
    kernels = v3.breakdown_decode(8, 8, 8000, False)[-1].count
    constant = SOURCES.index("constant")
    kernel_time = graph.sum() - graph[0, constant]
    # graph: kernels + the GPU's work between replays + its idle time between the replay's kernels + the router
    # kernel no table times (GPU time, per MoE layer); eager: the CPU launches every kernel, so the step lasts as
    # long as the slower of the GPU's work and the CPU's launches
    o = Overheads()
    router = o.decode_moe_router_us * v3.arch.num_moe_layers
    assert router > 0
    assert graph[0, constant] == pytest.approx(
        o.decode_between_replays_us + kernels * o.decode_graph_gap_us_per_kernel + router
    )
    # the CPU's time per kernel: an eager forward's measured host time (DeepSeek-V3 is MoE / MLA: 107.3 us)
    host = v3.eager_decode_host
    assert host.field == "eager_extend_us_per_kernel" and host.us == pytest.approx(107.3 * host.rank_factor)
    assert eager.sum() == pytest.approx(max(kernel_time + router, kernels * host.us))


def test_a_speculative_step_pays_the_between_replay_work_once_per_replayed_forward(empty_db):
    spec = SpecSettings("mtp", 3, 1, 4, 2.5)
    o = Overheads()
    cm = SGLangStepCost(load_arch("deepseek-v3"), serving(spec=spec), empty_db, o)
    step = cm.decode_steps(4, 4, np.array([4000.0]), True)[0]
    rows = {r.name: r for r in cm.breakdown_decode(4, 4, 4000, True)}
    overhead = rows["cuda_graph_replay"]
    # three draft forwards and the verify: four replays; every kernel of all of them idles its gap
    expected = 4 * o.decode_between_replays_us + overhead.count * o.decode_graph_gap_us_per_kernel
    router = rows["moe.router"]
    assert router.total_us == pytest.approx(o.decode_moe_router_us * cm.arch.num_moe_layers)
    # and the GPU waits for the speculative worker's host-launched kernels: per iteration and per running request
    idle = rows["spec_worker_idle"]
    assert idle.total_us == pytest.approx(
        o.spec_worker_idle_us + 4 * o.spec_worker_idle_us_per_running_request
    )
    assert step[SOURCES.index("constant")] == pytest.approx(expected + router.total_us + idle.total_us)
    assert overhead.total_us == pytest.approx(expected)


def test_the_speculative_workers_idle_is_per_running_request_in_a_graph_and_absent_when_eager(empty_db):
    """The idle grows with the batch's real requests, not the graph bucket's padding (two batches of one bucket
    differ by it alone), and an eager step, host-bound already, does not pay it on top."""
    spec = SpecSettings("eagle", 3, 1, 4, 1.0)
    o = Overheads()
    cm = SGLangStepCost(load_arch("llama-3.1-8b"), serving(spec=spec), empty_db, o)
    kv = np.array([4 * 1000.0])
    three, four = cm.decode_steps(3, 4, kv * 3 / 4, True), cm.decode_steps(4, 4, kv, True)
    constant = SOURCES.index("constant")
    assert four[0, constant] - three[0, constant] == pytest.approx(o.spec_worker_idle_us_per_running_request)
    plain = SGLangStepCost(load_arch("llama-3.1-8b"), serving(), empty_db, o)
    assert plain.spec_worker_idle_us(4) == 0.0
    assert "spec_worker_idle" not in {r.name for r in cm.breakdown_decode(4, 4, 4000, False)}
    eager = cm.decode_steps(4, 4, kv, False)[0]
    kernels_us = eager.sum() - eager[constant]
    launches = {r.name: r for r in cm.breakdown_decode(4, 4, 4000, False)}["eager_launch"]
    assert eager.sum() == pytest.approx(max(kernels_us, launches.count * cm.eager_decode_host.us))


def test_eager_launches_are_hidden_behind_long_kernels(llama):
    step = llama.extend_step(np.array([8192]), np.array([0]))
    assert step[SOURCES.index("constant")] == 0.0


def test_speculative_iteration_is_drafts_plus_verify_plus_draft_extend(empty_db, v3):
    spec = SpecSettings("mtp", 3, 1, 4, 2.5)
    cm = SGLangStepCost(load_arch("deepseek-v3"), serving(spec=spec), empty_db, Overheads())
    kv = np.array([4 * 1000.0])
    plain = v3.decode_steps(4, 4, kv, True)[0].sum()
    iteration = cm.decode_steps(4, 4, kv, True)[0].sum()
    # one target forward of 4x the rows, plus three one-layer draft forwards: dearer than one decode step,
    # far cheaper than four
    assert plain < iteration < 4 * plain
    names = [op.name for op in cm.decode_ops(4, 4, 1000.0)]
    assert any(n.startswith("verify.") for n in names)
    assert sum(n == "draft.attention" for n in names) == 1 and "draft_extend.attention" in names
    verify_attention = next(op for op in cm.decode_ops(4, 4, 1000.0) if op.name == "verify.attention")
    assert verify_attention.key["q_len"] == 4 and float(verify_attention.axes["kv_len"]) == 1003.0
    draft_attention = next(op for op in cm.decode_ops(4, 4, 1000.0) if op.name == "draft.attention")
    assert draft_attention.count == 2  # num_steps - 1 draft forwards of one layer
    # the prefill also runs the draft layer over the prompt
    assert (
        cm.extend_step(np.array([512]), np.array([0])).sum()
        > v3.extend_step(np.array([512]), np.array([0])).sum()
    )


def test_empty_database_labels_every_kernel_roofline(v3):
    step = v3.decode_steps(8, 8, np.array([8000.0]), True)[0]
    kernels = step.sum() - step[SOURCE_INDEX["constant"]]
    assert step[SOURCE_INDEX["measured"]] == 0 and step[SOURCE_INDEX["roofline"]] == pytest.approx(kernels)


def _write_gemm_table(path, backend, dtype, n, k, ms, us):
    rows = {
        "op": ["gemm"] * len(ms),
        "backend": [backend] * len(ms),
        "dtype": [dtype] * len(ms),
        "n": [n] * len(ms),
        "k": [k] * len(ms),
        "m": list(ms),
        "time_us": list(us),
        "status": ["ok"] * len(ms),
        "sample": ["grid"] * len(ms),
        "gpu": ["h200"] * len(ms),
        "source": ["measured"] * len(ms),
    }
    pq.write_table(pa.table(rows), path / "gemm.parquet")


def test_measured_candidate_is_chosen_and_labelled_measured(tmp_path):
    # q_b_proj of V3 at TP8 (n=3072, k=1536) measured only as rowwise fp8: that proxy must be used.
    _write_gemm_table(
        tmp_path, "torch_scaled_mm", "fp8_rowwise", 3072, 1536, [1, 8, 64, 512], [7.0, 7.5, 9.0, 20.0]
    )
    db = PerfDB.load(tmp_path, get_gpu("h200"))
    cm = SGLangStepCost(load_arch("deepseek-v3"), serving(), db, Overheads())
    rows = {r.name: r for r in cm.breakdown_decode(8, 8, 8000, True)}
    q_b = rows["q_b_proj"]
    assert q_b.key["dtype"] == "fp8_rowwise" and q_b.source == "measured"
    assert q_b.us_per_call == pytest.approx(7.5) and q_b.total_us == pytest.approx(7.5 * 61)
    step = cm.decode_steps(8, 8, np.array([8000.0]), True)[0]
    assert step[SOURCE_INDEX["measured"]] == pytest.approx(7.5 * 61)


def test_deepseek_v32_and_dense_moe_models_cost_end_to_end(empty_db):
    v32 = SGLangStepCost(
        load_arch("deepseek-v3.2"),
        serving(kv="fp8_e4m3", page=64, prefill="flashmla_kv", decode="flashmla_kv"),
        empty_db,
        Overheads(),
    )
    assert v32.decode_steps(16, 16, np.array([16 * 50000.0]), True).sum() > 0
    assert (
        v32.extend_step(np.array([4096]), np.array([8192])).sum()
        > v32.extend_step(np.array([1024]), np.array([0])).sum()
    )
    qwen = SGLangStepCost(load_arch("qwen3-30b-a3b"), serving(tp=2, weight="bf16"), empty_db, Overheads())
    assert qwen.decode_steps(4, 4, np.array([4000.0]), True).sum() > 0


@settings(max_examples=20, deadline=None)
@given(tokens=st.integers(1, 16384))
def test_tabulated_single_request_prefill_equals_the_general_path(llama, tokens):
    fast = llama._single_fresh_prefill(np.array([tokens]), np.array([0]), None, None, None)
    assert fast is not None
    general = SGLangStepCost(llama.arch, llama.serving, llama.db, llama.overheads)
    general._single_fresh_prefill = lambda *args, **kwargs: None
    row, kernels = general._extend_cost(np.array([tokens]), np.array([0]), None)
    np.testing.assert_allclose(fast, row, rtol=1e-12)
    assert kernels == llama._fresh_kernels  # the launch's host time (extend_host_us) agrees too


def test_fresh_prefill_table_is_the_per_length_path_exactly(llama):
    """The table built at once for every prompt length gives, bit for bit, what evaluating each length alone gives
    (the same additions in the same order on whole columns): checked at every length the table holds."""
    cm = SGLangStepCost(llama.arch, llama.serving, llama.db, llama.overheads)
    table = cm._fresh_prefill_table()
    assert len(table) > 16384
    for tokens in range(1, len(table)):
        one = cm._single_fresh_prefill(np.array([tokens]), np.array([0]), None, None, None)
        assert np.array_equal(table[tokens], one), tokens
    beyond = len(table)
    assert cm._fresh_prefill(beyond) is None or np.array_equal(
        cm._fresh_prefill(beyond),
        cm._single_fresh_prefill(np.array([beyond]), np.array([0]), None, None, None),
    )


def test_fresh_prefill_table_is_empty_where_the_single_request_path_does_not_apply(empty_db):
    dp = SGLangStepCost(load_arch("llama-3.1-8b"), serving(tp=2, dp=2, weight="bf16"), empty_db, Overheads())
    assert len(dp._fresh_prefill_table()) == 0
    assert dp._fresh_prefill(1000) is None  # the general path takes it


@pytest.fixture(scope="module")
def vidur_cost():
    """The cost model of the shipped Vidur benchmark scenario: Llama-2-7B on one H100, measured tables."""
    from pathlib import Path

    from simperf.pipeline import open_perfdb
    from simperf.scenario.load import load_scenario
    from simperf.scenario.resolve import resolve

    scenario = load_scenario(Path(__file__).resolve().parents[1] / "scenarios" / "llama2-7b-h100-vidur.yaml")
    resolved, arch, gpu = resolve(scenario)
    db, _ = open_perfdb(scenario, gpu)
    return SGLangStepCost(arch, resolved, db, scenario.overheads)


def test_decode_slice_scalar_lookup_gives_the_array_lookup(vidur_cost):
    """AxisSlice.values_list (Python floats, for short decode segments) reproduces values(): on grid values,
    between them, at the ends of the sampled range; beyond it, it declines instead of guessing. The operations
    are the same, but libm's log/exp and numpy's vectorised ones may differ in the last bit on some CPUs (seen
    on an AMD EPYC host), so the check is to 1e-12 relative, not bit for bit."""
    rng = np.random.default_rng(7)
    checked = 0
    for bs, padded in ((1, 1), (3, 4), (17, 24), (64, 64)):
        along = vidur_cost._fast_decode_entry(bs, padded, True)[3][0][0]
        queries = np.concatenate(
            [along._x, np.exp(rng.uniform(np.log(along.lo), np.log(along.hi), 400)), [along.lo, along.hi]]
        )
        for start in range(0, len(queries) - 3, 3):
            xs = sorted(queries[start : start + 3].tolist())
            scalar = along.values_list(xs)
            us, label = along.values(np.array(xs))
            if scalar is None:
                assert along.uniform_source is None
                continue
            np.testing.assert_allclose(scalar[0], us, rtol=1e-12, atol=0)
            assert scalar[1] == (label if isinstance(label, int) else int(label[0]))
            checked += 1
        assert along.values_list([along.hi * 1.5]) is None
    assert checked > 300


def test_decode_totals_on_floats_match_the_array_path(vidur_cost):
    """The hot loop's two ways of costing k decode steps agree, totals and per-source split, to the last bits that
    libm's and numpy's SIMD log/exp may round differently (AxisSlice.values_list's contract: 1e-12 relative)."""
    for bs, padded, kv0 in ((1, 1, 900.0), (5, 8, 5 * 1400.0), (40, 40, 40 * 2100.0)):
        kv_list = [kv0 + bs * j for j in range(6)]
        as_list, add_list = vidur_cost.decode_totals(bs, padded, kv_list, True)
        as_array, add_array = vidur_cost.decode_totals(bs, padded, np.array(kv_list), True)
        assert as_list == pytest.approx(as_array, rel=1e-12, abs=0)
        acc_list, acc_array = [0.0] * len(SOURCES), [0.0] * len(SOURCES)
        add_list(acc_list, 4)
        add_array(acc_array, 4)
        assert acc_list == pytest.approx(acc_array, rel=1e-12, abs=0)


def test_fresh_prefill_totals_are_extend_step_summed(vidur_cost):
    """The simulator's shortcut for a single fresh prompt gives extend_step's total and source split exactly."""
    for tokens in (1, 2, 7, 100, 1155, 2309, 4096):
        step = vidur_cost.extend_step(np.array([tokens]), np.array([0]))
        total, by_source = vidur_cost.fresh_prefill_totals(tokens)
        assert total == float(step.sum())
        assert by_source == step.tolist()
    # the shortcut declines where the fresh-prefill path does not apply; the simulator then asks extend_step
    dp = SGLangStepCost(
        load_arch("llama-3.1-8b"),
        serving(tp=2, dp=2, weight="bf16"),
        PerfDB.empty(get_gpu("h200")),
        Overheads(),
    )
    assert dp.fresh_prefill_totals(1000) is None


@pytest.mark.parametrize(
    "model, spec",
    [
        ("llama-3.1-8b", SpecSettings("eagle", 3, 1, 4, 1.0)),
        ("deepseek-v3", SpecSettings("mtp", 3, 1, 4, 2.5)),
    ],
)
def test_a_speculative_prefill_pays_the_drafts_host_launch_once_and_shows_it_in_its_breakdown(
    empty_db, model, spec
):
    """SGLang launches the draft's prefill from the host after the target's prefill has ended on the GPU: a
    speculative extend costs Overheads.spec_draft_prefill_host_us more than the same extend priced with that cost at
    0, whatever its length, and its breakdown names the row beside the draft's forward and adds up to the step; a
    plain server's extend does not pay it."""
    o = Overheads()
    arch = load_arch(model)
    priced = SGLangStepCost(arch, serving(spec=spec), empty_db, o)
    without = SGLangStepCost(arch, serving(spec=spec), empty_db, Overheads(spec_draft_prefill_host_us=0.0))
    for ext, pre in ((np.array([128]), np.array([0])), (np.array([1024, 300]), np.array([0, 2048]))):
        assert priced.extend_step(ext, pre).sum() - without.extend_step(ext, pre).sum() == pytest.approx(
            o.spec_draft_prefill_host_us
        )
        rows = priced.breakdown_extend(ext, pre)
        (draft_host,) = [r for r in rows if r.name == "spec_draft_prefill_host"]
        assert draft_host.total_us == pytest.approx(o.spec_draft_prefill_host_us)
        # the breakdown itemises the whole speculative extend: the target's ops, the draft's forward, the host
        assert sum(r.total_us for r in rows) == pytest.approx(priced.extend_step(ext, pre).sum())
        assert any(r.name.startswith("draft_extend.") for r in rows)
    plain = SGLangStepCost(arch, serving(), empty_db, o)
    assert plain.spec_draft_prefill_host_us() == 0.0
    assert "spec_draft_prefill_host" not in {
        r.name for r in plain.breakdown_extend(np.array([128]), np.array([0]))
    }
