"""A key without a table of its own: the nearest measured key of the op, scaled by the roofline ratio between the
two keys, never below the backend's measured floor; the bare roofline only where the op has no table."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from simperf.hardware import get_gpu
from simperf.perfdb.db import PerfDB
from simperf.perfdb.nearest import describe_substitution, key_distance, nearest_key
from simperf.perfdb.roofline import Roofline
from simperf.perfdb.tables import write_table

H200 = get_gpu("h200")
FA3 = dict(backend="flashinfer_fa3", kv_dtype="bf16", num_heads=16, page_size=1, q_len=1)
BATCHES = [1, 4, 16, 64]
KV_LENS = [1024, 4096, 16384]


def row(op: str, key: dict, time_us: float, **axes) -> dict:
    return dict(
        op=op, **key, **axes, time_us=time_us, status="ok", sample="grid", gpu="h200", source="measured"
    )


def mla_rows(key: dict, scale: float = 1.0) -> list[dict]:
    # 8 us of latency, then work: as small decode kernels measure
    return [
        row("attn_mla_decode", key, scale * (8.0 + 0.0004 * b * kv), batch=b, kv_len=kv)
        for b, kv in itertools.product(BATCHES, KV_LENS)
    ]


@pytest.fixture
def db(tmp_path) -> PerfDB:
    write_table(mla_rows(FA3) + mla_rows({**FA3, "page_size": 64}, 1.1), tmp_path / "attn_mla_decode.parquet")
    return PerfDB.load(tmp_path, H200)


def test_distance_prefers_the_nearer_page_size_and_refuses_a_fixed_column():
    page16 = {**FA3, "page_size": 16}
    assert key_distance("attn_mla_decode", page16, {**FA3, "page_size": 64}) == pytest.approx(0.5)
    assert key_distance("attn_mla_decode", page16, FA3) == pytest.approx(1.0)
    norm = dict(backend="flashinfer", variant="rmsnorm", n=512)
    assert key_distance("elementwise", norm, {**norm, "variant": "rope"}) is None  # never another kernel kind
    assert key_distance("allreduce", {}, {}) is None  # collectives: the alpha-beta model bridges group sizes


def test_gqa_decode_prefers_a_key_with_the_same_tensor_core_choice():
    wanted = dict(
        backend="flashinfer", kv_dtype="bf16", num_heads=32, num_kv_heads=32, head_dim=128, page_size=1
    )
    same_group = {**wanted, "num_heads": 16, "num_kv_heads": 16}  # CUDA-core decode, as 32/32 runs
    tensor_core = {**wanted, "num_kv_heads": 8}  # group 4: tensor cores
    found, distance = nearest_key("attn_gqa_decode", wanted, [tensor_core, same_group])
    assert found == same_group and distance == pytest.approx(2.0)


def test_a_key_without_a_table_is_its_nearest_key_times_the_roofline_ratio(db):
    wanted = {**FA3, "page_size": 16, "num_heads": 32}
    near = {**FA3, "page_size": 64}
    timing = db.lookup("attn_mla_decode", wanted, batch=8, kv_len=2048)
    axes = {"batch": np.asarray(8.0), "kv_len": np.asarray(2048.0)}
    ratio = float(
        Roofline("attn_mla_decode", wanted, H200).time_us(axes)
        / Roofline("attn_mla_decode", near, H200).time_us(axes)
    )
    near_us = db.lookup("attn_mla_decode", near, batch=8, kv_len=2048).us
    assert timing.source == "scaled_key" and timing.us == pytest.approx(near_us * ratio, rel=1e-12)
    assert timing.detail.startswith("scaled-key:num_heads=16,page_size=64")
    assert db.curve("attn_mla_decode", wanted).backing == "scaled-key"
    us, source = db.curve("attn_mla_decode", wanted)(
        batch=np.array([8.0, 8.0]), kv_len=np.array([2048.0, 100.0])
    )
    assert us[0] == pytest.approx(timing.us, rel=1e-12) and set(source.tolist()) == {
        6
    }  # SOURCE_INDEX scaled_key


def test_the_answer_never_goes_below_the_backends_measured_floor(db):
    floor = db.measured_floors()[("attn_mla_decode", "flashinfer_fa3")]
    assert floor == pytest.approx(8.0 + 0.0004 * 1 * 1024)  # the fastest row, latency-bound
    # one head instead of 16 at the floor row's own shape: less work, so the roofline ratio is below 1
    tiny = {**FA3, "num_heads": 1}
    timing = db.lookup("attn_mla_decode", tiny, batch=1, kv_len=1024)
    assert timing.us == pytest.approx(floor) and "raised to the measured floor" in timing.detail
    bigger = db.lookup("attn_mla_decode", tiny, batch=64, kv_len=16384)
    assert bigger.us > floor and "floor" not in bigger.detail


def test_a_backend_whose_fastest_row_is_work_bound_has_no_floor(tmp_path):
    key = dict(backend="flashmla_sparse", kv_dtype="bf16", num_heads=64, topk=2048)
    rows = [row("attn_nsa_prefill", key, 1e-3 * m * 40.0, m=m, kv_len=65536) for m in (2048, 8192)]
    write_table(rows, tmp_path / "attn_nsa_prefill.parquet")
    assert PerfDB.load(tmp_path, H200).measured_floors() == {}


def test_covers_says_how_far_the_tables_are_from_a_key(db, tmp_path):
    assert db.covers("attn_mla_decode", FA3) == 0.0
    assert db.covers("attn_mla_decode", {**FA3, "page_size": 32}) == pytest.approx(0.25)
    gemm = dict(backend="torch", dtype="bf16", n=4096, k=4096)
    assert db.covers("gemm", gemm) is None  # no gemm table at all: the bare roofline
    assert db.curve("gemm", gemm).backing == "roofline" and db.lookup("gemm", gemm, m=8).source == "roofline"


def test_describe_substitution_names_the_columns_as_used():
    assert describe_substitution(FA3, {**FA3, "page_size": 64}) == "page_size=64"


def test_a_slice_of_a_scaled_key_curve_follows_the_curve(db):
    curve = db.curve("attn_mla_decode", {**FA3, "page_size": 16, "num_heads": 32})
    kv = np.geomspace(100.0, 20000.0, 50)
    direct, _ = curve(batch=np.full(kv.shape, 8.0), kv_len=kv)
    sliced, label = curve.along("kv_len", batch=8.0).values(kv)
    assert np.allclose(sliced, direct, rtol=2e-3) and label == 6
