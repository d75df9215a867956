"""Small sweeps for the sweep tests: Qwen3-8B, a few dozen prompts, so each point simulates in ~0.1 s."""

from __future__ import annotations

import copy
from typing import Any

BASE: dict[str, Any] = {
    "name": "tiny",
    "model": {"name": "qwen3-8b"},
    "hardware": {"gpu": "h100", "count": 1},
    "workload": {
        "dataset": {"kind": "random", "input_len": 256, "output_len": 32},
        "num_prompts": 20,
        "seed": 1,
    },
}


def sweep_dict(axes: dict[str, list[Any]], **extra: Any) -> dict[str, Any]:
    return {"name": "tiny-sweep", "base": copy.deepcopy(BASE), "axes": axes, **extra}
