"""SGLang's own Triton fused MoE as a table backend (calibrate/backends/moe_sglang.py): what the group refuses, how
it reads SGLang's switches outside a server, and its tables against a served decode's MoE kernels. CPU only; reads
committed files."""

from __future__ import annotations

import statistics
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from simperf.calibrate.backends import group_for
from simperf.calibrate.backends import moe_sglang as ms
from simperf.calibrate.measure import Unsupported

ROOT = Path(__file__).resolve().parents[1]
SERVED = ROOT / "groundtruth/forwards/h100/served-qwen3-30b-a3b-decode"


def _point(**over):
    point = {
        "op": "moe",
        "backend": ms.BACKEND,
        "dtype": "bf16",
        "num_experts": 128,
        "experts_per_rank": 128,
        "topk": 8,
        "n": 768,
        "k": 2048,
        "m": 16,
        "routing": "balanced",
    }
    return {**point, **over}


def test_the_group_measures_sglangs_backend_label():
    assert group_for("moe", "sglang_fused_moe").module.endswith("moe_sglang")


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"experts_per_rank": 16}, "EP 1 only"),
        ({"dtype": "fp8_rowwise"}, "block-fp8"),
        ({"dtype": "fp8_block", "n": 96}, "multiples of 128"),
        ({"backend": "triton_fused_moe"}, "does not measure"),
    ],
)
def test_layouts_sglangs_runner_is_not_timed_at_are_recorded_unsupported(over, reason):
    """Checked before SGLang is imported: a grid without the kit still records these points as unsupported."""
    with pytest.raises(Unsupported, match=reason):
        ms.run_point(_point(**over), SimpleNamespace(cache={}, sm_major=9))


def test_without_sglang_the_point_fails_with_one_line_naming_the_kit():
    ctx = SimpleNamespace(cache={}, sm_major=9)
    try:
        import sglang  # noqa: F401
    except ImportError:
        with pytest.raises(ms.KernelUnavailable, match="SGLang's kit on PYTHONPATH"):
            ms.run_point(_point(), ctx)
        # remembered: the second point does not try again
        assert isinstance(ctx.cache[ms._CACHE_KEY], ms.KernelUnavailable)
    else:  # pragma: no cover - only where SGLang is installed
        pytest.skip("SGLang imports here")


def test_outside_a_server_sglangs_two_switches_read_their_defaults():
    """SGLang fails closed on get_exec() until a server publishes its arguments; the group then reads the two
    switches the kernel path consults at their ServerArgs defaults, and the timing method says so."""

    def unpublished():
        raise ValueError("config namespace 'exec' not published")

    fused, config = SimpleNamespace(get_exec=unpublished), SimpleNamespace(get_exec=unpublished)
    note = ms._publish_defaults(fused, config)
    assert "server defaults" in note
    assert fused.get_exec().moe.enable_fused_moe_sum_all_reduce is False
    assert config.get_exec().deterministic.enable_deterministic_inference is False
    published = SimpleNamespace(
        get_exec=lambda: SimpleNamespace(moe=SimpleNamespace(enable_fused_moe_sum_all_reduce=1))
    )
    assert ms._publish_defaults(published, config) == ""


def test_the_tiles_label_is_the_one_simperfs_kernel_uses():
    cfg = {
        "BLOCK_SIZE_M": 16,
        "BLOCK_SIZE_N": 64,
        "BLOCK_SIZE_K": 128,
        "GROUP_SIZE_M": 1,
        "num_warps": 4,
        "num_stages": 3,
    }
    assert ms.config_label(cfg) == "BM16_BN64_BK128_G1_W4_S3"


def _served_moe_spans(trace: Path) -> list[float]:
    """Per MoE layer of a served decode: SGLang's align kernel's start to its sum kernel's end (the six kernels of
    one fused_experts call and the GPU's idle time between them)."""
    from simperf.groundtruth.trace import read_trace

    kernels = sorted((e for e in read_trace(trace) if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    spans = []
    for i, e in enumerate(kernels):
        if e["name"].startswith("void moe_align_block_size_kernel"):
            end = next((k for k in kernels[i : i + 8] if k["name"].startswith("triton_per_fused")), None)
            if end is not None:  # None: the profile stopped inside this call
                spans.append(end["ts"] + end["dur"] - e["ts"])
    return spans


@pytest.mark.parametrize(("trace", "m"), [("c1.trace.json.gz", 1), ("c16.trace.json.gz", 16)])
def test_sglangs_fused_moe_table_is_the_served_decodes_moe_span(trace, m):
    """Held out: the served Qwen3-30B-A3B decode (SGLang 0.5.17, H100, profiled on 2026-11-26) against the table of
    SGLang's kernel timed alone a day later by CUDA-graph replay on another H100: the 48 layers' MoE calls, align to
    sum, took 41.68 µs (1 running request) and 270.9 µs (16) at the median; the table says 41.69 and 275.3."""
    spans = _served_moe_spans(SERVED / trace)
    assert len(spans) >= 48 * 5
    rows = pq.read_table(ROOT / "calibration/h100/moe.parquet").to_pylist()
    table = next(
        r["time_us"]
        for r in rows
        if r["backend"] == ms.BACKEND
        and (r["n"], r["k"], r["num_experts"], r["experts_per_rank"], r["m"]) == (768, 2048, 128, 128, m)
        and r["routing"] == "balanced"
    )
    assert table == pytest.approx(statistics.median(spans), rel=0.03)


def test_docs_calibration_moe_comparison_is_the_commands_output():
    """docs/calibration.md's SGLang-vs-simperf MoE table is `benchmarks/moe_sglang_compare.py`'s output over the
    committed tables (rerun it with --write after new MoE rows land)."""
    import importlib.util

    from simperf.accuracy.run import generated_block

    spec = importlib.util.spec_from_file_location(
        "moe_sglang_compare", ROOT / "benchmarks/moe_sglang_compare.py"
    )
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    assert generated_block(compare.DOC, compare.BEGIN, compare.END) == compare.table() + "\n"
