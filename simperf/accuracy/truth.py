"""The measured side: rows of a published-runs CSV and how each metric name maps onto a prediction.

The CSV has one row per (configuration, metric): `id, source, date, gpu, n_gpu, engine, backend_flags, model, isl,
osl, num_prompts, concurrency_or_rate, metric, value, unit, notes`. Metric names are the publisher's; each maps to
a bench_serving result key (simperf writes the same keys), a unit, and optionally a division by the GPU count
(per-GPU figures such as InferenceX's).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

_COLUMNS = ("id", "source", "gpu", "n_gpu", "backend_flags", "model", "metric", "value", "unit")


@dataclass(frozen=True)
class TruthRow:
    id: str
    source: str
    gpu: str
    n_gpu: int
    config: str  # the row's backend_flags: the server's launch flags as the source gives them
    model: str
    metric: str
    value: float
    unit: str
    notes: str

    @property
    def source_label(self) -> str:
        return source_label(self.source)


@dataclass(frozen=True)
class MetricMap:
    key: str  # bench_serving result key
    unit: str  # the unit that key is in
    per_gpu: bool = False  # the published figure is the key divided by the GPU count


# Publisher metric name -> bench_serving key. Families follow bench_serving's {stat}_{family}_ms naming.
METRICS: dict[str, MetricMap] = {
    **{
        f"{family}_{stat}": MetricMap(f"{stat}_{key}_ms", "ms")
        for family, key in (("ttft", "ttft"), ("tpot", "tpot"), ("itl", "itl"), ("e2e", "e2e_latency"))
        for stat in ("mean", "median", "p90", "p95", "p99")
    },
    "output_throughput": MetricMap("output_throughput", "tok/s"),
    "input_throughput": MetricMap("input_throughput", "tok/s"),
    "total_throughput": MetricMap("total_throughput", "tok/s"),
    "request_throughput": MetricMap("request_throughput", "req/s"),
    "output_throughput_per_gpu": MetricMap("output_throughput", "tok/s/GPU", per_gpu=True),
    "total_throughput_per_gpu": MetricMap("total_throughput", "tok/s/GPU", per_gpu=True),
}

# Units a published value may come in, as a factor to the mapped key's unit.
_UNIT_FACTORS: dict[tuple[str, str], float] = {
    ("ms", "ms"): 1.0,
    ("s", "ms"): 1000.0,
    ("us", "ms"): 1e-3,
    ("tok/s", "tok/s"): 1.0,
    ("req/s", "req/s"): 1.0,
    ("tok/s/GPU", "tok/s/GPU"): 1.0,
}


# the spellings rows are matched by (kernel_time: the kernel rows, accuracy/kernels.py)
_METRIC_NAMES = (*METRICS, "kernel_time")
_UNIT_NAMES = tuple(dict.fromkeys(unit for pair in _UNIT_FACTORS for unit in pair))


def _known_spelling(text: str, names: tuple[str, ...]) -> str:
    """A CSV's metric or unit as simperf spells it when it differs only in case or spacing ('TTFT_mean', 'MS',
    'tok/s/gpu', 'tok / s'): such rows were listed 'not mapped' and never scored. Anything else is kept as given."""
    folded = "".join(text.split()).casefold()
    return next((name for name in names if name.casefold() == folded), text.strip())


class TruthError(ValueError):
    """A truth file that cannot be read; the message names the file and line."""


def read_truth(path: Path) -> list[TruthRow]:
    """Every row of a published-runs CSV, in file order."""
    path = Path(path)
    if not path.is_file():
        raise TruthError(f"{path}: no such truth file")
    try:
        # -sig: a spreadsheet's export starts with a BOM, which made the first column '\ufeffid' ("missing id")
        with path.open(newline="", encoding="utf-8-sig") as handle:
            records = _records(csv.reader(handle), path)
    except UnicodeDecodeError as err:  # Python's codec message named no file
        from simperf.workload.trace import not_utf8

        raise TruthError(f"{path}: {not_utf8(err)}") from None
    rows = [_truth_row(rec, f"{path}:{line}") for line, rec in records]
    ids = [r.id for r in rows]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise TruthError(f"{path}: duplicate row id(s) {', '.join(dupes)}")
    return rows


def _records(reader, path: Path) -> list[tuple[int, dict]]:
    """(line, the row by column name) for every row under the header."""
    header = [h.strip() for h in next(reader, [])]
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:  # each row's dict kept the last column of a name: a second value column was read, silently
        raise TruthError(f"{path}:1: column {repeated[0]!r} is given twice in the header; give it once")
    missing = [c for c in _COLUMNS if c not in header]
    if missing:
        raise TruthError(f"{path}: missing column(s) {', '.join(missing)}")
    out = []
    for fields in reader:
        line = reader.line_num
        if not fields:  # a blank line (DictReader's rule)
            continue
        if len(fields) != len(header):  # fewer or more fields than the header
            raise TruthError(
                f"{path}:{line}: expected {len(header)} fields like the header, got {len(fields)}"
            )
        out.append((line, dict(zip(header, fields, strict=True))))
    return out


# columns a row cannot leave empty: the index names rows by id, and the GPU, model, metric and unit say what was
# measured (an empty one made a row no index could name, or one listed as 'runs qwen3-8b, the row ' in the report)
_REQUIRED = ("id", "gpu", "model", "metric", "unit")


def _truth_row(rec: dict, where: str) -> TruthRow:
    value, n_gpu = _measured(rec, where)
    empty = [c for c in _REQUIRED if not rec[c].strip()]
    if empty:
        raise TruthError(f"{where}: {empty[0]}: empty; every row gives {', '.join(_REQUIRED)}")
    return TruthRow(
        id=rec["id"].strip(),
        source=rec["source"].strip(),
        gpu=rec["gpu"].strip(),
        n_gpu=n_gpu,
        config=rec["backend_flags"].strip(),
        model=rec["model"].strip(),
        metric=_known_spelling(rec["metric"], _METRIC_NAMES),
        value=value,
        unit=_known_spelling(rec["unit"], _UNIT_NAMES),
        notes=(rec.get("notes") or "").strip(),
    )


def _measured(rec: dict, where: str) -> tuple[float, int]:
    """A row's value (finite and > 0: an error ratio against NaN, 0 or a negative figure means nothing) and GPU
    count (>= 1), or a one-line error naming the file and line."""
    try:
        value = float(rec["value"])
    except ValueError:
        raise TruthError(f"{where}: value: got {rec['value']!r}; expected a number") from None
    try:
        n_gpu = int(rec["n_gpu"] or 1)
    except ValueError:
        raise TruthError(f"{where}: n_gpu: got {rec['n_gpu']!r}; expected a whole GPU count") from None
    if not math.isfinite(value) or value <= 0:
        raise TruthError(f"{where}: value: got {rec['value']!r}; a measured figure is a finite number > 0")
    if n_gpu < 1:
        raise TruthError(f"{where}: n_gpu: got {n_gpu}; a GPU count is at least 1")
    return value, n_gpu


def unit_factor(row: TruthRow) -> float | None:
    """Factor taking the published value to the mapped key's unit; None if the metric or unit is not understood."""
    mapping = METRICS.get(row.metric)
    if mapping is None:
        return None
    return _UNIT_FACTORS.get((row.unit, mapping.unit))


def measured_in_key_units(row: TruthRow) -> float:
    factor = unit_factor(row)
    if factor is None:
        raise TruthError(f"{row.id}: metric {row.metric!r} in {row.unit!r} is not understood")
    return row.value * factor


def predicted_value(row: TruthRow, result: dict, num_gpus: int) -> float | None:
    """The prediction of this row's metric from a bench_serving-style result; None if the key is absent."""
    mapping = METRICS[row.metric]
    value = result.get(mapping.key)
    if value is None:
        return None
    return float(value) / num_gpus if mapping.per_gpu else float(value)


def source_label(source: str) -> str:
    """A short name for a source: its repository, plus the document it cites when that is a path."""
    words = source.replace("'", " ").split()
    if not words:
        return "?"
    label = words[0]
    if len(words) > 1 and "/" in words[1]:
        label += " " + "/".join(words[1].split("/")[-2:])
    return label
