"""Stratified choice of the steps to validate: every kind of step that happened, small and large batches,
short and long KV, in proportion to how often each stratum occurred but with every stratum represented."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from simperf.sim.steplog import STEP_KINDS, LoggedStep


@dataclass(frozen=True)
class SampledStep:
    """A logged step, advanced `offset` iterations into its decode run (KV grows one token per iteration)."""

    sample_id: int
    stratum: str  # e.g. "decode|rows 32-63|kv 1024-2047"
    step: LoggedStep

    @property
    def kind(self) -> str:
        return self.step.kind


def _bucket(value: float) -> str:
    if value < 1:
        return "0"
    lo = 2 ** int(math.floor(math.log2(value)))
    return f"{lo}-{2 * lo - 1}"


def stratum_of(step: LoggedStep) -> str:
    return f"{step.kind}|rows {_bucket(step.num_rows)}|kv {_bucket(step.mean_kv)}"


def at_offset(step: LoggedStep, offset: int) -> LoggedStep:
    """The `offset`-th iteration of a decode run: every request's KV is `offset` tokens longer."""
    if offset == 0:
        return step
    if step.kind != "decode" or offset >= step.repeats:
        raise ValueError(f"offset {offset} outside the decode run of {step.repeats} iterations")
    return replace(step, decode_kv_lens=step.decode_kv_lens + offset, repeats=1)


def _content(step: LoggedStep) -> tuple:
    return (
        step.kind,
        step.extend_lens.tobytes(),
        step.prefix_lens.tobytes(),
        step.decode_kv_lens.tobytes(),
        step.padded_bs,
        step.gathered_rows,
    )


def _candidates(steps: list[LoggedStep]) -> list[LoggedStep]:
    """Each distinct logged step; a decode run also at its middle and last iteration (its KV spans that range)."""
    out: dict[tuple, LoggedStep] = {}
    for step in steps:
        variants = [step]
        if step.kind == "decode" and step.repeats > 2:
            variants += [at_offset(step, step.repeats // 2), at_offset(step, step.repeats - 1)]
        for v in variants:
            out.setdefault(_content(v), v)
    return list(out.values())


def sample_steps(steps: list[LoggedStep], n: int, seed: int = 0) -> list[SampledStep]:
    """n steps (fewer if fewer distinct candidates exist), stratified by (kind, rows, KV).

    Each kind that occurred gets a share of n proportional to its iterations, but at least n / (2 x kinds)
    (prefill iterations are rare but long); within a kind, strata are visited round-robin (largest first) so
    that rare shapes are not crowded out by common ones. Identical steps are sampled once.
    """
    if n < 1:
        raise ValueError("--samples must be at least 1")
    rng = np.random.default_rng(seed)
    by_kind: dict[str, dict[str, list[LoggedStep]]] = {}
    weight: dict[str, int] = {}
    for cand in _candidates(steps):
        by_kind.setdefault(cand.kind, {}).setdefault(stratum_of(cand), []).append(cand)
    for step in steps:
        weight[step.kind] = weight.get(step.kind, 0) + step.repeats
    kinds = [k for k in STEP_KINDS if k in by_kind]
    if not kinds:
        return []
    total = sum(weight[k] for k in kinds)
    # every kind gets at least one sample when n allows it, and at least n / (2 x kinds)
    floor = max(1 if n >= len(kinds) else 0, n // (2 * len(kinds)))
    quota = {k: max(floor, round(n * weight[k] / total)) for k in kinds}
    while sum(quota.values()) > n:
        biggest = max(kinds, key=lambda k: quota[k])
        quota[biggest] -= 1
    picked: list[tuple[str, LoggedStep]] = []
    for kind in kinds:
        strata = sorted(by_kind[kind].items(), key=lambda kv: (-len(kv[1]), kv[0]))
        pools = {name: list(rng.permutation(len(members))) for name, members in strata}
        taken = 0
        while taken < quota[kind] and any(pools.values()):
            for name, members in strata:
                if taken >= quota[kind]:
                    break
                if pools[name]:
                    picked.append((name, members[pools[name].pop()]))
                    taken += 1
    picked.sort(key=lambda p: (p[1].index, int(p[1].decode_kv_lens.sum())))
    return [SampledStep(i, name, step) for i, (name, step) in enumerate(picked)]
