"""docs/accuracy.md and docs/perfdb.md carry the tables' own numbers (held-out and ragged error, off-grid error
where a GPU's results are committed, measured floors and H100/H200 ratios): regenerate them with
`python -m simperf.perfdb.offgrid docs` when the tables, the results or the fallbacks change."""

from __future__ import annotations

import pytest

from simperf.perfdb.offgrid.docs import update_docs


@pytest.mark.slow
def test_generated_blocks_are_current():
    stale = update_docs(check=True)
    assert not stale, f"{stale} are stale: run `python -m simperf.perfdb.offgrid docs`"
