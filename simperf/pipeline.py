"""`predict`: scenario -> resolved settings -> perf database -> cost model -> simulation -> bench_serving metrics.

The one place where the pipeline's stages meet; the CLI, sweeps and tests call this.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simperf.costmodel.step import SGLangStepCost
from simperf.hardware.catalog import GpuSpec
from simperf.models.arch import ModelArch
from simperf.perfdb.db import PerfDB, shipped_calibration_dir
from simperf.perfdb.locate import CalibrationError, check_directory, check_rows, choose_directory
from simperf.records import RequestRecords
from simperf.report.arguments import bench_arguments
from simperf.report.inflight import InFlight, check_closed_loop, records_in_flight
from simperf.report.metrics import summarize
from simperf.runsize import check_requests_size, check_workload_size, memory_limit_bytes
from simperf.scenario.layout import idle_gpus
from simperf.scenario.models import ExtendHostTime, Overheads, Scenario
from simperf.scenario.overheads_read import check_overheads_read
from simperf.scenario.pd import check_kv_compatible
from simperf.scenario.resolve import resolve
from simperf.scenario.resolved import ResolvedServing
from simperf.sim.disagg import Pool, simulate_disaggregated
from simperf.sim.engine import SimStats, Simulator
from simperf.sim.steplog import StepLog
from simperf.sim.trace import RequestTrace
from simperf.workload.requests import RequestSet, build_requests
from simperf.workload.summary import hit_rate_over_time


class UnsupportedScenario(ValueError):
    """A scenario asks for something this version of the simulator does not model yet."""


class NothingCompleted(ValueError):
    """Every request was rejected: bench_serving's metrics of zero requests would be a silent wrong answer."""


# the note that counts requests `workload.over_context: drop` left out (sweep rows count them as failed)
DROPPED_NOTE = "Requests dropped (over the context length)"
CAPPED_NOTE = "Requests capped to the context length"


@dataclass
class Prediction:
    scenario: Scenario
    serving: ResolvedServing
    arch: ModelArch
    gpu: GpuSpec
    calibration_dir: Path | None
    cost: SGLangStepCost
    db: PerfDB
    records: RequestRecords
    stats: SimStats
    result: dict
    wall_s: float
    notes: dict[str, str] = field(default_factory=dict)
    in_flight: InFlight | None = None  # closed-loop runs: what the client kept in flight (report/inflight.py)
    trace: RequestTrace | None = None  # the requests followed by --trace-request
    # a PD pair's prefill server (its cost model and stats); `cost`, `stats` and `serving` are the decode server's
    prefill_server: tuple[SGLangStepCost, SimStats] | None = None

    @property
    def prefill_step(self) -> tuple[SGLangStepCost, SimStats]:
        """The cost model and stats of the server that runs the prompts' prefills: a PD pair's prefill server (the
        decode server's 'extends' are the transferred KV it receives), else the one server."""
        return self.prefill_server or (self.cost, self.stats)

    def extra(self) -> dict:
        """simperf's own numbers beside bench_serving's keys (JSON output)."""
        shares = self.stats.source_shares()
        s = self.serving
        return {
            "scenario": self.scenario.name,
            "model": self.arch.name,
            "gpu": self.gpu.key,
            "num_gpus": self.scenario.hardware.count,
            "calibration_dir": str(self.calibration_dir) if self.calibration_dir else None,
            "step_time_share_by_source": shares,
            "measured_share": shares["measured"] + shares["interpolated"],
            # ops no table of this GPU covers at all, priced by the bare roofline ("op (key)"): the text output's
            # WARNING line, so a script reading the JSON sees which numbers are estimates, not only their share
            "bare_roofline_ops": self.cost.bare_roofline_ops(),
            "iterations": self.stats.iterations,
            "extend_iterations": self.stats.extend_iterations,
            "decode_iterations": self.stats.decode_iterations,
            "cuda_graph_decode_iterations": self.stats.graph_iterations,
            "eager_decode_iterations": self.stats.eager_decode_iterations,
            # the share of the launched extends' step time that is the scheduler's CPU launching them
            "extend_host_share": self.stats.extend_host_share(),
            "gpu_busy_s": self.stats.gpu_busy_s,
            "retractions": self.stats.retractions,
            "rejected": [{"request": r, "reason": why} for r, why in self.stats.rejected],
            "kv_capacity_tokens_per_rank": s.max_total_tokens,
            "kv_peak_tokens_per_rank": self.stats.max_kv_used,
            "requests_per_dp_rank": self.stats.per_rank_requests,
            "per_dp_rank": per_rank_summary(self.records, self.serving.layout.dp_attention),
            "resolved": {
                "tp": s.layout.tp,
                "dp_attention": s.layout.dp_attention,
                "ep": s.layout.ep,
                "page_size": s.page_size,
                "kv_dtype": s.kv_dtype,
                "weight_dtype": s.weight_dtype,
                "prefill_backend": s.prefill_backend,
                "decode_backend": s.decode_backend,
                "chunked_prefill_size_per_rank": s.chunked_prefill_size,
                "max_running_requests_per_rank": s.max_running_requests,
                "cuda_graph_max_bs": s.cuda_graph_max_bs,
                "overlap_schedule": s.overlap_schedule,
                "notes": list(s.notes),
            },
            "simulation_wall_s": self.wall_s,
            "prefix_hit_rate_over_time": _hit_rate_over_time(self.records),
            "achieved_concurrency": self.in_flight.as_json() if self.in_flight is not None else None,
            "idle_gpus": self.scenario.hardware.count - gpus_in_use(self.scenario),
            # the host CPU speed the host-side costs were scaled to (docs/overheads.md "Hosts")
            "host_speed": self.scenario.hardware.resolved_host_speed,
            "host_speed_given": self.scenario.hardware.host_speed is not None,
            # the text output's simperf section, warnings included (output lengths upper bounds, requests capped to
            # the context, the API server setting the pace): without it a JSON reader saw none of them
            "notes": dict(self.notes),
        }


