"""Decode attention priced from the kernels' own work plan: where the CTA waves and KV chunks fall.

A paged decode kernel does not stream the batch's KV evenly over the GPU. Its planner (run on the host before the
launch) cuts each request's KV into chunks and hands the chunks to a fixed number of CTA slots; the kernel lasts as
long as its busiest slot. That busiest slot's load — the **critical path**, in KV tokens — is what this module
computes, exactly as each backend's planner does:

* **flashinfer MLA** (`BatchMLAPagedAttentionWrapper`, backends fa2 and fa3; `MLAPlan` in flashinfer's
  `attention/scheduler.cuh`): num_SMs / cluster_size persistent clusters (two CTAs per cluster when the packed query
  q_len x heads exceeds 64); chunk limit f(ceil(Σkv / clusters)) rounded up to 256; each request's query tiles
  (last first) cut into chunks go in request order to the cluster with the least accumulated cost, cost =
  2 x cluster_tile_q + chunk length (`cost_function`). A verify call (q_len > 1) is planned causal: a tile other
  than the request's last reads only up to its own diagonal (`packed_causal_kv_end`).
* **flashinfer GQA decode on CUDA cores** (`BatchDecodeWithPagedKVCacheWrapper`,
  `BatchDecodeWithPagedKVCacheWorkEstimationDispatched`): a grid of max_grid = blocks_per_SM x num_SMs CTAs; when
  batch x kv_heads >= max_grid the KV is not split at all and every request is one CTA per KV head (CTA waves in
  launch order: the longest request is a straggler), otherwise the smallest chunk (>= 128 tokens) for which
  Σ ceil(pages_i / chunk) x kv_heads <= max_grid (binary search), all in one wave.
* **flashinfer GQA decode on tensor cores** (the prefill kernel; `PrefillPlan` / `PrefillBinarySearchKVChunkSize`):
  max_grid = 2 x num_SMs, at most max_grid / kv_heads work units; the same binary search over the chunk size; a
  batch that cannot be split that far runs unsplit, one CTA per request and KV head, in waves.
* **FlashMLA** (`get_mla_metadata`, sgl-flash-mla's legacy SM90 scheduler): num_SMs / ceil(q_len x heads / 64) SM
  parts; requests in 64-token blocks plus a fixed overhead of 5 blocks each, dealt out in request order so that
  every part gets at most ceil(Σ / parts) + 5 blocks, a request cut where a part's budget ends (`flashmla_parts`
  reproduces the kernel's own tile_scheduler_metadata exactly on all 63 bf16 batches of
  calibration/offgrid/flashmla-ragged-probe-h200.jsonl). A part's real cost is not the planner's: see
  `FLASHMLA_SEGMENT_BLOCKS`.

The tables measure uniform batches on a grid; a query between grid points, or a ragged batch, has a critical path
the grid interpolation does not see (a batch of 150 at 128 heads is two chunks per cluster where 128 was one). The
pricing (`planned_us`): interpolate the grid at the batch and mean KV as before, then multiply by
(W_query / W_grid)^s, where W_grid is the critical path interpolated over the same grid corners with the same
weights (so the factor is exactly 1 on a grid point of a uniform batch) and s, the time's elasticity in KV length
read off the key's own grid at that batch (0 where the kernel is latency-bound, ~1 where it streams), says how much
of the time moves with the work. Every number here is the planner's arithmetic or the table's own measurement,
except FlashMLA's segment and split costs, byte counts (FLASHMLA_SEGMENT_BLOCKS).

Tried and not used for flashinfer MLA: the ragged-prefill price of perfdb/prefillplan.py, floor + rate x critical
path with the rate from the key's own uniform rows near the call's path. (time - fastest row) / critical path is
flat on the grid only where the kernel streams (path >= ~4,000 units, p90/p10 ~1.1 within a key); below ~1,000 it
spreads ~8x (launch and merge latency; at equal path a batch of 1 costs ~25% more per unit than a batch of 4: its
partial outputs merge into one request). On the development sets it did not beat the factor (docs/perfdb.md).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np

from simperf.perfdb.keys import gqa_tensor_cores

# ops and backends whose planner is modelled
# Applied only where the tables' held-out and ragged rows confirm it (flashinfer MLA: its persistent clusters all
# stay busy, so the busiest cluster's load is the time). GQA decode's unsplit straggler runs alone on an otherwise
# idle GPU, faster per token than a loaded slot, and the factor overshoots the tables' ragged rows (median 9.5% ->
# 18%); that planner stays for the check. FlashMLA: its planner balances the blocks it counts, but a part's real
# cost counts segments and splits otherwise (FLASHMLA_SEGMENT_BLOCKS), so its plan is priced since the
# twenty-seventh session (docs/perfdb.md "FlashMLA: the planner's budget is not the kernel's cost").
PLANNED_BACKENDS = {"attn_mla_decode": ("flashinfer_fa2", "flashinfer_fa3", "flashmla")}
# FlashMLA's planner (get_mla_metadata) charges every request segment a part holds a fixed 5 blocks
# (FLASHMLA_PLANNER_FIXED_BLOCKS, its `fixed_overhead_num_blocks`) and balances parts on that budget. What a segment
# costs the kernel, in 64-token KV blocks of 576 bf16 values (73.7 KB): its query tile (64 rows x 576 bf16, one block's
# bytes), its output (64 rows x 512 bf16, 0.9 block) and the KV pipeline's start before the first block arrives,
# about 3 blocks; a segment that holds only part of its request (a split) writes its output as fp32 partials and
# log-sum-exps for the combine kernel instead, one block more. Byte counts, not a fit; of 2-5 and 0-2 blocks the
# development set's FlashMLA calls (calibration/offgrid/samples.jsonl) are best at 3 and any of 0-2 (1.5-2.4%
# median on both GPUs; 2: 2.4-2.7%, 5: 3.1-5.1%). With the planner's own 5 and no split cost, parts that hold few
# long segments were priced as heavy as parts of many short ones, and the batches where a uniform grid point fits
# whole requests into every part (no split, no combine) were 17-29% faster than ragged batches at their mean KV
# (calibration/offgrid/flashmla-ragged-probe-h200.jsonl, benchmarks/flashmla_ragged_probe.py).
FLASHMLA_PLANNER_FIXED_BLOCKS = 5
FLASHMLA_SEGMENT_BLOCKS = 3.0
FLASHMLA_SPLIT_BLOCKS = 1.0
FLASHMLA_BLOCK = 64
# flashinfer's CUDA-core decode kernel: CTAs per SM as its planner sizes the grid
# (cudaOccupancyMaxActiveBlocksPerMultiprocessor for the kernel of this query group size and head dim), read from the
# planner itself on a lent H200 with the GPU kit's flashinfer 0.7.2 (benchmarks/gqa_decode_occupancy.py; the file is
# calibration/offgrid/gqa-decode-occupancy-h200.json, and a test holds this literal to it). The group size sets the
# kernel's shared memory (tile_size_per_bdx 4 for group 1, else 1) and so its occupancy: 6 CTAs for group 1, 9-10
# for groups 2-3. The same kernel on an H100 has the same per-SM limits (both SM 9.0). Keyed (group, head_dim).
GQA_CUDA_CORE_BLOCKS_PER_SM = {
    (1, 64): 6, (2, 64): 9, (3, 64): 9,
    (1, 128): 6, (2, 128): 9, (3, 128): 9,
    (1, 256): 6, (2, 256): 9, (3, 256): 10,
}  # fmt: skip
ELASTICITY_MAX = 1.0


def planned(op: str, key: Mapping[str, object]) -> bool:
    return str(key.get("backend")) in PLANNED_BACKENDS.get(op, ())


def _mla_limit(x: int) -> int:
    if x <= 8:
        return 32
    if x <= 16:
        return 64
    if x <= 32:
        return 128
    if x <= 64:
        return 192
    return -(-x // 256) * 256


def mla_tile_kv(kv: int, q_len: int, tile_idx: int, tile: int, tiles: int, heads: int) -> int:
    """KV tokens one packed query tile of a request reads: flashinfer's `packed_causal_kv_end` (attention/
    scheduler.cuh) with group_size = num_heads, as MLAPlan calls it. A decode (q_len 1) is planned non-causal and
    every tile reads the whole KV; a verify (q_len > 1) causal (simperf/calibrate/backends/mla_flashinfer.py plans
    causal=max(q_lens) > 1): a tile other than the last stops at the diagonal of its last query token."""
    if q_len <= 1 or tile_idx + 1 == tiles:
        return kv
    return max(min(kv - q_len + -(-((tile_idx + 1) * tile) // heads), kv), 0)


def mla_flashinfer_path(kv: Sequence[int], q_len: int, heads: int, num_sms: int) -> float:
    """flashinfer MLAPlan (attention/scheduler.cuh): the largest accumulated cost of a cluster (planner units: KV
    tokens plus 2 x cluster_tile_q per chunk). Step 0: two-CTA clusters when the packed query q_len x heads exceeds
    64, num_SMs / cluster_size clusters, query tiles of cluster_tile_q = 64 x cluster_size packed rows; the chunk
    limit f(ceil(total / clusters)) over the tiles' KV. Step 1: requests in order, each request's tiles from the
    last to the first, each tile's KV in chunks of at most the limit, every chunk to the cluster of least cost
    (MinHeap; which of equal clusters takes it does not change the largest cost)."""
    packed = q_len * heads
    cluster = 2 if packed > 64 else 1
    clusters = num_sms // cluster
    tile = 64 * cluster
    tiles = -(-packed // tile)
    works = [mla_tile_kv(int(n), q_len, t, tile, tiles, heads) for n in kv for t in range(tiles - 1, -1, -1)]
    limit = _mla_limit(max(-(-sum(works) // clusters), 1))
    heap = [(0.0, c) for c in range(clusters)]
    for remaining in works:
        while True:  # a tile of no KV is still one work of cost 2 x cluster_tile_q (MLAPlan's zero_kv_len)
            cost, c = heapq.heappop(heap)
            chunk = min(remaining, limit)
            heapq.heappush(heap, (cost + 2 * tile + chunk, c))
            remaining -= chunk
            if remaining <= 0:
                break
    return max(cost for cost, _ in heap)


def _binary_search_chunk(pages: Sequence[int], units: int, lower: int) -> int:
    low, high = lower, max(max(pages), 1)
    while low < high:
        mid = (low + high) // 2
        if sum(-(-max(p, 1) // mid) for p in pages) > units:
            low = mid + 1
        else:
            high = mid
    return low


def _waves(lengths: Sequence[float], slots: int) -> float:
    """Makespan of CTAs of these lengths started in launch order on `slots` concurrent slots."""
    if len(lengths) <= slots:
        return float(max(lengths))
    heap = [float(x) for x in lengths[:slots]]
    heapq.heapify(heap)
    for x in lengths[slots:]:
        heapq.heappush(heap, heapq.heappop(heap) + float(x))
    return max(heap)


def cuda_core_blocks_per_sm(group: int, head_dim: int) -> int:
    """CTAs per SM of flashinfer's CUDA-core decode grid (GQA_CUDA_CORE_BLOCKS_PER_SM); a head dim not probed takes
    its group's value at 128 (the table shows the head dim moves it by at most one)."""
    return GQA_CUDA_CORE_BLOCKS_PER_SM.get(
        (group, head_dim), GQA_CUDA_CORE_BLOCKS_PER_SM.get((group, 128), 9)
    )


