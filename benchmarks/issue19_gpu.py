"""Issue 19's GPU run, one resumable command per GPU kind: (b) time the off-grid set, then (a) measure the new grid
keys with `simperf calibrate`, in priority tiers, inside one time budget.

On an H100 or H200 host, from the repository root (torch 2.11, CUDA 13, Python 3.12, no network):

    mkdir -p /tmp/site && tar -xJf .kit/gpu-kit.tar.xz -C /tmp/site && export PYTHONPATH=/tmp/site:$PWD
    python benchmarks/issue19_gpu.py --out $OUT --budget-s 420

Rerun the same command to continue: the work directory out/issue19/<gpu>/ (git-ignored) keeps the journaled
off-grid results, the calibration tables being extended and flashinfer's JIT cache, and every step skips what is
done. After each step the outputs are copied to $OUT:

    $OUT/offgrid/<gpu>-results.jsonl     -> commit as calibration/offgrid/<gpu>-results.jsonl
    $OUT/calibration/<gpu>/*.parquet     -> commit over calibration/<gpu>/ (the shipped rows plus the new ones)
    $OUT/issue19-<gpu>.log               -> what ran, per step, with its wall time (not committed)

On a CPU, `--dry-run --gpu h200` lists every step's points and an estimate of its GPU seconds (per point: 0.1 s,
0.36 s for a tuned Triton MoE point, plus 12 x the kernel time the current tables predict).

Steps, in order (the budget stops starting new points; a later rerun continues):
  1. off-grid set calibration/offgrid/samples.jsonl               (python -m simperf.perfdb.offgrid time)
  1b. calibration/grids/deepseek_v2_lite.yaml, gemm + moe (the corpus's MLA model)
  2. calibration/grids/issue19_<gpu>_keys.yaml, attention ops, --ragged 16 (H100) / 24 (H200)
  3. calibration/grids/issue19_<gpu>_buckets.yaml (decode attention at CUDA-graph bucket batch sizes)
  4. calibration/grids/issue19_<gpu>_keys.yaml, gemm + elementwise
  5. calibration/grids/issue19_<gpu>_gemm_m.yaml (GEMM M between the powers of two)
  6. calibration/grids/issue19_<gpu>_mha_prefix.yaml (MHA prefill over cached prefixes, every zoo GQA layout)
  7. H100 only: calibration/grids/issue19_h100_moe.yaml, then issue19_h100_moe_qwen3.yaml (Triton fused MoE)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from simperf.perfdb.offgrid.io import results_name

ROOT = Path(__file__).resolve().parents[1]
OFFGRID = ROOT / "calibration" / "offgrid"
# Seconds per point besides the kernel itself: 0.1 s measured for small graph-replayed kernels (104 fp8
# quantisation points in ~10 s) and 0.36 s for Triton MoE points, which tune their tiles first (210 in 75 s; both
# docs/calibration.md "Later runs on the H200").
POINT_OVERHEAD_S = {"moe": 0.36}
DEFAULT_OVERHEAD_S = 0.1
REPLAY_FACTOR = 12.0  # an estimate: two warm passes, a capture warm-up, the capture and >= 5 replays


@dataclass(frozen=True)
class Step:
    name: str
    grid: str | None  # grid file stem under calibration/grids/ (None: a set of samples, `samples`)
    ops: str | None = None
    ragged: int = 0
    samples: str = "samples"  # with grid None: the samples file's stem under calibration/offgrid/


def steps(gpu: str) -> list[Step]:
    ragged = 24 if gpu == "h200" else 16
    out = [
        Step("offgrid", None),
        # the ground-truth corpus serves DeepSeek-V2-Lite on both GPUs: its GEMMs and routed MoE
        Step("deepseek-v2-lite", "deepseek_v2_lite", "gemm,moe"),
        Step("keys-attention", f"issue19_{gpu}_keys", "attention", ragged),
        Step("buckets", f"issue19_{gpu}_buckets", "attn_mla_decode,attn_gqa_decode"),
        Step("keys-gemm-elementwise", f"issue19_{gpu}_keys", "gemm,elementwise"),
        Step("gemm-m", f"issue19_{gpu}_gemm_m", "gemm"),
        # sixth session: MHA prefill over cached prefixes and short extends for every zoo GQA head layout
        Step("mha-prefix", f"issue19_{gpu}_mha_prefix", "attn_mha_prefill"),
        # eleventh session: the held-out set (seed fixed and committed before any of its calls ran), designed
        # ragged decode batches (one long request among short ones: how fast a straggler CTA streams alone),
        # decode attention on a x2 grid for every zoo head count, then the page sizes and KV dtypes SGLang runs
        Step("offgrid-seed20261126", None, samples="samples-seed20261126"),
        Step("straggler-dev", None, samples="straggler-dev"),
        Step("dense", f"issue19_{gpu}_dense", "attn_gqa_decode,attn_mla_decode"),
        Step("variants", f"issue19_{gpu}_variants", "attn_gqa_decode,attn_mla_decode"),
        # block-scaled fp8 GEMMs of every zoo shape at M between the powers of two (cuBLASLt's kernel switches)
        Step("gemm-m-zoo", f"issue19_{gpu}_gemm_m_zoo", "gemm"),
        # absorbed MLA extend at pages 16 and 64 (the tables had page 1 only)
        Step("mla-extend-pages", f"issue19_{gpu}_mla_extend_pages", "attn_mla_extend"),
    ]
    if gpu == "h100":  # the H100 had no Triton fused-MoE rows (the H200 has them for every zoo MoE shape)
        out += [
            Step("moe-deepseek", "issue19_h100_moe", "moe"),
            Step("moe-qwen3", "issue19_h100_moe_qwen3", "moe"),
        ]
    return out


def _calibrate_args(step: Step, tables: Path, budget_s: float | None) -> list[str]:
    args = ["--grid", str(ROOT / "calibration" / "grids" / f"{step.grid}.yaml"), "--out", str(tables)]
    if step.ops:
        args += ["--ops", step.ops]
    if step.ragged:
        args += ["--ragged", str(step.ragged)]
    if budget_s is not None:
        args += ["--time-budget-s", f"{budget_s:.0f}"]
    return args


# ---- dry run (CPU): the points of every step and an estimate of their GPU seconds ---------------------------


def _estimate_s(points: list[dict], gpu: str) -> float:
    from simperf.hardware.catalog import get_gpu
    from simperf.perfdb.db import PerfDB, shipped_calibration_dir
    from simperf.perfdb.schema import OP_SPECS

    db = PerfDB.load(shipped_calibration_dir(gpu), get_gpu(gpu))
    total = 0.0
    for p in points:
        spec = OP_SPECS[p["op"]]
        key = {c: p.get(c) for c in spec.key_columns}
        axes = {a: float(p[a]) for a in spec.axis_columns}
        us = float(db.curve(p["op"], key)(**axes)[0])
        total += POINT_OVERHEAD_S.get(p["op"], DEFAULT_OVERHEAD_S) + REPLAY_FACTOR * us * 1e-6
    return total


def dry_run(gpu: str) -> int:
    from collections import Counter

    from simperf.calibrate.runner import RunOptions, pending_points, select_points
    from simperf.perfdb.db import shipped_calibration_dir
    from simperf.perfdb.offgrid.io import read_samples

    probe = {"gpu": gpu, "device_count": 1, "sm_major": 9}
    grand = 0.0
    seen: set[str] = set()
    for step in steps(gpu):
        if step.grid is None:
            _, samples = read_samples(OFFGRID / f"{step.samples}.jsonl")
            points = [s["point"] for s in samples]
        else:
            options = RunOptions(
                grid_path=ROOT / "calibration" / "grids" / f"{step.grid}.yaml",
                ops=step.ops.split(",") if step.ops else None,
                ragged=step.ragged,
                gpu=gpu,
                dry_run=True,
            )
            points = pending_points(select_points(options, probe), shipped_calibration_dir(gpu), options)
            from simperf.calibrate.points import point_key

            points = [p for p in points if point_key(p) not in seen]
            seen |= {point_key(p) for p in points}
        seconds = _estimate_s(points, gpu)
        grand += seconds
        groups = Counter(f"{p['op']}/{p['backend']}" for p in points)
        print(f"{step.name:24s} {len(points):5d} points  ~{seconds:5.0f} GPU s   {dict(groups)}")
    print(f"{'total':24s} ~{grand:.0f} GPU s (estimate; plus flashinfer JIT warm-up when its cache is cold)")
    return 0


# ---- the run (GPU) -------------------------------------------------------------------------------------------


def copy_outputs(work: Path, out: Path, gpu: str, shipped: Path) -> list[str]:
    """The results so far and every table that differs from the shipped one, into `out` (each call's $OUT
    starts empty, so every call hands back the whole of what was measured since the work directory began)."""
    copied = []
    for results in sorted(work.glob("*results*.jsonl")):
        (out / "offgrid").mkdir(parents=True, exist_ok=True)
        shutil.copy2(results, out / "offgrid" / results.name)
        copied.append(f"offgrid/{results.name}")
    for path in sorted((work / "tables").glob("*.parquet")):
        before = shipped / path.name
        if before.exists() and before.read_bytes() == path.read_bytes():
            continue
        (out / "calibration" / gpu).mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, out / "calibration" / gpu / path.name)
        copied.append(f"calibration/{gpu}/{path.name}")
    return copied


def _detect_gpu() -> str:
    from simperf.calibrate.runner import probe_device

    return str(probe_device()["gpu"])


def run(
    gpu: str | None, out: Path, budget_s: float, work: Path | None = None, only: set[str] | None = None
) -> int:
    started = time.monotonic()
    gpu = gpu or _detect_gpu()
    work = work or ROOT / "out" / "issue19" / gpu
    tables = work / "tables"
    if not tables.exists():  # resume needs the shipped rows: calibrate skips every point already measured
        shutil.copytree(ROOT / "calibration" / gpu, tables)
    env = {**os.environ, "FLASHINFER_WORKSPACE_BASE": str(work / "fiws")}
    out.mkdir(parents=True, exist_ok=True)
    log = out / f"issue19-{gpu}.log"
    for step in steps(gpu):
        if only and step.name not in only:
            continue
        left = budget_s - (time.monotonic() - started)
        if left < 20:
            _log(log, f"{step.name}: skipped, {left:.0f} s of the budget left (rerun to continue)")
            continue
        if step.grid is None:
            results = work / results_name(step.samples, gpu)
            committed = OFFGRID / results.name
            if not results.exists() and committed.exists():  # resume from what is committed
                shutil.copy2(committed, results)
            cmd = [
                sys.executable,
                "-m",
                "simperf.perfdb.offgrid",
                "time",
                str(OFFGRID / f"{step.samples}.jsonl"),
            ]
            cmd += [
                "--out",
                str(results),
                "--time-budget-s",
                f"{min(left, 0.7 * budget_s):.0f}",
            ]
        else:
            cmd = [sys.executable, "-m", "simperf.calibrate", *_calibrate_args(step, tables, left - 10)]
        t0 = time.monotonic()
        code = subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode
        _log(log, f"{step.name}: exit {code} after {time.monotonic() - t0:.0f} s: {' '.join(cmd[1:])}")
        copy_outputs(work, out, gpu, ROOT / "calibration" / gpu)
    _log(log, f"all steps: {time.monotonic() - started:.0f} s")
    return 0


def _log(path: Path, line: str) -> None:
    print(line, file=sys.stderr, flush=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--gpu", choices=("h100", "h200"), help="default: the GPU found (needed with --dry-run)"
    )
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out/issue19-out")))
    parser.add_argument(
        "--budget-s", type=float, default=420.0, help="stop starting new points after this long"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list the points and estimate GPU seconds (CPU)"
    )
    parser.add_argument("--steps", help="comma-separated step names to run (default: all, in order)")
    args = parser.parse_args(argv)
    only = set(args.steps.split(",")) if args.steps else None
    if only and only - {s.name for s in steps(args.gpu or "h200")}:
        parser.error(f"--steps: unknown {sorted(only - {s.name for s in steps(args.gpu or 'h200')})}")
    if args.dry_run:
        if not args.gpu:
            parser.error("--dry-run needs --gpu")
        return dry_run(args.gpu)
    return run(args.gpu, args.out, args.budget_s, only=only)


if __name__ == "__main__":
    sys.exit(main())