def _hit_rate_over_time(records: RequestRecords, bins: int = 20) -> list[float | None]:
    """Share of prompt tokens served from the prefix cache, in `bins` equal slices of the run (by send time)."""
    if not len(records) or not records.cached_tokens.any():
        return []
    rates = hit_rate_over_time(records.send_s, records.cached_tokens, records.input_len, bins)
    return [None if r != r else float(r) for r in rates]


def per_rank_summary(records: RequestRecords, dp: int) -> list[dict]:
    """Load and latency per DP rank: imbalance between ranks shows here (requests, tokens, TTFT, TPOT)."""
    out = []
    first = records.chunk_time_s[records.chunk_offsets[:-1]] if len(records) else np.zeros(0)
    ttft = first - records.send_s
    latency = records.finish_s - records.send_s
    many = records.output_len > 1
    tpot = np.where(many, (latency - ttft) / np.maximum(records.output_len - 1, 1), np.nan)
    for rank in range(dp):
        mine = records.dp_rank == rank
        out.append(
            {
                "rank": rank,
                "completed": int(mine.sum()),
                "input_tokens": int(records.input_len[mine].sum()),
                "output_tokens": int(records.output_len[mine].sum()),
                "mean_ttft_ms": float(ttft[mine].mean() * 1000) if mine.any() else None,
                "mean_tpot_ms": float(np.nanmean(tpot[mine & many]) * 1000) if (mine & many).any() else None,
            }
        )
    return out


def check_supported(scenario: Scenario, field: str = "serving") -> None:
    """What a prediction needs that the schema leaves optional; `field`: where the scenario's serving block sits in
    the file (a PD pair checks each side's, named disaggregation.prefill / .decode)."""
    if scenario.disaggregation is not None:
        for name in ("prefill", "decode"):
            side = scenario.model_copy(update={"serving": getattr(scenario.disaggregation, name)})
            check_supported(side.model_copy(update={"disaggregation": None}), f"disaggregation.{name}")
        return
    spec = scenario.serving.speculative
    if spec is not None and spec.accept_length is None:
        raise UnsupportedScenario(
            f"{field}.speculative.accept_length: required — the mean accepted tokens per verify step including "
            "the bonus token (SGLang logs it as accept len; e.g. {mean: 2.4}, optionally with min and max)"
        )


