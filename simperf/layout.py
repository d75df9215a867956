"""How a server's GPUs are split: the parallel layout that the model zoo, the scenario and the cost model share."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ParallelLayout:
    tp: int
    dp_attention: int
    ep: int

    @property
    def attn_tp(self) -> int:
        """Attention TP size A = TP / DP (docs/serving-model.md §2.1)."""
        return self.tp // self.dp_attention
