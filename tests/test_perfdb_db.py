import itertools
import math
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simperf.hardware import get_gpu
from simperf.perfdb.db import PerfDB, Timing, shipped_calibration_dir
from simperf.perfdb.keys import PerfDBError
from simperf.perfdb.roofline import Roofline
from simperf.perfdb.schema import SOURCE_INDEX, SOURCES
from simperf.perfdb.tables import write_table

H200 = get_gpu("h200")
MLA_KEY = dict(backend="flashmla", kv_dtype="bf16", num_heads=16, page_size=64, q_len=1)
EXTEND_KEY = dict(backend="fa3", kv_dtype="bf16", num_heads=16, page_size=1)
MHA_KEY = dict(
    backend="flashinfer_fa3", dtype="bf16", num_heads=16, num_kv_heads=16, head_dim=192, head_dim_v=128
)
GEMM_KEY = dict(backend="deep_gemm", dtype="fp8_block", n=7168, k=2048)
BATCHES = [1, 4, 16, 64]
KV_LENS = [1024, 4096, 16384]
GEMM_MS = [1, 8, 64, 512, 4096]


def mla_time(b: float, kv: float) -> float:
    return 8.0 + 0.0004 * b * kv


def row(op: str, key: dict, time_us: float, **axes) -> dict:
    return dict(
        op=op,
        **key,
        **axes,
        time_us=time_us,
        status="ok",
        sample="grid",
        gpu="h200",
        source="measured",
        date="2026-11-20T01:00:00Z",
        flashinfer="0.5.3",
        timing_method="cuda_graph_replay",
    )


def mla_rows(time_fn=mla_time, skip=lambda b, kv: False) -> list[dict]:
    return [
        row("attn_mla_decode", MLA_KEY, time_fn(b, kv), batch=b, kv_len=kv)
        for b, kv in itertools.product(BATCHES, KV_LENS)
        if not skip(b, kv)
    ]


def gemm_rows() -> list[dict]:
    return [row("gemm", GEMM_KEY, 5.0 + m * 0.01, m=m) for m in GEMM_MS]


@pytest.fixture
def db(tmp_path: Path) -> PerfDB:
    write_table(mla_rows(), tmp_path / "attn_mla_decode.parquet")
    write_table(gemm_rows(), tmp_path / "gemm.parquet")
    return PerfDB.load(tmp_path, H200)


def test_grid_points_are_reproduced_exactly_and_labelled_measured(db):
    for b, kv in itertools.product(BATCHES, KV_LENS):
        timing = db.lookup("attn_mla_decode", MLA_KEY, batch=b, kv_len=kv)
        assert timing == Timing(pytest.approx(mla_time(b, kv), rel=1e-12), "measured", "measured")
    assert db.lookup("gemm", GEMM_KEY, m=512).us == pytest.approx(10.12)


def extend_time(b, q, kv):
    return 3.0 + b * q * kv * 1e-7


EXTEND_QS, EXTEND_PREFIXES = [16, 256, 4096], [0, 4096, 32768]


def extend_grid_curve(tmp_path):
    """An MLA extend table on a calibration grid of fixed prefixes (causal extend ops are gridded over (batch,
    q_len, prefix + 1)), its time affine in the KV length."""
    rows = [
        row("attn_mla_extend", EXTEND_KEY, extend_time(b, q, q + p), batch=b, q_len=q, kv_len=q + p)
        for b, q, p in itertools.product([1, 2, 8], EXTEND_QS, EXTEND_PREFIXES)
    ]
    write_table(rows, tmp_path / "attn_mla_extend.parquet")
    return PerfDB.load(tmp_path, H200).curve("attn_mla_extend", EXTEND_KEY)


def test_three_axis_full_grid_is_exact_at_grid_points(tmp_path):
    curve = extend_grid_curve(tmp_path)
    b, q, p = np.meshgrid([1, 2, 8], EXTEND_QS, EXTEND_PREFIXES, indexing="ij")
    us, source = curve(batch=b, q_len=q, kv_len=q + p)
    assert np.allclose(us, extend_time(b, q, q + p), rtol=1e-12)
    assert np.all(source == SOURCE_INDEX["measured"])
    mid = curve.timing(batch=3, q_len=100, kv_len=5000)
    assert mid.source == "interpolated" and mid.detail.startswith(
        "linear in the prefix between prefix 4096 ("
    )
    assert mid.detail.count("interpolated between 4 points") == 2  # batch x q_len at each of the two prefixes


