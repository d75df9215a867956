"""Plan a validation (CPU): simulate the scenario with step logging, sample steps, write their programs.

<out>/plan.json says what was planned (scenario, samples, seed, GPU); <out>/programs.jsonl holds one
StepProgram per line. Re-planning with the same settings reuses them, so an interrupted validation resumes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from simperf.validate.program import StepProgram

PLAN_NAME = "plan.json"
# Bump when what a program contains changes, so that an old plan is not resumed with a new planner.
PLAN_FORMAT = 4  # 4: Triton fused-MoE points carry the tile configuration the table recorded
PROGRAMS_NAME = "programs.jsonl"
JOURNAL_NAME = "_journal.jsonl"  # the GPU side's results (validate/execute.py), one line per sample


def tables_sha256(directory: Path | None) -> str | None:
    """Fingerprint of the calibration tables a prediction reads: a plan made from other tables is stale."""
    if directory is None or not Path(directory).is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(Path(directory).glob("*.parquet")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def plan_header(
    scenario_path: Path, samples: int, seed: int, num_prompts: int | None, tables: Path | None = None
) -> dict[str, Any]:
    text = Path(scenario_path).read_bytes()
    return {
        "plan_format": PLAN_FORMAT,
        "scenario_file": str(scenario_path),
        "scenario_sha256": hashlib.sha256(text).hexdigest(),
        "tables_sha256": tables_sha256(tables),
        "samples": samples,
        "seed": seed,
        "num_prompts": num_prompts,
    }


def check_plan_format(header: dict[str, Any], out_dir: Path) -> None:
    """A plan written by another planner version may lack what the GPU side now needs (e.g. format 3 plans carry
    no MoE tile configuration, and would silently run the untuned rule): refuse it with the way out."""
    found = header.get("plan_format")
    if found != PLAN_FORMAT:
        raise ValueError(
            f"{out_dir}: plan format {found}, this simperf runs format {PLAN_FORMAT}; plan it again with "
            f"`simperf validate {header.get('scenario_file', 'SCENARIO')} --plan-only --out {out_dir}`"
        )


def supersede_journal(out_dir: Path) -> Path | None:
    """Move a journal of an earlier plan aside (kept, never deleted): its sample ids would otherwise be read as
    this plan's finished samples and skipped. Returns where it went."""
    journal = out_dir / JOURNAL_NAME
    if not journal.exists():
        return None
    n = 1
    while (target := out_dir / f"_journal.superseded-{n}.jsonl").exists():
        n += 1
    journal.replace(target)
    return target


def load_plan(out_dir: Path) -> tuple[dict[str, Any], list[StepProgram]] | None:
    plan_path, programs_path = out_dir / PLAN_NAME, out_dir / PROGRAMS_NAME
    if not plan_path.exists() or not programs_path.exists():
        return None
    header = json.loads(plan_path.read_text())
    lines = [line for line in programs_path.read_text().splitlines() if line.strip()]
    programs = [StepProgram.from_json(line) for line in lines]
    if len(programs) != header.get("num_programs"):
        return None  # written partially: plan again
    return header, programs


def plan_validation(
    scenario_path: Path,
    out_dir: Path,
    samples: int,
    seed: int = 0,
    num_prompts: int | None = None,
    calibration_dir: Path | None = None,
    on_progress=None,
) -> tuple[dict[str, Any], list[StepProgram], bool]:
    """(header, programs, reused). Reuses an existing plan made with the same scenario file and settings.
    on_progress: (finished requests, total) while the scenario is simulated."""
    from simperf.hardware.catalog import get_gpu
    from simperf.perfdb.db import shipped_calibration_dir
    from simperf.pipeline import RunGuards, predict
    from simperf.scenario.load import load_scenario
    from simperf.sim.steplog import StepLog
    from simperf.validate.build import UnsupportedStep, build_program
    from simperf.validate.sample import sample_steps

    scenario = load_scenario(scenario_path)
    gpu = get_gpu(scenario.hardware.gpu)
    tables = calibration_dir or scenario.calibration_dir or shipped_calibration_dir(gpu.key)
    header = plan_header(scenario_path, samples, seed, num_prompts, tables)
    existing = load_plan(out_dir)
    if existing is not None:
        old, programs = existing
        if all(old.get(k) == v for k, v in header.items()):
            return old, programs, True
    if num_prompts is not None:
        scenario = scenario.model_copy(
            update={"workload": scenario.workload.model_copy(update={"num_prompts": num_prompts})}
        )
    if scenario.serving.speculative is not None:
        raise UnsupportedStep(
            "serving.speculative: validate rebuilds target-model steps only; speculative steps (draft, verify, "
            "draft-extend) are not rebuilt yet — validate the scenario without speculative decoding"
        )
    log = StepLog()
    prediction = predict(
        scenario, calibration_dir=calibration_dir, step_log=log, guards=RunGuards(on_progress=on_progress)
    )
    sampled = sample_steps(log.steps, samples, seed)
    programs = [build_program(prediction.cost, s) for s in sampled]
    header.update(
        scenario=scenario.name,
        model=prediction.arch.name,
        gpu=prediction.gpu.key,
        num_gpus=scenario.hardware.count,
        calibration_dir=str(prediction.calibration_dir) if prediction.calibration_dir else None,
        logged_steps=len(log.steps),
        simulated_iterations=prediction.stats.iterations,
        num_programs=len(programs),
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    supersede_journal(out_dir)
    tmp = out_dir / (PROGRAMS_NAME + ".tmp")
    tmp.write_text("".join(p.to_json() + "\n" for p in programs))
    tmp.replace(out_dir / PROGRAMS_NAME)
    (out_dir / PLAN_NAME).write_text(json.dumps(header, indent=2) + "\n")
    return header, programs, False
