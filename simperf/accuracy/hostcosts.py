"""The host costs `Overheads` carries, recomputed from the measurements they came from (docs/overheads.md).

Four of them were measured with SGLang's own `sglang.benchmark.one_batch` beside the served runs
(groundtruth/forwards/, recorded by groundtruth/profile_forward.sh):

* `eager_extend_us_per_kernel`: DeepSeek-V2-Lite's 1,024-token prefill, which SGLang 0.5.17 runs without a prefill
  CUDA graph. Its clean latency over the kernels simperf counts in that forward. The profiled run of the same
  forward (`summary.jsonl`) shows it is the host's time, not the GPU's: the kernels keep the GPU busy a third of it.
* `eager_extend_us_per_kernel_dense`: the same for a dense model, Qwen3-8B's 128-token prefill with
  `--disable-cuda-graph` (H100), whose profile shows the GPU busy a quarter of it.
* `eager_extend_rank_factor` (and `_dense`): the same model's one_batch prefill at TP 1 and TP 4 on one 4-GPU host,
  12-16 forwards a size (groundtruth/profile_tp_prefill.sh): the median latency over the kernels simperf counts at
  4 ranks over that at 1, per host; the median over the hosts measured (two for DeepSeek-V2-Lite, one for Qwen3-8B).
* `process_us_per_running_request`: with the overlap scheduler off, a decode iteration of the served Qwen3-0.6B is
  its forward plus the scheduler's own CPU work; one_batch runs the same forward (CUDA-graph replay, sampling)
  without a scheduler. The served iteration less one_batch's, at 1, 128 and 512 running requests, grows by this
  much per request (least-squares slope).

One was measured on served runs where SGLang's API server, not the GPU, set the pace:

* `frontend_us_per_chunk`: Qwen3-0.6B on the H200 host (groundtruth/plans/h200-host.yaml) decodes faster than one
  API-server process can stream. At the lowest concurrency where it saturated (128 streams: the first chunk waits
  ~200 ms between the scheduler and the API server's send, against ~1.3 ms at concurrency 1), every output token
  is one chunk, so the time per chunk is 1 / the run's output tokens per second.

and its split by SGLang's metrics (`metrics_share`): every corpus server ran with `--enable-metrics` (the per-request
timestamps need it), which makes the API server update Prometheus histograms for every chunk. Two hosts ran the
same paced Qwen3-0.6B load on two servers that differ only in that flag (and `--export-metrics-to-file`):
groundtruth/experiments/metrics-cost-h200/ at 256 streams and groundtruth/experiments/api-server-cpu-h200/ at 128.
Per host, the time per chunk (median TPOT / streams) without them over the time with them is the share of
`frontend_us_per_chunk` that is not the metrics'; the median over the hosts is carried over, the rest is
`metrics_us_per_chunk`. The hosts disagree (0.59 and 0.85), and the first host's with-metrics run is read on its
first wave only: its second stalled while flashinfer compiled a kernel on first use (METRICS_PAIRS).

and its split by what a chunk carries (`streamed_token_share`): SGLang 0.5.17 streams `/generate` cumulatively
unless the server runs `--incremental-streaming-output`, so a chunk carries its request's whole output so far.
One host ran the same paced Qwen3-0.6B loads on a cumulative server at 512 and 1,024 outputs
(groundtruth/experiments/streaming-h100/): the growth of the time per chunk (median TPOT / streams) over the growth
of the tokens a chunk carries on average ((output + 1) / 2) is the cost per carried token; over the time per chunk
at none it is a share per token, which is what is carried over to the H200 host (as the metrics' share, for the
hosts' speeds differ). `frontend_us_per_streamed_token` is that share of the H200 host's time per chunk without
what its chunks carried (the saturated run's output is 512 tokens), and `frontend_us_per_chunk` loses the part it
carried. (Until 2026-11-28 the share was the cumulative server's time less the incremental one's at the same
load; the incremental server's chunks grew with the output too on that host, 72.5 -> 91.2 us, but not on an H200
host's, groundtruth/experiments/output-growth-check-h200/, so the growth a cumulative chunk adds is measured on the
cumulative server alone and an incremental chunk costs the same at any output length.)

and its growth with the requests the API server holds open (`frontend_open_request_share`): one host ran the same
paced Qwen3-0.6B load at 64, 128 and 512 streams while every process' CPU time was sampled
(groundtruth/experiments/api-server-cpu-h100/, groundtruth/profile_paced.sh); the API server's CPU time over the run
per chunk (one chunk per output token) grows along a least-squares line, and its slope over its value at no open
request is the share per open request. The defaults above are the H200 host's time per chunk at its 128 streams
divided by (1 + 128 x that share), so a run at 128 streams costs what was measured there.

Two from served runs with the overlap scheduler off, where each decode iteration is its forward plus the
scheduler's CPU work in series:

* `scheduler_us_per_iteration` + `process_us_per_iteration`: the served decode iteration at one running request
  (`SGLANG_RECORD_STEP_TIME`, `server_state.json`) less the GPU time of that step as the shipped tables price it
  (CUDA-graph decode at the run's mid-run KV length) and less one request's `process_us_per_running_request`; the
  median over the two hosts' runs (Qwen3-0.6B on the H200 host, Llama-3.1-8B on the H100 host). How the sum splits
  between scheduling (before the launch) and result processing (after it) is not measured: 2 : 1.

Two from a profiled served decode (groundtruth/forwards/h100/served-llama-3.1-8b-decode/, recorded by
groundtruth/profile_served.sh: SGLang's own /start_profile on a running Llama-3.1-8B server, flashinfer, H100, 1 and
16 requests decoding), split at each CUDA-graph replay by `simperf.groundtruth.trace.decode_replays`:

* `decode_graph_gap_us_per_kernel`: the GPU's idle time between consecutive kernels of a replay, per kernel of the
  replay (as the trace counts them); the mean of the two profiles. simperf applies it to its own kernel count.
  The tables time each kernel alone, so their sum is the replay's busy time (checked against one_batch's profiled
  decodes of three models, docs/overheads.md).
* `decode_between_replays_us`: what the GPU runs between two replays (the sampler's argmax and the next
  iteration's input preparation, launched eagerly), busy and idle; the mean of the two profiles.

Three from the first burst of the closed-loop runs (`first_burst_costs`): at 16+ concurrent requests
bench_serving sends C requests at once at the start. Per run (token-id prompts only: text adds tokenisation,
priced apart), over its first C requests:

* `client_setup_us_per_request`: the span of the client's send times / (C - 1) (bench_serving sets up one
  request after another on its asyncio loop);
* `client_burst_us_per_request`: (the server's first receive - the first send) / C (no request is written before
  all are set up and connected);
* `receive_us_per_request`: the median spacing of the server's receive times;

each the median over the runs.

One from the later waves of the same runs (`finish_us_per_request`, accuracy/wave_receives.py): in a fixed-length
closed loop a wave's requests finish together and bench_serving sends their successors at once; per run with a later
wave, the median spacing of the later waves' receive times less the first wave's (the API server finishes the old
requests while it takes in the new ones, one of each in turn); the median over the runs.

And one from the runs whose prompts are text (the shared-prefix runs; every other run sends token ids with
bench_serving's `--tokenize-prompt`):

* `tokenize_us_per_prompt_token`: the API server's `api_server` stage (received -> dispatched to the scheduler)
  of a text prompt, less the same server's median over its token-id runs (the request handling both share), per
  prompt token; the median over the servers that ran both.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simperf.jsonl import json_object_lines

V2_LITE_PREFILL = Path("forwards/h200/deepseek-v2-lite-prefill")
# the served model and flags that forward used
V2_LITE_RUN = Path("h200/deepseek-v2-lite-flashinfer/c1-1k-256")
V2_LITE_PREFILL_TOKENS = 1024
# Qwen3-8B, H100, flashinfer, --disable-cuda-graph
DENSE_PREFILL = Path("forwards/h100/qwen3-8b-eager-prefill")
DENSE_PREFILL_TOKENS = 128
DENSE_SCENARIO = {
    "model": {"name": "qwen3-8b"},
    "hardware": {"gpu": "h100"},
    "serving": {"attention_backend": "flashinfer", "disable_cuda_graph": True},
    "workload": {"dataset": {"kind": "fixed", "input_len": DENSE_PREFILL_TOKENS, "output_len": 2}},
}
# One model's eager prefill at 1 and at 4 tensor-parallel ranks on the same 4-GPU host (groundtruth/profile_tp_prefill.sh,
# 12-16 one_batch forwards a size); per model class, one (1 rank, 4 ranks) pair of record directories per host.
RANK_FORWARDS = Path("forwards/h200x4")
RANK_PAIRS = {
    "mla_moe": (
        ("host-a-deepseek-v2-lite-prefill-tp1", "host-a-deepseek-v2-lite-prefill-tp4"),
        ("host-b-deepseek-v2-lite-prefill-tp1", "host-b-deepseek-v2-lite-prefill-tp4"),
    ),
    "dense": (("host-c-qwen3-8b-prefill-tp1", "host-c-qwen3-8b-prefill-tp4"),),
}
RANK_TOKENS = 1024
Q06_DECODE = Path("forwards/h200/qwen3-0.6b-decode")
Q06_NO_OVERLAP = Path("h200/qwen3-0.6b-no-overlap")
Q06_POINTS = {1: "c1-128-512", 128: "c128-128-512", 512: "c512-128-512"}  # running requests -> run
SERVED_DECODE = Path("forwards/h100/served-llama-3.1-8b-decode")
SERVED_DECODE_POINTS = {1: "c1.trace.json.gz", 16: "c16.trace.json.gz"}  # running requests -> profile
SERVED_DECODE_SCENARIO = {
    "model": {"name": "llama-3.1-8b"},
    "hardware": {"gpu": "h100"},
    "serving": {"attention_backend": "flashinfer"},
    "workload": {"dataset": {"kind": "fixed", "input_len": 1024, "output_len": 256}},
}
# The same served prefill on an idle server, on two hosts: the host-speed measurement (hardware.host_speed) and its
# checks (docs/overheads.md "Hosts"). Each pair: (run on the H200 host, the same run on another host).
SINGLE_H100_HOST_RUNS = Path("experiments/extend-host-h100/h100")
HOST_SPEED_PAIR = (V2_LITE_RUN, SINGLE_H100_HOST_RUNS / "deepseek-v2-lite-flashinfer/c1-1k-16")
HOST_SPEED_CHECKS = {
    "Qwen3-0.6B, 128-token prompt, single-H100 host": (
        Path("h200/qwen3-0.6b-flashinfer/c1-128-512"),
        SINGLE_H100_HOST_RUNS / "qwen3-0.6b-flashinfer/c1-128-16",
    ),
    "DeepSeek-V2-Lite, 1,024-token prompt, 4-GPU H200 host": (
        V2_LITE_RUN,
        Path("experiments/host-speed-h200x4/h200/deepseek-v2-lite-flashinfer/c1-1k-16"),
    ),
    "Qwen3-0.6B, 128-token prompt, 4-GPU H200 host": (
        Path("h200/qwen3-0.6b-flashinfer/c1-128-512"),
        Path("experiments/host-speed-h200x4/h200/qwen3-0.6b-flashinfer/c1-128-16"),
    ),
}
# the API server saturated: its first chunk's `out` stage ~200 ms (docs/overheads.md), one token per chunk
FRONTEND_SATURATED_RUN = Path("h200/qwen3-0.6b-flashinfer/c128-128-512")


@dataclass(frozen=True)
class HostCost:
    value_us: float
    detail: str  # what it was computed from, for docs and failure messages


def _prefill_stage_ms(run: Path) -> float:
    from simperf.groundtruth.decompose import run_stages

    stages = run_stages(run)
    if stages is None:
        raise FileNotFoundError(f"{run}: no recorded requests")
    return stages.stages_ms["prefill"]


@dataclass(frozen=True)
class HostSpeed:
    value: float  # hardware.host_speed of the other run's host (the reference run's host = 1)
    detail: str


def host_speed_ratio(corpus: Path, reference_run: Path, other_run: Path) -> HostSpeed:
    """The other run's host speed against the reference run's (hardware.host_speed): the reference run's median
    prefill stage (first scheduled -> result processed) over the other's, for the same served prefill."""
    reference, other = _prefill_stage_ms(corpus / reference_run), _prefill_stage_ms(corpus / other_run)
    return HostSpeed(
        reference / other, f"{reference:.2f} ms ({reference_run}) / {other:.2f} ms ({other_run})"
    )


