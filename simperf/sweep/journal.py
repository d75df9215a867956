"""The resume log of a running sweep: one JSON line per finished point, appended and flushed as it finishes.

A sweep that stops (Ctrl-C, a lost node, a crash) leaves its finished points here; the next run skips them.
At the end the journal is compacted into the Parquet table and removed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simperf.jsonl import FsyncedJsonLines, read_journal_lines


def journal_path(table_path: Path) -> Path:
    return table_path.with_name(table_path.name + ".journal.jsonl")


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines = FsyncedJsonLines(path, default=str)

    def read(self) -> dict[str, dict[str, Any]]:
        """Rows by point id; a torn last line (the process died mid-write) is ignored."""
        return {row["point_id"]: row for row in read_journal_lines(self.path) if "point_id" in row}

    def append(self, row: dict[str, Any]) -> None:
        self._lines.append(row)

    def close(self) -> None:
        self._lines.close()

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
