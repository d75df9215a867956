"""Transforms of a trace, so that sweeps can vary the load of a real trace: window, sample, re-time, cap.

Each takes and returns a `Trace` (times stay non-decreasing and start at 0) and is a pure function of its inputs;
`build_requests` applies them in the order documented on `TraceDataset`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simperf.workload.trace import Trace, TraceError


def select(trace: Trace, index: np.ndarray) -> Trace:
    """The requests at `index` (sorted positions), times shifted so the first is at 0."""
    index = np.asarray(index, dtype=np.int64)
    arrival = trace.arrival_s[index]
    if arrival.size:
        arrival = arrival - arrival[0]
    return replace(
        trace,
        arrival_s=arrival,
        input_len=trace.input_len[index],
        output_len=trace.output_len[index],
        block_hashes=None if trace.block_hashes is None else [trace.block_hashes[i] for i in index],
        accept_len=None if trace.accept_len is None else trace.accept_len[index],
    )


def window(trace: Trace, start_s: float, duration_s: float | None) -> Trace:
    """Requests arriving in [start_s, start_s + duration_s) of trace time (duration None: to the end)."""
    if start_s == 0 and duration_s is None:
        return trace
    t = trace.arrival_s
    keep = t >= start_s
    if duration_s is not None:
        keep &= t < start_s + duration_s
    index = np.flatnonzero(keep)
    if index.size == 0:
        end = "the end" if duration_s is None else f"{start_s + duration_s:g} s"
        # named by its fields: the message said 'window 100 s .. the end', a word the scenario does not use
        fields = "workload.dataset.window_start_s" + ("" if duration_s is None else " and window_s")
        raise TraceError(
            f"{fields}: the window {start_s:g} s .. {end} holds no requests; the trace spans 0 .. "
            f"{float(t[-1]):g} s"
        )
    return select(trace, index)


def choose(trace: Trace, count: int, how: str, rng: np.random.RandomState) -> Trace:
    """`count` requests: the first ones, or a uniform random subset without replacement (time order kept)."""
    if count >= len(trace):
        return trace
    if how == "first":
        return select(trace, np.arange(count))
    if how == "uniform":
        return select(trace, np.sort(rng.choice(len(trace), size=count, replace=False)))
    raise ValueError(f"unknown sampling {how!r}; allowed: first, uniform")


def mean_rate(arrival_s: np.ndarray) -> float:
    """Requests per second over the trace's span: (n - 1) gaps in (last - first) seconds."""
    span = float(arrival_s[-1] - arrival_s[0]) if arrival_s.size > 1 else 0.0
    return (arrival_s.size - 1) / span if span > 0 else float("inf")


def retime(trace: Trace, target_rate: float | None = None, time_scale: float | None = None) -> Trace:
    """Scale arrival times: by `time_scale`, or so that the mean rate becomes `target_rate` (gaps keep their
    shape, so burstiness is preserved)."""
    if target_rate is None and time_scale is None:
        return trace
    if target_rate is not None:
        rate = mean_rate(trace.arrival_s)
        if not np.isfinite(rate):
            raise TraceError(
                "target_rate: the requests all arrive at the same instant; there is no rate to scale"
            )
        time_scale = rate / target_rate
    assert time_scale is not None
    if trace.arrival_s.size > 1 and np.all(trace.arrival_s == trace.arrival_s[0]):
        # scaling one instant moves nothing between requests: the run was the unscaled one
        raise TraceError("time_scale: the requests all arrive at the same instant; there is nothing to scale")
    return replace(trace, arrival_s=trace.arrival_s * time_scale)


def cap_lengths(trace: Trace, max_input_len: int | None, max_output_len: int | None) -> tuple[Trace, int]:
    """Cap prompt and output lengths; returns the trace and how many requests changed. Prefix-block ids are cut
    to the shorter prompt (see `truncate_hashes`)."""
    input_len, output_len = trace.input_len, trace.output_len
    new_in = input_len if max_input_len is None else np.minimum(input_len, max_input_len)
    new_out = output_len if max_output_len is None else np.minimum(output_len, max_output_len)
    changed = int(np.count_nonzero((new_in != input_len) | (new_out != output_len)))
    if not changed:
        return trace, 0
    hashes = trace.block_hashes
    if hashes is not None:
        hashes = truncate_hashes(hashes, input_len, new_in, trace.hash_block_tokens)
    return replace(trace, input_len=new_in, output_len=new_out, block_hashes=hashes), changed


def truncate_hashes(
    hashes: list[np.ndarray], old_input: np.ndarray, new_input: np.ndarray, block_tokens: int
) -> list[np.ndarray]:
    """Block ids of prompts shortened from old_input to new_input tokens.

    Whole blocks keep their ids; a block the cut leaves partial holds different content than before, so it gets
    a fresh id no other request uses (ids above every id in the trace).
    """
    fresh = 1 + max((int(h.max()) for h in hashes if h.size), default=-1)
    out = list(hashes)
    for i in np.flatnonzero(new_input < old_input):
        n = int(new_input[i])
        full, rest = divmod(n, block_tokens)
        ids = hashes[i][:full]
        if hashes[i].size <= full:  # the ids never covered the cut: nothing partial to rename
            out[i] = ids
            continue
        if rest:
            ids = np.append(ids, fresh)
            fresh += 1
        out[i] = ids.astype(np.int64)
    return out
