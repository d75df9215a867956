"""`simperf groundtruth run`: execute a plan on a GPU host where SGLang is installed, resumably.

For each server of the plan with runs not yet in the corpus: start (or reuse) the server, drive the pending runs
through one bench_serving child process, then collect each finished run into the corpus directory
(`<out>/<gpu>/<server>/<run>/`) and refresh `<out>/index.parquet`. A finished run is never redone; a crashed server
or a failed run is recorded (status, reason, log tail) and the plan goes on; a deadline stops starting new runs
in time, so the host can be handed back between calls and the next call resumes where this one stopped.

Host-side scratch (model directories, raw server logs, bench_serving's raw outputs) lives in the work directory,
never in the corpus: the corpus keeps only small files.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simperf.groundtruth import collect, modeldir, server
from simperf.groundtruth.client import DONE, FAILED
from simperf.groundtruth.index import write_index
from simperf.groundtruth.plan import (
    GroundTruthPlan,
    RunSpec,
    ServerSpec,
    flags_to_argv,
    server_fingerprint,
)
from simperf.hardware.catalog import device_gpu_key

# Observability switches of SGLang 0.5.17 (sglang/srt/environ.py) that only add logging: millisecond log times,
# the decode step times per running-request count in /get_server_info, iteration numbers in batch log lines.
SERVER_ENV = {"SGLANG_LOG_MS": "1", "SGLANG_RECORD_STEP_TIME": "1", "SGLANG_LOG_FORWARD_ITERS": "1"}
# Per-request server timestamps need Prometheus metrics on and the per-request export (server_args.py, 0.5.17).
TIMING_FLAGS = {"enable-metrics": True, "export-metrics-to-file": True}
DEFAULT_EXPECTED_S = (
    90.0  # a run without `expected_s` is assumed to take this long when checking the deadline
)
# sgl-deep-gemm: present only where the kit carried it (.dgkit); its import holds ~41 MiB before the weights
PACKAGES = (
    "sglang",
    "sglang-kernel",
    "flashinfer-python",
    "torch",
    "transformers",
    "triton",
    "sgl-deep-gemm",
)


class GroundTruthError(RuntimeError):
    """The runner cannot start (no GPU, no SGLang, bad plan); the message says what is missing."""


@dataclass
class RunnerOptions:
    out: Path
    work: Path
    deadline_s: float | None = None  # seconds from start after which no new run starts
    only: tuple[str, ...] = ()  # server names or server/run names; empty: everything
    port: int = 30000
    stop_after: bool = False
    retry_failed: bool = (
        False  # failed runs are settled (a server that cannot start would fail again) unless asked
    )
    python: str = sys.executable
    server_module: str = "sglang.launch_server"  # tests and rehearsals substitute a CPU stand-in
    say: Callable[[str], None] = field(default=lambda msg: print(msg, file=sys.stderr, flush=True))


def run_key(server_name: str, run_name: str) -> str:
    return f"{server_name}/{run_name}"


def preflight(python: str) -> None:
    if shutil.which("nvidia-smi") is None:
        raise GroundTruthError(
            "no GPU: nvidia-smi is not on PATH (ground truth needs a GPU host with SGLang)"
        )
    if importlib.util.find_spec("sglang") is None:
        raise GroundTruthError(
            "SGLang is not importable here: install it (pip install 'sglang[all]') or put its site on PYTHONPATH"
        )


def gpu_facts() -> dict[str, Any]:
    query = "name,memory.total,driver_version"
    out = (
        subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            check=False,
        )
        .stdout.strip()
        .splitlines()
    )
    if not out:
        raise GroundTruthError("nvidia-smi lists no GPU")
    name, mem_mib, driver = (x.strip() for x in out[0].split(","))
    header = subprocess.run(["nvidia-smi"], capture_output=True, text=True, check=False).stdout
    cuda = header.split("CUDA Version:")[1].split()[0] if "CUDA Version:" in header else None
    return {
        "gpu_name": name,
        "gpu_count": len(out),
        "gpu_memory_mib": int(float(mem_mib)),
        "driver_version": driver,
        "cuda_driver_version": cuda,
    }


def host_facts() -> dict[str, Any]:
    """The host CPU a run's host-side costs were measured on (its model name and logical cores), from
    /proc/cpuinfo; empty where that cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return {}
    models = [ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")]
    return {"cpu_model": models[0], "cpu_logical_cores": len(models)} if models else {}


def gpu_key(name: str) -> str:
    """The corpus directory a GPU's runs go in: the catalogue's key ('NVIDIA H200' -> 'h200'), or for a part it does
    not describe the device name itself ('NVIDIA H100 PCIe' -> 'nvidia-h100-pcie'), which `simperf accuracy` then
    lists as not predicted instead of scoring it as the SXM part (an H100 PCIe was filed under h100)."""
    return device_gpu_key(name) or re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            versions[pkg] = None
    return versions


def is_settled(dest: Path, retry_failed: bool) -> bool:
    """A run finished ok, or failed (unless failed runs are to be retried)."""
    status = dest / "run.json"
    if not status.exists():
        return False
    state = json.loads(status.read_text(encoding="utf-8")).get("status")
    return state == "ok" or (state == "failed" and not retry_failed)


def selected(opts: RunnerOptions, server_name: str, run_name: str | None = None) -> bool:
    if not opts.only:
        return True
    if run_name is None:
        return any(o == server_name or o.startswith(server_name + "/") for o in opts.only)
    return server_name in opts.only or run_key(server_name, run_name) in opts.only


@dataclass
class PlanRunner:
    plan: GroundTruthPlan
    plan_path: Path
    opts: RunnerOptions
    t0: float = field(default_factory=time.time)

    def left_s(self) -> float:
        return (
            float("inf") if self.opts.deadline_s is None else self.opts.deadline_s - (time.time() - self.t0)
        )

    def say(self, msg: str) -> None:
        self.opts.say(f"[groundtruth {time.time() - self.t0:6.1f}s] {msg}")

    def run(self) -> dict[str, int]:
        preflight(self.opts.python)
        facts = gpu_facts()
        gpu = gpu_key(facts["gpu_name"])
        env = {
            **facts,
            **host_facts(),
            "packages": package_versions(),
            "python": sys.version.split()[0],
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        gpu_dir = self.opts.out / gpu
        gpu_dir.mkdir(parents=True, exist_ok=True)
        (gpu_dir / "env.json").write_text(json.dumps(env, indent=1), encoding="utf-8")
        counts = {"ok": 0, "failed": 0, "pending": 0, "skipped": 0}
        for spec in self.plan.servers:
            if not selected(self.opts, spec.name):
                continue
            pending = [
                r
                for r in spec.runs
                if selected(self.opts, spec.name, r.name)
                and not is_settled(gpu_dir / spec.name / r.name, self.opts.retry_failed)
            ]
            counts["skipped"] += sum(1 for r in spec.runs if selected(self.opts, spec.name, r.name)) - len(
                pending
            )
            if not pending:
                self.say(f"{spec.name}: all runs done")
                continue
            if self.left_s() < min(r.expected_s or DEFAULT_EXPECTED_S for r in pending) + 30:
                self.say(f"{spec.name}: not enough time left for its runs; stopping here")
                counts["pending"] += len(pending)
                break
            for status in self.serve(spec, pending, gpu_dir / spec.name, env).values():
                counts[status] += 1
        write_index(self.opts.out)
        if self.opts.stop_after:
            server.stop_server(self.opts.work)
        return counts

    # ------------------------------------------------------------------------------------------------ one server

    def serve(self, spec: ServerSpec, runs: list[RunSpec], dest: Path, env: dict[str, Any]) -> dict[str, str]:
        work = self.opts.work / spec.name
        work.mkdir(parents=True, exist_ok=True)
        model_path = self.model_dir(spec)
        argv, fingerprint = self.server_argv(spec, model_path, work)
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "server_cmd.txt").write_text(self.server_cmd_text(spec, argv), encoding="utf-8")
        try:
            running = self.ensure_server(spec, argv, fingerprint, work)
        except server.ServerFailed as e:
            self.say(f"{spec.name}: SERVER FAILED: {e}")
            for r in runs:
                self.write_status(dest / r.name, "failed", reason=f"server: {e}", log_tail=e.log_tail)
            return {r.name: "failed" for r in runs}
        self.write_server_facts(dest, running, env)
        jobs = [self.job(spec, r, model_path, work) for r in runs]
        for r in runs:
            (dest / r.name).mkdir(parents=True, exist_ok=True)
            (dest / r.name / "bench_cmd.txt").write_text(self.bench_cmd_text(spec, r), encoding="utf-8")
        self.drive(spec, jobs, work, running)
        return {r.name: self.collect(spec, r, work, dest) for r in runs}

    def model_dir(self, spec: ServerSpec) -> Path:
        path, config = self._write_model(spec.model)
        modeldir.write_prompt_source(self.opts.work / "prompt_source.json", int(config["vocab_size"]))
        return path

    def _write_model(self, model: str) -> tuple[Path, dict[str, Any]]:
        """A plan's model (or draft model) as a servable directory under the work dir, and its config."""
        config = modeldir.source_config(model)
        name = Path(model).name
        if name == "config.json":  # a config file names its model by its directory
            name = Path(model).parent.name
        path = self.opts.work / "models" / name.removesuffix(".json")
        modeldir.write_model_dir(config, path)
        return path, config

    def server_argv(self, spec: ServerSpec, model_path: Path, work: Path) -> tuple[list[str], str]:
        flags = {**TIMING_FLAGS, **self.plan.server_flags(spec)}
        weights = model_path if spec.weights == "dummy" else Path(spec.weights)
        fixed = [
            "--model-path",
            str(weights),
            "--tokenizer-path",
            str(model_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.opts.port),
        ]
        if spec.weights == "dummy":
            fixed += ["--load-format", "dummy"]
        if spec.draft_model is not None:
            # SGLang loads the draft in the server's --load-format: random weights here too
            fixed += ["--speculative-draft-model-path", str(self._write_model(spec.draft_model)[0])]
        if flags.get("export-metrics-to-file"):
            fixed += ["--export-metrics-to-file-dir", str(work / "export")]
        return fixed + flags_to_argv(flags), server_fingerprint(spec, flags)

    def server_cmd_text(self, spec: ServerSpec, argv: list[str]) -> str:
        env = " ".join(f"{k}={v}" for k, v in {**SERVER_ENV, **spec.env}.items())
        model_note = (
            f"# model directory: `simperf groundtruth modeldir {spec.model} DIR` (weights: {spec.weights})"
        )
        if spec.draft_model is not None:
            model_note += f"\n# draft model directory: `simperf groundtruth modeldir {spec.draft_model} DIR` (random weights)"
        # quoted as a shell would need it: a flag value such as --json-model-override-args' JSON has spaces and quotes
        return f"{model_note}\n{env} python -m sglang.launch_server {shlex.join(argv)}\n"

    def ensure_server(
        self, spec: ServerSpec, argv: list[str], fingerprint: str, work: Path
    ) -> server.RunningServer:
        running = server.reusable(self.opts.work, fingerprint)
        if running is not None:
            self.say(f"{spec.name}: reusing the running server (pid {running.pid})")
            return running
        self.say(f"{spec.name}: starting server")
        last = [0.0]

        def waiting(elapsed: float) -> None:
            if elapsed - last[0] >= 30:
                last[0] = elapsed
                self.say(f"{spec.name}: waiting for the server ({elapsed:.0f} s)")

        timeout = min(spec.startup_timeout_s, max(self.left_s() - 10, 1))
        running = server.start_server(
            self.opts.work,
            work / "server.log",
            argv,
            {**SERVER_ENV, **spec.env},
            fingerprint,
            self.opts.port,
            timeout,
            waiting,
            self.opts.server_module,
        )
        self.say(f"{spec.name}: server ready after {running.ready_s:.0f} s")
        return running

    def write_server_facts(self, dest: Path, running: server.RunningServer, env: dict[str, Any]) -> None:
        log_text = running.log_path.read_text(encoding="utf-8", errors="replace")
        facts_path = dest / "server_facts.json"
        previous = json.loads(facts_path.read_text(encoding="utf-8")) if facts_path.exists() else {}
        facts = {
            "startup": server.startup_facts(log_text),
            "startup_s": running.ready_s if not running.reused else previous.get("startup_s"),
            "server_info": server.server_info(running.base_url),
            "startup_log": server.startup_lines(log_text),
            "env": env,
        }
        facts_path.write_text(json.dumps(facts, indent=1), encoding="utf-8")

    # ------------------------------------------------------------------------------------------------ the runs

    def client_argv(self, spec: ServerSpec, run: RunSpec, model_path: Path, work: Path) -> list[str]:
        fixed = [
            "--backend",
            "sglang",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.opts.port),
            "--model",
            str(model_path),
            "--tokenizer",
            str(model_path),
            "--dataset-path",
            str(self.opts.work / "prompt_source.json"),
            "--output-file",
            str(work / run.name / "bench.jsonl"),
            "--output-details",
        ]
        return fixed + flags_to_argv(self.plan.client_flags(run))

    def bench_cmd_text(self, spec: ServerSpec, run: RunSpec) -> str:
        argv = self.client_argv(spec, run, Path("MODEL_DIR"), Path("WORK"))
        note = "# MODEL_DIR as in server_cmd.txt; --dataset-path: `simperf groundtruth modeldir --prompts`"
        return f"{note}\npython -m sglang.bench_serving {shlex.join(argv)}\n"

    def job(self, spec: ServerSpec, run: RunSpec, model_path: Path, work: Path) -> dict[str, Any]:
        run_work = work / run.name
        if run_work.exists():  # a run that did not finish starts over
            shutil.rmtree(run_work)
        return {
            "name": run.name,
            "argv": self.client_argv(spec, run, model_path, work),
            "work_dir": str(run_work),
            "expected_s": run.expected_s or DEFAULT_EXPECTED_S,
        }

    def drive(
        self, spec: ServerSpec, jobs: list[dict[str, Any]], work: Path, running: server.RunningServer
    ) -> None:
        deadline = None if self.opts.deadline_s is None else self.t0 + self.opts.deadline_s
        (work / "jobs.json").write_text(json.dumps({"deadline_s": deadline, "jobs": jobs}), encoding="utf-8")
        self.say(f"{spec.name}: driving {len(jobs)} run(s): {', '.join(j['name'] for j in jobs)}")
        with open(work / "client.log", "ab") as log:
            child = subprocess.Popen(
                [self.opts.python, "-m", "simperf.groundtruth.client", str(work / "jobs.json")],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            seen: set[str] = set()
            while child.poll() is None:
                time.sleep(2.0)
                self.report_progress(spec, jobs, seen)
                if not server.pid_alive(running.pid):
                    child.kill()
                    child.wait()
                    break
            self.report_progress(spec, jobs, seen)
        if not server.pid_alive(running.pid):  # during the runs, or as the last one finished
            self.say(f"{spec.name}: SERVER DIED during the runs")
            (work / "server_died").write_text(server.log_tail(running.log_path), encoding="utf-8")

    def report_progress(self, spec: ServerSpec, jobs: list[dict[str, Any]], seen: set[str]) -> None:
        for j in jobs:
            work = Path(j["work_dir"])
            for marker, word in ((DONE, "done"), (FAILED, "FAILED")):
                if (work / marker).exists() and j["name"] not in seen:
                    seen.add(j["name"])
                    self.say(f"{spec.name}/{j['name']}: {word}")

    def collect(self, spec: ServerSpec, run: RunSpec, work: Path, dest: Path) -> str:
        run_work, run_dest = work / run.name, dest / run.name
        died = work / "server_died"
        if (run_work / DONE).exists():
            try:
                summary = collect.collect_run(run_work, run_dest, work / "server.log", work / "export")
            except (OSError, ValueError, KeyError) as e:
                self.write_status(run_dest, "failed", reason=f"collect: {e!r}")
                return "failed"
            if summary["errors"]:  # kept for inspection, but not ground truth of the configuration asked for
                tail = died.read_text(encoding="utf-8") if died.exists() else None
                reason = f"{summary['errors']} of {summary['requests']} requests failed"
                self.write_status(run_dest, "failed", reason=reason, log_tail=tail, **summary)
                return "failed"
            self.write_status(run_dest, "ok", **summary)
            return "ok"
        if died.exists() and run_work.exists():  # it started against a server that was gone or going
            self.write_status(
                run_dest, "failed", reason="server died", log_tail=died.read_text(encoding="utf-8")
            )
            return "failed"
        if (run_work / FAILED).exists():
            self.write_status(
                run_dest,
                "failed",
                reason="bench_serving failed",
                log_tail=(run_work / FAILED).read_text(encoding="utf-8")[-4000:],
            )
            return "failed"
        if (work / "server_died").exists():
            self.write_status(
                run_dest,
                "failed",
                reason="server died",
                log_tail=(work / "server_died").read_text(encoding="utf-8"),
            )
            return "failed"
        return "pending"  # not started before the deadline: the next call does it

    def write_status(self, dest: Path, status: str, **extra: Any) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        record = {"status": status, "plan": str(self.plan_path), "recorded_at": time.time(), **extra}
        (dest / "run.json").write_text(json.dumps(record, indent=1), encoding="utf-8")


def run_plan(plan: GroundTruthPlan, plan_path: Path, opts: RunnerOptions) -> dict[str, int]:
    opts.out, opts.work = opts.out.resolve(), opts.work.resolve()
    opts.out.mkdir(parents=True, exist_ok=True)
    opts.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return PlanRunner(plan, plan_path, opts).run()
