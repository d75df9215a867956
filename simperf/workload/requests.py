"""The requests a benchmark client would send: lengths, send times, prefix blocks and warm-up, from a WorkloadSpec.

Random and fixed datasets reproduce sglang.bench_serving's NumPy RNG call order for `--dataset-name random`
(`np.random.seed(seed)`; input lengths; output lengths; then one Exp(1/rate) gap per request), so a given seed
yields the same lengths and send times as the real tool. docs/workload.md lists where equality stops; traces,
their transforms and the shared-prefix generators are described in docs/traces.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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
    max_request_lengths,
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
    rng = np.random.RandomState(workload.seed)
    drawn = _draw(workload, rng, num_special_tokens)
    num_dropped = 0
    if context_len is not None:
        drawn, num_dropped = _fit_to_context(drawn, context_len, kv_pool_tokens, workload.over_context)

    warmup = None
    if workload.warmup_requests > 0 and len(drawn.input_len) > 0:
        warmup = (int(drawn.input_len[0]), int(min(drawn.output_len[0], WARMUP_MAX_OUTPUT_TOKENS)))
    return RequestSet(
        input_len=drawn.input_len,
        output_len=drawn.output_len,
        arrival_s=drawn.arrival_s,
        block_hashes=drawn.block_hashes,
        warmup=warmup,
        warmup_count=workload.warmup_requests if warmup is not None else 0,
        hash_block_tokens=drawn.hash_block_tokens,
        sender_done_s=drawn.sender_done_s,
        num_capped=drawn.num_capped,
        prompt_special_tokens=drawn.special,
        source=drawn.source,
        accept_len=drawn.accept_len,
        follows=drawn.follows,
        num_dropped=num_dropped,
        notes=drawn.notes,
    )


@dataclass
class _Drawn:
    """The requests a dataset yields, before they are fitted to the server's context (RequestSet's fields)."""

    input_len: np.ndarray
    output_len: np.ndarray
    arrival_s: np.ndarray
    sender_done_s: float
    source: str
    block_hashes: list[np.ndarray] | None = None
    hash_block_tokens: int | None = None
    accept_len: np.ndarray | None = None
    follows: np.ndarray | None = None
    notes: tuple[str, ...] = ()
    special: int = 0  # RequestSet.prompt_special_tokens
    num_capped: int = 0


def _draw(workload: WorkloadSpec, rng: np.random.RandomState, num_special_tokens: int) -> _Drawn:
    """The requests of the workload's dataset, drawn from `rng` (seeded once per run) in bench_serving's order."""
    dataset = workload.dataset
    if isinstance(dataset, RandomDataset | FixedDataset):
        return _draw_random(dataset, workload, rng, num_special_tokens)
    if isinstance(dataset, TraceDataset):
        return _draw_trace(dataset, workload, rng)
    if isinstance(dataset, SharedPrefixDataset):
        return _draw_shared_prefix(dataset, workload, rng)
    if isinstance(dataset, MultiTurnDataset):
        return _draw_multi_turn(dataset, workload, rng)
    # the pydantic union admits only the kinds above
    raise TypeError(f"unsupported dataset {type(dataset).__name__}")  # pragma: no cover


def _client_send_times(
    rng: np.random.RandomState, n: int, workload: WorkloadSpec
) -> tuple[np.ndarray, float]:
    """The client's send time of each of n requests and when its generator ends."""
    arrivals = client_arrivals(rng, n, workload.rate, workload.arrival_process, workload.burstiness)
    return arrivals.send_s, arrivals.sender_done_s


def _draw_random(
    dataset: RandomDataset | FixedDataset,
    workload: WorkloadSpec,
    rng: np.random.RandomState,
    num_special_tokens: int,
) -> _Drawn:
    """bench_serving's random dataset (a fixed one: no spread): input lengths, output lengths, then send times."""
    ratio = dataset.range_ratio if isinstance(dataset, RandomDataset) else 1.0
    n = workload.num_prompts
    input_len = random_lengths(rng, dataset.input_len, ratio, n)
    legacy = isinstance(dataset, RandomDataset) and dataset.length_rule == "sample_random_requests"
    notes: tuple[str, ...] = ()
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
    arrival_s, sender_done_s = _client_send_times(rng, n, workload)
    return _Drawn(
        input_len,
        output_len,
        arrival_s,
        sender_done_s,
        source=f"{dataset.kind} {dataset.input_len}/{dataset.output_len}",
        notes=notes,
        special=0 if legacy else max(num_special_tokens, 0),
    )


