"""The key vocabulary of calibration tables (simperf/perfdb/vocabulary.py) and the dtype widths of the roofline."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from simperf.perfdb import vocabulary
from simperf.perfdb.roofline import DTYPE_BYTES, dtype_bytes
from simperf.perfdb.schema import OP_SPECS

REPO = Path(__file__).resolve().parents[1]


def test_every_shipped_key_value_is_in_the_vocabulary():
    tables = sorted((REPO / "calibration").glob("*/*.parquet"))
    assert tables
    for path in tables:
        frame = pl.read_parquet(path)
        for op in frame["op"].drop_nulls().unique().to_list():
            rows = frame.filter(pl.col("op") == op)
            for column in OP_SPECS[op].key_columns:
                if column in vocabulary.VOCABULARY_COLUMNS and column in rows.columns:
                    for value in rows[column].drop_nulls().unique().to_list():
                        assert vocabulary.allowed(op, column, value), (path, op, column, value)


def test_the_static_vocabulary_is_what_simperf_queries_and_writes():
    """perfdb holds the vocabulary as data (it may not import models or calibrate); this recomputes it from them, so
    a kernel added where simperf queries or writes it, or one dropped, fails here with the literal to paste."""
    from vocabulary_sources import computed_vocabulary, literal

    computed = computed_vocabulary()
    assert vocabulary.KEY_VOCABULARY == computed, "paste into simperf/perfdb/vocabulary.py:\n" + literal(
        computed
    )


def test_the_vocabulary_holds_what_simperf_queries_and_writes():
    vocab = vocabulary.key_vocabulary()
    assert {"sgl_fa3", "flashinfer_fa3", "trtllm"} <= vocab["attn_mha_prefill"]["backend"]
    assert {"flashmla", "trtllm_gen", "cutlass", "fa3"} <= vocab["attn_mla_decode"]["backend"]
    assert {"fp8_block", "fp8_rowwise", "bf16", "nvfp4"} <= vocab["gemm"]["dtype"]
    assert {"kv_convert", "fp8_group_quant", "rmsnorm"} <= vocab["elementwise"]["variant"]
    assert {"fp8", "fp8_e4m3", "bf16"} <= vocab["attn_gqa_decode"]["kv_dtype"]
    assert "int4_wo" in vocab["moe"]["dtype"] and "sglang_custom_ar" in vocab["allreduce"]["backend"]
    assert "flashinfer" not in vocab["gemm"]["backend"]  # per op: an attention backend keys no GEMM


@pytest.mark.parametrize(
    "routing, ok",
    [
        ("balanced", True),
        ("zipf+shared1", True),
        ("power_law_1.2", True),
        ("power_law_1.01+shared2", True),
        ("balnced", False),
        ("power_law_", False),
        ("balanced+shared0", False),
    ],
)
def test_routing_names(routing, ok):
    assert vocabulary.allowed("moe", "routing", routing) is ok


def test_every_dtype_of_the_vocabulary_has_a_width():
    names = {
        value
        for columns in vocabulary.key_vocabulary().values()
        for column, values in columns.items()
        if column in ("dtype", "kv_dtype")
        for value in values
    }
    assert names <= set(DTYPE_BYTES)


def test_an_unknown_dtype_has_no_width():
    assert dtype_bytes("fp8_block") == 1.0 and dtype_bytes(None) == 2.0 and dtype_bytes("nvfp4") == 0.5
    with pytest.raises(ValueError, match="unknown dtype 'bf17'.*nearest: bf16"):
        dtype_bytes("bf17")