def open_perfdb(
    scenario: Scenario,
    gpu: GpuSpec,
    override: Path | None = None,
    roofline_only: bool = False,
    gpu_field: str = "hardware.gpu",
) -> tuple[PerfDB, Path | None]:
    """The tables a prediction reads (perfdb/locate.py refuses a missing, empty or other GPU's directory);
    roofline_only: no tables at all, every kernel time a roofline estimate (asked for explicitly)."""
    if roofline_only:
        if override is not None:
            raise CalibrationError("--roofline-only: reads no tables; leave out --calibration")
        if scenario.calibration_dir is not None:
            # the scenario's tables were passed over without a word, while --calibration beside it is refused
            raise CalibrationError(
                f"--roofline-only: reads no tables, and the scenario's calibration_dir names "
                f"{scenario.calibration_dir}; drop one of them (--set calibration_dir= drops it)"
            )
        return PerfDB.empty(gpu), None
    choice = choose_directory(override, scenario.calibration_dir, shipped_calibration_dir(gpu.key), gpu)
    check_directory(choice)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PerfDB warns of another GPU's tables; check_rows refuses them
        db = PerfDB.load(choice.directory, gpu, sglang_version=scenario.serving.sglang_version)
    check_rows(choice, db.table_rows(), gpu, gpu_field)
    return db, choice.directory


def vintage_notes(db: PerfDB, sglang_version: str) -> dict[str, str]:
    """The third-party table vintages a prediction used (perfdb/vintage.py), for the report."""
    if not db.vintages:
        return {}
    sglang = sorted({v.chosen for v in db.vintages if v.framework == "sglang"})
    fallback = any(v.fallback for v in db.vintages)
    text = f"sglang {', '.join(sglang)}" if sglang else "none of SGLang"
    if fallback:
        text += f" (none as old as {sglang_version}: the oldest on file)"
    return {"Third-party table vintage": text}


def _pool_scenario(scenario: Scenario, serving) -> Scenario:
    hardware = scenario.hardware.model_copy(update={"count": serving.tp})
    return scenario.model_copy(update={"serving": serving, "hardware": hardware, "disaggregation": None})


@dataclass(frozen=True)
class RunGuards:
    """How big a run may get and who hears about its progress (runsize.py)."""

    memory_limit_bytes: float | None = None  # None: the documented default (runsize.memory_limit_bytes)
    on_progress: Callable[[int, int], None] | None = None  # (finished requests, total)

    def limit(self) -> float:
        return memory_limit_bytes() if self.memory_limit_bytes is None else self.memory_limit_bytes


def _no_phase(_text: str) -> None:
    pass


def predict(
    scenario: Scenario,
    calibration_dir: Path | None = None,
    step_log: StepLog | None = None,
    roofline_only: bool = False,
    guards: RunGuards | None = None,
    on_phase: Callable[[str], None] = _no_phase,
    trace_requests: list[int] | None = None,
) -> Prediction:
    """step_log: when given, records what every iteration ran (simperf validate); not for disaggregated runs.
    roofline_only: price every kernel from the roofline, reading no tables (open_perfdb).
    guards: the memory limit (a run estimated beyond it is refused before anything is simulated) and a progress
    callback. on_phase: told the stage the prediction is in (a progress display). trace_requests: request ids whose
    life the simulator reports (`Prediction.trace`, `sim.trace.format_trace`); one server only."""
    if trace_requests and (scenario.fleet is not None or scenario.disaggregation is not None):
        raise UnsupportedScenario(
            "--trace-request follows a request through one server, not a fleet or PD pair"
        )
    if scenario.fleet is not None:
        if step_log is not None:
            raise UnsupportedScenario("fleet: step logging covers one server, not a fleet")
        if roofline_only:
            raise UnsupportedScenario("fleet: --roofline-only covers one server's prediction, not a fleet's")
        from simperf.fleet.predict import predict_fleet

        on_phase("simulating the fleet")
        return predict_fleet(scenario, calibration_dir, memory_limit=(guards or RunGuards()).limit())
    guards = guards or RunGuards()
    check_supported(scenario)
    check_workload_size(scenario.workload, guards.limit())
    if scenario.disaggregation is not None:
        if step_log is not None:
            raise UnsupportedScenario(
                "disaggregation: step logging covers one server, not a prefill/decode pair"
            )
        return _predict_disaggregated(scenario, calibration_dir, roofline_only, guards, on_phase)
    on_phase("applying SGLang's defaults")
    serving, arch, gpu = resolve(scenario)
    check_overheads_read(scenario, [(serving, arch)])
    on_phase("loading kernel tables")
    db, directory = open_perfdb(scenario, gpu, calibration_dir, roofline_only)
    overheads = scenario.host_overheads
    cost = SGLangStepCost(arch, serving, db, overheads)
    on_phase("building the workload")
    requests = _requests(scenario, arch, guards, serving.max_total_tokens)
    outside = [r for r in trace_requests or () if not 0 <= r < len(requests)]
    if outside:  # was simulated in full, then reported as "no record: rejected, or not part of the run"
        raise UnsupportedScenario(
            f"--trace-request {outside[0]}: this run's requests are numbered 0 to {len(requests) - 1}"
        )
    on_phase(f"simulating {len(requests.input_len):,} requests")
    trace = RequestTrace(frozenset(trace_requests)) if trace_requests else None
    simulator = Simulator(serving, cost, overheads, step_log=step_log, trace=trace)
    simulator.on_progress = guards.on_progress
    simulator.text_prompts = not scenario.workload.tokenize_prompt
    started = time.perf_counter()
    records, stats = simulator.run(
        requests.input_len,
        requests.output_len,
        requests.arrival_s,
        max_concurrency=scenario.workload.max_concurrency,
        ignore_eos=scenario.workload.ignore_eos,
        seed=scenario.workload.seed,
        block_hashes=requests.block_hashes,
        block_tokens=requests.hash_block_tokens,
    )
    wall = time.perf_counter() - started
    prediction = _finish(
        scenario, serving, arch, gpu, directory, cost, db, records, stats, requests, wall, {}
    )
    prediction.trace = trace
    return prediction