def single_h100_host_speed(corpus: Path) -> HostSpeed:
    """scenario.models.SINGLE_H100_HOST_SPEED: DeepSeek-V2-Lite's eager 1,024-token prefill on both hosts."""
    return host_speed_ratio(corpus, *HOST_SPEED_PAIR)


def step_cost_of(scenario):
    """The step cost model a prediction of `scenario` uses (shipped tables of its GPU, its overheads)."""
    from simperf.costmodel.step import SGLangStepCost
    from simperf.pipeline import open_perfdb, resolve

    serving, arch, gpu = resolve(scenario)
    db, _ = open_perfdb(scenario, gpu)
    return SGLangStepCost(arch, serving, db, scenario.overheads)


def _one_batch(path: Path) -> dict[tuple[int, int], dict]:
    """one_batch results by (batch size, input length); a repeated shape keeps its last (warm) record."""
    rows: dict[tuple[int, int], dict] = {}
    for _, r in json_object_lines(path.read_text(encoding="utf-8").splitlines(), path, ValueError):
        rows[(int(r["batch_size"]), int(r["input_len"]))] = r
    return rows


def eager_extend_us_per_kernel(corpus: Path) -> HostCost:
    from simperf.accuracy.corpus import scenario_of

    return _eager_extend(corpus, V2_LITE_PREFILL, V2_LITE_PREFILL_TOKENS, scenario_of(corpus / V2_LITE_RUN))