def test_between_two_measured_prefixes_the_time_is_linear_in_the_prefix(tmp_path):
    """At a measured batch and query length a causal extend's work grows by q_len per prefix token: a time affine
    in the KV length is reproduced exactly between grid prefixes (log-log across prefix 0 -> 4096 put a prefix
    of 500 three quarters of the way up the step)."""
    curve = extend_grid_curve(tmp_path)
    for b, q, p in itertools.product([1, 8], [256, 4096], [1, 500, 4095, 20000]):
        assert curve.timing(batch=b, q_len=q, kv_len=q + p).us == pytest.approx(extend_time(b, q, q + p)), (
            b,
            q,
            p,
        )
        us, _ = curve(batch=np.array([b]), q_len=np.array([q]), kv_len=np.array([q + p]))
        assert float(us[0]) == pytest.approx(extend_time(b, q, q + p))


def test_fresh_prefill_between_grid_lengths_rests_on_measured_cells_only(tmp_path):
    # Measured rows: no prefix (kv = q) and a long prefix. In (q, kv) space a fresh prefill between two grid
    # lengths would lean on unmeasured off-diagonal cells; over (q, prefix + 1) it lies on the measured row.
    qs = [128, 512, 2048]
    rows = [
        row("attn_mha_prefill", MHA_KEY, extend_time(1, q, q + p), batch=1, q_len=q, kv_len=q + p)
        for q, p in itertools.product(qs, [0, 8192])
    ]
    write_table(rows, tmp_path / "attn_mha_prefill.parquet")
    curve = PerfDB.load(tmp_path, H200).curve("attn_mha_prefill", MHA_KEY)
    between = curve.timing(batch=1, q_len=300, kv_len=300)
    assert between.source == "interpolated" and between.detail == "interpolated between 2 points"
    low, high = extend_time(1, 128, 128), extend_time(1, 512, 512)
    assert low < between.us < high


def test_between_grid_points_the_interpolation_is_log_log_linear(db):
    # time = 5 + 0.01 m is not a power law, so the midpoint in log space is the geometric mean of the ends
    timing = db.lookup("gemm", GEMM_KEY, m=math.sqrt(8 * 64))
    assert timing.source == "interpolated" and timing.detail == "interpolated between 2 points"
    assert timing.us == pytest.approx(math.sqrt((5.08) * (5.64)))


@settings(max_examples=60, deadline=None)
@given(b=st.floats(1, 64), kv=st.floats(1024, 16384))
def test_interpolated_values_lie_between_the_bracketing_grid_values(b, kv, tmp_path_factory):
    curve = _noisy_curve(tmp_path_factory)
    b_lo, b_hi = _bracket(BATCHES, b)
    kv_lo, kv_hi = _bracket(KV_LENS, kv)
    corners = [float(curve(batch=x, kv_len=y)[0]) for x in (b_lo, b_hi) for y in (kv_lo, kv_hi)]
    value = float(curve(batch=b, kv_len=kv)[0])
    assert min(corners) * (1 - 1e-12) <= value <= max(corners) * (1 + 1e-12)


def _bracket(values, x):
    lo = max(v for v in values if v <= x)
    hi = min(v for v in values if v >= x)
    return lo, hi


_NOISY: dict = {}


def _noisy_curve(tmp_path_factory):
    if "curve" not in _NOISY:
        rng = np.random.default_rng(7)
        directory = tmp_path_factory.mktemp("noisy")
        write_table(mla_rows(lambda b, kv: mla_time(b, kv) * rng.uniform(0.7, 1.3)), directory / "t.parquet")
        _NOISY["curve"] = PerfDB.load(directory, H200).curve("attn_mla_decode", MLA_KEY)
    return _NOISY["curve"]


