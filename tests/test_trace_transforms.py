"""Trace transforms as scenario options: window, sample, re-time, cap; and the context policy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from simperf.scenario.models import WorkloadSpec
from simperf.workload.requests import build_requests
from simperf.workload.trace import Trace, TraceError, read_trace
from simperf.workload.transforms import cap_lengths, mean_rate, retime, truncate_hashes, window

TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"


def shared_trace(name: str) -> Path:
    path = TRACES / name
    if not path.is_file():
        pytest.skip(f"shared trace {name} not present")
    return path


def small_trace(tmp_path: Path, times: list[float], block: int = 4) -> Path:
    path = tmp_path / "t.jsonl"
    rows = [
        {"arrival_s": t, "input_len": 10 + i, "output_len": 5, "hash_ids": [0, 100 + i, 200 + i]}
        for i, t in enumerate(times)
    ]
    for row in rows:
        row["hash_block_tokens"] = block
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def trace_spec(path: Path, num_prompts: int = 1000, **dataset) -> WorkloadSpec:
    return WorkloadSpec(dataset={"kind": "trace", "path": path, **dataset}, num_prompts=num_prompts)


def test_window_keeps_requests_in_trace_time_and_restarts_the_clock(tmp_path):
    path = small_trace(tmp_path, [0.0, 1.0, 2.0, 3.5, 7.0])
    got = build_requests(trace_spec(path, window_start_s=1.0, window_s=2.5))
    assert got.arrival_s.tolist() == [0.0, 1.0] and got.input_len.tolist() == [11, 12]
    assert got.hash_block_tokens == 4 and got.block_hashes[0].tolist() == [0, 101, 201]


def test_an_empty_window_says_what_the_trace_spans(tmp_path):
    path = small_trace(tmp_path, [0.0, 1.0])
    with pytest.raises(
        TraceError,
        match=r"window_start_s and window_s: the window 5 s .. 6 s holds no requests; the trace spans 0 .. 1 s",
    ):
        build_requests(trace_spec(path, window_start_s=5.0, window_s=1.0))


def test_target_rate_scales_the_gaps_and_keeps_their_shape():
    path = shared_trace("azure_llm_inference_2023_conv.csv")
    base = build_requests(trace_spec(path, num_prompts=2000))
    fast = build_requests(trace_spec(path, num_prompts=2000, target_rate=20.0))
    assert mean_rate(fast.arrival_s) == pytest.approx(20.0)
    ratio = fast.arrival_s[1:] / base.arrival_s[1:]
    np.testing.assert_allclose(ratio, ratio[0])


def test_time_scale_multiplies_arrival_times(tmp_path):
    path = small_trace(tmp_path, [0.0, 1.0, 3.0])
    got = build_requests(trace_spec(path, time_scale=2.0))
    assert got.arrival_s.tolist() == [0.0, 2.0, 6.0] and got.sender_done_s == 6.0


def test_uniform_sample_is_seeded_in_time_order_and_leaves_the_window_alone():
    path = shared_trace("mooncake_conversation_trace.jsonl")
    spec = trace_spec(path, num_prompts=300, sample="uniform", window_s=600)
    a, b = build_requests(spec), build_requests(spec)
    np.testing.assert_array_equal(a.input_len, b.input_len)
    assert len(a) == 300 and np.all(np.diff(a.arrival_s) >= 0)
    first = build_requests(trace_spec(path, num_prompts=300, window_s=600))
    assert a.arrival_s[-1] > first.arrival_s[-1]  # spread over the whole window, not its first 300


def test_a_uniform_sample_of_the_whole_window_is_refused(tmp_path):
    # num_prompts >= the window's requests: the "subset" is every request, as sample: first gives it
    path = small_trace(tmp_path, [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(
        TraceError, match=r"sample: uniform draws workload.num_prompts \(4\) of the 4 requests"
    ):
        build_requests(trace_spec(path, num_prompts=4, sample="uniform"))
    with pytest.raises(TraceError, match=r"\(5\) of the 2 requests in the window"):
        build_requests(trace_spec(path, num_prompts=5, sample="uniform", window_s=1.5))
    assert len(build_requests(trace_spec(path, num_prompts=3, sample="uniform"))) == 3
    assert len(build_requests(trace_spec(path, num_prompts=10))) == 4  # first: num_prompts is an upper bound


def test_length_caps_apply_and_are_counted(tmp_path):
    path = small_trace(tmp_path, [0.0, 1.0, 2.0])
    got = build_requests(trace_spec(path, max_input_len=11, max_output_len=3))
    assert got.input_len.tolist() == [10, 11, 11] and got.output_len.tolist() == [3, 3, 3]
    assert got.num_capped == 3


def test_capping_a_prompt_renames_the_block_it_cuts():
    hashes = [np.array([1, 2, 3]), np.array([1, 2, 4])]
    out = truncate_hashes(hashes, np.array([12, 12]), np.array([6, 12]), block_tokens=4)
    assert out[0][:1].tolist() == [1] and out[0].size == 2 and out[0][1] not in (1, 2, 3, 4)
    assert out[1].tolist() == [1, 2, 4]
    exact = truncate_hashes(hashes, np.array([12, 12]), np.array([8, 12]), block_tokens=4)
    assert exact[0].tolist() == [1, 2]


def test_context_drop_leaves_out_and_counts_requests_that_do_not_fit(tmp_path):
    path = small_trace(tmp_path, [0.0, 1.0, 2.0])
    spec = WorkloadSpec(dataset={"kind": "trace", "path": path}, over_context="drop")
    # context 18: SGLang's max_req_len 17, prompts below 12, outputs <= 17 - prompt - 1: 10+5 and 11+5 run as
    # they are, a 12-token prompt is rejected
    got = build_requests(spec, context_len=18)
    assert got.input_len.tolist() == [10, 11] and got.num_dropped == 1 and got.num_capped == 0
    capped = build_requests(trace_spec(path), context_len=18)
    assert capped.num_capped == 1 and capped.input_len.tolist() == [10, 11, 11]
    assert capped.output_len.tolist() == [5, 5, 5]


def test_a_file_without_times_needs_a_rate(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"input_lens": [5, 6], "output_lens": [2, 3]}) + "\n")
    with pytest.raises(TraceError, match="records no arrival times; set use_timestamps: false"):
        build_requests(trace_spec(path))
    got = build_requests(
        WorkloadSpec(
            dataset={"kind": "trace", "path": path, "use_timestamps": False}, request_rate=2.0, seed=3
        )
    )
    assert got.input_len.tolist() == [5, 6] and got.arrival_s[1] > 0


@pytest.mark.parametrize(
    "dataset,match",
    [
        ({"target_rate": 2.0, "time_scale": 2.0}, "either target_rate or time_scale"),
        ({"target_rate": 2.0, "use_timestamps": False}, "need use_timestamps: true"),
        ({"sample": "random"}, "sample"),
        ({"window_s": 0}, "window_s"),
    ],
)
def test_invalid_transform_options_are_rejected(tmp_path, dataset, match):
    with pytest.raises(ValidationError, match=match):
        WorkloadSpec(dataset={"kind": "trace", "path": tmp_path / "x.jsonl", **dataset})


@settings(max_examples=60, deadline=None)
@given(
    gaps=st.lists(st.floats(0.0, 10.0), min_size=2, max_size=40),
    rate=st.floats(0.01, 1000.0),
    cap_in=st.integers(2, 50),
)
def test_retime_and_cap_keep_a_valid_trace(gaps, rate, cap_in):
    times = np.concatenate(([0.0], np.cumsum(gaps)))
    n = times.size
    trace = Trace(times, np.arange(1, n + 1) * 3, np.full(n, 4), None, "simperf")
    if times[-1] > 1e-9:  # below that the span is noise and there is no rate to scale
        fast = retime(trace, target_rate=rate)
        assert mean_rate(fast.arrival_s) == pytest.approx(rate, rel=1e-9)
        assert np.all(np.diff(fast.arrival_s) >= 0)
    capped, changed = cap_lengths(trace, cap_in, None)
    assert capped.input_len.max() <= cap_in and changed == int(np.sum(trace.input_len > cap_in))
    mid = window(trace, float(times[n // 2]), None)
    assert mid.arrival_s[0] == 0.0 and len(mid) >= n - n // 2


def test_mooncake_window_keeps_block_ids_aligned_with_prompts():
    trace = window(read_trace(shared_trace("mooncake_conversation_trace.jsonl")), 600.0, 60.0)
    blocks = np.array([h.size for h in trace.block_hashes])
    assert np.all(blocks == -(-trace.input_len // 512))
