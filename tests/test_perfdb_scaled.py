"""The scaled-from fallback: a key with no table on this GPU priced from another GPU's table and the two rooflines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simperf.hardware import get_gpu
from simperf.perfdb.db import PerfDB
from simperf.perfdb.roofline import Roofline
from simperf.perfdb.scaled import SCALED_FROM_FILE, read_scaled_from
from simperf.perfdb.tables import write_table

H200, B200 = get_gpu("h200"), get_gpu("b200")
GEMM = dict(backend="torch", dtype="bf16", n=4096, k=4096)
M_GRID = [1, 16, 256, 4096]


def gemm_rows(key: dict, times: dict[int, float], gpu: str) -> list[dict]:
    return [
        {"op": "gemm", **key, "m": m, "time_us": us, "status": "ok", "sample": "grid", "gpu": gpu}
        for m, us in times.items()
    ]


def make_dirs(root: Path, reference: str | None = "h200") -> Path:
    """calibration/h200 with one gemm table, calibration/b200 empty but for scaled_from.yaml."""
    write_table(gemm_rows(GEMM, {m: 5.0 + 0.01 * m for m in M_GRID}, "h200"), root / "h200" / "gemm.parquet")
    target = root / "b200"
    target.mkdir(parents=True, exist_ok=True)
    if reference is not None:
        (target / SCALED_FROM_FILE).write_text(f"reference: {reference}\n")
    return target


def roofline_ratio(m: float) -> float:
    axes = {"m": np.asarray(m, dtype=np.float64)}
    return float(Roofline("gemm", GEMM, B200).time_us(axes) / Roofline("gemm", GEMM, H200).time_us(axes))


def test_a_key_without_a_table_is_the_reference_time_times_the_roofline_ratio(tmp_path):
    db = PerfDB.load(make_dirs(tmp_path), B200)
    timing = db.lookup("gemm", GEMM, m=256)
    assert timing.source == "extrapolated"
    assert timing.detail.startswith("scaled-from:h200")
    assert timing.us == pytest.approx((5.0 + 0.01 * 256) * roofline_ratio(256))
    assert db.provenance()["scaled_from"] == "h200"


@settings(max_examples=40, deadline=None)
@given(m=st.floats(min_value=1.0, max_value=4096.0))
def test_the_efficiency_against_the_roofline_is_the_reference_gpu_s(tmp_path_factory, m):
    root = tmp_path_factory.mktemp("scaled")
    target, reference = PerfDB.load(make_dirs(root), B200), PerfDB.load(root / "h200", H200)
    axes = {"m": np.asarray(m)}
    us_target, source = target.curve("gemm", GEMM)(m=m)
    us_reference, _ = reference.curve("gemm", GEMM)(m=m)
    efficiency_target = float(Roofline("gemm", GEMM, B200).time_us(axes)) / float(us_target)
    efficiency_reference = float(Roofline("gemm", GEMM, H200).time_us(axes)) / float(us_reference)
    assert efficiency_target == pytest.approx(efficiency_reference, rel=1e-9)
    assert int(source) == 2  # extrapolated


def test_has_reports_keys_the_reference_covers(tmp_path):
    db = PerfDB.load(make_dirs(tmp_path), B200)
    assert db.has("gemm", GEMM)
    assert not db.has("gemm", {**GEMM, "n": 8192})
    # no GPU has n=8192: the reference's nearest key stands in, then the reference is scaled to this GPU
    wider = db.lookup("gemm", {**GEMM, "n": 8192}, m=16)
    assert wider.source == "extrapolated" and wider.detail.startswith("scaled-from:h200")
    assert "scaled-key:n=4096" in wider.detail
    assert db.curve("gemm", {**GEMM, "n": 8192}).backing == "scaled-from"
    # an op no GPU has a table of is the bare roofline
    bmm = dict(backend="torch", dtype="bf16", batch=16, n=512, k=128)
    assert db.lookup("bmm", bmm, m=16).source == "roofline" and db.curve("bmm", bmm).backing == "roofline"


def test_the_gpu_s_own_table_wins_over_the_reference(tmp_path):
    target = make_dirs(tmp_path)
    write_table(gemm_rows(GEMM, {m: 1.0 + 0.001 * m for m in M_GRID}, "b200"), target / "gemm.parquet")
    timing = PerfDB.load(target, B200).lookup("gemm", GEMM, m=16)
    assert timing.source == "measured" and timing.us == pytest.approx(1.016)


def test_vectorised_slices_and_scalar_lookups_agree(tmp_path):
    curve = PerfDB.load(make_dirs(tmp_path), B200).curve("gemm", GEMM)
    ms = np.array([1.0, 7.0, 16.0, 300.0, 4096.0, 10000.0])
    us, sources = curve(m=ms)
    assert set(sources.tolist()) == {2}
    assert [float(curve(m=float(m))[0]) for m in ms] == pytest.approx(us.tolist())
    assert [curve.timing(m=float(m)).us for m in ms] == pytest.approx(us.tolist())
    sliced, _ = curve.along("m", lo=1.0, hi=16384.0)(ms)
    assert sliced == pytest.approx(us, rel=5e-3)  # sampled at 16 points per octave


def test_without_scaled_from_yaml_nothing_is_scaled(tmp_path):
    db = PerfDB.load(make_dirs(tmp_path, reference=None), B200)
    assert db.reference is None and db.lookup("gemm", GEMM, m=16).source == "roofline"


def test_a_missing_reference_directory_warns_and_falls_back_to_the_roofline(tmp_path):
    target = make_dirs(tmp_path, reference="h100")  # no calibration/h100 beside it
    with pytest.warns(UserWarning, match="h100"):
        db = PerfDB.load(target, B200)
    assert db.lookup("gemm", GEMM, m=16).source == "roofline"


def test_a_malformed_scaled_from_yaml_is_an_error_naming_the_file(tmp_path):
    (tmp_path / SCALED_FROM_FILE).write_text("reference: h200\nfactor: 2\n")
    with pytest.raises(ValueError, match=SCALED_FROM_FILE):
        read_scaled_from(tmp_path)


def test_the_shipped_b200_directory_falls_back_to_h200():
    shipped = Path(__file__).resolve().parents[1] / "calibration" / "b200"
    if not shipped.is_dir():
        pytest.skip("no shipped calibration/b200")
    assert read_scaled_from(shipped) == "h200"
