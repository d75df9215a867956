"""Turn what one bench_serving run left on the host into the corpus' small files.

Inputs (host work directory of the run): bench_serving's `--output-file` line with `--output-details`, the client
child's per-request wall-clock times and run window, the server's per-request metrics export
(`--export-metrics-to-file`), its log, and Prometheus text before/after the run.

Outputs (corpus directory of the run):
- `bench.json`: bench_serving's result object, per-request arrays and generated texts removed;
- `requests.parquet`: one row per measured request — bench_serving's own per-request numbers (input/output length,
  TTFT, ITLs, error) joined with the client's send/end times and the server's timestamps (received, dispatched to
  the scheduler, entered the waiting queue, first scheduled, prefill finished, first chunk sent, finished);
- `server_log.txt`: the scheduler's lines during the run (prefill/decode batch stats, retractions);
- `metrics_delta.json`: how SGLang's Prometheus counters and histogram sums/counts moved during the run.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from simperf.jsonl import read_json_object

# bench_serving's result also embeds the server's /server_info (kept once per server in server_facts.json)
PER_REQUEST_KEYS = (
    "server_info",
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "generated_texts",
    "errors",
    "cached_tokens",
    "cached_tokens_details",
)
# meta_info keys of SGLang 0.5.17's per-request export (tokenizer_manager + observability/req_time_stats.py), in s
_SERVER_TIMES = {
    "request_received_ts": "server_received_s",
    "api_server_dispatch_finish_ts": "server_dispatched_s",
    "forward_entry_time": "server_first_scheduled_s",
    "prefill_finished_time": "server_prefill_finished_s",
    "response_sent_to_client_ts": "server_first_chunk_sent_s",
    "request_finished_ts": "server_finished_s",
}
_LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(\.\d+)?")
_SCHEDULER_LINE = re.compile(
    r"Prefill batch|Decode batch|retract|Retract|KV cache pool is full|out of memory", re.IGNORECASE
)


def read_bench_output(path: Path) -> dict[str, Any]:
    """The last line of bench_serving's --output-file (it appends one JSON object per run)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return json.loads(lines[-1])


def bench_summary(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in PER_REQUEST_KEYS}


