"""The tools behind groundtruth/experiments/api-server-cpu-*: the CPU sampler that runs beside a served benchmark, and
the reduction of what it brings back to the committed files that hostcosts reads (docs/groundtruth.md)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from samplers import SPIN, sample_beside

GROUNDTRUTH = Path(__file__).resolve().parent.parent / "groundtruth"
pytestmark = pytest.mark.skipif(
    not Path("/proc/self/schedstat").exists(), reason="needs Linux /proc schedstat"
)


def test_the_sampler_reads_the_cpu_time_of_a_process_and_its_children(tmp_path):
    # a parent that sleeps and a child that spins: the child is found through the parent and its time grows
    child = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {SPIN.format(seconds=2.5)!r}]).wait()"
    out, parent = sample_beside(tmp_path, "cpu_sampler.py", 10, [sys.executable, "-c", child], 2.0)
    rows = list(csv.DictReader(out.open()))
    by_pid: dict[str, list[tuple[int, int]]] = {}
    for row in rows:
        by_pid.setdefault(row["pid"], []).append((int(row["t_ns"]), int(row["cpu_ns"])))
    names = (tmp_path / "cpu_sampler.csv.names").read_text()
    assert str(parent) in by_pid and len(by_pid) == 2, names  # the parent and the child it started
    child = max(by_pid.values(), key=lambda samples: samples[-1][1] - samples[0][1])
    assert all(b[1] >= a[1] for a, b in zip(child, child[1:], strict=False))  # CPU time never goes back
    busy = (child[-1][1] - child[0][1]) / (child[-1][0] - child[0][0])
    assert busy > 0.5  # a spinning process is on a core most of the time


def test_the_reduction_keeps_the_summary_and_the_four_processes(tmp_path):
    sys.path.insert(0, str(GROUNDTRUTH))
    try:
        import reduce_paced
    finally:
        sys.path.remove(str(GROUNDTRUTH))
    src, dest = tmp_path / "paced", tmp_path / "reduced"
    src.mkdir()
    for name in ("cmd.txt", "host.txt", "server.log"):
        (src / name).write_text(name)
    bench = {
        "max_concurrency": 4,
        "median_tpot_ms": 1.0,
        "itls": [[1.0]],
        "generated_texts": ["x"],
        "ttfts": [2.0],
    }
    (src / "bench-c4.jsonl").write_text(json.dumps(bench) + "\n")
    (src / "cpu-c4.csv.names").write_text(
        "10\tpython3\tpython3 -m sglang.launch_server --model-path m\n"
        "11\tsglang::schedul\tsglang::scheduler\n"
        "12\tpython3\tpython3 -m sglang.bench_serving --backend sglang\n"
        "13\tbash\tbash groundtruth/profile_paced.sh 585\n"
        "14\tnvcc\tnvcc -c cascade.cu\n"
    )
    # every 10 ms for 100 ms: the API server uses half a core, the shell is not kept
    lines = ["t_ns,pid,cpu_ns"]
    for i in range(11):
        t = 1_000_000_000 + i * 10_000_000
        lines += [
            f"{t},10,{i * 5_000_000}",
            f"{t},11,{i * 10_000_000}",
            f"{t},12,0",
            f"{t},13,7",
            f"{t},14,{i}",
        ]
    (src / "cpu-c4.csv").write_text("\n".join(lines) + "\n")
    (src / "export").mkdir()
    record = {
        "prompt_tokens": 128,
        "completion_tokens": 8,
        "request_received_ts": 100.5,
        "prefill_finished_time": 100.6,
    }
    (src / "export" / "sglang-request-metrics-1.log").write_text(
        json.dumps({**record, "request_received_ts": 101.0}) + "\n" + json.dumps(record) + "\n"
    )
    reduce_paced.main_args(src, dest, stacks=False)
    exported = list(csv.DictReader((dest / "requests.csv").open()))
    assert [r["request_received_ts"] for r in exported] == [
        "0.000000",
        "0.500000",
    ]  # receipt order, from the first
    assert exported[0]["prefill_finished_time"] == "0.100000" and exported[0]["forward_entry_time"] == ""
    summary = json.loads((dest / "bench-c4.json").read_text())
    assert summary["ttfts"] == [2.0] and "itls" not in summary and "generated_texts" not in summary
    rows = list(csv.DictReader((dest / "cpu-c4.csv").open()))
    assert {row["process"] for row in rows} == {"api", "scheduler", "client", "jit"}
    api = [(float(r["t_s"]), float(r["cpu_s"])) for r in rows if r["process"] == "api"]
    assert [t for t, _ in api] == [0.0, 0.05, 0.1]  # one sample in five kept
    assert api[-1][1] == pytest.approx(0.05)  # 100 ms at half a core


def test_a_chunk_of_a_1k_output_costs_the_api_server_twice_a_512_one():
    """docs/overheads.md: 124.7 us of API-server CPU per chunk at 1,024 outputs (128 streams) against 64.9 at 512."""
    from simperf.accuracy.hostcosts import api_server_cpu_us_per_chunk

    experiments = GROUNDTRUTH / "experiments"
    long = api_server_cpu_us_per_chunk(experiments / "api-server-cpu-1k-h100" / "bench-c128")
    short = api_server_cpu_us_per_chunk(experiments / "api-server-cpu-h100" / "plain" / "bench-c128")
    assert long == pytest.approx(124.7, abs=0.1) and short == pytest.approx(64.9, abs=0.1)
    assert long / short == pytest.approx(1.92, abs=0.01)
