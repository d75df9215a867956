"""Mutation check of the simulator's fast paths: each mutation changes one fast path's cost by 1% (or drops the
eager-launch overhead from it) in a copy of the tree, and the tests that guard the fast paths must fail.

Run:  python benchmarks/mutations.py [--only ID] [--tests tests/test_fast_paths.py ...]

Prints one markdown row per mutation: what was changed, and which tests failed (none: the mutation survived).
docs/testing.md records the last run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = (
    "simperf",
    "tests",
    "scenarios",
    "calibration",
    "validation",
    "groundtruth",
    "docs",
    "benchmarks",
    "pyproject.toml",
)
GUARDS = (
    "tests/test_fast_paths.py",
    "tests/test_sim_real_cost.py",
    "tests/test_costmodel_step.py",
    "tests/test_sim_scheduler.py",
    "tests/test_report_breakdown.py",
    "tests/test_frontend.py",
    "tests/test_sim_extend_launch.py",
    "tests/test_sim_tokenize.py",
    "tests/test_host_speed.py",
    "tests/test_groundtruth_corpus.py",
    "tests/test_ctastream.py",
    "tests/test_prefillplan.py",
    "tests/test_ragged_decode.py",
    "tests/test_shared_reads.py",
    "tests/test_calibrate_runner.py",
    "tests/test_moe_default_tiles.py",
    "tests/test_workplan.py",
    "tests/test_spec_verify.py",
    "tests/test_spec_launch_wait.py",
)


@dataclass(frozen=True)
class Mutation:
    id: str
    what: str
    path: str
    old: str
    new: str


STEP = "simperf/costmodel/step.py"
ENGINE = "simperf/sim/engine.py"
PRICING = "simperf/sim/pricing.py"
SLICE = "simperf/perfdb/axisslice.py"
MUTATIONS = (
    Mutation(
        "fresh-total",
        "fresh_prefill_totals: step total +1%",
        STEP,
        "cached = self._fresh_totals[tokens] = (float(row.sum()), row.tolist())",
        "cached = self._fresh_totals[tokens] = (float(row.sum()) * 1.01, row.tolist())",
    ),
    Mutation(
        "fresh-split",
        "fresh_prefill_totals: per-source split +1%",
        STEP,
        "cached = self._fresh_totals[tokens] = (float(row.sum()), row.tolist())",
        "cached = self._fresh_totals[tokens] = (float(row.sum()), [v * 1.01 for v in row.tolist()])",
    ),
    Mutation(
        "fresh-table",
        "_fresh_prefill_table (every length at once): +1%",
        STEP,
        "return np.concatenate([np.zeros((1, NUM_SOURCES)), out])",
        "return np.concatenate([np.zeros((1, NUM_SOURCES)), out * 1.01])",
    ),
    Mutation(
        "fresh-single",
        "_single_fresh_prefill (one length): +1%",
        STEP,
        "out = rows_cost + table.cost(tokens, 1)",
        "out = (rows_cost + table.cost(tokens, 1)) * 1.01",
    ),
    Mutation(
        "decode-base",
        "decode_totals: row-op base +1% (list and array paths)",
        STEP,
        "return base, base.tolist(), float(base.sum()), ops, eager, pad, div",
        "return base, base.tolist(), float(base.sum()) * 1.01, ops, eager, pad, div",
    ),
    Mutation(
        "decode-list",
        "decode_totals, short segments (Python floats): attention +1%",
        STEP,
        "us_list = [u * count for u in us_scalar]",
        "us_list = [u * count * 1.01 for u in us_scalar]",
    ),
    Mutation(
        "decode-array",
        "decode_totals, long segments (arrays): attention +1%",
        STEP,
        "                us = us * count\n",
        "                us = us * count * 1.01\n",
    ),
    Mutation(
        "values-list",
        "AxisSlice.values_list (scalar curve lookup): +1%",
        SLICE,
        "out.append(math.exp(ly))",
        "out.append(math.exp(ly) * 1.01)",
    ),
    Mutation(
        "decode-no-eager",
        "decode_totals: eager-launch overhead dropped",
        STEP,
        "        excess = None\n        if eager is not None:",
        "        excess = None\n        if False:",
    ),
    Mutation(
        "decode-split",
        "decode_totals add_by_source: per-source split +1%",
        STEP,
        "            for i, o in enumerate(out):\n                acc[i] += o",
        "            for i, o in enumerate(out):\n                acc[i] += o * 1.01",
    ),
    Mutation(
        "graph-entry",
        "shared CUDA-graph entry: row-op base +1%",
        STEP,
        "            hit = (base, attention, None if graph else overhead)",
        "            hit = (base * (1.01 if graph else 1.0), attention, None if graph else overhead)",
    ),
    Mutation(
        "graph-entry-bs",
        "shared CUDA-graph entry built for the first batch size instead of the bucket",
        STEP,
        "rows, attention_ops_ = self.decode_parts(rows_bs, padded_bs)",
        "rows, attention_ops_ = self.decode_parts(bs, padded_bs)",
    ),
    Mutation(
        "sim-fresh-extend",
        "Simulator._fresh_extend: step time +1%",
        ENGINE,
        "        cpu_next = self._launch(batch, step_us, host_us)\n        self._observe()\n        return cpu_next\n\n"
        "    def _trace_extend",
        "        cpu_next = self._launch(batch, step_us * 1.01, host_us)\n        self._observe()\n"
        "        return cpu_next\n\n    def _trace_extend",
    ),
    Mutation(
        "sim-decode-kv",
        "Simulator fast decode segment: KV totals +1% (short segments)",
        PRICING,
        "kv_totals: list[float] | np.ndarray = [kv0 + kv_step * j for j in range(k)]",
        "kv_totals: list[float] | np.ndarray = [(kv0 + kv_step * j) * 1.01 for j in range(k)]",
    ),
    Mutation(
        "sim-per-request-cpu",
        "Simulator: the CPU's time per request of a processed batch +1%",
        ENGINE,
        "self.proc_per_req_s = overheads.process_us_per_running_request * US",
        "self.proc_per_req_s = overheads.process_us_per_running_request * US * 1.01",
    ),
    Mutation(
        "eager-extend-host",
        "Overheads.extend_launch_us: the eager extend's host time per kernel +1%",
        "simperf/scenario/models.py",
        "            return ExtendHostTime(getattr(self, field) * factor, label, field, factor, factor_field)",
        "            return ExtendHostTime(getattr(self, field) * factor * 1.01, label, field, factor, factor_field)",
    ),
    Mutation(
        "api-server-chunk",
        "API server queue (sim/frontend.py): the time per streamed chunk +1%",
        "simperf/sim/frontend.py",
        "self.chunk_s = us_per_chunk * US",
        "self.chunk_s = us_per_chunk * US * 1.01",
    ),
    Mutation(
        "api-server-carried-token",
        "API server queue (sim/frontend.py): the time per token a cumulative chunk carries +1%",
        "simperf/sim/frontend.py",
        "self.token_s = us_per_streamed_token * US",
        "self.token_s = us_per_streamed_token * US * 1.01",
    ),
    Mutation(
        "api-server-open-growth",
        "API server queue (sim/frontend.py): the growth of a chunk's time per open request +1%",
        "simperf/sim/frontend.py",
        "self.share_per_open = share_per_open_request",
        "self.share_per_open = share_per_open_request * 1.01",
    ),
    Mutation(
        "api-server-request-leak",
        "API server queue (sim/engine.py _process): a finished request is never closed (stays open)",
        "simperf/sim/engine.py",
        "            self.frontend.request_closed(last_chunk_s)",
        "            pass",
    ),
    Mutation(
        "stream-interval-phase",
        "--stream-interval (sim/rank.py chunks_after_step): a request's send point one token late",
        "simperf/sim/rank.py",
        "phase = (1 - after) % self.stream_interval",
        "phase = (2 - after) % self.stream_interval",
    ),
    Mutation(
        "stream-interval-records",
        "--stream-interval (sim/streams.py _sent_chunks): the client's chunks grouped one token late",
        "simperf/sim/streams.py",
        "sent = (count % interval == 1)",
        "sent = (count % interval == 2)",
    ),
    Mutation(
        "shared-read-cost",
        "shared prefix reads (costmodel/step.py): a duplicated read's saving +1%",
        "simperf/costmodel/step.py",
        "return 0.0 if found is None else 1.0 - found[0]",
        "return 0.0 if found is None else (1.0 - found[0]) * 1.01",
    ),
    Mutation(
        "shared-read-derivation",
        "shared prefix reads (perfdb/shared_reads.py): the effective KV length's shared part +1%",
        "simperf/perfdb/shared_reads.py",
        "return kv_mean - (1.0 - read_cost) * duplicated_per_request",
        "return kv_mean - (1.0 - read_cost) * duplicated_per_request * 1.01",
    ),
    Mutation(
        "shared-reads-leak",
        "shared prefix reads (sim/rank.py _leave): a request leaving the decode batch keeps reading",
        "simperf/sim/rank.py",
        "        self._stop_reading(r)\n        pos = self._running_pos.pop(r)",
        "        pos = self._running_pos.pop(r)",
    ),
    Mutation(
        "extend-launch-cpu",
        "extend launch (sim/engine.py _launch): the CPU time an extend's launch holds the scheduler +1%",
        "simperf/sim/engine.py",
        "else scheduled) + host_us * US",
        "else scheduled) + host_us * US * 1.01",
    ),
    Mutation(
        "tokenize-prompt",
        "API server tokenisation (sim/client.py handled_s): the time per text-prompt token +1%",
        "simperf/sim/client.py",
        "prompt_tokens * self.tokenize_s_per_token\n",
        "prompt_tokens * self.tokenize_s_per_token * 1.01\n",
    ),
    Mutation(
        "api-server-receive",
        "API server receive (sim/client.py handled_s): the time per request, one at a time +1%",
        "simperf/sim/client.py",
        "send_s, self.receive_s_per_request + prompt_tokens",
        "send_s, self.receive_s_per_request * 1.01 + prompt_tokens",
    ),
    Mutation(
        "api-server-finish",
        "API server finishing (sim/frontend.py receive): a request's finish, taking turns with the intake, +1%",
        "simperf/sim/frontend.py",
        "            start += self.finish_s\n",
        "            start += self.finish_s * 1.01\n",
    ),
    Mutation(
        "eager-rank-factor-tp2",
        "served eager extend at 2 TP ranks (scenario/models.py Overheads.eager_extend_rank_factor_tp2): +1%",
        "simperf/scenario/models.py",
        "        default=1.497,\n",
        "        default=1.512,\n",
    ),
    Mutation(
        "flashmla-segment-cost",
        "FlashMLA decode: what a request segment costs its SM part (perfdb/workplan.py FLASHMLA_SEGMENT_BLOCKS): +1%",
        "simperf/perfdb/workplan.py",
        "FLASHMLA_SEGMENT_BLOCKS = 3.0\n",
        "FLASHMLA_SEGMENT_BLOCKS = 3.03\n",
    ),
    Mutation(
        "client-burst",
        "bench_serving burst (sim/client.py _send_until): the time before a burst reaches the API server +1%",
        "simperf/sim/client.py",
        "            written = send + len(burst) * max(self.burst_s, self.setup_s)\n",
        "            written = send + len(burst) * max(self.burst_s * 1.01, self.setup_s)\n",
    ),
    Mutation(
        "host-speed",
        "Overheads.on_host (scenario/models.py): every default host cost scaled to the scenario's host +1%",
        "simperf/scenario/models.py",
        "            factor = measured_on / host_speed\n",
        "            factor = measured_on / host_speed * 1.01\n",
    ),
    Mutation(
        "metrics-per-chunk",
        "Overheads.frontend_us_per_chunk_for (scenario/models.py): the --enable-metrics part of a chunk +1%",
        "simperf/scenario/models.py",
        "        return self.frontend_us_per_chunk + (self.metrics_us_per_chunk if enable_metrics else 0.0)\n",
        "        return self.frontend_us_per_chunk + (self.metrics_us_per_chunk * 1.01 if enable_metrics else 0.0)\n",
    ),
    Mutation(
        "decode-replay-gaps",
        "decode replay (costmodel/overhead.py): the GPU's idle time between a replay's kernels +1%",
        "simperf/costmodel/overhead.py",
        "            overheads.decode_graph_gap_us_per_kernel,\n",
        "            overheads.decode_graph_gap_us_per_kernel * 1.01,\n",
    ),
    Mutation(
        "kv-prefill-graph-reserve",
        "KV pool (sglang_defaults.py): SGLang's reservation per captured prefill graph size +1%",
        "simperf/sglang_defaults.py",
        "PREFILL_GRAPH_RESERVE_MB_PER_SIZE = 8\n",
        "PREFILL_GRAPH_RESERVE_MB_PER_SIZE = 8 * 1.01\n",
    ),
    Mutation(
        "kv-pre-load-used",
        "KV pool (scenario/resolve.py): the memory in use before the weights load +1%",
        "simperf/scenario/resolve.py",
        '    used, source = gpu.pre_load_used_bytes, "measured"\n',
        '    used, source = gpu.pre_load_used_bytes and int(gpu.pre_load_used_bytes * 1.01), "measured"\n',
    ),
    Mutation(
        "eager-rank-factor",
        "eager extend host time (scenario/models.py): the rank factor +1% where it applies",
        "simperf/scenario/models.py",
        "        return (1.0, None) if field is None else (getattr(self, field), field)\n",
        "        return (1.0, None) if field is None else (getattr(self, field) * 1.01, field)\n",
    ),
    Mutation(
        "prefix-path-ratio",
        "extend over a cached prefix (costmodel/prefix_path.py): SGLang's path ratio +1% in the step's pricing",
        "simperf/costmodel/prefix_path.py",
        "        return self._ratios.ratio(self._heads, self._kv_heads, q, prefix)\n",
        "        return self._ratios.ratio(self._heads, self._kv_heads, q, prefix) * 1.01\n",
    ),
    Mutation(
        "sglang-moe-first",
        "routed experts (models/kernels.py moe_keys): simperf's own fused-MoE tables preferred to SGLang's kernel",
        "simperf/models/kernels.py",
        '    backends = ("sglang_fused_moe", *backends)\n',
        '    backends = (*backends, "sglang_fused_moe")\n',
    ),
    Mutation(
        "moe-router",
        "the router top-k kernel's GPU time per MoE layer (costmodel/step.py `_decode_router_us`) +1%",
        "simperf/costmodel/step.py",
        "        return self.overheads.decode_moe_router_us * self.arch.num_moe_layers\n",
        "        return self.overheads.decode_moe_router_us * self.arch.num_moe_layers * 1.01\n",
    ),
    Mutation(
        "prefix-linear-interpolation",
        "extend attention between two measured prefixes (perfdb/db.py): the linear step 1% steeper",
        "simperf/perfdb/db.py",
        "        us = us_low + (us_high - us_low) * (prefix - low) / (high - low)\n",
        "        us = us_low + (us_high - us_low) * (prefix - low) / (high - low) * 1.01\n",
    ),
    Mutation(
        "gemm-heaviest-first",
        "calibration order (calibrate/runner.py): GEMMs timed heaviest first",
        "simperf/calibrate/runner.py",
        "        group.sort(key=gemm_work)  # stable: every other op keeps the grid's order\n",
        "        group.sort(key=gemm_work, reverse=True)\n",
    ),
    Mutation(
        "cta-stream-rate",
        "ragged GQA decode (perfdb/ctastream.py): one CTA's lone stream rate +1%",
        "simperf/perfdb/ctastream.py",
        "    t_ragged = fluid_makespan_s([w * per_token for w in ragged], slots, bandwidth, rate)\n",
        "    t_ragged = fluid_makespan_s([w * per_token for w in ragged], slots, bandwidth, rate * 1.01)\n",
    ),
    Mutation(
        "prefill-plan-rate",
        "ragged flashinfer FA3 prefill (perfdb/prefillplan.py): the rate per unit of the busiest CTA's load +1%",
        "simperf/perfdb/prefillplan.py",
        "    return rates.floor_us + rates.rate_at(path) * path, path\n",
        "    return rates.floor_us + rates.rate_at(path) * 1.01 * path, path\n",
    ),
    Mutation(
        "decode-straggler",
        "a ragged decode step's time beyond its mean-KV price +1% (costmodel/step.py decode_straggler_us)",
        "simperf/costmodel/step.py",
        "        return max(extra, 0.0)\n",
        "        return max(extra * 1.01, 0.0)\n",
    ),
    Mutation(
        "eager-decode-host",
        "an eager decode's host time per kernel +1% (scenario/models.py eager_decode_us, the eager forward's "
        "measured value)",
        "simperf/scenario/models.py",
        '            return ExtendHostTime(self.eager_launch_us_per_kernel, field, field)\n        return self.extend_launch_us("", prefill_graph=False, dense_model=dense_model, tp_ranks=tp_ranks)\n',
        '            return ExtendHostTime(self.eager_launch_us_per_kernel, field, field)\n        found = self.extend_launch_us("", prefill_graph=False, dense_model=dense_model, tp_ranks=tp_ranks)\n        return found._replace(us=found.us * 1.01)\n',
    ),
    Mutation(
        "cuda-core-grid",
        "flashinfer's CUDA-core decode grid at group 2 one CTA per SM smaller (perfdb/workplan.py, measured 9)",
        "simperf/perfdb/workplan.py",
        "    (1, 128): 6, (2, 128): 9, (3, 128): 9,\n",
        "    (1, 128): 6, (2, 128): 8, (3, 128): 9,\n",
    ),
    Mutation(
        "spec-worker-idle",
        "the speculative worker's idle GPU per iteration +1% (scenario/models.py Overheads.spec_worker_idle_us, "
        "measured on served EAGLE decodes; added 2026-11-28, thirty-first session)",
        "simperf/scenario/models.py",
        "        default=1471.5,\n",
        "        default=1486.2,\n",
    ),
    Mutation(
        "spec-draft-topk",
        "the tree draft's top-k sampling per row +1% (costmodel/step.py draft_topk_us)",
        STEP,
        "        return spec.num_steps * o.spec_draft_topk_us_per_step + rows * per_row\n",
        "        return spec.num_steps * o.spec_draft_topk_us_per_step + rows * per_row * 1.01\n",
    ),
    Mutation(
        "spec-launch-wait",
        "the speculative launch's wait before the scheduler processes a batch +1% (sim/engine.py)",
        ENGINE,
        "            overheads.spec_launch_wait_us * US if serving.speculative is not None and self.overlap else 0.0\n",
        "            overheads.spec_launch_wait_us * US * 1.01 if serving.speculative is not None and self.overlap else 0.0\n",
    ),
    Mutation(
        "spec-draft-prefill-host",
        "the draft prefill's host time in a speculative extend +1% (costmodel/step.py spec_draft_prefill_host_us)",
        STEP,
        "        return 0.0 if self.serving.speculative is None else self.overheads.spec_draft_prefill_host_us\n",
        "        return 0.0 if self.serving.speculative is None else self.overheads.spec_draft_prefill_host_us * 1.01\n",
    ),
)


def run_one(mutation: Mutation, tests: list[str]) -> list[str]:
    """The tests that fail with the mutation applied (in a copy of the tree)."""
    with tempfile.TemporaryDirectory(prefix=f"mut-{mutation.id}-") as tmp:
        tree = Path(tmp)
        for name in COPIED:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, tree / name)
        target = tree / mutation.path
        text = target.read_text()
        if text.count(mutation.old) != 1:
            raise SystemExit(f"{mutation.id}: the text to mutate occurs {text.count(mutation.old)} times")
        target.write_text(text.replace(mutation.old, mutation.new))
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-rf",
                "-p",
                "no:cacheprovider",
                "--hypothesis-profile=mutation",
                *tests,
            ],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        return sorted(set(re.findall(r"^FAILED (\S+?)(?:\[| - |$)", proc.stdout, flags=re.MULTILINE)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="run the mutations whose id contains this")
    parser.add_argument("--tests", nargs="*", default=list(GUARDS))
    args = parser.parse_args()
    print("| mutation | change | failing tests |")
    print("|---|---|---|")
    survived = 0
    for mutation in MUTATIONS:
        if args.only not in mutation.id:
            continue
        failed = run_one(mutation, args.tests)
        survived += not failed
        names = ", ".join(f"`{f.split('/')[-1]}`" for f in failed) or "**none (survived)**"
        print(f"| `{mutation.id}` | {mutation.what} | {names} |", flush=True)
    sys.exit(1 if survived else 0)


if __name__ == "__main__":
    main()
