"""The bench_serving side of a ground-truth run: one child process that runs several bench_serving points.

    python -m simperf.groundtruth.client JOBS.json

JOBS.json holds `{"deadline_s": wall-clock time or null, "jobs": [...]}`, each job `{"name", "argv", "work_dir",
"expected_s"}` (a job that would not finish before the deadline is left for a later call), where argv is bench_serving's own command line (after
`python -m sglang.bench_serving`). Each run is parsed by bench_serving's own argument parser and executed by its
own `run_benchmark`, in this one process: a fresh `python -m sglang.bench_serving` spends ~25 s importing before it
sends anything, which the runner would pay per point.

Two things are recorded beside what bench_serving writes, without changing what it does:
- per request, the wall-clock time the client sent it and received its end (bench_serving keeps only relative
  times), so that its records can be joined with the server's per-request timestamps;
- the server's Prometheus metrics text just before and after the run (`/metrics`, with `--enable-metrics`).

This module imports SGLang, so only the child process imports it; nothing else in simperf does.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any

DONE = "client.done"
FAILED = "client.failed"


def parse_bench_args(serving: Any, argv: list[str]) -> Any:
    """bench_serving's argparse Namespace for argv, from its own parser (cli_main builds it, then calls
    run_benchmark, which is swapped for a catcher for the duration)."""
    caught: dict[str, Any] = {}
    real = serving.run_benchmark

    def catch(args: Any) -> None:
        caught["args"] = args

    saved_argv = sys.argv
    serving.run_benchmark = catch
    sys.argv = ["bench_serving", *argv]
    try:
        serving.cli_main()
    finally:
        serving.run_benchmark = real
        sys.argv = saved_argv
    return caught["args"]


def timed_request_func(original: Any, records: list[dict[str, Any]]) -> Any:
    """bench_serving's request function, recording each call's wall-clock send and end times."""

    async def timed(request_func_input: Any, pbar: Any = None) -> Any:
        sent = time.time()
        out = await original(request_func_input=request_func_input, pbar=pbar)
        records.append(
            {
                "send_s": sent,
                "end_s": time.time(),
                "prompt_len": int(out.prompt_len),
                "output_len": int(out.output_len),
                "ttft_s": float(out.ttft),
                "latency_s": float(out.latency),
                "success": bool(out.success),
            }
        )
        return out

    return timed


def fetch(url: str, timeout: float = 10) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read().decode("utf-8", "replace")
    except Exception:  # e.g. a server without --enable-metrics has no /metrics: nothing to record
        return None


def server_state(base_url: str) -> str | None:
    return fetch(f"{base_url}/server_info", timeout=30) or fetch(f"{base_url}/get_server_info", timeout=30)


def scrape_metrics(base_url: str) -> str | None:
    return fetch(f"{base_url}/metrics")


def run_one(serving: Any, job: dict[str, Any]) -> None:
    work = Path(job["work_dir"])
    work.mkdir(parents=True, exist_ok=True)
    args = parse_bench_args(serving, job["argv"])
    base_url = args.base_url or f"http://{args.host}:{args.port}"
    records: list[dict[str, Any]] = []
    original = serving.ASYNC_REQUEST_FUNCS[args.backend]
    serving.ASYNC_REQUEST_FUNCS[args.backend] = timed_request_func(original, records)
    before = scrape_metrics(base_url)
    info_before = server_state(base_url)
    if info_before is not None:
        (work / "server_info_before.json").write_text(info_before, encoding="utf-8")
    window = {"start_s": time.time()}
    try:
        serving.run_benchmark(args)
    finally:
        serving.ASYNC_REQUEST_FUNCS[args.backend] = original
        window["end_s"] = time.time()
        window["warmup_requests"] = int(getattr(args, "warmup_requests", 1) or 0)
        (work / "client_requests.json").write_text(json.dumps(records), encoding="utf-8")
        (work / "window.json").write_text(json.dumps(window), encoding="utf-8")
    after = scrape_metrics(base_url)
    for name, text in (("metrics_before.txt", before), ("metrics_after.txt", after)):
        if text is not None:
            (work / name).write_text(text, encoding="utf-8")
    # the scheduler's state after the run: memory use, and with SGLANG_RECORD_STEP_TIME its decode step times
    # (seconds per iteration, averaged over each logging interval, keyed by running requests)
    info = server_state(base_url)
    if info is not None:
        (work / "server_info_after.json").write_text(info, encoding="utf-8")


def main(jobs_path: str) -> int:
    import sglang.benchmark.serving as serving  # the GPU host's SGLang install

    spec = json.loads(Path(jobs_path).read_text(encoding="utf-8"))
    deadline = spec.get("deadline_s")
    failures = 0
    for job in spec["jobs"]:
        work = Path(job["work_dir"])
        if (work / DONE).exists():
            continue
        if deadline is not None and time.time() + job["expected_s"] > deadline:
            print(
                f"[simperf-client] run {job['name']} deferred: {deadline - time.time():.0f} s left, "
                f"expected {job['expected_s']:.0f} s",
                flush=True,
            )
            break
        print(f"[simperf-client] run {job['name']} start", flush=True)
        t0 = time.time()
        try:
            run_one(serving, job)
        except BaseException as e:  # noqa: BLE001 - one failed point must not end the others
            failures += 1
            work.mkdir(parents=True, exist_ok=True)
            (work / FAILED).write_text("".join(traceback.format_exception(e))[-8000:], encoding="utf-8")
            print(f"[simperf-client] run {job['name']} FAILED: {e!r}", flush=True)
            if isinstance(e, KeyboardInterrupt):
                raise
            continue
        (work / DONE).write_text(f"{time.time() - t0:.1f}\n", encoding="utf-8")
        print(f"[simperf-client] run {job['name']} done in {time.time() - t0:.0f}s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