def eager_extend_us_per_kernel_dense(corpus: Path) -> HostCost:
    from simperf.scenario.models import Scenario

    return _eager_extend(corpus, DENSE_PREFILL, DENSE_PREFILL_TOKENS, Scenario.model_validate(DENSE_SCENARIO))


def _eager_extend(corpus: Path, forward: Path, tokens: int, scenario) -> HostCost:
    """A recorded one_batch prefill's clean latency over the kernels simperf counts in that forward."""
    from simperf.models.ops import kernels_per_step

    clean = _one_batch(corpus / forward / "clean.jsonl")[(1, tokens)]
    latency_us = float(clean["prefill_latency"]) * 1e6
    cost = step_cost_of(scenario)
    kernels = kernels_per_step(cost.extend_ops(np.array([tokens]), np.array([0])), cost.arch)
    busy = _profiled_busy_us(corpus / forward / "summary.jsonl", tokens)
    return HostCost(
        latency_us / kernels,
        f"{latency_us / 1e3:.2f} ms one_batch prefill of {tokens} tokens / {kernels} kernels "
        f"(GPU busy {busy / 1e3:.1f} ms in the profiled run)",
    )


def _profiled_busy_us(summary: Path, tokens: int) -> float:
    for _, row in json_object_lines(summary.read_text(encoding="utf-8").splitlines(), summary, ValueError):
        if f"_input{tokens}_" in row["trace"]:
            return float(row["gpu_busy_us"])
    raise ValueError(f"{summary}: no profiled forward of {tokens} tokens")


def process_us_per_running_request(corpus: Path) -> HostCost:
    one_batch = _one_batch(corpus / Q06_DECODE / "clean.jsonl")
    xs, ys = [], []
    for running, run in Q06_POINTS.items():
        state = json.loads((corpus / Q06_NO_OVERLAP / run / "server_state.json").read_text(encoding="utf-8"))
        served_ms = float(np.median(state["decode_step_time_s"][str(running)])) * 1e3
        alone_ms = float(one_batch[(running, 384)]["median_decode_latency"]) * 1e3
        xs.append(running)
        ys.append(served_ms - alone_ms)
    slope_ms = float(np.polyfit(xs, ys, 1)[0])
    points = ", ".join(f"{x}: {y:.2f} ms" for x, y in zip(xs, ys, strict=True))
    return HostCost(slope_ms * 1e3, f"served minus one_batch decode iteration by running requests ({points})")


def frontend_us_per_chunk(corpus: Path) -> HostCost:
    from simperf.groundtruth.decompose import run_stages

    run = corpus / FRONTEND_SATURATED_RUN
    bench = _bench(run)
    stages = run_stages(run)
    if stages is None:
        raise ValueError(f"{run}: no per-request server timestamps")
    return HostCost(
        _paced_us_per_chunk(bench),
        f"{FRONTEND_SATURATED_RUN}: {float(bench['output_throughput']):.0f} output tokens/s at "
        f"{bench['max_concurrency']} streams, first chunk {stages.stages_ms['out']:.0f} ms from processed to sent",
    )


def _bench(run: Path) -> dict:
    """bench_serving's summary of a recorded run: a corpus run directory's bench.json, or a CPU-sampled run's
    bench-cC.json (`run` its path without the suffix)."""
    path = run / "bench.json" if run.is_dir() else run.with_suffix(".json")
    return json.loads(path.read_text(encoding="utf-8"))


def _tpot_per_chunk_us(bench: dict) -> float:
    """Median TPOT / streams: where the API server paces, it writes one chunk per stream per TPOT."""
    return float(bench["median_tpot_ms"]) * 1e3 / int(bench["max_concurrency"])


def _paced_us_per_chunk(bench: dict) -> float:
    """A run whose API server sets the pace streams one chunk per output token: 1 / output tokens per second."""
    return 1e6 / float(bench["output_throughput"])


# (without metrics, with metrics): the same paced Qwen3-0.6B load on one host's two servers that differ only in
# --enable-metrics (and the per-request export), relative to groundtruth/experiments. A corpus-format run (a
# directory) is read on its first wave, the first C requests sent: the with-metrics 256-stream run of the first pair,
# its server's first, stalled ~10 s in its second wave while flashinfer JIT-compiled its cascade module on the first
# prefix hit (mean TTFT 1,846 ms against a median of 359, p99 10.2 s; docs/overheads.md). A CPU-sampled run
# (bench-cC) is read whole: its server's kernel builds came before it.
METRICS_PAIRS = (
    (
        Path("metrics-cost-h200/h200/qwen3-0.6b-no-metrics/c256-128-512"),
        Path("metrics-cost-h200/h200/qwen3-0.6b-metrics/c256-128-512"),
    ),
    (Path("api-server-cpu-h200/metrics-off/bench-c128"), Path("api-server-cpu-h200/metrics-on/bench-c128")),
)


def _paced_tpot_per_chunk_us(run: Path) -> float:
    """_tpot_per_chunk_us of a paced run; a corpus run directory's on its first wave (METRICS_PAIRS)."""
    if not run.is_dir():
        return _tpot_per_chunk_us(_bench(run))
    import pyarrow.parquet as pq

    streams = int(_bench(run)["max_concurrency"])
    table = pq.read_table(run / "requests.parquet").to_pydict()
    send, end = np.array(table["client_send_s"]), np.array(table["client_end_s"])
    ttft_s, output = np.array(table["ttft_ms"]) / 1e3, np.array(table["output_len"], dtype=float)
    first_wave = np.argsort(send, kind="stable")[:streams]
    tpot_ms = (end - send - ttft_s)[first_wave] / (output[first_wave] - 1) * 1e3
    return float(np.median(tpot_ms)) * 1e3 / streams


def metrics_share(experiments: Path) -> tuple[float, str]:
    """(time per chunk without --enable-metrics / with it, median over the hosts' pairs, and what it came from)."""
    shares, points = [], []
    for without_run, with_run in METRICS_PAIRS:
        without, with_metrics = (
            _paced_tpot_per_chunk_us(experiments / run) for run in (without_run, with_run)
        )
        shares.append(without / with_metrics)
        points.append(f"{without:.1f} vs {with_metrics:.1f} us per chunk ({without_run.parts[0]})")
    share = float(np.median(shares))
    return share, f"without --enable-metrics / with it: {'; '.join(points)}; median {share:.3f}"


# (cumulative server, incremental server) and the runs both made where the API server sets the pace (256 and 512
# streams; at 64 the scheduler's own CPU time per iteration is as long, so its chunks do not queue alone)
STREAMING_SERVERS = ("qwen3-0.6b-cumulative", "qwen3-0.6b-incremental")
STREAMING_RUNS = ("c256-128-512", "c256-128-1024", "c256-1k-512", "c512-128-512")


