"""The requests a benchmark client would send: lengths, send times and warm-up, from a WorkloadSpec.

Random and fixed datasets reproduce sglang.bench_serving's NumPy RNG call order for `--dataset-name random`
(`np.random.seed(seed)`; input lengths; output lengths; then one Exp(1/rate) gap per request), so a given seed
yields the same lengths and send times as the real tool. docs/workload.md lists where equality stops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simperf.scenario.models import FixedDataset, RandomDataset, TraceDataset, WorkloadSpec
from simperf.workload.arrivals import poisson_arrivals
from simperf.workload.lengths import cap_to_context, random_lengths, subtract_special_tokens
from simperf.workload.trace import HASH_BLOCK_TOKENS, read_trace

# bench_serving's warm-up request generates at most this many tokens.
WARMUP_MAX_OUTPUT_TOKENS = 32


@dataclass
class RequestSet:
    input_len: np.ndarray  # int64, prompt tokens per request (bench_serving's prompt_len)
    output_len: np.ndarray  # int64, tokens to generate (ignore_eos: exactly this many)
    arrival_s: np.ndarray  # float64, client send time ignoring the concurrency limit, from benchmark start
    block_hashes: list[np.ndarray] | None = None  # per-request prefix-block ids (traces that have them)
    warmup: tuple[int, int] | None = None  # (input_len, output_len) of the warm-up request
    warmup_count: int = 0  # identical warm-up requests sent concurrently (--warmup-requests)
    hash_block_tokens: int | None = None  # tokens per block named in block_hashes
    sender_done_s: float = 0.0  # the client's generator ends here; measured duration >= this
    num_capped: int = 0  # requests shortened to fit context_len
    prompt_special_tokens: int = 0  # tokens the server's tokenizer adds to each prompt (BOS) beyond input_len
    source: str = ""  # which dataset produced this, for reports

    def __post_init__(self) -> None:
        self.input_len = np.asarray(self.input_len, dtype=np.int64)
        self.output_len = np.asarray(self.output_len, dtype=np.int64)
        self.arrival_s = np.asarray(self.arrival_s, dtype=np.float64)
        n = self.input_len.shape[0]
        if self.output_len.shape != (n,) or self.arrival_s.shape != (n,):
            raise ValueError("input_len, output_len and arrival_s must have the same length")
        if n and np.any(np.diff(self.arrival_s) < 0):
            raise ValueError("arrival_s must be non-decreasing")
        if self.block_hashes is not None and len(self.block_hashes) != n:
            raise ValueError("block_hashes must have one entry per request")

    def __len__(self) -> int:
        return int(self.input_len.shape[0])


def build_requests(
    workload: WorkloadSpec, context_len: int | None = None, *, num_special_tokens: int = 0
) -> RequestSet:
    """Requests for one benchmark run.

    context_len: shorten requests so SGLang would accept them (prompt + output < context_len; see lengths.py);
    the count changed is num_capped.
    num_special_tokens: for random/fixed datasets, bench_serving subtracts the tokenizer's added special tokens
    (`num_special_tokens_to_add()`, 1 for a BOS tokenizer) from each sampled prompt length; pass that count to
    get bench_serving's prompt_len exactly. The server re-adds them; `prompt_special_tokens` carries the count.
    """
    dataset = workload.dataset
    rng = np.random.RandomState(workload.seed)
    block_hashes: list[np.ndarray] | None = None
    hash_block_tokens: int | None = None
    special = 0
    if isinstance(dataset, RandomDataset | FixedDataset):
        ratio = dataset.range_ratio if isinstance(dataset, RandomDataset) else 1.0
        n = workload.num_prompts
        input_len = random_lengths(rng, dataset.input_len, ratio, n)
        output_len = random_lengths(rng, dataset.output_len, ratio, n)
        input_len = subtract_special_tokens(input_len, num_special_tokens)
        special = max(num_special_tokens, 0)
        arrivals = poisson_arrivals(rng, n, workload.rate)
        arrival_s, sender_done_s = arrivals.send_s, arrivals.sender_done_s
        source = f"{dataset.kind} {dataset.input_len}/{dataset.output_len}"
    elif isinstance(dataset, TraceDataset):
        trace = read_trace(dataset.path, limit=workload.num_prompts)
        input_len, output_len = trace.input_len, trace.output_len
        block_hashes = trace.block_hashes
        hash_block_tokens = HASH_BLOCK_TOKENS if block_hashes is not None else None
        if dataset.use_timestamps:
            arrival_s = trace.arrival_s
            sender_done_s = float(arrival_s[-1])
        else:
            arrivals = poisson_arrivals(rng, len(trace), workload.rate)
            arrival_s, sender_done_s = arrivals.send_s, arrivals.sender_done_s
        source = f"trace {dataset.path.name} ({trace.format})"
    else:  # pragma: no cover - the pydantic union admits only the kinds above
        raise TypeError(f"unsupported dataset {type(dataset).__name__}")

    num_capped = 0
    if context_len is not None:
        capped = cap_to_context(input_len, output_len, context_len)
        input_len, output_len, num_capped = capped.input_len, capped.output_len, capped.num_capped

    warmup = None
    if workload.warmup_requests > 0 and len(input_len) > 0:
        warmup = (int(input_len[0]), int(min(output_len[0], WARMUP_MAX_OUTPUT_TOKENS)))
    return RequestSet(
        input_len=input_len,
        output_len=output_len,
        arrival_s=arrival_s,
        block_hashes=block_hashes,
        warmup=warmup,
        warmup_count=workload.warmup_requests if warmup is not None else 0,
        hash_block_tokens=hash_block_tokens,
        sender_done_s=sender_done_s,
        num_capped=num_capped,
        prompt_special_tokens=special,
        source=source,
    )
