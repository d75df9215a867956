"""Imports follow the pipeline's direction (docs/architecture.md): calibrate → perfdb → costmodel → sim → report, the
model zoo below the scenario, shared types in neutral modules. Checked on the source (every import statement,
function-local ones included), so a new module that breaks the order fails here, not in review."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "simperf"

# Modules every layer may use: types and numbers shared along the pipeline, with no simperf imports of their own
# beyond each other and the GPU catalogue.
NEUTRAL = {
    "simperf.records",
    "simperf.layout",
    "simperf.radix_cache",
    "simperf.sglang_defaults",
    "simperf.capabilities",
    "simperf.jsonl",
    "simperf.progress",
    "simperf.hardware",
    "simperf.spelling",
}

# importer package -> packages it must not import (prefix match on dotted module names)
FORBIDDEN = {
    # the GPU side writes tables; nothing that predicts reads the calibration code (perfdb.offgrid and validate
    # are checks beside the pipeline that drive calibration kernels on purpose)
    "simperf.perfdb": (
        "simperf.calibrate",
        "simperf.costmodel",
        "simperf.sim",
        "simperf.scenario",
        "simperf.models",
    ),
    "simperf.models": (
        "simperf.scenario",
        "simperf.costmodel",
        "simperf.sim",
        "simperf.report",
        "simperf.calibrate",
    ),
    "simperf.scenario": (
        "simperf.costmodel",
        "simperf.sim",
        "simperf.calibrate",
        "simperf.pipeline",
        "simperf.fleet",
    ),
    "simperf.costmodel": (
        "simperf.sim",
        "simperf.report",
        "simperf.workload",
        "simperf.fleet",
        "simperf.calibrate",
    ),
    "simperf.sim": (
        "simperf.report",
        "simperf.workload",
        "simperf.fleet",
        "simperf.pipeline",
        "simperf.calibrate",
        "simperf.models",
    ),
    "simperf.workload": ("simperf.sim", "simperf.costmodel", "simperf.calibrate", "simperf.fleet"),
    "simperf.report": (
        "simperf.sim",
        "simperf.costmodel",
        "simperf.calibrate",
        "simperf.fleet",
        "simperf.pipeline",
    ),
}
# the simulator reaches the cost model through its seam only
SIM_MAY_IMPORT_FROM_COSTMODEL = {"simperf.costmodel.api"}
# checks beside the pipeline (docs/architecture.md): they may reach across it
BESIDE_THE_PIPELINE = ("simperf.perfdb.offgrid",)
# (importer module, imported module): a table printer shared by every command's output
ALLOWED = {
    ("simperf.perfdb.diff", "simperf.report.tables"),
    ("simperf.scenario.cli", "simperf.report.tables"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in out if m.startswith("simperf.")}


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _edges():
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module_name(path)
        for imported in _imports(path):
            yield importer, imported


def test_no_module_imports_against_the_pipeline_direction():
    bad = []
    for importer, imported in _edges():
        if any(_under(importer, b) for b in BESIDE_THE_PIPELINE) or (importer, imported) in ALLOWED:
            continue
        for package, forbidden in FORBIDDEN.items():
            if _under(importer, package) and any(_under(imported, f) for f in forbidden):
                bad.append(f"{importer} imports {imported}")
    assert not bad, "\n".join(sorted(set(bad)))


def test_the_simulator_sees_the_cost_model_only_through_its_seam():
    bad = sorted(
        f"{importer} imports {imported}"
        for importer, imported in _edges()
        if _under(importer, "simperf.sim")
        and _under(imported, "simperf.costmodel")
        and not any(_under(imported, m) for m in SIM_MAY_IMPORT_FROM_COSTMODEL)
    )
    assert not bad, bad


def test_neutral_modules_import_only_each_other():
    bad = sorted(
        f"{importer} imports {imported}"
        for importer, imported in _edges()
        if any(_under(importer, n) for n in NEUTRAL) and not any(_under(imported, n) for n in NEUTRAL)
    )
    assert not bad, bad


def test_the_rules_see_real_imports():
    # the checker would pass vacuously if it parsed nothing: the simulator does import its seam and shared types
    edges = set(_edges())
    assert ("simperf.sim.pricing", "simperf.costmodel.api") in edges
    assert ("simperf.report.metrics", "simperf.records") in edges
