"""Where a measured request's time goes: client, API server, scheduler, GPU — from a run's own timestamps.

Per request, `requests.parquet` holds the client's send time and first-chunk time (bench_serving's TTFT) and the
server's timestamps (SGLang 0.5.17, `--enable-metrics --export-metrics-to-file`; observability/req_time_stats.py):

    client send ─► API server received ─► dispatched to the scheduler ─► waiting queue ─► first scheduled
      ─► prefill result processed ─► first chunk sent by the API server ─► first chunk parsed by the client

The stages, each a median over a run's requests:
- `http_in`: client send → API server received (client request set-up, HTTP, FastAPI);
- `api_server`: received → dispatched (request handling, tokenization; prompts are token ids here);
- `to_scheduler`: dispatched → waiting queue (ZMQ, and waiting for the scheduler loop to receive);
- `queue`: waiting → first scheduled (the scheduler's queue: admission, running batch);
- `prefill`: first scheduled → prefill result processed (the prefill forward, one overlapped decode launch);
- `out`: prefill processed → first chunk sent (output processing, detokenizer, API server);
- `to_client`: first chunk sent → parsed by the client.

`service_times` turns the concurrency-1 runs into the per-request host costs the simulator uses
(scenario.models.Overheads), so each default names the runs it was measured on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from simperf.groundtruth.hosts import feeds_defaults, host_speed_of
from simperf.groundtruth.index import run_status
from simperf.jsonl import read_json_object

STAGES = ("http_in", "api_server", "to_scheduler", "queue", "prefill", "out", "to_client")
# Runs the service times come from: one request at a time, on an idle scheduler, prompts short enough that the
# prefill forward's host time, not its kernels, sets the prefill (c1-128-128) or long enough that it does not.
SERVICE_RUNS = "c1-"
HOST_BOUND_PREFILL_RUN = "c1-128-128"


@dataclass(frozen=True)
class RunStages:
    run: str  # gpu/server/run
    requests: int
    ttft_ms: float
    stages_ms: dict[str, float]
    attention_backend: str = ""  # the server's resolved --attention-backend (server_facts.json)
    host_speed: float | None = None  # hardware.host_speed of the host it ran on (groundtruth/hosts.py)
    feeds_defaults: bool = True  # False: a check-only plan's run (groundtruth/hosts.py, CHECK_ONLY_PLANS)


_TIMES = ("client_send_s", "server_received_s", "server_dispatched_s", "server_waiting_entry_s",
          "server_first_scheduled_s", "server_prefill_finished_s", "server_first_chunk_sent_s", "ttft_ms")  # fmt: skip


def _stage_arrays(path: Path) -> tuple[dict[str, np.ndarray], np.ndarray]:
    try:
        t = pq.read_table(path).to_pydict()
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"{path}: not a Parquet file ({str(exc).splitlines()[0]})") from None
    missing = [name for name in _TIMES if name not in t]
    if missing:  # another table under this name ended with the bare KeyError "client_send_s"
        raise ValueError(f"{path}: not a run's requests table: no column {', '.join(missing)}")

    def col(name: str) -> np.ndarray:
        return np.array([np.nan if v is None else v for v in t[name]], dtype=np.float64)

    send, recv, disp = col("client_send_s"), col("server_received_s"), col("server_dispatched_s")
    wait, first = col("server_waiting_entry_s"), col("server_first_scheduled_s")
    done, sent = col("server_prefill_finished_s"), col("server_first_chunk_sent_s")
    ttft_s = col("ttft_ms") / 1e3
    seen = send + ttft_s
    # A retracted request re-enters the waiting queue: SGLang's export then holds its last waiting entry, later
    # than its first scheduling, so the waiting entry (and its two stages) are unknown for it.
    wait = np.where(wait > first, np.nan, wait)
    stages = {
        "http_in": recv - send,
        "api_server": disp - recv,
        "to_scheduler": wait - disp,
        "queue": first - wait,
        "prefill": done - first,
        "out": sent - done,
        "to_client": seen - sent,
    }
    return {k: v * 1e3 for k, v in stages.items()}, ttft_s * 1e3


def run_stages(run_dir: Path) -> RunStages | None:
    path = run_dir / "requests.parquet"
    if not path.exists():
        return None
    stages, ttft = _stage_arrays(path)
    ok = ~np.isnan(stages["http_in"])
    if not ok.any():
        return None
    return RunStages(
        run="/".join(run_dir.parts[-3:]),
        requests=int(ok.sum()),
        ttft_ms=float(np.median(ttft[ok])),
        stages_ms={k: float(np.nanmedian(v[ok])) for k, v in stages.items()},
        attention_backend=_attention_backend(run_dir.parent),
        host_speed=host_speed_of(run_dir),
        feeds_defaults=feeds_defaults(run_dir),
    )


def _attention_backend(server_dir: Path) -> str:
    facts = server_dir / "server_facts.json"
    if not facts.exists():
        return ""
    info = read_json_object(facts).get("server_info") or {}
    return str(info.get("attention_backend") or "")


def corpus_stages(corpus: Path) -> list[RunStages]:
    out = []
    for status in sorted(corpus.glob("*/*/*/run.json")):
        if run_status(status.parent).get("status") != "ok":
            continue
        if not (status.parent / "requests.parquet").exists():  # an ok run is recorded with its requests
            raise ValueError(f"{status.parent}: run.json says ok, but its requests.parquet is missing")
        stages = run_stages(status.parent)
        if stages is not None:
            out.append(stages)
    return out


@dataclass(frozen=True)
class ServiceTimes:
    ingress_ms: float  # client send -> scheduler waiting queue, idle scheduler (median over the c1 runs)
    egress_ms: float  # prefill processed -> first chunk at the client (median over the c1 runs)
    # the prefill stage of the short-prompt c1 run, per attention backend (the extend's host time differs: SGLang's
    # flashinfer backend plans and wraps each layer's attention in Python, FA3 calls one kernel)
    host_bound_prefill_ms: dict[str, float]
    ingress_runs: tuple[str, ...]
    prefill_runs: dict[str, str]
    host_speed: float | None = None  # the host these were measured on (hardware.host_speed; None: not known)


def service_times(stages: list[RunStages]) -> ServiceTimes:
    """Per-request host costs at concurrency 1, on the host most concurrency-1 runs of a known host speed came from
    (they are host CPU time: hosts differ, groundtruth/hosts.py). The ingress runs exclude servers whose c1 requests met a busy
    scheduler (the finished request's overlapped extra iteration longer than the HTTP path: a `to_scheduler`
    above 5 ms), since the simulator models that wait itself; a check-only plan's runs never count."""
    # a host cost is scaled by its host's speed, so only runs of a host whose speed is known can give one (the
    # lent multi-GPU hosts' plans that measure a rank factor record c1 runs too: groundtruth/hosts.py)
    c1 = [
        s
        for s in stages
        if s.run.split("/")[-1].startswith(SERVICE_RUNS) and s.feeds_defaults and s.host_speed is not None
    ]
    speeds = [s.host_speed for s in c1]
    host = max(set(speeds), key=speeds.count) if speeds else None
    c1 = [s for s in c1 if s.host_speed == host]
    idle = [s for s in c1 if s.stages_ms["to_scheduler"] <= 5.0]
    ingress = [s.stages_ms["http_in"] + s.stages_ms["api_server"] + s.stages_ms["to_scheduler"] for s in idle]
    egress = [s.stages_ms["out"] + s.stages_ms["to_client"] for s in c1]
    short = [s for s in c1 if s.run.endswith("/" + HOST_BOUND_PREFILL_RUN)]
    return ServiceTimes(
        ingress_ms=float(np.median(ingress)) if ingress else float("nan"),
        egress_ms=float(np.median(egress)) if egress else float("nan"),
        host_bound_prefill_ms={s.attention_backend: s.stages_ms["prefill"] for s in short},
        ingress_runs=tuple(s.run for s in idle),
        prefill_runs={s.attention_backend: s.run for s in short},
        host_speed=host,
    )


