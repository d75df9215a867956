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


def did_you_mean(given: Any, allowed: list[str]) -> str:
    """The hint " (did you mean 'h100'?)" where `given` is an allowed value in another case or punctuation, else
    the empty string."""
    same = same_word(given, allowed)
    return f" (did you mean {same!r}?)" if same else ""


def not_allowed(given: str, allowed: list[str]) -> str:
    """An option's refusal of a value not in `allowed`: "got 'H100' (did you mean 'h100'?); allowed values: ..."."""
    return f"got {given!r}{did_you_mean(given, allowed)}; allowed values: {', '.join(allowed)}"


def _bare(word: str) -> str:
    return re.sub(r"[\s_.\-]", "", word.casefold())
