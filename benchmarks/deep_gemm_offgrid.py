"""The off-grid check of the DeepGEMM block-fp8 table: the fixed off-grid set's fp8 GEMM draws, timed with DeepGEMM.

calibration/offgrid/samples.jsonl (seed 19, drawn before any result was seen) holds model GEMMs of every zoo model
at random token counts; its fp8 ones were timed with cuBLASLt (the tables' backend until the DeepGEMM grid). This
writes the same draws with backend deep_gemm, keeping each sample's id, for every shape SGLang would run through
DeepGEMM (n % 64 == 0 and k % 128 == 0, simperf/calibrate/backends/gemm.py):

    python benchmarks/deep_gemm_offgrid.py                      # writes calibration/offgrid/deep-gemm.jsonl
    python -m simperf.perfdb.offgrid time calibration/offgrid/deep-gemm.jsonl --out RESULTS   (GPU)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simperf.perfdb.offgrid.io import read_samples, write_samples

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "calibration" / "offgrid" / "samples.jsonl"
TARGET = ROOT / "calibration" / "offgrid" / "deep-gemm.jsonl"


def deep_gemm_samples(samples: list[dict]) -> list[dict]:
    out = []
    for sample in samples:
        point = sample["point"]
        if point["op"] != "gemm" or not str(point["dtype"]).startswith("fp8"):
            continue
        if int(point["n"]) % 64 or int(point["k"]) % 128:
            continue
        out.append({**sample, "point": {**point, "backend": "deep_gemm", "dtype": "fp8_block"}})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TARGET)
    args = parser.parse_args()
    header, samples = read_samples(SOURCE)
    derived = deep_gemm_samples(samples)
    write_samples(
        args.out,
        {
            "seed": header.get("seed"),
            "derived_from": SOURCE.name,
            "counts": {"gemm": len(derived)},
            "generator": "benchmarks/deep_gemm_offgrid.py",
        },  # fmt: skip
        derived,
    )
    print(f"{args.out}: {len(derived)} DeepGEMM samples from {SOURCE.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
