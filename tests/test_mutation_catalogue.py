"""benchmarks/mutations.py changes one cost by 1% in a copy of the tree and checks that a test fails. A mutation
whose text no longer occurs in its file cannot run: the catalogue went stale when the code it targets was
rewritten (five had, found 2026-11-28), and docs/testing.md then claimed guards nobody could re-check."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _catalogue():
    spec = importlib.util.spec_from_file_location("simperf_mutations", ROOT / "benchmarks" / "mutations.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.MUTATIONS


def test_every_mutation_targets_text_that_occurs_once_in_its_file():
    stale = []
    for mutation in _catalogue():
        count = (ROOT / mutation.path).read_text(encoding="utf-8").count(mutation.old)
        if count != 1 or mutation.new == mutation.old:
            stale.append(f"{mutation.id}: {count} occurrences in {mutation.path}")
    assert not stale, stale


def test_mutation_ids_are_unique():
    ids = [m.id for m in _catalogue()]
    assert len(ids) == len(set(ids))