def _draw_trace(dataset: TraceDataset, workload: WorkloadSpec, rng: np.random.RandomState) -> _Drawn:
    """A trace's requests after its transforms, sent at its own times or at the client's."""
    trace, num_capped = _trace_requests(dataset, workload)
    notes: tuple[str, ...] = ()
    if trace.skipped:
        notes = (
            f"{len(trace.skipped):,} failed request(s) of the recorded run left out (first: {trace.skipped[0]})",
        )
    if "num_prompts" in workload.model_fields_set and len(trace) < workload.num_prompts:
        # bench_serving too replays what the file holds; said, since a run of 3 requests where 500 were asked for
        # predicts another load. ("Set it high to replay a whole window" is the documented use: no error.)
        within = "in its window" if dataset.window_s is not None or dataset.window_start_s > 0 else "in all"
        notes = (
            *notes,
            f"workload.num_prompts is {workload.num_prompts:,} and the trace holds {len(trace):,} requests "
            f"{within}: all {len(trace):,} replayed",
        )
    block_hashes = trace.block_hashes
    if dataset.use_timestamps:
        arrival_s = trace.arrival_s
        sender_done_s = float(arrival_s[-1])
    else:
        arrival_s, sender_done_s = _client_send_times(rng, len(trace), workload)
    return _Drawn(
        trace.input_len,
        trace.output_len,
        arrival_s,
        sender_done_s,
        source=f"trace {dataset.path.name} ({trace.format})",
        block_hashes=block_hashes,
        hash_block_tokens=trace.hash_block_tokens if block_hashes is not None else None,
        accept_len=trace.accept_len,
        notes=notes,
        num_capped=num_capped,
    )


def _draw_shared_prefix(
    dataset: SharedPrefixDataset, workload: WorkloadSpec, rng: np.random.RandomState
) -> _Drawn:
    """Groups of prompts that share a system prompt, sent at the client's times."""
    made = shared_prefix(dataset, rng, workload.seed)
    arrival_s, sender_done_s = _client_send_times(rng, len(made.input_len), workload)
    return _Drawn(
        made.input_len,
        made.output_len,
        arrival_s,
        sender_done_s,
        source=(
            f"shared_prefix {dataset.num_groups}x{dataset.prompts_per_group} "
            f"{dataset.system_prompt_len}+{dataset.question_len}/{dataset.output_len}"
        ),
        block_hashes=made.block_hashes,
        hash_block_tokens=made.block_tokens,
    )


def _draw_multi_turn(dataset: MultiTurnDataset, workload: WorkloadSpec, rng: np.random.RandomState) -> _Drawn:
    """Conversations whose turns re-send the earlier ones; the generator times the turns itself."""
    made = multi_turn(dataset, rng, workload.rate, workload.arrival_process, workload.burstiness)
    assert made.arrival_s is not None
    return _Drawn(
        made.input_len,
        made.output_len,
        made.arrival_s,
        made.sender_done_s,
        source=f"multi_turn {dataset.num_conversations}x{dataset.turns} +{dataset.input_len}/{dataset.output_len}",
        block_hashes=made.block_hashes,
        hash_block_tokens=made.block_tokens,
        follows=made.follows,
    )


def _fit_to_context(
    drawn: _Drawn, context_len: int, kv_pool_tokens: int | None, over_context: str
) -> tuple[_Drawn, int]:
    """The requests SGLang would run within context_len (and the KV pool): those over it left out (`drop`) or
    shortened (`cap`); with how many were left out."""
    input_len, output_len = drawn.input_len, drawn.output_len
    capped = cap_to_context(input_len, output_len, context_len, kv_pool_tokens)
    if over_context == "drop" and capped.num_capped:
        keep = (capped.input_len == input_len) & (capped.output_len == output_len)
        num_dropped = int(np.count_nonzero(~keep))
        if num_dropped == len(input_len):  # named no field: which setting left nothing to run
            limit = max_request_lengths(context_len, kv_pool_tokens)[0]
            raise TraceError(
                f"workload.over_context: drop leaves out every request: each is longer than the {limit:,} tokens "
                f"the server lets a request hold (context length {context_len:,}); give shorter requests "
                "(workload.dataset), or over_context: cap to shorten them"
            )
        index = np.flatnonzero(keep)
        kept = replace(
            drawn,
            input_len=input_len[index],
            output_len=output_len[index],
            arrival_s=drawn.arrival_s[index],
            block_hashes=None if drawn.block_hashes is None else [drawn.block_hashes[i] for i in index],
            accept_len=None if drawn.accept_len is None else drawn.accept_len[index],
            follows=None if drawn.follows is None else _renumber(drawn.follows, keep),
        )
        return kept, num_dropped
    if capped.num_capped:
        block_hashes = drawn.block_hashes
        if block_hashes is not None and drawn.hash_block_tokens is not None:
            block_hashes = truncate_hashes(block_hashes, input_len, capped.input_len, drawn.hash_block_tokens)
        shortened = replace(
            drawn,
            input_len=capped.input_len,
            output_len=capped.output_len,
            block_hashes=block_hashes,
            num_capped=drawn.num_capped + capped.num_capped,
        )
        return shortened, 0
    return drawn, 0


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