def read_server_export(export_dir: Path, start_s: float, end_s: float) -> list[dict[str, Any]]:
    """The server's per-request records received within [start_s, end_s], without prompts and parameters."""
    records = []
    for path in sorted(export_dir.glob("sglang-request-metrics-*.log")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill
            received = rec.get("request_received_ts")
            if received is None or not (start_s - 1.0 <= received <= end_s + 1.0):
                continue
            rec.pop("request_parameters", None)
            records.append(rec)
    records.sort(key=lambda r: r["request_received_ts"])
    return records


def match_server_records(
    client: list[dict[str, Any]], server: list[dict[str, Any]], skew_s: float = 0.05
) -> list[dict[str, Any] | None]:
    """For each client record (send order), the server record of the same request: same prompt length, received
    at or after the send (minus a small clock tolerance), earliest first."""
    by_len: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for rec in server:
        by_len[int(rec.get("prompt_tokens", -1))].append(rec)
    taken: set[int] = set()
    matched: list[dict[str, Any] | None] = [None] * len(client)
    for i in sorted(range(len(client)), key=lambda i: client[i]["send_s"]):
        for s in by_len.get(int(client[i]["prompt_len"]), []):
            if id(s) not in taken and s["request_received_ts"] >= client[i]["send_s"] - skew_s:
                taken.add(id(s))
                matched[i] = s
                break
    return matched


def request_table(
    result: dict[str, Any], client: list[dict[str, Any]], warmups: int, server: list[dict[str, Any]]
) -> pa.Table:
    """One row per request of bench_serving's result, in its order."""
    n = len(result.get("input_lens", []))
    measured = client[warmups:]
    by_ttft: dict[float, list[dict[str, Any]]] = defaultdict(list)
    for rec in measured:
        by_ttft[rec["ttft_s"]].append(rec)
    joined: list[dict[str, Any] | None] = []
    for ttft in result.get("ttfts", []):
        hits = by_ttft.get(ttft)
        joined.append(hits.pop(0) if hits else None)
    present = [c for c in joined if c is not None]
    server_of = dict(zip(map(id, present), match_server_records(present, server), strict=True))
    cols: dict[str, list[Any]] = defaultdict(list)
    for i in range(n):
        c = joined[i]
        s = server_of.get(id(c)) if c is not None else None
        cols["input_len"].append(int(result["input_lens"][i]))
        cols["output_len"].append(int(result["output_lens"][i]))
        cols["ttft_ms"].append(float(result["ttfts"][i]) * 1e3)
        cols["itl_us"].append([round(float(x) * 1e6) for x in result["itls"][i]])
        cols["error"].append(str(result["errors"][i] or ""))
        cached = result.get("cached_tokens")
        cols["cached_tokens"].append(int(cached[i]) if cached else None)
        cols["client_send_s"].append(c["send_s"] if c else None)
        cols["client_end_s"].append(c["end_s"] if c else None)
        for key, col in _SERVER_TIMES.items():
            cols[col].append(s.get(key) if s else None)
        queue = s.get("queue_time") if s else None
        first = s.get("forward_entry_time") if s else None
        cols["server_waiting_entry_s"].append(
            first - queue if (first is not None and queue is not None) else None
        )
        cols["server_e2e_s"].append(s.get("e2e_latency") if s else None)
        cols["server_cached_tokens"].append(s.get("cached_tokens") if s else None)
    schema = pa.schema(
        [
            ("input_len", pa.int32()),
            ("output_len", pa.int32()),
            ("ttft_ms", pa.float64()),
            ("itl_us", pa.list_(pa.int32())),
            ("error", pa.string()),
            ("cached_tokens", pa.int32()),
            ("client_send_s", pa.float64()),
            ("client_end_s", pa.float64()),
            *[(col, pa.float64()) for col in _SERVER_TIMES.values()],
            ("server_waiting_entry_s", pa.float64()),
            ("server_e2e_s", pa.float64()),
            ("server_cached_tokens", pa.int32()),
        ]
    )
    return pa.table({name: cols[name] for name in schema.names}, schema=schema)


def write_requests(table: pa.Table, path: Path) -> None:
    # ITLs are most of the corpus: integer microseconds (the client's perf_counter resolution is finer, its
    # scheduling noise coarser) compress to ~2 bytes each with zstd
    pq.write_table(table, path, compression="zstd", compression_level=19)


_STATE_KEYS = (
    "memory_usage",
    "last_gen_throughput",
    "effective_max_running_requests_per_dp",
    "avg_spec_accept_length",
)


def scheduler_state_delta(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    """What the scheduler recorded during one run, from its /server_info before and after.

    `decode_step_time_s`: SGLANG_RECORD_STEP_TIME's decode iteration times (seconds per iteration averaged over
    each logging interval of `decode_log_interval` iterations), keyed by the number of running requests. SGLang
    only appends to those lists, so the run's entries are what follows the `before` lists; when `before` is not a
    prefix (the server restarted in between), the whole `after` lists belong to this server's life since then."""
    state = (after.get("internal_states") or [{}])[0]
    prior = ((before or {}).get("internal_states") or [{}])[0].get("step_time_dict") or {}
    current = state.get("step_time_dict") or {}
    restarted = any(current.get(k, [])[: len(v)] != v for k, v in prior.items())
    delta = {k: v[0 if restarted else len(prior.get(k, [])) :] for k, v in current.items()}
    out = {k: state[k] for k in _STATE_KEYS if k in state}
    out["decode_step_time_s"] = {k: v for k, v in sorted(delta.items(), key=lambda kv: int(kv[0])) if v}
    out["decode_log_interval"] = after.get("decode_log_interval")
    return out


def scheduler_log_lines(log_text: str, start_s: float, end_s: float) -> list[str]:
    """The scheduler's stat and retraction lines logged within the run (log times are the host's local time)."""
    lo = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(math.floor(start_s)))
    hi = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(math.ceil(end_s)))
    out = []
    for line in log_text.splitlines():
        m = _LOG_TIME.match(line)
        if m and lo <= m.group(1) <= hi and _SCHEDULER_LINE.search(line):
            out.append(line)
    return out


def prometheus_values(text: str) -> dict[str, float]:
    """Series -> value of a Prometheus text page (histogram buckets left out)."""
    values = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        if "_bucket{" in name or name.endswith("_bucket"):
            continue
        try:
            values[name] = float(value)
        except ValueError:
            continue
    return values