def _carried(bench: dict) -> float:
    """Output tokens so far a chunk of the run carries on average: (output + 1) / 2."""
    return (float(bench["total_output_tokens"]) / float(bench["completed"]) + 1) / 2


# the cumulative server's two runs that differ only in output length (256 streams, 128-token prompts)
OUTPUT_GROWTH_RUNS = ("c256-128-512", "c256-128-1024")


def streamed_token_share(experiment: Path) -> tuple[float, str]:
    """(growth of a cumulative chunk's time per token of output so far it carries, as a share of its time at none,
    on one host, and what it came from): the cumulative server's runs at 512 and 1,024 outputs."""
    host = next(p for p in sorted(experiment.iterdir()) if p.is_dir())
    benches = [_bench(host / STREAMING_SERVERS[0] / run) for run in OUTPUT_GROWTH_RUNS]
    short, long = (_tpot_per_chunk_us(b) for b in benches)
    at_short, at_long = (_carried(b) for b in benches)
    slope = (long - short) / (at_long - at_short)
    at_none = short - slope * at_short
    share = slope / at_none
    return share, (
        f"{share * 1e4:.2f}e-4 per carried token (cumulative {short:.1f} -> {long:.1f} us per chunk at "
        f"{at_short:.1f} -> {at_long:.1f} tokens carried: {slope:.4f} us per token over {at_none:.1f}; "
        f"{host.name} host)"
    )


# The clean runs of the CPU-sampled experiment (one server, no profiler attached): streams -> run. Its 256-stream run
# is left out: it was the server's first, slowed by first use (flashinfer JIT-compiled its `cascade` module for
# ~10 s in the middle of it, docs/overheads.md); its second wave sits on the line.
API_SERVER_CPU_RUNS = {64: "plain/bench-c64", 128: "plain/bench-c128", 512: "plain/bench-c512"}


def api_server_cpu_us_per_chunk(run: Path) -> float:
    """The API server's CPU time over a CPU-sampled run (`run`: its bench-cC path without suffix; the samples in
    cpu-cC.csv beside it) per chunk: one chunk per output token."""
    import csv

    samples = run.parent / run.name.replace("bench-", "cpu-")
    with samples.with_suffix(".csv").open(encoding="utf-8") as f:
        api = [float(row["cpu_s"]) for row in csv.DictReader(f) if row["process"] == "api"]
    return (api[-1] - api[0]) * 1e6 / float(_bench(run)["total_output_tokens"])


def frontend_open_request_share(experiment: Path) -> tuple[float, str]:
    """(growth of the API server's time per chunk per open request, as a share of its time at none, and what it came
    from): the least-squares line of its CPU time per chunk over the streams of the clean runs."""
    streams = np.array(sorted(API_SERVER_CPU_RUNS), dtype=float)
    per_chunk = np.array(
        [api_server_cpu_us_per_chunk(experiment / API_SERVER_CPU_RUNS[int(c)]) for c in streams]
    )
    slope, at_none = np.polyfit(streams, per_chunk, 1)
    points = ", ".join(f"{p:.1f} us at {int(c)}" for c, p in zip(streams, per_chunk, strict=True))
    share = float(slope / at_none)
    return share, f"API server CPU per chunk {points}: {at_none:.1f} + {slope:.4f} us per stream"


def frontend_split(
    corpus: Path, experiment: Path, streaming: Path | None = None, cpu: Path | None = None
) -> tuple[HostCost, HostCost, HostCost]:
    """(frontend_us_per_chunk, metrics_us_per_chunk, frontend_us_per_streamed_token) at no open request: the H200
    host's time per chunk, metrics on, at its saturated run's streams, taken back to none by the share per open
    request (`cpu`: groundtruth/experiments/api-server-cpu-h100 next to `experiment`), then split in the shares
    measured with and without the metrics (median over two hosts, METRICS_PAIRS under `experiment`'s parent) and on
    one host with and without incremental streaming (`streaming`: groundtruth/experiments/streaming-h100 next to
    `experiment`)."""
    measured = frontend_us_per_chunk(corpus)
    open_share, open_detail = frontend_open_request_share(cpu or experiment.parent / "api-server-cpu-h100")
    streams = int(_bench(corpus / FRONTEND_SATURATED_RUN)["max_concurrency"])
    total = HostCost(
        measured.value_us / (1 + open_share * streams),
        f"{measured.detail}, / (1 + {streams} open x {open_share * 1e4:.2f}e-4; {open_detail})",
    )
    share, detail = metrics_share(experiment.parent)
    token_share, token_detail = streamed_token_share(streaming or experiment.parent / "streaming-h100")
    carried = (_median_of(corpus / FRONTEND_SATURATED_RUN, "output_len") + 1) / 2
    per_chunk_incremental = total.value_us / (1 + token_share * carried)
    per_token = token_share * per_chunk_incremental
    return (
        HostCost(
            total.value_us * share - per_token * carried,
            f"{total.detail}; x {share:.3f} ({detail}), less {carried:.1f} carried tokens x {per_token:.4f} us",
        ),
        HostCost(total.value_us * (1 - share), f"{total.detail}; x {1 - share:.3f} ({detail})"),
        HostCost(
            per_token, f"{total.detail} / (1 + {carried:.1f} carried tokens x share); share {token_detail}"
        ),
    )


def tokenize_us_per_prompt_token(corpus: Path) -> HostCost:
    from simperf.accuracy.corpus import sends_text
    from simperf.groundtruth.decompose import run_stages

    per_server: list[float] = []
    points: list[str] = []
    for server in sorted(p for p in corpus.glob("*/*") if p.is_dir() and (p / "server_cmd.txt").exists()):
        text, ids = [], []
        for run in sorted(r.parent for r in server.glob("*/requests.parquet")):
            stages = run_stages(run)
            if stages is None or not stages.feeds_defaults:
                continue
            tokens = _median_of(run, "input_len")
            (text if sends_text(run) else ids).append((stages.stages_ms["api_server"], tokens))
        if not text or not ids:
            continue
        base_ms = float(np.median([ms for ms, _ in ids]))
        for ms, tokens in text:
            per_server.append((ms - base_ms) * 1e3 / tokens)
            points.append(
                f"{server.parent.name}/{server.name} {ms:.2f} - {base_ms:.2f} ms over {tokens:.0f} tokens"
            )
    if not per_server:
        raise ValueError(f"{corpus}: no server with both text-prompt and token-id runs")
    return HostCost(float(np.median(per_server)), "median of " + "; ".join(points))


def _median_of(run: Path, column: str) -> float:
    """The median of one per-request column of a recorded run (requests.parquet)."""
    import pyarrow.parquet as pq

    return float(np.median(pq.read_table(run / "requests.parquet", columns=[column]).column(0).to_numpy()))


