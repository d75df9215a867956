"""Values written in another case or punctuation than an allowed one ('H100' for 'h100', 'fp8-e4m3' for
'fp8_e4m3'): the hint every refusal of a fixed-choice value gives. Neutral (imports nothing of simperf), so the
scenario, perfdb, plan, fleet and calibrate layers share one rule."""

from __future__ import annotations

import re
from typing import Any


def same_word(given: Any, allowed: list[str]) -> str | None:
    """The allowed value `given` spells in another case or punctuation (spaces, '-', '_', '.'), or None. Not the
    nearest spelling: an a100 is no h100, nor h300 an h200 (the zoo's model-name hint has the same rule)."""
    if not isinstance(given, str):
        return None
    return next((a for a in allowed if _bare(a) == _bare(given)), None)


def not_allowed(given: str, allowed: list[str]) -> str:
    """An option's refusal of a value not in `allowed`: "got 'H100' (did you mean 'h100'?); allowed values: ..."."""
    same = same_word(given, allowed)
    hint = f" (did you mean {same!r}?)" if same else ""
    return f"got {given!r}{hint}; allowed values: {', '.join(allowed)}"


def _bare(word: str) -> str:
    return re.sub(r"[\s_.\-]", "", word.casefold())
