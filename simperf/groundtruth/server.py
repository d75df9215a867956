"""Start, reuse and stop a real SGLang server for a ground-truth plan, and read what it says about itself.

The server runs in its own session (setsid), so it outlives the runner: a second `simperf groundtruth run` on
the same warm host reuses it when its fingerprint (model, weights, flags, environment) matches, instead of
paying the first start again (~340 s on a fresh H100, most of it CUDA-graph capture and JIT compiles).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATE_FILE = "server_state.json"
READY_LINE = "The server is fired up and ready to roll"  # sglang/srt/entrypoints/http_server.py (0.5.17)


class ServerFailed(RuntimeError):
    """The server exited or never became healthy; `log_tail` holds the end of its log."""

    def __init__(self, message: str, log_tail: str) -> None:
        super().__init__(message)
        self.log_tail = log_tail


@dataclass(frozen=True)
class RunningServer:
    pid: int
    port: int
    fingerprint: str
    log_path: Path
    started_s: float
    ready_s: float  # seconds from launch to healthy (0 when reused)
    reused: bool

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def http_get(url: str, timeout: float = 5.0) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read() if r.status == 200 else None
    except Exception:  # refused, timed out, 5xx: not healthy (yet)
        return None


def pid_alive(pid: int) -> bool:
    """Whether the process runs. A server this process started and that exited stays a zombie until reaped, which
    os.kill(pid, 0) still finds: reap it first (a server left by an earlier call is not our child)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def log_tail(path: Path, chars: int = 6000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - chars))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def reusable(state_dir: Path, fingerprint: str) -> RunningServer | None:
    """The server a previous call left running, if it is the one wanted and healthy."""
    state_path = state_dir / STATE_FILE
    if not state_path.exists():
        return None
    state = json.loads(state_path.read_text(encoding="utf-8"))
    if state.get("fingerprint") != fingerprint or not pid_alive(int(state["pid"])):
        return None
    if http_get(f"http://127.0.0.1:{state['port']}/health") is None:
        return None
    return RunningServer(
        int(state["pid"]),
        int(state["port"]),
        fingerprint,
        Path(state["log_path"]),
        state["started_s"],
        0.0,
        True,
    )


def stop_server(state_dir: Path, grace_s: float = 20.0) -> None:
    """Stop the server recorded in state_dir (its whole process group); waits at most grace_s, then kills.
    One GPU serves one server at a time, so there is one state file per host work directory."""
    state_path = state_dir / STATE_FILE
    if not state_path.exists():
        return
    pid = int(json.loads(state_path.read_text(encoding="utf-8"))["pid"])
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except OSError:
            break
        deadline = time.time() + wait
        while pid_alive(pid) and time.time() < deadline:
            time.sleep(0.5)
        if not pid_alive(pid):
            break
    state_path.unlink(missing_ok=True)


def start_server(
    state_dir: Path,
    log_path: Path,
    argv: list[str],
    env: dict[str, str],
    fingerprint: str,
    port: int,
    timeout_s: float,
    on_wait: Callable[[float], None] | None = None,
    module: str = "sglang.launch_server",
) -> RunningServer:
    """Launch `python -m <module> argv` (SGLang's launch_server; tests give a CPU stand-in) in its own session and
    wait until it is healthy."""
    stop_server(state_dir)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.time()
    with open(log_path, "ab") as log:
        log.write(f"\n===== simperf groundtruth: launch at {started:.3f}\n".encode())
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            start_new_session=True,
        )
    state = {
        "pid": proc.pid,
        "port": port,
        "fingerprint": fingerprint,
        "log_path": str(log_path),
        "started_s": started,
    }
    (state_dir / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
    offset = log_path.stat().st_size
    while True:
        elapsed = time.time() - started
        if proc.poll() is not None:
            (state_dir / STATE_FILE).unlink(missing_ok=True)
            raise ServerFailed(
                f"server exited with code {proc.returncode} after {elapsed:.0f} s", log_tail(log_path)
            )
        if elapsed > timeout_s:
            stop_server(state_dir)
            raise ServerFailed(f"server not healthy after {timeout_s:.0f} s", log_tail(log_path))
        if _ready_since(log_path, offset) and http_get(f"http://127.0.0.1:{port}/health") is not None:
            return RunningServer(proc.pid, port, fingerprint, log_path, started, elapsed, False)
        if on_wait is not None:
            on_wait(elapsed)
        time.sleep(2.0)


def _ready_since(log_path: Path, offset: int) -> bool:
    with open(log_path, "rb") as f:
        f.seek(offset)
        return READY_LINE.encode() in f.read()


# ------------------------------------------------------------------------------------------ what the server says

_FACTS = {
    "max_total_num_tokens": re.compile(r"max_total_num_tokens=(\d+)"),
    "chunked_prefill_size": re.compile(r"chunked_prefill_size=(-?\d+)"),
    "max_prefill_tokens": re.compile(r"max_prefill_tokens=(\d+)"),
    "max_running_requests": re.compile(r"max_running_requests=(\d+)"),
    "context_len": re.compile(r"context_len=(\d+)"),
    "available_gpu_mem_gb_after_init": re.compile(r"available_gpu_mem=([\d.]+) GB"),
    "weight_load_mem_usage_gb": re.compile(r"Load weight end\..*?mem usage=([\d.]+) GB"),
}
# Start-up lines worth keeping verbatim (memory, KV pool, graph capture, backend choice); the rest is noise.
_STARTUP_KEEP = re.compile(
    r"max_total_num_tokens|KV Cache is allocated|Memory pool end|Load weight|Capture|cuda graph|attention backend|"
    r"Attention backend|page_size|mem_fraction|server_args=|Init torch distributed|fired up",
    re.IGNORECASE,
)


def startup_facts(log_text: str) -> dict[str, Any]:
    """Numbers SGLang logs at start-up (the last occurrence of each, for a log holding several starts)."""
    facts: dict[str, Any] = {}
    for key, pattern in _FACTS.items():
        found = pattern.findall(log_text)
        if found:
            value = found[-1]
            facts[key] = float(value) if "." in value else int(value)
    return facts


def startup_lines(log_text: str, limit: int = 200) -> list[str]:
    """The start-up log lines worth keeping (of the last start in the log)."""
    last = log_text.rsplit("===== simperf groundtruth: launch at", 1)[-1]
    kept = [line[:2000] for line in last.splitlines() if _STARTUP_KEEP.search(line)]
    return kept[:limit]


def server_info(base_url: str) -> dict[str, Any] | None:
    """SGLang's /server_info (resolved server args and the scheduler's internal state), or None. 0.5.17 still
    answers the older /get_server_info too (deprecated there)."""
    raw = http_get(f"{base_url}/server_info", timeout=30.0) or http_get(
        f"{base_url}/get_server_info", timeout=30.0
    )
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return None
