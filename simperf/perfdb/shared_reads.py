"""What a decode kernel pays to read a shared prefix again: the read cost of a duplicated KV token, measured.

With the radix cache on, requests that hit one cached prefix point at the same KV pages (SGLang 0.5.17
`srt/mem_cache/radix_cache.py`: the matched nodes' slots go into each request's `req_to_token` row), and the decode
kernel's CTAs of those requests read each shared page at about the same moment: every read after the first comes
from L2. The tables time requests with distinct pages, so the simulator prices a decode batch's attention at an
*effective* KV length: each duplicated read (a request reading a prefix page another running request also reads)
counts `read_cost` of a distinct one,

    kv_effective = kv_total - (1 - read_cost) x duplicated_reads

and the table prices the batch at kv_effective / batch as before (costmodel/step.py).

`read_cost` is measured per GPU, kernel variant (op, table backend, heads per rank, KV dtype, page size) and batch
size from the designed pairs of `calibration/offgrid/shared-prefix*.jsonl` (perfdb/offgrid/shared_prefix.py): the
same ragged batch timed with distinct pages and with each group's prefix pages shared. Each pair implies the read
cost at which the table's time ratio between the effective and the full length equals the measured one; the
variant's value at a batch size is the median over its pairs of that size, interpolated in log(batch) between sizes.

    python -m simperf.perfdb.shared_reads calibration/h100 calibration/offgrid/shared-prefix-h100-results.jsonl \
        calibration/offgrid/shared-prefix-fa3-h100-results.jsonl

writes <calibration dir>/shared_reads.yaml (with provenance); PerfDB.load reads it. Measured on the H100: 0.17-0.40
for flashinfer's GQA decode, 0.42-0.54 for its fa3 MLA decode at 16 heads, 0.6-0.83 at 128 (compute-bound), and
0.26 at 8 requests to 0.75 at 128 for SGLang's FA3 (its saving fades with the batch); the H200's faster HBM makes L2
relatively less of a gain at every size (0.35-0.56 / 0.63-0.74 / 0.79-0.90), as the bandwidth ratio says. A variant
of a measured op and backend takes the nearest measured one (heads per KV head, then heads, then page size),
labelled; an op and backend never measured (FlashMLA, NSA; FA3 on the H200) reads shared pages at the distinct price.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from simperf.perfdb.sidecar import read_sidecar, variant_entries

SHARED_FILE = "shared_reads.yaml"
FORMAT = "simperf-shared-reads/1"
REPO_ROOT = Path(__file__).resolve().parents[2]
# implied read costs are solved within [0, MAX_READ_COST]: above 1 a shared read would cost more than a distinct one
MAX_READ_COST = 2.0


@dataclass(frozen=True)
class PrefixGroups:
    """Requests that share their first `prefix_len` KV tokens: the same physical pages, as SGLang's radix cache
    hands every request that hit one cached prefix (`srt/mem_cache/radix_cache.py`: the matched nodes' KV slots
    go into each request's `req_to_token` row). `group[i]` names request i's prefix; -1 shares nothing.

    A point carries it as the key `prefix_groups` (JSON `{"prefix_len": P, "group": [...]}`): off-grid samples
    only, never a table column (the tables time requests with distinct pages)."""

    prefix_len: int
    group: tuple[int, ...]

    @classmethod
    def of(cls, point: dict[str, Any]) -> PrefixGroups | None:
        raw = point.get("prefix_groups")
        if not raw:
            return None
        spec = json.loads(raw) if isinstance(raw, str) else raw
        return cls(int(spec["prefix_len"]), tuple(int(g) for g in spec["group"]))

    def duplicated_reads(self) -> int:
        """KV tokens the batch reads that another of its requests also reads: each group's readers beyond the
        first, times the prefix (what the simulator's RadixCache.duplicated_reads counts)."""
        members = [g for g in self.group if g >= 0]
        return (len(members) - len(set(members))) * self.prefix_len

    def to_json(self) -> str:
        return json.dumps({"prefix_len": self.prefix_len, "group": list(self.group)}, separators=(",", ":"))


@dataclass(frozen=True)
class SharedReadCosts:
    """Read cost of a duplicated KV token relative to a distinct one, per kernel variant (`variant_name`)."""

    read_cost: dict[str, dict[int, float]]  # variant -> batch (requests) -> read cost
    provenance: str

    def cost(self, op: str, key: dict, batch: float) -> tuple[float, str] | None:
        """(read cost, the variant measured) for a decode attention key at `batch` requests: its own variant, else
        the nearest measured one of the same op and backend, at the batch interpolated linearly in log(batch)
        between the measured ones (the nearest outside them); None when that op and backend were never measured."""
        same = [v for v in map(parse_variant, self.read_cost) if v[:2] == (op, key.get("backend"))]
        if not same:
            return None
        want = _variant_of(op, key)

        def distance(v: tuple) -> tuple[float, ...]:
            group = math.log((v[2] / v[3]) / (want[2] / want[3]))
            return (
                abs(group),
                abs(math.log(v[2] / want[2])),
                float(v[4] != want[4]),
                abs(math.log(v[5] / want[5])),
            )

        nearest = min(same, key=distance)
        name = variant_name(*nearest)
        by_batch = sorted(self.read_cost[name].items())
        batches = np.log([b for b, _ in by_batch])
        value = float(np.interp(math.log(max(batch, 1.0)), batches, [c for _, c in by_batch]))
        return value, name


def variant_name(op: str, backend: str, heads: int, kv_heads: int, kv_dtype: str, page: int) -> str:
    return f"{op}/{backend}/{heads}q{kv_heads}kv/{kv_dtype}/page{page}"


def parse_variant(name: str) -> tuple[str, str, int, int, str, int]:
    """variant_name's fields; ValueError for anything else."""
    parts = str(name).split("/")
    try:
        op, backend, heads, kv_dtype, page = parts
        q, kv = heads.removesuffix("kv").split("q")
        if not page.startswith("page"):
            raise ValueError(page)
        return op, backend, int(q), int(kv), kv_dtype, int(page[4:])
    except ValueError:
        raise ValueError("expected OP/BACKEND/<H>q<K>kv/KV_DTYPE/pageN") from None


def _variant_of(op: str, key: dict) -> tuple[str, str, int, int, str, int]:
    return (op, str(key["backend"]), int(key["num_heads"]), int(key.get("num_kv_heads") or 1),
            str(key["kv_dtype"]), int(key["page_size"]))  # fmt: skip


def read_costs(directory: Path | None) -> SharedReadCosts | None:
    found = read_sidecar(directory, SHARED_FILE, FORMAT)
    if found is None:
        return None
    path, data = found
    example = f"{variant_name('attn_gqa_decode', 'flashinfer', 32, 8, 'bf16', 1)}: {{16: 0.25}}"
    costs: dict[str, dict[int, float]] = {}
    for name, by_batch in variant_entries(
        path, data, "read_cost", parse_variant, "read cost by batch", example
    ):
        if not isinstance(by_batch, dict) or not by_batch:
            raise ValueError(
                f"{path}: read_cost.{name}: expected a mapping of batch size to read cost, got {by_batch!r}"
            )
        costs[str(name)] = {}
        for batch, value in by_batch.items():
            where = f"{path}: read_cost.{name}.{batch}"
            if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
                raise ValueError(f"{where}: expected a batch size (an integer >= 1) as the key")
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0 <= value <= MAX_READ_COST
            ):
                raise ValueError(f"{where}: expected a number in [0, {MAX_READ_COST}], got {value!r}")
            costs[str(name)][batch] = float(value)
    return SharedReadCosts(costs, f"{path.name}: {data.get('source', '')}")


def effective_kv(kv_mean: float, duplicated_per_request: float, read_cost: float) -> float:
    """Mean KV length per request at which the tables price a batch whose requests read `duplicated_per_request`
    shared prefix tokens each (on average) that another running request also reads."""
    return kv_mean - (1.0 - read_cost) * duplicated_per_request


# ---- the read costs, from the designed pairs --------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """One designed batch timed with distinct and with shared prefix pages."""

    op: str
    key: dict
    batch: int
    kv_mean: float
    duplicated_per_request: float  # (requests - groups) x prefix / requests
    distinct_us: float
    shared_us: float


def pairs(samples: Path, results: Path, gpu: str) -> list[Pair]:
    """The timed pairs of the designed set (ids 2i distinct, 2i + 1 shared), both halves ok; ValueError when the
    results were timed on another GPU than `gpu` (its tables would be priced with them)."""
    from simperf.perfdb.offgrid.report import timed_samples
    from simperf.perfdb.schema import OP_SPECS

    timed_on, timed = timed_samples(samples, results)
    if timed_on != gpu:
        raise ValueError(f"{results}: timed on {timed_on}, but the tables are {gpu}'s")
    by_id = {int(s["id"]): (s, r) for s, r in timed}
    out = []
    for i in sorted(by_id):
        if i % 2 or i + 1 not in by_id:
            continue
        (_, distinct), (sample, shared) = by_id[i], by_id[i + 1]
        point = sample["point"]
        spec = PrefixGroups.of(point)
        lens = [int(v) for v in json.loads(point["kv_lens"])]
        batch = len(lens)
        duplicated = spec.duplicated_reads()
        key = {c: point[c] for c in OP_SPECS[point["op"]].key_columns}
        out.append(Pair(point["op"], key, batch, sum(lens) / batch, duplicated / batch,
                        float(distinct["time_us"]), float(shared["time_us"])))  # fmt: skip
    return out


def _axes(op: str, batch: int, kv: float) -> dict[str, float]:
    from simperf.perfdb.schema import OP_SPECS

    axes = {"batch": float(batch), "kv_len": float(kv)}
    if "q_len" in OP_SPECS[op].axis_columns:
        axes["q_len"] = 1.0
    return axes


def predicted_shared_us(pair: Pair, curve: object, read_cost: float) -> float:
    """The pair's shared-pages time as the model prices it: the measured distinct time x the table's ratio between
    the effective and the full KV length (the ratio, so that the table's own error at this shape cancels)."""
    full = curve.timing(**_axes(pair.op, pair.batch, pair.kv_mean)).us  # type: ignore[attr-defined]
    kv = effective_kv(pair.kv_mean, pair.duplicated_per_request, read_cost)
    return pair.distinct_us * curve.timing(**_axes(pair.op, pair.batch, kv)).us / full  # type: ignore[attr-defined]


def implied_read_cost(pair: Pair, curve: object) -> float:
    """The read cost at which predicted_shared_us equals the measured time (bisection: the price grows with the
    effective length), clamped to [0, MAX_READ_COST]."""
    lo, hi = 0.0, MAX_READ_COST
    if predicted_shared_us(pair, curve, lo) >= pair.shared_us:
        return lo
    if predicted_shared_us(pair, curve, hi) <= pair.shared_us:
        return hi
    for _ in range(40):
        mid = (lo + hi) / 2
        if predicted_shared_us(pair, curve, mid) < pair.shared_us:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def samples_of(results: Path) -> Path:
    """The designed set a results file timed (its header names it, relative to the repository root)."""
    from simperf.perfdb.offgrid.io import read_results

    named = Path(read_results(results)[0]["samples"])
    return named if named.is_absolute() else REPO_ROOT / named


def derive(results: list[Path], db: object) -> dict[str, dict]:
    """Per variant, over the pairs of every results file: the median implied read cost per batch size, the pairs,
    and the median / p90 |error| of the shared-pages time at those costs (and priced as distinct pages, as before
    the model)."""
    implied: dict[str, list[tuple[Pair, object, float]]] = {}
    for path in results:
        for pair in pairs(samples_of(path), path, db.gpu.key):  # type: ignore[attr-defined]
            curve = db.curve(pair.op, pair.key)  # type: ignore[attr-defined]
            name = variant_name(*_variant_of(pair.op, pair.key))
            implied.setdefault(name, []).append((pair, curve, implied_read_cost(pair, curve)))
    out = {}
    for name, rows in sorted(implied.items()):
        by_batch = {
            batch: round(float(np.median([r for p, _, r in rows if p.batch == batch])), 3)
            for batch in sorted({p.batch for p, _, _ in rows})
        }
        errors = np.abs([predicted_shared_us(p, c, by_batch[p.batch]) / p.shared_us - 1 for p, c, _ in rows])
        distinct = np.abs([p.distinct_us / p.shared_us - 1 for p, _, _ in rows])
        out[name] = {
            "read_cost": by_batch,
            "pairs": len(rows),
            "median_error": round(float(np.median(errors)), 4),
            "p90_error": round(float(np.quantile(errors, 0.9)), 4),
            "median_error_as_distinct": round(float(np.median(distinct)), 4),
        }
    return out


def write_costs(directory: Path, results: list[Path]) -> dict[str, dict[str, float]]:
    from simperf.perfdb.check import resolve_gpu
    from simperf.perfdb.db import PerfDB

    db = PerfDB.load(directory, resolve_gpu(directory))
    derived = derive(results, db)
    names = " ".join(str(r) for r in results)
    data = {
        "format": FORMAT,
        "read_cost": {name: d["read_cost"] for name, d in derived.items()},
        "fit": {name: {k: v for k, v in d.items() if k != "read_cost"} for name, d in derived.items()},
        "source": "median per batch size over the designed pairs (one ragged batch with distinct and with shared "
        "prefix pages; "
        f"{', '.join(r.name for r in results)}) of the read cost at which the table's time ratio between the "
        f"effective and the full KV length equals the measured one; python -m simperf.perfdb.shared_reads "
        f"{directory} {names}",
    }
    (Path(directory) / SHARED_FILE).write_text(yaml.safe_dump(data, sort_keys=False))
    return derived


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simperf.perfdb.shared_reads", description=__doc__.split("\n")[0]
    )
    parser.add_argument("directory", type=Path, help="calibration directory, e.g. calibration/h100")
    parser.add_argument("results", type=Path, nargs="+", help="shared-prefix sets' results on that GPU")
    args = parser.parse_args(argv)
    for path in (args.directory, *args.results):
        if not path.exists():
            print(f"{path}: no such file or directory", file=sys.stderr)
            return 2
    try:
        derived = write_costs(args.directory, args.results)
    except (ValueError, FileNotFoundError) as exc:
        print(f"{exc}", file=sys.stderr)
        return 2
    for name, d in derived.items():
        costs = ", ".join(f"{c:.2f}" for c in d["read_cost"].values())
        batches = ", ".join(map(str, d["read_cost"]))
        print(f"{name}: read cost {costs} (batch {batches}) over {d['pairs']} pairs, median |error| "
              f"{d['median_error']:.1%} (p90 {d['p90_error']:.1%}; as distinct pages "
              f"{d['median_error_as_distinct']:.1%})", file=sys.stderr)  # fmt: skip
    print(f"wrote {args.directory / SHARED_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
