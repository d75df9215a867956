"""Simulator speed on the two reference workloads (issue: predict benchmark).

(a) DeepSeek-V3 TP8 on 8xH200, 10,000 random 1k/1k requests, Poisson;
(b) Vidur's reference workload: Llama-2-7B on one H100, 10,000 requests, mean 1,155 in / 211 out, Poisson 8 req/s.

Run:  python benchmarks/bench_predict.py [--repeat 3]
Prints wall time of the whole `predict` (load tables, build the cost model, simulate, summarise) and of the
simulation alone, simulated requests per wall-second, and the ratio against Vidur's published event-loop time for
(b) (21.6 s for 10,000 requests on a 2-core machine, ~460 requests/s). Targets on the 2-core CI machine:
(b) <= 2 s, (a) <= 10 s.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from simperf.pipeline import predict
from simperf.scenario.load import load_scenario

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "a: deepseek-v3 tp8 8xh200, 10k random 1k/1k": ROOT / "scenarios" / "deepseek-v3-tp8-h200.yaml",
    "b: llama-2-7b 1xh100, 10k vidur workload": ROOT / "scenarios" / "llama2-7b-h100-vidur.yaml",
}
VIDUR_REQUESTS_PER_S = 10_000 / 21.6
TARGET_S = {"a": 10.0, "b": 2.0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'case':48} {'predict s':>10} {'sim s':>8} {'req/s':>9} {'iters':>8} {'vs Vidur':>9} target")
    for label, path in CASES.items():
        scenario = load_scenario(path)
        totals, sims = [], []
        for _ in range(args.repeat):
            started = time.perf_counter()
            prediction = predict(scenario)
            totals.append(time.perf_counter() - started)
            sims.append(prediction.wall_s)
        total = statistics.median(totals)
        n = prediction.result["completed"]
        rate = n / total
        ratio = f"{rate / VIDUR_REQUESTS_PER_S:8.1f}x" if label.startswith("b") else "       -"
        target = TARGET_S[label[0]]
        verdict = "ok" if total <= target else "MISSED"
        print(
            f"{label:48} {total:10.2f} {statistics.median(sims):8.2f} {rate:9.0f} "
            f"{prediction.stats.iterations:8d} {ratio} <= {target:.0f} s {verdict}"
        )


if __name__ == "__main__":
    main()
