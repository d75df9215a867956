"""Reduce what groundtruth/profile_paced.sh brought back to what is committed (groundtruth/experiments/api-server-cpu-*).

usage: python3 groundtruth/reduce_paced.py SRC_DIR DEST_DIR [--stacks] [--every-ms N]
- bench-cC.jsonl -> bench-cC.json: bench_serving's summary, without the per-request arrays (generated texts,
  ITLs: megabytes; the derivation reads totals only) but with each request's TTFT;
- cpu-cC.csv (+ .names) -> cpu-cC.csv: `t_s,process,cpu_s` every 50 ms for the four processes of the output path
  (api: the server's main process, uvicorn + TokenizerManager; scheduler; detokenizer; client: bench_serving),
  t_s from the first sample, cpu_s that process' CPU time so far (compiler processes are summed as `jit`: a
  first-use kernel build, flashinfer's JIT, shows there);
- with --stacks, api-cC.txt (py-spy's samples of the API server: collapsed stacks, or in time order where the run
  set SPY_FORMAT=speedscope) is copied as it is;
- --every-ms N keeps a CPU sample every N ms instead of 50 (10: the sampler's own period, for pauses of tens of ms);
- export/sglang-request-metrics-*.log (the server's per-request export, --export-metrics-to-file) ->
  requests.csv: each request's tokens and server timestamps, seconds from the first request's receipt;
- cmd.txt, host.txt, server.log are copied.
"""

from __future__ import annotations

import collections
import json
import shutil
import sys
from pathlib import Path

KEEP_EVERY_NS = 50_000_000
PER_REQUEST = (
    "input_lens",
    "output_lens",
    "itls",
    "generated_texts",
    "errors",
    "cached_tokens",
    "cached_tokens_details",
)


def role(comm: str, cmd: str) -> str | None:
    if "launch_server" in cmd:
        return "api"
    if comm.startswith("sglang::schedul"):
        return "scheduler"
    if comm.startswith("sglang::detoken"):
        return "detokenizer"
    if comm == "python3" and "sglang.bench_serving" in cmd and "py-spy" not in cmd:
        return "client"
    if comm in (
        "ninja",
        "nvcc",
        "cicc",
        "ptxas",
        "cudafe++",
        "cc1plus",
        "gcc-real",
        "fatbinary",
        "nvlink",
        "ld",
    ):
        return "jit"
    return None


EXPORT_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "request_received_ts",
    "api_server_dispatch_finish_ts",
    "forward_entry_time",
    "prefill_finished_time",
    "request_finished_ts",
    "response_sent_to_client_ts",
)


def reduce_export(src: Path, dest: Path) -> None:
    """The server's per-request export -> requests.csv (times in seconds from the first receipt, receipt order)."""
    records = [
        json.loads(line) for f in sorted(src.glob("sglang-request-metrics-*.log")) for line in f.open()
    ]
    if not records:
        return
    records.sort(key=lambda r: r["request_received_ts"])
    t0 = records[0]["request_received_ts"]
    rows = [",".join(EXPORT_FIELDS)]
    for r in records:
        values = [r.get(k) for k in EXPORT_FIELDS]
        rows.append(",".join(
            "" if v is None else str(v) if i < 2 else f"{v - t0:.6f}" for i, v in enumerate(values)
        ))  # fmt: skip
    dest.write_text("\n".join(rows) + "\n")


def reduce_cpu(src: Path, dest: Path, keep_every_ns: int = KEEP_EVERY_NS) -> None:
    roles: dict[int, str] = {}
    for line in (src.parent / (src.name + ".names")).read_text().splitlines():
        pid, comm, *cmd = line.split("\t")
        r = role(comm, cmd[0] if cmd else "")
        if r:
            roles[int(pid)] = r
    samples: dict[int, dict[int, int]] = collections.defaultdict(dict)  # sample time -> pid -> CPU ns
    for line in src.read_text().splitlines()[1:]:
        t, pid, ns = (int(x) for x in line.split(","))
        if pid in roles:
            samples[t][pid] = ns
    latest: dict[int, int] = {}
    rows: list[str] = ["t_s,process,cpu_s"]
    t0 = last_kept = None
    for t in sorted(samples):
        latest.update(samples[t])  # a process not read at this sample keeps its last value
        t0 = t if t0 is None else t0
        if last_kept is None or t - last_kept >= keep_every_ns:
            last_kept = t
            total: dict[str, int] = collections.defaultdict(int)
            for p, v in latest.items():
                total[roles[p]] += v
            rows += [f"{(t - t0) / 1e9:.3f},{r},{v / 1e9:.4f}" for r, v in sorted(total.items())]
    dest.write_text("\n".join(rows) + "\n")


def main_args(src: Path, dest: Path, stacks: bool, keep_every_ns: int = KEEP_EVERY_NS) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    if (src / "export").is_dir():
        reduce_export(src / "export", dest / "requests.csv")
    for name in ("cmd.txt", "host.txt", "server.log"):
        shutil.copy(src / name, dest / name)
    for bench in sorted(src.glob("bench-c*.jsonl")):
        summary = json.loads(bench.read_text().splitlines()[0])
        summary = {k: v for k, v in summary.items() if k not in PER_REQUEST}
        (dest / (bench.stem + ".json")).write_text(json.dumps(summary, indent=1) + "\n")
        load = bench.stem.removeprefix("bench-")
        reduce_cpu(src / f"cpu-{load}.csv", dest / f"cpu-{load}.csv", keep_every_ns)
        if stacks and (src / f"api-{load}.txt").exists():
            shutil.copy(src / f"api-{load}.txt", dest / f"api-{load}.txt")


def main() -> None:
    every = sys.argv.index("--every-ms") + 1 if "--every-ms" in sys.argv else None
    keep = int(sys.argv[every]) * 1_000_000 if every else KEEP_EVERY_NS
    main_args(Path(sys.argv[1]), Path(sys.argv[2]), "--stacks" in sys.argv, keep)


if __name__ == "__main__":
    main()
