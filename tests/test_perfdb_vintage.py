"""One third-party vintage per op: the newest SGLang vintage not newer than the scenario's, else the oldest."""

from __future__ import annotations

import polars as pl

from simperf.perfdb.vintage import select_vintages

_TAGS = ("sglang 0.5.9", "sglang 0.5.10", "sglang 0.5.14", "nccl 2.27.3", "nccl 2.29.2", "sglang 0.5.14")


def _rows() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "op": ["allreduce"] * 5 + ["gemm", "gemm"],
            "source": [f"third-party:aiconfigurator 0.12.0 ({t})" for t in _TAGS] + ["measured"],
            "time_us": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
        }
    )


def test_newest_vintage_not_newer_than_the_requested_sglang():
    rows, choices = select_vintages(_rows(), "0.5.12")
    vintages = rows["source"].str.extract(r"\((.*)\)$", 1).fill_null("-")
    assert set(zip(rows["op"], vintages, strict=True)) == {
        ("allreduce", "sglang 0.5.10"),
        ("allreduce", "nccl 2.29.2"),
        ("gemm", "sglang 0.5.14"),
        ("gemm", "-"),
    }
    assert rows.columns == _rows().columns
    by = {(c.op, c.framework): c for c in choices}
    assert by[("allreduce", "sglang")].chosen == "0.5.10" and not by[("allreduce", "sglang")].fallback
    assert by[("gemm", "sglang")].fallback  # only 0.5.14 on file, newer than 0.5.12: the oldest, said so


def test_no_version_takes_the_newest_and_untagged_rows_stay():
    rows, choices = select_vintages(_rows(), None)
    assert sorted(rows["time_us"].to_list()) == [3.0, 5.0, 6.0, 7.0]
    assert not any(c.fallback for c in choices)
    assert "0.5.9, 0.5.10, 0.5.14" in next(c for c in choices if c.framework == "sglang").describe()