def test_noisy_grid_is_made_monotone_along_every_axis(tmp_path_factory):
    curve = _noisy_curve(tmp_path_factory)
    bs = np.geomspace(1, 64, 40)
    kvs = np.geomspace(1024, 16384, 40)
    us, _ = curve(batch=bs[:, None], kv_len=kvs[None, :])
    assert np.all(np.diff(us, axis=0) >= -1e-9)
    assert np.all(np.diff(us, axis=1) >= -1e-9)


def test_a_raised_grid_point_says_so(tmp_path):
    times = {(b, kv): mla_time(b, kv) for b, kv in itertools.product(BATCHES, KV_LENS)}
    times[(16, 4096)] = times[(4, 4096)] * 0.5  # a noisy dip
    write_table(mla_rows(lambda b, kv: times[(b, kv)]), tmp_path / "t.parquet")
    timing = PerfDB.load(tmp_path, H200).lookup("attn_mla_decode", MLA_KEY, batch=16, kv_len=4096)
    assert timing.source == "measured" and "running max" in timing.detail
    assert timing.us == pytest.approx(times[(4, 4096)])


def test_beyond_the_grid_the_clamped_point_is_scaled_by_the_roofline(db):
    timing = db.lookup("gemm", GEMM_KEY, m=16384)
    roof = Roofline("gemm", GEMM_KEY, H200)
    factor = float(roof.time_us({"m": 16384.0}) / roof.time_us({"m": 4096.0}))
    assert factor > 1.5
    assert timing.source == "extrapolated"
    assert timing.us == pytest.approx((5.0 + 4096 * 0.01) * factor)
    assert f"x{factor:.3g}" in timing.detail and "from m=4096" in timing.detail

    below = db.lookup("attn_mla_decode", MLA_KEY, batch=64, kv_len=100)
    assert below.source == "extrapolated" and below.us < mla_time(64, 1024)
    assert "from batch=64, kv_len=1024" in below.detail


def test_grid_with_skipped_cells_fills_them_and_labels_queries_that_touch_them(tmp_path):
    write_table(mla_rows(skip=lambda b, kv: b == 64 and kv == 16384), tmp_path / "t.parquet")
    curve = PerfDB.load(tmp_path, H200).curve("attn_mla_decode", MLA_KEY)
    assert curve.measured
    inside = curve.timing(batch=64, kv_len=16384)
    assert inside.source == "extrapolated" and "not measured" in inside.detail
    near = curve.timing(batch=32, kv_len=8192)
    assert near.source == "extrapolated" and "batch=64, kv_len=16384" in near.detail
    far = curve.timing(batch=2, kv_len=2048)
    assert far.source == "interpolated"
    # the filled value stays in the measured neighbourhood's order of magnitude and monotone
    assert mla_time(64, 4096) < inside.us < 10 * mla_time(64, 16384)
    assert inside.us >= float(curve(batch=16, kv_len=16384)[0])


def test_vectorised_call_equals_scalar_calls(db):
    rng = np.random.default_rng(3)
    bs = rng.uniform(0.5, 200, 300)
    kvs = rng.uniform(100, 40000, 300)
    bs[:12] = np.repeat(BATCHES, 3)
    kvs[:12] = np.tile(KV_LENS, 4)
    curve = db.curve("attn_mla_decode", MLA_KEY)
    us, source = curve(batch=bs, kv_len=kvs)
    assert us.dtype == np.float64 and source.dtype == np.int8
    for i in range(len(bs)):
        one_us, one_source = curve(batch=float(bs[i]), kv_len=float(kvs[i]))
        assert float(one_us) == pytest.approx(us[i], rel=1e-12)
        assert int(one_source) == source[i]
        timing = curve.timing(batch=float(bs[i]), kv_len=float(kvs[i]))
        assert timing.us == pytest.approx(us[i], rel=1e-12) and timing.source == SOURCES[source[i]]


def test_axis_arrays_broadcast(db):
    curve = db.curve("attn_mla_decode", MLA_KEY)
    us, source = curve(batch=np.array([1, 4, 16]), kv_len=np.array([[1024], [4096]]))
    assert us.shape == source.shape == (2, 3)
    assert us[1, 2] == pytest.approx(mla_time(16, 4096))