def _requests(scenario: Scenario, arch: ModelArch, guards: RunGuards, kv_pool_tokens: int) -> RequestSet:
    """The workload's requests, capped to what the server would run, refused when their streamed tokens would
    not fit the memory limit."""
    requests = build_requests(scenario.workload, context_len=arch.context_len, kv_pool_tokens=kv_pool_tokens)
    check_requests_size(requests, guards.limit())
    return requests


def nothing_completed(stats: SimStats, n: int) -> str:
    first = f" (first: request {stats.rejected[0][0]}: {stats.rejected[0][1]})" if stats.rejected else ""
    return f"workload: no request completed; {len(stats.rejected)} of {n} were rejected{first}"


API_SERVER_PACED = "WARNING: the API server sets the pace"
OUTPUT_UPPER_BOUND = "WARNING: output lengths are upper bounds"
EAGER_DECODE = "Decode steps without a CUDA graph"
DP_EAGER_RIDERS = "WARNING: DP attention with eager extends under load was measured low"
# what the DP-attention check found (docs/accuracy.md "DP attention, checked before its runs"), cause not established
DP_EAGER_RIDERS_TEXT = (
    "{n:,} extend iterations had a DP rank decoding without its CUDA graph beside a rank prefilling without one "
    "(the prefill graph is off here); in this regime real SGLang 0.5.17 (DeepSeek-V2-Lite, TP 2 / DP 2 on an H200 "
    "pair, at 8 and 16 requests/s and 16 streams) ran slower than simperf predicted: TPOT 6-25% and TTFT 16-34% "
    "low, while its decode steps and a profiled iteration of this kind are priced within 5%; the cause is not "
    'established (docs/accuracy.md, "DP attention, checked before its runs")'
)
SPECULATIVE_ONE_SERVER = "Speculative decoding's own costs measured on one kind of server"
# what the EAGLE measurements cover (docs/overheads.md "The speculative worker"); elsewhere they are estimates
SPECULATIVE_ONE_SERVER_TEXT = (
    "the speculative worker's idle GPU between its graphs and the tree draft's top-k sampling were measured on real "
    "SGLang 0.5.17 serving Llama-3.1-8B with a one-layer EAGLE draft on one H200 (chain 3/1/4 and tree 5/4/8, 1-48 "
    "running requests, random weights: accept length 1), its launch wait before the scheduler streams a batch on "
    "that target and Qwen3-8B (4/2/6) on two H200 hosts, where it varied 2x; "
    "other targets, drafts, GPUs, tensor-parallel sizes and accept lengths take them as estimates, and the accept "
    "length itself is an input (docs/overheads.md)"
)
HOST_BOUND_EXTENDS = "Extend launches bound by the host's CPU"
# the note's threshold: most of the extends' time is the scheduler launching them, so the host's own speed, not
# the GPU, sets TTFT (docs/overheads.md "Slow launches")
HOST_BOUND_SHARE = 0.5
HOST_BOUND_EXTENDS_TEXT = (
    "{share:.0%} of the extend iterations' time is the scheduler's CPU launching their kernels, priced at "
    "hardware.host_speed {speed} from launches at our hosts' usual speed; on a lent H200 host the same CPU work "
    "ran 1.3x its median or slower 20% of the time, in ~100 ms stretches, and a served DeepSeek-V2-Lite's identical "
    'launches took 55-95 ms, so TTFT here moves with the host between runs (docs/overheads.md "Slow launches")'
)
ACCEPT_LEN_UNUSED = "WARNING: the trace's accept_len is not used"
# a simperf trace's per-request accept_len is read (trace inspect shows its mean) but no simulator takes it: said
# here, or a trace of accept lengths 1.2 and one of 3.9 gave the same prediction without a word
ACCEPT_LEN_UNUSED_TEXT = (
    "the simulator does not take per-request accept lengths: every request's acceptance follows "
    "serving.speculative.accept_length (none without speculative decoding); set its mean (and min/max) from the "
    "trace's (`simperf trace inspect` prints the mean)"
)


