"""Write the load of h100-check-straggler-custom.yaml: a bench_serving `custom` dataset of text prompts, and the trace
simperf predicts it from.

Why a custom dataset: SGLang 0.5.17's bench_serving cannot replay a Mooncake trace (h100-check-straggler.yaml says
why), but its `custom` dataset (benchmark/datasets/custom.py, sample_custom_requests) sends any prompts we write:
JSONL rows of {"conversations": [{"value": prompt}, {"value": completion}]}. The kit's tokenizer is word-level
(`t0 ... t{V-1}`, whitespace split, no special tokens: ../shared/device-kit/sglang/gen_model.py), so a prompt of n
words is exactly n tokens. Every prompt draws its own words, so no two prompts share a prefix the radix cache
could reuse.

The load is the Mooncake trace's: 240 prompts, every 30th 25,816 tokens (a long context), the others 532, 256
output tokens each (`--sharegpt-output-len 256`), sent at `--request-rate 10`.

The prediction's trace follows bench_serving's own draws for `--seed 13`: main() seeds `random` and `np.random`
with the seed; sample_custom_requests shuffles the rows with `random.shuffle`, and get_request draws the gaps
with `np.random.exponential(1 / rate)` (reproduced by simperf.workload.arrivals.poisson_arrivals). The recorded
run replaces both with the lengths and send times it logged.

usage: python groundtruth/plans/mixed_long_custom.py DATASET.jsonl [--trace PREDICTED_TRACE.jsonl]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

NUM_PROMPTS = 240
LONG_EVERY = 30  # prompt i is long when i % 30 == 7, as in mixed-long-trace.jsonl
SHORT_TOKENS = 532
LONG_TOKENS = 25_816
OUTPUT_TOKENS = 256
RATE = 10.0
BENCH_SEED = 13  # the plan's --seed
WORDS_SEED = 20261128  # the prompts' words (any seed: only the lengths matter, and that no prefixes repeat)
# Qwen3-8B's vocab_size (simperf/models/zoo/qwen3-8b.json): the kit tokenizer's words are t0..t{V-1}
VOCAB = 151_936


def prompt_lengths() -> list[int]:
    return [LONG_TOKENS if i % LONG_EVERY == 7 else SHORT_TOKENS for i in range(NUM_PROMPTS)]


def dataset_rows(words_seed: int = WORDS_SEED) -> list[dict]:
    rng = np.random.default_rng(words_seed)
    rows = []
    for n in prompt_lengths():
        prompt = " ".join(f"t{w}" for w in rng.integers(0, VOCAB, size=n))
        rows.append({"conversations": [{"value": prompt}, {"value": "t1 t2 t3 t4"}]})
    return rows


def predicted_trace() -> list[dict]:
    """Mooncake-format rows (timestamp ms) in the order and at the times bench_serving will send them."""
    from simperf.workload.arrivals import poisson_arrivals

    lengths = prompt_lengths()
    # sample_custom_requests' random.shuffle, after main()'s random.seed(seed)
    random.Random(BENCH_SEED).shuffle(lengths)
    send = poisson_arrivals(np.random.RandomState(BENCH_SEED), NUM_PROMPTS, RATE).send_s
    return [
        {"timestamp": round(float(t) * 1e3, 3), "input_length": n, "output_length": OUTPUT_TOKENS}
        for t, n in zip(send, lengths, strict=True)
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path, help="where to write the custom dataset (JSONL)")
    ap.add_argument("--trace", type=Path, help="also write the trace simperf predicts the run from")
    args = ap.parse_args(argv)
    with args.dataset.open("w", encoding="utf-8") as f:
        for row in dataset_rows():
            f.write(json.dumps(row) + "\n")
    if args.trace:
        args.trace.write_text("".join(json.dumps(r) + "\n" for r in predicted_trace()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
