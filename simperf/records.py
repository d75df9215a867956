"""The simulator's output: one row per request, columnar, plus the streamed chunks of every request.

Chunks are stored CSR-style: request i's chunks are chunk_time_s[chunk_offsets[i]:chunk_offsets[i+1]] with
chunk_num_tokens giving how many tokens each chunk carried (1 without speculative decoding). Times are seconds
since the benchmark start, as the client sees them (egress latency included). Metrics are pure functions of this.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class RequestRecords:
    request_id: np.ndarray  # int64
    send_s: np.ndarray  # float64: when the client sent it (after acquiring the concurrency semaphore)
    input_len: np.ndarray  # int64: prompt tokens (dataset prompt_len)
    output_len: np.ndarray  # int64: tokens generated
    first_token_s: np.ndarray  # float64
    finish_s: np.ndarray  # float64
    chunk_offsets: np.ndarray  # int64, len n+1
    chunk_time_s: np.ndarray  # float64
    chunk_num_tokens: np.ndarray  # int64
    dp_rank: np.ndarray  # int64: DP rank that served it
    retractions: np.ndarray  # int64: times it was retracted and re-queued
    cached_tokens: np.ndarray  # int64: prompt tokens served from the prefix cache
    duration_s: float = 0.0  # wall time of the measured phase (first send to last finish)
    extra: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.request_id.shape[0])
