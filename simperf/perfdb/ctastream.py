"""A ragged decode batch as CTAs sharing the GPU's memory bandwidth: flashinfer's GQA decode (issue 19, item 4).

The tables time uniform batches. In a ragged one, flashinfer's planner (perfdb/workplan.py) either splits the KV
into chunks of about equal length — the batch stays balanced, and the mean-KV price holds — or, when the batch is
too large to split (batch x KV heads beyond its grid), runs one CTA per request and KV head. A long request is then
one CTA that streams its whole KV on one SM, long after the others are done. How fast one CTA streams alone is a
property of the kernel, not of the batch: measured with the designed straggler set
(`calibration/offgrid/straggler-dev.jsonl`: short requests plus one long one), it is ~37 GB/s for the tensor-core
kernel and ~31 GB/s for the CUDA-core one at group size 1 (~12 and ~9 GB/s at groups 2 and 3) on both the H100 and
the H200 — 100x below HBM bandwidth, which is why
a 131,072-token request among 63 short ones takes 1.8 ms where the mean-KV price says 0.14 ms.

The model: every CTA is an amount of KV bytes, started in launch order on the kernel's `slots` resident CTAs; all
running CTAs progress at the same rate, min(one CTA's stream rate, bandwidth / CTAs running) (processor sharing of
HBM). The bandwidth is the table's own: the uniform batch of the same size and mean KV streams its bytes in the
table's time. The price of the ragged batch is the table's time plus the makespan difference between the ragged
and the uniform batch under this model — exactly the table's time for a uniform batch.

    python -m simperf.perfdb.ctastream calibration/h200 calibration/offgrid/straggler-dev-h200-results.jsonl

derives the per-CTA stream rates from the designed set's times and writes them to <calibration dir>/cta_stream.yaml
(with provenance); PerfDB.load reads them. A GPU without the file keeps the mean-KV price (labelled so).
`--borrow calibration/h100` adds the variants (page sizes, fp8) only the other GPU measured, where the two agree on
those both measured — one CTA's rate is bound by its SM: the H200 takes the H100's pages 16/64 and fp8 rates.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from simperf.perfdb import workplan
from simperf.perfdb.keys import gqa_tensor_cores
from simperf.perfdb.sidecar import read_sidecar, variant_entries

STREAM_FILE = "cta_stream.yaml"
# The CUDA-core kernel is one kind per query group size: its CTA shape follows the group (bdy = group, bdz =
# 128 / (16 x group), tile_size_per_bdx 4 at group 1 else 1: flashinfer attention/decode.cuh), so the KV tokens one
# CTA keeps in flight, and with them its lone stream rate, differ (measured: the designed set's group-2/3 rows).
KERNEL_KINDS = ("tensor_core", "cuda_core", "cuda_core_g2", "cuda_core_g3", "fa3")
FORMAT = "simperf-cta-stream/1"
# The straggler rows a rate is read from: the long request unsplit and long enough that its lone stream dominates
# the time (the short requests' part, priced from the tables, is then a small correction).
MIN_LONG_TOKENS = 32768


@dataclass(frozen=True)
class CtaStreamRates:
    """Bytes per second one CTA streams when it runs alone, per kernel variant (`variant_name`: kernel kind, KV
    dtype, page size), as measured on one GPU."""

    bytes_per_s: dict[str, float]
    provenance: str

    def rate(self, key: dict) -> tuple[float, str] | None:
        """(bytes/s, the variant measured) for a key: its own variant, else the measured page size nearest to its
        own (log scale) of the same kernel kind and KV dtype; None when that kind and dtype were never measured."""
        kind, dtype, page = kernel_kind(key), str(key["kv_dtype"]), int(key["page_size"])
        pages = [p for k, d, p in map(parse_variant, self.bytes_per_s) if (k, d) == (kind, dtype)]
        if not pages:
            return None
        nearest = min(pages, key=lambda p: (abs(math.log(p / page)), p))  # its own page where measured
        name = variant_name(kind, dtype, nearest)
        return self.bytes_per_s[name], name


def variant_name(kind: str, kv_dtype: str, page: int) -> str:
    return f"{kind}/{kv_dtype}/page{page}"


def parse_variant(name: str) -> tuple[str, str, int]:
    """variant_name's (kind, kv dtype, page size); ValueError for anything else."""
    kind, dtype, page = (str(name).split("/") + ["", ""])[:3]
    if kind not in KERNEL_KINDS or not dtype or not page.startswith("page") or not page[4:].isdigit():
        raise ValueError(f"expected KIND/KV_DTYPE/pageN, KIND one of {KERNEL_KINDS}")
    return kind, dtype, int(page[4:])


