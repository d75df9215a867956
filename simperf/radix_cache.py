"""SGLang's radix (prefix) cache as a data structure: a tree of prefix blocks, LRU eviction, lock counts.

What it models (SGLang `srt/mem_cache/radix_cache.py`; docs/traces.md says where it stops):

* A request's prompt is named by *block ids* (`RequestSet.block_hashes`): one id per `block_tokens` tokens, equal
  ids meaning equal content given an equal path from the root (Mooncake's 512-token `hash_ids`; simperf's
  generators use the same convention). A node is one block; its `tokens` are how many of the block's tokens are
  cached (a request's last block may be partial). Requests without ids never hit.
* `match` walks the tree block by block. A hit is page-aligned (`page_size`) and at most `max_tokens`; SGLang
  always recomputes the prompt's last token, so the scheduler asks for at most `input_len - 1` (`acquire` does).
* Blocks used by a running request are *locked* (`acquire` / `lock`) and never evicted; `release` unlocks them.
  Unlocked cached tokens are *evictable*: SGLang's admission counts `available + evictable` as free.
* `insert` caches a finished request's KV (page-aligned; the unaligned tail is freed, as SGLang frees it) and
  returns how many tokens are new to the cache: the caller frees the rest of the request's private KV.
* `evict(n)` frees at least `n` tokens if it can, least recently used leaves first, never locked nodes; freeing a
  leaf may make its parent a leaf, which then competes in the same LRU order (SGLang's `evict`).
* Recency is a logical clock advanced by every `acquire`, `lock` and `insert` (SGLang stamps nodes with
  `time.monotonic()` on match and insert). `match` alone has no side effect, so probing the waiting queue for the
  lpm policy does not refresh recency (SGLang's probe does; the difference only reorders evictions among blocks
  that are waiting to be reused anyway).

How the scheduler uses it (one cache per DP rank, capacity = the rank's KV pool):

    lease = cache.acquire(hashes, fill_len)     # admission: prefix = lease.tokens, extend = fill_len - prefix
    free = capacity - private_used - cache.cached_tokens            # truly free slots
    admissible = free + cache.evictable_tokens                       # SGLang: available + evictable
    if free < alloc: cache.evict(alloc - free)                       # eviction happens when allocating
    ...
    new = cache.insert(hashes, kv_tokens)       # request finished: its KV becomes cached and evictable
    private_used -= request_private_tokens      # `new` of them now live in cached_tokens, the rest are freed
    cache.release(lease)

For a chunked prefill, `insert(hashes, prefilled)` after each chunk, then `lock` the longer prefix and `release`
the previous lease (SGLang's `cache_unfinished_req`). A retracted request is released without inserting.

Cost: every call is O(blocks of the request) dict lookups; `evict` is O(log nodes) per freed block (a lazily
pruned heap of evictable leaves).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np


class _Node:
    __slots__ = ("parent", "key", "children", "tokens", "lock", "readers", "last_access", "alive")

    def __init__(self, parent: _Node | None, key: int, tokens: int, now: int) -> None:
        self.parent = parent
        self.key = key
        self.children: dict[int, _Node] = {}
        self.tokens = tokens
        self.lock = 0
        # decoding requests whose attention reads this block (add_reader), a subset of `lock`
        self.readers = 0
        self.last_access = now
        self.alive = True


@dataclass(frozen=True)
class Lease:
    """Blocks locked for one request: `tokens` of its prefix are in the cache and must stay there."""

    tokens: int
    node: _Node | None  # deepest locked node; None when nothing is locked


@dataclass(frozen=True)
class CacheStats:
    lookups: int  # acquire calls
    hit_requests: int  # acquires that matched at least one token
    hit_tokens: int  # Σ matched tokens over acquires
    prompt_tokens: int  # Σ prompt tokens over acquires
    inserted_tokens: int  # Σ tokens new to the cache over inserts
    evicted_tokens: int

    @property
    def hit_rate(self) -> float:
        """Share of prompt tokens served from the cache (SGLang's `#cached-token / (#cached + #new)`)."""
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


class RadixCache:
    def __init__(self, capacity_tokens: int, block_tokens: int, page_size: int = 1) -> None:
        if capacity_tokens < 0:
            raise ValueError(f"capacity_tokens must be >= 0, got {capacity_tokens}")
        if block_tokens < 1 or page_size < 1:
            raise ValueError(f"block_tokens and page_size must be >= 1, got {block_tokens}, {page_size}")
        self.capacity_tokens = capacity_tokens
        self.block_tokens = block_tokens
        self.page_size = page_size
        # room is handed out in whole grains so that nodes end on page or block boundaries
        self._grain = math.gcd(page_size, block_tokens)
        self._root = _Node(None, -1, 0, 0)
        self._root.lock = 1  # the root is never evicted
        self._clock = itertools.count(1)
        self._heap: list[tuple[int, int, _Node]] = []  # (last_access, serial, node) of evictable leaves, lazy
        self._serial = itertools.count()
        self._num_nodes = 0
        self.cached_tokens = 0
        self.evictable_tokens = 0
        # Σ over blocks of (readers - 1) x tokens where readers >= 2: KV reads of the decode batch that another
        # running request also makes, which the decode kernel serves from L2 (perfdb/shared_reads.py)
        self.duplicated_reads = 0
        self._lookups = self._hit_requests = self._hit_tokens = self._prompt_tokens = 0
        self._inserted = self._evicted = 0

    # ------------------------------------------------------------------------------------------ queries
    @property
    def locked_tokens(self) -> int:
        return self.cached_tokens - self.evictable_tokens

    @property
    def stats(self) -> CacheStats:
        return CacheStats(
            self._lookups,
            self._hit_requests,
            self._hit_tokens,
            self._prompt_tokens,
            self._inserted,
            self._evicted,
        )

    def match(self, hashes: Sequence[int] | np.ndarray | None, max_tokens: int | None = None) -> int:
        """Cached tokens of this prefix, page-aligned and at most `max_tokens`. No side effect."""
        if hashes is None or max_tokens is not None and max_tokens <= 0:
            return 0
        matched, _ = self._walk(hashes, max_tokens)
        return matched

    def match_node(
        self, hashes: Sequence[int] | np.ndarray | None, max_tokens: int | None = None
    ) -> _Node | None:
        """The deepest node `match` covers (its `children` map child nodes), None when nothing matches."""
        if hashes is None or max_tokens is not None and max_tokens <= 0:
            return None
        return self._walk(hashes, max_tokens)[1]

    @property
    def root(self) -> _Node:
        return self._root

    # --------------------------------------------------------------------------------------- lock/unlock
    def acquire(self, hashes: Sequence[int] | np.ndarray | None, prompt_tokens: int) -> Lease:
        """Admission: match at most `prompt_tokens - 1` tokens, lock them, refresh their recency, count the hit."""
        lease = self.lock(hashes, max(prompt_tokens - 1, 0))
        self._lookups += 1
        self._prompt_tokens += prompt_tokens
        self._hit_tokens += lease.tokens
        self._hit_requests += lease.tokens > 0
        return lease

    def lock(self, hashes: Sequence[int] | np.ndarray | None, max_tokens: int) -> Lease:
        """Lock the cached prefix of `hashes` (at most `max_tokens`, page-aligned); returns what was locked."""
        if hashes is None or max_tokens <= 0:
            return Lease(0, None)
        matched, node = self._walk(hashes, max_tokens)
        if matched == 0 or node is None:
            return Lease(0, None)
        now = next(self._clock)
        walker: _Node | None = node
        while walker is not None and walker is not self._root:
            walker.last_access = now
            if walker.lock == 0:
                self.evictable_tokens -= walker.tokens
            walker.lock += 1
            walker = walker.parent
        return Lease(matched, node)

    def lock_cost(self, hashes: Sequence[int] | np.ndarray | None, max_tokens: int) -> int:
        """Evictable tokens that `lock(hashes, max_tokens)` would take out of `evictable_tokens` (its unlocked
        nodes); no side effect. Admission checks its budget as it would stand after the lock (SGLang's
        `_lock_node` in `PrefillAdder.add_one_req`)."""
        node = self.match_node(hashes, max_tokens)
        cost = 0
        while node is not None and node is not self._root:
            if node.lock == 0:
                cost += node.tokens
            node = node.parent
        return cost

    def release(self, lease: Lease) -> None:
        """Unlock a lease's blocks; they stay cached and become evictable once no request holds them."""
        node = lease.node
        while node is not None and node is not self._root:
            node.lock -= 1
            if node.lock < 0:
                raise RuntimeError("RadixCache.release: lease released twice")
            if node.lock == 0:
                self.evictable_tokens += node.tokens
                if not node.children:
                    self._push_leaf(node)
            node = node.parent

    def add_reader(self, lease: Lease) -> None:
        """A request holding `lease` joins the decode batch: its attention reads the lease's blocks every step.
        Precondition: the lease is held (its blocks are locked, so none is evicted while read)."""
        node = lease.node
        while node is not None and node is not self._root:
            if node.readers:
                self.duplicated_reads += node.tokens
            node.readers += 1
            node = node.parent

    def remove_reader(self, lease: Lease) -> None:
        """The request holding `lease` leaves the decode batch (before the lease is released)."""
        node = lease.node
        while node is not None and node is not self._root:
            node.readers -= 1
            if node.readers < 0:
                raise RuntimeError("RadixCache.remove_reader: reader removed twice")
            if node.readers:
                self.duplicated_reads -= node.tokens
            node = node.parent

    # ------------------------------------------------------------------------------------------- insert
    def insert(self, hashes: Sequence[int] | np.ndarray | None, n_tokens: int) -> int:
        """Cache the first `n_tokens` of this sequence (page-aligned); returns the tokens new to the cache.

        Never exceeds `capacity_tokens`: unlocked least recently used leaves are evicted to make room, and if
        locked blocks leave too little room only the part that fits is cached.
        """
        if hashes is None:
            return 0
        block, page = self.block_tokens, self.page_size
        n_tokens = min(n_tokens, len(hashes) * block)
        n_tokens -= n_tokens % page
        if n_tokens <= 0:
            return 0
        keys = _as_list(hashes)
        now = next(self._clock)
        node = self._root
        new_tokens = 0
        held: list[_Node] = []  # this sequence's path, locked while inserting so making room cannot evict it
        try:
            for i in range(-(-n_tokens // block)):
                want = min(block, n_tokens - i * block)
                key = keys[i]
                child = node.children.get(key)
                if child is None:
                    got = self._room_for(want)
                    if got <= 0:
                        break
                    child = _Node(node, key, got, now)
                    node.children[key] = child
                    self._num_nodes += 1
                    self.cached_tokens += got
                    self.evictable_tokens += got
                    new_tokens += got
                self._hold(child)
                held.append(child)
                child.last_access = now
                if (
                    child.tokens < want
                ):  # a partial block grows (only leaves are partial); held, so not evictable
                    got = self._room_for(want - child.tokens)
                    child.tokens += got
                    self.cached_tokens += got
                    new_tokens += got
                node = child
                if child.tokens < block:
                    break  # the rest of the sequence lies in a block this one does not cover
        finally:
            for h in reversed(held):
                h.lock -= 1
                if h.lock == 0:
                    self.evictable_tokens += h.tokens
                    if not h.children:
                        self._push_leaf(h)
        self._inserted += new_tokens
        return new_tokens

    # -------------------------------------------------------------------------------------------- evict
    def evict(self, n_tokens: int) -> int:
        """Free at least `n_tokens` cached tokens if possible, LRU leaves first; returns the tokens freed."""
        freed = 0
        heap = self._heap
        while freed < n_tokens and heap:
            stamp, _, node = heapq.heappop(heap)
            if not node.alive or node.lock or node.children or node.last_access != stamp:
                continue  # stale entry
            freed += node.tokens
            self._remove_leaf(node)
        self._evicted += freed
        if len(heap) > 4 * self._num_nodes + 64:
            self._rebuild_heap()
        return freed

    def evictable_leaf_order(self) -> list[tuple[int, ...]]:
        """Evictable leaves in the order `evict` would take them, as block-id paths (for tests and debugging)."""
        leaves = [n for n in self._iter_nodes() if not n.children and n.lock == 0]
        leaves.sort(key=lambda n: n.last_access)
        return [self._path(n) for n in leaves]

    # ------------------------------------------------------------------------------------------ helpers
    def _walk(self, hashes: Sequence[int] | np.ndarray, max_tokens: int | None) -> tuple[int, _Node | None]:
        """Tokens matched (page-aligned, capped) and the deepest node needed to cover them."""
        node = self._root
        matched = 0
        path: list[tuple[int, _Node]] = []
        children = node.children
        block = self.block_tokens
        for key in _as_list(hashes):
            child = children.get(key)
            if child is None:
                break
            matched += child.tokens
            path.append((matched, child))
            if child.tokens < block:
                break
            children = child.children
        if max_tokens is not None and matched > max_tokens:
            matched = max_tokens
        matched -= matched % self.page_size
        if matched <= 0:
            return 0, None
        for end, child in path:  # first node whose cumulative end covers `matched`
            if end >= matched:
                return matched, child
        return matched, path[-1][1]  # pragma: no cover - matched never exceeds the path's end

    def _room_for(self, want: int) -> int:
        """Evict unlocked LRU leaves until `want` more tokens fit under capacity; returns what fits, page-aligned."""
        over = self.cached_tokens + want - self.capacity_tokens
        if over > 0:
            self.evict(over)
        fits = max(0, min(want, self.capacity_tokens - self.cached_tokens))
        return fits - fits % self._grain

    def _hold(self, node: _Node) -> None:
        if node.lock == 0:
            self.evictable_tokens -= node.tokens
        node.lock += 1

    def _push_leaf(self, node: _Node) -> None:
        heapq.heappush(self._heap, (node.last_access, next(self._serial), node))

    def _remove_leaf(self, node: _Node) -> None:
        parent = node.parent
        assert parent is not None
        del parent.children[node.key]
        node.alive = False
        self._num_nodes -= 1
        self.cached_tokens -= node.tokens
        self.evictable_tokens -= node.tokens
        if parent is not self._root and not parent.children and parent.lock == 0:
            self._push_leaf(parent)

    def _rebuild_heap(self) -> None:
        self._heap = [
            (n.last_access, next(self._serial), n)
            for n in self._iter_nodes()
            if not n.children and n.lock == 0
        ]
        heapq.heapify(self._heap)

    def _iter_nodes(self) -> Iterable[_Node]:
        stack = list(self._root.children.values())
        while stack:
            n = stack.pop()
            yield n
            stack.extend(n.children.values())

    @staticmethod
    def _path(node: _Node) -> tuple[int, ...]:
        keys = []
        walker: _Node | None = node
        while walker is not None and walker.parent is not None:
            keys.append(walker.key)
            walker = walker.parent
        return tuple(reversed(keys))


def _as_list(hashes: Sequence[int] | np.ndarray) -> list[int]:
    # Python ints: dict lookups on numpy scalars hash several times slower
    return hashes.tolist() if isinstance(hashes, np.ndarray) else [int(h) for h in hashes]
