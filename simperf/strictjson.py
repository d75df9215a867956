"""JSON every parser reads: no Infinity or NaN tokens (Python's json writes them by default; they are not JSON).

An unlimited rate is written as the string "inf" (what a scenario file accepts for request_rate); any other
non-finite number (a metric of no requests, an undefined ratio) becomes null.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

UNLIMITED_KEYS = frozenset({"request_rate", "target_rate", "rate"})


def finite(value: Any, key: str | None = None) -> Any:
    """`value` with every non-finite float replaced: "inf" for an unlimited rate, null otherwise."""
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if key in UNLIMITED_KEYS and value > 0 else None
    if isinstance(value, dict):
        return {k: finite(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v, key) for v in value]
    return value


def dumps(value: Any, *, default: Callable[[Any], Any] | None = None, **kwargs: Any) -> str:
    """json.dumps that never writes Infinity/NaN; `default` values are made finite too."""
    if default is not None:
        # let json call `default` first, then clean what it returned
        text = json.dumps(value, default=default, allow_nan=True)
        value = json.loads(text)
    return json.dumps(finite(value), allow_nan=False, **kwargs)
