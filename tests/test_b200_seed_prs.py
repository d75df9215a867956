"""docs/b200.md's seed-PR section is what benchmarks/b200_seeds.py generates now, and its PR numbers are the
committed ones (benchmarks/data/b200_seed_prs.csv), each with the place it was read.

Runs on CPU from the shipped calibration tables (no ../shared). Refresh with
`python benchmarks/b200_seeds.py doc --write docs/b200.md`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "b200.md"


@pytest.fixture(scope="module")
def seeds():
    if not (REPO / "calibration" / "b200").is_dir() or not (REPO / "calibration" / "h200").is_dir():
        pytest.skip("shipped calibration/b200 or calibration/h200 absent")
    sys.path.insert(0, str(REPO / "benchmarks"))
    import b200_seeds

    return b200_seeds


def test_every_published_number_names_where_it_was_read(seeds):
    rows = seeds.published()
    assert {pr for pr, _, _ in rows} == {"8632", "16758", "12788", "21011"}
    for key, row in rows.items():
        assert row["source"].strip(), key
        if row["value"] is None:
            assert row["source"].startswith("not retrieved"), key  # an empty value says so
        else:
            assert "github.com/sgl-project/sglang/pull/" in row["source"] or "issue 24" in row["source"], key


def test_a_doc_with_a_changed_number_is_reported_stale(seeds, tmp_path):
    section = seeds.section_of(DOC.read_text(encoding="utf-8"))
    assert "| 51.68 |" in section  # PR 7938/8632's trtllm_mla page-32 batch-1 row
    stale = tmp_path / "b200.md"
    stale.write_text(DOC.read_text(encoding="utf-8").replace("| 51.68 |", "| 51.69 |"), encoding="utf-8")
    assert seeds.section_of(stale.read_text(encoding="utf-8")) != section


def test_the_generated_section_is_up_to_date(seeds):
    fresh = "\n".join(seeds.comparison())
    shown = seeds.section_of(DOC.read_text(encoding="utf-8"))
    assert shown == fresh, f"docs/b200.md's seed-PR section is stale; run `{seeds.REFRESH}`"