# overlap scheduler off, one running request: the decode iteration is the forward plus the scheduler's CPU work
NO_OVERLAP_C1_RUNS = (
    Path("h200/qwen3-0.6b-no-overlap/c1-128-512"),
    Path("h100/llama-3.1-8b-no-overlap/c1-1k-256"),
)
# the measured sum is split 2 : 1 between scheduling (before the launch) and processing (after it): not measured
SCHEDULER_SHARE = 2.0 / 3.0


def cpu_us_per_iteration(corpus: Path) -> HostCost:
    """scheduler_us_per_iteration + process_us_per_iteration (see the module docstring)."""
    from simperf.accuracy.corpus import scenario_of
    from simperf.scenario.models import Overheads

    per_request_us = Overheads().process_us_per_running_request
    values, points = [], []
    for run in NO_OVERLAP_C1_RUNS:
        state = json.loads((corpus / run / "server_state.json").read_text(encoding="utf-8"))
        served_us = float(np.median(state["decode_step_time_s"]["1"])) * 1e6
        cost = step_cost_of(scenario_of(corpus / run))
        bench = _bench(corpus / run)
        kv = (
            bench["total_input_tokens"] / bench["completed"]
            + bench["total_output_tokens"] / bench["completed"] / 2
        )
        step = cost.decode_steps(1, 1, np.array([kv]), True)[0]
        # the step's kernels alone: its named overhead (graph replay) is host time the scheduler's share covers
        gpu_us = float(step.sum())
        values.append(served_us - gpu_us - per_request_us)
        points.append(f"{run}: {served_us / 1e3:.3f} ms served - {gpu_us / 1e3:.3f} ms GPU")
    return HostCost(float(np.median(values)), "median of " + "; ".join(points))


def _served_replays(corpus: Path):
    from simperf.groundtruth.trace import decode_replays, read_trace

    return {
        bs: decode_replays(read_trace(corpus / SERVED_DECODE / name))
        for bs, name in SERVED_DECODE_POINTS.items()
    }


def decode_graph_gap_us_per_kernel(corpus: Path) -> HostCost:
    from simperf.models.ops import kernels_per_step
    from simperf.scenario.models import Scenario

    cost = step_cost_of(Scenario.model_validate(SERVED_DECODE_SCENARIO))
    values, points = [], []
    for bs, r in _served_replays(corpus).items():
        counted = kernels_per_step(cost.decode_ops(bs, bs, 1024.0), cost.arch)
        values.append(r.replay_gap_us / r.replay_kernels)
        points.append(
            f"{bs} running: {r.replay_gap_us:.1f} us idle in a replay of {r.replay_kernels:.0f} kernels "
            f"({counted} counted by simperf)"
        )
    return HostCost(float(np.mean(values)), "; ".join(points))


def decode_between_replays_us(corpus: Path) -> HostCost:
    replays = _served_replays(corpus)
    values = [r.between_us for r in replays.values()]
    points = [
        f"{bs} running: {r.between_busy_us:.1f} us busy + {r.between_gap_us:.1f} us idle over {r.between_kernels:.0f} "
        f"kernels (period {r.period_us:.0f} us)"
        for bs, r in replays.items()
    ]
    return HostCost(float(np.mean(values)), "; ".join(points))


# profiled served EAGLE decodes (SGLang 0.5.17's spec-v2 worker, Llama-3.1-8B with a one-layer draft, flashinfer,
# H200; groundtruth/profile_served.sh with UNPROFILED=1): SGLang's chain (3 steps, top-k 1, 4 draft tokens) and its
# own tree for a Llama target (5, 4, 8), each timed unprofiled and then profiled for 10 iterations at each load
SPEC_IDLE_SERVERS = (
    "forwards/h200/served-llama-3.1-8b-eagle-idle-chain",
    "forwards/h200/served-llama-3.1-8b-eagle-idle-tree",
)
SPEC_IDLE_LOADS = (1, 16, 48)
SPEC_PROFILED_ITERATIONS = 10  # profile_served.py asks /start_profile for 10 steps
# an idle stretch shorter than this between two kernels is the GPU's own gap inside a replay or between eagerly
# launched kernels, which decode_graph_gap_us_per_kernel and decode_between_replays_us already price; a longer one
# is the GPU waiting for the host
SPEC_HOST_GAP_US = 5.0


@dataclass(frozen=True)
class SpecIdlePoint:
    server: str
    running: int
    iteration_us: (
        float  # the scheduler's unprofiled decode iteration (median of its logged averages, first dropped)
    )
    busy_us: float  # the profiled iteration's GPU busy time
    short_gaps_us: float  # its idle stretches under SPEC_HOST_GAP_US

    @property
    def idle_us(self) -> float:
        return self.iteration_us - self.busy_us - self.short_gaps_us


def spec_idle_points(corpus: Path) -> list[SpecIdlePoint]:
    """Per server and load: the unprofiled iteration, and the GPU busy time and short gaps of a profiled one."""
    from simperf.groundtruth.trace import busy_and_short_gaps_us, read_trace

    points = []
    for server in SPEC_IDLE_SERVERS:
        d = corpus / server
        loads = json.loads((d / "driver.json").read_text(encoding="utf-8"))
        for running in SPEC_IDLE_LOADS:
            (load,) = [x for x in loads if x.get("concurrency") == running and "step_time_s" in x]
            # each entry averages decode_log_interval iterations; the first also holds the load's prefills
            iteration_us = float(np.median(load["step_time_s"][str(running)][1:])) * 1e6
            trace = read_trace(d / f"c{running}.trace.json.gz")
            busy, short = busy_and_short_gaps_us(trace, SPEC_HOST_GAP_US)
            n = SPEC_PROFILED_ITERATIONS
            points.append(SpecIdlePoint(server.rsplit("-", 1)[1], running, iteration_us, busy / n, short / n))
    return points


def spec_worker_idle(corpus: Path) -> tuple[HostCost, HostCost]:
    """(spec_worker_idle_us, spec_worker_idle_us_per_running_request): the least-squares line through the GPU's
    host-bound idle per speculative decode iteration (the unprofiled iteration less the profiled GPU busy time and
    its short gaps) against the running requests, both draft shapes together."""
    points = spec_idle_points(corpus)
    slope, intercept = np.polyfit([p.running for p in points], [p.idle_us for p in points], 1)
    detail = "; ".join(
        f"{p.server} at {p.running}: {p.iteration_us / 1e3:.2f} ms iteration - {p.busy_us / 1e3:.2f} busy - "
        f"{p.short_gaps_us / 1e3:.2f} short gaps = {p.idle_us / 1e3:.2f} ms idle"
        for p in points
    )
    return HostCost(float(intercept), detail), HostCost(float(slope), detail)