def test_empty_database_falls_back_to_the_roofline(tmp_path):
    for db in (PerfDB.load(None, H200), PerfDB.load(tmp_path / "absent", H200), PerfDB.empty(H200)):
        curve = db.curve("gemm", GEMM_KEY)
        assert not curve.measured and not db.has("gemm", GEMM_KEY) and db.keys("gemm") == []
        timing = db.lookup("gemm", GEMM_KEY, m=4096)
        assert timing.source == "roofline" and timing.detail.startswith("roofline:")
        us, source = curve(m=np.array([1.0, 4096.0]))
        assert us[1] == pytest.approx(timing.us) and np.all(source == SOURCE_INDEX["roofline"])
        assert db.coverage().height == 0


def test_unknown_op_and_malformed_keys_are_errors_naming_the_problem(db):
    with pytest.raises(PerfDBError, match="unknown op 'attention'"):
        db.curve("attention", {})
    with pytest.raises(ValueError, match=r"missing \['q_len'\]"):
        db.curve("attn_mla_decode", {k: v for k, v in MLA_KEY.items() if k != "q_len"})
    with pytest.raises(ValueError, match=r"unexpected \['batch'\]"):
        db.curve("attn_mla_decode", {**MLA_KEY, "batch": 4})
    with pytest.raises(PerfDBError, match="integer"):
        db.curve("attn_mla_decode", {**MLA_KEY, "num_heads": 16.5})
    with pytest.raises(PerfDBError, match=r"missing \['kv_len'\]"):
        db.lookup("attn_mla_decode", MLA_KEY, batch=4)
    with pytest.raises(PerfDBError, match=">= 0"):
        db.curve("gemm", GEMM_KEY)(m=np.array([1.0, np.nan]))


def test_keys_have_and_curve_cache(db):
    assert db.keys("attn_mla_decode") == [MLA_KEY]
    assert db.has("gemm", GEMM_KEY) and not db.has("gemm", {**GEMM_KEY, "n": 1})
    assert db.has("gemm", {**GEMM_KEY, "n": np.int64(7168)})  # numpy ints are fine
    assert db.curve("gemm", GEMM_KEY) is db.curve("gemm", dict(GEMM_KEY))


def test_failed_heldout_and_ragged_rows_never_time_anything(tmp_path):
    rows = gemm_rows()
    rows.append({**row("gemm", GEMM_KEY, 1e6, m=64), "sample": "heldout"})
    rows.append({**row("gemm", GEMM_KEY, 1e6, m=100), "sample": "heldout"})
    rows.append({**row("gemm", GEMM_KEY, 1e6, m=200), "sample": "ragged"})
    rows.append({**row("gemm", GEMM_KEY, 1e6, m=300), "status": "failed", "error": "OOM"})
    rows.append({**row("gemm", {**GEMM_KEY, "n": 99}, None, m=8), "status": "unsupported"})
    write_table(rows, tmp_path / "gemm.parquet")
    db = PerfDB.load(tmp_path, H200)
    assert db.lookup("gemm", GEMM_KEY, m=64).us == pytest.approx(5.64)
    assert db.lookup("gemm", GEMM_KEY, m=200).us < 10
    assert not db.has("gemm", {**GEMM_KEY, "n": 99})
    coverage = db.coverage().row(0, named=True)
    assert coverage["points"] == 5 and coverage["heldout"] == 2 and coverage["ragged"] == 1
    assert coverage["failed"] == 1 and coverage["rows"] == 9


