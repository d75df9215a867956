"""Docs that numbers or the schema can leave behind: each test says which command brings the doc up to date."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from simperf.scenario.docs import REFRESH, documented_paths, reference_markdown, replace_block
from simperf.sweep.paths import scenario_field_paths

ROOT = Path(__file__).resolve().parents[1]


def _whatif():
    spec = importlib.util.spec_from_file_location("readme_whatif", ROOT / "benchmarks" / "readme_whatif.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_whatif"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_scenario_doc_lists_every_schema_key():
    listed = documented_paths((ROOT / "docs" / "scenario.md").read_text())
    missing = sorted(set(scenario_field_paths()) - listed)
    assert not missing, (
        f"docs/scenario.md lacks {len(missing)} key(s): {', '.join(missing[:10])}; run `{REFRESH}`"
    )


def test_scenario_doc_is_the_commands_output():
    """Every row's default and meaning as the schema states them, not only its key (a default changed in the
    nineteenth session left the shared-prefix block's description behind while every key was still listed)."""
    text = (ROOT / "docs" / "scenario.md").read_text()
    assert text == replace_block(text, reference_markdown()), f"docs/scenario.md is stale; run `{REFRESH}`"


def test_the_key_check_notices_a_missing_row():
    text = reference_markdown()
    assert documented_paths(text) == set(scenario_field_paths())
    without = "\n".join(line for line in text.splitlines() if not line.startswith("| `burstiness`"))
    assert documented_paths(without) == set(scenario_field_paths()) - {"workload.burstiness"}
    # a block documented once and referred to elsewhere still counts at every path
    assert "disaggregation.decode.speculative.accept_length.mean" in documented_paths(text)


def test_sweeps_doc_does_not_call_speculative_decoding_unsupported():
    text = (ROOT / "docs" / "sweeps.md").read_text()
    assert "not modelled yet" not in text  # MTP/EAGLE sweeps run (docs/speculative.md)


def test_readme_what_if_table_matches_a_fresh_prediction_within_one_percent():
    whatif = _whatif()
    shown = whatif.readme_values((ROOT / "README.md").read_text())
    assert len(shown) == len(whatif.ROWS)
    fresh = {r.scenario: r.values for r in whatif.predict_rows()}
    stale = [
        f"{scenario} {key}: README {shown[scenario][key]:g}, predicted {value:.4g}"
        for scenario, values in fresh.items()
        for key, value in values.items()
        if shown[scenario][key] != pytest.approx(value, rel=0.01)
    ]
    assert not stale, f"README's what-if table is stale ({'; '.join(stale)}); run `{whatif.REFRESH}`"
