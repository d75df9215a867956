"""`python -m simperf.perfdb.offgrid`: generate the off-grid set (CPU), time it (GPU), report its error (CPU).

    python -m simperf.perfdb.offgrid generate calibration/offgrid/samples.jsonl
    python -m simperf.perfdb.offgrid generate calibration/offgrid/ragged-extend-dev.jsonl --seed 2026 --ragged-extends 80
    python -m simperf.perfdb.offgrid generate calibration/offgrid/straggler-dev.jsonl --stragglers
    python -m simperf.perfdb.offgrid generate calibration/offgrid/straggler-check.jsonl --straggler-check 48 --seed 20261129
    python -m simperf.perfdb.offgrid generate calibration/offgrid/straggler-dev-fa3.jsonl --stragglers --straggler-backend sgl_fa3
    python -m simperf.perfdb.offgrid generate calibration/offgrid/straggler-check-fa3.jsonl --straggler-check 48 --seed 20261130 --straggler-backend sgl_fa3
    python -m simperf.perfdb.offgrid generate calibration/offgrid/shared-prefix.jsonl --shared-prefix
    python -m simperf.perfdb.offgrid generate calibration/offgrid/shared-prefix-fa3.jsonl --shared-prefix sgl_fa3
    python -m simperf.perfdb.offgrid generate calibration/offgrid/gemm-recheck.jsonl --recheck-gemm
    python -m simperf.perfdb.offgrid generate calibration/offgrid/gemm-m-check.jsonl --gemm-m-check 400 --seed 20261127
    python -m simperf.perfdb.offgrid time calibration/offgrid/samples.jsonl --out results.jsonl [--time-budget-s S]
    python -m simperf.perfdb.offgrid docs [--check]     # regenerate the numbers in docs/accuracy.md, docs/perfdb.md

The GPU side needs neither typer, polars nor numpy (the calibration runner's dependencies only).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path


def _generate(args: argparse.Namespace) -> int:
    from simperf.output_paths import check_output_file
    from simperf.perfdb.db import shipped_calibration_dir
    from simperf.perfdb.offgrid.grids import measured_grid
    from simperf.perfdb.offgrid.io import write_samples
    from simperf.perfdb.offgrid.samples import OFFGRID_SEED, generate, set_header

    check_output_file(args.path, "PATH", suffixes=(".jsonl",), what="off-grid set JSONL")
    if args.shared_prefix:
        from simperf.perfdb.offgrid import shared_prefix

        samples = shared_prefix.generate(shared_prefix.SETS[args.shared_prefix])
        write_samples(args.path, shared_prefix.set_header(samples), samples)
        print(f"{args.path}: {len(samples)} designed shared-prefix decode batches (pairs)", file=sys.stderr)
        return 0
    if args.recheck_gemm:
        from simperf.perfdb.db import shipped_calibration_dir
        from simperf.perfdb.offgrid import recheck

        dirs = [d for d in (shipped_calibration_dir(g) for g in ("h100", "h200")) if d is not None]
        samples = recheck.generate_gemm_recheck(dirs)
        write_samples(args.path, recheck.set_header(samples), samples)
        print(f"{args.path}: {len(samples)} bf16 GEMM grid points to time again", file=sys.stderr)
        return 0
    if args.gemm_m_check is not None:
        return _generate_gemm_m_check(args)
    if args.stragglers:
        from simperf.perfdb.offgrid.samples import generate_fa3_stragglers, generate_stragglers

        fa3 = args.straggler_backend == "sgl_fa3"
        samples = generate_fa3_stragglers() if fa3 else generate_stragglers()
        name = "generate_fa3_stragglers" if fa3 else "generate_stragglers"
        header = {"seed": None, "counts": {"decode": len(samples)}, "ragged_share": {"decode": 1.0},
                  "generator": f"simperf.perfdb.offgrid.samples.{name}"}  # fmt: skip
        write_samples(args.path, header, samples)
        print(f"{args.path}: {len(samples)} designed straggler batches (a development set)", file=sys.stderr)
        return 0
    if args.straggler_check is not None:
        from simperf.perfdb.offgrid.samples import generate_straggler_check

        if not _count_and_own_seed("--straggler-check", args.straggler_check, args.seed):
            return 2
        samples = generate_straggler_check(args.straggler_check, args.seed, args.straggler_backend)
        header = {"seed": args.seed, "counts": {"decode": len(samples)}, "ragged_share": {"decode": 1.0},
                  "backend": args.straggler_backend,
                  "generator": "simperf.perfdb.offgrid.samples.generate_straggler_check"}  # fmt: skip
        write_samples(args.path, header, samples)
        print(f"{args.path}: {len(samples)} seeded straggler batches (a held-out set)", file=sys.stderr)
        return 0
    if args.ragged_extends is not None:
        from simperf.perfdb.offgrid.samples import generate_ragged_extends

        if not _count_and_own_seed("--ragged-extends", args.ragged_extends, args.seed):
            return 2
        samples = generate_ragged_extends(args.ragged_extends, args.seed)
        header = {"seed": args.seed, "counts": {"extend": args.ragged_extends}, "ragged_share": {"extend": 1.0},
                  "generator": "simperf.perfdb.offgrid.samples.generate_ragged_extends"}  # fmt: skip
        write_samples(args.path, header, samples)
        print(f"{args.path}: {len(samples)} ragged extend samples (a development set)", file=sys.stderr)
        return 0
    directories = [d for d in (shipped_calibration_dir(g) for g in ("h100", "h200")) if d is not None]
    samples = generate(measured_grid(directories), seed=args.seed or OFFGRID_SEED)
    write_samples(args.path, set_header(args.seed or OFFGRID_SEED), samples)
    ragged = sum(1 for s in samples if s["ragged"])
    print(f"{args.path}: {len(samples)} samples, {ragged} ragged", file=sys.stderr)
    return 0


def _count_and_own_seed(flag: str, count: int, seed: int | None) -> bool:
    """A designed or held-out set needs a count of at least 1 and a seed of its own (not the off-grid set's, whose
    draws it would repeat); otherwise one error line, and False."""
    from simperf.perfdb.offgrid.samples import OFFGRID_SEED

    if count < 1:
        print(f"error: {flag}: got {count}; expected a count of at least 1", file=sys.stderr)
        return False
    if not seed or seed == OFFGRID_SEED:
        print(f"error: {flag}: give a --seed other than the off-grid set's", file=sys.stderr)
        return False
    return True


def _generate_gemm_m_check(args: argparse.Namespace) -> int:
    from simperf.perfdb.offgrid import recheck
    from simperf.perfdb.offgrid.io import write_samples

    if not _count_and_own_seed("--gemm-m-check", args.gemm_m_check, args.seed):
        return 2
    samples = recheck.generate_gemm_m_check(args.gemm_m_check, args.seed)
    header = {"seed": args.seed, "counts": {"gemm": len(samples)}, "ragged_share": {},
              "generator": "simperf.perfdb.offgrid.recheck.generate_gemm_m_check"}  # fmt: skip
    write_samples(args.path, header, samples)
    print(f"{args.path}: {len(samples)} GEMMs at random M (a held-out set for the M axis)", file=sys.stderr)
    return 0


def _time(args: argparse.Namespace) -> int:
    from simperf.calibrate.preflight import require_device
    from simperf.calibrate.runner import probe_device
    from simperf.output_paths import check_output_file
    from simperf.perfdb.offgrid.timing import time_samples

    if not args.samples.is_file():
        raise FileNotFoundError(f"{args.samples}: no such off-grid set (generate writes one)")
    # --out onto the set appended results to it; without a GPU every sample was recorded as failed, exit 0
    check_output_file(args.out, "--out", suffixes=(".jsonl",), inputs=(args.samples,), what="JSONL")
    require_device(probe_device(), "the off-grid set is timed")

    def stop(signum: int, frame: object) -> None:  # results are fsynced per sample: nothing to fold
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    return time_samples(args.samples, args.out, args.time_budget_s, retime=args.retime)


def _docs(args: argparse.Namespace) -> int:
    from simperf.perfdb.offgrid.docs import update_docs

    changed = update_docs(check=args.check)
    verb = "stale" if args.check else "rewritten"
    print(f"{verb}: {', '.join(changed) or 'nothing'}", file=sys.stderr)
    return 1 if args.check and changed else 0


RETIME_CATEGORIES = ("decode", "extend", "gemm", "moe", "elementwise")


def _retime_choice(value: str) -> str:
    """A category, or op/backend with a known op (argparse prints the ArgumentTypeError as one usage line)."""
    from simperf.perfdb.schema import OP_SPECS

    op, slash, backend = value.partition("/")
    if value in RETIME_CATEGORIES or (slash and op in OP_SPECS and backend):
        return value
    raise argparse.ArgumentTypeError(
        f"got {value!r}; allowed: {', '.join(RETIME_CATEGORIES)}, or OP/BACKEND with OP one of "
        f"{', '.join(sorted(OP_SPECS))}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simperf.perfdb.offgrid", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write the seeded off-grid set (CPU)")
    gen.add_argument("path", type=Path)
    gen.add_argument("--seed", type=int, help="another seed than the fixed one (a new set, not a rerun)")
    gen.add_argument(
        "--ragged-extends",
        type=int,
        metavar="N",
        help="only N ragged extend batches: a development set (needs --seed)",
    )
    gen.add_argument(
        "--stragglers",
        action="store_true",
        help="the designed GQA decode batches with one long request (a development set, no seed)",
    )
    gen.add_argument(
        "--straggler-check",
        type=int,
        metavar="N",
        help="N seeded GQA decode batches with one or two long requests: a held-out set (needs --seed)",
    )
    gen.add_argument(
        "--straggler-backend",
        choices=("flashinfer", "sgl_fa3"),
        default="flashinfer",
        help="the GQA decode backend of --stragglers / --straggler-check (sgl_fa3: SGLang's FA3, page size 1)",
    )
    gen.add_argument(
        "--recheck-gemm",
        action="store_true",
        help="every bf16 GEMM grid key of the shipped tables at m = 1 and 8, to time again (a designed set)",
    )
    gen.add_argument(
        "--gemm-m-check",
        type=int,
        metavar="N",
        help="N zoo GEMMs (bf16, block fp8) at log-uniform random M: a held-out set for the M axis (needs --seed)",
    )
    gen.add_argument(
        "--shared-prefix",
        nargs="?",
        const="flashinfer",
        choices=("flashinfer", "sgl_fa3"),
        help="decode batches timed with distinct and with shared prefix pages, in pairs (a designed set): "
        "flashinfer's GQA and MLA kernels (the default) or SGLang's FA3 kernel (Hopper)",
    )
    tim = sub.add_parser("time", help="time the set on this GPU, resumably (GPU)")
    tim.add_argument("samples", type=Path)
    tim.add_argument("--out", type=Path, required=True, help="results file (appended; rerun continues)")
    tim.add_argument("--time-budget-s", type=float, help="stop starting samples after this many seconds")
    tim.add_argument(
        "--retime",
        type=_retime_choice,
        metavar="CATEGORY|OP/BACKEND",
        help="time this category's (decode, extend, gemm, moe, elementwise) or this op and backend's samples "
        "(e.g. attn_gqa_decode/flashinfer) again even where done (appended; the last row of an id is read)",
    )
    doc = sub.add_parser(
        "docs", help="regenerate the tables' numbers in docs/accuracy.md and docs/perfdb.md (CPU)"
    )
    doc.add_argument("--check", action="store_true", help="only say whether they are stale (exit 1 if so)")
    args = parser.parse_args(argv)
    from simperf.calibrate.preflight import CalibrateError
    from simperf.errors import UserError

    try:
        return {"generate": _generate, "time": _time, "docs": _docs}[args.command](args)
    except (FileExistsError, FileNotFoundError, PermissionError) as exc:  # one line, nothing overwritten
        print(f"error: {args.command}: {exc}", file=sys.stderr)
        return 2
    except (UserError, CalibrateError) as exc:
        print(f"error: {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
