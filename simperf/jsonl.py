"""Reading JSON Lines: one JSON object per non-blank line, errors pointing at ``source:line``.

Traces, bench_serving results and benchmark imports all arrive as JSONL; one reader keeps
their line numbering and their error messages consistent. Calibration and validation journals are
written (and read back after a crash) with the fsynced writer below.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any


class DuplicateKeyError(ValueError):
    """A JSON object giving one key twice; the message names the key."""


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of two equal keys without a word: a trace row with input_len twice, or a result
    # with median_ttft_ms twice, was read with whichever came last (strictyaml refuses the same in YAML)
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKeyError(f"key {key!r} is given twice in one object; give it once")
        obj[key] = value
    return obj


def loads_strict(text: str) -> Any:
    """json.loads that refuses an object giving a key twice (DuplicateKeyError, a ValueError)."""
    return json.loads(text, object_pairs_hook=_refuse_duplicate_keys)


def json_object_lines(
    lines: Iterable[str],
    source: object,
    error: type[Exception],
    invalid_phrase: str = "invalid JSON",
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_no, object)`` for each non-blank line; raise ``error`` naming the line otherwise.

    ``invalid_phrase`` lets each caller keep the wording its users already see.
    """
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = loads_strict(line)
        except json.JSONDecodeError as e:
            raise error(f"{source}:{line_no}: {invalid_phrase} ({e.msg})") from None
        except DuplicateKeyError as e:
            raise error(f"{source}:{line_no}: {e}") from None
        if not isinstance(obj, dict):
            raise error(f"{source}:{line_no}: expected a JSON object, got {type(obj).__name__}")
        yield line_no, obj


class FsyncedJsonLines:
    """Append-only JSON Lines file, each line flushed and fsynced before append() returns: a kill loses at
    most the line being written (which read_journal_lines then skips)."""

    def __init__(self, path: Path, default: Callable[[Any], Any] | None = None) -> None:
        self.path = Path(path)
        self._default = default  # json.dumps' fallback for values JSON does not know (e.g. str)
        self._fh: Any = None

    def append(self, obj: Mapping[str, Any]) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open across appends
        self._fh.write(json.dumps(obj, separators=(",", ":"), default=self._default) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_journal_lines(path: Path) -> list[dict[str, Any]]:
    """Objects of a FsyncedJsonLines file; a torn last line (killed mid-write) is ignored."""
    if not Path(path).exists():
        return []
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file holding one object; a ValueError naming the file when it is not JSON or not an object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data
