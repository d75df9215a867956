"""Which host a recorded run ran on, as `hardware.host_speed` (docs/overheads.md "Hosts").

SGLang's host-side costs are single-threaded Python and scale with the host CPU; the corpus was recorded on three
lent hosts, which differ by 1.6x on the same served work. A run does not record its host's speed, but it records
the plan that ran it (run.json), and each plan ran on one host:
- the single-H100 host's plans: the speed measured for it (scenario.models.SINGLE_H100_HOST_SPEED);
- the H200 host's plans: 1, the reference;
- the 4-GPU H100 host of the tensor-parallel plans: not measured. Taken as 1, the speed of the 4-GPU host that was
  measured (an H200 one, within 13% of 1): an assumption, which its runs support (a c1 `http_in` of 2.1 ms against
  the single-H100 host's 2.3-3.3 ms; their TPOT at 64-512 requests within 2-21% at 1, +25-49% at 0.6185).
"""

from __future__ import annotations

import json
from pathlib import Path

from simperf.scenario.models import SINGLE_H100_HOST_SPEED

# streaming.yaml ran on the same lent single-H100 kind (groundtruth/experiments/streaming-h100, 2026-11-27)
SINGLE_H100_HOST_PLANS = frozenset(
    {
        "h100.yaml",
        "h100-host.yaml",
        "h100-waves.yaml",
        "h100-fp8.yaml",
        "h100-extend-host.yaml",
        "streaming.yaml",
        "h100-tight.yaml",  # the same lent single-H100 kind (2026-11-27, fifteenth session)
        "h100-check-graph.yaml",  # the same kind (2026-11-27, eighteenth session)
        "h100-check-ragged.yaml",  # the same kind (2026-11-28, twenty-second session)
        "h100-check-ragged-2.yaml",  # the same kind (2026-11-28, twenty-second session)
        "h100-check-straggler.yaml",  # the same kind (2026-11-28, twenty-second session)
        "h100-check-straggler-custom.yaml",  # the same kind (twenty-third session)
        "h100-check-straggler-fa3.yaml",  # the same kind (planned twenty-third, recorded twenty-fourth session)
        "h100-check-eager-decode.yaml",  # the same kind (twenty-fourth session)
    }
)
H200_HOST_PLANS = frozenset({"h200.yaml", "h200-host.yaml", "h200-check-graph.yaml"})
TENSOR_PARALLEL_HOST_PLANS = frozenset({"h100-tp2.yaml", "h100-tp4.yaml"})


# plans recorded to check a prediction committed before them: their runs are compared, never measured from
CHECK_ONLY_PLANS = frozenset(
    {
        "h100-tight.yaml",
        "h100-check-graph.yaml",
        "h200-check-graph.yaml",
        "h100-check-ragged.yaml",
        "h100-check-ragged-2.yaml",
        "h100-check-straggler.yaml",
        "h100-check-straggler-custom.yaml",
        "h100-check-straggler-fa3.yaml",
        "h100-check-eager-decode.yaml",
        "h200x2-check-moe-tp2.yaml",
        "h200x4-check-moe-tp4.yaml",  # twenty-seventh session
        "h200x2-check-dp-attention.yaml",  # twenty-ninth session
        "h200-check-dense-8b.yaml",  # twenty-eighth session
        "h200-check-eagle.yaml",  # thirtieth session
        "h200-check-eagle-qwen3.yaml",  # thirty-first session
    }
)


def _plan_name(run_dir: Path) -> str:
    status = run_dir / "run.json"
    plan = json.loads(status.read_text(encoding="utf-8")).get("plan") if status.exists() else None
    return Path(str(plan or "")).name


def feeds_defaults(run_dir: Path) -> bool:
    """Whether a recorded run may feed a measured default (False for a check-only plan's runs)."""
    return _plan_name(run_dir) not in CHECK_ONLY_PLANS


def host_speed_of(run_dir: Path) -> float | None:
    """hardware.host_speed of the host a recorded run ran on; None (the GPU kind's default) for a plan not listed."""
    name = _plan_name(run_dir)
    if name in SINGLE_H100_HOST_PLANS:
        return SINGLE_H100_HOST_SPEED
    if name in H200_HOST_PLANS or name in TENSOR_PARALLEL_HOST_PLANS:
        return 1.0
    return None
