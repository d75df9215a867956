"""`simperf perfdb check DIR --offgrid RESULTS --samples SET` on careless off-grid files: one `error:` line naming
the file (and line), never a bare key name, an internal error, or calls paired with another set's times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clierrors import one_error_line

REPO = Path(__file__).resolve().parents[1]
OFFGRID = REPO / "calibration" / "offgrid"
TABLES = REPO / "calibration" / "h100"


def _edited_set(tmp_path: Path, second_line: str) -> Path:
    """The development set, named as its results file names it, with its second line replaced."""
    lines = (OFFGRID / "samples.jsonl").read_text().splitlines()
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join([lines[0], second_line, *lines[2:]]) + "\n")
    return path


def _check(samples: Path) -> list[str]:
    return [
        "perfdb",
        "check",
        str(TABLES),
        "--offgrid",
        str(OFFGRID / "h100-results.jsonl"),
        "--samples",
        str(samples),
    ]


FIRST = json.loads((OFFGRID / "samples.jsonl").read_text().splitlines()[1])


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"id": 0, broken', "samples.jsonl:2: invalid JSON"),  # was Python's bare message, naming no file
        (json.dumps({k: v for k, v in FIRST.items() if k != "id"}), "samples.jsonl:2: id must be an integer"),
        (
            json.dumps({**FIRST, "point": 5}),
            "samples.jsonl:2: point must be a mapping",
        ),  # was an internal error
        (
            json.dumps({k: v for k, v in FIRST.items() if k != "category"}),
            "samples.jsonl:2: missing category",
        ),
    ],
    ids=["broken-json", "no-id", "point-not-mapping", "no-category"],
)
def test_an_edited_sample_line_is_named(tmp_path: Path, line: str, expected: str):
    assert expected in one_error_line(_check(_edited_set(tmp_path, line)))


def test_a_sample_id_given_twice_is_refused(tmp_path: Path):
    """Both samples were paired with the id's one result and scored twice."""
    lines = (OFFGRID / "samples.jsonl").read_text().splitlines()
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join([lines[0], lines[1], lines[1], *lines[2:]]) + "\n")
    assert "samples.jsonl:3: id 0 is also line 2's" in one_error_line(_check(path))


def test_a_result_id_that_is_not_an_integer_names_the_file(tmp_path: Path):
    """int('abc') failed as "invalid literal for int() with base 10: 'abc'", naming no file."""
    header = json.loads((OFFGRID / "h100-results.jsonl").read_text().splitlines()[0])
    results = tmp_path / "results.jsonl"
    results.write_text(
        json.dumps(header) + "\n" + json.dumps({"id": "abc", "status": "ok", "time_us": 5}) + "\n"
    )
    line = one_error_line(["perfdb", "check", str(TABLES), "--offgrid", str(results)])
    assert "results.jsonl: a result's id must be an integer sample id, got 'abc'" in line


def test_another_set_under_the_timed_sets_name_is_refused(tmp_path: Path):
    """The seed-20261126 set copied as samples.jsonl passed the name check: its ids were paired with the seed-19
    set's times and the report scored 308 calls against kernels that were never timed."""
    path = tmp_path / "samples.jsonl"
    path.write_text((OFFGRID / "samples-seed20261126.jsonl").read_text())
    line = one_error_line(_check(path))
    assert "timed a set of seed 19" in line and "seed 20261126" in line