WORKLOAD_NOTE = "Workload"
# how many of the dataset's notes (failed requests a bench_serving file's replay left out, one each) are listed
WORKLOAD_NOTES_LISTED = 3


def workload_notes(requests: RequestSet) -> dict[str, str]:
    """What the dataset left out or changed, for a server's and a fleet's notes alike: the requests
    `over_context: drop` left out (a sweep row counts them as failed, evaluate.failed_requests), and RequestSet.notes
    (a bench_serving file's failed requests, a trace shorter than num_prompts, output lengths of 0 priced as 1),
    built by the workload and once printed by nothing, so a prediction ran on fewer requests than asked without a
    word."""
    notes = {DROPPED_NOTE: str(requests.num_dropped)} if requests.num_dropped else {}
    if requests.notes:
        listed = "; ".join(requests.notes[:WORKLOAD_NOTES_LISTED])
        more = len(requests.notes) - WORKLOAD_NOTES_LISTED
        notes[WORKLOAD_NOTE] = listed + (f"; and {more} more" if more > 0 else "")
    return notes


def eager_decode_note(stats: SimStats, serving: ResolvedServing, host: ExtendHostTime) -> str:
    """How many decode steps ran outside CUDA graphs and the host time per kernel they were priced at
    (Overheads.eager_decode_us: an eager forward's measured value, or eager_launch_us_per_kernel where set)."""
    why = (
        "serving.disable_cuda_graph"
        if serving.cuda_graph_max_bs == 0
        else f"batches above cuda_graph_max_bs {serving.cuda_graph_max_bs}"
    )
    source = (
        "set by the scenario"
        if host.field == "eager_launch_us_per_kernel"
        else "an eager forward's measured host time, which the decode steps of the same one_batch records matched: "
        "Qwen3-8B at batch 1 on an H100, 26.8 ms a step against 437 x 64.5 us = 28.2 ms (docs/overheads.md)"
    )
    return (
        f"{stats.eager_decode_iterations:,} of {stats.decode_iterations:,} ({why}); each lasts at least its kernels "
        f"x Overheads.{host.label} = {host.us:.1f} us ({source})"
    )


def host_bound_note(stats: SimStats, host_speeds: Iterable[float]) -> str | None:
    """The HOST_BOUND_EXTENDS note where most of the extends' time is the scheduler launching them; None where it
    is not (a server's, a PD pair's or a fleet's stats alike; a fleet's groups may sit on hosts of other speeds)."""
    share = stats.extend_host_share()
    if share < HOST_BOUND_SHARE:
        return None
    return HOST_BOUND_EXTENDS_TEXT.format(
        share=share, speed=" / ".join(f"{x:g}" for x in sorted(set(host_speeds)))
    )


