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


def cap_to_context(input_len: np.ndarray, output_len: np.ndarray, context_len: int) -> CappedLengths:
    """Shorten requests so SGLang would accept them: input + output <= context_len - 1, output >= 1.

    SGLang's TokenizerManager rejects a request when `input >= context_len` or `input + max_new_tokens >=
    context_len` (strict: the total must stay below context_len). The output is shortened first (what a user would
    do with max_tokens); a prompt that alone is too long keeps context_len - 2 tokens and generates one. The real
    server returns an error for such requests instead (unless --allow-auto-truncate), so the number changed is
    reported rather than hidden.
    """
    if context_len < 3:
        raise ValueError(f"context_len must leave room for a prompt and an output token, got {context_len}")
    max_total = context_len - 1
    new_input = np.minimum(input_len, max_total - 1)
    new_output = np.minimum(output_len, max_total - new_input)
    changed = (new_input != input_len) | (new_output != output_len)
    return CappedLengths(
        new_input.astype(np.int64), new_output.astype(np.int64), int(np.count_nonzero(changed))
    )
