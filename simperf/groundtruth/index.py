"""The corpus index: one row per recorded run, with the facts needed to find, predict and compare it.

Layout of a corpus directory (written by `simperf groundtruth run`, read by `simperf accuracy`):

    <corpus>/index.parquet
    <corpus>/<gpu>/env.json                       GPU, driver, package versions, simperf commit
    <corpus>/<gpu>/<server>/server_cmd.txt        the exact launch_server command
    <corpus>/<gpu>/<server>/server_facts.json     start-up facts (KV pool, graph sizes, ...), /get_server_info
    <corpus>/<gpu>/<server>/<run>/bench_cmd.txt   the exact bench_serving command
    <corpus>/<gpu>/<server>/<run>/run.json        status (ok | failed, with the reason), wall window
    <corpus>/<gpu>/<server>/<run>/bench.json      bench_serving's result (no per-request arrays, no texts)
    <corpus>/<gpu>/<server>/<run>/requests.parquet per request: lengths, TTFT, ITLs, client and server times
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from simperf.jsonl import read_json_object

INDEX_NAME = "index.parquet"
_METRICS = (
    "completed",
    "duration",
    "request_throughput",
    "output_throughput",
    "mean_ttft_ms",
    "median_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "median_tpot_ms",
    "p99_tpot_ms",
    "mean_itl_ms",
    "median_itl_ms",
    "p99_itl_ms",
    "mean_e2e_latency_ms",
    "median_e2e_latency_ms",
    "p99_e2e_latency_ms",
    "concurrency",
)


def run_dirs(corpus: Path) -> list[Path]:
    return sorted(p.parent for p in corpus.glob("*/*/*/run.json"))


def _json(path: Path) -> dict[str, Any]:
    return read_json_object(path) if path.exists() else {}


# what the runner writes in run.json's status (runner.py write_status)
RUN_STATES = ("ok", "failed")


def run_status(run_dir: Path) -> dict[str, Any]:
    """run.json, whose status is one the runner writes: a hand-edited 'OK' or a missing status was indexed as
    neither, and accuracy and overheads then skipped the run without a word."""
    status = read_json_object(run_dir / "run.json")
    if status.get("status") not in RUN_STATES:
        raise ValueError(
            f"{run_dir / 'run.json'}: status: got {status.get('status')!r}; allowed values: {', '.join(RUN_STATES)}"
        )
    return status


def index_row(run_dir: Path) -> dict[str, Any]:
    server_dir, gpu_dir = run_dir.parent, run_dir.parent.parent
    status = run_status(run_dir)
    bench = _json(run_dir / "bench.json")
    if (
        status.get("status") == "ok" and not bench
    ):  # indexed with every metric empty, then compared to nothing
        raise ValueError(f"{run_dir}: run.json says ok, but its bench.json is missing or empty")
    facts = _json(server_dir / "server_facts.json")
    env = _json(gpu_dir / "env.json")
    startup = facts.get("startup", {})
    args = facts.get("server_info") or {}
    row: dict[str, Any] = {
        "gpu": gpu_dir.name,
        "server": server_dir.name,
        "run": run_dir.name,
        "status": status.get("status"),
        "reason": status.get("reason"),
        "model_path": args.get("model_path"),
        "attention_backend": args.get("attention_backend"),
        "tp_size": args.get("tp_size"),
        "max_total_num_tokens": startup.get("max_total_num_tokens"),
        "max_running_requests": startup.get("max_running_requests"),
        "chunked_prefill_size": startup.get("chunked_prefill_size"),
        "random_input_len": bench.get("random_input_len"),
        "random_output_len": bench.get("random_output_len"),
        "random_range_ratio": bench.get("random_range_ratio"),
        "request_rate": _finite(bench.get("request_rate")),
        "max_concurrency": bench.get("max_concurrency"),
        "window_s": status.get("window_s"),
        "sglang_version": (env.get("packages") or {}).get("sglang"),
        "gpu_name": env.get("gpu_name"),
    }
    for key in _METRICS:
        row[key] = _finite(bench.get(key))
    return row


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None


def write_index(corpus: Path) -> Path:
    from simperf.groundtruth.collect import upgrade_server_runs

    for server_dir in sorted({d.parent for d in run_dirs(corpus)}):
        upgrade_server_runs(server_dir)
    rows = [index_row(d) for d in run_dirs(corpus)]
    path = corpus / INDEX_NAME
    table = pa.Table.from_pylist(rows) if rows else pa.table({"gpu": pa.array([], pa.string())})
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)
    return path
