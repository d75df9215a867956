"""Synthetic workloads with shared prefixes: bench_serving's generated-shared-prefix, and multi-turn chats.

Both name their prompts' content with prefix-block ids (`block_tokens` tokens per id, see `simperf/radix_cache.py`):
a block gets an id shared with other requests only when all its tokens are shared content (a group's system
prompt, or a conversation's earlier turns); a block mixing shared and private tokens gets an id of its own. So a
shared prefix of S tokens is matched up to floor(S / block_tokens) * block_tokens; the default 64-token blocks
lose under 64 tokens per hit against SGLang's page-1 matching, and nothing against 64-token pages.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from simperf.scenario.models import MultiTurnDataset, SharedPrefixDataset
from simperf.workload.arrivals import client_arrivals
from simperf.workload.lengths import random_lengths


@dataclass(frozen=True)
class Generated:
    input_len: np.ndarray  # int64
    output_len: np.ndarray  # int64
    arrival_s: np.ndarray | None  # float64, sorted; None: the caller draws the client's arrivals
    sender_done_s: float
    block_hashes: list[np.ndarray]
    block_tokens: int
    follows: np.ndarray | None  # int64, index of the request whose answer this prompt contains, -1 for none


class _Ids:
    """Fresh block ids, unique across one generated workload."""

    def __init__(self) -> None:
        self.next = 0

    def take(self, n: int) -> np.ndarray:
        ids = np.arange(self.next, self.next + n, dtype=np.int64)
        self.next += n
        return ids


def _skip_randoms(state: random.Random, n: int) -> None:
    """Advance `state` as n calls of `state.random()` would: each takes two 32-bit Mersenne Twister words, and
    `getrandbits(32 k)` takes exactly k words."""
    step = 1 << 20
    while n > 0:
        take = min(n, step)
        state.getrandbits(64 * take)
        n -= take


def shared_prefix(ds: SharedPrefixDataset, rng: np.random.RandomState, seed: int) -> Generated:
    """bench_serving's `generated-shared-prefix`: lengths from the same NumPy calls in the same order
    (system prompt lengths per group, question lengths, output lengths; `compute_random_lens`), so the arrival
    gaps drawn next equal bench_serving's. The prompt is system prompt + question tokens; bench_serving's
    prompt_len re-tokenises `system + "\\n\\n" + question`, typically one or two tokens more.

    The order is bench_serving's own permutation (SGLang 0.5.17 `benchmark/datasets/generated_shared_prefix.py`,
    `sample_generated_shared_prefix_requests`): after `random.seed(seed)` (`benchmark/serving.py`) the prompt texts
    are drawn by `gen_prompt` (`benchmark/datasets/common.py`), one `random.choices(vocab, k=length)` per system
    prompt and per question, which calls `random()` once per token whatever the vocabulary; then
    `random.shuffle` permutes the group-major list. So the same Mersenne Twister, advanced by the summed drawn
    lengths, shuffles a list of the same length into the same order. Checked on the corpus's gsp runs (seed 1):
    which requests find their group's prompt cached matches the server's `cached_tokens` request by request.
    """
    g, p, block = ds.num_groups, ds.prompts_per_group, ds.block_tokens
    system = random_lengths(rng, ds.system_prompt_len, ds.range_ratio, g)
    question = random_lengths(rng, ds.question_len, ds.range_ratio, g * p).reshape(g, p)
    output = random_lengths(rng, ds.output_len, ds.range_ratio, g * p).reshape(g, p)
    ids = _Ids()
    group_ids = [ids.take(int(system[k]) // block) for k in range(g)]
    order = [(k, j) for k in range(g) for j in range(p)]
    if not ds.ordered:
        state = random.Random(seed)
        _skip_randoms(state, int(system.sum()) + int(question.sum()))
        state.shuffle(order)
    inputs, outputs, hashes = [], [], []
    for k, j in order:
        length = int(system[k] + question[k, j])
        shared = group_ids[k]
        hashes.append(np.concatenate((shared, ids.take(-(-length // block) - shared.size))))
        inputs.append(length)
        outputs.append(int(output[k, j]))
    return Generated(
        np.asarray(inputs, dtype=np.int64),
        np.asarray(outputs, dtype=np.int64),
        None,
        0.0,
        hashes,
        block,
        None,
    )


def multi_turn(
    ds: MultiTurnDataset, rng: np.random.RandomState, rate: float, process: str, burstiness: float
) -> Generated:
    """Conversations of `turns` requests; turn k's prompt is the system prompt, every earlier message and answer,
    and a new message.

    Draw order on `rng`: user message lengths, answer lengths (conversation-major), conversation start gaps
    (the workload's arrival process at rate / turns, so requests are offered at `rate`), then the exponential
    gaps between turns. Turn k is sent `turn_interval_s` (mean) after turn k-1 was *sent*: an open-loop replay.
    `follows` names turn k-1, for a client that holds each turn until the previous answer is complete.
    """
    c, t, block = ds.num_conversations, ds.turns, ds.block_tokens
    user = random_lengths(rng, ds.input_len, ds.range_ratio, c * t).reshape(c, t)
    answer = random_lengths(rng, ds.output_len, ds.range_ratio, c * t).reshape(c, t)
    starts = client_arrivals(rng, c, rate / t, process, burstiness)
    if t > 1 and ds.turn_interval_s > 0:
        gaps = rng.exponential(ds.turn_interval_s, size=(c, t - 1))
    else:
        gaps = np.zeros((c, max(t - 1, 0)))
    send = starts.send_s[:, None] + np.concatenate((np.zeros((c, 1)), np.cumsum(gaps, axis=1)), axis=1)

    ids = _Ids()
    system_ids = ids.take(ds.system_prompt_len // block)
    before = np.concatenate(
        (np.zeros((c, 1), dtype=np.int64), np.cumsum(user + answer, axis=1)[:, :-1]), axis=1
    )
    prompt = ds.system_prompt_len + before + user
    total = prompt + answer  # the turn's tokens once answered: what the next turn re-sends
    inputs, outputs, hashes, arrival, follows = [], [], [], [], []
    for conv in range(c):
        full_blocks = int(total[conv, -1]) // block
        conv_ids = np.concatenate((system_ids, ids.take(full_blocks - system_ids.size)))
        for k in range(t):
            n = int(total[conv, k])
            full = n // block
            own = conv_ids[:full] if n % block == 0 else np.append(conv_ids[:full], ids.take(1))
            hashes.append(own)
            inputs.append(int(prompt[conv, k]))
            outputs.append(int(answer[conv, k]))
            arrival.append(float(send[conv, k]))
            follows.append(len(inputs) - 2 if k > 0 else -1)
    order = np.argsort(np.asarray(arrival), kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    prev = np.asarray(follows, dtype=np.int64)[order]
    prev = np.where(prev >= 0, position[np.maximum(prev, 0)], -1)
    arrival_sorted = np.asarray(arrival)[order]
    return Generated(
        np.asarray(inputs, dtype=np.int64)[order],
        np.asarray(outputs, dtype=np.int64)[order],
        arrival_sorted,
        max(float(arrival_sorted[-1]), starts.sender_done_s),
        [hashes[i] for i in order],
        block,
        prev,
    )
