"""Helpers shared by the GPU backends: per-request lengths, paged layouts, dtype names. torch is imported
inside functions only, so the runner can import backend modules without it."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

from simperf.calibrate.measure import Unsupported
from simperf.perfdb.shared_reads import PrefixGroups

T = TypeVar("T")

WORKSPACE_BYTES = 256 * 1024 * 1024


def kv_lengths(point: dict[str, Any]) -> list[int]:
    """Per-request KV lengths: the ragged list when present, else batch copies of kv_len."""
    if point.get("kv_lens"):
        return [int(v) for v in json.loads(point["kv_lens"])]
    return [int(point["kv_len"])] * int(point["batch"])


def q_lengths(point: dict[str, Any]) -> list[int]:
    """Per-request new-token counts: the ragged list when present, else batch copies of q_len."""
    if point.get("q_lens"):
        return [int(v) for v in json.loads(point["q_lens"])]
    return [int(point["q_len"])] * int(point["batch"])


def indptr(lengths: list[int]) -> Any:
    """CSR offsets [0, l0, l0+l1, ...] as int32 on the GPU."""
    import torch

    out = torch.zeros(len(lengths) + 1, dtype=torch.int32)
    out[1:] = torch.cumsum(torch.tensor(lengths, dtype=torch.int64), 0).to(torch.int32)
    return out.cuda()


def torch_dtype(name: str) -> Any:
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": torch.float8_e4m3fn}[name]


def workspace(ctx: Any, name: str = "float_workspace", nbytes: int = WORKSPACE_BYTES) -> Any:
    """One float workspace per worker, reused by every point (wrappers only need it during run)."""
    import torch

    buf = ctx.cache.get(name)
    if buf is None or buf.numel() < nbytes:
        buf = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        ctx.cache[name] = buf
    return buf


def page_lists(
    lens: list[int], page_size: int, shared: PrefixGroups | None, perm: list[int]
) -> tuple[list[list[int]], int]:
    """Each request's page ids and how many distinct pages there are. Pages come from `perm` (a permutation of
    at least the distinct page count, SGLang's free list): a shared prefix's pages once per group, then every
    request's own pages. Raises ValueError on a prefix that is not whole pages or not shorter than a length."""
    if shared is not None:
        if len(shared.group) != len(lens):
            raise ValueError(f"prefix_groups: {len(shared.group)} groups for {len(lens)} requests")
        if shared.prefix_len % page_size:
            raise ValueError(f"prefix_groups: prefix {shared.prefix_len} is not whole pages of {page_size}")
    taken = iter(perm)
    prefix_pages = shared.prefix_len // page_size if shared is not None else 0
    groups: dict[int, list[int]] = {}
    out: list[list[int]] = []
    for i, n in enumerate(lens):
        g = shared.group[i] if shared is not None else -1
        head: list[int] = []
        if g >= 0:
            if n <= shared.prefix_len:
                raise ValueError(f"prefix_groups: request {i} has {n} KV tokens, not more than the prefix")
            if g not in groups:
                groups[g] = [next(taken) for _ in range(prefix_pages)]
            head = groups[g]
        own = math.ceil(n / page_size) - len(head)
        out.append(head + [next(taken) for _ in range(own)])
    return out, len(set(p for pages in out for p in pages))


def distinct_pages(lens: list[int], page_size: int, shared: PrefixGroups | None) -> int:
    """Pages `page_lists` takes for these requests: each request's own, each group's prefix once."""
    pages = sum(math.ceil(n / page_size) for n in lens)
    if shared is None:
        return pages
    return pages - shared.duplicated_reads() // page_size


def shared_page_lists(lens: list[int], page_size: int, shared: PrefixGroups) -> tuple[list[list[int]], int]:
    """page_lists over a free list drawn at random from exactly the distinct pages (ids 0..distinct - 1)."""
    import torch

    free = torch.randperm(distinct_pages(lens, page_size, shared)).tolist()
    return page_lists(lens, page_size, shared, free)


def paged_layout(
    lens: list[int], page_size: int, shared: PrefixGroups | None = None
) -> tuple[Any, Any, Any, int]:
    """CSR page table with pages scattered at random (SGLang allocates pages from a free list); with `shared`,
    the requests of a group point at the same prefix pages.

    Returns (kv_indptr int32 [B+1], kv_indices int32 [pages listed], last_page_len int32 [B], distinct pages:
    the pool the KV buffers must hold).
    """
    import torch

    pages = [math.ceil(n / page_size) for n in lens]
    indptr = torch.zeros(len(lens) + 1, dtype=torch.int32)
    indptr[1:] = torch.cumsum(torch.tensor(pages, dtype=torch.int64), 0).to(torch.int32)
    if shared is None:  # every page its own: one permutation on the GPU (millions of pages at long KV)
        total = sum(pages)
        indices = torch.randperm(total, device="cuda").to(torch.int32)
    else:
        lists, total = shared_page_lists(lens, page_size, shared)
        indices = torch.tensor([p for row in lists for p in row], dtype=torch.int32, device="cuda")
    last = torch.tensor(
        [n - (p - 1) * page_size for n, p in zip(lens, pages, strict=True)], dtype=torch.int32
    )
    return indptr.cuda(), indices, last.cuda(), total


def block_table(lens: list[int], page_size: int) -> tuple[Any, int]:
    """Dense [B, max_pages] page table (FlashMLA / trtllm style), pages scattered at random."""
    import torch

    pages = [math.ceil(n / page_size) for n in lens]
    total = sum(pages)
    perm = torch.randperm(total, device="cuda").to(torch.int32)
    table = torch.zeros(len(lens), max(pages), dtype=torch.int32, device="cuda")
    start = 0
    for i, p in enumerate(pages):
        table[i, :p] = perm[start : start + p]
        start += p
    return table, total


def probed_once(
    ctx: Any, key: str, probe: Callable[[], T], what: str, failure: Callable[[str], Exception] = Unsupported
) -> T:
    """probe()'s result, computed once per worker and kept in ctx.cache[key]; a failure is kept too and raised
    again on every later call (a worker does not retry a library that did not load or verify): Unsupported by
    default, or `failure` (e.g. a RuntimeError subclass for a kit that is missing, recorded as a failed row to
    retry with the kit). `what` opens the one-line message of an unexpected exception."""
    cached = ctx.cache.get(key)
    if isinstance(cached, Exception):
        raise cached
    if cached is not None:
        return cached
    try:
        result = probe()
    except Unsupported as exc:
        ctx.cache[key] = exc
        raise
    except Exception as exc:  # noqa: BLE001
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        error = failure(f"{what}: {reason}")
        ctx.cache[key] = error
        raise error from None
    ctx.cache[key] = result
    return result
