"""SGLang's own Triton fused MoE against simperf's Triton kernel, per GPU and MoE shape: the markdown table in
docs/calibration.md ("SGLang's own Triton fused MoE"). Reads the shipped tables (backend sglang_fused_moe and
simperf's triton_fused_moe / triton_fused_moe_default) and the same-host re-timing of simperf's kernel that ran in
the same device call (calibration/<gpu>/runs/2026-11-27-moe-simperf-kernel-same-host.parquet).

    python benchmarks/moe_sglang_compare.py            # print
    python benchmarks/moe_sglang_compare.py --check    # exit 1 if docs/calibration.md's table differs
    python benchmarks/moe_sglang_compare.py --write    # rewrite it
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "calibration.md"
BEGIN, END = "<!-- moe_sglang_compare: begin -->", "<!-- moe_sglang_compare: end -->"
SAME_HOST = "runs/2026-11-27-moe-simperf-kernel-same-host.parquet"
M_SHOWN = (1, 4, 16, 64, 256, 1024, 4096, 16384)
SHAPES = {  # (dtype, routing, n, k, num_experts, topk) -> what it is
    ("fp8_block", "balanced+shared1", 256, 7168, 257, 9): "DeepSeek-V3/R1 TP8, shared expert fused",
    ("fp8_block", "balanced", 256, 7168, 256, 8): "DeepSeek-V3/R1 TP8, routed only",
    ("bf16", "balanced", 768, 2048, 128, 8): "Qwen3-30B-A3B TP1",
    ("bf16", "balanced", 1408, 2048, 64, 6): "DeepSeek-V2-Lite TP1",
}


def _times(path: Path) -> tuple[dict[tuple, dict[tuple[str, int], float]], dict[tuple, str]]:
    """Times per shape and (backend, m), and the tiles SGLang picked per shape ('tuned' / 'default', from the
    sglang_fused_moe rows' timing_method)."""
    out: dict[tuple, dict[tuple[str, int], float]] = defaultdict(dict)
    tiles: dict[tuple, str] = {}
    for r in pq.read_table(path).to_pylist():
        key = (r["dtype"], r["routing"], r["n"], r["k"], r["num_experts"], r["topk"])
        if r["status"] == "ok" and r["experts_per_rank"] == r["num_experts"] and key in SHAPES:
            out[key][(r["backend"], int(r["m"]))] = float(r["time_us"])
            if r["backend"] == "sglang_fused_moe":
                tiles[key] = "tuned" if "(tuned json)" in r["timing_method"] else "default"
    return out, tiles


def table() -> str:
    lines = [
        "| GPU | shape | SGLang's tiles | " + " | ".join(f"m={m}" for m in M_SHOWN) + " |",
        "|---|---|---|" + "---:|" * len(M_SHOWN),
    ]
    for gpu in ("h100", "h200"):
        shipped, tiles = _times(ROOT / "calibration" / gpu / "moe.parquet")
        same_host, _ = _times(ROOT / "calibration" / gpu / SAME_HOST)
        for key, label in SHAPES.items():
            if key not in tiles:
                continue
            # simperf's kernel as the cost model took it before: its default-tiles table where SGLang runs default
            # tiles and one was timed, else its tuned one
            ours = same_host.get(key, {})
            backend = "triton_fused_moe"
            if tiles[key] == "default" and any(b == "triton_fused_moe_default" for b, _ in ours):
                backend = "triton_fused_moe_default"
            cells = []
            for m in M_SHOWN:
                sg, own = shipped[key].get(("sglang_fused_moe", m)), ours.get((backend, m))
                cells.append("-" if sg is None or own is None else f"{sg:.0f} ({own / sg:.2f})")
            lines.append(f"| {gpu.upper()} | {label} | {tiles[key]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    from simperf.accuracy.run import generated_block, replace_generated_block

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if the doc's table is not this output")
    mode.add_argument("--write", action="store_true", help="rewrite the table in docs/calibration.md")
    args = parser.parse_args()
    body = table()
    if args.write:
        replace_generated_block(DOC, body, BEGIN, END)
    elif args.check:
        same = generated_block(DOC, BEGIN, END) == body + "\n"
        print(
            "docs/calibration.md is up to date" if same else "docs/calibration.md differs: run with --write"
        )
        return 0 if same else 1
    else:
        print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
