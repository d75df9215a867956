"""dfs-weight: requests grouped by the radix-tree node their cached prefix ends at, served depth first with the
heaviest subtree (most waiting requests under it) first, so requests sharing a prefix run together
(SGLang 0.5.17 managers/schedule_policy.py: `_sort_by_dfs_weight`, `_calc_weight`, `_get_dfs_priority`)."""

from __future__ import annotations

from simperf.sim.policy.base import WaitingQueue, register_policy


@register_policy
class DepthFirstWeight:
    name = "dfs-weight"
    cache_aware = True
    reorders = True

    def __init__(self, seed: int = 0) -> None:
        pass

    def order(self, queue: WaitingQueue) -> list[int] | None:
        if len(queue.ids) < 2:
            return None
        cache, table = queue.cache, queue.table
        root = cache.root
        by_node: dict[int, list[int]] = {}
        for r in queue.ids:
            node = cache.match_node(table.hashes[r], table.fill_len[r] - 1) or root
            by_node.setdefault(id(node), []).append(r)
        weight: dict[int, int] = {}
        _subtree_weights(root, by_node, weight)
        out: list[int] = []
        _depth_first(root, by_node, weight, out)
        return out


def _subtree_weights(node, by_node: dict[int, list[int]], weight: dict[int, int]) -> int:
    total = len(by_node.get(id(node), ()))
    for child in node.children.values():
        total += _subtree_weights(child, by_node, weight)
    weight[id(node)] = total
    return total


def _depth_first(node, by_node: dict[int, list[int]], weight: dict[int, int], out: list[int]) -> None:
    # children heaviest first (stable: insertion order among equals), then the requests ending at this node
    for child in sorted(node.children.values(), key=lambda c: -weight[id(c)]):
        if weight[id(child)]:
            _depth_first(child, by_node, weight, out)
    out.extend(by_node.get(id(node), ()))
