"""Accepted tokens per speculative-decoding iteration (EAGLE / DeepSeek MTP, docs/serving-model.md §3).

Each verify step of a request yields a ∈ [1, num_steps + 1] tokens: the bonus token plus the accepted prefix of
its draft chain. With top-k 1 and per-position acceptance α, E[a] = 1 + α + α² + … + α^n. The user gives the mean
accept length (what SGLang's server log and bench_serving report); α is solved from it. When a min and max are
given too, requests differ: each request's own mean is drawn uniformly in [min, max] (shifted so that the
expected mean stays the given one) and its α solved from that — prompts differ in how predictable they are.

A request's whole sequence of accept lengths is drawn when it starts decoding, so the scheduler knows in advance
in which iteration it finishes (its last chunk is cut to the tokens it still needs).
"""

from __future__ import annotations

import numpy as np


def mean_accept(alpha: float, num_steps: int) -> float:
    return float(sum(alpha**k for k in range(num_steps + 1)))


def solve_alpha(mean: float, num_steps: int) -> float:
    """Per-position acceptance giving this mean accept length (bisection; mean is clipped to [1, n + 1])."""
    mean = min(max(mean, 1.0), num_steps + 1.0)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if mean_accept(mid, num_steps) < mean:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


class AcceptSampler:
    def __init__(
        self,
        num_steps: int,
        mean: float,
        low: float | None = None,
        high: float | None = None,
        seed: int = 0,
    ) -> None:
        if not 1.0 <= mean <= num_steps + 1:
            raise ValueError(
                f"serving.speculative.accept_length.mean: {mean} is outside [1, num_steps + 1 = {num_steps + 1}]"
            )
        self.num_steps = num_steps
        self.mean = mean
        self.low, self.high = low, high
        if (low is None) != (high is None):
            raise ValueError("serving.speculative.accept_length: give both min and max, or neither")
        if low is not None and not (1.0 <= low <= mean <= high <= num_steps + 1):
            raise ValueError(
                f"serving.speculative.accept_length: need 1 <= min <= mean <= max <= {num_steps + 1}, "
                f"got min={low}, mean={mean}, max={high}"
            )
        self._rng = np.random.default_rng(seed)
        self._alpha = solve_alpha(mean, num_steps)
        self._alpha_cache: dict[float, float] = {}

    def _request_alpha(self) -> float:
        if self.low is None:
            return self._alpha
        # uniform per-request means over [low, high], shifted so the population mean is `mean`
        mid = (self.low + self.high) / 2
        request_mean = float(self._rng.uniform(self.low, self.high)) + (self.mean - mid)
        key = round(min(max(request_mean, 1.0), self.num_steps + 1.0), 3)
        alpha = self._alpha_cache.get(key)
        if alpha is None:
            alpha = self._alpha_cache[key] = solve_alpha(key, self.num_steps)
        return alpha

    def draw(self, tokens: int) -> np.ndarray:
        """Accept lengths of successive iterations until `tokens` tokens are produced (last one cut to fit)."""
        alpha = self._request_alpha()
        # enough iterations for the worst case (one token each) would be `tokens`; draw in blocks instead
        block = max(8, int(tokens / mean_accept(alpha, self.num_steps) * 1.5) + 4)
        parts: list[np.ndarray] = []
        produced = 0
        while produced < tokens:
            chain = self._rng.random((block, self.num_steps)) < alpha
            accepted = np.cumprod(chain, axis=1).sum(axis=1)
            parts.append(1 + accepted)
            produced += int(parts[-1].sum())
        seq = np.concatenate(parts).astype(np.int64)
        cum = np.cumsum(seq)
        n = int(np.searchsorted(cum, tokens, side="left")) + 1
        seq = seq[:n]
        seq[-1] -= int(cum[n - 1]) - tokens
        return seq
