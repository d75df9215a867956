"""The shipped calibration tables (calibration/<gpu>/*.parquet) obey the schema and the timing rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from simperf.calibrate.points import point_key
from simperf.calibrate.provenance import catalogue_key
from simperf.calibrate.timing import rotation_sets, summarize
from simperf.perfdb.schema import OP_SPECS, arrow_schema

ROOT = Path(__file__).resolve().parents[1] / "calibration"
# simperf's own measurements; third-party imports (aiconfigurator_*.parquet) have their own provenance rules
TABLES = sorted(p for p in ROOT.glob("h*/*.parquet") if not p.stem.startswith("aiconfigurator_"))
GRAPH_TIMED_OPS = {
    "attn_mla_decode",
    "attn_gqa_decode",
    "attn_nsa_decode",
    "gemm",
    "bmm",
    "moe",
    "elementwise",
}


@pytest.mark.skipif(not TABLES, reason="no calibration tables in this checkout")
@pytest.mark.parametrize("path", TABLES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_shipped_table_matches_schema_and_timing_rules(path: Path):
    table = pq.read_table(path)
    assert table.schema.equals(arrow_schema(), check_metadata=True)
    rows = table.to_pylist()
    assert rows
    assert path.stem in OP_SPECS and {r["op"] for r in rows} == {path.stem}
    keys = [point_key(r) for r in rows]
    assert len(keys) == len(set(keys))
    for r in rows:
        assert r["gpu"] == path.parent.name and r["gpu_name"] and r["sm"] == "9.0"
        assert r["torch"] and r["date"] and r["source"] == "measured"
        if r["status"] == "ok":
            assert 0 < r["time_us_p10"] <= r["time_us"] <= r["time_us_p90"]
            assert r["repeats"] >= 5
            if r["op"] in GRAPH_TIMED_OPS:
                # tuned kernels append the configuration they ran with: "cuda_graph_replay tuned BM16_... (best of 9)"
                # ("best of 0": SGLang's default tiles, timed untuned); SGLang's own kernels name the package and call;
                # flashinfer's GQA decode says it was planned in CUDA-graph mode
                method, *tuned = r["timing_method"].split(" ", 1)
                assert method == "cuda_graph_replay"
                assert not tuned or re.fullmatch(
                    r"tuned BM\d+_BN\d+_BK\d+_G\d+_W\d+_S\d+ \(best of \d+\)"
                    r"|sgl-kernel \d+\.\d+\.\d+ flash_attn_with_kvcache \S+"
                    r"|sglang \d+\.\d+\.\d+( \([^)]*\))? fused_experts_impl BM\d+_BN\d+_BK\d+_G\d+_W\d+_S\d+"
                    r" \((tuned json|default)\)"
                    r"|graph-mode plan",  # flashinfer's GQA decode planned as SGLang captures it
                    tuned[0],
                )
        else:
            assert r["status"] in ("failed", "unsupported") and r["error"]
            assert r["time_us"] is None
        if r["sample"] == "ragged":
            lens = json.loads(r["kv_lens"])
            assert r["batch"] == len(lens) and r["kv_len"] == round(sum(lens) / len(lens))


@pytest.mark.skipif(not (ROOT / "h200").exists(), reason="no H200 tables")
def test_h200_mla_decode_at_large_batch_is_plausible_against_copy_bandwidth():
    ceilings = json.loads((ROOT / "h200" / "device.json").read_text())["ceilings"]
    copy_gbps = ceilings["copy_bandwidth_gbps"]
    assert 3500 < copy_gbps < 5000
    rows = pq.read_table(ROOT / "h200" / "attn_mla_decode.parquet").to_pylist()
    big = [
        r for r in rows
        if r["status"] == "ok" and r["sample"] == "grid" and r["kv_dtype"] == "bf16"
        and r["batch"] * r["kv_len"] >= 2**21 and r["q_len"] == 1
    ]  # fmt: skip
    assert big
    for r in big:
        kv_read_gbps = r["batch"] * r["kv_len"] * 576 * 2 / r["time_us"] / 1e3
        # reading the latent cache cannot beat ~1.1x the copy rate (copy counts read + write)
        assert kv_read_gbps < 1.1 * copy_gbps, r


def test_summary_percentiles_and_rotation_sizing():
    m = summarize([5.0, 1.0, 3.0, 2.0, 4.0], "cuda_events")
    assert (m.time_us, m.repeats) == (3.0, 5)
    assert m.time_us_p10 == pytest.approx(1.4) and m.time_us_p90 == pytest.approx(4.6)
    l2 = 60 * 2**20
    assert rotation_sets(10 * 2**30, l2) == 1
    assert rotation_sets(2**20, l2) == 120
    assert rotation_sets(1, l2) == 512  # capped


def test_gpu_names_map_to_catalogue_keys():
    assert catalogue_key("NVIDIA H100 80GB HBM3") == "h100"
    assert catalogue_key("NVIDIA H200") == "h200"
    assert catalogue_key("NVIDIA B200") == "b200"
    assert catalogue_key("NVIDIA A100-SXM4-80GB") is None
