"""Re-time a table's rows from rest: do rows the tables recorded at a capped SM clock time faster after an idle gap?

docs/perfdb.md ("The GPU's clock state") found that a compute-bound kernel timed right after seconds of compute-bound
work runs at the H200's power-capped clock (1,365-1,515 MHz) and ~20% slower than from rest, and that the tables'
sweeps recorded many rows at such clocks (`sm_clock_mhz`) while the off-grid check times its calls at ~1,950 MHz.
This re-times the selected rows of one table the way the check times its calls: each after `--rest` seconds idle,
by CUDA-graph replay through the same backend code as `simperf calibrate` (calibrate/backends), and writes, per row,
the table's time and clock beside the new ones. A control set of rows the table recorded at a high clock says what
the protocol changes when the clock was not capped.

    python benchmarks/retime_from_rest.py OUT.jsonl calibration/h200/attn_mha_prefill.parquet \\
        --max-clock 1600 --max-us 200 --control 60 --rest 0.5
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import time
from typing import Any


def select_rows(path: str, max_clock: float, max_us: float, control: int) -> list[tuple[str, dict[str, Any]]]:
    import pyarrow.parquet as pq

    rows = [
        r
        for r in pq.read_table(path).to_pylist()
        if r["status"] == "ok" and r["sample"] == "grid" and r["sm_clock_mhz"] and r["time_us"] < max_us
    ]
    capped = [("capped", r) for r in rows if r["sm_clock_mhz"] < max_clock]
    high = [r for r in rows if r["sm_clock_mhz"] >= 1900]
    chosen = random.Random(20261128).sample(high, min(control, len(high)))
    return capped + [("control", r) for r in chosen]


def main(argv: list[str] | None = None) -> int:
    from simperf.calibrate.backends import group_for
    from simperf.calibrate.points import IDENTITY_COLUMNS
    from simperf.calibrate.provenance import current_clocks_mhz, detect_device
    from simperf.calibrate.worker import WorkerContext, timing_config

    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("table")
    parser.add_argument("--max-clock", type=float, default=1600.0)
    parser.add_argument("--max-us", type=float, default=200.0)
    parser.add_argument("--control", type=int, default=60)
    parser.add_argument("--rest", type=float, default=0.5)
    args = parser.parse_args(argv)
    ctx = WorkerContext(device=detect_device(use_torch=True), timing=timing_config(None))
    rows = select_rows(args.table, args.max_clock, args.max_us, args.control)
    print(f"{len(rows)} rows", flush=True)
    with open(args.out, "w", encoding="utf-8") as out:
        for i, (kind, row) in enumerate(rows):
            point = {c: row.get(c) for c in IDENTITY_COLUMNS}  # what the point is, not its measurement
            module = importlib.import_module(group_for(point["op"], point["backend"]).module)
            time.sleep(args.rest)
            m = module.run_point(point, ctx)
            clock, _ = current_clocks_mhz()
            out.write(
                json.dumps(
                    {
                        "kind": kind,
                        "point": point,
                        "table_us": row["time_us"],
                        "table_clock_mhz": row["sm_clock_mhz"],
                        "rest_us": m.time_us if m else None,
                        "rest_clock_mhz": clock,
                    }  # fmt: skip
                )
                + "\n"
            )
            out.flush()
            if i % 50 == 0:
                print(f"{i + 1}/{len(rows)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
