"""The row-dependent part of an extend step, tabulated over every token count once.

An extend step's GEMMs, norms, MoE and collectives depend only on the step's token count T and on R, the number of
sequences whose last token reaches the LM head. Prefill batches come in every size, so caching by (T, R) rarely
hits; instead each op is evaluated once, vectorised over T = 1..t_max (and R = 1..r_max), at exactly the axes it
would have for that T, and summed into a table indexed by T. A step then costs two row reads. The values are the
database's own (no resampling); steps beyond the table fall back to evaluating the ops directly.

The op lists are probed at a few (T, R) points to learn how each op's axes move: they must be affine in T or in R
(m = T, message_bytes = T·hidden·2, ...). An op that is neither is evaluated directly at every step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from simperf.models.ops import OpCall
from simperf.perfdb.db import OpCurve
from simperf.perfdb.schema import SOURCES

NUM_SOURCES = len(SOURCES)

MakeOps = Callable[[int, int], list[OpCall]]
Resolve = Callable[[OpCall], OpCurve]


def _axes(op: OpCall) -> dict[str, float]:
    return {name: float(value) for name, value in op.axes.items()}


def _same_shape(lists: Sequence[list[OpCall]]) -> bool:
    first = [(o.name, o.op, o.count, tuple(o.axes)) for o in lists[0]]
    return all([(o.name, o.op, o.count, tuple(o.axes)) for o in ops] == first for ops in lists[1:])


class RowCostTable:
    def __init__(self, make_ops: MakeOps, resolve: Resolve, t_max: int, r_max: int) -> None:
        self._make_ops = make_ops
        self._resolve = resolve
        self.t_max, self.r_max = int(t_max), int(r_max)
        base, t2, t3, r2 = make_ops(1, 1), make_ops(2, 1), make_ops(3, 1), make_ops(1, 2)
        if not _same_shape([base, t2, t3, r2]):
            raise ValueError("row op list changes shape with the token count; cannot tabulate it")
        self.kernels = sum(o.count * o.kernels for o in base)
        self.by_tokens = np.zeros((self.t_max + 1, NUM_SOURCES))
        self.by_rows = np.zeros((self.r_max + 1, NUM_SOURCES))
        self.constant = np.zeros(NUM_SOURCES)
        self._direct: list[int] = []  # indices of ops evaluated per step
        tokens = np.arange(1, self.t_max + 1, dtype=np.float64)
        rows = np.arange(1, self.r_max + 1, dtype=np.float64)
        for i, op in enumerate(base):
            a1, a2, a3, ar = _axes(op), _axes(t2[i]), _axes(t3[i]), _axes(r2[i])
            slope_t = {k: a2[k] - a1[k] for k in a1}
            slope_r = {k: ar[k] - a1[k] for k in a1}
            affine_t = all(abs((a3[k] - a2[k]) - slope_t[k]) < 1e-9 for k in a1)
            moves_t = any(slope_t.values())
            moves_r = any(slope_r.values())
            curve = resolve(op)
            if moves_t and moves_r or (moves_t and not affine_t):
                self._direct.append(i)
            elif moves_t:
                self._accumulate(self.by_tokens[1:], curve, op.count, a1, slope_t, tokens)
            elif moves_r:
                self._accumulate(self.by_rows[1:], curve, op.count, a1, slope_r, rows)
            else:
                us, src = curve(**a1)
                self.constant[int(src)] += float(us) * op.count

    @staticmethod
    def _accumulate(table, curve: OpCurve, count: int, at_one: dict, slope: dict, n: np.ndarray) -> None:
        axes = {k: at_one[k] + (n - 1.0) * slope[k] for k in at_one}
        us, src = curve(**axes)
        us = np.broadcast_to(np.asarray(us, dtype=np.float64), n.shape)
        src = np.broadcast_to(np.asarray(src), n.shape)
        for s in np.unique(src):
            mask = src == s
            table[mask, int(s)] += us[mask] * count

    @property
    def has_direct_ops(self) -> bool:
        """Some op is evaluated per step (cost() adds it): by_tokens + by_rows + constant is not the whole cost."""
        return bool(self._direct)

    def cost(self, num_tokens: int, num_rows: int) -> np.ndarray:
        """Row ops of a step with `num_tokens` tokens and `num_rows` logit rows -> µs per source."""
        if num_tokens > self.t_max or num_rows > self.r_max:
            out = np.zeros(NUM_SOURCES)
            for op in self._make_ops(num_tokens, num_rows):
                us, src = self._resolve(op)(**_axes(op))
                out[int(src)] += float(us) * op.count
            return out
        out = self.by_tokens[num_tokens] + self.by_rows[num_rows] + self.constant
        if self._direct:
            ops = self._make_ops(num_tokens, num_rows)
            for i in self._direct:
                us, src = self._resolve(ops[i])(**_axes(ops[i]))
                out[int(src)] += float(us) * ops[i].count
        return out
