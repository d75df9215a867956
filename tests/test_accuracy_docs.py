"""docs/accuracy.md carries the accuracy command's own output: regenerate it when the model or the tables change
(`python -m simperf.accuracy scenarios/published --truth ../shared/data/published-runs.csv -o markdown
--update-doc docs/accuracy.md`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simperf.accuracy.run import generated_block, markdown, run_accuracy

REPO = Path(__file__).resolve().parents[1]
TRUTH = Path(__file__).resolve().parents[2] / "shared" / "data" / "published-runs.csv"


@pytest.mark.slow
@pytest.mark.skipif(not TRUTH.is_file(), reason="../shared/data/published-runs.csv not present")
def test_docs_accuracy_table_is_the_commands_output():
    expected = markdown(run_accuracy(REPO / "scenarios" / "published", TRUTH))
    documented = generated_block(REPO / "docs" / "accuracy.md")
    assert documented == expected, (
        "docs/accuracy.md is stale: run `python -m simperf.accuracy scenarios/published --truth "
        "../shared/data/published-runs.csv -o markdown --update-doc docs/accuracy.md`"
    )