def metrics_delta(before: str, after: str) -> dict[str, float]:
    """Counters and histogram sums/counts that moved during the run (after - before)."""
    b, a = prometheus_values(before), prometheus_values(after)
    keep = ("_total", "_sum", "_count")
    return {
        name: a[name] - b.get(name, 0.0)
        for name in sorted(a)
        if name.split("{")[0].endswith(keep) and a[name] != b.get(name, 0.0)
    }


def collect_run(work: Path, dest: Path, server_log: Path, export_dir: Path) -> dict[str, Any]:
    """Write the run's corpus files into dest; returns a summary for the index (counts of joined records)."""
    dest.mkdir(parents=True, exist_ok=True)
    result = read_bench_output(work / "bench.jsonl")
    window = json.loads((work / "window.json").read_text(encoding="utf-8"))
    client = json.loads((work / "client_requests.json").read_text(encoding="utf-8"))
    (dest / "bench.json").write_text(
        json.dumps(bench_summary(result), indent=1, allow_nan=True), encoding="utf-8"
    )
    server = read_server_export(export_dir, window["start_s"], window["end_s"]) if export_dir.exists() else []
    table = request_table(result, client, window.get("warmup_requests", 1), server)
    write_requests(table, dest / "requests.parquet")
    log_text = server_log.read_text(encoding="utf-8", errors="replace") if server_log.exists() else ""
    lines = scheduler_log_lines(log_text, window["start_s"], window["end_s"])
    (dest / "server_log.txt").write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    before, after = work / "metrics_before.txt", work / "metrics_after.txt"
    if before.exists() and after.exists():
        delta = metrics_delta(before.read_text(encoding="utf-8"), after.read_text(encoding="utf-8"))
        (dest / "metrics_delta.json").write_text(json.dumps(delta, indent=1), encoding="utf-8")
    after = work / "server_info_after.json"
    if after.exists():
        before_path = work / "server_info_before.json"
        before = json.loads(before_path.read_text(encoding="utf-8")) if before_path.exists() else None
        state = scheduler_state_delta(before, json.loads(after.read_text(encoding="utf-8")))
        (dest / "server_state.json").write_text(json.dumps(state), encoding="utf-8")
    joined_server = table.column("server_received_s").null_count
    return {
        "requests": table.num_rows,
        "errors": sum(1 for e in table.column("error").to_pylist() if e),
        "requests_with_client_times": table.num_rows - table.column("client_send_s").null_count,
        "requests_with_server_times": table.num_rows - joined_server,
        "window_s": window["end_s"] - window["start_s"],
        "start_s": window["start_s"],
    }


def _parquet_columns(path: Path) -> list[str]:
    try:
        return pq.read_schema(path).names
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"{path}: not a Parquet file ({str(exc).splitlines()[0]})") from None


def upgrade_server_runs(server_dir: Path) -> int:
    """Bring run directories written by the first version of the runner to the current format (idempotent):
    ITLs from float milliseconds to integer microseconds, and the scheduler's full /server_info after each run to
    the run's own `server_state.json` (decode step times of that run only). Runs are taken in the order they ran,
    each one's `before` being the previous run's state. Returns how many runs changed."""
    runs = sorted(
        (d for d in server_dir.iterdir() if (d / "run.json").exists()),
        key=lambda d: read_json_object(d / "run.json").get("start_s") or 0.0,
    )
    changed, previous = 0, None
    for run in runs:
        requests, legacy_state = run / "requests.parquet", run / "server_state_after.json"
        touched = False
        bench_path = run / "bench.json"
        if bench_path.exists():
            bench = read_json_object(bench_path)
            if "server_info" in bench:
                bench_path.write_text(json.dumps(bench_summary(bench), indent=1), encoding="utf-8")
                touched = True
        if requests.exists() and "itl_ms" in _parquet_columns(requests):
            table = pq.read_table(requests)
            itl_us = pa.array(
                [[round(x * 1e3) for x in row] for row in table.column("itl_ms").to_pylist()],
                pa.list_(pa.int32()),
            )
            at = table.schema.get_field_index("itl_ms")
            write_requests(table.set_column(at, pa.field("itl_us", pa.list_(pa.int32())), itl_us), requests)
            touched = True
        if legacy_state.exists():
            after = json.loads(legacy_state.read_text(encoding="utf-8"))
            state = scheduler_state_delta(previous, after)
            (run / "server_state.json").write_text(json.dumps(state), encoding="utf-8")
            legacy_state.unlink()
            previous = after
            touched = True
        changed += touched
    return changed