ONE_TIME_COMPILES = "One-time kernel compiles not priced"
# what the first-wave check measured (groundtruth/experiments/first-wave-h200/README.md): Triton specialises an integer
# argument on its divisibility by 16, so an extend whose token count a fused-MoE launch has not seen in that form
# compiles new kernel variants on the scheduler's thread, mid-launch
ONE_TIME_COMPILES_TEXT = (
    "an MoE model on Hopper runs SGLang's Triton fused-MoE kernel in extends without a CUDA graph, and some prompts "
    "here give it a routed-row count (top-k x tokens) not divisible by 16; on a lent H200, real SGLang 0.5.17 "
    "serving "
    "DeepSeek-V2-Lite compiled two variants of that kernel (0.47 s) at the first such extend the server ever ran, "
    "inside the first wave of a 16-stream load (its median TTFT 797 ms, against 302 ms when the same load ran "
    "again), and another Triton kernel's variant later (+0.13 s), while the repeat compiled nothing; simperf "
    "prices a server that has compiled them "
    '(run such a load, or a warm-up with such lengths, first; docs/overheads.md "One-time compiles")'
)
# SGLang's MoE runner on SM100+ is flashinfer's ahead-of-time-built trtllm kernel (models/kernels.py moe_keys)
TRITON_MOE_MAX_SM_MAJOR = 9
# Triton specialises an integer argument on its divisibility by 16; the fused-MoE kernel's num_valid_tokens is
# top-k x tokens
TRITON_DIVISIBILITY = 16


def one_time_compile_note(arch: ModelArch, cost: SGLangStepCost, input_len: np.ndarray) -> str | None:
    """The ONE_TIME_COMPILES note where a real server would compile fused-MoE kernel variants on first sight of a
    prompt length: an MoE model on Hopper whose extends of such a prompt run eager, and a prompt whose top-k x
    tokens is not divisible by 16; None elsewhere. An extend that replays the prefill CUDA graph runs the kernel at a
    captured size, compiled when the server captured it."""
    if not arch.is_moe or cost.settings.sm_major > TRITON_MOE_MAX_SM_MAJOR or not len(input_len):
        return None
    if cost.serving.prefill_cuda_graph:
        # the graph holds every extend up to the chunk size, but a DSA model's only up to its sparse-graph limit
        limit = cost.settings.dsa_sparse_graph_max_tokens
        input_len = input_len[input_len > limit] if limit else input_len[:0]
    odd = (input_len * arch.experts_per_token) % TRITON_DIVISIBILITY != 0
    return ONE_TIME_COMPILES_TEXT if np.any(odd) else None


def api_server_paced_note(
    stats: SimStats, serving: ResolvedServing, overheads: Overheads, host_speed: float
) -> str | None:
    """The API_SERVER_PACED warning where streamed chunks queued for the API server longer than its egress, with
    the per-chunk costs that priced it; None where they did not."""
    if stats.frontend_max_wait_s * 1e6 <= overheads.egress_us:
        return None
    return (
        f"streamed chunks queued up to {stats.frontend_max_wait_s * 1e3:.0f} ms for SGLang's API server "
        f"({overheads.frontend_us_per_chunk_for(serving.enable_metrics):.3g} us per chunk + "
        f"{overheads.frontend_us_per_token_for(serving.incremental_streaming_output):.3g} us per output token "
        f"it carries, x (1 + {overheads.frontend_share_per_open_request:.3g} per open request), "
        f"at hardware.host_speed {host_speed:g}, metrics "
        f"{'on' if serving.enable_metrics else 'off'}, "
        f"{'incremental' if serving.incremental_streaming_output else 'cumulative'} streaming; "
        "measured on our hosts at 56-116 us a chunk with metrics on and cumulative streaming: a "
        "faster host CPU streams faster, --set hardware.host_speed=X, or overheads.frontend_us_per_chunk=US "
        "for yours, which metrics_us_per_chunk adds to where metrics are on), so TPOT and TTFT here follow the "
        "host, not the GPU (docs/overheads.md)"
    )


def prefix_cache_note(scenario: Scenario, serving: ResolvedServing, records: RequestRecords) -> str:
    """Whether the radix cache is on, and the share of prompt tokens it served."""
    prompt = float(records.input_len.sum()) or 1.0
    pd = scenario.disaggregation
    # a PD pair's cache is its prefill server's (SGLang's decode server keeps none)
    off = serving.disable_radix_cache if pd is None else pd.prefill.disable_radix_cache
    state = ("off (--disable-radix-cache)" if off else "on") + (" (prefill server)" if pd is not None else "")
    return f"{state}, {100 * float(records.cached_tokens.sum()) / prompt:.1f}% of prompt tokens hit"


