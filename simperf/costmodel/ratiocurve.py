"""A table's curve times a measured ratio of what SGLang runs to the kernel the table timed: what
costmodel/prefix_path.py (an extend over a cached prefix) and costmodel/spec_verify.py (a speculative verify and
draft extend) share. A subclass says the factor at given axes and how a breakdown row names it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simperf.perfdb.db import OpCurve, Timing


class RatioCurve(OpCurve):
    """The base curve (same key, backing and grid), its time multiplied by `_factor(**axes)`."""

    def __init__(self, base: OpCurve) -> None:
        super().__init__(*base.constructor_args())
        self._base = base

    def _factor(self, **axes) -> np.ndarray:
        raise NotImplementedError

    def _describe(self, factor: float, **axes) -> str | None:
        """What a breakdown row adds to the base's detail for this factor; None: the row is the base's as it is."""
        raise NotImplementedError

    def __call__(self, **axes):
        us, source = self._base(**axes)
        return us * self._factor(**axes), source

    def timing(self, **axes) -> Timing:
        t = self._base.timing(**axes)
        factor = float(self._factor(**axes))
        note = self._describe(factor, **axes)
        if note is None:
            return t
        return replace(t, us=t.us * factor, detail=f"{t.detail}; {note}")
