"""How big a prediction is before it runs: requests, streamed tokens, memory and time, and the limit on memory.

The simulator keeps one record per request and one emit time per streamed token (the metrics need every
inter-token latency), so memory grows with the tokens a run streams. A run that would not fit is refused up front
with the numbers, instead of being killed for memory minutes later.

The coefficients are measurements, not guesses, and the answer is an estimate (labelled so): peak resident memory
of `simperf predict` (`/usr/bin/time -f %M`, Python 3.11, this project's 2-core CI machine kind) on Qwen3-8B/H100
random workloads was 164 MB at 500 requests x 16 tokens, 283 MB at 100,000 x 16 (≈1.2 kB per request), and
679 MB at 20,000 x 1,024 tokens against 191 MB at 20,000 x 16 (≈48 B per streamed token); the estimate rounds
those up (1.5 kB per request, 64 B per token, 200 MB base) so that `--requests` output and summarising fit too.
Time: docs/performance.md measured 2,400-6,950 simulated requests/s and ~3 M streamed tokens/s.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simperf.scenario.models import (
    FixedDataset,
    MultiTurnDataset,
    RandomDataset,
    SharedPrefixDataset,
    WorkloadSpec,
)

if TYPE_CHECKING:
    from simperf.workload.requests import RequestSet

BASE_BYTES = 200 * 10**6
BYTES_PER_REQUEST = 1_500
BYTES_PER_TOKEN = 64
REQUESTS_PER_S = 3_000.0
TOKENS_PER_S = 3.0e6
BYTES_PER_PROMPT_BLOCK = 8  # an int64 block id
# The default memory limit: this many bytes, or half the machine's memory if that is less (docs/scenario.md).
DEFAULT_LIMIT_BYTES = 8 * 2**30
PROGRESS_AFTER_S = 2.0  # runs expected to take longer show a progress bar


class RunTooLarge(ValueError):
    """A prediction that would need more memory than allowed; the message says how much and how to allow it."""


@dataclass(frozen=True)
class RunSize:
    requests: int
    output_tokens: float  # expected streamed tokens (mean x requests where lengths are drawn)
    # prefix-block ids the generator writes for the prompts, one int64 each: a multi-turn conversation's turn holds
    # its own copy of every earlier turn's blocks (workload/generators.py multi_turn), so long prompts dominate
    prompt_blocks: float = 0.0

    @property
    def memory_bytes(self) -> float:
        return (
            BASE_BYTES
            + BYTES_PER_REQUEST * self.requests
            + BYTES_PER_TOKEN * self.output_tokens
            + BYTES_PER_PROMPT_BLOCK * self.prompt_blocks
        )

    @property
    def seconds(self) -> float:
        return self.requests / REQUESTS_PER_S + self.output_tokens / TOKENS_PER_S


def _mean_drawn(full_len: int, range_ratio: float) -> float:
    """Mean of bench_serving's U{max(int(L*r), 1) .. L}."""
    return (max(int(full_len * range_ratio), 1) + full_len) / 2.0


def expected_size(workload: WorkloadSpec) -> RunSize | None:
    """From the scenario alone (before any request is drawn); None for a trace (known once it is read)."""
    d = workload.dataset
    if isinstance(d, RandomDataset):
        return RunSize(workload.num_prompts, workload.num_prompts * _mean_drawn(d.output_len, d.range_ratio))
    if isinstance(d, FixedDataset):
        return RunSize(workload.num_prompts, float(workload.num_prompts) * d.output_len)
    if isinstance(d, SharedPrefixDataset):
        n = d.num_groups * d.prompts_per_group
        return RunSize(n, n * _mean_drawn(d.output_len, d.range_ratio))
    if isinstance(d, MultiTurnDataset):
        n = d.num_conversations * d.turns
        # turn k re-sends the system prompt and the k earlier messages and answers: the mean prompt over the turns
        per_turn = _mean_drawn(d.input_len, d.range_ratio) + _mean_drawn(d.output_len, d.range_ratio)
        prompt = d.system_prompt_len + (d.turns - 1) / 2 * per_turn + _mean_drawn(d.input_len, d.range_ratio)
        return RunSize(n, n * _mean_drawn(d.output_len, d.range_ratio), n * (prompt / d.block_tokens + 1))
    return None


def machine_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX
        return None


def memory_limit_bytes(limit_gb: float | None = None) -> float:
    """The limit a run is held to: `limit_gb` when given (0 = none), else the documented default."""
    if limit_gb is not None:
        return float("inf") if limit_gb == 0 else limit_gb * 1e9
    machine = machine_memory_bytes()
    return min(DEFAULT_LIMIT_BYTES, machine // 2) if machine else DEFAULT_LIMIT_BYTES


def check_size(size: RunSize, limit_bytes: float, field: str = "workload.num_prompts") -> None:
    if size.memory_bytes <= limit_bytes:
        return
    prompts = f" with ~{size.prompt_blocks:,.0f} prompt prefix blocks" if size.prompt_blocks else ""
    raise RunTooLarge(
        f"{field}: {size.requests:,} requests{prompts} streaming ~{size.output_tokens:,.0f} tokens need about "
        f"{size.memory_bytes / 1e9:.1f} GB to simulate (estimate; limit {limit_bytes / 1e9:.1f} GB) and about "
        f"{describe_seconds(size.seconds)}; simulate fewer requests{' or shorter prompts' if prompts else ''}, "
        "or raise the limit with --max-memory-gb "
        "(docs/scenario.md, 'Size limits')"
    )


def check_workload_size(workload: WorkloadSpec, limit_bytes: float) -> None:
    """Refuse a workload that would not fit `limit_bytes`, before any request is drawn (a trace's size is known only
    once it is read: check_requests_size)."""
    expected = expected_size(workload)
    if expected is not None:
        # a conversation's length, not the request count, can be what does not fit: name the dataset then
        field = (
            "workload.dataset" if isinstance(workload.dataset, MultiTurnDataset) else "workload.num_prompts"
        )
        check_size(expected, limit_bytes, field)


def check_requests_size(requests: RequestSet, limit_bytes: float) -> None:
    """Refuse drawn requests whose streamed tokens would not fit `limit_bytes` (a trace's, whose size the scenario
    did not say)."""
    check_size(RunSize(len(requests), float(requests.output_len.sum())), limit_bytes, "workload")


def describe_seconds(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