def markdown(stages: list[RunStages]) -> str:
    header = "| run | requests | TTFT | " + " | ".join(STAGES) + " |"
    lines = [
        "Medians per run, in ms (`simperf groundtruth overheads groundtruth/`).",
        "",
        header,
        "|---|---:|---:|" + "---:|" * len(STAGES),
    ]
    for s in stages:
        cells = " | ".join(f"{s.stages_ms[k]:.2f}" for k in STAGES)
        lines.append(f"| {s.run} | {s.requests} | {s.ttft_ms:.1f} | {cells} |")
    st = service_times(stages)
    lines += ["", service_times_line(st)]
    for backend, ms in sorted(st.host_bound_prefill_ms.items()):
        lines.append(
            f"Prefill stage of a 128-token prompt on an idle server, attention backend {backend} "
            f"({st.prefill_runs[backend]}): **{ms:.2f} ms**."
        )
    return "\n".join(lines) + "\n"


def service_times_line(st: ServiceTimes) -> str:
    """The service-time sentence; a time no run measured says so. A corpus without concurrency-1 runs of a known
    host (or whose c1 runs all met a busy scheduler) printed "**nan ms** (median of )" in bold, as a measurement."""
    if st.host_speed is None:
        return (
            "Per-request service times at concurrency 1: not measured: no concurrency-1 run (c1-*) of a host of "
            "known speed (groundtruth/hosts.py) in this corpus."
        )
    if st.ingress_runs:
        ingress = f"**{st.ingress_ms:.2f} ms** (median of {', '.join(st.ingress_runs)})"
    else:
        ingress = "not measured (every c1 run met a busy scheduler: `to_scheduler` above 5 ms)"
    return (
        f"Per-request service times at concurrency 1: ingress (client send → scheduler waiting queue, idle "
        f"scheduler) {ingress}; egress (prefill result processed → first chunk parsed by the client) "
        f"**{st.egress_ms:.2f} ms** (median over the c1 runs); both on the host of most concurrency-1 runs "
        f"(`hardware.host_speed` {st.host_speed})."
    )
