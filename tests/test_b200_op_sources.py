"""Every op of every shipped B200 scenario, and the table that prices it (costmodel/sources.py).

Three rules, checked on representative prefills (300 and 2000 fresh tokens) and decodes (batch 1 and 16 at 2048
KV tokens) of each scenario:
  1. precedence: a table for the target GPU (measured or imported for it) beats any table scaled from another
     GPU, for every op;
  2. an op whose exact key no table covers is listed below as having no data for that kernel, and is priced from
     the nearest measured key of the same op (`scaled_key`); the bare roofline only for an op no table of any key
     covers at all (BARE_ROOFLINE);
  3. the listing of (step kind, op, key, table) per scenario equals tests/data/b200_op_sources.txt, so a change
     of where an op's time comes from shows up in review. Regenerate with
     `python benchmarks/b200_seeds.py sources > tests/data/b200_op_sources.txt`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((REPO / "scenarios" / "b200").glob("*.yaml"))
LISTING = REPO / "tests" / "data" / "b200_op_sources.txt"

# Kernels no table anywhere covers (docs/b200.md, "What has no data"): (op, backend or variant).
NO_DATA = {
    ("attn_mla_decode", "cutlass_mla"),  # AIConfigurator publishes none; Hopper cannot run it
    ("attn_mla_decode", "trtllm_mla"),  # page 32, and heads other than AIConfigurator's grid at page 64
    ("attn_mla_decode", "flashinfer_fa2"),  # pages / head counts the H200 tables lack
    ("attn_nsa_decode", "trtllm"),  # trtllm sparse MLA: module-level timings only (dsa_generation_module)
    ("attn_nsa_decode", "flashmla_sparse"),  # SM100 FlashMLA sparse: 64-head kernel rows only (GLM-5)
    ("attn_nsa_prefill", "trtllm"),
    ("nsa_indexer", "decode"),  # deep_gemm paged MQA logits: none for V3.2's 64 index heads
    ("elementwise", "fp8_group_quant"),  # quantisation of widths the H200 tables do not have
}
# Ops with no table of any key on B200 or its scaled-from H200: nothing to scale from, so the roofline alone.
BARE_ROOFLINE = {("nsa_indexer", "decode")}


def _needs_tables() -> None:
    if not (REPO / "calibration" / "b200").is_dir() or not (REPO / "calibration" / "h200").is_dir():
        pytest.skip("shipped calibration/b200 or calibration/h200 absent")


def _no_data_id(source) -> tuple[str, str]:
    """(op, backend), or (op, variant) for ops whose variant names the kernel (elementwise, nsa_indexer)."""
    key = source.key
    return source.op, str(key["variant"] if "variant" in key else key.get("backend"))


@pytest.fixture(scope="module")
def sources():
    _needs_tables()
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    from b200_seeds import scenario_sources

    return {path.stem: scenario_sources(path) for path in SCENARIOS}


def test_there_are_b200_scenarios():
    assert len(SCENARIOS) >= 16


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_a_table_for_the_target_gpu_always_wins(sources, path):
    assert not [s.line() for s in sources[path.stem] if s.better_table]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_no_op_is_a_bare_estimate_unless_no_data_exists(sources, path):
    unexplained = [
        s.line() for s in sources[path.stem] if s.table == "none" and _no_data_id(s) not in NO_DATA
    ]
    assert not unexplained
    for s in sources[path.stem]:
        if s.table == "none":
            # a nearest key whose own lookup extrapolates keeps the weaker label
            allowed = {"scaled_key", "extrapolated"} | (
                {"roofline"} if _no_data_id(s) in BARE_ROOFLINE else set()
            )
            assert s.source in allowed, s.line()


def test_deepseek_moe_on_b200_comes_from_the_b200_table(sources):
    moe = [s for stem, rows in sources.items() if stem.startswith("dsr1") for s in rows if s.op == "moe"]
    assert moe and all(s.table == "b200" and s.key["backend"] == "flashinfer_trtllm" for s in moe)


def test_the_listing_is_current(sources):
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    from b200_seeds import sources_listing

    assert LISTING.read_text(encoding="utf-8").splitlines() == sources_listing(sources)