def _finish(
    scenario,
    serving,
    arch,
    gpu,
    directory,
    cost,
    db,
    records,
    stats,
    requests,
    wall,
    extra_notes,
    prefill_cost=None,
):
    """The prediction with its notes; `cost` is the server's (a PD pair's decode server's), `prefill_cost` the cost
    model of the server that runs the prompts' extends where that is another (a PD pair's prefill server)."""
    if len(requests) and not len(records):
        raise NothingCompleted(nothing_completed(stats, len(requests)))
    # bench_serving's clock also waits out the sender's last sleep after the final request
    records.duration_s = max(records.duration_s, requests.sender_done_s)
    result = {**bench_arguments(scenario.workload), **summarize(records)}
    shares = stats.source_shares()
    notes = {
        "Step time from measured tables": f"{100 * (shares['measured'] + shares['interpolated']):.1f}%",
        "Step time from roofline estimates": f"{100 * shares['roofline']:.1f}%",
        "Step time extrapolated": f"{100 * shares['extrapolated']:.1f}%",
        "Step time from named constants": f"{100 * shares['constant']:.1f}%",
        "KV pool (tokens per DP rank)": f"{serving.max_total_tokens:,}",
        "Rejected requests": str(len(stats.rejected)),
        "Retractions": str(stats.retractions),
        **extra_notes,
    }
    paced = api_server_paced_note(stats, serving, cost.overheads, scenario.hardware.resolved_host_speed)
    if paced is not None:
        notes[API_SERVER_PACED] = paced
    if directory is None:
        notes["Calibration tables"] = "none (--roofline-only): every kernel time is a roofline estimate"
    if not scenario.workload.ignore_eos:
        notes[OUTPUT_UPPER_BOUND] = (
            "workload.ignore_eos is false (--disable-ignore-eos): the server stops a request at the model's EOS, "
            "which simperf cannot know; every request here generates its whole output_len (max_new_tokens), so "
            "output tokens, E2E latency and load are upper bounds (docs/workload.md)"
        )
    if requests.num_capped:
        notes[CAPPED_NOTE] = str(requests.num_capped)
    if requests.accept_len is not None:
        notes[ACCEPT_LEN_UNUSED] = ACCEPT_LEN_UNUSED_TEXT
    if stats.eager_decode_iterations:
        notes[EAGER_DECODE] = eager_decode_note(stats, serving, cost.eager_decode_host)
    if serving.speculative is not None:
        notes[SPECULATIVE_ONE_SERVER] = SPECULATIVE_ONE_SERVER_TEXT
    host_bound = host_bound_note(stats, [scenario.hardware.resolved_host_speed])
    if host_bound is not None:
        notes[HOST_BOUND_EXTENDS] = host_bound
    compiles = one_time_compile_note(arch, prefill_cost or cost, requests.input_len)
    if compiles is not None:
        notes[ONE_TIME_COMPILES] = compiles
    if stats.rider_extend_iterations and not serving.prefill_cuda_graph:
        notes[DP_EAGER_RIDERS] = DP_EAGER_RIDERS_TEXT.format(n=stats.rider_extend_iterations)
    notes.update(workload_notes(requests))
    if requests.block_hashes is not None and len(records):
        notes["Prefix cache"] = prefix_cache_note(scenario, serving, records)
    if shares["third_party"] > 0:
        notes["Step time from third-party tables"] = f"{100 * shares['third_party']:.1f}%"
    notes.update(vintage_notes(db, scenario.serving.sglang_version))
    if shares["scaled_key"] > 0:
        notes["Step time from other keys' tables (scaled-key)"] = f"{100 * shares['scaled_key']:.1f}%"
    bare = cost.bare_roofline_ops()
    if bare:  # no table of these ops on this GPU at all: say so loudly
        notes["WARNING: ops with no table on this GPU (bare roofline)"] = "; ".join(bare)
    idle = idle_gpus(scenario.hardware.count, gpus_in_use(scenario))
    if idle is not None:
        notes["Idle GPUs"] = idle
    notes["Host CPU speed (hardware.host_speed)"] = scenario.hardware.host_speed_label
    held = _closed_loop(scenario.workload, records, requests, stats)
    if held is not None:
        notes["Achieved concurrency (while sending)"] = held.describe()
    return Prediction(
        scenario, serving, arch, gpu, directory, cost, db, records, stats, result, wall, notes, held
    )


