"""lpm: longest cached prefix first, with SGLang's in-batch dedup and its fcfs fallback for long queues
(SGLang 0.5.17 srt/managers/schedule_policy.py: `_sort_by_longest_prefix`, `_compute_prefix_matches`,
`_determine_active_policy`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simperf.radix_cache import RadixCache
from simperf.sglang_defaults import IN_BATCH_CHECK_TOKENS, IN_BATCH_DEPRIORITIZE_TOKENS, LPM_MAX_QUEUE
from simperf.sim.policy.base import WaitingQueue, register_policy


@register_policy
class LongestPrefixMatch:
    name = "lpm"
    cache_aware = True
    reorders = True

    def __init__(self, seed: int = 0) -> None:
        pass

    def order(self, queue: WaitingQueue) -> list[int] | None:
        return lpm_order(queue.ids, queue.table.hashes, queue.table.fill_len, queue.cache)


def lpm_order(
    queue: Sequence[int],
    hashes: Sequence[np.ndarray | None],
    fill_len: Sequence[int],
    cache: RadixCache,
) -> list[int]:
    """SGLang's `lpm` policy: the waiting queue sorted by longest cached prefix, FCFS among equals.

    `queue` holds request ids in arrival order; `hashes[r]` and `fill_len[r]` are request r's block ids and
    prompt tokens. Above LPM_MAX_QUEUE waiting requests SGLang falls back to FCFS. In-batch dedup: a request whose
    cached prefix is at most IN_BATCH_CHECK_TOKENS but that shares at least IN_BATCH_DEPRIORITIZE_TOKENS with an
    earlier waiting request goes to the back, so the earlier one fills the cache first
    (`SchedulePolicy._compute_prefix_matches`).
    """
    if len(queue) > LPM_MAX_QUEUE:
        return list(queue)
    waiting_tree = RadixCache(1 << 62, cache.block_tokens, cache.page_size)
    keyed: list[tuple[float, int, int]] = []
    for pos, r in enumerate(queue):
        h = hashes[r]
        prefix = cache.match(h, fill_len[r] - 1)
        key: float = -prefix
        if prefix <= IN_BATCH_CHECK_TOKENS and h is not None:
            if waiting_tree.match(h, fill_len[r] - 1) >= IN_BATCH_DEPRIORITIZE_TOKENS:
                key = float("inf")
            else:
                waiting_tree.insert(h, fill_len[r])
        keyed.append((key, pos, r))
    keyed.sort()
    return [r for _, _, r in keyed]