# the kernels of a draft step's sampling when it keeps more than one candidate (SGLang's eagle_utils: softmax over
# the vocabulary, then torch.topk's radix select and the sorts and scans around it); with top-k 1 the draft takes an
# argmax kernel instead (microseconds)
DRAFT_TOPK_KERNELS = re.compile(r"SoftMax|topk|bitonicSort|scan_by_key", re.IGNORECASE)
SPEC_TREE_SHAPE = (5, 4)  # SGLang's own draft for a Llama target: 5 steps, top-k 4


def spec_draft_topk(corpus: Path) -> tuple[HostCost, HostCost]:
    """(spec_draft_topk_us_per_step, spec_draft_topk_us_per_row): the tree server's sampling kernels per iteration
    (DRAFT_TOPK_KERNELS) against the rows they sample, on a least-squares line: a draft step samples one row per
    request at its first step and top-k rows per request at each later one, so an iteration of n steps samples
    bs x (1 + (n - 1) x top-k) rows; the intercept is n steps' fixed cost."""
    from simperf.groundtruth.trace import read_trace

    steps, topk = SPEC_TREE_SHAPE
    server = corpus / SPEC_IDLE_SERVERS[1]
    rows, times = [], []
    for running in SPEC_IDLE_LOADS:
        us = sum(
            float(e["dur"])
            for e in read_trace(server / f"c{running}.trace.json.gz")
            if e.get("cat") == "kernel" and DRAFT_TOPK_KERNELS.search(e.get("name", ""))
        )
        rows.append(running * (1 + (steps - 1) * topk))
        times.append(us / SPEC_PROFILED_ITERATIONS)
    slope, intercept = np.polyfit(rows, times, 1)
    detail = "; ".join(f"{r} rows: {t:.0f} us an iteration" for r, t in zip(rows, times, strict=True))
    return HostCost(float(intercept) / steps, detail), HostCost(float(slope), detail)


# What a speculative prefill waits (Overheads.spec_launch_wait_us + spec_draft_prefill_host_us): how much later than
# the same target without a draft a served prefill is processed, on one host, less the draft's own prefill forward
# (its GPU busy time in the profile).
# Two instruments: the scheduler's prefill stage (first scheduled -> result processed) of the first-token plan
# (groundtruth/plans/h200-spec-first-token.yaml, 16 requests one at a time), and the client's time for a one-token
# request of the probe (groundtruth/spec_wait_probe.sh, 5 requests each); 1,024-token prompts in both.
SPEC_WAIT_STAGE_RUNS = (  # (speculative run, the plain run of the same host, the draft's profiled prefill)
    (
        "h200/llama-3.1-8b-eagle-chain-ft/c1-1k-64",
        "h200/llama-3.1-8b-plain-ft/c1-1k-64",
        "llama-3.1-8b-chain",
    ),
    ("h200/llama-3.1-8b-eagle-tree-ft/c1-1k-64", "h200/llama-3.1-8b-plain-ft/c1-1k-64", "llama-3.1-8b-chain"),
)
SPEC_WAIT_PROBE = "forwards/h200/served-spec-wait-probe"
SPEC_WAIT_PROBE_PAIRS = (("llama-3.1-8b-chain", "llama-3.1-8b-plain"), ("qwen3-8b-eagle", "qwen3-8b-plain"))
SPEC_WAIT_PROMPT = "1024"
SPEC_LAUNCH_PROFILES = "forwards/h200/served-llama-3.1-8b-chain-launch"


def draft_prefill_busy_us(corpus: Path, server: str) -> float:
    """GPU busy time of the draft's prefill forward (SGLang's `draft_extend` range, its first occurrence: the one
    after the target's prefill) in the probe server's profiled prefill."""
    from simperf.groundtruth.trace import named_ranges, read_trace

    events = read_trace(corpus / SPEC_WAIT_PROBE / server / "prefill.trace.json.gz")
    ranges = named_ranges(events, "gpu_user_annotation", "draft_extend")
    if not ranges:
        raise ValueError(f"{server}: the profiled prefill has no draft_extend range")
    lo, hi = ranges[0]
    return sum(
        float(e["dur"])
        for e in events
        if e.get("cat") == "kernel" and lo <= e["ts"] and e["ts"] + e["dur"] <= hi
    )


def _one_token_ms(corpus: Path, server: str) -> float:
    (prefill,) = [
        x
        for x in json.loads((corpus / SPEC_WAIT_PROBE / server / "driver.json").read_text())
        if x.get("name") == "prefill"
    ]
    return float(np.median(prefill["one_token_latency_s"][SPEC_WAIT_PROMPT])) * 1e3


def spec_launch_wait_points(corpus: Path) -> list[tuple[str, float]]:
    """(what, µs): each speculative server's prefill processed later than its plain twin's, less the draft's
    prefill."""
    points = []
    for spec_run, plain_run, draft in SPEC_WAIT_STAGE_RUNS:
        extra_ms = _prefill_stage_ms(corpus / spec_run) - _prefill_stage_ms(corpus / plain_run)
        points.append((f"{spec_run} stage", extra_ms * 1e3 - draft_prefill_busy_us(corpus, draft)))
    for spec, plain in SPEC_WAIT_PROBE_PAIRS:
        extra_ms = _one_token_ms(corpus, spec) - _one_token_ms(corpus, plain)
        points.append((f"probe {spec} one-token", extra_ms * 1e3 - draft_prefill_busy_us(corpus, spec)))
    return points


@dataclass(frozen=True)
class SpecLaunchProfile:
    running: int
    # median: from the later of (the launch starts, the previous batch's GPU work ends) to that batch's processing
    wait_us: float
    period_us: float  # median: one launch's start to the next's
    unprofiled_iteration_us: float  # the scheduler's own iteration at this load, without the profiler


def spec_launch_profiles(corpus: Path) -> list[SpecLaunchProfile]:
    """Per load of the chain's host-side profiles (SPEC_LAUNCH_PROFILES): how long after the previous batch's GPU
    work ends (or after the launch starts, if later) the scheduler processes that batch, and the iteration with and
    without the profiler."""
    from simperf.groundtruth.trace import named_ranges, read_trace

    d = corpus / SPEC_LAUNCH_PROFILES
    loads = json.loads((d / "driver.json").read_text(encoding="utf-8"))
    out = []
    for running in SPEC_IDLE_LOADS:
        events = read_trace(d / f"c{running}.trace.json.gz")
        # a launch of an iteration takes milliseconds; the scheduler's empty passes take microseconds
        launches = [
            r for r in named_ranges(events, "user_annotation", "scheduler.run_batch") if r[1] - r[0] > 1000
        ]
        on_gpu = [
            r
            for r in named_ranges(events, "gpu_user_annotation", "scheduler.run_batch")
            if r[1] - r[0] > 1000
        ]
        processed = named_ranges(events, "user_annotation", "scheduler.process_batch_result")
        waits, periods = [], []
        for (start, end), (previous, _) in zip(launches[1:], launches[:-1], strict=True):
            before = [r for r in on_gpu if r[0] < start]
            after = [r for r in processed if r[0] >= end - 1]
            if before and after:
                waits.append(after[0][0] - max(start, before[-1][1]))
                periods.append(start - previous)
        (load,) = [x for x in loads if x.get("concurrency") == running and "step_time_s" in x]
        unprofiled = float(np.median(load["step_time_s"][str(running)][1:])) * 1e6
        out.append(SpecLaunchProfile(running, float(np.median(waits)), float(np.median(periods)), unprofiled))
    return out


