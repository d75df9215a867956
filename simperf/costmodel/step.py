"""SGLangStepCost: the time of one SGLang forward step on one rank, from the calibration tables.

Step time = sum over the step's ops (models.ops) of count x the perf database's timing of that op, plus one named
overhead (CUDA-graph replay, or per-kernel launch gaps when eager), docs/serving-model.md §8. Every op's time keeps the
source label the database gave it, so a step comes back split by schema.SOURCES.

Cost of a call matters (the simulator asks ~100k times): the row-dependent part of a decode step is cached per
padded batch, the attention part is one curve evaluation per attention op, vectorised over the k steps; extend
steps are cached per batch composition (LRU) and their row part per token count.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from typing import Any

import numpy as np

from simperf.costmodel import prefix_path, spec_verify
from simperf.costmodel.api import AddBySource, is_single_fresh_prompt
from simperf.costmodel.overhead import OVERHEAD_SOURCE, StepOverhead, step_overhead
from simperf.costmodel.rowtable import RowCostTable
from simperf.hardware.catalog import get_gpu
from simperf.models.arch import ModelArch
from simperf.models.kernels import Key, choose_key, elementwise_keys, gemm_keys
from simperf.models.ops import (
    ExtendPlan,
    OpCall,
    StepSettings,
    attention_ops,
    decode_attention_ops,
    decode_method,
    decode_row_ops,
    kernels_per_step,
    plan_extend,
    row_ops,
    uncosted_kernels_per_step,
)
from simperf.perfdb import ctastream, prefillplan
from simperf.perfdb.axisslice import AxisSlice
from simperf.perfdb.db import OpCurve, PerfDB
from simperf.perfdb.schema import SOURCE_INDEX, SOURCES
from simperf.scenario.backends import conversion_bytes_per_token_per_layer, kv_layout
from simperf.scenario.models import Overheads
from simperf.scenario.resolved import ResolvedServing
from simperf.sglang_defaults import (
    BREAKABLE_PREFILL_RULE_FROM,
    MLA_PREFILL_GRAPH_MAX_TOKENS,
    SGLANG_DEVICE_NAMES,
    version_tuple,
)

NUM_SOURCES = len(SOURCES)
_OVERHEAD_COLUMN = SOURCE_INDEX[OVERHEAD_SOURCE]
# the vocabulary the draft's top-k sampling cost was measured on (Llama-3's; Overheads.spec_draft_topk_us_per_row)
DRAFT_TOPK_VOCAB = 128_256
# a ragged decode batch's time beyond its mean-KV price (decode_straggler_us): a model over the tables' time and a
# measured per-CTA rate, so labelled as interpolated between measurements
_STRAGGLER_COLUMN = SOURCE_INDEX["interpolated"]


@dataclass(frozen=True)
class BreakdownRow:
    """One op of a step, for `simperf predict --breakdown`."""

    name: str  # e.g. "q_b_proj"
    op: str  # schema op, or "overhead"
    key: dict[str, Any]  # the table key used
    axes: dict[str, float]
    count: int  # calls per step
    us_per_call: float
    total_us: float
    source: str  # one of schema.SOURCES
    detail: str  # how the database obtained the number


class _LRU:
    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        value = self._items.get(key)
        if value is None:
            value = make()
            self._items[key] = value
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        else:
            self._items.move_to_end(key)
        return value


@dataclass(frozen=True)
class _DecodeAttention:
    """A decode attention op with its curve resolved; evaluated per call with that call's kv_len."""

    curve: OpCurve
    count: int
    fixed_axes: dict[str, float]  # every axis but kv_len
    along_kv: AxisSlice  # the curve as a function of kv_len at these fixed axes (exact inside the grid)
    kv_offset: float = 0.0  # added to the step's mean KV length (a verify step's q_len - 1 extra tokens)
    # 1 - the measured read cost of a shared prefix token (perfdb/shared_reads.py): the step's mean KV length drops
    # by this x its duplicated reads per row; 0 where the kernel's sharing was never measured (distinct price)
    shared_discount: float = 0.0


def _plus_constant(totals: list[float] | np.ndarray, us: float) -> list[float] | np.ndarray:
    """Every step's total plus `us` (the same list or array where `us` is 0)."""
    if not us:
        return totals
    return [t + us for t in totals] if isinstance(totals, list) else totals + us


def dsa_sparse_graph_max_tokens(arch: ModelArch, serving: ResolvedServing) -> int:
    """The largest extend a DSA model's server runs under its breakable prefill CUDA graph (which forces the sparse
    path), 0 where it runs none: the graph is off (ResolvedServing.prefill_cuda_graph), another model, or a release
    before the breakable rule simperf read (sglang_defaults.BREAKABLE_PREFILL_RULE_FROM; what older graphs chose is
    not checked). SGLang 0.5.17 captures an MLA-arch model up to MLA_PREFILL_GRAPH_MAX_TOKENS, capped by
    --max-total-tokens (server_args.py, _handle_gpu_memory_settings).

    Not under DP attention (0 there, the length rule as before): SGLang replays the graph only when every DP rank
    holds tokens and every rank's extend fits (prefill_cuda_graph_runner.py, can_run_graph: _has_inactive_dp_rank
    and the min-reduced can_run_dp_breakable_cuda_graph vote), which one rank's extend priced here does not know;
    the engine would have to pass that per iteration."""
    if (
        arch.attention != "dsa"
        or serving.layout.dp_attention > 1
        or not serving.prefill_cuda_graph
        or version_tuple(serving.sglang_version) < BREAKABLE_PREFILL_RULE_FROM
    ):
        return 0
    return min(MLA_PREFILL_GRAPH_MAX_TOKENS, serving.max_total_tokens)


