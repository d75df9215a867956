"""SGLang's own FA3 kernel as a calibration backend (`sgl_fa3`, worker group fa3_sgl), checked on a CPU: the group
is registered, its grids parse within their GPU-time budget, the fa3 backend prefers its tables, and a host without
sgl_kernel's FA3 extension records failed rows with a reason instead of crashing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from simperf.calibrate import grid as gridmod
from simperf.calibrate.backends import group_by_name, group_for
from simperf.calibrate.measure import STATUS_FAILED
from simperf.calibrate.points import make_point
from simperf.capabilities import BACKENDS, gqa_decode_tables, mha_prefill_tables
from simperf.perfdb.schema import OP_SPECS

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 150.0
# benchmarks/issue19_gpu.py's estimate: per point 0.1 s plus 12 x the kernel time
POINT_OVERHEAD_S, REPLAY_FACTOR = 0.1, 12.0
RAGGED = 16  # the grids' documented --ragged


def test_worker_group_measures_gqa_decode_and_extend_as_sgl_fa3():
    group = group_by_name("fa3_sgl")
    assert group.module == "simperf.calibrate.backends.fa3_sgl"
    assert set(group.members) == {("attn_gqa_decode", "sgl_fa3"), ("attn_mha_prefill", "sgl_fa3")}
    assert group.requires_sm_major is None and group.needs_gpu and not group.jit
    assert (
        group_for("attn_gqa_decode", "sgl_fa3") is group and group_for("attn_mha_prefill", "sgl_fa3") is group
    )


def test_worker_module_imports_without_torch_or_sgl_kernel():
    code = (
        "import sys, simperf.calibrate.backends.fa3_sgl as m; "
        "assert 'torch' not in sys.modules and 'sgl_kernel' not in sys.modules; print(m.BACKEND)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "sgl_fa3"


def _header_numbers(path: Path) -> tuple[int, float]:
    text = path.read_text()
    points = re.search(r"^# points: (\d+)", text, re.M)
    estimate = re.search(r"^# estimate: ~(\d+) GPU s", text, re.M)
    assert points and estimate, f"{path.name}: header must state '# points: N' and '# estimate: ~S GPU s'"
    return int(points.group(1)), float(estimate.group(1))


def _estimate_s(points: list[dict], gpu: str) -> float:
    """issue19_gpu.py's estimator, with flashinfer's tables (what prices fa3 today) standing in for the kernel."""
    from simperf.hardware.catalog import get_gpu
    from simperf.perfdb.db import PerfDB, shipped_calibration_dir

    db = PerfDB.load(shipped_calibration_dir(gpu), get_gpu(gpu))
    proxy = {"attn_gqa_decode": "flashinfer", "attn_mha_prefill": "flashinfer_fa3"}
    total = 0.0
    for p in points:
        spec = OP_SPECS[p["op"]]
        key = {c: p.get(c) for c in spec.key_columns} | {"backend": proxy[p["op"]]}
        us = float(db.curve(p["op"], key)(**{a: float(p[a]) for a in spec.axis_columns})[0])
        total += POINT_OVERHEAD_S + REPLAY_FACTOR * us * 1e-6
    return total


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_grid_covers_the_corpus_keys_within_the_gpu_budget(gpu):
    path = ROOT / "calibration" / "grids" / f"fa3_sgl_{gpu}.yaml"
    grid = gridmod.load_grid(path)
    points = gridmod.all_points(grid, heldout=0, ragged=RAGGED)
    assert {(p["op"], p["backend"]) for p in points} == {
        ("attn_gqa_decode", "sgl_fa3"),
        ("attn_mha_prefill", "sgl_fa3"),
    }
    for p in points:
        spec = OP_SPECS[p["op"]]
        assert all(p.get(c) is not None for c in spec.key_columns + spec.axis_columns), p
    heads = {(p["num_heads"], p["num_kv_heads"]) for p in points}
    assert heads == {(32, 8), (64, 8), (32, 4)}  # Qwen3-8B / Llama-3.1-8B, Qwen3-32B, Qwen3-30B-A3B at TP1
    decode = [p for p in points if p["op"] == "attn_gqa_decode" and p["sample"] == "grid"]
    assert {p["batch"] for p in decode} >= {1, 8, 64, 128, 256} and max(p["batch"] for p in decode) == 256
    assert min(p["kv_len"] for p in decode) == 128 and max(p["kv_len"] for p in decode) == 32768
    assert {(p["page_size"], p["kv_dtype"], p["head_dim"]) for p in decode} == {(1, "bf16", 128)}
    assert sum(p["sample"] == "ragged" for p in points) == RAGGED
    extend = [p for p in points if p["op"] == "attn_mha_prefill"]
    assert min(p["q_len"] for p in extend) == 128 and max(p["q_len"] * p["batch"] for p in extend) == 16384
    assert any(p["kv_len"] == p["q_len"] for p in extend) and any(p["kv_len"] > p["q_len"] for p in extend)

    stated_points, stated_s = _header_numbers(path)
    assert len(points) == stated_points
    estimate = _estimate_s(points, gpu)
    assert estimate <= BUDGET_S
    assert abs(estimate - stated_s) <= 0.1 * stated_s + 2, (estimate, stated_s)


def test_fa3_prefers_sgl_fa3_tables_then_flashinfer():
    fa3 = BACKENDS["fa3"]
    assert fa3.tables == ("sgl_fa3", "flashinfer_fa3")
    assert mha_prefill_tables("fa3", "dense", 9) == ("sgl_fa3", "flashinfer_fa3")
    assert gqa_decode_tables("fa3", 9) == ("sgl_fa3", "flashinfer")
    # backends without their own GQA decode kernel table keep flashinfer's decode first, as before
    assert gqa_decode_tables("flashinfer", 9)[0] == "flashinfer"


def test_without_sgl_kernel_fa3_every_point_is_a_failed_row_with_a_reason(tmp_path, monkeypatch):
    """The kit without its flash_ops .so: sgl_kernel.flash_attn raises ImportError as 0.4.5's does."""
    from simperf.calibrate.backends import fa3_sgl
    from simperf.calibrate.provenance import DeviceInfo
    from simperf.calibrate.timing import TimingConfig
    from simperf.calibrate.worker import WorkerContext, measure_point

    pkg = tmp_path / "sgl_kernel"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "flash_attn.py").write_text(
        "try:\n    from sgl_kernel import flash_ops\nexcept:\n"
        "    raise ImportError('Can not import FA3 in sgl_kernel. Please check your installation.')\n"
    )
    for name in [m for m in sys.modules if m == "sgl_kernel" or m.startswith("sgl_kernel.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(tmp_path))

    device = DeviceInfo(*([None] * 7), 0, *([None] * 6))
    ctx = WorkerContext(device=device, timing=TimingConfig())
    decode = make_point(
        "attn_gqa_decode", "sgl_fa3", dtype="bf16", kv_dtype="bf16", page_size=1, num_heads=32, num_kv_heads=8,
        head_dim=128, head_dim_v=128, q_len=1, batch=8, kv_len=1024,
    )  # fmt: skip
    extend = make_point(
        "attn_mha_prefill", "sgl_fa3", dtype="bf16", kv_dtype="bf16", num_heads=32, num_kv_heads=8, head_dim=128,
        head_dim_v=128, batch=1, q_len=512, kv_len=1536,
    )  # fmt: skip
    try:
        rows = [measure_point(fa3_sgl, p, ctx) for p in (decode, extend, decode)]
    finally:  # the stand-in package must not outlive the test
        for name in [m for m in sys.modules if m == "sgl_kernel" or m.startswith("sgl_kernel.")]:
            del sys.modules[name]
    for row in rows:
        assert row["status"] == STATUS_FAILED and row["time_us"] is None
        assert "\n" not in row["error"]
        assert "sgl_kernel.flash_attn does not import" in row["error"] and "flash_ops" in row["error"]
        assert "Can not import FA3" in row["error"]
