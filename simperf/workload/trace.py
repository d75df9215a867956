"""Read a request trace: simperf's own schema, Mooncake JSONL, the Azure LLM inference CSV, bench_serving output.

The format is recognised from the column names, not the file name, so a renamed file still reads:

| format   | time column           | prompt tokens   | output tokens     | prefix blocks        |
|----------|-----------------------|-----------------|-------------------|----------------------|
| simperf  | arrival_s (seconds)   | input_len       | output_len        | hash_ids (optional)  |
| mooncake | timestamp (ms)        | input_length    | output_length     | hash_ids (optional)  |
| azure    | TIMESTAMP (date-time) | ContextTokens   | GeneratedTokens   | -                    |
| groundtruth | client_send_s (s)  | input_len       | output_len        | -                    |

simperf rows may also carry `hash_block_tokens` (tokens per hash id, default 512, equal on every row) and
`accept_len` (the request's mean accepted tokens per speculative verify step). simperf traces come as JSONL, CSV
or Parquet; Mooncake as JSONL (or Parquet with its columns); Azure as CSV. A `sglang.bench_serving --output-file`
JSONL written with `--output-details` (one line per run, per-request lists `input_lens`, `output_lens`, and in
recent versions `start_times`) reads through `bench_serving.py`. A ground-truth run's `requests.parquet` (simperf
groundtruth, docs/groundtruth.md) replays its requests with the client's recorded send times.

A bad row raises TraceError naming the file and its line (row for Parquet). Rows are replayed in time order,
as bench_serving's trace replay sorts them, with times shifted so the first request is at 0 s.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simperf.jsonl import json_object_lines

# Mooncake's hash_ids name 512-token prompt blocks; simperf's own traces use the same convention.
HASH_BLOCK_TOKENS = 512
# The largest token count a row may give: no model's context comes near it, and past 2**63 the int64 arrays
# wrapped around (1e30 tokens read as -9.2e18, totals went negative).
MAX_LENGTH = 2**31 - 1


class TraceError(ValueError):
    """A trace file that cannot be read; the message names the file and the line or row."""


@dataclass(frozen=True)
class TraceFormat:
    name: str
    time_key: str
    input_key: str
    output_key: str
    hashes_key: str | None
    seconds_per_unit: float | None  # None: the time column holds date-time strings


FORMATS = (
    TraceFormat("simperf", "arrival_s", "input_len", "output_len", "hash_ids", 1.0),
    TraceFormat("mooncake", "timestamp", "input_length", "output_length", "hash_ids", 1e-3),
    TraceFormat("azure", "TIMESTAMP", "ContextTokens", "GeneratedTokens", None, None),
    TraceFormat("groundtruth", "client_send_s", "input_len", "output_len", None, 1.0),
)


@dataclass(frozen=True)
class Trace:
    arrival_s: np.ndarray  # float64, non-decreasing, first is 0
    input_len: np.ndarray  # int64 >= 1
    output_len: np.ndarray  # int64 >= 1
    block_hashes: list[np.ndarray] | None  # int64 block ids per request, when the trace has them
    format: str
    hash_block_tokens: int = HASH_BLOCK_TOKENS  # tokens per id in block_hashes
    accept_len: np.ndarray | None = None  # float64 per request (speculative decoding), when the trace has it
    has_times: bool = True  # False: the file records no arrival times (arrival_s is all 0)
    skipped: tuple[str, ...] = ()  # requests left out on purpose, each with its reason (failed requests)

    def __len__(self) -> int:
        return int(self.input_len.shape[0])


def detect_format(columns: set[str] | list[str], where: str) -> TraceFormat:
    present = set(columns)
    for fmt in FORMATS:
        if {fmt.time_key, fmt.input_key, fmt.output_key} <= present:
            check_one_time_column(present, fmt, where)
            return fmt
    known = "; ".join(f"{f.name}: {f.time_key}, {f.input_key}, {f.output_key}" for f in FORMATS)
    raise TraceError(f"{where}: unrecognised trace columns {sorted(present)}; expected one of ({known})")


def _time_unit(fmt: TraceFormat) -> str:
    if fmt.seconds_per_unit is None:
        return "a date-time"
    return "seconds" if fmt.seconds_per_unit == 1.0 else "ms"


def check_one_time_column(columns: set[str] | list[str], fmt: TraceFormat, where: str) -> None:
    """A row with two formats' time columns (arrival_s and Mooncake's timestamp): the format's own was replayed
    and the other dropped without a word, whichever the user meant; their units differ (s, ms)."""
    others = [f for f in FORMATS if f.time_key != fmt.time_key and f.time_key in columns]
    if others:
        other = others[0]
        raise TraceError(
            f"{where}: both {fmt.time_key} ({fmt.name}: {_time_unit(fmt)}) and {other.time_key} ({other.name}: "
            f"{_time_unit(other)}) give arrival times, and they need not agree; keep one of the two columns"
        )


def read_trace(path: Path | str, limit: int | None = None, run: int | None = None) -> Trace:
    """Read the first `limit` requests (all when None) of a trace file, in time order.

    run: for a bench_serving output file holding several runs (one per line), the 0-based line to read.
    """
    path = Path(path)
    if path.is_dir():  # was reported as 'no such trace file', which it is not
        raise TraceError(f"{path}: is a directory; give a trace file")
    if not path.is_file():
        raise TraceError(f"{path}: no such trace file")
    try:
        trace = _read_file(path, limit, run)
    except (
        UnicodeDecodeError
    ) as e:  # a ValueError, reported without the file: "'utf-8' codec can't decode..."
        raise TraceError(f"{path}: {not_utf8(e)}") from None
    if not np.isfinite(trace.arrival_s).all():  # each time is finite, but last - first overflowed a float
        raise TraceError(
            f"{path}: arrival times span more seconds than a float can hold; check the time column"
        )
    return trace


def not_utf8(e: UnicodeDecodeError) -> str:
    """Why a text file could not be read, for a message that names the file."""
    return f"not UTF-8 text (byte 0x{e.object[e.start]:02x}); save it as UTF-8"


def _read_file(path: Path, limit: int | None, run: int | None) -> Trace:
    suffix = path.suffix.lower()
    looks_json = suffix not in (".parquet", ".csv") and _starts_like_json(path)
    if looks_json and '"input_lens"' in _first_line(path):
        from simperf.workload.bench_serving import read_bench_serving

        return read_bench_serving(path, limit=limit, run=run)
    if run is not None:  # other formats hold one trace: a run number was accepted and ignored
        raise TraceError(
            f"{path}: run {run}: only bench_serving output files hold several runs (one per line)"
        )
    if suffix == ".parquet":
        return _read_parquet(path, limit)
    if suffix in (".jsonl", ".json", ".ndjson") or looks_json:
        return _collect(_jsonl_rows(path, limit), path)
    return _collect(_csv_rows(path, limit), path)


def _starts_like_json(path: Path) -> bool:
    with path.open(encoding="utf-8") as f:
        return f.read(4096).lstrip().startswith(("{", "["))


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                return line
    return ""


# ---------------------------------------------------------------------------------------------------- row readers


def _jsonl_rows(path: Path, limit: int | None) -> Iterator[tuple[int, dict[str, Any], TraceFormat]]:
    fmt: TraceFormat | None = None
    taken = 0
    with path.open(encoding="utf-8") as f:
        if limit is not None and limit <= 0:
            return
        # The limit is checked right after a yield so the line past it is never parsed.
        for line_no, row in json_object_lines(f, path, TraceError):
            if fmt is None:
                fmt = detect_format(list(row), f"{path}:{line_no}")
            taken += 1
            yield line_no, row, fmt
            if limit is not None and taken >= limit:
                return


def _csv_rows(path: Path, limit: int | None) -> Iterator[tuple[int, dict[str, Any], TraceFormat]]:
    with path.open(newline="", encoding="utf-8-sig") as f:  # -sig: spreadsheet exports start with a BOM
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            return
        header = [h.strip() for h in header]
        repeated = sorted({h for h in header if header.count(h) > 1})
        if repeated:  # each row's dict kept the last column of a name: input_len read from the second one
            raise TraceError(f"{path}:1: column {repeated[0]!r} is given twice in the header; give it once")
        fmt = detect_format(header, f"{path}:1")
        taken = 0
        for fields in reader:
            line_no = reader.line_num
            if limit is not None and taken >= limit:
                return
            if not fields or all(not x.strip() for x in fields):
                continue
            if len(fields) != len(header):
                raise TraceError(f"{path}:{line_no}: expected {len(header)} fields, got {len(fields)}")
            taken += 1
            yield line_no, dict(zip(header, fields, strict=True)), fmt


# ------------------------------------------------------------------------------------------------ value checking


def _length(value: Any, key: str, where: str) -> int:
    if isinstance(value, bool):
        raise TraceError(f"{where}: {key} must be an integer token count, got {value!r}")
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise TraceError(f"{where}: {key} must be an integer token count, got {value!r}") from None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise TraceError(f"{where}: {key} must be an integer token count, got {value!r}")
    if value < 1:
        raise TraceError(f"{where}: {key} must be >= 1, got {value}")
    if value > MAX_LENGTH:
        raise TraceError(f"{where}: {key} must be <= {MAX_LENGTH:,} tokens, got {value:,}")
    return value


def _number(value: Any, key: str, where: str) -> float:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise TraceError(f"{where}: {key} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TraceError(f"{where}: {key} must be a finite number, got {value!r}")
    return float(value)


def _hashes(value: Any, key: str, where: str) -> np.ndarray:
    if not isinstance(value, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in value):
        raise TraceError(f"{where}: {key} must be a list of integer block ids")
    return np.asarray(value, dtype=np.int64)


def _check_block_counts(
    hashes: list[np.ndarray], tokens: np.ndarray, block_tokens: int, key: str, where: Callable[[int], str]
) -> None:
    """More block ids than the request's tokens (prompt and output: simperf's multi-turn ids name the answer the
    next turn re-sends) fill: ids hashed over smaller blocks (vLLM's 16 tokens, an SGLang page) read as 512-token
    ones claimed a shared prefix many times the prompt, and the cache hit nearly every token."""
    for i, (ids, count) in enumerate(zip(hashes, tokens, strict=True)):
        most = -(-int(count) // block_tokens)
        if len(ids) > most:
            raise TraceError(
                f"{where(i)}: {key}: {len(ids)} block ids for {int(count)} tokens (prompt and output), at most "
                f"{most} of {block_tokens} tokens; ids of smaller blocks need hash_block_tokens (simperf traces)"
            )


def _accept(value: Any, where: str) -> float:
    accept = _number(value, "accept_len", where)
    if accept < 1.0:
        raise TraceError(f"{where}: accept_len must be >= 1 (tokens per verify step), got {accept}")
    return accept


def _collect(rows: Iterator[tuple[int, dict[str, Any], TraceFormat]], path: Path) -> Trace:
    times: list[Any] = []
    lines: list[int] = []
    inputs: list[int] = []
    outputs: list[int] = []
    hashes: list[np.ndarray | None] = []
    accepts: list[float | None] = []
    block_tokens: int | None = None
    fmt: TraceFormat | None = None
    for line_no, row, row_fmt in rows:
        fmt = row_fmt
        where = f"{path}:{line_no}"
        for key in (fmt.time_key, fmt.input_key, fmt.output_key):
            if key not in row or row[key] is None:
                raise TraceError(f"{where}: missing {key}")
        check_one_time_column(row.keys(), fmt, where)  # JSON lines each name their own keys
        if fmt.seconds_per_unit is None:
            times.append(str(row[fmt.time_key]).strip())
        else:
            times.append(_number(row[fmt.time_key], fmt.time_key, where) * fmt.seconds_per_unit)
        inputs.append(_length(row[fmt.input_key], fmt.input_key, where))
        outputs.append(_length(row[fmt.output_key], fmt.output_key, where))
        has_hashes = fmt.hashes_key is not None and row.get(fmt.hashes_key) is not None
        hashes.append(_hashes(row[fmt.hashes_key], fmt.hashes_key, where) if has_hashes else None)
        if fmt.name == "simperf":
            accept = row.get("accept_len")
            accepts.append(None if accept in (None, "") else _accept(accept, where))
            size = row.get("hash_block_tokens")
            if size not in (None, ""):
                size = _length(size, "hash_block_tokens", where)
                if block_tokens is not None and size != block_tokens:
                    raise TraceError(
                        f"{where}: hash_block_tokens {size} differs from earlier rows' {block_tokens}"
                    )
                block_tokens = size
        lines.append(line_no)
    if fmt is None:
        raise TraceError(f"{path}: trace has no requests")
    missing = [i for i, h in enumerate(hashes) if h is None]
    if missing and len(missing) < len(hashes):
        raise TraceError(f"{path}:{lines[missing[0]]}: {fmt.hashes_key} missing while other rows have it")
    if fmt.seconds_per_unit is None:
        seconds = _parse_datetimes(times, lines, path, fmt.time_key)
    else:
        seconds = np.asarray(times, dtype=np.float64)
    block_hashes = None if missing else [h for h in hashes if h is not None]
    if block_hashes is not None:
        tokens = np.asarray(inputs) + np.asarray(outputs)
        size = block_tokens or HASH_BLOCK_TOKENS
        _check_block_counts(block_hashes, tokens, size, fmt.hashes_key or "", lambda i: f"{path}:{lines[i]}")
    no_accept = [i for i, a in enumerate(accepts) if a is None]
    if accepts and no_accept and len(no_accept) < len(accepts):
        raise TraceError(f"{path}:{lines[no_accept[0]]}: accept_len missing while other rows have it")
    accept_len = np.asarray(accepts, dtype=np.float64) if accepts and not no_accept else None
    return _in_time_order(
        seconds,
        np.asarray(inputs),
        np.asarray(outputs),
        block_hashes,
        fmt.name,
        hash_block_tokens=block_tokens or HASH_BLOCK_TOKENS,
        accept_len=accept_len,
    )


def _parse_datetimes(texts: list[str], lines: list[int], path: Path, key: str) -> np.ndarray:
    """Date-time strings -> seconds since the first, at ns resolution (Azure has 7 fractional digits)."""
    try:
        stamps = np.array(texts, dtype="datetime64[ns]")
    except ValueError:
        for text, line_no in zip(texts, lines, strict=True):
            try:
                np.datetime64(text, "ns")
            except ValueError:
                raise TraceError(f"{path}:{line_no}: {key} is not a date-time: {text!r}") from None
        raise
    if np.isnat(stamps).any():
        bad = int(np.flatnonzero(np.isnat(stamps))[0])
        raise TraceError(f"{path}:{lines[bad]}: {key} is not a date-time: {texts[bad]!r}")
    ns = (stamps - stamps.min()).astype(np.int64)
    return ns.astype(np.float64) * 1e-9


def _in_time_order(
    seconds: np.ndarray,
    input_len: np.ndarray,
    output_len: np.ndarray,
    hashes: list[np.ndarray] | None,
    fmt_name: str,
    *,
    hash_block_tokens: int = HASH_BLOCK_TOKENS,
    accept_len: np.ndarray | None = None,
    has_times: bool = True,
    skipped: tuple[str, ...] = (),
) -> Trace:
    order = np.argsort(seconds, kind="stable")
    seconds = seconds[order]
    with np.errstate(over="ignore"):  # a span past float range: read_trace names the file
        arrival = seconds - seconds[0] if seconds.size else seconds
    return Trace(
        arrival_s=arrival.astype(np.float64),
        input_len=input_len[order].astype(np.int64),
        output_len=output_len[order].astype(np.int64),
        block_hashes=None if hashes is None else [hashes[i] for i in order],
        format=fmt_name,
        hash_block_tokens=hash_block_tokens,
        accept_len=None if accept_len is None else accept_len[order],
        has_times=has_times,
        skipped=skipped,
    )


# ------------------------------------------------------------------------------------------------------- parquet


def _read_parquet(path: Path, limit: int | None) -> Trace:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    if limit is not None:
        table = table.slice(0, limit)
    fmt = detect_format(table.column_names, str(path))
    if fmt.seconds_per_unit is None:
        raise TraceError(f"{path}: the {fmt.name} format is read from CSV only")
    if table.num_rows == 0:
        raise TraceError(f"{path}: trace has no requests")

    def numeric(key: str) -> np.ndarray:
        column = table.column(key)
        if column.null_count:
            bad = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise TraceError(f"{path}: row {bad}: missing {key}")
        values = column.to_numpy()
        if not np.issubdtype(values.dtype, np.number):
            raise TraceError(f"{path}: column {key} must be numeric, found {column.type}")
        return values

    seconds = numeric(fmt.time_key).astype(np.float64) * fmt.seconds_per_unit
    if not np.isfinite(seconds).all():
        bad = int(np.flatnonzero(~np.isfinite(seconds))[0])
        raise TraceError(f"{path}: row {bad}: {fmt.time_key} must be a finite number")
    lengths = []
    for key in (fmt.input_key, fmt.output_key):
        values = numeric(key)
        bad_rows = np.flatnonzero((values < 1) | (values > MAX_LENGTH) | (values != np.floor(values)))
        if bad_rows.size:
            raise TraceError(
                f"{path}: row {int(bad_rows[0])}: {key} must be an integer from 1 to {MAX_LENGTH:,}, "
                f"got {values[bad_rows[0]]}"
            )
        lengths.append(values.astype(np.int64))
    hashes = None
    if fmt.hashes_key is not None and fmt.hashes_key in table.column_names:
        hashes = _parquet_hashes(table.column(fmt.hashes_key).combine_chunks(), fmt.hashes_key, path)
    accept_len = None
    block_tokens = HASH_BLOCK_TOKENS
    if fmt.name == "simperf" and "accept_len" in table.column_names:
        accept_len = numeric("accept_len").astype(np.float64)
        bad_rows = np.flatnonzero(~(accept_len >= 1.0))
        if bad_rows.size:
            raise TraceError(
                f"{path}: row {int(bad_rows[0])}: accept_len must be >= 1, got {accept_len[bad_rows[0]]}"
            )
    if fmt.name == "simperf" and "hash_block_tokens" in table.column_names:
        sizes = np.unique(numeric("hash_block_tokens"))
        if sizes.size != 1 or sizes[0] < 1 or sizes[0] != np.floor(sizes[0]):
            raise TraceError(
                f"{path}: hash_block_tokens must be one positive integer, found {sizes.tolist()}"
            )
        block_tokens = int(sizes[0])
    if hashes is not None:
        tokens = lengths[0] + lengths[1]
        _check_block_counts(hashes, tokens, block_tokens, fmt.hashes_key or "", lambda i: f"{path}: row {i}")
    return _in_time_order(
        seconds,
        lengths[0],
        lengths[1],
        hashes,
        fmt.name,
        hash_block_tokens=block_tokens,
        accept_len=accept_len,
    )


def _parquet_hashes(column: Any, key: str, path: Path) -> list[np.ndarray]:
    """A list<integer> column -> one array of block ids per row; anything else names the column and row."""
    import pyarrow as pa

    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)) or not (
        pa.types.is_integer(column.type.value_type)
    ):
        raise TraceError(f"{path}: column {key} must be a list of integer block ids, found {column.type}")
    if column.null_count:
        bad = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
        raise TraceError(f"{path}: row {bad}: missing {key}")
    offsets = column.offsets.to_numpy()
    if column.values.null_count:
        first = int(np.flatnonzero(column.values.is_null().to_numpy(zero_copy_only=False))[0])
        bad = int(np.searchsorted(offsets, first, side="right")) - 1
        raise TraceError(f"{path}: row {bad}: {key} holds a null block id")
    flat = column.values.to_numpy(zero_copy_only=False).astype(np.int64)
    return [flat[offsets[i] : offsets[i + 1]] for i in range(len(column))]
