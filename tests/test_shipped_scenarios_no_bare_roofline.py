"""No kernel call of a shipped scenario is priced by the bare roofline unless its op has no table on that GPU at
all (issue 19): a key without a table of its own takes the nearest measured key of its op (perfdb/nearest.py).

Every scenario under scenarios/ that resolves is walked through representative steps — decode at several batch
sizes (with its speculative verify and draft work), fresh and cached prefills, a ragged extend with decode rows
riding along — and each op of each step is checked."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from simperf.costmodel.step import SGLangStepCost
from simperf.pipeline import _pool_scenario, open_perfdb
from simperf.scenario.load import load_scenario
from simperf.scenario.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted(
    p for p in (ROOT / "scenarios").rglob("*.yaml") if "sweeps" not in p.parts and p.name != "index.yaml"
)
EXTENDS = (([1000], [0]), ([300, 500], [5000, 100]), ([64], [20000]), ([8000], [0]))


def _servers(path: Path):
    scenario = load_scenario(path)
    if scenario.disaggregation is None:
        return [scenario]
    return [
        _pool_scenario(scenario, s) for s in (scenario.disaggregation.prefill, scenario.disaggregation.decode)
    ]


def _rows(cost: SGLangStepCost):
    top = max(1, min(256, cost.serving.max_running_requests))
    for bs in sorted({1, 8, 64, top}):
        yield from cost.breakdown_decode(bs, bs, 2048 * bs, graph=True)
    for ext, pre in EXTENDS:
        ext, pre = np.array(ext), np.array(pre)
        yield from cost.breakdown_extend(ext, pre)
        yield from cost.breakdown_extend(ext, pre, np.array([3000, 200]))


def _has_any_table(db, op: str) -> bool:
    return bool(db.keys(op)) or (db.reference is not None and bool(db.reference.keys(op)))


@pytest.mark.parametrize("path", SCENARIOS, ids=[str(p.relative_to(ROOT / "scenarios")) for p in SCENARIOS])
def test_no_bare_roofline_where_the_op_has_a_table(path):
    resolved = 0
    for scenario in _servers(path):
        try:
            serving, arch, gpu = resolve(scenario)
        except ValueError:
            continue  # a scenario that does not fit its GPUs is refused before any op is priced
        resolved += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            db, _ = open_perfdb(scenario, gpu)
        cost = SGLangStepCost(arch, serving, db, scenario.overheads)
        bare = {(r.op, r.name) for r in _rows(cost) if r.source == "roofline" and _has_any_table(db, r.op)}
        assert not bare, (
            f"{path.name} on {gpu.key}: bare roofline although the op has a table: {sorted(bare)}"
        )
    if resolved == 0:
        pytest.skip(f"{path.name} does not resolve (checked by the scenario tests)")


@pytest.mark.parametrize("path", SCENARIOS, ids=[str(p.relative_to(ROOT / "scenarios")) for p in SCENARIOS])
def test_shared_prefix_reads_price_every_shipped_decode_and_never_add_time(path):
    """StepCostModel.decode_steps' postcondition on every shipped scenario's decode (sparse NSA ops included, which
    have no read cost): a step with shared prefix reads costs no more than without, on both decode paths."""
    resolved = 0
    for scenario in _servers(path):
        try:
            serving, arch, gpu = resolve(scenario)
        except ValueError:
            continue
        resolved += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            db, _ = open_perfdb(scenario, gpu)
        cost = SGLangStepCost(arch, serving, db, scenario.overheads)
        for bs in sorted({1, 8, max(1, min(64, cost.serving.max_running_requests))}):
            kv = np.array([2048.0 * bs])
            plain = cost.decode_steps(bs, bs, kv, True).sum()
            shared = cost.decode_steps(bs, bs, kv, True, 1024.0 * (bs - 1)).sum()
            assert 0 < shared <= plain + 1e-9, f"{path.name} at batch {bs}"
            totals, _ = cost.decode_totals(bs, bs, [float(kv[0])], True, 1024.0 * (bs - 1))
            assert totals[0] == pytest.approx(shared, rel=1e-12)
            assert (
                sum(r.total_us for r in cost.breakdown_decode(bs, bs, int(kv[0]), True, 1024.0 * (bs - 1)))
                > 0
            )
    if resolved == 0:
        pytest.skip(f"{path.name} does not resolve (checked by the scenario tests)")
