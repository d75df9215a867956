"""Reading JSON Lines: one JSON object per non-blank line, errors pointing at ``source:line``.

Traces, bench_serving results and benchmark imports all arrive as JSONL; one reader keeps
their line numbering and their error messages consistent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


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
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise error(f"{source}:{line_no}: {invalid_phrase} ({e.msg})") from None
        if not isinstance(obj, dict):
            raise error(f"{source}:{line_no}: expected a JSON object, got {type(obj).__name__}")
        yield line_no, obj