class SGLangStepCost:
    """StepCostModel (costmodel.api) of SGLang on one rank.

    sm_major: compute capability major of the GPU (head padding of DSA kernels, §2.1); default from the catalogue.
    prefill_graph_max_tokens: extends up to this many tokens replay a prefill CUDA graph (absorbed MLA, graph
    replay overhead); 0 = never, until ResolvedServing carries SGLang 0.5.23's breakable-graph setting.
    """

    def __init__(
        self,
        arch: ModelArch,
        serving: ResolvedServing,
        db: PerfDB,
        overheads: Overheads,
        *,
        sm_major: int | None = None,
        prefill_graph_max_tokens: int = 0,
        extend_cache_size: int = 4096,
    ) -> None:
        if sm_major is None:
            sm_major = int(float(get_gpu(serving.gpu).sm))
        self.arch = arch
        self.serving = serving
        self.db = db
        self.overheads = overheads
        self.settings = StepSettings(
            layout=serving.layout,
            weight_dtype=serving.weight_dtype,
            kv_dtype=serving.kv_dtype,
            page_size=serving.page_size,
            prefill_backend=serving.prefill_backend,
            decode_backend=serving.decode_backend,
            sm_major=sm_major,
            sglang_device_name=SGLANG_DEVICE_NAMES.get(serving.gpu, ""),
            sglang_version=serving.sglang_version,
            prefill_graph_max_tokens=prefill_graph_max_tokens,
            dsa_dense_threshold=serving.dsa_dense_prefill_threshold,
            dsa_sparse_graph_max_tokens=dsa_sparse_graph_max_tokens(arch, serving),
        )
        # an extend's host time per kernel and its Overheads field: fixed by the server (prefill graph or eager) and
        # the model (a dense one's eager value was measured apart from an MoE / MLA one's)
        dense = not (arch.is_moe or arch.is_mla)
        self.extend_host_us_per_kernel = overheads.extend_launch_us(
            serving.prefill_backend, serving.prefill_cuda_graph, dense, serving.layout.tp
        )
        # a decode step outside CUDA graphs runs the same eager Python per layer (Overheads.eager_decode_us)
        self.eager_decode_host = overheads.eager_decode_us(dense, serving.layout.tp)
        self._chosen: dict[tuple[str, tuple[Key, ...], tuple[str, int] | None], tuple[Key, OpCurve]] = {}
        self._decode_rows: dict[int, tuple[np.ndarray, int]] = {}
        self._decode: dict[tuple[int, int, bool], tuple[np.ndarray, list[_DecodeAttention]]] = {}
        self._row_tables: dict[tuple[str, str], RowCostTable] = {}
        self._step_index = np.arange(4096)
        # _fast_decode_entry by (bs, padded bs, graph)
        self._decode_fast: dict[tuple[int, int, bool], tuple] = {}
        self._straggler_cache: dict[tuple[int, int, bool], list[tuple[_DecodeAttention, float, float]]] = {}
        self._extend = _LRU(extend_cache_size)
        # single fresh-prompt prefills by token count (None: that length takes the general path); prompt lengths
        # repeat far more often than whole batch compositions, and this skips building the LRU's byte keys
        self._fresh: dict[int, np.ndarray | None] = {}
        # the same for every length up to the row tables' limit, built at once on first use (_fresh_prefill_table)
        self._fresh_table: np.ndarray | None = None
        # fresh_prefill_totals by token count
        self._fresh_totals: dict[int, tuple[float, list[float]]] = {}
        self._fresh_applies: bool | None = None  # _fresh_prefill_applies, once known
        # kernels of a single fresh prompt's extend (the same for every length), once _single_fresh_prefill has run
        self._fresh_kernels = 0

    # ---- the StepCostModel protocol ----------------------------------------------------------------------------
    def extend_step(
        self,
        extend_lens: np.ndarray,
        prefix_lens: np.ndarray,
        decode_kv_lens: np.ndarray | None = None,
        gathered_rows: int | None = None,
        gathered_logit_rows: int | None = None,
    ) -> np.ndarray:
        """gathered_rows / gathered_logit_rows: under DP attention, the token rows and logit rows of all DP ranks
        together this step (the MLP/MoE, the gathers and the LM head run on them); default: DP x this rank's."""
        value, _kernels = self._extend_row(
            extend_lens, prefix_lens, decode_kv_lens, gathered_rows, gathered_logit_rows
        )
        return value.copy()

    def extend_host_us(
        self,
        extend_lens: np.ndarray,
        prefix_lens: np.ndarray,
        decode_kv_lens: np.ndarray | None = None,
        gathered_rows: int | None = None,
        gathered_logit_rows: int | None = None,
    ) -> float:
        """ExtendHostTime (costmodel.api): the CPU time launching this extend takes — its kernels times the
        extend host time per kernel measured for this server (Overheads.extend_launch_us) — whatever the GPU does
        meanwhile. extend_step already lasts at least this long; the scheduler's CPU is busy for it too."""
        _value, kernels = self._extend_row(
            extend_lens, prefix_lens, decode_kv_lens, gathered_rows, gathered_logit_rows
        )
        return kernels * self.extend_host_us_per_kernel[0]

    def _extend_row(
        self,
        extend_lens: np.ndarray,
        prefix_lens: np.ndarray,
        decode_kv_lens: np.ndarray | None,
        gathered_rows: int | None,
        gathered_logit_rows: int | None,
    ) -> tuple[np.ndarray, int]:
        """(per-source row, kernel count) of an extend: a single fresh prompt from its per-length table where that
        applies, any other batch from the general path (cached); do not modify the row."""
        if is_single_fresh_prompt(
            extend_lens,
            prefix_lens,
            _size(decode_kv_lens),
            gathered_rows is not None or gathered_logit_rows is not None,
        ):
            fresh = self._fresh_prefill(int(extend_lens[0]))
            if fresh is not None:
                return fresh, self._fresh_kernels
        ext = np.ascontiguousarray(extend_lens, dtype=np.int64)
        pre = np.ascontiguousarray(prefix_lens, dtype=np.int64)
        dec = None if decode_kv_lens is None else np.ascontiguousarray(decode_kv_lens, dtype=np.int64)
        return self._extend_priced(ext, pre, dec, gathered_rows, gathered_logit_rows)

    def _extend_priced(
        self,
        ext: np.ndarray,
        pre: np.ndarray,
        dec: np.ndarray | None,
        gathered_rows: int | None,
        gathered_logit_rows: int | None,
    ) -> tuple[np.ndarray, int]:
        """(_extend_cost's per-source row, its kernel count), cached by the batch (do not modify the row)."""
        cache_key = (
            ext.tobytes(),
            pre.tobytes(),
            None if dec is None or dec.size == 0 else dec.tobytes(),
            gathered_rows,
            gathered_logit_rows,
        )
        return self._extend.get_or_make(
            cache_key, lambda: self._extend_cost(ext, pre, dec, gathered_rows, gathered_logit_rows)
        )

    def decode_steps(
        self,
        bs: int,
        padded_bs: int,
        kv_total: np.ndarray,
        graph: bool,
        shared_kv: float = 0.0,
        straggler_us: float = 0.0,
    ) -> np.ndarray:
        if bs < 1 or padded_bs < bs:
            raise ValueError(f"need 1 <= bs <= padded_bs, got bs={bs}, padded_bs={padded_bs}")
        base, attention, eager = self._decode_entry(bs, padded_bs, graph)
        kv_mean = self._attention_kv_mean(
            np.asarray(kv_total, dtype=np.float64).reshape(-1), bs, padded_bs, graph
        )
        shared_per_row = shared_kv / self._attention_rows(bs, padded_bs, graph)
        k = kv_mean.size
        out = np.empty((k, NUM_SOURCES))
        out[:] = base
        for a in attention:
            shift = a.kv_offset - a.shared_discount * shared_per_row
            us, src = a.along_kv.values(kv_mean + shift if shift else kv_mean)
            if isinstance(src, int):
                out[:, src] += us * a.count
            else:
                # (step, source) pairs are distinct within one op, so fancy-index addition is exact
                steps = self._step_index[:k] if k <= len(self._step_index) else np.arange(k)
                out[steps, src] += us * a.count
        if straggler_us:
            out[:, _STRAGGLER_COLUMN] += straggler_us
        if graph:
            out[:, _OVERHEAD_COLUMN] += self.spec_worker_idle_us(bs)
        if eager is not None:
            out[:, _OVERHEAD_COLUMN] += eager.excess_us(out.sum(axis=1))
        return out

    def spec_draft_prefill_host_us(self) -> float:
        """Host time of a speculative extend beyond its GPU time: SGLang launches the draft's prefill from the host
        only after the target's prefill has ended on the GPU (Overheads.spec_draft_prefill_host_us, measured on
        served EAGLE and plain prefills). 0 without speculative decoding."""
        return 0.0 if self.serving.speculative is None else self.overheads.spec_draft_prefill_host_us

    def spec_worker_idle_us(self, bs: int) -> float:
        """The GPU's idle time per speculative decode iteration replayed in CUDA graphs while SGLang's EAGLE worker
        launches its small kernels between the graphs (Overheads.spec_worker_idle_us, measured on served EAGLE
        decodes): per iteration plus per running request. 0 without speculative decoding. An eager step is
        host-bound already: its launch excess holds this time."""
        if self.serving.speculative is None:
            return 0.0
        o = self.overheads
        return o.spec_worker_idle_us + o.spec_worker_idle_us_per_running_request * bs

    def _straggler_ops(
        self, bs: int, padded_bs: int, graph: bool
    ) -> list[tuple[_DecodeAttention, float, float]]:
        """The decode attention ops whose kernel a CTA stream rate was measured for, as (op, bytes/s, µs per
        token of one CTA streaming alone): cached per (bs, padded bs, graph)."""
        key = (bs, padded_bs, graph)
        streaming = self._straggler_cache.get(key)
        if streaming is None:
            _, attention, _ = self._decode_entry(bs, padded_bs, graph)
            streaming = []
            for a in attention:
                stream = ctastream.rate_for(a.curve.op, a.curve.key, self.db.cta_stream)
                if stream is not None and not a.kv_offset:
                    streaming.append((a, stream[0], ctastream.bytes_per_token(a.curve.key) / stream[0] * 1e6))
            self._straggler_cache[key] = streaming
        return streaming

    def _straggling(self, bs: int, padded_bs: int, graph: bool, kv_total: int, kv_max: int) -> list:
        """(op, rate, its table time at the mean KV) for each op whose longest request's lone stream outlasts the
        uniform batch: only such a request can straggle. Below that the model's difference is the waves' packing
        (a few % of the attention on range-ratio batches), not priced: its fluid makespan on every decode run
        tripled the simulator's time on the Vidur workload (docs/costmodel.md)."""
        if bs < 1 or self.db.cta_stream is None:
            return []
        streaming = self._straggler_ops(bs, padded_bs, graph)
        if not streaming:
            return []
        rows = self._attention_rows(bs, padded_bs, graph)
        kv_rows = max(kv_total, bs) + (rows - bs)
        mean = kv_rows / rows
        found = []
        for a, rate, us_per_token in streaming:
            # the batch cannot stream faster than the GPU's peak HBM bandwidth: a cheap lower bound of its table
            # time that spares the curve lookup on most steps (the exact test follows)
            kv_heads = int(a.curve.key["num_kv_heads"])  # type: ignore[call-overload]
            floor_us = kv_rows * kv_heads * us_per_token * rate / self.db.gpu.hbm_bytes_per_s
            if max(kv_max, 1) * us_per_token <= floor_us:
                continue
            table_us = float(a.curve(**a.fixed_axes, kv_len=mean)[0])
            if max(kv_max, 1) * us_per_token > table_us:
                found.append((a, rate, table_us))
        return found

    def straggler_possible(self, bs: int, padded_bs: int, graph: bool, kv_total: int, kv_max: int) -> bool:
        """Whether decode_straggler_us can be above 0 for a batch of this KV total and longest KV (O(1))."""
        return bool(self._straggling(bs, padded_bs, graph, kv_total, kv_max))

    def decode_straggler_us(self, bs: int, padded_bs: int, graph: bool, kv_lens: Sequence[int]) -> float:
        """µs a decode step of these requests (KV lengths incl. the token decoded) takes beyond its mean-KV price:
        flashinfer's GQA decode runs an unsplit batch as one CTA per request and KV head, so a long request streams
        alone at one CTA's measured rate after the short ones are done (perfdb/ctastream.py, where the designed
        straggler set measured that rate per kernel). 0 where the decode attention is another kernel, this GPU's
        rate was never measured or no request's lone stream outlasts the batch (`_straggling`); never below 0 (a
        batch is not faster than its mean-KV price). The padding rows of a replayed CUDA graph attend one token
        each, as `_attention_kv_mean` counts them."""
        kv = [max(int(n), 1) for n in kv_lens]
        found = self._straggling(bs, padded_bs, graph, sum(kv), max(kv, default=1))
        if not found:
            return 0.0
        kv += [1] * (self._attention_rows(bs, padded_bs, graph) - len(kv))
        extra = 0.0
        for a, rate, table_us in found:
            extra += ctastream.ragged_extra_us(table_us, a.curve.key, kv, self.db.gpu.num_sms, rate) * a.count
        return max(extra, 0.0)

    def decode_totals(
        self,
        bs: int,
        padded_bs: int,
        kv_total: list[float] | np.ndarray,
        graph: bool,
        shared_kv: float = 0.0,
        straggler_us: float = 0.0,
    ) -> tuple[list[float], AddBySource]:
        """decode_steps for the simulator's hot loop: per-step totals (µs), and `add_by_source(acc, n)`, which adds
        the per-source sum over the first n steps to `acc` (a list of len(SOURCES) floats) — the same numbers as
        decode_steps, without building the (k, sources) matrix. shared_kv: duplicated prefix reads of the batch
        (constant over the steps: the running set does not change within them), as in decode_steps.

        kv_total may be a list: most calls cover a few steps, where numpy's per-call overhead would dominate, so
        the arithmetic around the curve lookups runs on Python floats (the same IEEE operations as the arrays)."""
        entry = self._decode_fast.get((bs, padded_bs, graph))
        if entry is None:
            entry = self._decode_fast[(bs, padded_bs, graph)] = self._fast_decode_entry(bs, padded_bs, graph)
        base, base_list, base_total, attention, eager, pad, div = entry
        small = isinstance(kv_total, list)
        if small:
            kv_mean: list[float] | np.ndarray = (
                [(x + pad) / div for x in kv_total] if pad else [x / div for x in kv_total]
            )
        else:
            kv_mean = (kv_total + pad) / div if pad else kv_total / div
        totals: list[float] | np.ndarray | None = None
        parts: list[tuple[list[float], np.ndarray | None, int | np.ndarray]] = []
        for along, count, kv_offset, discount in attention:
            offset = kv_offset - discount * shared_kv / div if shared_kv and discount else kv_offset
            scalar = None
            if small:
                xs = [m + offset for m in kv_mean] if offset else kv_mean
                scalar = along.values_list(xs)
            if scalar is not None:
                us_scalar, src = scalar
                us_list = [u * count for u in us_scalar]
                us = None  # a scalar answer has one label: add_by_source needs only the list
            else:
                x = np.array(xs) if small else (kv_mean + offset if offset else kv_mean)
                us, src = along.values(x)
                us = us * count
                us_list = us.tolist()
            if small:
                totals = (
                    [u + base_total for u in us_list]
                    if totals is None
                    else [t + u for t, u in zip(totals, us_list, strict=True)]
                )
            else:
                totals = us + base_total if totals is None else totals + us
            parts.append((us_list, us, src))
        if totals is None:
            totals = [base_total] * len(kv_mean)
        totals = _plus_constant(totals, straggler_us)
        excess = None
        if eager is not None:
            totals = np.asarray(totals, dtype=np.float64)
            excess = eager.excess_us(totals)
            totals += excess
        totals_list = totals if isinstance(totals, list) else totals.tolist()

        def add_by_source(acc: list[float], n: int) -> None:
            out = [b * n for b in base_list]
            for us_list, us, src in parts:
                if isinstance(src, int):
                    out[src] += sum(us_list[:n])  # a few values: cheaper than a numpy reduction
                else:
                    counts = np.bincount(src[:n], weights=us[:n], minlength=NUM_SOURCES).tolist()
                    out = [o + c for o, c in zip(out, counts, strict=True)]
            out[_STRAGGLER_COLUMN] += straggler_us * n  # exact when 0: x + 0.0 == x
            if excess is not None:
                out[_OVERHEAD_COLUMN] += float(excess[:n].sum())
            for i, o in enumerate(out):
                acc[i] += o

        return totals_list, add_by_source

    def _fast_decode_entry(self, bs: int, padded_bs: int, graph: bool) -> tuple:
        """_decode_entry unpacked for decode_totals: base per source (array and list), its sum, (slice, count, KV
        offset) per attention op, the eager overhead, and the padding/divisor of the mean KV length."""
        base, attention, eager = self._decode_entry(bs, padded_bs, graph)
        idle = self.spec_worker_idle_us(bs) if graph else 0.0
        if idle:
            base = base.copy()  # the entry is shared by every bs of the graph bucket
            base[_OVERHEAD_COLUMN] += idle
        pad, div = (padded_bs - bs, padded_bs) if graph and padded_bs > bs else (0, bs)
        ops = [(a.along_kv, a.count, a.kv_offset, a.shared_discount) for a in attention]
        return base, base.tolist(), float(base.sum()), ops, eager, pad, div

    # ---- breakdowns ---------------------------------------------------------------------------------------------
    def breakdown_extend(
        self,
        extend_lens: np.ndarray,
        prefix_lens: np.ndarray,
        decode_kv_lens: np.ndarray | None = None,
        gathered_rows: int | None = None,
        gathered_logit_rows: int | None = None,
    ) -> list[BreakdownRow]:
        ops = self.extend_ops(extend_lens, prefix_lens, decode_kv_lens, gathered_rows, gathered_logit_rows)
        if self.serving.speculative is not None:
            ops += self._draft_prefill_ops(
                extend_lens, prefix_lens, decode_kv_lens, gathered_rows, gathered_logit_rows
            )
        rows = [self._breakdown_row(op) for op in ops]
        tokens = int(sum(int(x) for x in extend_lens))
        graph = self._extend_graph(tokens + _size(decode_kv_lens))
        rows.append(self._overhead_row(graph, kernels_per_step(ops, self.arch), rows, extend=True))
        draft_host = self.spec_draft_prefill_host_us()
        if draft_host:
            rows.append(self._spec_draft_prefill_row(tokens, draft_host))
        return rows

    def _spec_draft_prefill_row(self, tokens: int, us: float) -> BreakdownRow:
        return _named_cost_row(
            "spec_draft_prefill_host",
            "spec_draft_prefill_host",
            tokens,
            1,
            us,
            "named overhead Overheads.spec_draft_prefill_host_us: the draft's prefill launched from the host after "
            "the target's has ended on the GPU (served EAGLE and plain prefills on one host)",
        )

    def breakdown_decode(
        self, bs: int, padded_bs: int, kv_total: int, graph: bool, shared_kv: float = 0.0
    ) -> list[BreakdownRow]:
        rows_bs = padded_bs if graph else bs
        kv_mean = float(self._attention_kv_mean(np.asarray(float(kv_total)), bs, padded_bs, graph))
        shared_per_row = shared_kv / self._attention_rows(bs, padded_bs, graph)
        ops = self.decode_ops(rows_bs, padded_bs, kv_mean, shared_per_row)
        rows = [self._breakdown_row(op) for op in ops]
        if shared_per_row:
            rows = [
                self._shared_read_note(row, op, shared_per_row) for row, op in zip(rows, ops, strict=True)
            ]
        if self.arch.num_moe_layers:
            rows.append(self._router_row(rows_bs))
        topk_us = self.draft_topk_us(rows_bs)
        if topk_us:
            rows.append(self._draft_topk_row(rows_bs, topk_us))
        rows.append(self._overhead_row(graph, kernels_per_step(ops, self.arch), rows))
        idle = self.spec_worker_idle_us(bs) if graph else 0.0
        if idle:
            rows.append(self._spec_idle_row(bs, idle))
        return rows

    def draft_topk_us(self, rows_bs: int) -> float:
        """GPU time of the draft's sampling over one speculative iteration when it keeps more than one candidate a
        step (softmax over the vocabulary and torch.topk, which no table times; Overheads.spec_draft_topk_us_*,
        measured on served EAGLE tree decodes): the first draft step samples one row per request, each later step
        top-k rows per request. 0 without speculative decoding or with top-k 1 (an argmax kernel)."""
        spec = self.serving.speculative
        if spec is None or spec.eagle_topk <= 1:
            return 0.0
        o = self.overheads
        rows = rows_bs * (1 + (spec.num_steps - 1) * spec.eagle_topk)
        per_row = o.spec_draft_topk_us_per_row * self.draft_arch.vocab_size / DRAFT_TOPK_VOCAB
        return spec.num_steps * o.spec_draft_topk_us_per_step + rows * per_row

    def _draft_topk_row(self, rows_bs: int, us: float) -> BreakdownRow:
        spec = self.serving.speculative
        return _named_cost_row(
            "draft.topk",
            "draft_topk",
            rows_bs,
            spec.num_steps,
            us,
            "named GPU cost Overheads.spec_draft_topk_us_per_step + spec_draft_topk_us_per_row x rows "
            f"sampled (top-k {spec.eagle_topk}, vocabulary {self.draft_arch.vocab_size:,}): the draft's softmax and "
            "top-k, which no table times (measured on served EAGLE tree decodes of Llama-3.1-8B, H200, "
            "docs/overheads.md; another vocabulary or GPU: an estimate)",
        )

    def _spec_idle_row(self, bs: int, idle_us: float) -> BreakdownRow:
        o = self.overheads
        return _named_cost_row(
            "spec_worker_idle",
            "overhead",
            bs,
            1,
            idle_us,
            f"named overhead Overheads.spec_worker_idle_us ({o.spec_worker_idle_us:.0f} us) + "
            f"spec_worker_idle_us_per_running_request ({o.spec_worker_idle_us_per_running_request:.1f} us) x {bs} "
            "running: the GPU idle while SGLang's EAGLE worker launches its kernels between graphs (measured on "
            "served Llama-3.1-8B EAGLE decodes, H200, docs/overheads.md; other models an estimate)",
        )

    def _decode_router_us(self) -> float:
        """SGLang's router top-k kernel, once per MoE layer of the (target) forward: GPU time no table holds
        (Overheads.decode_moe_router_us). A speculative step's draft-layer routers are left out."""
        return self.overheads.decode_moe_router_us * self.arch.num_moe_layers

    def _router_row(self, rows_bs: int) -> BreakdownRow:
        return _named_cost_row(
            "moe.router",
            "moe_router",
            rows_bs,
            self.arch.num_moe_layers,
            self._decode_router_us(),
            "named GPU cost Overheads.decode_moe_router_us per MoE layer: SGLang's router top-k kernel, which "
            "no table times (measured on profiled Qwen3-30B-A3B decodes, H100, docs/overheads.md; other models' "
            "routers and other GPUs: an estimate)",
        )

    def _shared_read_note(self, row: BreakdownRow, op: OpCall, shared_per_row: float) -> BreakdownRow:
        """A decode attention row's detail says what its shared prefix reads cost, or that they were not measured."""
        if "kv_len" not in op.axes:
            return row
        found = self.shared_read_cost(op)
        if found is None:
            note = (
                f"{shared_per_row:.0f} of each request's KV tokens are shared prefix pages another request "
                "reads: priced as distinct (this kernel's shared reads were never measured on this GPU)"
            )
        else:
            note = (
                f"{shared_per_row:.0f} of each request's KV tokens are shared prefix reads, priced at "
                f"{found[0]:.3g} of a distinct one (measured on {found[1]}, perfdb/shared_reads.py)"
            )
        return dc_replace(row, detail=f"{row.detail}; {note}")

    # ---- op lists (public for reports and tests) ---------------------------------------------------------------
    def _draft_prefill_ops(
        self,
        extend_lens: np.ndarray,
        prefix_lens: np.ndarray,
        decode_kv_lens: np.ndarray | None,
        gathered_rows: int | None,
        gathered_logit_rows: int | None,
    ) -> list[OpCall]:
        """The draft layer's forward over an extend's tokens (docs/serving-model.md §3, prefill), as _extend_cost
        prices it: its rows, its [embedding, hidden] projection and its attention, named draft_extend.*."""
        plan = plan_extend(self.arch, self.settings, extend_lens, prefix_lens, decode_kv_lens)
        rows, attention = self._extend_forward_ops(self.draft_arch, plan, gathered_rows, gathered_logit_rows)
        return _tagged([*rows, self._eh_proj(plan.num_tokens), *attention], "draft_extend")

    def _extend_forward_ops(
        self, arch: ModelArch, plan: ExtendPlan, gathered_rows: int | None, gathered_logit_rows: int | None
    ) -> tuple[list[OpCall], list[OpCall]]:
        """One model's forward over an extend plan's tokens: (row ops, attention ops)."""
        rows = row_ops(
            arch,
            self.settings,
            plan.num_tokens,
            plan.num_logit_rows,
            plan.method,
            self._has,
            gathered_rows,
            gathered_logit_rows,
        )
        attention = attention_ops(
            arch, self.settings, plan.groups, plan.method, "extend", plan.skip_indexer_logits
        )
        return rows, attention

    def extend_ops(
        self,
        extend_lens: np.ndarray,
        prefix_lens: np.ndarray,
        decode_kv_lens: np.ndarray | None = None,
        gathered_rows: int | None = None,
        gathered_logit_rows: int | None = None,
    ) -> list[OpCall]:
        """The ops of one extend step (without speculative decoding's draft work), KV-layout conversion included."""
        plan = plan_extend(self.arch, self.settings, extend_lens, prefix_lens, decode_kv_lens)
        rows, attention = self._extend_forward_ops(self.arch, plan, gathered_rows, gathered_logit_rows)
        ops = rows + attention
        convert = self._kv_conversion_op(plan)
        return ops if convert is None else [*ops, convert]

    def decode_ops(self, bs: int, padded_bs: int, kv_len: float, shared_per_row: float = 0.0) -> list[OpCall]:
        """One decode iteration's ops at mean KV length `kv_len`; each attention op at its effective length when
        `shared_per_row` of every row's KV tokens are shared prefix reads (perfdb/shared_reads.py)."""
        rows, attention = self.decode_parts(bs, padded_bs, kv_len)
        out = list(rows)
        for op, offset in attention:
            shift = offset - self._shared_discount(op) * shared_per_row if shared_per_row else offset
            out.append(
                dc_replace(op, axes={**op.axes, "kv_len": np.asarray(op.axes["kv_len"]) + shift})
                if shift
                else op
            )
        return out

    # ---- internals ------------------------------------------------------------------------------------------------
    @property
    def draft_arch(self) -> ModelArch:
        """The speculative draft model: the checkpoint's single MTP / EAGLE decoder layer (MoE for DeepSeek)."""
        return self.arch.speculative_draft()

    def _has(self, op: str, key: dict[str, Any]) -> int:
        return self.db.table_rank(op, key)

    def resolve(self, op: OpCall) -> tuple[Key, OpCurve]:
        """The key the step prices this op with and its curve (costmodel/sources.py reports them)."""
        return self._resolve(op)

    def _resolve(self, op: OpCall) -> tuple[Key, OpCurve]:
        """The key the step prices this op with. Tables first, by precedence: the first candidate a table of this
        GPU covers (measured or imported for it), else the first one the scaled-from reference covers (a table for
        the target GPU beats any table scaled from another GPU, whatever the candidates' order; docs/b200.md).
        With no table for any candidate: the candidate whose nearest measured key is nearest (PerfDB.covers, the
        earlier one on a tie), priced from that key; else the preferred one (the bare roofline)."""
        ck = (op.op, op.candidates, op.spec_path)
        hit = self._chosen.get(ck)
        if hit is None:
            key = choose_key(op.candidates, lambda k: self.db.table_rank(op.op, dict(k)))
            if self.db.table_rank(op.op, dict(key)) == 0:
                best = None
                for candidate in op.candidates:
                    distance = self.db.covers(op.op, dict(candidate))
                    if distance is not None and (best is None or distance < best):
                        key, best = candidate, distance
            curve = self.db.curve(op.op, dict(key))
            if self.db.prefix_path is not None and prefix_path.applies(
                op.op, dict(key), self.settings.prefill_backend, self.arch.is_mla
            ):
                curve = prefix_path.PrefixPathCurve(curve, self.db.prefix_path)
            if op.spec_path is not None and self.db.spec_verify is not None:
                curve = spec_verify.SpecVerifyCurve(curve, self.db.spec_verify, *op.spec_path)
            hit = (key, curve)
            self._chosen[ck] = hit
        return hit

    def bare_roofline_ops(self) -> list[str]:
        """The ops priced so far by the roofline alone (no table of the op covers them), as 'op (key)'."""
        return sorted(
            f"{curve.op} ({', '.join(f'{c}={v}' for c, v in curve.key.items())})"
            for _, curve in self._chosen.values()
            if curve.backing == "roofline"
        )

    def _sum_ops(self, ops: Sequence[OpCall]) -> np.ndarray:
        """Time per source of ops whose axes are scalars."""
        out = np.zeros(NUM_SOURCES)
        for op in ops:
            _, curve = self._resolve(op)
            us, src = curve(**{name: float(v) for name, v in op.axes.items()})
            planned = self._planned_extend(op, curve, float(us))
            if planned is not None:
                us = planned[0]
            elif op.floor_axes is not None:
                floor_us, floor_src = curve(**op.floor_axes)
                if float(floor_us) > float(us):
                    us, src = floor_us, floor_src
            out[int(src)] += float(us) * op.count
        return out

    def _planned_extend(
        self, op: OpCall, curve: OpCurve, equivalent_us: float, describe: bool = False
    ) -> tuple[float, str] | None:
        """(time, how: only when `describe`) of a ragged extend call whose kernel's planner is modelled
        (perfdb/prefillplan.py): the busiest CTA at the key's own rate, times what a PrefixPathCurve multiplies the
        one-kernel time by at the batch's work-equivalent axes (SGLang's split of an extend over a cached prefix);
        None for any other call."""
        if op.requests is None:
            return None
        # a PrefixPathCurve prices SGLang's kernels from the table's one: the plan prices the table's kernel
        base = getattr(curve, "_base", curve)
        rates = self.db.prefill_rates(base.op, base.key) if base.measured else None
        if rates is None:
            return None
        found = prefillplan.planned_us(rates, np.asarray(op.requests[0]), np.asarray(op.requests[1]))
        if found is None:
            return None
        us, path = found
        axes = {name: float(v) for name, v in op.axes.items()}
        factor = 1.0 if base is curve else equivalent_us / float(base(**axes)[0])
        how = ""
        if describe:
            how = prefillplan.describe(rates, path)
            if factor != 1.0:
                how += f"; x{factor:.3g} for SGLang's split of an extend over a cached prefix"
        return us * factor, how

    def decode_parts(
        self, bs: int, padded_bs: int, kv_len: float = 1.0
    ) -> tuple[list[OpCall], list[tuple[OpCall, float]]]:
        """One decode iteration as (row ops, [(attention op, KV offset)]).

        Without speculative decoding: one target forward. With it (docs/serving-model.md §3): num_steps - 1 draft forwards on
        bs·topk rows, one target verify on bs·num_draft_tokens rows (attention q_len = num_draft_tokens over the
        KV plus the draft tokens), and one draft extend on bs·num_draft_tokens rows. The draft model is the
        checkpoint's MTP / EAGLE layer: one decoder layer plus its projection of [embedding, hidden] and the LM head.
        """
        s, arch = self.settings, self.arch
        spec = self.serving.speculative
        if spec is None:
            rows = decode_row_ops(arch, s, padded_bs, self._has)
            return rows, [(op, 0.0) for op in decode_attention_ops(arch, s, bs, kv_len)]
        d, n, k = spec.num_draft_tokens, spec.num_steps, spec.eagle_topk
        method = decode_method(arch)
        draft = self.draft_arch
        rows: list[OpCall] = []
        attention: list[tuple[OpCall, float]] = []

        # without a measured verify path (perfdb/spec_verify.py) both q_len > 1 steps stay on the prefill tables
        measured_path = self.db.spec_verify is not None
        # every speculative forward is a decode-mode batch replayed in a CUDA graph: under DP attention its rows move
        # in MAX_LEN padding like a decode's (SGLang 0.5.17 layers/dp_attention.py, get_default_mode_in_cuda_graph;
        # get_dp_padding_mode picks SUM_LEN only with an extend in the batch)
        pad = "max_len"
        rows += _tagged(
            row_ops(arch, s, padded_bs * d, padded_bs * d, method, self._has, dp_padding=pad), "verify"
        )
        attention += [
            (op, d - 1.0)
            for op in _tagged(
                decode_attention_ops(
                    arch, s, bs, kv_len, q_len=d, spec_kind="verify" if measured_path else None
                ),
                "verify",
            )
        ]
        if n > 1:
            draft_rows = row_ops(draft, s, padded_bs * k, padded_bs * k, method, self._has, dp_padding=pad)
            rows += _tagged(draft_rows + [self._eh_proj(padded_bs * k)], "draft", n - 1)
            attention += [
                (op, 0.0) for op in _tagged(decode_attention_ops(draft, s, bs * k, kv_len), "draft", n - 1)
            ]
        rows += _tagged(
            row_ops(draft, s, padded_bs * d, padded_bs * d, method, self._has, dp_padding=pad), "draft_extend"
        )
        rows += _tagged([self._eh_proj(padded_bs * d)], "draft_extend")
        attention += [
            (op, d - 1.0)
            for op in _tagged(
                decode_attention_ops(
                    draft, s, bs, kv_len, q_len=d, spec_kind="draft_extend" if measured_path else None
                ),
                "draft_extend",
            )
        ]
        return rows, attention

    def _kv_conversion_op(self, plan) -> OpCall | None:
        """Prefill reading another KV layout than decode stores: convert the batch's KV once per layer (§4.3)."""
        s = self.serving
        src = kv_layout(self.arch, s.decode_backend, s.kv_dtype)
        dst = kv_layout(self.arch, s.prefill_backend, s.kv_dtype)
        if src == dst:
            return None
        read, written = conversion_bytes_per_token_per_layer(src, dst)
        kv_tokens = float(sum(float(np.sum(g.kv_tokens)) for g in plan.groups))
        keys = elementwise_keys("kv_convert", read + written)
        return OpCall("kv_layout_convert", "elementwise", keys, {"m": kv_tokens}, self.arch.num_layers)

    @staticmethod
    def _attention_rows(bs: int, padded_bs: int, graph: bool) -> int:
        """Requests the decode attention kernel runs: the graph bucket's padded batch when replayed."""
        return padded_bs if graph and padded_bs > bs else bs

    @staticmethod
    def _attention_kv_mean(kv_total: np.ndarray, bs: int, padded_bs: int, graph: bool) -> np.ndarray:
        """Mean KV length per attention row. A CUDA graph replays the bucket's batch: the padding rows attend one
        token each (SGLang's fill value), so the kernel sees `padded_bs` requests holding the real KV plus one
        token per padding row — the batch size that sets its waves, with the same KV bytes to read."""
        if graph and padded_bs > bs:
            return (kv_total + (padded_bs - bs)) / padded_bs
        return kv_total / bs

    def _eh_proj(self, rows: int) -> OpCall:
        """MTP/EAGLE's projection of [token embedding, hidden state] (2h -> h) before the draft layer."""
        h = self.arch.hidden_size
        return OpCall("eh_proj", "gemm", gemm_keys("bf16", h, 2 * h), {"m": rows}, 1)

    def _graph_replays(self) -> int:
        spec = self.serving.speculative
        return 1 if spec is None else spec.num_steps + 1

    def _decode_entry(
        self, bs: int, padded_bs: int, graph: bool
    ) -> tuple[np.ndarray, list[_DecodeAttention], StepOverhead | None]:
        """Cached per (bs, padded bs, graph): row ops + overhead per source, and the resolved attention ops.
        A replayed CUDA graph runs the padded batch whatever the real one, so graph entries are shared by every
        bs of one bucket (building an entry resolves and samples the attention curve: the costly part)."""
        rows_bs = padded_bs if graph else bs
        key = (rows_bs, padded_bs, graph)
        hit = self._decode.get(key)
        if hit is None:
            rows, attention_ops_ = self.decode_parts(rows_bs, padded_bs)
            rows_key = padded_bs
            rows_cost = self._decode_rows.get(rows_key)
            if rows_cost is None:
                rows_cost = self._decode_rows[rows_key] = self._sum_ops(rows)
            attention = []
            for op, offset in attention_ops_:
                if set(op.axes) - {"batch", "m", "q_len"} != {"kv_len"}:
                    raise AssertionError(f"decode attention op {op.name} has axes {sorted(op.axes)}")
                fixed = {name: float(v) for name, v in op.axes.items() if name != "kv_len"}
                curve = self._resolve(op)[1]
                attention.append(
                    _DecodeAttention(
                        curve,
                        op.count,
                        fixed,
                        curve.along("kv_len", **fixed),
                        offset,
                        self._shared_discount(op),
                    )
                )
            ops = rows + [op for op, _ in attention_ops_]
            kernels = sum(o.count * o.kernels for o in ops) + uncosted_kernels_per_step(self.arch)
            base = rows_cost.copy()
            base[_OVERHEAD_COLUMN] += self._decode_router_us() + self.draft_topk_us(rows_bs)
            overhead = step_overhead(
                self.overheads,
                graph,
                kernels,
                replays=self._graph_replays(),
                eager_decode=self.eager_decode_host,
            )
            if graph:
                base[_OVERHEAD_COLUMN] += overhead.us
            hit = (base, attention, None if graph else overhead)
            self._decode[key] = hit
        return hit

    def shared_read_cost(self, op: OpCall) -> tuple[float, str] | None:
        """(read cost of a duplicated shared-prefix token at the op's batch, the kernel variant it was measured on)
        for a decode attention op; None where this kernel's sharing was never measured on this GPU
        (perfdb/shared_reads.py). The kernel is the one SGLang runs (the op's preferred key), whichever key's table
        prices it: a proxy's sharing says nothing about the kernel's."""
        costs = self.db.shared_reads
        if costs is None or "batch" not in op.axes:  # a sparse (NSA) decode op prices rows, not requests
            return None
        return costs.cost(op.op, op.key, float(np.asarray(op.axes["batch"]).reshape(-1)[0]))

    def _shared_discount(self, op: OpCall) -> float:
        found = self.shared_read_cost(op)
        return 0.0 if found is None else 1.0 - found[0]

    def _row_table(self, method: str, part: str, arch: ModelArch | None = None) -> RowCostTable:
        """Row costs of one part ("local": this rank's attention-side rows; "gathered": all DP ranks' rows)."""
        arch = arch or self.arch
        table = self._row_tables.get((method, part, arch.name))
        if table is None:
            s = self.serving
            dp = s.layout.dp_attention
            chunk = s.chunked_prefill_size if s.chunked_prefill_size > 0 else s.max_prefill_tokens
            t_max = min(max(chunk, s.max_prefill_tokens) + s.max_running_requests, 1 << 16)
            r_max = s.max_running_requests + 1
            if part == "gathered":
                t_max, r_max = min(t_max * dp, 1 << 17), r_max * dp

            def make(rows: int, logit_rows: int) -> list[OpCall]:
                if part == "local":
                    return row_ops(arch, self.settings, rows, 1, method, self._has, part="local")
                return row_ops(
                    arch, self.settings, rows, logit_rows, method, self._has, rows, logit_rows, "gathered"
                )

            table = RowCostTable(make, lambda op: self._resolve(op)[1], t_max, r_max)
            self._row_tables[(method, part, arch.name)] = table
        return table

    def _rows_cost(
        self,
        method: str,
        rows: int,
        logit_rows: int,
        gathered: int | None,
        gathered_logits: int | None,
        arch: ModelArch | None = None,
    ) -> tuple[np.ndarray, int]:
        dp = self.serving.layout.dp_attention
        local = self._row_table(method, "local", arch)
        shared = self._row_table(method, "gathered", arch)
        g = gathered if gathered is not None else rows * dp
        r = gathered_logits if gathered_logits is not None else logit_rows * dp
        return local.cost(rows, 1) + shared.cost(g, r), local.kernels + shared.kernels

    def _extend_graph(self, num_tokens: int) -> bool:
        return 0 < num_tokens <= self.settings.prefill_graph_max_tokens

    def _extend_overhead(self, graph: bool, kernels: int) -> StepOverhead:
        """The host time an extend of `kernels` kernels adds (measured per attention backend, eager or not)."""
        return step_overhead(self.overheads, graph, kernels, self.extend_host_us_per_kernel)

    def _extend_cost(
        self,
        ext: np.ndarray,
        pre: np.ndarray,
        dec: np.ndarray | None,
        gathered: int | None = None,
        gathered_logits: int | None = None,
    ) -> tuple[np.ndarray, int]:
        fast = self._single_fresh_prefill(ext, pre, dec, gathered, gathered_logits)
        if fast is not None:
            return fast, self._fresh_kernels
        plan = plan_extend(self.arch, self.settings, ext, pre, dec)
        rows_cost, row_kernels = self._rows_cost(
            plan.method, plan.num_tokens, plan.num_logit_rows, gathered, gathered_logits
        )
        attn = attention_ops(
            self.arch, self.settings, plan.groups, plan.method, "extend", plan.skip_indexer_logits
        )
        out = rows_cost + self._sum_ops(attn)
        kernels = row_kernels + sum(o.count * o.kernels for o in attn) + uncosted_kernels_per_step(self.arch)
        convert = self._kv_conversion_op(plan)
        if convert is not None:
            out += self._sum_ops([convert])
            # its kernels are launched like every other op's (breakdown_extend counts them too)
            kernels += convert.count * convert.kernels
        if self.serving.speculative is not None:
            # the draft layer runs over the same tokens to produce the first draft (docs/serving-model.md §3, prefill)
            draft = self.draft_arch
            draft_rows, draft_kernels = self._rows_cost(
                plan.method, plan.num_tokens, plan.num_logit_rows, gathered, gathered_logits, draft
            )
            draft_attn = attention_ops(
                draft, self.settings, plan.groups, plan.method, "extend", plan.skip_indexer_logits
            )
            eh_proj = self._eh_proj(plan.num_tokens)
            out += draft_rows + self._sum_ops([eh_proj]) + self._sum_ops(draft_attn)
            # the draft forward is launched from the host too: its kernels count towards the extend's host time
            kernels += (
                draft_kernels + eh_proj.count * eh_proj.kernels + sum(o.count * o.kernels for o in draft_attn)
            )
        overhead = self._extend_overhead(self._extend_graph(plan.num_tokens), kernels)
        out[_OVERHEAD_COLUMN] += overhead.excess_us(float(out.sum())) + self.spec_draft_prefill_host_us()
        return out, kernels

    def _fresh_prefill(self, tokens: int) -> np.ndarray | None:
        """_single_fresh_prefill of one prompt of `tokens` tokens, cached by length (do not modify the result)."""
        table = self._fresh_table
        if table is None:
            table = self._fresh_table = self._fresh_prefill_table()
        if 0 < tokens < len(table):
            return table[tokens]
        if tokens in self._fresh:
            return self._fresh[tokens]
        value = self._single_fresh_prefill(
            np.array([tokens], dtype=np.int64), np.zeros(1, dtype=np.int64), None, None, None
        )
        self._fresh[tokens] = value
        return value

    def fresh_prefill_totals(self, tokens: int) -> tuple[float, list[float]] | None:
        """extend_step of one prompt of `tokens` tokens with nothing cached and nothing riding along, for the
        simulator's hot loop: (total µs, per-source µs list) — the same numbers as `float(step.sum())` and
        `step.tolist()` of extend_step's array — or None where the fresh-prefill path does not apply."""
        cached = self._fresh_totals.get(tokens)
        if cached is None:
            if not self._fresh_prefill_applies:
                return None
            row = self._fresh_prefill(tokens)
            if row is None:
                return None
            cached = self._fresh_totals[tokens] = (float(row.sum()), row.tolist())
        return cached

    @property
    def _fresh_prefill_applies(self) -> bool:
        """Whether this server's single fresh prompts can come from a table over their length: their attention
        ops' axes are affine in the length (GQA, and DeepSeek's MHA path, which a request without prefix always
        takes), so `RowCostTable` tabulates them exactly like the row ops. Not for DSA models (their path depends
        on the length), speculative decoding, DP attention, prefill graphs or a KV-layout conversion."""
        applies = self._fresh_applies
        if applies is None:
            s = self.serving
            applies = self._fresh_applies = (
                s.speculative is None
                and s.layout.dp_attention == 1
                and self.arch.caps.fresh_prefill_method is not None
                and not self.settings.prefill_graph_max_tokens
                and not self._kv_conversion_needed()
            )
        return applies

    def _single_fresh_prefill(self, ext, pre, dec, gathered, gathered_logits) -> np.ndarray | None:
        """The commonest extend — one request, nothing cached, nothing riding along — from a table over its
        length, where `_fresh_prefill_applies`; None for any other batch (the general path prices it)."""
        shape_ok = is_single_fresh_prompt(
            ext, pre, _size(dec), gathered is not None or gathered_logits is not None
        )
        if not shape_ok or not self._fresh_prefill_applies:
            return None
        method = self.arch.caps.fresh_prefill_method
        tokens = int(ext[0])
        table = self._fresh_attention_table(method)
        if tokens > table.t_max:
            return None
        rows_cost, row_kernels = self._rows_cost(method, tokens, 1, None, None)
        out = rows_cost + table.cost(tokens, 1)
        kernels = row_kernels + table.kernels + uncosted_kernels_per_step(self.arch)
        self._fresh_kernels = kernels  # the same for every length (extend_host_us reads it)
        overhead = self._extend_overhead(False, kernels)
        out[_OVERHEAD_COLUMN] += overhead.excess_us(float(out.sum()))
        return out

    def _fresh_prefill_table(self) -> np.ndarray:
        """_single_fresh_prefill of every length 1..t_max at once, row t for t tokens (row 0 unused); no rows where
        that path does not apply or a table evaluates some op per step.

        A workload of a few thousand distinct prompt lengths would otherwise cost one ~25 µs evaluation per
        length; this is the same additions in the same order, on whole columns of the row tables."""
        none = np.zeros((0, NUM_SOURCES))
        probe = np.array([1], dtype=np.int64), np.zeros(1, dtype=np.int64)
        if self._single_fresh_prefill(*probe, None, None, None) is None:
            return none
        method = self.arch.caps.fresh_prefill_method
        local, shared = self._row_table(method, "local"), self._row_table(method, "gathered")
        attention = self._fresh_attention_table(method)
        if local.has_direct_ops or shared.has_direct_ops or attention.has_direct_ops:
            return none
        t_max = min(local.t_max, shared.t_max, attention.t_max)
        # _rows_cost(method, t, 1, None, None) + attention.cost(t, 1), with dp_attention == 1 (G = t, R = 1)
        out = local.by_tokens[1 : t_max + 1] + local.by_rows[1] + local.constant
        out = out + (shared.by_tokens[1 : t_max + 1] + shared.by_rows[1] + shared.constant)
        out = out + (attention.by_tokens[1 : t_max + 1] + attention.by_rows[1] + attention.constant)
        kernels = local.kernels + shared.kernels + attention.kernels + uncosted_kernels_per_step(self.arch)
        overhead = self._extend_overhead(False, kernels)
        out[:, _OVERHEAD_COLUMN] += overhead.excess_us(out.sum(axis=1))
        return np.concatenate([np.zeros((1, NUM_SOURCES)), out])

    def _kv_conversion_needed(self) -> bool:
        s = self.serving
        return kv_layout(self.arch, s.decode_backend, s.kv_dtype) != kv_layout(
            self.arch, s.prefill_backend, s.kv_dtype
        )

    def _fresh_attention_table(self, method: str) -> RowCostTable:
        table = self._row_tables.get((method, "fresh-attention", self.arch.name))
        if table is None:

            def make(tokens: int, _rows: int) -> list[OpCall]:
                plan = plan_extend(self.arch, self.settings, np.array([tokens]), np.array([0]))
                return attention_ops(self.arch, self.settings, plan.groups, plan.method, "extend", False)

            t_max = self._row_table(method, "local").t_max
            table = RowCostTable(make, lambda op: self._resolve(op)[1], t_max, 1)
            self._row_tables[(method, "fresh-attention", self.arch.name)] = table
        return table

    def _breakdown_row(self, op: OpCall) -> BreakdownRow:
        key, curve = self._resolve(op)
        axes = {name: float(np.asarray(v).reshape(-1)[0]) for name, v in op.axes.items()}
        t = curve.timing(**axes)
        planned = self._planned_extend(op, curve, t.us, describe=True)
        if planned is not None:
            t = dc_replace(t, us=planned[0], detail=f"{planned[1]} (perfdb/prefillplan.py)")
        elif op.floor_axes is not None:
            floor = curve.timing(**op.floor_axes)
            if floor.us > t.us:
                t = dc_replace(
                    floor,
                    detail=f"{floor.detail}; its longest request alone (q_len {op.floor_axes['q_len']:g}, kv_len "
                    f"{op.floor_axes['kv_len']:g}) outlasts the batch's work-equivalent {t.us:.1f} us",
                )
        return BreakdownRow(
            name=op.name,
            op=op.op,
            key=dict(key),
            axes=axes,
            count=op.count,
            us_per_call=t.us,
            total_us=t.us * op.count,
            source=t.source,
            detail=t.detail,
        )

    def _overhead_row(
        self, graph: bool, kernels: int, rows: list[BreakdownRow], extend: bool = False
    ) -> BreakdownRow:
        o = step_overhead(
            self.overheads,
            graph,
            kernels,
            self.extend_host_us_per_kernel if extend else None,
            replays=1 if extend else self._graph_replays(),
            eager_decode=self.eager_decode_host,
        )
        paid = float(o.excess_us(sum(r.total_us for r in rows)))
        detail = o.detail
        if not graph:
            detail += f"; launches take {o.us:.0f} µs, paid only beyond the kernels' own time"
            if extend:
                # sim/engine.py _launch: the scheduler's CPU is busy for the whole launch, step time or not
                detail += " (the scheduler's CPU is busy for all of it)"
        return BreakdownRow(
            name=o.name,
            op="overhead",
            key={},
            axes={"kernels": float(kernels)},
            count=o.count,
            us_per_call=paid / max(o.count, 1),
            total_us=paid,
            source=OVERHEAD_SOURCE,
            detail=detail,
        )


def _tagged(ops: list[OpCall], prefix: str, times: int = 1) -> list[OpCall]:
    """The ops of one forward of a speculative step's part (`prefix`: verify, draft, draft_extend), run `times`."""
    return [dc_replace(op, name=f"{prefix}.{op.name}", count=op.count * times) for op in ops]


def _named_cost_row(name: str, op: str, rows: int, count: int, total_us: float, detail: str) -> BreakdownRow:
    """A breakdown row for a named cost no table holds (Overheads), `count` calls of equal time."""
    return BreakdownRow(
        name=name,
        op=op,
        key={},
        axes={"m": float(rows)},
        count=count,
        us_per_call=total_us / count,
        total_us=total_us,
        source=OVERHEAD_SOURCE,
        detail=detail,
    )


def _size(a: np.ndarray | None) -> int:
    return 0 if a is None else int(np.asarray(a).size)
