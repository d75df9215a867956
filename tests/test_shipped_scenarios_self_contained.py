"""A shipped scenario never points outside the project (README ground rule): every path a scenario file names
resolves inside the repository, so `simperf predict scenarios/...` works from a fresh clone without ../shared.
(The Mooncake replay was a scenario reading ../../shared/...; it is now a documented --set command.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted(p for p in (ROOT / "scenarios").rglob("*.yaml") if p.name != "index.yaml")


def _strings(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_shipped_scenario_names_a_path_outside_the_project(path):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for text in _strings(data):
        if "/" not in text or "://" in text:
            continue
        if "shared/data" in text:
            pytest.fail(f"{path.relative_to(ROOT)} names {text!r} (the shared data directory)")
        target = (path.parent / text).resolve()
        if text.startswith((".", "/")) and not target.is_relative_to(ROOT):
            pytest.fail(f"{path.relative_to(ROOT)} names {text!r}, outside the project")
