"""The resume log of a running sweep: one JSON line per finished point, appended and flushed as it finishes.

A sweep that stops (Ctrl-C, a lost node, a crash) leaves its finished points here; the next run skips them.
At the end the journal is compacted into the Parquet table and removed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def journal_path(table_path: Path) -> Path:
    return table_path.with_name(table_path.name + ".journal.jsonl")


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = None

    def read(self) -> dict[str, dict[str, Any]]:
        """Rows by point id; a torn last line (the process died mid-write) is ignored."""
        rows: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return rows
        with self.path.open() as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and "point_id" in row:
                    rows[row["point_id"]] = row
        return rows

    def append(self, row: dict[str, Any]) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a")
        self._file.write(json.dumps(row, default=str) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