def read_rates(directory: Path | None) -> CtaStreamRates | None:
    found = read_sidecar(directory, STREAM_FILE, FORMAT)
    if found is None:
        return None
    path, data = found
    example = f"{variant_name('tensor_core', 'bf16', 1)}: 37.3"
    rates = {}
    for name, value in variant_entries(path, data, "gb_per_s", parse_variant, "GB/s", example):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{path}: gb_per_s.{name}: expected a positive number of GB/s, got {value!r}")
        rates[str(name)] = float(value) * 1e9
    return CtaStreamRates(rates, f"{path.name}: {data.get('source', '')}")


def fluid_makespan_s(works: Sequence[float], slots: int, bandwidth: float, per_cta: float) -> float:
    """Seconds until the last CTA ends: CTAs of `works` bytes started in launch order on `slots` slots, every
    running CTA at min(per_cta, bandwidth / running). All running CTAs share one rate, so the next to end is the
    one with the least bytes left. While CTAs wait for a slot every slot is busy, so that rate is constant and the
    starts are a greedy list schedule in per-CTA bytes served (a heap of finishing thresholds); after the last start
    the running CTAs end in threshold order, each end raising the rate of those left."""
    n = len(works)
    if n == 0:
        return 0.0
    first = min(n, slots)
    heap = [float(w) for w in works[:first]]
    heapq.heapify(heap)
    served = 0.0
    for w in works[first:]:
        served = heap[0]
        heapq.heapreplace(heap, served + float(w))
    t = served / min(per_cta, bandwidth / slots) if n > slots else 0.0
    ends = np.sort(np.asarray(heap))
    running = np.arange(ends.size, 0, -1, dtype=np.float64)  # CTAs still running before each end
    steps = np.diff(ends, prepend=served)
    return t + float((steps / np.minimum(per_cta, bandwidth / running)).sum())


