"""cache_aware's approximate tree: what the router *believes* each worker has cached, built from its own routing.

The gateway (`policies/tree.rs`) keeps one radix tree over request texts shared by all workers ("tenants"); every
node records which tenants hold it and when each last touched it. It never asks a worker what it really caches:
a routed request's text is inserted for the chosen worker, and a background thread trims each tenant to
`max_tree_size` characters every `eviction_interval_secs`, least recently used leaves first. The replicas' real
radix caches (`simperf/radix_cache.py`) evict on their own schedule, so the router's belief and the replicas' caches
drift apart; that gap is part of what a fleet simulation shows.

simperf's requests name content by prefix block ids, so this tree has one node per block (the gateway's nodes hold
runs of characters and split on divergence). The rules kept from the gateway:

* insert: every node on the path gains the tenant; a node the tenant newly joins keeps access time 0, except
  the nodes this insert creates, which all get the insert's epoch (in the gateway they are one node, one stamp;
  a later split copies the stamp to both halves); the last node of the path gets the epoch.
* prefix_match: walk while blocks match; the tenant is the deepest node's cached tenant (the one that created the
  node, while it still holds it; else the first remaining one), so every candidate matched the full length; one
  match in eight refreshes that tenant's stamp on the node (the gateway's `epoch & 0x7 == 0`).
* evict_tenant_by_size(max): a min-heap of (stamp, tenant, node) over each tenant's leaves; while the tenant is
  over `max`, drop it from the leaf, drop empty nodes, and push the parent when it becomes the tenant's leaf.

Sizes are in tokens (the gateway counts characters; `RouterSpec.chars_per_token` converts its max_tree_size).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence


class _Node:
    __slots__ = ("parent", "key", "children", "tenants", "creator")

    def __init__(self, parent: _Node | None, key: int) -> None:
        self.parent = parent
        self.key = key
        self.children: dict[int, _Node] = {}
        self.tenants: dict[int, int] = {}  # tenant -> last access epoch
        self.creator: int | None = None  # the gateway's cached `last_tenant`


class ApproxTree:
    def __init__(self, num_tenants: int, block_tokens: int) -> None:
        self.block_tokens = block_tokens
        self._root = _Node(None, -1)
        self._epoch = itertools.count()
        self.tenant_tokens = [0] * num_tenants
        for tenant in range(num_tenants):  # the gateway inserts "" for every worker at start-up
            self._root.tenants[tenant] = 0

    def prefix_match(self, blocks: Sequence[int]) -> tuple[int, int]:
        """(matched blocks, tenant at the deepest matched node)."""
        node = self._root
        matched = 0
        for key in blocks:
            child = node.children.get(key)
            if child is None:
                break
            node = child
            matched += 1
        tenant = node.creator
        if tenant is None or tenant not in node.tenants:
            tenant = next(iter(node.tenants)) if node.tenants else -1
            node.creator = tenant
        epoch = next(self._epoch)
        if epoch & 0x7 == 0 and tenant in node.tenants:
            node.tenants[tenant] = epoch
        return matched, tenant

    def insert(self, blocks: Sequence[int], tenant: int) -> None:
        node = self._root
        created: list[_Node] = []
        block = self.block_tokens
        for key in blocks:
            child = node.children.get(key)
            if child is None:
                child = _Node(node, key)
                child.creator = tenant
                node.children[key] = child
                created.append(child)
            if tenant not in child.tenants:
                child.tenants[tenant] = 0
                self.tenant_tokens[tenant] += block
            node = child
        epoch = next(self._epoch)
        for new in created:
            new.tenants[tenant] = epoch
        if node is not self._root:
            node.tenants[tenant] = epoch

    def evict_tenant_by_size(self, max_tokens: int) -> int:
        """Trim every tenant to at most `max_tokens`, least recently used leaves first; returns tokens dropped."""
        if all(tokens <= max_tokens for tokens in self.tenant_tokens):
            # trim drops a leaf only from a tenant over the limit: with none, it walked the whole tree for
            # nothing, once per request when requests came further apart than the eviction period
            return 0
        return self.trim(max_tokens)

    def trim(self, max_tokens: int) -> int:
        """evict_tenant_by_size without its check that some tenant is over the limit (the general path)."""
        heap: list[tuple[int, int, int, _Node]] = []
        serial = itertools.count()
        stack = list(self._root.children.values())
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            for tenant, stamp in node.tenants.items():
                if not any(tenant in c.tenants for c in node.children.values()):
                    heap.append((stamp, next(serial), tenant, node))
        heapq.heapify(heap)
        dropped = 0
        while heap:
            _, _, tenant, node = heapq.heappop(heap)
            if self.tenant_tokens[tenant] <= max_tokens:
                continue
            if tenant not in node.tenants or any(tenant in c.tenants for c in node.children.values()):
                continue  # no longer this tenant's leaf
            del node.tenants[tenant]
            self.tenant_tokens[tenant] -= self.block_tokens
            dropped += self.block_tokens
            parent = node.parent
            if not node.children and not node.tenants and parent is not None:
                del parent.children[node.key]
            if parent is not None and parent is not self._root and tenant in parent.tenants:
                if not any(tenant in c.tenants for c in parent.children.values()):
                    heapq.heappush(heap, (parent.tenants[tenant], next(serial), tenant, parent))
        return dropped

    def add_tenant(self, tenant: int) -> None:
        """A worker joins the router (the gateway inserts "" for it): known, nothing cached."""
        self._root.tenants.setdefault(tenant, 0)

    def remove_tenant(self, tenant: int) -> None:
        """A worker leaves the router: drop it from every node, and nodes nobody holds any more."""
        stack = list(self._root.children.values())
        nodes = []
        while stack:
            node = stack.pop()
            nodes.append(node)
            stack.extend(node.children.values())
        for node in reversed(nodes):  # children before parents
            if node.tenants.pop(tenant, None) is not None:
                self.tenant_tokens[tenant] -= self.block_tokens
            if not node.children and not node.tenants and node.parent is not None:
                del node.parent.children[node.key]
        self._root.tenants.pop(tenant, None)

    def holders(self, blocks: Sequence[int]) -> list[int]:
        """Tenants holding the whole path of `blocks` (tests, debugging)."""
        node = self._root
        for key in blocks:
            node = node.children.get(key)
            if node is None:
                return []
        return sorted(node.tenants)