def gqa_flashinfer_ctas(kv: Sequence[int], key: Mapping[str, object], num_sms: int) -> tuple[list[int], int]:
    """flashinfer GQA decode plan of a key (page size, KV heads, which kernel, group size, head dim): (KV tokens of
    every CTA in launch order, CTA slots of the grid). Split: each request's KV in chunks (every chunk one CTA per KV
    head, one wave); unsplit: one CTA per request and KV head, launched with the batch index fastest."""
    page, kv_heads = int(key["page_size"]), int(key["num_kv_heads"])  # type: ignore[call-overload]
    pages = [-(-int(n) // page) for n in kv]
    lower = max(128 // page, 1)
    if gqa_tensor_cores(key):
        grid = 2 * num_sms
        chunk = _binary_search_chunk(pages, grid // kv_heads, lower)
        split = chunk < max(pages)
    else:
        group = int(key["num_heads"]) // kv_heads  # type: ignore[call-overload]
        grid = cuda_core_blocks_per_sm(group, int(key["head_dim"])) * num_sms  # type: ignore[call-overload]
        split = len(kv) * kv_heads < grid
        chunk = _binary_search_chunk(pages, grid // kv_heads, lower) if split else max(pages)
    if not split:
        return [p * page for p in pages] * kv_heads, grid
    works: list[int] = []
    for p in pages:
        full, rest = divmod(p, chunk)
        works += [chunk * page] * full + ([rest * page] if rest else [])
    return works * kv_heads, grid


# SGLang's FA3 decode (`sgl_fa3`; sgl-kernel 0.4.5's FlashAttention-3, SGLang 0.5.17's fa3 backend): KV blocks of
# 128 tokens (hdim 128, paged decode), packed query rows tiled by 64, and the context length SGLang's decode graph
# passes as max_seqlen_k (calibrate/backends/fa3_sgl.py DECODE_CONTEXT_LEN).
FA3_BLOCK_N = 128
FA3_BLOCK_M = 64
FA3_CONTEXT_LEN = 40960


def _fa3_static_splits(total_mblocks: int, num_sms: int, num_n_blocks: int, max_splits: int = 128) -> int:
    """FA3's num_splits_heuristic (hopper/heuristics.h) for a causal decode: one split once the query tiles fill
    80% of the SMs or the KV is <= 4 blocks; else the fewest splits within 85% of the best wave efficiency."""
    if total_mblocks >= 0.8 * num_sms or num_n_blocks <= 4:
        return 1
    top = min(max_splits, num_sms, num_n_blocks)
    efficiency = [(w := total_mblocks * n / num_sms) / math.ceil(w) for n in range(1, top + 1)]
    best = max(efficiency)
    return next(n for n, e in enumerate(efficiency, 1) if e >= 0.85 * best)


def fa3_splits(kv: Sequence[int], heads: int, kv_heads: int, num_sms: int) -> list[int]:
    """Splits of each request's KV as sgl-kernel's FA3 schedules a decode (get_scheduler_metadata): a cap from the
    heuristic over kv_heads x ceil(batch x q heads per KV head / 64) query tiles (the varlen total_q, packed GQA),
    then per request ceil(its blocks / blocks per SM) within the cap, blocks per SM = ceil(1.1 x all blocks x
    kv_heads / SMs) (hopper/flash_prepare_scheduler.cu). Read against the kernel's own metadata on a lent H100 for
    the 84 batches of the FA3 straggler sets: every request's split equal (calibration/offgrid/fa3-splits-h100.json,
    benchmarks/fa3_split_probe.py)."""
    tiles = kv_heads * -(-len(kv) * (heads // kv_heads) // FA3_BLOCK_M)
    blocks = [-(-max(int(n), 1) // FA3_BLOCK_N) for n in kv]
    cap = _fa3_static_splits(tiles, num_sms, -(-max(FA3_CONTEXT_LEN, max(int(n) for n in kv)) // FA3_BLOCK_N))
    if cap == 1:
        return [1] * len(kv)
    per_sm = math.ceil(sum(blocks) * 1.1 * kv_heads / num_sms)
    return [max(min(-(-b // per_sm), cap), 1) for b in blocks]


def fa3_ctas(kv: Sequence[int], key: Mapping[str, object], num_sms: int) -> tuple[list[int], int]:
    """FA3 decode plan: (KV tokens of every work tile in the order the persistent scheduler hands them out, the
    persistent CTAs). Requests longest first (varlen_sort_batches), each split into equal pieces, one tile per piece
    and KV head (packed GQA); one persistent CTA per SM."""
    heads, kv_heads = int(key["num_heads"]), int(key["num_kv_heads"])  # type: ignore[call-overload]
    splits = fa3_splits(kv, heads, kv_heads, num_sms)
    works: list[int] = []
    for n, s in sorted(zip((int(x) for x in kv), splits, strict=True), key=lambda t: -t[0]):
        piece = -(-n // s)
        works += [piece] * (s - 1) + [n - piece * (s - 1)]
    return [w for w in works for _ in range(kv_heads)], num_sms


def gqa_decode_ctas(kv: Sequence[int], key: Mapping[str, object], num_sms: int) -> tuple[list[int], int]:
    """The GQA decode plan of the key's backend (flashinfer or SGLang's FA3)."""
    if str(key.get("backend")) == "sgl_fa3":
        return fa3_ctas(kv, key, num_sms)
    return gqa_flashinfer_ctas(kv, key, num_sms)


def gqa_flashinfer_path(kv: Sequence[int], key: Mapping[str, object], num_sms: int) -> float:
    """flashinfer GQA decode plan: the longest chain of KV tokens on one CTA slot."""
    works, grid = gqa_flashinfer_ctas(kv, key, num_sms)
    return _waves(works, grid)


def flashmla_parts(kv: Sequence[int], q_len: int, heads: int, num_sms: int) -> list[tuple[int, int, int]]:
    """FlashMLA's plan (get_mla_metadata): per SM part, (request segments, KV blocks, segments that are a split of
    their request). Parts are filled in request order up to a budget of ceil(Σ(blocks + 5) / parts) + 5; a request
    that does not fit whole is cut where the budget ends (when more than the 5 fixed blocks are left) and goes on in
    the next part."""
    fixed = FLASHMLA_PLANNER_FIXED_BLOCKS
    num_parts = max(num_sms // max(-(-(q_len * heads) // 64), 1), 1)
    blocks = [-(-max(int(n), 1) // FLASHMLA_BLOCK) for n in kv]
    budget = -(-sum(b + fixed for b in blocks) // num_parts) + fixed
    parts: list[tuple[int, int, int]] = []
    request, done = 0, 0  # the request the next part starts in, and its blocks already dealt out
    for _ in range(num_parts):
        left, segments, part_blocks, splits = budget, 0, 0, 0
        while request < len(blocks):
            rest = blocks[request] - done
            if left >= rest + fixed:  # the rest of this request fits
                segments, part_blocks, splits = segments + 1, part_blocks + rest, splits + (done > 0)
                left -= rest + fixed
                request, done = request + 1, 0
                continue
            if left > fixed:  # a piece of it does: the request is split here
                segments, part_blocks, splits = segments + 1, part_blocks + left - fixed, splits + 1
                done += left - fixed
            break
        parts.append((segments, part_blocks, splits))
    return parts


def flashmla_path(kv: Sequence[int], q_len: int, heads: int, num_sms: int) -> float:
    """FlashMLA's busiest SM part in KV tokens: its blocks plus what its segments and splits cost the kernel
    (FLASHMLA_SEGMENT_BLOCKS, FLASHMLA_SPLIT_BLOCKS), over the planner's parts."""
    busiest = max(
        blocks + FLASHMLA_SEGMENT_BLOCKS * segments + FLASHMLA_SPLIT_BLOCKS * splits
        for segments, blocks, splits in flashmla_parts(kv, q_len, heads, num_sms)
    )
    return float(busiest * FLASHMLA_BLOCK)


def critical_path(op: str, key: Mapping[str, object], kv: Sequence[int], num_sms: int) -> float:
    backend = str(key["backend"])
    kv = [max(int(n), 1) for n in kv]
    if op == "attn_mla_decode":
        q_len, heads = int(key["q_len"]), int(key["num_heads"])  # type: ignore[arg-type]
        if backend == "flashmla":
            return flashmla_path(kv, q_len, heads, num_sms)
        return mla_flashinfer_path(kv, q_len, heads, num_sms)
    if op == "attn_gqa_decode":
        return gqa_flashinfer_path(kv, key, num_sms)
    raise ValueError(f"no work plan for {op} / {backend}")


@lru_cache(maxsize=65536)
def _uniform_path(op: str, key: tuple[tuple[str, object], ...], batch: int, kv: int, num_sms: int) -> float:
    return critical_path(op, dict(key), [kv] * batch, num_sms)


def _bracket(values: Sequence[float], x: float) -> list[tuple[float, float]]:
    """(grid value, weight) of the log-linear interpolation of x between its two grid neighbours; an x outside
    the grid keeps its own value (the grid extrapolates it by roofline, the work plan at the query itself)."""
    if len(values) < 2 or x <= values[0] or x >= values[-1]:
        return [(x, 1.0)]
    hi = bisect.bisect_left(values, x)
    if values[hi] == x:
        return [(x, 1.0)]
    lo_v, hi_v = values[hi - 1], values[hi]
    t = (math.log(x) - math.log(lo_v)) / (math.log(hi_v) - math.log(lo_v))
    return [(lo_v, 1.0 - t), (hi_v, t)]


def planned_factor(
    op: str,
    key: Mapping[str, object],
    kv_lens: Sequence[int] | np.ndarray,
    batch_grid: Sequence[float],
    kv_grid: Sequence[float],
    elasticity: float,
    num_sms: int,
) -> float:
    """(W_query / W_grid)^elasticity: W_grid the critical path interpolated over the uniform grid corners of the
    batch and mean KV, with the interpolation's weights."""
    kv = np.asarray(kv_lens, dtype=np.int64)
    batch, mean = len(kv), float(kv.mean())
    frozen = tuple(sorted((k, v) for k, v in key.items()))
    log_grid = 0.0
    for b, wb in _bracket(list(batch_grid), float(batch)):
        for k, wk in _bracket(list(kv_grid), mean):
            if wb * wk == 0.0:
                continue
            log_grid += wb * wk * math.log(_uniform_path(op, frozen, int(round(b)), int(round(k)), num_sms))
    query = critical_path(op, key, kv.tolist(), num_sms)
    return float((query / math.exp(log_grid)) ** elasticity)


def paired_clusters(op: str, key: Mapping[str, object]) -> bool:
    """flashinfer MLA with two-CTA clusters (q_len x heads > 64: 128 query rows per tile). Such a cluster is
    compute-bound (per KV token it does twice the math of a 64-row tile for the same bytes), so the busiest
    cluster's load sets the time in full, whatever the uniform grid's KV elasticity says (that elasticity is low at
    short KV because of the call's fixed cost). Taken as 1 there: on the development sets the ragged calls went
    8.0% -> 6.5% (H100) and 6.5% -> 5.9% (H200) median |error| (they were -11...-13% signed); one-CTA clusters
    (8-16 heads, memory-bound) keep the elasticity (+1...+4% signed). FlashMLA keeps the elasticity at every head
    count: taking 1 above 64 query rows changed nothing on the development set and put the tables' own off-grid
    FlashMLA rows' p90 at 14.6% against 12.6% (H200; batches of 2 at 128 heads priced 13-18% low)."""
    if op != "attn_mla_decode" or str(key.get("backend")) not in ("flashinfer_fa2", "flashinfer_fa3"):
        return False
    return int(key["q_len"]) * int(key["num_heads"]) > 64  # type: ignore[call-overload]


def kv_elasticity(curve: object, batch: float, mean_kv: float, kv_grid: Sequence[float]) -> float:
    """d log(time) / d log(kv_len) of the key's own grid at this batch, between the KV grid values around the
    mean (the nearest pair outside the grid), clamped to [0, 1]; 0 without a KV grid."""
    values = list(kv_grid)
    if len(values) < 2:
        return 0.0
    i = max(1, min(len(values) - 1, bisect.bisect_left(values, mean_kv)))
    k0, k1 = values[i - 1], values[i]
    t0 = float(curve(batch=float(batch), kv_len=float(k0))[0])  # type: ignore[operator]
    t1 = float(curve(batch=float(batch), kv_len=float(k1))[0])  # type: ignore[operator]
    return min(max(math.log(t1 / t0) / math.log(k1 / k0), 0.0), ELASTICITY_MAX)


def planned_us(curve: object, kv_lens: Sequence[int] | np.ndarray, num_sms: int) -> tuple[float, float]:
    """(time, work-plan factor) of a decode call with these per-request KV lengths: the curve at the batch and mean
    KV times (W_query / W_grid)^elasticity where the op and backend have a modelled planner (factor 1 elsewhere)."""
    from simperf.perfdb.db import _breakpoints

    kv = np.asarray(kv_lens, dtype=np.float64)
    batch, mean = float(kv.size), float(kv.mean())
    base = float(curve(batch=batch, kv_len=mean)[0])  # type: ignore[operator]
    op, key = curve.op, curve.key  # type: ignore[attr-defined]
    if not planned(op, key):
        return base, 1.0
    model = curve._model  # type: ignore[attr-defined]
    # a curve scaled from another GPU's tables interpolates on that GPU's grid: its corners are the work plan's
    reference = getattr(getattr(model, "model", None), "reference_curve", None)  # db._ScaledCurveModel
    if reference is not None:
        model = reference._model
    batch_grid, kv_grid = _breakpoints(model, "batch")[0], _breakpoints(model, "kv_len")[0]
    s = 1.0 if paired_clusters(op, key) else kv_elasticity(curve, batch, mean, kv_grid)
    factor = planned_factor(op, key, kv.astype(np.int64), batch_grid, kv_grid, s, num_sms)
    return base * factor, factor
