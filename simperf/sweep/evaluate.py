"""One sweep point -> one table row. Never raises: a point that cannot run becomes a row with its reason.

Runs inside worker processes (local pool or Ray), so it takes and returns plain picklable data.
"""

from __future__ import annotations

import math
import time
import traceback
from pathlib import Path
from typing import Any

from simperf.scenario.fleet import fleet_gpus
from simperf.sweep.expand import SweepPoint, canonical_json

# Row status values. Only "failed" (an unexpected exception) is retried when a sweep resumes: the others are
# what the model says about that configuration and would come out the same again.
OK, INVALID, DOES_NOT_FIT, UNSUPPORTED, FAILED = "ok", "invalid", "does_not_fit", "unsupported", "failed"


def tokens_per_s_per_user(median_tpot_ms: float) -> float:
    """Decode speed one user sees: 1000 / median TPOT (TPOT excludes the first token, as bench_serving's)."""
    return 1000.0 / median_tpot_ms if median_tpot_ms > 0 else math.nan


def _scenario_columns(scenario) -> dict[str, Any]:
    w = scenario.workload
    return {
        "gpu": scenario.hardware.gpu,
        "num_gpus": fleet_gpus(scenario) if scenario.fleet is not None else scenario.hardware.count,
        "model": scenario.model.name,
        "request_rate": w.rate,
        "max_concurrency": w.max_concurrency,
        # the requests the workload makes (requests_made, once the point ran); before, workload.num_prompts only
        # where it is that count: a multi_turn or shared_prefix dataset ignores it and a trace may hold fewer rows
        "num_prompts": w.num_prompts if w.dataset.kind in ("random", "fixed") else None,
    }


def requests_made(prediction) -> int:
    """The requests the workload made: those sent (every request of a multi_turn or shared_prefix dataset, the
    trace's chosen rows, num_prompts of a random one) plus those over the context that `over_context: drop` left
    out. The table's num_prompts column: workload.num_prompts (1000 by default) there showed 1000 for a
    16-request multi_turn workload."""
    from simperf.pipeline import DROPPED_NOTE

    sent = len(prediction.assignment) if prediction.scenario.fleet is not None else len(prediction.records)
    return int(sent + int(prediction.notes.get(DROPPED_NOTE, 0)))


def failed_requests(prediction) -> int:
    """Requests the workload made that did not complete. num_prompts - completed counted 984 failed on a
    16-request multi_turn workload (num_prompts defaults to 1000) and a negative number on a larger one, so no
    such point ever met an SLA."""
    return int(requests_made(prediction) - prediction.result["completed"])


def capped_requests(prediction) -> int:
    """Requests shortened to fit the model's context length (`over_context: cap`), as predict's note counts them: a
    point at input_len 100000 on a 40,960-token model ran shorter prompts, and its row gave no sign of it."""
    from simperf.pipeline import CAPPED_NOTE

    return int(prediction.notes.get(CAPPED_NOTE, 0))


def _metric_columns(prediction) -> dict[str, Any]:
    result = prediction.result
    metrics = {
        k: float(v)
        for k, v in result.items()
        if isinstance(v, int | float)
        and not isinstance(v, bool)
        and k not in ("request_rate", "max_concurrency")
    }
    num_gpus = getattr(
        prediction, "num_gpus", prediction.scenario.hardware.count
    )  # a fleet's: every server's
    extra = prediction.extra()
    metrics.update(
        num_prompts=requests_made(prediction),
        failed_requests=failed_requests(prediction),
        output_throughput_per_gpu=result["output_throughput"] / num_gpus,
        tokens_per_s_per_user=tokens_per_s_per_user(result["median_tpot_ms"]),
        measured_share=float(extra["measured_share"]),
        roofline_share=float(extra["step_time_share_by_source"]["roofline"]),
        kv_capacity_tokens_per_rank=int(prediction.serving.max_total_tokens),
        retractions=int(prediction.stats.retractions),
        capped_requests=capped_requests(prediction),
        simulation_wall_s=float(prediction.wall_s),
    )
    return metrics


def evaluate_point(point: SweepPoint) -> dict[str, Any]:
    from simperf.pipeline import UnsupportedScenario, predict
    from simperf.scenario.load import ScenarioError, parse_scenario

    started = time.perf_counter()
    row: dict[str, Any] = {
        "point_index": point.index,
        "point_id": point.point_id,
        "config_id": point.config_id,
        "config_label": point.config_label,
        **point.columns,
        "status": OK,
        "reason": None,
    }
    try:
        scenario = parse_scenario(point.scenario, f"point {point.index}", base_dir=Path(point.base_dir))
    except ScenarioError as e:
        # the first line only repeats the source; the field-path lines are the reason
        reason = "; ".join(_without_echo(line.strip()) for line in str(e).splitlines()[1:]) or str(e)
        return {**row, "status": INVALID, "reason": reason, **_timing(started), **_scenario_json(point)}
    row.update(_scenario_columns(scenario))
    try:
        prediction = predict(scenario)
    except UnsupportedScenario as e:
        row.update(status=UNSUPPORTED, reason=str(e))
    except ValueError as e:
        row.update(status=DOES_NOT_FIT if "does not fit" in str(e) else INVALID, reason=str(e))
    except FileNotFoundError as e:
        row.update(status=INVALID, reason=str(e))
    except Exception as e:  # a bug, not a property of the configuration: keep the row, retry it on resume
        where = traceback.extract_tb(e.__traceback__)[-1]
        row.update(status=FAILED, reason=f"{type(e).__name__}: {e} (at {where.filename}:{where.lineno})")
    else:
        row.update(_metric_columns(prediction))
    return {**row, **_timing(started), **_scenario_json(point)}


def _without_echo(line: str) -> str:
    """A whole-scenario check echoes the entire scenario as "(got {...})"; the row has it in scenario_json."""
    cut = line.find(" (got {")
    return line[:cut] if cut >= 0 else line


def _timing(started: float) -> dict[str, float]:
    return {"point_wall_s": time.perf_counter() - started}


def _scenario_json(point: SweepPoint) -> dict[str, str]:
    return {"scenario_json": canonical_json(point.scenario)}
