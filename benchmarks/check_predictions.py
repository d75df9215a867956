"""Check that a change to the simulator leaves every prediction unchanged (for speed work).

Runs `simperf predict SCENARIO -o json --requests R.parquet` for every scenario under scenarios/ with this tree and
with a baseline tree (another git worktree of the commit to compare against), and compares the metrics JSON and the
per-request records. Floats may differ only by summation order: the largest relative difference is reported and
must stay below --rtol. The baseline's outputs are cached in --cache (delete it when the baseline changes).

Run:  python benchmarks/check_predictions.py --baseline /tmp/wt-base [--only vidur]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
# paths inside the JSON name the tree they ran in; the wall time is not a prediction
IGNORED_KEYS = {"calibration_dir", "simulation_wall_s"}


def run_predict(tree: Path, scenario: Path, out_dir: Path) -> dict:
    """The JSON (or the error) of one predict run from `tree`, with its records written next to it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = scenario.relative_to(ROOT / "scenarios").as_posix().replace("/", "__")
    cached = out_dir / f"{stem}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    records = out_dir / f"{stem}.parquet"
    # a wide terminal keeps rich from wrapping error messages at a width that depends on the path
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "1000"}
    proc = subprocess.run(
        [sys.executable, "-m", "simperf.cli", "predict", str(tree / "scenarios" / scenario.relative_to(ROOT / "scenarios")),
         "-o", "json", "--requests", str(records)],
        capture_output=True, text=True, env=env, cwd=tree, check=False,
    )  # fmt: skip
    if proc.returncode == 0:
        result = {"ok": json.loads(proc.stdout), "records": str(records) if records.exists() else None}
    else:
        message = " ".join(proc.stderr.replace(str(tree), "<tree>").split()[-40:])
        result = {"error": message, "rc": proc.returncode}
    cached.write_text(json.dumps(result))
    return result


def compare(a, b, path: str, worst: list[float], diffs: list[str]) -> None:
    """Recursive comparison; exact for everything but floats, whose worst relative difference is collected."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            diffs.append(f"{path}: keys differ {sorted(set(a) ^ set(b))}")
        for key in set(a) & set(b):
            if key not in IGNORED_KEYS:
                compare(a[key], b[key], f"{path}.{key}", worst, diffs)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            diffs.append(f"{path}: lengths {len(a)} != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            compare(x, y, f"{path}[{i}]", worst, diffs)
    elif isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if a != b and not (math.isnan(a) and math.isnan(b)):
                rel = abs(a - b) / max(abs(a), abs(b))
                worst.append(rel)
                if rel > 0:
                    diffs.append(f"{path}: {a!r} != {b!r} (rel {rel:.2e})")
        else:
            diffs.append(f"{path}: {a!r} != {b!r}")
    elif a != b:
        diffs.append(f"{path}: {a!r} != {b!r}")


def compare_records(base: str, new: str, worst: list[float], diffs: list[str]) -> None:
    ta, tb = pq.read_table(base).to_pydict(), pq.read_table(new).to_pydict()
    compare(ta, tb, "records", worst, diffs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--baseline", type=Path, required=True, help="worktree of the commit to compare against"
    )
    parser.add_argument("--cache", type=Path, default=Path("/tmp/simperf-pred-base"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/simperf-pred-new"))
    parser.add_argument("--only", default="", help="substring of the scenario paths to check")
    parser.add_argument("--rtol", type=float, default=1e-9)
    args = parser.parse_args()
    scenarios = sorted(p for p in (ROOT / "scenarios").rglob("*.yaml") if args.only in str(p))
    failed = 0
    for scenario in scenarios:
        base = run_predict(args.baseline, scenario, args.cache)
        for stale in args.out.glob(
            scenario.relative_to(ROOT / "scenarios").as_posix().replace("/", "__") + ".*"
        ):
            stale.unlink()
        new = run_predict(ROOT, scenario, args.out)
        worst: list[float] = []
        diffs: list[str] = []
        compare(base.get("ok", base), new.get("ok", new), "metrics", worst, diffs)
        if base.get("records") and new.get("records"):
            compare_records(base["records"], new["records"], worst, diffs)
        largest = max(worst, default=0.0)
        status = "identical" if not diffs else ("float-close" if largest <= args.rtol else "DIFFERENT")
        only_float = all("(rel " in d for d in diffs)
        if diffs and not (only_float and largest <= args.rtol):
            status = "DIFFERENT"
            failed += 1
        kind = "ok" if "ok" in base else "error (same)" if base == new else "error"
        print(f"{status:12} max rel {largest:.1e}  {kind:12} {scenario.relative_to(ROOT)}")
        for line in diffs[:5] if status == "DIFFERENT" else []:
            print("    ", line)
    print(f"{len(scenarios)} scenarios, {failed} different")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