def gpus_in_use(scenario: Scenario) -> int:
    """GPUs the predicted server (or prefill + decode pair) runs on; the rest of hardware.count is idle."""
    if scenario.disaggregation is not None:
        return scenario.disaggregation.prefill.tp + scenario.disaggregation.decode.tp
    return scenario.serving.tp


def _closed_loop(workload, records: RequestRecords, requests, stats: SimStats) -> InFlight | None:
    """Requests in flight under --max-concurrency, checked: never above the limit, and at the limit while
    sending when every request is ready from the start (rate inf) and none was rejected."""
    if workload.max_concurrency is None:
        return None
    held = records_in_flight(records, workload.max_concurrency)
    saturated = (
        bool(len(requests)) and float(np.max(requests.arrival_s)) == 0.0 and not stats.rejected
    ) and len(requests) > workload.max_concurrency
    check_closed_loop(held, saturated)
    return held


def _predict_disaggregated(
    scenario: Scenario,
    calibration_dir: Path | None,
    roofline_only: bool,
    guards: RunGuards,
    on_phase: Callable[[str], None],
) -> Prediction:
    spec = scenario.disaggregation
    pools = []
    overheads = scenario.host_overheads
    on_phase("loading kernel tables")
    for name, serving_spec in (("prefill", spec.prefill), ("decode", spec.decode)):
        resolved, arch, gpu = resolve(_pool_scenario(scenario, serving_spec), f"disaggregation.{name}")
        db, directory = open_perfdb(scenario, gpu, calibration_dir, roofline_only)
        cost = SGLangStepCost(arch, resolved, db, overheads)
        kv_bytes = arch.kv_bytes_per_token_per_rank(
            resolved.layout, resolved.kv_dtype, resolved.decode_backend
        )
        pools.append(Pool(resolved, cost, kv_bytes))
    check_kv_compatible(
        [("disaggregation.prefill", pools[0].serving)], [("disaggregation.decode", pools[1].serving)]
    )
    check_overheads_read(scenario, [(pool.serving, arch) for pool in pools])
    pool_tokens = min(pool.serving.max_total_tokens for pool in pools)
    requests = _requests(scenario, arch, guards, pool_tokens)
    on_phase(f"simulating {len(requests.input_len):,} requests on a prefill and a decode server")
    started = time.perf_counter()
    records, dstats = simulate_disaggregated(
        pools[0],
        pools[1],
        overheads,
        requests.input_len,
        requests.output_len,
        requests.arrival_s,
        link_bytes_per_s=spec.kv_link_gbytes_per_s * 1e9,
        link_latency_s=spec.kv_link_latency_us * 1e-6,
        max_concurrency=scenario.workload.max_concurrency,
        ignore_eos=scenario.workload.ignore_eos,
        seed=scenario.workload.seed,
        on_progress=guards.on_progress,
        text_prompts=not scenario.workload.tokenize_prompt,
        block_hashes=requests.block_hashes,
        block_tokens=requests.hash_block_tokens,
    )
    wall = time.perf_counter() - started
    stats = dstats.decode
    stats.time_by_source_us = dstats.prefill.time_by_source_us + dstats.decode.time_by_source_us
    # the pair's extends run on its prefill server: their launches are what the host-bound note reads
    stats.extend_host_s += dstats.prefill.extend_host_s
    stats.extend_step_s += dstats.prefill.extend_step_s
    stats.rejected = records.extra.get("rejected", [])
    notes = {
        "Prefill server": f"tp={pools[0].serving.layout.tp}, dp_attention={pools[0].serving.layout.dp_attention}, "
        f"{dstats.prefill.extend_iterations} prefill iterations",
        "Decode server": f"tp={pools[1].serving.layout.tp}, dp_attention={pools[1].serving.layout.dp_attention}, "
        f"{dstats.decode.decode_iterations} decode iterations",
        "Mean KV transfer (ms)": f"{dstats.mean_transfer_ms:.2f}",
    }
    prediction = _finish(
        scenario,
        pools[1].serving,
        arch,
        gpu,
        directory,
        pools[1].cost,
        db,
        records,
        stats,
        requests,
        wall,
        notes,
        prefill_cost=pools[0].cost,  # the pair's extends run there (its decode server has no prefill graph)
    )
    prediction.prefill_server = (pools[0].cost, dstats.prefill)
    return prediction