def uniform_makespan_s(n: int, work: float, slots: int, bandwidth: float, per_cta: float) -> float:
    """fluid_makespan_s of `n` CTAs of `work` bytes each, in closed form: they end a slotful at a time."""
    if n <= 0:
        return 0.0
    waves = -(-n // slots)
    last = n - (waves - 1) * slots  # CTAs of the last wave, ending together
    return (waves - 1) * work / min(per_cta, bandwidth / slots) + work / min(per_cta, bandwidth / last)


def kernel_kind(key: dict) -> str:
    """Which GQA decode kernel runs the key: SGLang's FA3, or one of flashinfer's (keys.gqa_tensor_cores), the
    CUDA-core one by group."""
    if str(key.get("backend")) == "sgl_fa3":
        return "fa3"
    if gqa_tensor_cores(key):
        return "tensor_core"
    group = int(key["num_heads"]) // max(int(key["num_kv_heads"]), 1)
    return "cuda_core" if group <= 1 else f"cuda_core_g{group}"


def bytes_per_token(key: dict) -> float:
    """K and V of one KV head, one token."""
    return 2.0 * int(key["head_dim"]) * (1.0 if str(key["kv_dtype"]).startswith("fp8") else 2.0)


def rate_for(op: str, key: dict, rates: CtaStreamRates | None) -> tuple[float, str] | None:
    """(bytes/s, variant measured) where the model applies: flashinfer GQA decode, on a GPU whose designed set
    measured this kernel kind and KV dtype; None elsewhere (the mean-KV price stands)."""
    if rates is None or op != "attn_gqa_decode" or str(key.get("backend")) not in ("flashinfer", "sgl_fa3"):
        return None
    return rates.rate(key)


def ragged_extra_us(table_us: float, key: dict, kv_lens: Sequence[int], num_sms: int, rate: float) -> float:
    """Microseconds the ragged batch takes beyond the uniform batch of its size and mean KV (`table_us`)."""
    kv = [max(int(n), 1) for n in kv_lens]
    mean = round(sum(kv) / len(kv))
    per_token = bytes_per_token(key)
    ragged, slots = workplan.gqa_decode_ctas(kv, key, num_sms)
    uniform, _ = workplan.gqa_decode_ctas([mean] * len(kv), key, num_sms)
    bandwidth = sum(uniform) * per_token / (table_us * 1e-6)
    t_ragged = fluid_makespan_s([w * per_token for w in ragged], slots, bandwidth, rate)
    if len(set(uniform)) == 1:  # unsplit, or split into equal chunks: the closed form
        t_uniform = uniform_makespan_s(len(uniform), uniform[0] * per_token, slots, bandwidth, rate)
    else:
        t_uniform = fluid_makespan_s([w * per_token for w in uniform], slots, bandwidth, rate)
    return (t_ragged - t_uniform) * 1e6


# ---- the rates, from the designed straggler set ---------------------------------------------------------------


def implied_rates(samples: Path, results: Path, db: object) -> dict[str, list[float]]:
    """Per kernel variant (variant_name), the stream rate each qualifying straggler row implies: the long request's
    bytes per KV head over (measured time - the table's time of the batch at the short length)."""
    from simperf.perfdb.offgrid.report import timed_samples
    from simperf.perfdb.schema import OP_SPECS

    timed_on, pairs = timed_samples(samples, results)
    gpu = db.gpu.key  # type: ignore[attr-defined]
    if timed_on and timed_on != gpu:  # another GPU's rates would be written as this one's
        raise ValueError(f"{results}: timed on {timed_on}, but the tables are {gpu}'s")
    out: dict[str, list[float]] = {}
    for sample, result in pairs:
        point = sample["point"]
        kv = json.loads(point["kv_lens"])
        long, short, batch = max(kv), min(kv), len(kv)
        key = {c: point[c] for c in OP_SPECS[point["op"]].key_columns}
        kind = kernel_kind(key)
        ctas, _ = workplan.gqa_decode_ctas(kv, key, db.gpu.num_sms)  # type: ignore[attr-defined]
        unsplit = len(ctas) == batch * int(key["num_kv_heads"])  # one CTA per request and KV head
        if long < MIN_LONG_TOKENS or not unsplit:
            continue
        curve = db.curve(point["op"], key)  # type: ignore[attr-defined]
        others_us = float(curve(batch=float(batch), kv_len=float(short))[0])
        tail_s = (float(result["time_us"]) - others_us) * 1e-6
        name = variant_name(kind, str(key["kv_dtype"]), int(key["page_size"]))
        out.setdefault(name, []).append(long * bytes_per_token(key) / tail_s)
    return out


def _borrow(rates: dict[str, float], other_dir: Path) -> dict[str, str]:
    """Variants another GPU measured and this one did not, taken over where the two GPUs agree on every variant
    both measured (within BORROW_AGREEMENT): one CTA's stream rate is bound by its SM, not by HBM (H100 and H200,
    both SM90 at 1,980 MHz: 37.5 and 37.3 GB/s, tensor-core bf16 page 1). Returns {variant: where from}."""
    other = read_rates(other_dir)
    if other is None:
        raise ValueError(f"{other_dir / STREAM_FILE}: not found")
    common = sorted(set(rates) & set(other.bytes_per_s))
    gaps = {n: other.bytes_per_s[n] / 1e9 / rates[n] - 1.0 for n in common}
    if not common or max(abs(g) for g in gaps.values()) > BORROW_AGREEMENT:
        raise ValueError(
            f"{other_dir}: its rates differ from this GPU's on the variants both measured: {gaps}"
        )
    borrowed = {}
    for name, value in sorted(other.bytes_per_s.items()):
        if name not in rates:
            rates[name] = round(value / 1e9, 2)
            borrowed[name] = str(other_dir)
    return borrowed


BORROW_AGREEMENT = 0.05


def write_rates(
    directory: Path,
    samples: Path,
    results: Path,
    borrow: Path | None = None,
    also: Sequence[tuple[Path, Path]] = (),
) -> dict[str, float]:
    """Derive the rates from the designed set(s) and write DIR/cta_stream.yaml; `also`: more (samples, results)
    pairs (the FA3 straggler set beside flashinfer's)."""
    from simperf.perfdb.check import resolve_gpu
    from simperf.perfdb.db import PerfDB

    db = PerfDB.load(directory, resolve_gpu(directory))
    implied = implied_rates(samples, results, db)
    for more_samples, more_results in also:
        for name, values in implied_rates(more_samples, more_results, db).items():
            implied.setdefault(name, []).extend(values)
    if not implied:  # an empty file would replace the measured rates and silently restore the mean-KV price
        raise ValueError(
            f"{results}: no unsplit straggler row (long request >= {MIN_LONG_TOKENS} tokens) to derive a rate from; "
            f"{Path(directory) / STREAM_FILE} left as it was"
        )
    rates = {name: round(float(np.median(v)) / 1e9, 2) for name, v in sorted(implied.items())}
    borrowed = _borrow(rates, borrow) if borrow is not None else {}
    command = f"python -m simperf.perfdb.ctastream {directory} {results}"
    if samples.name != "straggler-dev.jsonl":  # the CLI's default set
        command += f" --samples {samples}"
    command += "".join(f" --also {a} {b}" for a, b in also)
    data = {
        "format": FORMAT,
        "gb_per_s": dict(sorted(rates.items())),
        "rows": {name: len(v) for name, v in sorted(implied.items())},
        "borrowed": borrowed,
        "source": f"median over the unsplit rows (long request >= {MIN_LONG_TOKENS} tokens) of "
        f"{', '.join([results.name, *(b.name for _, b in also)])}: "
        f"long request's bytes per KV head / (time - table time of the batch at the short length); "
        + command
        + (f" --borrow {borrow}" if borrow is not None else ""),
    }
    (Path(directory) / STREAM_FILE).write_text(yaml.safe_dump(data, sort_keys=False))
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simperf.perfdb.ctastream", description=__doc__.split("\n")[0]
    )
    parser.add_argument("directory", type=Path, help="calibration directory, e.g. calibration/h200")
    parser.add_argument("results", type=Path, help="the straggler set's results on that GPU")
    parser.add_argument("--samples", type=Path, default=Path("calibration/offgrid/straggler-dev.jsonl"))
    parser.add_argument(
        "--borrow",
        type=Path,
        help="another GPU's calibration directory: its variants this GPU did not measure",
    )
    parser.add_argument(
        "--also",
        nargs=2,
        type=Path,
        action="append",
        default=[],
        metavar=("SAMPLES", "RESULTS"),
        help="another designed straggler set and its results on this GPU (e.g. the FA3 set)",
    )
    args = parser.parse_args(argv)
    extra = [(path, False) for pair in args.also for path in pair]
    for path, is_dir in ((args.directory, True), (args.results, False), (args.samples, False), *extra,
                         *([(args.borrow, True)] if args.borrow else [])):  # fmt: skip
        if not path.exists():
            print(f"error: {path}: no such file or directory", file=sys.stderr)
            return 2
        if path.is_dir() != is_dir:
            print(f"error: {path}: expected a {'directory' if is_dir else 'file'}", file=sys.stderr)
            return 2
    try:
        rates = write_rates(
            args.directory, args.samples, args.results, args.borrow, [tuple(pair) for pair in args.also]
        )
    except ValueError as exc:  # the messages name their file (the flag is not always --borrow)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.directory / STREAM_FILE}: {rates} GB/s per CTA", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
