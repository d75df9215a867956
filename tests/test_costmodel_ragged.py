"""Ragged decode batches: the split-KV work model and its check against measured ragged batches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simperf.costmodel.ragged import ragged_errors, ragged_summary, split_kv_factor
from simperf.hardware.catalog import get_gpu

ROOT = Path(__file__).resolve().parents[1] / "calibration"


def test_uniform_batch_has_factor_one():
    assert split_kv_factor(np.full(32, 4096), 132) == pytest.approx(1.0)


def test_skewed_small_batch_costs_more_chunks_than_its_mean():
    # one long request among short ones: its chunks dominate while short ones each round a partial chunk up
    kv = np.array([65536] + [64] * 7)
    assert split_kv_factor(kv, 132) > 1.0


@given(st.lists(st.integers(1, 200_000), min_size=1, max_size=256))
def test_factor_is_positive_and_bounded(kv):
    f = split_kv_factor(np.asarray(kv), 132)
    # at most one extra partly filled chunk per request over the uniform batch's chunk count
    assert 0 < f <= 1 + len(kv)


@pytest.mark.skipif(not (ROOT / "h200" / "attn_mla_decode.parquet").exists(), reason="no H200 tables")
def test_measured_ragged_batches_are_checked_against_both_models():
    errors = ragged_errors(ROOT / "h200", get_gpu("h200"))
    assert errors.height >= 100
    summary = ragged_summary(errors)
    assert set(summary["op"]) >= {"attn_mla_decode", "attn_gqa_decode"}
    assert errors["mean_kv_error"].is_finite().all() and errors["split_kv_error"].is_finite().all()
