"""Write simperf's own trace schema (JSONL, Parquet or CSV), which `read_trace` reads back unchanged.

Columns: `arrival_s` (float seconds from the first request), `input_len`, `output_len` (int tokens), and when
known `hash_ids` (list of int prefix-block ids), `hash_block_tokens` (tokens per id, one value for the file) and
`accept_len` (float, mean accepted tokens per speculative verify step). CSV cannot hold the `hash_ids` lists.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from simperf.workload.trace import Trace, TraceError


def write_trace(trace: Trace, path: Path | str) -> Path:
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        _write_parquet(trace, path)
    elif suffix in (".jsonl", ".ndjson"):
        _write_jsonl(trace, path)
    elif suffix == ".csv":
        if trace.block_hashes is not None:
            raise TraceError(f"{path}: CSV cannot hold hash_ids; write .jsonl or .parquet")
        _write_csv(trace, path)
    else:
        raise TraceError(f"{path}: unknown trace suffix {suffix!r}; allowed: .jsonl, .parquet, .csv")
    return path


def _columns(trace: Trace) -> dict[str, list]:
    columns: dict[str, list] = {
        # repr-exact floats: a round trip through text gives back the same arrival times
        "arrival_s": [float(t) for t in trace.arrival_s],
        "input_len": trace.input_len.tolist(),
        "output_len": trace.output_len.tolist(),
    }
    if trace.block_hashes is not None:
        columns["hash_ids"] = [np.asarray(h, dtype=np.int64).tolist() for h in trace.block_hashes]
        columns["hash_block_tokens"] = [int(trace.hash_block_tokens)] * len(trace)
    if trace.accept_len is not None:
        columns["accept_len"] = [float(a) for a in trace.accept_len]
    return columns


def _write_jsonl(trace: Trace, path: Path) -> None:
    columns = _columns(trace)
    keys = list(columns)
    with path.open("w") as f:
        for row in zip(*columns.values(), strict=True):
            f.write(json.dumps(dict(zip(keys, row, strict=True)), separators=(",", ":")) + "\n")


def _write_csv(trace: Trace, path: Path) -> None:
    columns = _columns(trace)
    with path.open("w") as f:
        f.write(",".join(columns) + "\n")
        for row in zip(*columns.values(), strict=True):
            f.write(",".join(repr(v) if isinstance(v, float) else str(v) for v in row) + "\n")


def _write_parquet(trace: Trace, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = _columns(trace)
    arrays = {
        "arrival_s": pa.array(columns["arrival_s"], pa.float64()),
        "input_len": pa.array(columns["input_len"], pa.int64()),
        "output_len": pa.array(columns["output_len"], pa.int64()),
    }
    if "hash_ids" in columns:
        arrays["hash_ids"] = pa.array(columns["hash_ids"], pa.list_(pa.int64()))
        arrays["hash_block_tokens"] = pa.array(columns["hash_block_tokens"], pa.int64())
    if "accept_len" in columns:
        arrays["accept_len"] = pa.array(columns["accept_len"], pa.float64())
    pq.write_table(pa.table(arrays), path)