def spec_launch_wait(corpus: Path) -> HostCost:
    """Overheads.spec_launch_wait_us: the profiled wait at each load, taken off the profiler by the one-request
    load's unprofiled / profiled iteration (host-bound there, so that is the profiler's stretch of host time);
    the median over the loads."""
    profiles = spec_launch_profiles(corpus)
    (one,) = [p for p in profiles if p.running == 1]
    stretch = one.unprofiled_iteration_us / one.period_us
    detail = f"x {stretch:.3f} (unprofiled / profiled iteration at 1 request); " + "; ".join(
        f"{p.running} requests: {p.wait_us / 1e3:.2f} ms profiled" for p in profiles
    )
    return HostCost(float(np.median([p.wait_us * stretch for p in profiles])), detail)


def spec_draft_prefill_host(corpus: Path) -> HostCost:
    """Overheads.spec_draft_prefill_host_us: what a speculative prefill waits beyond the launch wait (the mean of
    spec_launch_wait_points less spec_launch_wait): the draft's prefill, launched from the host after the target's
    GPU work ends, beyond its own GPU time."""
    points = spec_launch_wait_points(corpus)
    mean = float(np.mean([us for _, us in points]))
    launch = spec_launch_wait(corpus).value_us
    detail = "; ".join(f"{what}: {us / 1e3:.2f} ms" for what, us in points) + f"; less {launch / 1e3:.2f} ms"
    return HostCost(mean - launch, detail)


# the profiled Qwen3-30B-A3B decodes (SGLang 0.5.17, flashinfer, H100): served at 1 and 16 requests, one_batch at 1,
# 16 and 64
ROUTER_TRACES = (
    "forwards/h100/served-qwen3-30b-a3b-decode/c1.trace.json.gz",
    "forwards/h100/served-qwen3-30b-a3b-decode/c16.trace.json.gz",
    *(
        f"forwards/h100/qwen3-30b-a3b-decode/profile_batch{bs}_input1024_output16_decode.trace.json.gz"
        for bs in (1, 16, 64)
    ),
)
ROUTER_KERNEL = "_router_triton_kernel"


def decode_moe_router_us(corpus: Path) -> HostCost:
    """GPU time of SGLang's router top-k kernel per MoE layer of a decode: the median over the profiled Qwen3-30B-A3B
    decodes of each profile's median kernel duration."""
    from simperf.groundtruth.trace import read_trace

    medians, points = [], []
    for name in ROUTER_TRACES:
        durations = [
            float(e["dur"])
            for e in read_trace(corpus / name)
            if e.get("cat") == "kernel" and e.get("name") == ROUTER_KERNEL
        ]
        medians.append(float(np.median(durations)))
        points.append(f"{name.split('/')[-2]}/{name.split('/')[-1].split('.')[0]}: {medians[-1]:.2f} us")
    return HostCost(float(np.median(medians)), "; ".join(points))


FIRST_BURST_MIN_CONCURRENCY = 16


def first_burst_costs(corpus: Path) -> dict[str, HostCost]:
    """client_setup_us_per_request, client_burst_us_per_request and receive_us_per_request from the first burst
    (the first C sends) of every closed-loop corpus run with C >= 16 that sent token ids: per run the span of the
    send times / (C - 1), (first receive - first send) / C, and the median spacing of the receive times; each cost
    is the median over the runs."""
    import polars as pl

    from simperf.accuracy.corpus import closed_loop_token_runs
    from simperf.groundtruth.hosts import feeds_defaults

    setup, burst, receive = [], [], []
    for run, concurrency in closed_loop_token_runs(corpus, FIRST_BURST_MIN_CONCURRENCY):
        if not feeds_defaults(run):
            continue
        df = pl.read_parquet(run / "requests.parquet", columns=["client_send_s", "server_received_s"])
        first = df.sort("client_send_s").head(concurrency)
        sent = first["client_send_s"].to_numpy()
        received = np.sort(first["server_received_s"].to_numpy())
        if np.isnan(received).any():
            continue
        setup.append(float(sent[-1] - sent[0]) / (concurrency - 1) * 1e6)
        burst.append(float(received[0] - sent[0]) / concurrency * 1e6)
        receive.append(float(np.median(np.diff(received))) * 1e6)
    if not setup:
        raise ValueError(
            f"{corpus}: no closed-loop run with {FIRST_BURST_MIN_CONCURRENCY}+ streams and timestamps"
        )

    def cost(values: list[float], what: str) -> HostCost:
        return HostCost(
            float(np.median(values)),
            f"median over {len(values)} first bursts of {what} ({min(values):.0f}-{max(values):.0f} us)",
        )

    return {
        "client_setup_us_per_request": cost(setup, "the send times' span / (C - 1)"),
        "client_burst_us_per_request": cost(burst, "(first receive - first send) / C"),
        "receive_us_per_request": cost(receive, "the receive times' spacing"),
    }


def finish_us_per_request(corpus: Path) -> HostCost:
    """The API server's finishing work per request: the median over the closed-loop runs with later waves of their
    later waves' receive spacing less their first wave's (module docstring); check-only runs are left out."""
    from simperf.accuracy.wave_receives import corpus_receives
    from simperf.groundtruth.hosts import feeds_defaults

    rows = [r for r in corpus_receives(corpus) if feeds_defaults(Path(r.run))]
    extra_ms = [r.later_receive_gap_ms - r.first_receive_gap_ms for r in rows]
    if not extra_ms:
        raise ValueError(f"{corpus}: no closed-loop run with later waves and timestamps")
    return HostCost(
        float(np.median(extra_ms)) * 1e3,
        f"median over {len(extra_ms)} runs of later-wave less first-wave receive spacing "
        f"({min(extra_ms):.2f} to {max(extra_ms):.2f} ms)",
    )


