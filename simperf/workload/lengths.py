"""Request lengths as sglang.bench_serving's `random` dataset draws them, and the context-length cap.

bench_serving seeds the global NumPy RNG once (`np.random.seed(seed)`) and then, for `--dataset-name random`,
draws all input lengths, then all output lengths, each as one `np.random.randint(lo, L + 1, size=n)` call
(`datasets/common.py::compute_random_lens`). A `RandomState(seed)` making the same calls in the same order yields
the same integers, so callers pass one generator through lengths and then arrivals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def random_lengths(rng: np.random.RandomState, full_len: int, range_ratio: float, num: int) -> np.ndarray:
    """One `compute_random_lens` call: integers uniform on {max(int(L*r), 1), ..., L}, as int64."""
    if full_len <= 0:
        # bench_serving returns zeros without touching the RNG (embedding benchmarks); keep the same stream.
        return np.zeros(num, dtype=np.int64)
    low = max(int(full_len * range_ratio), 1)
    return rng.randint(low, full_len + 1, size=num).astype(np.int64)


def legacy_output_lengths(
    rng: np.random.RandomState, full_len: int, range_ratio: float, num: int
) -> np.ndarray:
    """Output lengths as `sample_random_requests` drew them (sglang bench_serving.py, 0.4.10 to at least 0.5.5):
    uniform on {int(L*r), ..., L}, so 0 is possible at the default ratio 0. Inputs used the same call as
    `random_lengths` (floored at 1)."""
    return rng.randint(int(full_len * range_ratio), full_len + 1, size=num).astype(np.int64)


def subtract_special_tokens(input_lens: np.ndarray, num_special_tokens: int) -> np.ndarray:
    """bench_serving shortens text prompts by the tokens the server's tokenizer adds (BOS), floored at 0."""
    if num_special_tokens <= 0:
        return input_lens
    return np.maximum(input_lens - num_special_tokens, 0)


@dataclass(frozen=True)
class CappedLengths:
    input_len: np.ndarray
    output_len: np.ndarray
    num_capped: int  # requests whose lengths were changed to fit


def max_request_lengths(context_len: int, kv_pool_tokens: int | None = None) -> tuple[int, int]:
    """(max_req_len, max_req_input_len) of an SGLang server (0.5.17, managers/tp_worker.py::get_worker_info):
    min(context_len - 1, KV pool tokens - 1), and 5 less for prompts."""
    max_req_len = context_len - 1
    if kv_pool_tokens is not None:
        max_req_len = min(max_req_len, kv_pool_tokens - 1)
    return max_req_len, max_req_len - 5


def cap_to_context(
    input_len: np.ndarray, output_len: np.ndarray, context_len: int, kv_pool_tokens: int | None = None
) -> CappedLengths:
    """Shorten requests to what SGLang would accept and run, so that a capped request is served, not rejected.

    SGLang 0.5.17 rejects a prompt of `input >= max_req_input_len` (managers/utils.py::validate_input_length) and
    clips the generation to `max_new_tokens <= max_req_len - input - 1` (managers/scheduler.py), with max_req_len
    and max_req_input_len from `max_request_lengths` (the context length, and the KV pool when it is given); its
    TokenizerManager also refuses `input + max_new_tokens > context_len`, which these caps already keep. A prompt
    that alone is too long keeps max_req_input_len - 1 tokens; then the output is clipped as the scheduler would.
    The real server returns an error for a too-long prompt instead (unless --allow-auto-truncate), so the number
    changed is reported rather than hidden.
    """
    max_req_len, max_req_input_len = max_request_lengths(context_len, kv_pool_tokens)
    if max_req_input_len < 2:
        raise ValueError(
            f"context length {context_len} / KV pool {kv_pool_tokens} tokens leave no room for a prompt and an "
            "output token"
        )
    new_input = np.minimum(input_len, max_req_input_len - 1)
    new_output = np.minimum(output_len, max_req_len - new_input - 1)
    changed = (new_input != input_len) | (new_output != output_len)
    return CappedLengths(
        new_input.astype(np.int64), new_output.astype(np.int64), int(np.count_nonzero(changed))
    )
