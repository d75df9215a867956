"""Machine-readable outputs: the bench_serving-style result JSON and a per-request Parquet file.

The Parquet file keeps each request's chunk times and token counts, so `read_requests_parquet` rebuilds the exact
RequestRecords and every metric can be recomputed from the file alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from simperf import strictjson
from simperf.records import RequestRecords

_META_DURATION = b"simperf.duration_s"
_META_EXTRA = b"simperf.extra"
_INT32_MAX = 2**31 - 1


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def result_json(result: dict, extra: dict) -> str:
    """bench_serving's flat result object (its key names), with simperf's own values under "simperf".

    Strict JSON, unlike bench_serving's `json.dumps` (which writes Infinity/NaN): an unlimited request_rate is
    "inf", any other non-finite number null (simperf/strictjson.py).
    """
    if "simperf" in result:
        raise ValueError("result already has a 'simperf' key; pass simperf's values as `extra`")
    return strictjson.dumps({**result, "simperf": extra}, default=_jsonable, indent=2)


def request_details(records: RequestRecords) -> dict[str, list]:
    """bench_serving's `--output-details` arrays for the completed requests, in request order.

    `input_lens`, `output_lens`, `ttfts` (s), `itls` (per request, s: a chunk of n tokens gives n entries of gap / n,
    as bench_serving's client records them) and `errors` (empty: a completed request has none). bench_serving's
    `generated_texts` is left out: a simulation has no text. Rejected requests are in "simperf"."rejected".
    """
    from simperf.report.metrics import inter_token_latencies, per_request

    req = per_request(records)
    chunks = req.chunks
    tokens_before = np.concatenate(([0], np.cumsum(chunks.num_tokens)))
    starts, stops = chunks.offsets[:-1], chunks.offsets[1:]
    # ITL entries per request: the tokens of every chunk after its first
    entries = tokens_before[stops] - tokens_before[np.minimum(starts + 1, stops)]
    itl = inter_token_latencies(chunks)
    bounds = np.concatenate(([0], np.cumsum(entries)))
    return {
        "input_lens": req.input_len.tolist(),
        "output_lens": req.output_len.tolist(),
        "ttfts": req.ttft_s.tolist(),
        "itls": [itl[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:], strict=True)],
        "errors": [""] * len(req.input_len),
    }


def bench_jsonl_line(result: dict, extra: dict, records: RequestRecords | None = None) -> str:
    """One line of a bench_serving `--output-file`: its flat result keys ("simperf" beside them), and with
    records the `--output-details` arrays."""
    line = {**result, "simperf": extra}
    if records is not None:
        line.update(request_details(records))
    return json.dumps(line, default=_jsonable)


def append_jsonl(path: Path, line: str) -> None:
    """Append one run, as bench_serving does (`open(output_file, "a")`): earlier runs stay in the file."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


# ---------------------------------------------------------------------------------------------------- parquet


def _list_array(offsets: np.ndarray, values: np.ndarray) -> pa.Array:
    if offsets.size and int(offsets[-1]) > _INT32_MAX:
        return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(values))
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32), pa.int32()), pa.array(values))


def _flat_list(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets from 0, values) of a list column, whatever its chunking or slicing."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = array.offsets.to_numpy().astype(np.int64)
    values = array.values.to_numpy(zero_copy_only=False)[offsets[0] : offsets[-1]]
    return offsets - offsets[0], values


def write_requests_parquet(records: RequestRecords, path: Path) -> None:
    """One row per request: times, lengths, per-request latencies, and the streamed tokens and chunks."""
    send = np.asarray(records.send_s, dtype=np.float64)
    first = np.asarray(records.first_token_s, dtype=np.float64)
    finish = np.asarray(records.finish_s, dtype=np.float64)
    output_len = np.asarray(records.output_len, dtype=np.int64)
    chunk_offsets = np.asarray(records.chunk_offsets, dtype=np.int64)
    chunk_time = np.asarray(records.chunk_time_s, dtype=np.float64)
    chunk_tokens = np.asarray(records.chunk_num_tokens, dtype=np.int64)

    tokens_before = np.concatenate(([0], np.cumsum(chunk_tokens)))
    token_offsets = tokens_before[chunk_offsets]
    token_time = np.repeat(chunk_time, chunk_tokens)  # a chunk of n tokens: n tokens at the chunk's time

    multi = output_len > 1
    tpot = np.full(len(records), np.nan)
    tpot[multi] = (finish[multi] - first[multi]) / (output_len[multi] - 1) * 1000

    table = pa.table(
        {
            "request_id": pa.array(np.asarray(records.request_id, dtype=np.int64)),
            "send_s": pa.array(send),
            "first_token_s": pa.array(first),
            "finish_s": pa.array(finish),
            "input_len": pa.array(np.asarray(records.input_len, dtype=np.int64)),
            "output_len": pa.array(output_len),
            "ttft_ms": pa.array((first - send) * 1000),
            "e2e_ms": pa.array((finish - send) * 1000),
            "tpot_ms": pa.array(tpot, mask=~multi),
            "dp_rank": pa.array(np.asarray(records.dp_rank, dtype=np.int64)),
            "retractions": pa.array(np.asarray(records.retractions, dtype=np.int64)),
            "cached_tokens": pa.array(np.asarray(records.cached_tokens, dtype=np.int64)),
            "token_times_s": _list_array(token_offsets, token_time),
            "chunk_time_s": _list_array(chunk_offsets, chunk_time),
            "chunk_num_tokens": _list_array(chunk_offsets, chunk_tokens),
        }
    )
    metadata = {
        _META_DURATION: repr(float(records.duration_s)).encode(),
        _META_EXTRA: json.dumps(records.extra, default=str).encode(),
    }
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    pq.write_table(table, Path(path))


def read_requests_parquet(path: Path | str) -> RequestRecords:
    """The RequestRecords a file from write_requests_parquet was written from (extra as JSON round-trips it)."""
    table = pq.read_table(Path(path))
    metadata = table.schema.metadata or {}
    if _META_DURATION not in metadata:
        raise ValueError(f"{path}: not a simperf requests file (no {_META_DURATION.decode()} metadata)")

    def col(name: str, dtype: type) -> np.ndarray:
        return table.column(name).to_numpy().astype(dtype)

    chunk_offsets, chunk_time = _flat_list(table.column("chunk_time_s"))
    tokens_offsets, chunk_tokens = _flat_list(table.column("chunk_num_tokens"))
    if not np.array_equal(chunk_offsets, tokens_offsets):
        raise ValueError(f"{path}: chunk_time_s and chunk_num_tokens disagree on chunk counts")
    duration = float(metadata[_META_DURATION].decode())
    extra_text = metadata.get(_META_EXTRA)
    return RequestRecords(
        request_id=col("request_id", np.int64),
        send_s=col("send_s", np.float64),
        input_len=col("input_len", np.int64),
        output_len=col("output_len", np.int64),
        first_token_s=col("first_token_s", np.float64),
        finish_s=col("finish_s", np.float64),
        chunk_offsets=chunk_offsets,
        chunk_time_s=chunk_time.astype(np.float64),
        chunk_num_tokens=chunk_tokens.astype(np.int64),
        dp_rank=col("dp_rank", np.int64),
        retractions=col("retractions", np.int64),
        cached_tokens=col("cached_tokens", np.int64),
        duration_s=duration,
        extra=json.loads(extra_text) if extra_text else {},
    )
