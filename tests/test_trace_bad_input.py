"""`simperf trace ...` on careless trace files: each is refused with one `error:` line naming the file and line,
never read as something else."""

from __future__ import annotations

from pathlib import Path

from clierrors import one_error_line


def test_a_jsonl_row_giving_a_key_twice_is_refused(tmp_path: Path):
    """json.loads kept the last input_len: the row was read as 99 tokens without a word."""
    path = tmp_path / "dup.jsonl"
    path.write_text(
        '{"arrival_s": 0, "input_len": 10, "output_len": 5}\n'
        '{"arrival_s": 1, "input_len": 10, "output_len": 5, "input_len": 99}\n'
    )
    line = one_error_line(["trace", "inspect", str(path)])
    assert "dup.jsonl:2" in line and "'input_len' is given twice" in line


def test_a_csv_header_naming_a_column_twice_is_refused(tmp_path: Path):
    """Each row kept the last column of a name: input_len was read from the fourth column (99), not the second."""
    path = tmp_path / "dup.csv"
    path.write_text("arrival_s,input_len,output_len,input_len\n0,10,5,99\n")
    line = one_error_line(["trace", "inspect", str(path)])
    assert "dup.csv:1" in line and "'input_len' is given twice" in line
