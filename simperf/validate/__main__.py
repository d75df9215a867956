"""`python -m simperf.validate run|report DIR`: the GPU-side half of `simperf validate`, with no dependencies
beyond torch, pyarrow and the calibration backends (the lent GPU machines lack the laptop extras). Plan on
any machine with `simperf validate SCENARIO --plan-only --out DIR`, copy DIR, run here, report anywhere."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from simperf.validate.execute import ValidateError, done_samples, run_validation, worker
from simperf.validate.report import format_rows, format_summary, not_measured_notes, summarize, write_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simperf.validate")
    parser.add_argument("action", choices=("run", "report", "_worker"))
    parser.add_argument("out", type=Path, help="directory holding plan.json and programs.jsonl")
    parser.add_argument("--replicas", type=int, default=4, help="layers of each kind run per sample")
    parser.add_argument("--allow-gpu-mismatch", action="store_true")
    parser.add_argument("--retry-failed", action="store_true", help="run samples recorded as failed again")
    args = parser.parse_args(argv)
    started = time.time()

    def progress(i: int, n: int, row: dict) -> None:
        err = row.get("rel_error")
        what = f"{100 * err:+.1f}%" if err is not None else f"failed: {row.get('error')}"
        print(f"[{i}/{n}] sample {row['sample_id']} {row['kind']} batch {row['batch']}: {what} "
              f"({time.time() - started:.0f} s)", flush=True)  # fmt: skip

    try:
        if args.action == "_worker":
            return worker(args.out, args.replicas, args.allow_gpu_mismatch, args.retry_failed)
        if args.action == "run":
            rows = run_validation(
                args.out, args.replicas, args.allow_gpu_mismatch, progress, args.retry_failed
            )
        else:
            rows = sorted(done_samples(args.out).values(), key=lambda r: r["sample_id"])
    except ValidateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "interrupted: finished samples are in the journal; run the same command to resume",
            file=sys.stderr,
        )
        return 130
    write_report(args.out, rows, str(args.out.name))
    print(format_rows(rows))
    print(format_summary(summarize(rows)))
    for note in not_measured_notes(rows):
        print(f"not measured: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
