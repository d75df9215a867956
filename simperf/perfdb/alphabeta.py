"""Latency-bandwidth (alpha-beta) model of a collective, fitted on the group size that was measured and carried to
another group size by the ring algorithm's step count and traffic factor.

This is the "larger groups are estimated until measured" rule: a table for all-reduce over 2 GPUs predicts
all-reduce over 8 GPUs as steps(8) * alpha + link_factor(8) * bytes / beta, where alpha (per ring step) and beta
(achieved link bandwidth) come from a straight-line fit time = a + b * bytes on the measured group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simperf.perfdb.roofline import collective_link_factor, collective_steps


@dataclass(frozen=True)
class AlphaBetaModel:
    op: str
    fitted_group_size: int
    alpha_us_per_step: float
    link_bytes_per_us: float  # achieved bytes per microsecond over the link (beta)
    fitted_points: int

    def time_us(self, group_size: float, message_bytes: np.ndarray) -> np.ndarray:
        size = np.asarray(message_bytes, dtype=np.float64)
        if group_size <= 1:
            return np.zeros_like(size)
        steps = float(collective_steps(self.op, group_size))
        link = float(collective_link_factor(self.op, group_size))
        return steps * self.alpha_us_per_step + link * size / self.link_bytes_per_us

    def describe(self) -> str:
        return (
            f"alpha-beta model fitted on group_size={self.fitted_group_size} "
            f"({self.fitted_points} points: alpha={self.alpha_us_per_step:.3g} us/step, "
            f"beta={self.link_bytes_per_us * 1e6 / 1e9:.3g} GB/s)"
        )


def fit_alpha_beta(
    op: str,
    group_size: int,
    message_bytes: np.ndarray,
    us: np.ndarray,
    fallback_link_bytes_per_s: float,
) -> AlphaBetaModel:
    """Fit time = a + b * bytes minimising relative error; a, b >= 0. When the points cannot pin the slope (one
    point, or only latency-bound sizes) the bandwidth falls back to `fallback_link_bytes_per_s`."""
    if group_size <= 1:
        raise ValueError("an alpha-beta model needs a measured group of at least 2 GPUs")
    size = np.asarray(message_bytes, dtype=np.float64)
    t = np.asarray(us, dtype=np.float64)
    keep = np.isfinite(size) & np.isfinite(t) & (t > 0.0) & (size >= 0.0)
    size, t = size[keep], t[keep]
    if len(t) == 0:
        raise ValueError("no usable points to fit an alpha-beta model")
    link_factor = float(collective_link_factor(op, group_size))
    fallback_b = link_factor / (fallback_link_bytes_per_s / 1e6)

    intercept, slope = _relative_least_squares(size, t)
    if slope <= 0.0 or len(np.unique(size)) < 2:
        slope = fallback_b
        intercept = max(float(np.min(t - slope * size)), 0.0)
    elif intercept < 0.0:
        intercept = 0.0
        slope = float(np.sum(size / t) / np.sum((size / t) ** 2))  # relative LSQ through the origin
    steps = float(collective_steps(op, group_size))
    return AlphaBetaModel(
        op=op,
        fitted_group_size=int(group_size),
        alpha_us_per_step=intercept / steps,
        link_bytes_per_us=link_factor / slope,
        fitted_points=int(len(t)),
    )


def _relative_least_squares(size: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    weight = 1.0 / t  # minimise relative, not absolute, error: small messages matter as much as large ones
    design = np.stack([weight, size * weight], axis=1)
    (a, b), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    return float(a), float(b)
