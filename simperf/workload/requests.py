"""The requests a benchmark client would send: lengths, send times, prefix blocks and warm-up, from a WorkloadSpec.

Random and fixed datasets reproduce sglang.bench_serving's NumPy RNG call order for `--dataset-name random`
(`np.random.seed(seed)`; input lengths; output lengths; then one Exp(1/rate) gap per request), so a given seed
yields the same lengths and send times as the real tool. docs/workload.md lists where equality stops; traces,
their transforms and the shared-prefix generators are described in docs/traces.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simperf.scenario.models import (
    FixedDataset,
    MultiTurnDataset,
    RandomDataset,
    SharedPrefixDataset,
    TraceDataset,
    WorkloadSpec,
)
from simperf.workload.arrivals import client_arrivals
from simperf.workload.generators import multi_turn, shared_prefix
from simperf.workload.lengths import (
    cap_to_context,
    legacy_output_lengths,
    random_lengths,
    subtract_special_tokens,
)
from simperf.workload.trace import Trace, TraceError, read_trace
from simperf.workload.transforms import cap_lengths, choose, retime, truncate_hashes, window

# bench_serving's warm-up request generates at most this many tokens.
WARMUP_MAX_OUTPUT_TOKENS = 32


@dataclass
class RequestSet:
    input_len: np.ndarray  # int64, prompt tokens per request (bench_serving's prompt_len)
    output_len: np.ndarray  # int64, tokens to generate (ignore_eos: exactly this many)
    arrival_s: np.ndarray  # float64, client send time ignoring the concurrency limit, from benchmark start
    # per-request prefix-block ids, hash_block_tokens tokens each (traces that have them, generators); may name
    # blocks past the prompt (multi_turn names the answer's too, so the next turn can hit them)
    block_hashes: list[np.ndarray] | None = None
    warmup: tuple[int, int] | None = None  # (input_len, output_len) of the warm-up request
    warmup_count: int = 0  # identical warm-up requests sent concurrently (--warmup-requests)
    hash_block_tokens: int | None = None  # tokens per block named in block_hashes
    sender_done_s: float = 0.0  # the client's generator ends here; measured duration >= this
    num_capped: int = 0  # requests shortened to fit context_len (or the trace's max_input_len/max_output_len)
    prompt_special_tokens: int = 0  # tokens the server's tokenizer adds to each prompt (BOS) beyond input_len
    source: str = ""  # which dataset produced this, for reports
    accept_len: np.ndarray | None = None  # float64 per request: mean accepted tokens per verify step (traces)
    follows: np.ndarray | None = (
        None  # int64: request whose answer this prompt re-sends (multi_turn), -1 none
    )
    num_dropped: int = 0  # requests left out because they do not fit the context (over_context: drop)
    notes: tuple[str, ...] = ()  # what the dataset left out or changed, for reports (e.g. failed requests)

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
        for name in ("accept_len", "follows"):
            values = getattr(self, name)
            if values is not None and np.shape(values) != (n,):
                raise ValueError(f"{name} must have one entry per request")

    def __len__(self) -> int:
        return int(self.input_len.shape[0])


def build_requests(
    workload: WorkloadSpec,
    context_len: int | None = None,
    *,
    num_special_tokens: int = 0,
    kv_pool_tokens: int | None = None,
) -> RequestSet:
    """Requests for one benchmark run.

    context_len: requests that SGLang would not accept or would cut short (prompt or prompt + output over the
    limits of lengths.py::max_request_lengths, which kv_pool_tokens, the server's KV pool per rank, lowers) are
    shortened to what it would run (`over_context: cap`, counted in num_capped) or left out (`drop`, counted in
    num_dropped).
    num_special_tokens: for random/fixed datasets, bench_serving subtracts the tokenizer's added special tokens
    (`num_special_tokens_to_add()`, 1 for a BOS tokenizer) from each sampled prompt length; pass that count to
    get bench_serving's prompt_len exactly. The server re-adds them; `prompt_special_tokens` carries the count.
    """
    dataset = workload.dataset
    rng = np.random.RandomState(workload.seed)
    block_hashes: list[np.ndarray] | None = None
    hash_block_tokens: int | None = None
    accept_len: np.ndarray | None = None
    follows: np.ndarray | None = None
    notes: tuple[str, ...] = ()
    special = 0
    num_capped = 0

    def client(n: int) -> tuple[np.ndarray, float]:
        arrivals = client_arrivals(rng, n, workload.rate, workload.arrival_process, workload.burstiness)
        return arrivals.send_s, arrivals.sender_done_s

    if isinstance(dataset, RandomDataset | FixedDataset):
        ratio = dataset.range_ratio if isinstance(dataset, RandomDataset) else 1.0
        n = workload.num_prompts
        input_len = random_lengths(rng, dataset.input_len, ratio, n)
        legacy = isinstance(dataset, RandomDataset) and dataset.length_rule == "sample_random_requests"
        if legacy:
            output_len = legacy_output_lengths(rng, dataset.output_len, ratio, n)
            zero = int(np.count_nonzero(output_len == 0))
            if zero:
                # max_new_tokens=0: SGLang still returns the token its prefill samples (the request finishes on
                # its first output token), so the client counts one
                output_len = np.maximum(output_len, 1)
                notes = (f"{zero} requests drew output length 0 (sample_random_requests); priced as 1 token",)
        else:
            output_len = random_lengths(rng, dataset.output_len, ratio, n)
            input_len = subtract_special_tokens(input_len, num_special_tokens)
        special = 0 if legacy else max(num_special_tokens, 0)
        arrival_s, sender_done_s = client(n)
        source = f"{dataset.kind} {dataset.input_len}/{dataset.output_len}"
    elif isinstance(dataset, TraceDataset):
        trace, num_capped = _trace_requests(dataset, workload)
        input_len, output_len = trace.input_len, trace.output_len
        block_hashes, accept_len, notes = trace.block_hashes, trace.accept_len, trace.skipped
        hash_block_tokens = trace.hash_block_tokens if block_hashes is not None else None
        if dataset.use_timestamps:
            arrival_s = trace.arrival_s
            sender_done_s = float(arrival_s[-1])
        else:
            arrival_s, sender_done_s = client(len(trace))
        source = f"trace {dataset.path.name} ({trace.format})"
    elif isinstance(dataset, SharedPrefixDataset):
        made = shared_prefix(dataset, rng, workload.seed)
        input_len, output_len = made.input_len, made.output_len
        block_hashes, hash_block_tokens = made.block_hashes, made.block_tokens
        arrival_s, sender_done_s = client(len(input_len))
        source = (
            f"shared_prefix {dataset.num_groups}x{dataset.prompts_per_group} "
            f"{dataset.system_prompt_len}+{dataset.question_len}/{dataset.output_len}"
        )
    elif isinstance(dataset, MultiTurnDataset):
        made = multi_turn(dataset, rng, workload.rate, workload.arrival_process, workload.burstiness)
        input_len, output_len = made.input_len, made.output_len
        block_hashes, hash_block_tokens, follows = made.block_hashes, made.block_tokens, made.follows
        assert made.arrival_s is not None
        arrival_s, sender_done_s = made.arrival_s, made.sender_done_s
        source = f"multi_turn {dataset.num_conversations}x{dataset.turns} +{dataset.input_len}/{dataset.output_len}"
    else:  # pragma: no cover - the pydantic union admits only the kinds above
        raise TypeError(f"unsupported dataset {type(dataset).__name__}")

    num_dropped = 0
    if context_len is not None:
        capped = cap_to_context(input_len, output_len, context_len, kv_pool_tokens)
        if workload.over_context == "drop" and capped.num_capped:
            keep = (capped.input_len == input_len) & (capped.output_len == output_len)
            num_dropped = int(np.count_nonzero(~keep))
            if num_dropped == len(input_len):
                raise TraceError(f"every request exceeds the context length ({context_len} tokens)")
            index = np.flatnonzero(keep)
            input_len, output_len, arrival_s = input_len[index], output_len[index], arrival_s[index]
            block_hashes = None if block_hashes is None else [block_hashes[i] for i in index]
            accept_len = None if accept_len is None else accept_len[index]
            follows = None if follows is None else _renumber(follows, keep)
        elif capped.num_capped:
            if block_hashes is not None and hash_block_tokens is not None:
                block_hashes = truncate_hashes(block_hashes, input_len, capped.input_len, hash_block_tokens)
            input_len, output_len = capped.input_len, capped.output_len
            num_capped += capped.num_capped

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
        accept_len=accept_len,
        follows=follows,
        num_dropped=num_dropped,
        notes=notes,
    )


def _trace_requests(dataset: TraceDataset, workload: WorkloadSpec) -> tuple[Trace, int]:
    """Read a trace and apply its transforms: window -> choose num_prompts -> re-time -> cap lengths."""
    whole_file = dataset.window_s is not None or dataset.window_start_s > 0 or dataset.sample != "first"
    trace = read_trace(dataset.path, limit=None if whole_file else workload.num_prompts, run=dataset.run)
    trace_len = len(trace)
    if dataset.use_timestamps and not trace.has_times:
        raise TraceError(
            f"{dataset.path}: this {trace.format} file records no arrival times; "
            "set use_timestamps: false and a request_rate"
        )
    trace = window(trace, dataset.window_start_s, dataset.window_s)
    if dataset.sample == "uniform" and workload.num_prompts >= len(trace):
        # a "subset" of every request is the whole window, in the same order as sample: first
        raise TraceError(
            f"workload.dataset.sample: uniform draws workload.num_prompts ({workload.num_prompts:,}) of the "
            f"{len(trace):,} requests {'in the window' if len(trace) < trace_len else 'of ' + str(dataset.path)}, "
            "so it keeps them all; lower num_prompts or drop sample"
        )
    # uniform sampling draws from its own stream so that the client's arrival gaps stay bench_serving's
    trace = choose(trace, workload.num_prompts, dataset.sample, np.random.RandomState(workload.seed + 1))
    trace = retime(trace, dataset.target_rate, dataset.time_scale)
    return cap_lengths(trace, dataset.max_input_len, dataset.max_output_len)


def _renumber(follows: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """`follows` indices after keeping only `keep`; a request whose predecessor was left out follows none."""
    new_index = np.cumsum(keep) - 1
    kept = follows[keep]
    valid = kept >= 0
    parent_kept = np.zeros_like(valid)
    parent_kept[valid] = keep[kept[valid]]
    return np.where(parent_kept, new_index[np.maximum(kept, 0)], -1).astype(np.int64)
