"""Print what a calibration directory holds: rows per (op, backend, status) and the distinct errors.

python -m simperf.calibrate.summary calibration/h200
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

from simperf.calibrate.journal import read_tables


def summarize_dir(out_dir: Path) -> str:
    rows = read_tables(out_dir)
    counts: Counter[tuple[str, str, str, str]] = Counter()
    errors: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for row in rows:
        counts[(row["op"], row["backend"], row.get("sample") or "", row["status"])] += 1
        if row["status"] != "ok":
            errors[(row["op"], row["backend"])][(row.get("error") or "")[:220]] += 1
    lines = [f"{len(rows)} rows in {out_dir}"]
    for (op, backend, sample, status), n in sorted(counts.items()):
        lines.append(f"  {op:18s} {backend:18s} {sample:8s} {status:12s} {n}")
    for (op, backend), errs in sorted(errors.items()):
        lines.append(f"errors {op}/{backend}:")
        for text, n in errs.most_common(6):
            lines.append(f"    {n:5d}x {text}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarize_dir(Path(sys.argv[1] if len(sys.argv) > 1 else ".")))