def hosts_markdown(corpus: Path) -> str:
    """docs/overheads.md "Hosts": the same served prefills on three hosts, the host speed they give, and the
    single-H100 host's idle-server runs predicted at that speed; "" for a corpus without those runs."""
    from simperf.accuracy.corpus import Unmodelled, scenario_of
    from simperf.groundtruth.decompose import run_stages
    from simperf.pipeline import predict

    # one request at a time on an idle server: the experiments' concurrency-1 runs
    runs = sorted(p.parent for p in (corpus / "experiments").glob("*/*/*/c1-*/run.json"))
    if not (corpus / HOST_SPEED_PAIR[1]).is_dir() or not runs:
        return ""
    speed = single_h100_host_speed(corpus)
    lines = [
        "Prefill stage (first scheduled → result processed) of one request on an idle server, median ms, with what "
        "simperf predicts for the whole TTFT at the run's host speed (`hardware.host_speed`; runs whose model was "
        "changed with `--json-model-override-args`, a launch flag simperf does not model, are not predicted):",
        "",
        "| run | requests | prefill stage | TTFT | predicted TTFT | error |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        stages = run_stages(run)
        if stages is None:
            continue
        name = run.relative_to(corpus).as_posix()
        predicted, error = "—", "—"
        try:
            scenario = scenario_of(run)
        except Unmodelled:  # e.g. --json-model-override-args: not the zoo model simperf would price
            scenario = None
        if scenario is not None:
            ttft = predict(scenario).result["median_ttft_ms"]
            predicted, error = f"{ttft:.1f}", f"{100 * (ttft / stages.ttft_ms - 1):+.0f}%"
        lines.append(
            f"| {name} | {stages.requests} | {stages.stages_ms['prefill']:.2f} | {stages.ttft_ms:.1f} "
            f"| {predicted} | {error} |"
        )
    lines += [
        "",
        f"Speed of the single-H100 host against the H200 host (`SINGLE_H100_HOST_SPEED`): **{speed.value:.4f}** = "
        f"{speed.detail}. The same ratio on other work and another host:",
        "",
    ]
    for label, pair in HOST_SPEED_CHECKS.items():
        check = host_speed_ratio(corpus, *pair)
        lines.append(f"- {label}: **{check.value:.3f}** = {check.detail}")
    return "\n".join(lines) + "\n"


def _prefill_latencies_s(forward: Path, tokens: int) -> list[float]:
    """Every warm one_batch prefill latency of `tokens` in a record: clean.jsonl, or where only the pass's printed
    lines came back, prefill_latency_s.txt (the warm-up first, then the order of cmd.txt's --input-len)."""
    clean = forward / "clean.jsonl"
    if clean.exists():
        lines = clean.read_text(encoding="utf-8").splitlines()
        rows = [row for _, row in json_object_lines(lines, clean, ValueError)]
        return [float(r["prefill_latency"]) for r in rows if int(r["input_len"]) == tokens]
    printed = forward / "prefill_latency_s.txt"
    values = [
        float(v)
        for line in printed.read_text(encoding="utf-8").splitlines()
        if not line.startswith("#")
        for v in line.split()
    ][1:]
    command = (forward / "cmd.txt").read_text(encoding="utf-8").split()
    lens = command[command.index("--input-len") + 1 : command.index("--output-len")]
    if len(lens) != len(values):
        raise ValueError(f"{printed}: {len(values)} warm latencies for {len(lens)} input lengths")
    return [v for n, v in zip(lens, values, strict=True) if int(n) == tokens]


def _eager_kernels(scenario, tp: int, tokens: int) -> int:
    from simperf.models.ops import kernels_per_step

    ranks = scenario.model_copy(
        update={
            "serving": scenario.serving.model_copy(update={"tp": tp}),
            "hardware": scenario.hardware.model_copy(update={"count": tp}),
        }
    )
    cost = step_cost_of(ranks)
    return kernels_per_step(cost.extend_ops(np.array([tokens]), np.array([0])), cost.arch)


@dataclass(frozen=True)
class Ratio:
    value: float
    detail: str


def eager_extend_rank_factor(corpus: Path, model_class: str = "mla_moe") -> Ratio:
    """An eager extend's host time per kernel at 4 tensor-parallel ranks over that at 1 on the same host (per host:
    median latency over the kernels simperf counts, 4 ranks' over 1's), the median over the hosts measured."""
    from simperf.accuracy.corpus import scenario_of
    from simperf.scenario.models import Scenario

    scenario = (
        scenario_of(corpus / V2_LITE_RUN)
        if model_class == "mla_moe"
        else Scenario.model_validate(DENSE_SCENARIO)
    )
    k1, k4 = (_eager_kernels(scenario, tp, RANK_TOKENS) for tp in (1, 4))
    ratios, parts = [], []
    for one, four in RANK_PAIRS[model_class]:
        t1, t4 = (
            float(np.median(_prefill_latencies_s(corpus / RANK_FORWARDS / d, RANK_TOKENS))) * 1e3
            for d in (one, four)
        )
        ratios.append((t4 / k4) / (t1 / k1))
        parts.append(
            f"{one.split('-')[1]}: {t4:.1f} ms / {k4} kernels over {t1:.1f} ms / {k1} = {ratios[-1]:.3f}"
        )
    return Ratio(float(np.median(ratios)), "; ".join(parts))


# DeepSeek-V2-Lite served at TP 1 and TP 2 on the same 2xH200 host, one request at a time
# (groundtruth/plans/h200x2-eager-extend-tp.yaml): server directory per rank count, run per prompt length.
SERVED_RANK_SERVERS = {1: Path("h200/deepseek-v2-lite-tp1-eager"), 2: Path("h200/deepseek-v2-lite-tp2-eager")}
# the same at 4 ranks, on a 4-GPU host with its own TP 1 server (groundtruth/plans/h200x4-eager-extend-tp4.yaml)
SERVED_RANK_SERVERS_TP4 = {
    1: Path("h200/deepseek-v2-lite-tp1-eager-x4"),
    4: Path("h200/deepseek-v2-lite-tp4-eager"),
}
SERVED_RANK_RUNS = {1024: "c1-1k-64", 128: "c1-128-64"}


def served_eager_rank_factor(corpus: Path, servers: dict[int, Path]) -> Ratio:
    """A served eager extend's host time per kernel at N tensor-parallel ranks over that at 1 on the same host
    (`servers`: {1: dir, N: dir}), per prompt length (median prefill stage over the kernels simperf counts), the
    median over the prompt lengths."""
    from simperf.accuracy.corpus import scenario_of

    scenario = scenario_of(corpus / V2_LITE_RUN)
    ranks = max(servers)
    ratios, parts = [], []
    for tokens, run in SERVED_RANK_RUNS.items():
        # the prefill stage (first scheduled -> prefill processed): at one request at a time, its served extend
        one, many = (_prefill_stage_ms(corpus / servers[tp] / run) for tp in (1, ranks))
        k1, kn = (_eager_kernels(scenario, tp, tokens) for tp in (1, ranks))
        ratios.append((many / kn) / (one / k1))
        parts.append(
            f"{tokens} tokens: {many:.1f} ms / {kn} kernels over {one:.1f} ms / {k1} = {ratios[-1]:.3f}"
        )
    return Ratio(float(np.median(ratios)), "; ".join(parts))


def served_eager_rank_factor_tp2(corpus: Path) -> Ratio:
    """Overheads.eager_extend_rank_factor_tp2's measurement: the served factor at 2 ranks."""
    return served_eager_rank_factor(corpus, SERVED_RANK_SERVERS)
