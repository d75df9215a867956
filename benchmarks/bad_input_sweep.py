"""Feed `simperf predict` bad values everywhere and list what did not end in one clear error line.

    python benchmarks/bad_input_sweep.py              # every case (about 4 minutes on 2 cores)
    python benchmarks/bad_input_sweep.py --jobs 4

Two families of cases:
- every leaf of a few shipped scenarios (a server, a PD pair, MTP, DP attention, a DSA model on B200, three fleets)
  set through `--set` to -1, 0, "abc", null and 1e9;
- bad values of bench_serving / launch_server flags on a small Qwen3-8B load.

Each case ends as TRACEBACK (a Python traceback reached the user: always a bug), ERROR (exit 2 with an `error:`
line: what a user should get) or RAN (exit 0). RAN cases are listed for review: a bad value that runs is either
legal (a large rate, a null that means the default) or a silent wrong answer. tests/test_bad_inputs.py holds the
cases that were bugs; this is the sweep that looks for new ones.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = (
    "scenarios/qwen3-8b-h100.yaml",
    "scenarios/layouts/r1-1p1d-h200.yaml",
    "scenarios/layouts/r1-tp8-mtp-c16.yaml",
    "scenarios/layouts/r1-tp8-dp8-h200.yaml",
    "scenarios/b200/dsv32-tp8-dp8-flashmla-sparse-bf16kv-sharegpt-c16.yaml",
    "scenarios/fleet/qwen3-32b-h100-autoscale.yaml",
    "scenarios/fleet/deepseek-v3-8x-h200-chat.yaml",
    "scenarios/fleet/qwen3-8b-h100-8x-multiturn.yaml",
)
BAD_VALUES = ("-1", "0", "abc", "null", "1e9")
SMALL = ["--set", "workload.num_prompts=40"]
FLAG_BASE = [
    "--model-path", "qwen3-8b", "--gpu", "h100", "--dataset-name", "random", "--random-input-len", "256",
    "--random-output-len", "32", "--num-prompts", "20", "--max-concurrency", "4",
]  # fmt: skip
BAD_FLAGS = {
    "--random-input-len": ("0", "-5", "abc", "1.5"),
    "--random-output-len": ("0", "-1", "x"),
    "--random-range-ratio": ("-0.1", "1.5", "nan", "inf"),
    "--num-prompts": ("0", "-3", "1.2"),
    "--request-rate": ("0", "-1", "nan", "abc"),
    "--max-concurrency": ("-1", "abc"),
    "--tp-size": ("0", "-1", "3", "abc"),
    "--dp-size": ("0", "3"),
    "--attention-backend": ("bogus", "nsa", "flashmla"),
    "--page-size": ("0", "-16", "abc"),
    "--kv-cache-dtype": ("fp4", "bogus"),
    "--quantization": ("int4", "bogus"),
    "--chunked-prefill-size": ("0", "-5"),
    "--max-running-requests": ("0", "-1"),
    "--max-total-tokens": ("0", "-1"),
    "--mem-fraction-static": ("0", "1.5", "nan"),
    "--cuda-graph-max-bs": ("0", "-1"),
    "--stream-interval": ("0", "-1"),
    "--schedule-policy": ("bogus",),
    "--speculative-algorithm": ("bogus", "MEDUSA"),
    "--gpu": ("a100", "bogus"),
    "--gpus": ("0", "-1", "abc"),
    "--model-path": ("nope", "/nonexistent/dir"),
    "--dataset-name": ("sharegpt", "bogus"),
    "--dataset-path": ("/nonexistent.jsonl", "/etc/passwd"),
}


def leaves(data: object, prefix: str = ""):
    """(field path, value) of every scalar of a scenario; list items are skipped (--set takes lists whole)."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from leaves(value, f"{prefix}.{key}" if prefix else str(key))
    elif not isinstance(data, list):
        yield prefix, data


def cases() -> list[tuple[str, list[str]]]:
    out = []
    for scenario in SCENARIOS:
        data = yaml.safe_load((ROOT / scenario).read_text(encoding="utf-8"))
        multi_turn = (data.get("workload") or {}).get("dataset", {}).get("kind") == "multi_turn"
        for path, _ in leaves(data):
            if path == "name":
                continue
            small = [] if multi_turn or path == "workload.num_prompts" else SMALL
            for bad in BAD_VALUES:
                out.append(
                    (f"{scenario} {path}={bad}", [str(ROOT / scenario), "--set", f"{path}={bad}", *small])
                )
    for flag, values in BAD_FLAGS.items():
        for bad in values:
            out.append((f"{flag} {bad}", [*FLAG_BASE, flag, bad]))
    return out


def run(case: tuple[str, list[str]]) -> tuple[str, str, str]:
    name, args = case
    try:
        done = subprocess.run(
            [sys.executable, "-m", "simperf.cli", "predict", "-q", *args],
            capture_output=True,
            text=True,
            timeout=300,
            cwd="/tmp",
        )
    except subprocess.TimeoutExpired:
        return name, "TIMEOUT", ""
    if "Traceback" in done.stderr or "Traceback" in done.stdout:
        return name, "TRACEBACK", done.stderr.strip().splitlines()[-1]
    if done.returncode == 0:
        return name, "RAN", ""
    lines = done.stderr.strip().splitlines() or [""]
    # several problems of one scenario come as an `error:` line and one indented line each
    said = any(line.startswith("error:") for line in lines)
    return name, "ERROR" if said and done.returncode == 2 else f"EXIT {done.returncode}", lines[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3)
    args = parser.parse_args()
    todo = cases()
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(run, todo))
    counts: dict[str, int] = {}
    for _, outcome, _ in results:
        counts[outcome] = counts.get(outcome, 0) + 1
    print(f"{len(results)} cases: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for name, outcome, last in results:
        if outcome != "ERROR":
            print(f"{outcome:9s} {name}  {last}")
    return 1 if counts.get("TRACEBACK") or counts.get("TIMEOUT") else 0


if __name__ == "__main__":
    raise SystemExit(main())