def test_duplicate_measurements_are_combined_by_median(tmp_path):
    rows = gemm_rows() + [row("gemm", GEMM_KEY, t, m=64) for t in (6.0, 10.0)]
    write_table(rows, tmp_path / "gemm.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # repeats within x2 of each other load silently
        us = PerfDB.load(tmp_path, H200).lookup("gemm", GEMM_KEY, m=64).us
    assert us == pytest.approx(math.exp(np.median(np.log([5.64, 6.0, 10.0]))))


def test_repeats_more_than_twice_apart_are_refused_naming_both_rows(tmp_path):
    """A row 10x its repeat is not a repeat: its median with the other moved a decode's TPOT 7.06 -> 23.14 ms."""
    write_table(gemm_rows(), tmp_path / "gemm.parquet")
    write_table([row("gemm", GEMM_KEY, 56.4, m=64)], tmp_path / "more.parquet")
    with pytest.raises(ValueError, match=r"more.parquet row 0: gemm \(.*n=7168, k=2048\) at m=64 times 56.4 us, "
                       r"but .*gemm.parquet row 2 times the same point 5.64 us \(x10.00; 2 rows there"):  # fmt: skip
        PerfDB.load(tmp_path, H200)
    write_table([row("gemm", GEMM_KEY, 11.0, m=64)], tmp_path / "more.parquet")  # x1.95: a repeat
    assert PerfDB.load(tmp_path, H200).lookup("gemm", GEMM_KEY, m=64).us == pytest.approx(
        math.sqrt(5.64 * 11.0)
    )


def test_third_party_points_keep_their_label(tmp_path):
    rows = [{**r, "source": "third-party:aiconfigurator 0.4"} for r in gemm_rows()]
    write_table(rows, tmp_path / "gemm.parquet")
    db = PerfDB.load(tmp_path, H200)
    assert db.lookup("gemm", GEMM_KEY, m=64).source == "third_party"
    # between two third-party points the number is still the third party's, and reports must say so
    assert db.lookup("gemm", GEMM_KEY, m=65).source == "third_party"


def test_collective_for_an_unmeasured_group_size_uses_an_alpha_beta_fit(tmp_path):
    key2 = dict(backend="sglang_custom_ar", dtype="bf16", group_size=2)
    sizes = [2**k for k in range(10, 28, 2)]
    alpha, beta = 3.0, 300e9 / 1e6  # us per step, bytes per us over the link
    write_table(
        [row("allreduce", key2, 2 * alpha + 1.0 * s / beta, message_bytes=s) for s in sizes],
        tmp_path / "allreduce.parquet",
    )
    db = PerfDB.load(tmp_path, H200)
    curve8 = db.curve("allreduce", {**key2, "group_size": 8})
    assert not curve8.measured
    timing = curve8.timing(message_bytes=2**24)
    assert timing.source == "extrapolated" and "alpha-beta model fitted on group_size=2" in timing.detail
    assert timing.us == pytest.approx(14 * alpha + 2 * 7 / 8 * 2**24 / beta, rel=1e-6)
    # the measured group size itself is still answered from its table
    assert db.lookup("allreduce", key2, message_bytes=2**20).source == "measured"
    # a different dtype has no table to fit on: roofline
    assert (
        db.lookup("allreduce", {**key2, "dtype": "fp32", "group_size": 8}, message_bytes=2**20).source
        == "roofline"
    )


def test_provenance_reports_what_the_tables_say(db):
    info = db.provenance()
    assert info["gpu"] == "h200" and info["table_gpus"] == ["h200"]
    assert info["files"] == ["attn_mla_decode.parquet", "gemm.parquet"]
    assert info["flashinfer"] == ["0.5.3"] and info["schema_versions"] == ["1"]
    assert info["date_min"] == info["date_max"] == "2026-11-20T01:00:00Z"
    assert info["rows"] == len(BATCHES) * len(KV_LENS) + len(GEMM_MS)


def test_tables_from_another_gpu_warn(tmp_path):
    write_table(gemm_rows(), tmp_path / "gemm.parquet")
    with pytest.warns(UserWarning, match="h200"):
        PerfDB.load(tmp_path, get_gpu("h100"))


def test_shipped_calibration_dir_is_none_when_absent():
    assert shipped_calibration_dir("no-such-gpu") is None


def test_loading_a_few_hundred_thousand_rows_is_fast(tmp_path):
    rng = np.random.default_rng(0)
    n = 100_000
    for i in range(3):
        key = {**GEMM_KEY, "n": 1024 * (i + 1)}
        m = rng.integers(1, 10**6, n)  # repeated m (birthday collisions) must agree: a function of m
        rows = {"m": m, "time_us": 1.0 + m * rng.uniform(1e-4, 1.2e-4, n)}
        write_table(
            [
                row("gemm", {**key, "k": int(k % 512) + 1}, float(t), m=int(m))
                for k, (m, t) in enumerate(zip(rows["m"][:2000], rows["time_us"][:2000], strict=True))
            ],
            tmp_path / f"small{i}.parquet",
        )
        _write_bulk(tmp_path / f"bulk{i}.parquet", key, rows)
    start = time.perf_counter()
    db = PerfDB.load(tmp_path, H200)
    db.keys("gemm")
    elapsed = time.perf_counter() - start
    assert db.table_rows().height == 3 * (n + 2000)
    assert elapsed < 1.0, f"loading took {elapsed:.2f} s"  # the budget is 0.3 s; slack for loaded CI machines


def _write_bulk(path: Path, key: dict, columns: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from simperf.perfdb.schema import arrow_schema

    schema = arrow_schema()
    n = len(columns["m"])
    data = {name: pa.nulls(n, schema.field(name).type) for name in schema.names}
    data.update(
        {
            c: pa.array([v] * n, schema.field(c).type)
            for c, v in {**key, "op": "gemm", "status": "ok", "sample": "grid", "gpu": "h200"}.items()
        }
    )
    data["m"] = pa.array(columns["m"], pa.int64())
    data["time_us"] = pa.array(columns["time_us"], pa.float64())
    pq.write_table(pa.table(data, schema=schema), path)


@settings(max_examples=30, deadline=None)
@given(ms=st.lists(st.integers(1, 10**6), min_size=1, max_size=12, unique=True), seed=st.integers(0, 1000))
def test_any_grid_is_reproduced_at_its_points_by_both_paths(ms, seed, tmp_path_factory):
    rng = np.random.default_rng(seed)
    ms = sorted(ms)
    times = np.maximum.accumulate(rng.uniform(1, 1000, len(ms)))  # monotone, so no running max applies
    directory = tmp_path_factory.mktemp("anygrid")
    write_table(
        [row("gemm", GEMM_KEY, float(t), m=m) for m, t in zip(ms, times, strict=True)],
        directory / "g.parquet",
    )
    curve = PerfDB.load(directory, H200).curve("gemm", GEMM_KEY)
    us, source = curve(m=np.array(ms, dtype=float))
    assert np.allclose(us, times, rtol=1e-12) and np.all(source == SOURCE_INDEX["measured"])
    for m, t in zip(ms, times, strict=True):
        assert curve.timing(m=m) == Timing(pytest.approx(t, rel=1e-12), "measured", "measured")


@settings(max_examples=40, deadline=None)
@given(
    batch=st.floats(0.5, 64.0),
    q_len=st.floats(1.0, 20000.0),
    prefix=st.floats(0.0, 50000.0),
    m=st.floats(0.5, 1e6),
)
def test_scalar_extrapolation_equals_the_array_roofline_path(batch, q_len, prefix, m, tmp_path_factory):
    """Beyond a grid the scalar path scales by Python-float rooflines (Grid.roofline_scalar); it must give the
    number the 0-d-array roofline gives, exactly. The MHA grid has only prefix 0: every prefix extrapolates."""
    directory = tmp_path_factory.mktemp("scalar_roofline")
    rows = [
        row("attn_mha_prefill", MHA_KEY, extend_time(b, q, q), batch=b, q_len=q, kv_len=q)
        for b, q in itertools.product([1, 2, 4], [128, 512, 2048])
    ]
    write_table(rows, directory / "attn_mha_prefill.parquet")
    write_table(gemm_rows(), directory / "gemm.parquet")
    db = PerfDB.load(directory, H200)
    queries = [
        (db.curve("attn_mha_prefill", MHA_KEY), [batch, q_len, prefix + 1.0]),
        (db.curve("gemm", GEMM_KEY), [m]),
    ]
    for curve, xs in queries:
        grid = curve._model.grid
        scalar = grid.roofline_scalar
        assert scalar is not None
        fast = grid.value_scalar(xs)
        grid.roofline_scalar = None  # the array path (the curve is this test's own)
        assert grid.value_scalar(xs) == fast
        grid.roofline_scalar = scalar
