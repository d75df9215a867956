"""Bad and careless input across every command: each case must end with exactly one `error:` line naming the
field, option or file, a non-zero exit, no traceback (nor an "internal error", which is how a bug is reported),
and no file changed — neither the case's own inputs nor the shipped tables, scenarios, validation results or docs.

Scenario cases change one field of a small valid scenario; the others pass one bad option, path or file. GPU-side
commands (calibrate, validate) see a machine without a GPU (the device probe is replaced), as on CI.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pytest
import yaml
from sweepfixtures import sweep_dict
from typer.testing import CliRunner

from simperf.calibrate import runner as calibrate_runner
from simperf.cli import app

REPO = Path(__file__).resolve().parents[1]
WATCHED = ("calibration", "scenarios", "validation", "docs", "groundtruth")
runner = CliRunner()

GOOD = {
    "name": "good",
    "model": {"name": "qwen3-8b"},
    "hardware": {"gpu": "h100", "count": 1},
    "serving": {"tp": 1},
    "workload": {
        "dataset": {"kind": "random", "input_len": 256, "output_len": 16},
        "num_prompts": 10,
        "request_rate": 5,
    },
}
DELETE = object()


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]  # {ws} is the case's workspace, {repo} the repository
    expected: str  # a substring of the error line
    files: dict[str, str | bytes] = field(
        default_factory=dict
    )  # extra files written into the workspace first


# predict in flag mode replaying the workspace's mooncake trace (t.jsonl)
MOONCAKE_FLAGS = ("predict", "--model-path", "qwen3-8b", "--gpu", "h100", "--dataset-name", "mooncake",
                  "--dataset-path", "{ws}/t.jsonl")  # fmt: skip


def scenario_text(**changes) -> str:
    """GOOD with changes at dotted paths ("serving.tp": 3); DELETE removes a key. A trace dataset replays its own
    timestamps, so GOOD's request_rate is left out with it (unless the changes set one)."""
    data = json.loads(json.dumps(GOOD))
    dataset = changes.get("workload.dataset")
    if isinstance(dataset, dict) and dataset.get("kind") == "trace":
        changes = {"workload.request_rate": DELETE, **changes}
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = data
        for key in parents:
            node = node.setdefault(key, {})
        if value is DELETE:
            node.pop(last, None)
        else:
            node[last] = value
    return yaml.safe_dump(data)


def scenario_case(case_id: str, expected: str, **changes) -> Case:
    return Case(
        f"scenario-{case_id}", ("predict", "{ws}/bad.yaml"), expected, {"bad.yaml": scenario_text(**changes)}
    )


TRACE_LINE = '{"arrival_s": 0.0, "input_len": 100, "output_len": 10}\n'

SCENARIO_CASES = [
    scenario_case("gpu", "hardware.gpu: got 'h300'", **{"hardware.gpu": "h300"}),
    scenario_case("count-0", "hardware.count", **{"hardware.count": 0}),
    scenario_case("count-negative", "hardware.count", **{"hardware.count": -4}),
    scenario_case("count-huge", "hardware.count", **{"hardware.count": 100000}),
    scenario_case("count-text", "hardware.count", **{"hardware.count": "eight"}),
    scenario_case("tp-0", "serving.tp", **{"serving.tp": 0}),
    scenario_case("tp-3", "serving.tp: 3 cannot serve qwen3-8b", **{"serving.tp": 3, "hardware.count": 4}),
    scenario_case("tp-6", "serving.tp: 6 cannot serve qwen3-8b", **{"serving.tp": 6, "hardware.count": 8}),
    scenario_case(
        "tp-64", "serving.tp: 64 cannot serve qwen3-8b", **{"serving.tp": 64, "hardware.count": 64}
    ),
    scenario_case("tp-above-count", "needs at least that many GPUs", **{"serving.tp": 2}),
    scenario_case(
        "dp-not-dividing",
        "dp_attention (3) must divide tp (4)",
        **{"serving.tp": 4, "hardware.count": 4, "serving.dp_attention": 3},
    ),  # fmt: skip
    scenario_case("dp-0", "serving.dp_attention", **{"serving.dp_attention": 0}),
    scenario_case(
        "ep-not-dividing",
        "ep (3) must divide tp (4)",
        **{"serving.tp": 4, "hardware.count": 4, "serving.ep": 3},
    ),  # fmt: skip
    scenario_case("page-size-0", "serving.page_size", **{"serving.page_size": 0}),
    scenario_case("kv-dtype", "serving.kv_cache_dtype", **{"serving.kv_cache_dtype": "fp4"}),
    scenario_case("backend", "serving.attention_backend", **{"serving.attention_backend": "magic"}),
    scenario_case("chunk-0", "serving.chunked_prefill_size", **{"serving.chunked_prefill_size": 0}),
    scenario_case("chunk-negative", "serving.chunked_prefill_size", **{"serving.chunked_prefill_size": -5}),
    scenario_case("running-0", "serving.max_running_requests", **{"serving.max_running_requests": 0}),
    scenario_case("prefill-tokens-0", "serving.max_prefill_tokens", **{"serving.max_prefill_tokens": 0}),
    scenario_case("total-tokens-0", "serving.max_total_tokens", **{"serving.max_total_tokens": 0}),
    scenario_case("total-tokens-tiny", "too small to serve anything", **{"serving.max_total_tokens": 1}),
    scenario_case(
        "mem-fraction-above-1", "serving.mem_fraction_static", **{"serving.mem_fraction_static": 1.5}
    ),
    scenario_case("mem-fraction-0", "serving.mem_fraction_static", **{"serving.mem_fraction_static": 0}),
    scenario_case("mem-fraction-tiny", "does not fit", **{"serving.mem_fraction_static": 0.05}),
    scenario_case("graph-bs-0", "serving.cuda_graph_max_bs", **{"serving.cuda_graph_max_bs": 0}),
    scenario_case("policy", "serving.schedule_policy", **{"serving.schedule_policy": "lifo"}),
    scenario_case(
        "conservativeness", "serving.schedule_conservativeness", **{"serving.schedule_conservativeness": 0}
    ),  # fmt: skip
    scenario_case("balance", "serving.load_balance_method", **{"serving.load_balance_method": "random"}),
    scenario_case("misspelt-key", "serving.pagesize: unknown key", **{"serving.pagesize": 16}),
    scenario_case(
        "overlap-text", "serving.disable_overlap_schedule", **{"serving.disable_overlap_schedule": "maybe"}
    ),  # fmt: skip
    scenario_case(
        "spec-no-accept", "serving.speculative.accept_length", **{"serving.speculative": {"algorithm": "mtp"}}
    ),  # fmt: skip
    scenario_case(
        "spec-steps-0", "serving.speculative.num_steps", **{"serving.speculative": {"num_steps": 0}}
    ),
    scenario_case(
        "spec-accept-below-1",
        "serving.speculative.accept_length.mean",
        **{"serving.speculative": {"accept_length": {"mean": 0.5}}},
    ),  # fmt: skip
    scenario_case(
        "spec-algorithm", "serving.speculative.algorithm", **{"serving.speculative": {"algorithm": "medusa"}}
    ),  # fmt: skip
    scenario_case(
        "max-running-huge",
        "serving.max_running_requests: 1000000000 requests per rank need",
        **{"serving.max_running_requests": 10**9},
    ),  # fmt: skip
    scenario_case(
        "spec-accept-min-only",
        "serving.speculative.accept_length",
        **{"serving.speculative": {"accept_length": {"mean": 2.0, "min": 1.5}}},
    ),  # fmt: skip
    scenario_case(
        "spec-accept-min-above-mean",
        "serving.speculative.accept_length",
        **{"serving.speculative": {"accept_length": {"mean": 2.0, "min": 2.5, "max": 3.0}}},
    ),  # fmt: skip
    scenario_case("prompts-0", "workload.num_prompts", **{"workload.num_prompts": 0}),
    scenario_case(
        "token-ids-shared-prefix",
        "the shared_prefix dataset's prompts are text",
        **{
            "workload.tokenize_prompt": True,
            "workload.dataset": {"kind": "shared_prefix", "num_groups": 2, "prompts_per_group": 2},
            "workload.num_prompts": DELETE,
        },
    ),
    scenario_case("token-ids-text", "workload.tokenize_prompt", **{"workload.tokenize_prompt": "maybe"}),
    scenario_case("prompts-negative", "workload.num_prompts", **{"workload.num_prompts": -10}),
    scenario_case(
        "prompts-million",
        "workload.num_prompts: 1,000,000 requests",
        **{"workload.num_prompts": 1_000_000, "workload.dataset.output_len": 512},
    ),  # fmt: skip
    scenario_case("prompts-billion", "1,000,000,000 requests", **{"workload.num_prompts": 10**9}),
    scenario_case("prompts-float", "workload.num_prompts", **{"workload.num_prompts": 10.5}),
    scenario_case("rate-0", "workload.request_rate", **{"workload.request_rate": 0}),
    scenario_case("rate-negative", "workload.request_rate", **{"workload.request_rate": -1}),
    scenario_case("rate-text", "workload.request_rate", **{"workload.request_rate": "fast"}),
    scenario_case(
        "burstiness-poisson", "burstiness applies to arrival_process: gamma", **{"workload.burstiness": 2.0}
    ),  # fmt: skip
    scenario_case(
        "burstiness-0",
        "workload.burstiness",
        **{"workload.arrival_process": "gamma", "workload.burstiness": 0},
    ),  # fmt: skip
    scenario_case("arrival-process", "workload.arrival_process", **{"workload.arrival_process": "uniform"}),
    scenario_case("concurrency-0", "workload.max_concurrency", **{"workload.max_concurrency": 0}),
    scenario_case("warmup-negative", "workload.warmup_requests", **{"workload.warmup_requests": -1}),
    scenario_case("over-context", "workload.over_context", **{"workload.over_context": "truncate"}),
    scenario_case("dataset-kind", "workload.dataset", **{"workload.dataset": {"kind": "sharegpt"}}),
    scenario_case(
        "dataset-missing", "workload.dataset: required field is missing", **{"workload.dataset": DELETE}
    ),  # fmt: skip
    scenario_case("input-len-0", "workload.dataset.input_len", **{"workload.dataset.input_len": 0}),
    scenario_case("output-len-0", "workload.dataset.output_len", **{"workload.dataset.output_len": 0}),
    scenario_case("range-ratio-2", "workload.dataset.range_ratio", **{"workload.dataset.range_ratio": 2}),
    scenario_case(
        "fixed-without-len",
        "workload.dataset.input_len: required",
        **{"workload.dataset": {"kind": "fixed", "output_len": 4}},
    ),  # fmt: skip
    scenario_case(
        "trace-missing-file",
        "no such trace file",
        **{"workload.dataset": {"kind": "trace", "path": "nope.jsonl"}},
    ),  # fmt: skip
    scenario_case(
        "trace-window-0",
        "workload.dataset.window_s",
        **{"workload.dataset": {"kind": "trace", "path": "t.jsonl", "window_s": 0}},
    ),  # fmt: skip
    scenario_case(
        "trace-two-timings",
        "either target_rate or time_scale",
        **{"workload.dataset": {"kind": "trace", "path": "t.jsonl", "target_rate": 1, "time_scale": 2}},
    ),  # fmt: skip
    *(
        Case(
            f"scenario-trace-{field.replace('_', '-')}-of-one-instant",
            ("predict", "{ws}/bad.yaml"),
            f"{field}: the requests all arrive at the same instant",
            {
                "bad.yaml": scenario_text(
                    **{
                        "workload.dataset": {
                            "kind": "trace",
                            "path": "one-instant.jsonl",
                            "use_timestamps": True,
                            field: 2,
                        }
                    }
                ),
                "one-instant.jsonl": TRACE_LINE * 2,
            },
        )
        for field in ("time_scale", "target_rate")
    ),  # fmt: skip
    scenario_case(
        "trace-timestamps-with-gamma-arrivals",
        "workload: arrival_process, burstiness: not used: the trace's timestamps set the arrivals",
        **{
            "workload.dataset": {"kind": "trace", "path": "t.jsonl", "use_timestamps": True},
            "workload.arrival_process": "gamma",
            "workload.burstiness": 0.5,
        },
    ),  # fmt: skip
    scenario_case(
        "trace-max-input-1",
        "workload.dataset.max_input_len",
        **{"workload.dataset": {"kind": "trace", "path": "t.jsonl", "max_input_len": 1}},
    ),  # fmt: skip
    scenario_case(
        "gsp-count-mismatch",
        "differs from the shared_prefix dataset",
        **{
            "workload.dataset": {"kind": "shared_prefix", "num_groups": 2, "prompts_per_group": 2},
            "workload.num_prompts": 5,
        },
    ),  # fmt: skip
    scenario_case(
        "multi-turn-0",
        "workload.dataset.turns",
        **{"workload.dataset": {"kind": "multi_turn", "turns": 0, "input_len": 5, "output_len": 5}},
    ),  # fmt: skip
    scenario_case("model-missing", "model: required field is missing", model=DELETE),
    scenario_case("model-unknown", "is not in the zoo", **{"model.name": "gpt-17"}),
    scenario_case("model-config-missing", "nope.json", **{"model.name": "x", "model.config": "nope.json"}),
    scenario_case("weight-dtype", "model.weight_dtype", **{"model.weight_dtype": "int4"}),
    scenario_case(
        "weight-dtype-bf16-of-fp8-checkpoint",
        "model.weight_dtype: bf16, but qwen3-8b-fp8's checkpoint stores fp8 weights",
        **{"model.name": "qwen3-8b-fp8", "model.weight_dtype": "bf16"},
    ),
    scenario_case(
        "weights-do-not-fit", "does not fit", **{"model.name": "deepseek-r1", "hardware.gpu": "h100"}
    ),
    scenario_case(
        "overhead-negative",
        "overheads.scheduler_us_per_iteration",
        **{"overheads.scheduler_us_per_iteration": -1},
    ),  # fmt: skip
    scenario_case("overhead-unknown", "overheads.gc_pause_us: unknown key", **{"overheads.gc_pause_us": 5}),
    scenario_case(
        "disagg-too-few-gpus",
        "disaggregation needs prefill.tp + decode.tp",
        **{"disaggregation": {"prefill": {"tp": 1}, "decode": {"tp": 1}}, "serving": DELETE},
    ),  # fmt: skip
    scenario_case(
        "disagg-bad-tp",
        "disaggregation.prefill.tp: 3 cannot serve",
        **{
            "hardware.count": 4,
            "disaggregation": {"prefill": {"tp": 3}, "decode": {"tp": 1}},
            "serving": DELETE,
        },
    ),  # fmt: skip
    scenario_case(
        "disagg-link-0",
        "disaggregation.kv_link_gbytes_per_s",
        **{
            "hardware.count": 2,
            "disaggregation": {"prefill": {"tp": 1}, "decode": {"tp": 1}, "kv_link_gbytes_per_s": 0},
        },
    ),  # fmt: skip
    scenario_case("calibration-dir-nowhere", "calibration_dir", calibration_dir="nowhere"),
    scenario_case("name-list", "name", name=[1, 2]),
    scenario_case("unknown-section", "router: unknown key", router={"policy": "random"}),
    scenario_case("fleet-count-0", "fleet.replicas", fleet={"replicas": [{"count": 0}]}),
    scenario_case(
        "fleet-policy",
        "fleet.router.policy",
        fleet={"replicas": [{"count": 2}], "router": {"policy": "psychic"}},
    ),  # fmt: skip
]

FILE_CASES = [
    Case("scenario-missing", ("predict", "{ws}/nope.yaml"), "no such scenario file"),
    Case("scenario-directory", ("predict", "{ws}"), "cannot read the scenario"),
    Case("scenario-empty", ("predict", "{ws}/e.yaml"), "must be a mapping", {"e.yaml": ""}),
    Case("scenario-list", ("predict", "{ws}/l.yaml"), "must be a mapping", {"l.yaml": "- 1\n- 2\n"}),
    Case("scenario-bad-yaml", ("predict", "{ws}/y.yaml"), "not valid YAML", {"y.yaml": "model: [unclosed\n"}),
    Case("scenario-tabs", ("predict", "{ws}/t.yaml"), "not valid YAML", {"t.yaml": "model:\n\t- x\n"}),
    Case("scenario-binary", ("predict", "{ws}/b.yaml"), "b.yaml", {"b.yaml": "\x00\x01\x02garbage: ["}),
    Case(
        "trace-malformed-line",
        ("predict", "{ws}/tr.yaml"),
        "malformed.jsonl",
        {
            "tr.yaml": scenario_text(**{"workload.dataset": {"kind": "trace", "path": "malformed.jsonl"}}),
            "malformed.jsonl": TRACE_LINE + "{not json\n",
        },
    ),  # fmt: skip
    Case(
        "trace-empty-file",
        ("predict", "{ws}/tr.yaml"),
        "empty.jsonl",
        {
            "tr.yaml": scenario_text(**{"workload.dataset": {"kind": "trace", "path": "empty.jsonl"}}),
            "empty.jsonl": "",
        },
    ),  # fmt: skip
    Case(
        "trace-negative-length",
        ("predict", "{ws}/tr.yaml"),
        "neg.jsonl",
        {
            "tr.yaml": scenario_text(**{"workload.dataset": {"kind": "trace", "path": "neg.jsonl"}}),
            "neg.jsonl": '{"arrival_s": 0.0, "input_len": -5, "output_len": 10}\n',
        },
    ),  # fmt: skip
    Case(
        "trace-fake-parquet",
        ("predict", "{ws}/tr.yaml"),
        "fake.parquet",
        {
            "tr.yaml": scenario_text(**{"workload.dataset": {"kind": "trace", "path": "fake.parquet"}}),
        },
    ),  # fmt: skip
    Case(
        "model-config-not-json",
        ("predict", "{ws}/mc.yaml"),
        "config.json",
        {
            "mc.yaml": scenario_text(**{"model.name": "x", "model.config": "config.json"}),
            "config.json": "{not json",
        },
    ),  # fmt: skip
    Case(
        "model-config-not-a-model",
        ("predict", "{ws}/mc.yaml"),
        "config.json",
        {
            "mc.yaml": scenario_text(**{"model.name": "x", "model.config": "config.json"}),
            "config.json": '{"hello": 1}',
        },
    ),  # fmt: skip
]

PREDICT_OPTION_CASES = [
    Case("predict-output-format", ("predict", "{ws}/s.yaml", "-o", "xml"), "--output: got 'xml'"),
    Case("predict-requests-csv", ("predict", "{ws}/s.yaml", "--requests", "{ws}/r.csv"), ".parquet"),
    Case(
        "predict-requests-readonly",
        ("predict", "{ws}/s.yaml", "--requests", "/proc/r.parquet"),
        "--requests /proc",
    ),
    Case(
        "predict-requests-no-dir",
        ("predict", "{ws}/s.yaml", "--requests", "{ws}/no/dir/r.parquet"),
        "does not exist",
    ),
    Case(
        "predict-requests-directory",
        ("predict", "{ws}/s.yaml", "--requests", "{ws}/empty.parquet"),
        "is a directory",
    ),
    Case(
        "predict-calibration-missing",
        ("predict", "{ws}/s.yaml", "--calibration", "/no/such/dir"),
        "no such directory",
    ),
    Case(
        "predict-calibration-empty",
        ("predict", "{ws}/s.yaml", "--calibration", "{ws}/empty"),
        "holds no calibration tables",
    ),
    Case(
        "predict-calibration-file",
        ("predict", "{ws}/s.yaml", "--calibration", "{ws}/s.yaml"),
        "not a directory",
    ),
    Case(
        "predict-calibration-not-tables",
        ("predict", "{ws}/s.yaml", "--calibration", "{ws}/nottables"),
        "not calibration tables",
    ),  # fmt: skip
    Case(
        "predict-calibration-other-gpu",
        ("predict", "{ws}/s.yaml", "--calibration", "{repo}/calibration/h200"),
        "tables measured on h200",
    ),  # fmt: skip
    Case(
        "predict-roofline-and-calibration",
        ("predict", "{ws}/s.yaml", "--roofline-only", "--calibration", "{repo}/calibration/h100"),
        "--roofline-only",
    ),  # fmt: skip
    Case("predict-like-missing", ("predict", "{ws}/s.yaml", "--like", "{ws}/nope.json"), "no such file"),
    Case(
        "predict-like-trace", ("predict", "{ws}/s.yaml", "--like", "{ws}/t.jsonl"), "one request of a trace"
    ),
    Case("predict-like-not-json", ("predict", "{ws}/s.yaml", "--like", "{ws}/broken.json"), "broken.json"),
    Case(
        "predict-like-text",
        ("predict", "{ws}/s.yaml", "--like", "{ws}/notes.txt"),
        "no benchmark result found",
    ),
    Case(
        "predict-like-run-negative",
        ("predict", "{ws}/s.yaml", "--like", "{ws}/result.json", "--like-run", "-1"),
        "--like-run",
    ),  # fmt: skip
    Case(
        "predict-like-run-missing",
        ("predict", "{ws}/s.yaml", "--like", "{ws}/result.json", "--like-run", "5"),
        "run 5 does not exist",
    ),  # fmt: skip
    Case("predict-memory-negative", ("predict", "{ws}/s.yaml", "--max-memory-gb", "-1"), "--max-memory-gb"),
    Case("predict-memory-text", ("predict", "{ws}/s.yaml", "--max-memory-gb", "lots"), "--max-memory-gb"),
    Case("predict-memory-too-small", ("predict", "{ws}/s.yaml", "--max-memory-gb", "0.01"), "limit 0.0 GB"),
    Case("predict-unknown-option", ("predict", "{ws}/s.yaml", "--turbo"), "--turbo: not a flag"),
    Case("predict-no-scenario", ("predict",), "give a scenario file"),
    Case("predict-two-scenarios", ("predict", "{ws}/s.yaml", "{ws}/s.yaml"), "unexpected argument"),
    Case("unknown-command", ("forecast", "{ws}/s.yaml"), "No such command"),
    Case("schema-out-yaml", ("schema", "--out", "{ws}/schema.yaml"), ".json"),
    Case("schema-out-readonly", ("schema", "--out", "/proc/schema.json"), "--out /proc"),
    Case("schema-out-directory", ("schema", "--out", "{ws}/empty.json"), "is a directory"),
    Case("models-extra-argument", ("models", "qwen"), "unexpected extra argument"),
]

CALIBRATE_CASES = [
    Case("calibrate-no-gpu", ("calibrate", "--ops", "gemm", "--out", "{ws}/cal"), "CUDA GPU"),
    Case("calibrate-no-gpu-named", ("calibrate", "--gpu", "h100", "--out", "{ws}/cal"), "CUDA GPU"),
    Case("calibrate-gpu-unknown", ("calibrate", "--gpu", "h300", "--out", "{ws}/cal"), "--gpu: got 'h300'"),
    Case("calibrate-limit-negative", ("calibrate", "--limit", "-1", "--out", "{ws}/cal"), "--limit: got -1"),
    Case("calibrate-limit-0", ("calibrate", "--limit", "0", "--out", "{ws}/cal"), "--limit: got 0"),
    Case("calibrate-limit-text", ("calibrate", "--limit", "many", "--out", "{ws}/cal"), "--limit"),
    Case("calibrate-heldout-negative", ("calibrate", "--heldout", "-3", "--out", "{ws}/cal"), "--heldout"),
    Case("calibrate-ragged-negative", ("calibrate", "--ragged", "-1", "--out", "{ws}/cal"), "--ragged"),
    Case("calibrate-budget-0", ("calibrate", "--time-budget-s", "0", "--out", "{ws}/cal"), "--time-budget-s"),
    Case(
        "calibrate-budget-negative",
        ("calibrate", "--time-budget-s", "-60", "--out", "{ws}/cal"),
        "--time-budget-s",
    ),  # fmt: skip
    Case("calibrate-unknown-option", ("calibrate", "--turbo"), "unrecognized arguments"),
    # a directory where a file goes was reported as missing ('no such file')
    Case(
        "calibrate-grid-directory",
        ("calibrate", "--grid", "{ws}/empty", "--out", "{ws}/cal"),
        "is a directory",
    ),
    Case(
        "calibrate-out-is-a-file",
        ("calibrate", "--backends", "fake", "--gpu", "cpu", "--out", "{ws}/s.yaml"),
        "not a directory",
    ),  # fmt: skip
    Case(
        "calibrate-out-readonly",
        ("calibrate", "--backends", "fake", "--gpu", "cpu", "--out", "/proc/cal"),
        "--out /proc",
    ),  # fmt: skip
    Case(
        "calibrate-grid-missing",
        ("calibrate", "--backends", "fake", "--gpu", "cpu", "--grid", "{ws}/nope.yaml", "--out", "{ws}/cal"),
        "nope.yaml",
    ),  # fmt: skip
    Case(
        "import-unknown-source",
        ("calibrate", "import", "vidur", "--system", "x", "--out", "{ws}/imp"),
        "vidur",
    ),
    Case("import-missing-system", ("calibrate", "import", "aiconfigurator", "--out", "{ws}/imp"), "--system"),
    # --package-root: an empty directory names it; a missing path or a file was "no data for system 'b200_sxm' under
    # PATH; systems published: []", as if the package held no such system
    *(
        Case(
            f"import-{kind}-root",
            (
                "calibrate",
                "import",
                "aiconfigurator",
                "--system",
                "b200_sxm",
                "--out",
                "{ws}/imp",
                "--package-root",
                f"{{ws}}/{name}",
            ),
            expected,
        )
        for kind, name, expected in (
            ("bad", "empty", "empty"),
            ("missing", "nope", "/nope: not a directory"),
            ("file", "s.yaml", "/s.yaml: not a directory"),
        )
    ),
]

PERFDB_CASES = [
    Case("check-missing", ("perfdb", "check", "{ws}/nope"), "not a directory"),
    Case("check-file", ("perfdb", "check", "{ws}/s.yaml"), "not a directory"),
    Case("check-empty", ("perfdb", "check", "{ws}/empty"), "holds no calibration tables"),
    Case("check-not-tables", ("perfdb", "check", "{ws}/nottables"), "nottables"),
    # an op column but nothing that times it (another tool's export): polars' "unable to find column" named no file
    Case(
        "check-op-only",
        ("perfdb", "check", "{ws}/oponly"),
        "x.parquet: not a calibration table: no column gpu, status, time_us",
    ),
    Case("coverage-missing", ("perfdb", "coverage", "{ws}/nope"), "not a directory"),
    Case("coverage-not-tables", ("perfdb", "coverage", "{ws}/nottables"), "nottables"),
    Case("diff-a-missing", ("perfdb", "diff", "{ws}/nope", "{repo}/calibration/h100"), "not a directory"),
    Case("diff-b-missing", ("perfdb", "diff", "{repo}/calibration/h100", "{ws}/nope"), "not a directory"),
    Case(
        "diff-bad-pair",
        ("perfdb", "diff", "{repo}/calibration/h200", "{repo}/calibration/h100", "--pair", "fa3"),
        "B_BACKEND=A_BACKEND",
    ),  # fmt: skip
    Case(
        "diff-unknown-op",
        ("perfdb", "diff", "{repo}/calibration/h200", "{repo}/calibration/h100", "--op", "conv2d"),
        "conv2d",
    ),  # fmt: skip
    Case(
        "diff-points-csv",
        ("perfdb", "diff", "{repo}/calibration/h200", "{repo}/calibration/h100", "--points", "{ws}/p.csv"),
        ".parquet",
    ),  # fmt: skip
    Case(
        "diff-points-readonly",
        (
            "perfdb",
            "diff",
            "{repo}/calibration/h200",
            "{repo}/calibration/h100",
            "--points",
            "/proc/p.parquet",
        ),
        "--points /proc",
    ),  # fmt: skip
    Case("diff-empty", ("perfdb", "diff", "{ws}/empty", "{ws}/empty"), "holds no calibration tables"),
    Case("perfdb-unknown", ("perfdb", "compact", "{ws}/empty"), "No such command"),
]

TRACE_CASES = [
    Case("inspect-missing", ("trace", "inspect", "{ws}/nope.jsonl"), "nope.jsonl"),
    Case("inspect-malformed", ("trace", "inspect", "{ws}/malformed.jsonl"), "malformed.jsonl"),
    Case("inspect-empty", ("trace", "inspect", "{ws}/empty.jsonl"), "empty.jsonl"),
    Case("inspect-fake-parquet", ("trace", "inspect", "{ws}/fake.parquet"), "fake.parquet"),
    Case("inspect-unknown-format", ("trace", "inspect", "{ws}/notes.txt"), "notes.txt"),
    Case("inspect-bins-0", ("trace", "inspect", "{ws}/t.jsonl", "--bins", "0"), "--bins"),
    Case("inspect-cache-0", ("trace", "inspect", "{ws}/t.jsonl", "--cache-tokens", "0"), "--cache-tokens"),
    Case("inspect-output", ("trace", "inspect", "{ws}/t.jsonl", "-o", "yaml"), "--output: got 'yaml'"),
    Case("inspect-run-negative", ("trace", "inspect", "{ws}/t.jsonl", "--run", "-1"), "--run"),
    Case(
        "inspect-csv-columns", ("trace", "inspect", "{ws}/cols.csv"), "cols.csv", {"cols.csv": "a,b\n1,2\n"}
    ),
    # past 2**63 tokens the lengths wrapped to negative ones (a negative min and total) instead of an error
    Case(
        "inspect-huge-length",
        ("trace", "inspect", "{ws}/h.jsonl"),
        "h.jsonl:1: input_len must be <= 2,147,483,647 tokens",
        {"h.jsonl": '{"arrival_s": 0.0, "input_len": 1e30, "output_len": 10}\n'},
    ),  # fmt: skip
    Case(
        "inspect-huge-length-bench-serving",
        ("trace", "inspect", "{ws}/h.jsonl"),
        "h.jsonl:1: request 1: input_lens must be <= 2,147,483,647 tokens",
        {"h.jsonl": '{"input_lens": [5, 1e30], "output_lens": [2, 3]}\n'},
    ),  # fmt: skip
    # each time finite but their span is not: was numpy's "supplied range of [0.0, inf] is not finite"
    Case(
        "inspect-time-span-overflows",
        ("trace", "inspect", "{ws}/h.jsonl"),
        "h.jsonl: arrival times span more seconds than a float can hold",
        {"h.jsonl": TRACE_LINE.replace("0.0", "1e308") + TRACE_LINE.replace("0.0", "-1e308")},
    ),  # fmt: skip
    Case("convert-missing", ("trace", "convert", "{ws}/nope.jsonl", "{ws}/o.jsonl"), "nope.jsonl"),
    Case(
        "inspect-directory", ("trace", "inspect", "{ws}/dir.jsonl"), "dir.jsonl: is a directory; give a trace"
    ),
    Case("convert-same-file", ("trace", "convert", "{ws}/t.jsonl", "{ws}/t.jsonl"), "is also an input"),
    Case("convert-bad-suffix", ("trace", "convert", "{ws}/t.jsonl", "{ws}/o.txt"), ".jsonl"),
    Case("convert-readonly", ("trace", "convert", "{ws}/t.jsonl", "/proc/o.jsonl"), "DST /proc"),
    Case("convert-directory", ("trace", "convert", "{ws}/t.jsonl", "{ws}/dir.jsonl"), "is a directory"),
    Case("convert-needs-rate", ("trace", "convert", "{ws}/run.jsonl", "{ws}/o.jsonl"), "give --rate"),
    Case(
        "convert-rate-with-times",
        ("trace", "convert", "{ws}/t.jsonl", "{ws}/o.jsonl", "--rate", "2"),
        "has its own arrival times",
    ),  # fmt: skip
    Case("convert-limit-0", ("trace", "convert", "{ws}/t.jsonl", "{ws}/o.jsonl", "--limit", "0"), "--limit"),
    Case(
        "convert-csv-with-hashes",
        ("trace", "convert", "{ws}/h.jsonl", "{ws}/o.csv"),
        "CSV cannot hold hash_ids",
        {
            "h.jsonl": '{"arrival_s": 0.0, "input_len": 100, "output_len": 10, "hash_ids": [1]}\n',
        },
    ),  # fmt: skip
    Case("export-missing", ("trace", "export", "{ws}/nope.yaml", "{ws}/o.jsonl"), "nope.yaml"),
    Case(
        "export-bad-scenario",
        ("trace", "export", "{ws}/bad.yaml", "{ws}/o.jsonl"),
        "hardware.gpu",
        {
            "bad.yaml": scenario_text(**{"hardware.gpu": "tpu"}),
        },
    ),  # fmt: skip
    Case("export-bad-suffix", ("trace", "export", "{ws}/s.yaml", "{ws}/o.xlsx"), ".jsonl"),
    Case("export-onto-scenario", ("trace", "export", "{ws}/s.yaml", "{ws}/s.yaml"), ".jsonl"),
    Case("export-readonly", ("trace", "export", "{ws}/s.yaml", "/proc/o.jsonl"), "DST /proc"),
    # a billion prompts were drawn for minutes (and gigabytes) before anything was written
    Case(
        "export-prompts-billion",
        ("trace", "export", "{ws}/big.yaml", "{ws}/o.jsonl"),
        "big.yaml: workload.num_prompts: 1,000,000,000 requests",
        {"big.yaml": scenario_text(**{"workload.num_prompts": 10**9})},
    ),
]

VALIDATE_CASES = [
    Case("validate-no-gpu", ("validate", "{ws}/s.yaml", "--out", "{ws}/val"), "CUDA GPU"),
    Case("validate-shipped-no-gpu", ("validate", "{repo}/scenarios/validate/qwen3-8b-h200.yaml"), "CUDA GPU"),
    Case(
        "validate-samples-0",
        ("validate", "{ws}/s.yaml", "--samples", "0", "--plan-only", "--out", "{ws}/val"),
        "--samples",
    ),  # fmt: skip
    Case(
        "validate-replicas-0",
        ("validate", "{ws}/s.yaml", "--replicas", "0", "--plan-only", "--out", "{ws}/val"),
        "--replicas",
    ),  # fmt: skip
    Case(
        "validate-prompts-0",
        ("validate", "{ws}/s.yaml", "--num-prompts", "0", "--plan-only", "--out", "{ws}/val"),
        "--num-prompts",
    ),  # fmt: skip
    Case(
        "validate-plan-and-report",
        ("validate", "{ws}/s.yaml", "--plan-only", "--report-only", "--out", "{ws}/val"),
        "at most one",
    ),  # fmt: skip
    Case(
        "validate-report-nothing",
        ("validate", "{ws}/s.yaml", "--report-only", "--out", "{ws}/val"),
        "no such directory",
    ),  # fmt: skip
    Case(
        "validate-report-empty",
        ("validate", "{ws}/s.yaml", "--report-only", "--out", "{ws}/empty"),
        "nothing measured yet",
    ),  # fmt: skip
    Case(
        "validate-bad-scenario",
        ("validate", "{ws}/bad.yaml", "--plan-only", "--out", "{ws}/val"),
        "hardware.gpu",
        {
            "bad.yaml": scenario_text(**{"hardware.gpu": "tpu"}),
        },
    ),  # fmt: skip
    Case(
        "validate-speculative",
        ("validate", "{ws}/sp.yaml", "--plan-only", "--out", "{ws}/val"),
        "serving.speculative",
        {
            "sp.yaml": scenario_text(**{"serving.speculative": {"accept_length": {"mean": 2.0}}}),
        },
    ),  # fmt: skip
    Case(
        "validate-out-file",
        ("validate", "{ws}/s.yaml", "--plan-only", "--out", "{ws}/s.yaml"),
        "not a directory",
    ),  # fmt: skip
    Case(
        "validate-out-readonly",
        ("validate", "{ws}/s.yaml", "--plan-only", "--out", "/proc/val"),
        "--out /proc",
    ),  # fmt: skip
    Case(
        "validate-missing-scenario",
        ("validate", "{ws}/nope.yaml", "--plan-only", "--out", "{ws}/val"),
        "no such scenario file",
    ),  # fmt: skip
]

SWEEP_CASES = [
    Case("sweep-missing", ("sweep", "{ws}/nope.yaml"), "no such sweep file"),
    Case("sweep-bad-yaml", ("sweep", "{ws}/y.yaml"), "not valid YAML", {"y.yaml": "axes: [unclosed\n"}),
    Case("sweep-not-a-mapping", ("sweep", "{ws}/l.yaml"), "must be a mapping", {"l.yaml": "- 1\n"}),
    Case(
        "sweep-unknown-key",
        ("sweep", "{ws}/u.yaml"),
        "unknown key",
        {"u.yaml": yaml.safe_dump({**sweep_dict({"serving.page_size": [1]}), "extra": 1})},
    ),  # fmt: skip
    Case(
        "sweep-no-axes",
        ("sweep", "{ws}/n.yaml"),
        "axes",
        {"n.yaml": yaml.safe_dump({"name": "x", "base": GOOD})},
    ),
    Case(
        "sweep-bad-axis-field",
        ("sweep", "{ws}/a.yaml", "--executor", "serial", "--out", "{ws}/r.parquet"),
        "serving.tpp",
        {"a.yaml": yaml.safe_dump(sweep_dict({"serving.tpp": [1, 2]}))},
    ),  # fmt: skip
    Case(
        "sweep-base-missing",
        ("sweep", "{ws}/b.yaml"),
        "no such scenario file",
        {"b.yaml": yaml.safe_dump({"name": "x", "base": "nope.yaml", "axes": {"serving.tp": [1]}})},
    ),  # fmt: skip
    Case(
        "sweep-executor", ("sweep", "{ws}/sweep.yaml", "--executor", "threads"), "--executor: got 'threads'"
    ),
    Case("sweep-out-csv", ("sweep", "{ws}/sweep.yaml", "--out", "{ws}/r.csv"), ".parquet"),
    Case("sweep-out-readonly", ("sweep", "{ws}/sweep.yaml", "--out", "/proc/r.parquet"), "--out /proc"),
    Case("sweep-out-onto-sweep", ("sweep", "{ws}/sweep.yaml", "--out", "{ws}/sweep.yaml"), ".parquet"),
    Case("plan-missing-table", ("plan", "{ws}/nope.parquet"), "no such result table"),
    Case("plan-fake-table", ("plan", "{ws}/fake.parquet"), "fake.parquet"),
    Case("plan-bad-sla", ("plan", "{table}", "--sla", "ttft fast"), "--sla"),
    Case("plan-sla-unknown-metric", ("plan", "{table}", "--sla", "joy.p90 <= 2s"), "--sla"),
    Case("plan-output", ("plan", "{table}", "--rate", "5", "-o", "csv"), "--output: got 'csv'"),
    Case("plan-no-rate", ("plan", "{table}"), "--rate"),
    Case("plan-rate-text", ("plan", "{table}", "--rate", "lots"), "--rate"),
    Case("report-out-txt", ("report", "{table}", "-o", "{ws}/r.txt"), ".html"),
    Case("report-out-readonly", ("report", "{table}", "-o", "/proc/r.html"), "-o /proc"),
    Case("report-out-no-dir", ("report", "{table}", "-o", "{ws}/no/r.html"), "does not exist"),
    Case(  # the page was written first, then the charts' directory failed as "error: r.html: File exists"
        "report-charts-onto-page",
        ("report", "{table}", "-o", "{ws}/r.html", "--charts", "{ws}/r.html"),
        "--charts",
    ),
    Case(
        "report-charts-file",
        ("report", "{table}", "-o", "{ws}/r.html", "--charts", "{ws}/s.yaml"),
        "--charts",
    ),
    Case(
        "report-missing-table", ("report", "{ws}/nope.parquet", "-o", "{ws}/r.html"), "no such result table"
    ),
    Case("report-sweep-out-readonly", ("report", "{ws}/sweep.yaml", "-o", "/proc/r.html"), "-o /proc"),
]

ACCURACY_CASES = [
    Case(
        "accuracy-missing-dir",
        ("accuracy", "{ws}/nope", "--truth", "{ws}/truth.csv"),
        "nope: no such directory",
    ),
    # a file named as the directory was reported as 'notes.txt/index.yaml: no index'
    Case(
        "accuracy-file-as-dir",
        ("accuracy", "{ws}/notes.txt", "--truth", "{ws}/truth.csv"),
        "notes.txt: not a directory",
    ),
    Case("accuracy-no-index", ("accuracy", "{ws}/empty", "--truth", "{ws}/truth.csv"), "index"),
    Case(
        "accuracy-missing-truth",
        ("accuracy", "{repo}/scenarios/published", "--truth", "{ws}/nope.csv"),
        "nope.csv",
    ),  # fmt: skip
    Case(
        "accuracy-truth-not-csv",
        ("accuracy", "{repo}/scenarios/published", "--truth", "{ws}/notes.txt"),
        "notes.txt",
    ),  # fmt: skip
    Case("accuracy-no-truth-option", ("accuracy", "{repo}/scenarios/published"), "--truth"),
    Case(
        "accuracy-output",
        ("accuracy", "{repo}/scenarios/published", "--truth", "{ws}/truth.csv", "-o", "html"),
        "--output: got 'html'",
    ),  # fmt: skip
    Case(
        "accuracy-doc-missing",
        (
            "accuracy",
            "{repo}/scenarios/published",
            "--truth",
            "{ws}/truth.csv",
            "--update-doc",
            "{ws}/nope.md",
        ),
        "nope.md",
    ),  # fmt: skip
    Case(
        "accuracy-doc-no-markers",
        (
            "accuracy",
            "{repo}/scenarios/published",
            "--truth",
            "{ws}/truth.csv",
            "--update-doc",
            "{ws}/doc.md",
        ),
        "needs exactly one",
    ),  # fmt: skip
    Case("compare-missing-predicted", ("compare", "{ws}/nope.json", "{ws}/result.json"), "no such file"),
    Case("compare-missing-measured", ("compare", "{ws}/result.json", "{ws}/nope.json"), "no such file"),
    Case("compare-measured-directory", ("compare", "{ws}/result.json", "{ws}/empty.json"), "is a directory"),
    Case("compare-trace", ("compare", "{ws}/result.json", "{ws}/t.jsonl"), "one request of a trace"),
    Case("compare-broken-json", ("compare", "{ws}/broken.json", "{ws}/result.json"), "broken.json"),
    Case("compare-text", ("compare", "{ws}/notes.txt", "{ws}/result.json"), "no benchmark result found"),
    Case(
        "compare-output",
        ("compare", "{ws}/result.json", "{ws}/result.json", "-o", "xml"),
        "--output: got 'xml'",
    ),
    Case(
        "compare-run-missing",
        ("compare", "{ws}/result.json", "{ws}/result.json", "--run", "3"),
        "run 3 does not exist",
    ),  # fmt: skip
    Case(
        "compare-json-list",
        ("compare", "{ws}/list.json", "{ws}/result.json"),
        "list.json",
        {"list.json": "[1, 2, 3]"},
    ),  # fmt: skip
]

GROUNDTRUTH_CASES = [
    Case("groundtruth-plan-missing", ("groundtruth", "run", "{ws}/nope.yaml"), "cannot read"),
    Case("groundtruth-plan-not-a-plan", ("groundtruth", "run", "{ws}/s.yaml"), "servers"),
    Case(
        "groundtruth-deadline-0",
        ("groundtruth", "run", "{repo}/groundtruth/plans/h100.yaml", "--deadline", "0"),
        "--deadline",
    ),  # fmt: skip
    Case("groundtruth-index-missing", ("groundtruth", "index", "{ws}/nope"), "not a directory"),
    Case("groundtruth-modeldir-unknown", ("groundtruth", "modeldir", "gpt-17", "{ws}/model"), "gpt-17"),
    Case(  # a checkpoint's (or any) directory: its config.json and tokenizer were replaced in place
        "groundtruth-modeldir-into-checkpoint",
        ("groundtruth", "modeldir", "qwen3-8b", "{ws}/ckpt"),
        "holds other files (model.safetensors)",
        {"ckpt/model.safetensors": b"weights", "ckpt/config.json": "{}"},
    ),
    Case(
        "groundtruth-modeldir-onto-file",
        ("groundtruth", "modeldir", "qwen3-8b", "{ws}/f.yaml"),
        "exists and is not a directory",
        {"f.yaml": "a: 1\n"},
    ),
]

ONESHOT = ("plan", "--model", "qwen3-8b", "--gpu", "h100", "--total-gpus", "2", "--executor", "serial")
NEWER_COMMAND_CASES = [
    Case("backends-unknown-gpu", ("backends", "--gpu", "h300"), "unknown h300"),
    Case("backends-unknown-model", ("backends", "--model", "gpt-17"), "--model gpt-17: not a zoo model"),
    Case("backends-output", ("backends", "-o", "xml"), "xml"),
    Case(
        "backends-gpu-twice", ("backends", "--gpu", "h100", "--gpu", "h100"), "--gpu h100: given twice"
    ),  # rows x2
    Case(
        "backends-model-twice", ("backends", "--model", "qwen3-8b", "--model", "qwen3-8b"), "--model qwen3-8b"
    ),
    Case(
        "oneshot-unknown-model",
        ("plan", "--model", "gpt-17", "--gpu", "h100", "--total-gpus", "2"),
        "--model",
    ),
    Case(
        "oneshot-unknown-gpu", ("plan", "--model", "qwen3-8b", "--gpu", "h300", "--total-gpus", "2"), "--gpu"
    ),
    Case("oneshot-missing-gpus", ("plan", "--model", "qwen3-8b", "--gpu", "h100"), "--total-gpus"),
    Case("oneshot-rate-negative", (*ONESHOT, "--rate", "-3"), "--rate"),
    Case("oneshot-range-ratio", (*ONESHOT, "--range-ratio", "2"), "--range-ratio"),
    Case("oneshot-table-csv", (*ONESHOT, "--table", "{ws}/t.csv"), ".parquet"),
    Case("oneshot-save-dir-readonly", (*ONESHOT, "--save-dir", "/proc/plans"), "--save-dir /proc"),
    Case("oneshot-and-table", ("plan", "{ws}/fake.parquet", "--model", "qwen3-8b"), "not both"),
    Case("predict-save-scenario-json", ("predict", "{ws}/s.yaml", "--save-scenario", "{ws}/x.json"), ".yaml"),
    Case(
        "predict-save-over-input",
        ("predict", "{ws}/s.yaml", "--save-scenario", "{ws}/s.yaml"),
        "is also an input",
    ),  # fmt: skip
    Case(
        "predict-output-file-readonly",
        ("predict", "{ws}/s.yaml", "--output-file", "/proc/r.jsonl"),
        "--output-file /proc",
    ),  # fmt: skip
    Case("predict-flag-bad-value", ("predict", "{ws}/s.yaml", "--page-size", "0"), "[from --page-size]"),
    Case(
        "predict-fleet-roofline-only",
        ("predict", "{ws}/fleet.yaml", "--roofline-only"),
        "fleet: --roofline-only",
        {
            "fleet.yaml": scenario_text(fleet={"replicas": [{"count": 2}]}),
        },
    ),  # fmt: skip
    Case("predict-set-unknown-field", ("predict", "{ws}/s.yaml", "--set", "serving.tpp=2"), "serving.tpp"),
]

TRACE_SCENARIO = scenario_text(**{"workload.dataset": {"kind": "trace", "path": "t.jsonl"}})
SWEEP = ("sweep", "{ws}/sweep.yaml", "--out", "{ws}/r.sweep.parquet")
# options accepted and then ignored, contradictory options, and non-finite or wrong-typed numbers
IGNORED_OR_NONSENSE_CASES = [
    scenario_case(
        "overhead-inf",
        "overheads.scheduler_us_per_iteration",
        **{"overheads.scheduler_us_per_iteration": float("inf")},
    ),  # fmt: skip
    scenario_case(
        "conservativeness-inf",
        "serving.schedule_conservativeness",
        **{"serving.schedule_conservativeness": float("inf")},
    ),  # fmt: skip
    scenario_case("count-bool", "hardware.count", **{"hardware.count": True}),
    scenario_case("input-len-bool", "workload.dataset.input_len", **{"workload.dataset.input_len": True}),
    scenario_case("seed-negative", "workload.seed", **{"workload.seed": -1}),
    scenario_case(
        "router-seed-negative",
        "fleet.router.seed",
        fleet={"replicas": [{"count": 2}], "router": {"seed": -5}},
    ),  # fmt: skip
    scenario_case(
        "router-parameter-of-another-policy",
        "fleet.router: cache_threshold: read only by the cache_aware policy; this router uses round_robin",
        fleet={"replicas": [{"count": 2}], "router": {"policy": "round_robin", "cache_threshold": 0.5}},
    ),  # fmt: skip
    scenario_case(
        "trace-run-not-bench-serving",
        "only bench_serving output files hold several runs",
        **{"workload.dataset": {"kind": "trace", "path": "t.jsonl", "run": 1}},
    ),  # fmt: skip
    Case(
        "predict-accept-length-alone", ("predict", "{ws}/s.yaml", "--accept-length", "2"), "--accept-length"
    ),
    Case("predict-like-run-alone", ("predict", "{ws}/s.yaml", "--like-run", "1"), "--like-run"),
    Case("predict-details-alone", ("predict", "{ws}/s.yaml", "--output-details"), "--output-details"),
    Case(
        "predict-output-file-over-trace",
        ("predict", "{ws}/tr.yaml", "--output-file", "{ws}/t.jsonl"),
        "is also an input",
        {"tr.yaml": TRACE_SCENARIO},
    ),  # fmt: skip
    Case("schema-update-without-markdown", ("schema", "--update", "{ws}/doc.md"), "--markdown"),
    Case(
        "schema-update-and-out",
        ("schema", "--markdown", "--update", "{ws}/doc.md", "--out", "{ws}/o.md"),
        "--out",
    ),  # fmt: skip
    Case(
        "sweep-field-on-two-axes",
        ("sweep", "{ws}/a.yaml"),
        "serving.page_size: set by axes",
        {"a.yaml": yaml.safe_dump(sweep_dict({"serving.page_size": [1], "g": [{"serving.page_size": 16}]}))},
    ),  # fmt: skip
    Case(
        "sweep-grid-with-n",
        ("sweep", "{ws}/a.yaml"),
        "n applies to method random or lhs",
        {"a.yaml": yaml.safe_dump(sweep_dict({"serving.page_size": [1, 16]}, sample={"n": 1}))},
    ),  # fmt: skip
    Case(
        "sweep-grid-with-seed",
        ("sweep", "{ws}/a.yaml"),
        "sample: seed applies to method random or lhs; a grid runs every combination",
        {"a.yaml": yaml.safe_dump(sweep_dict({"serving.page_size": [1, 16]}, sample={"seed": 7}))},
    ),  # fmt: skip
    Case(
        "sweep-sample-of-load-axes-only",
        ("sweep", "{ws}/a.yaml"),
        "sample: method lhs draws configurations, and every axis here is a load axis (workload.request_rate)",
        {
            "a.yaml": yaml.safe_dump(
                sweep_dict({"workload.request_rate": [1, 2, 4]}, sample={"method": "lhs", "n": 2})
            )
        },
    ),  # fmt: skip
    Case(
        "sweep-seed-negative",
        ("sweep", "{ws}/a.yaml"),
        "sample.seed",
        {
            "a.yaml": yaml.safe_dump(
                sweep_dict({"serving.page_size": [1]}, sample={"method": "random", "n": 1, "seed": -1})
            )
        },
    ),  # fmt: skip
    Case(
        "sweep-plan-rate-inf",
        ("sweep", "{ws}/a.yaml"),
        "plan.rate",
        {"a.yaml": yaml.safe_dump(sweep_dict({"serving.page_size": [1]}, plan={"rate": float("inf")}))},
    ),  # fmt: skip
    Case(
        "sweep-axis-over-name",  # every point is renamed <sweep>-<index>: two rows of one point_id
        ("sweep", "{ws}/a.yaml"),
        "name: each point is named <sweep name>-<index>",
        {"a.yaml": yaml.safe_dump(sweep_dict({"name": ["a", "b"]}))},
    ),  # fmt: skip
    Case(
        "sweep-same-rate-as-int-and-float",  # 2 and 2.0: one load simulated twice, under two point_ids
        ("sweep", "{ws}/a.yaml"),
        "points 0 (request_rate=2) and 1 (request_rate=2.0) are the same scenario",
        {"a.yaml": yaml.safe_dump(sweep_dict({"workload.request_rate": [2, 2.0]}))},
    ),  # fmt: skip
    Case(
        "sweep-same-config-as-int-and-float",  # two configurations of one scenario in the plan
        ("sweep", "{ws}/a.yaml"),
        "(input_len=64.0) are the same scenario",
        {"a.yaml": yaml.safe_dump(sweep_dict({"workload.dataset.input_len": [64, 64.0]}))},
    ),  # fmt: skip
    Case(  # read as 1 req/s
        "sweep-plan-rate-bool",
        ("sweep", "{ws}/a.yaml"),
        "plan.rate",
        {"a.yaml": yaml.safe_dump(sweep_dict({"serving.page_size": [1]}, plan={"rate": True}))},
    ),
    Case(  # drew one configuration
        "sweep-sample-n-bool",
        ("sweep", "{ws}/a.yaml"),
        "sample.n",
        {
            "a.yaml": yaml.safe_dump(
                sweep_dict({"serving.page_size": [1, 16]}, sample={"method": "random", "n": True})
            )
        },
    ),
    Case(  # the default table ./<name>.sweep.parquet landed in the parent directory
        "sweep-name-a-path",
        ("sweep", "{ws}/a.yaml"),
        "name: the default table is ./<name>.sweep.parquet",
        {"a.yaml": yaml.safe_dump({**sweep_dict({"serving.page_size": [1]}), "name": "../up"})},
    ),
    Case("sweep-workers-0", (*SWEEP, "--workers", "0"), "--workers: got 0"),
    Case("sweep-workers-serial", (*SWEEP, "--executor", "serial", "--workers", "4"), "--workers"),
    Case(
        "sweep-ray-address-serial", (*SWEEP, "--executor", "serial", "--ray-address", "x:1"), "--ray-address"
    ),
    Case("plan-rate-nan", ("plan", "{table}", "--rate", "nan"), "--rate: got nan"),
    Case("plan-top-0", ("plan", "{table}", "--rate", "5", "--top", "0"), "--top"),
    Case("plan-top-negative", ("plan", "{table}", "--rate", "5", "--top", "-1"), "--top"),
    Case("plan-table-oneshot-option", ("plan", "{table}", "--rate", "5", "--isl", "64"), "--isl: one-shot"),
    Case("plan-table-workers", ("plan", "{table}", "--rate", "5", "--workers", "2"), "--workers"),
    Case("oneshot-mtp-nan", (*ONESHOT, "--mtp-accept-length", "nan"), "--mtp-accept-length"),
    Case("oneshot-prompts-0", (*ONESHOT, "--num-prompts", "0"), "--num-prompts"),
    Case("oneshot-rate-inf", (*ONESHOT, "--rate", "inf"), "--rate"),
    Case("report-rate-0", ("report", "{table}", "-o", "{ws}/r.html", "--rate", "0"), "--rate"),
    Case(
        "inspect-run-not-bench-serving", ("trace", "inspect", "{ws}/t.jsonl", "--run", "1"), "t.jsonl: run 1"
    ),
    Case(
        "convert-seed-with-times",
        ("trace", "convert", "{ws}/t.jsonl", "{ws}/o.jsonl", "--seed", "3"),
        "--seed",
    ),
    Case(
        "convert-rate-nan", ("trace", "convert", "{ws}/run.jsonl", "{ws}/o.jsonl", "--rate", "nan"), "--rate"
    ),
    Case(
        "convert-seed-negative",
        ("trace", "convert", "{ws}/run.jsonl", "{ws}/o.jsonl", "--rate", "1", "--seed", "-1"),
        "--seed",
    ),  # fmt: skip
    Case(
        "export-over-its-trace",
        ("trace", "export", "{ws}/tr.yaml", "{ws}/t.jsonl"),
        "is also an input",
        {"tr.yaml": TRACE_SCENARIO},
    ),  # fmt: skip
    Case(
        "accuracy-truth-with-corpus",
        ("accuracy", "{repo}/groundtruth", "--truth", "{ws}/truth.csv"),
        "--truth",
    ),  # fmt: skip
    Case(
        "accuracy-index-list",
        ("accuracy", "{ws}/sc", "--truth", "{ws}/truth.csv"),
        "must be a mapping",
        {"sc/index.yaml": "- 1\n"},
    ),  # fmt: skip
    Case("accuracy-corpus-no-runs", ("accuracy", "{ws}/gt"), "no runs", {"gt/index.parquet": ""}),
    Case(  # printed empty error tables and exited 0
        "accuracy-corpus-nothing-predicted",
        ("accuracy", "{ws}/gt"),
        "none of its 1 runs could be predicted; first: h100/srv/r1: recorded as failed",
        {"gt/index.parquet": "", "gt/h100/srv/r1/run.json": '{"status": "failed"}'},
    ),
    Case(
        "check-samples-alone",
        ("perfdb", "check", "{repo}/calibration/h100", "--samples", "{ws}/t.jsonl"),
        "--samples",
    ),  # fmt: skip
    Case(
        "check-offgrid-time-no-gpu",
        ("perfdb", "check", "{repo}/calibration/h100", "--offgrid-time", "{ws}/o.jsonl"),
        "CUDA GPU",
    ),  # fmt: skip
    Case(
        "check-offgrid-and-time",
        (
            "perfdb",
            "check",
            "{repo}/calibration/h100",
            "--offgrid",
            "{ws}/t.jsonl",
            "--offgrid-time",
            "{ws}/o.jsonl",
        ),
        "give one of them",
    ),  # fmt: skip
    Case(
        "fleet-plan-rate-nan",
        ("fleet", "plan", "{ws}/f.yaml", "--rate", "nan"),
        "--rate: got nan",
        {"f.yaml": scenario_text(fleet={"replicas": [{"count": 2}]})},
    ),  # fmt: skip
    Case(
        "fleet-plan-max-replicas-0",
        ("fleet", "plan", "{ws}/f.yaml", "--rate", "5", "--max-replicas", "0"),
        "--max-replicas",
        {"f.yaml": scenario_text(fleet={"replicas": [{"count": 2}]})},
    ),  # fmt: skip
    Case(
        "calibrate-grid-list",
        ("calibrate", "--dry-run", "--gpu", "h100", "--grid", "{ws}/g.yaml", "--out", "{ws}/cal"),
        "g.yaml: a grid file maps op families",
        {"g.yaml": "- 1\n"},
    ),  # fmt: skip
    Case(
        "validate-seed-negative",
        ("validate", "{ws}/s.yaml", "--seed", "-1", "--plan-only", "--out", "{ws}/val"),
        "--seed",
    ),  # fmt: skip
]

FLEET = scenario_text(fleet={"replicas": [{"count": 2}]})
# settings that named no field or option, or led to a nonsense number, found after the battery above
UNNAMED_CASES = [
    scenario_case("sglang-version-word", "serving.sglang_version", **{"serving.sglang_version": "banana"}),
    scenario_case("sglang-version-short", "such as 0.5.17", **{"serving.sglang_version": "0.5"}),
    scenario_case("sglang-version-rc", "serving.sglang_version", **{"serving.sglang_version": "0.5.0rc2"}),
    scenario_case(
        "graph-bs-huge",
        "serving.cuda_graph_max_bs: 10000000 leaves no memory",
        **{"serving.cuda_graph_max_bs": 10**7},
    ),  # fmt: skip
    scenario_case(
        "chunk-huge", "serving.chunked_prefill_size: 100000000", **{"serving.chunked_prefill_size": 10**8}
    ),  # fmt: skip
    Case(
        "model-config-directory",
        ("predict", "{ws}/mc.yaml"),
        "model.config",
        {"mc.yaml": scenario_text(**{"model.name": "x", "model.config": "empty"})},
    ),  # fmt: skip
    Case(
        "fleet-compare-charts-file",
        ("fleet", "compare", "{ws}/f.yaml", "--charts", "{ws}/s.yaml"),
        "--charts",
        {"f.yaml": FLEET},
    ),  # fmt: skip
    Case(
        "fleet-plan-charts-file",
        ("fleet", "plan", "{ws}/f.yaml", "--rate", "5", "--charts", "{ws}/s.yaml"),
        "--charts",
        {"f.yaml": FLEET},
    ),  # fmt: skip
    Case(
        "fleet-compare-policy-twice",
        ("fleet", "compare", "{ws}/f.yaml", "--policy", "round_robin", "--policy", "round_robin"),
        "--policy 'round_robin': given twice",
        {"f.yaml": FLEET},
    ),  # fmt: skip
    Case(
        "fleet-plan-policy-twice",
        ("fleet", "plan", "{ws}/f.yaml", "--rate", "5", "--policy", "cache_aware", "--policy", "cache_aware"),
        "--policy 'cache_aware': given twice",
        {"f.yaml": FLEET},
    ),  # fmt: skip
    *(
        Case(
            f"check-{option[2:]}-directory",
            (
                "perfdb",
                "check",
                "{repo}/calibration/h100",
                *(("--offgrid", "{ws}/result.json") if option == "--samples" else ()),
                option,
                "{ws}/dir.jsonl",
            ),
            "dir.jsonl is a directory; give the JSONL file",  # was: '... does not exist'
        )
        for option in ("--samples", "--offgrid")
    ),
    Case(
        "diff-pair-twice",
        (
            "perfdb",
            "diff",
            "{repo}/calibration/h200",
            "{repo}/calibration/h100",
            "--op",
            "gemm",
            "--pair",
            "torch=torch",
            "--pair",
            "torch=deep_gemm",
        ),
        "--pair: B backend 'torch' is paired twice",
    ),  # fmt: skip
    Case(
        "diff-pair-unknown-backends",
        ("perfdb", "diff", "{repo}/calibration/h200", "{repo}/calibration/h100", "--pair", "foo=bar"),
        "--pair: foo=bar: B",
    ),  # fmt: skip
    Case(
        "calibrate-models-unknown",
        ("calibrate", "--dry-run", "--gpu", "h100", "--models", "gpt-17", "--out", "{ws}/cal"),
        "--models: got gpt-17; the grid's MoE models are DeepSeek-V3",
    ),  # fmt: skip
    Case(
        "calibrate-models-dense",
        ("calibrate", "--dry-run", "--gpu", "h100", "--models", "qwen3-8b", "--out", "{ws}/cal"),
        "--models: got qwen3-8b",
    ),  # fmt: skip
    Case(
        "calibrate-backends-unknown",
        ("calibrate", "--dry-run", "--gpu", "h100", "--backends", "magic", "--out", "{ws}/cal"),
        "--backends: got magic; allowed: the table backend labels",
    ),  # fmt: skip
    Case(
        "validate-plan-retry-failed",
        ("validate", "{ws}/s.yaml", "--plan-only", "--retry-failed", "--out", "{ws}/val"),
        "--retry-failed: applies to a run on the GPU, which --plan-only skips",
    ),  # fmt: skip
    Case(
        "validate-plan-gpu-mismatch",
        ("validate", "{ws}/s.yaml", "--plan-only", "--allow-gpu-mismatch", "--out", "{ws}/val"),
        "--allow-gpu-mismatch",
    ),  # fmt: skip
    Case(
        "validate-report-retry-failed",
        ("validate", "{ws}/s.yaml", "--report-only", "--retry-failed", "--out", "{ws}/empty"),
        "--retry-failed: applies to a run on the GPU, which --report-only skips",
    ),  # fmt: skip
    Case("groundtruth-index-no-runs", ("groundtruth", "index", "{ws}/empty"), "no runs"),
    Case(
        "groundtruth-modeldir-prompts-directory",
        ("groundtruth", "modeldir", "qwen3-8b", "{ws}/model", "--prompts", "{ws}/empty"),
        "--prompts",
    ),  # fmt: skip
    Case(
        "compare-no-shared-metric",
        ("compare", "{ws}/p.json", "{ws}/result.json"),
        "no metric appears in both files",
        {"p.json": json.dumps({"p99_itl_ms": 3.0, "output_throughput": 100.0})},
    ),  # fmt: skip
]

# the third sweep: duplicated keys, settings another setting makes meaningless, values no server runs with
THIRD_SWEEP_CASES = [
    Case(
        "scenario-duplicate-key",
        ("predict", "{ws}/d.yaml"),
        "key 'tp' is given twice in one mapping (first on line",
        {"d.yaml": scenario_text().replace("  tp: 1\n", "  tp: 1\n  tp: 2\n")},
    ),  # fmt: skip
    Case(
        "sweep-duplicate-key",
        ("sweep", "{ws}/d.yaml"),
        "key 'axes' is given twice",
        {"d.yaml": yaml.safe_dump(sweep_dict({"serving.page_size": [1]})) + "axes: {serving.tp: [1]}\n"},
    ),  # fmt: skip
    Case(
        "predict-set-duplicate-key",
        ("predict", "{ws}/s.yaml", "--set", "serving={{tp: 1, tp: 2}}"),
        "key 'tp' is given twice",
    ),  # fmt: skip
    scenario_case(
        "spec-draft-tokens-chain",
        "serving.speculative: num_draft_tokens (2): with eagle_topk 1 SGLang sets it to num_steps + 1 = 4",
        **{
            "serving.speculative": {
                "algorithm": "eagle",
                "num_draft_tokens": 2,
                "accept_length": {"mean": 1.5},
            }
        },
    ),  # fmt: skip
    scenario_case(
        "mtp-without-mtp-layers",
        "serving.speculative.algorithm: mtp (the default) drafts with the checkpoint's own MTP layers, and qwen3-8b "
        "has none",
        **{"serving.speculative": {"num_steps": 3, "accept_length": {"mean": 2.4}}},
    ),  # fmt: skip
    scenario_case(
        "ep-dense-model",
        "serving.ep: 2 has no effect on qwen3-8b, which has no routed experts",
        **{"serving.tp": 2, "hardware.count": 2, "serving.ep": 2},
    ),  # fmt: skip
    scenario_case(
        "dp-attention-dense-model",
        "serving.dp_attention: 2: SGLang offers DP attention for Qwen3MoeForCausalLM",
        **{"serving.tp": 2, "hardware.count": 2, "serving.dp_attention": 2},
    ),  # fmt: skip
    scenario_case(
        "serving-with-disaggregation",
        "serving.page_size, serving.tp: not used with disaggregation",
        **{
            "hardware.count": 2,
            "serving.page_size": 64,
            "disaggregation": {"prefill": {"tp": 1}, "decode": {"tp": 1}},
        },
    ),  # fmt: skip
    scenario_case(
        "serving-under-fleet-groups",
        "serving.page_size, serving.tp: not used: every fleet group gives its own serving",
        **{"serving.page_size": 32, "fleet": {"replicas": [{"count": 2, "serving": {"tp": 1}}]}},
    ),  # fmt: skip
    scenario_case(
        "trace-timestamps-with-rate",
        "workload: request_rate: not used: the trace's timestamps set the arrivals",
        **{"workload.dataset": {"kind": "trace", "path": "t.jsonl"}, "workload.request_rate": 20},
    ),  # fmt: skip
    scenario_case(
        "mixed-chunk-without-chunks",
        "serving: enable_mixed_chunk: has no effect with chunked_prefill_size -1",
        **{"serving.enable_mixed_chunk": True, "serving.chunked_prefill_size": -1},
    ),  # fmt: skip
    scenario_case(
        "graph-bs-without-graphs",
        "serving: cuda_graph_max_bs: has no effect with disable_cuda_graph: true",
        **{"serving.cuda_graph_max_bs": 8, "serving.disable_cuda_graph": True},
    ),  # fmt: skip
    scenario_case(
        "gamma-at-infinite-rate",
        "workload: arrival_process: gamma draws gaps around a finite request_rate",
        **{"workload.arrival_process": "gamma", "workload.burstiness": 0.5, "workload.request_rate": "inf"},
    ),  # fmt: skip
    scenario_case(
        "fleet-kv-link-regular",
        "fleet: kv_link_gbytes_per_s: applies to PD fleets",
        fleet={"replicas": [{"count": 2}], "kv_link_gbytes_per_s": 10},
    ),  # fmt: skip
    scenario_case(
        "fleet-workers-serial",
        "fleet: workers: executor serial runs every replica in this process",
        fleet={"replicas": [{"count": 2}], "executor": "serial", "workers": 4},
    ),  # fmt: skip
    scenario_case(
        "fleet-ray-address-not-ray",
        "fleet: ray_address: applies to executor ray",
        fleet={"replicas": [{"count": 2}], "ray_address": "head:6379"},
    ),  # fmt: skip
    Case(
        "predict-flag-twice",
        ("predict", "{ws}/s.yaml", "--tp-size", "1", "--tp", "2"),
        "--tp: given twice ('1'",
    ),
    Case(
        "predict-set-twice",
        ("predict", "{ws}/s.yaml", "--set", "serving.page_size=16", "--set", "serving.page_size=32"),
        "--set serving.page_size: given twice",
    ),  # fmt: skip
    Case(
        "fleet-compare-set-twice",
        ("fleet", "compare", "{ws}/f.yaml", "--set", "fleet.router.seed=1", "--set", "fleet.router.seed=2"),
        "--set fleet.router.seed: given twice",
        {"f.yaml": FLEET},
    ),  # fmt: skip
    Case(
        "plan-sla-twice",
        ("plan", "{table}", "--rate", "5", "--sla", "ttft.p90 <= 2s", "--sla", "ttft.p90 <= 1s"),
        "ttft.p90 is already bounded by 'ttft.p90 <= 2s'",
    ),  # fmt: skip
    Case(
        "sweep-plan-sla-twice",
        ("sweep", "{ws}/a.yaml"),
        "ttft.median is already bounded by 'ttft.p50 <= 2s'",
        {
            "a.yaml": yaml.safe_dump(
                sweep_dict({"serving.page_size": [1]}, plan={"sla": ["ttft.p50 <= 2s", "ttft.median <= 1s"]})
            )
        },
    ),  # fmt: skip
    Case(
        "fleet-plan-sla-twice",
        (
            "fleet",
            "plan",
            "{ws}/f.yaml",
            "--rate",
            "5",
            "--sla",
            "tpot.p90 <= 50ms",
            "--sla",
            "tpot.p90 <= 20ms",
        ),
        "tpot.p90 is already bounded",
        {"f.yaml": FLEET},
    ),  # fmt: skip
    Case(
        "sweep-axis-value-twice",
        ("sweep", "{ws}/a.yaml"),
        "axes: workload.request_rate: 1 is listed twice",
        {"a.yaml": yaml.safe_dump(sweep_dict({"workload.request_rate": [1, 2, 1]}))},
    ),  # fmt: skip
    scenario_case(
        "kv-pool-beyond-gpu",
        "serving.max_total_tokens: 1,000,000,000 tokens x",
        **{"serving.max_total_tokens": 10**9},
    ),  # fmt: skip
    scenario_case(
        "page-longer-than-context",
        "serving.page_size: 100000 tokens per page is more than qwen3-8b's context length",
        **{"serving.page_size": 100000},
    ),  # fmt: skip
    Case(
        "fleet-compare-policy-unknown",
        ("fleet", "compare", "{ws}/f.yaml", "--policy", "psychic"),
        "--policy: got 'psychic'; allowed values: round_robin, random",
        {"f.yaml": FLEET},
    ),  # fmt: skip
    Case(
        "fleet-plan-two-groups-one-line",
        ("fleet", "plan", "{ws}/g.yaml", "--rate", "5"),
        "give exactly one group under fleet.replicas",
        {"g.yaml": scenario_text(fleet={"replicas": [{"count": 1}, {"count": 1, "name": "b"}]})},
    ),  # fmt: skip
    Case(
        "plan-fleet-scenario-top",
        ("plan", "{ws}/f.yaml", "--rate", "5", "--top", "3"),
        "--top: apply to a sweep table or file",
        {"f.yaml": FLEET},
    ),  # fmt: skip
    Case(
        "report-top-without-rate",
        ("report", "{table}", "-o", "{ws}/r.html", "--top", "3"),
        "--top: counts the plan",
    ),
    Case(
        "model-config-zero-heads",
        ("predict", "{ws}/mc.yaml"),
        "config.json: num_attention_heads: got 0; a model has at least 1",
        {
            "mc.yaml": scenario_text(**{"model.name": "x", "model.config": "config.json"}),
            "config.json": json.dumps(
                {
                    "architectures": ["Qwen3ForCausalLM"],
                    "hidden_size": 4096,
                    "num_hidden_layers": 36,
                    "num_attention_heads": 0,
                    "num_key_value_heads": 8,
                    "intermediate_size": 12288,
                    "vocab_size": 151936,
                    "max_position_embeddings": 40960,
                }
            ),
        },
    ),  # fmt: skip
    Case(
        "predict-random-flag-on-gsp",
        (
            "predict",
            "{ws}/s.yaml",
            "--dataset-name",
            "generated-shared-prefix",
            "--random-range-ratio",
            "0.5",
        ),
        "--random-range-ratio applies to --dataset-name random",
    ),  # fmt: skip
    Case(
        "predict-mooncake-with-request-rate",
        (*MOONCAKE_FLAGS, "--request-rate", "8"),
        "--request-rate: bench_serving ignores it for --dataset-name mooncake",
    ),
    Case(
        "predict-mooncake-with-tokenize-prompt",
        (*MOONCAKE_FLAGS, "--tokenize-prompt"),
        "--tokenize-prompt: bench_serving's mooncake dataset sends text prompts",
    ),
    Case(
        "predict-like-lens-not-a-list",
        ("predict", "{ws}/s.yaml", "--like", "{ws}/odd.json"),
        "odd.json: input_lens: got 5; expected a list of token counts",
        {"odd.json": json.dumps({"completed": 1, "duration": 1.0, "input_lens": 5, "output_lens": 3})},
    ),
    Case(
        "predict-like-rate-text",
        ("predict", "{ws}/s.yaml", "--like", "{ws}/odd.json"),
        "odd.json: request_rate: got 'fast'; expected a positive number, inf or 'trace'",
        {"odd.json": json.dumps({"completed": 1, "duration": 1.0, "request_rate": "fast"})},
    ),
    Case(
        "predict-like-seed-beyond-numpy",
        ("predict", "{ws}/s.yaml", "--like", "{ws}/odd.json"),
        "odd.json: the run's workload: seed: Input should be less than or equal to 4294967295",
        {"odd.json": json.dumps({"completed": 1, "duration": 1.0, "seed": 2**40})},
    ),
    Case(
        "compare-concurrency-fraction",
        ("compare", "{ws}/result.json", "{ws}/odd.json"),
        "odd.json: max_concurrency: got 2.5; expected a whole number >= 0",
        {"odd.json": json.dumps({"completed": 1, "duration": 1.0, "max_concurrency": 2.5})},
    ),
    Case(
        "predict-disable-stream",
        ("predict", "{ws}/s.yaml", "--disable-stream"),
        "--disable-stream: bench_serving then receives each output as one response",
    ),
    Case(
        "predict-like-and-workload-flag",
        ("predict", "{ws}/s.yaml", "--like", "{ws}/run.json", "--num-prompts", "99"),
        "--num-prompts: the measured run sets workload.num_prompts",
        {"run.json": json.dumps({"completed": 10, "duration": 2.0, "mean_ttft_ms": 30.0, "request_rate": 5})},
    ),  # fmt: skip
    scenario_case(
        "balance-without-dp",
        "serving: load_balance_method: total_requests balances DP attention ranks; dp_attention is 1",
        **{"serving.load_balance_method": "total_requests"},
    ),  # fmt: skip
    scenario_case(
        "dsa-threshold-dense",
        "serving.dsa_prefill_dense_attn_kv_len_threshold: applies to DSA models",
        **{"serving.dsa_prefill_dense_attn_kv_len_threshold": 100},
    ),  # fmt: skip
    scenario_case(
        "gsp-block-longer-than-prefix",
        "workload.dataset: block_tokens (1024) is longer than system_prompt_len (512)",
        **{
            "workload.dataset": {
                "kind": "shared_prefix",
                "num_groups": 2,
                "prompts_per_group": 2,
                "system_prompt_len": 512,
                "block_tokens": 1024,
            },
            "workload.num_prompts": DELETE,
        },
    ),  # fmt: skip
    scenario_case(
        "lpm-without-radix-cache",
        "serving: schedule_policy: lpm orders by cached prefix and runs as fcfs with disable_radix_cache: true",
        **{"serving.schedule_policy": "lpm", "serving.disable_radix_cache": True},
    ),  # fmt: skip
    scenario_case(
        "mixed-chunk-with-speculative",
        "serving: enable_mixed_chunk: SGLang refuses it with speculative decoding",
        **{
            "serving.enable_mixed_chunk": True,
            "serving.speculative": {"algorithm": "eagle", "accept_length": {"mean": 2.5}},
        },
    ),  # fmt: skip
    scenario_case(
        "chunk-not-whole-pages",
        "serving.chunked_prefill_size: 1000 tokens is not a multiple of the page size (64)",
        **{"serving.chunked_prefill_size": 1000, "serving.page_size": 64},
    ),  # fmt: skip
    scenario_case(
        "page-size-backend-changes",
        "serving.page_size: 1: SGLang runs the flashmla attention backend with page_size 64",
        **{
            "model.name": "deepseek-v3",
            "hardware.gpu": "h200",
            "hardware.count": 8,
            "serving.tp": 8,
            "serving.attention_backend": "flashmla",
            "serving.page_size": 1,
        },
    ),  # fmt: skip
    scenario_case(
        "draft-tree-on-paged-flashmla",
        "serving.speculative.eagle_topk: 2 (a draft tree) with page_size 64 runs only on the flashinfer and fa3",
        **{
            "model.name": "deepseek-v3",
            "hardware.gpu": "h200",
            "hardware.count": 8,
            "serving.tp": 8,
            "serving.attention_backend": "flashmla",
            "serving.speculative": {"eagle_topk": 2, "num_draft_tokens": 6, "accept_length": {"mean": 2.5}},
        },
    ),  # fmt: skip
    scenario_case("block-check-no-echo", "fleet: replicas: give at least one group", fleet={"replicas": []}),
    scenario_case(
        "autoscale-startup-without-scale-up",
        "fleet.autoscale: startup_s: delays scale-ups, and this schedule never raises the replica count (3 at",
        fleet={
            "replicas": [{"count": 3}],
            "autoscale": {
                "startup_s": 30,
                "schedule": [{"at_s": 0, "replicas": 3}, {"at_s": 5, "replicas": 2}],
            },
        },
    ),  # fmt: skip
    scenario_case(
        "multi-turn-interval-of-one-turn",
        "workload.dataset: turn_interval_s: spaces a conversation's turns, and turns is 1",
        **{
            "workload.dataset": {
                "kind": "multi_turn",
                "num_conversations": 4,
                "turns": 1,
                "input_len": 64,
                "output_len": 8,
                "turn_interval_s": 30,
            },
            "workload.num_prompts": DELETE,
        },
    ),  # fmt: skip
    scenario_case(
        "trace-uniform-sample-of-everything",
        "workload.dataset.sample: uniform draws workload.num_prompts (10) of the 2 requests of ",
        **{"workload.dataset": {"kind": "trace", "path": "t.jsonl", "sample": "uniform"}},
    ),  # fmt: skip
    scenario_case(
        "fleet-top-level-hardware-unused",
        "hardware: not used: every fleet group gives its own hardware",
        **{"hardware.gpu": "h200"},
        fleet={"replicas": [{"count": 2, "hardware": {"gpu": "h100", "count": 1}}]},
    ),  # fmt: skip
    scenario_case(
        "autoscale-step-keeps-the-count",
        "fleet.autoscale: schedule[1]: replicas 2 repeats the previous step's count",
        fleet={
            "replicas": [{"count": 2}],
            "autoscale": {"schedule": [{"at_s": 0, "replicas": 2}, {"at_s": 1, "replicas": 2}]},
        },
    ),  # fmt: skip
    scenario_case(
        "autoscale-step-after-the-last-request",
        "fleet.autoscale.schedule[1]: at_s 60 comes after the last request arrives",
        fleet={
            "replicas": [{"count": 2}],
            "autoscale": {"schedule": [{"at_s": 0, "replicas": 2}, {"at_s": 60, "replicas": 1}]},
        },
    ),  # fmt: skip
]

# this sweep: parallel layouts and PD disaggregation (settings one side of a PD pair refuses or never reads)
PD_PAIR = {"hardware.count": 2, "serving": DELETE}


def pd_case(case_id: str, expected: str, prefill: dict, decode: dict, **changes) -> Case:
    """A PD pair of GOOD's model on one GPU each, with the two servers' arguments given."""
    pair = {"prefill": {"tp": 1, **prefill}, "decode": {"tp": 1, **decode}}
    return scenario_case(case_id, expected, **PD_PAIR, disaggregation=pair, **changes)


PD_CASES = [
    pd_case(
        "pd-page-size-mismatch",
        "disaggregation.decode.page_size: the decode server runs 64 and the prefill server",
        {"page_size": 16},
        {"page_size": 64},
    ),  # fmt: skip
    pd_case(
        "pd-kv-dtype-mismatch",
        "disaggregation.decode.kv_cache_dtype: the decode server runs fp8_e4m3",
        {},
        {"kv_cache_dtype": "fp8_e4m3"},
    ),  # fmt: skip
    pd_case(
        "pd-decode-mixed-chunk",
        "disaggregation.decode.enable_mixed_chunk: not read by a PD decode server",
        {},
        {"enable_mixed_chunk": True},
    ),  # fmt: skip
    pd_case(
        "pd-decode-chunked-prefill",
        "disaggregation.decode.chunked_prefill_size: not read by a PD decode server",
        {},
        {"chunked_prefill_size": 4096},
    ),  # fmt: skip
    pd_case(
        "pd-decode-schedule-policy",
        "disaggregation.decode.schedule_policy: not read by a PD decode server",
        {},
        {"schedule_policy": "lof"},
    ),  # fmt: skip
    scenario_case(
        "pd-fleet-decode-max-prefill-tokens",
        "fleet.decode[0].serving.max_prefill_tokens: not read by a PD decode server",
        fleet={"prefill": [{"count": 1}], "decode": [{"serving": {"max_prefill_tokens": 4096}}]},
    ),  # fmt: skip
    pd_case(
        "pd-prefill-cuda-graph-max-bs",
        "disaggregation.prefill.cuda_graph_max_bs: not read by a PD prefill server",
        {"cuda_graph_max_bs": 64},
        {},
    ),  # fmt: skip
    pd_case(
        "pd-prefill-mixed-chunk",
        "disaggregation.prefill.enable_mixed_chunk: not read by a PD prefill server",
        {"enable_mixed_chunk": True},
        {},
    ),  # fmt: skip
    scenario_case(
        "pd-fleet-prefill-disable-cuda-graph",
        "fleet.prefill[0].serving.disable_cuda_graph: not read by a PD prefill server",
        fleet={"prefill": [{"serving": {"disable_cuda_graph": True}}], "decode": [{"count": 1}]},
    ),  # fmt: skip
    pd_case(
        "pd-decode-speculative-without-accept-length",
        "disaggregation.decode.speculative.accept_length: required",
        {},
        {"speculative": {"algorithm": "eagle"}},
    ),  # fmt: skip
    pd_case(
        "pd-decode-mla-backend-on-gqa",
        "disaggregation.decode.decode_attention_backend: flashmla is an MLA backend",
        {},
        {"attention_backend": "flashmla"},
    ),  # fmt: skip
    scenario_case(
        "pd-fleet-group-tp-names-the-group",
        "fleet.prefill[0].serving.tp: 3 cannot serve qwen3-8b",
        fleet={"prefill": [{"serving": {"tp": 3}}], "decode": [{"count": 1}]},
    ),  # fmt: skip
    scenario_case(
        "pd-fleet-page-size-mismatch",
        "fleet.decode[0].serving.page_size: the decode server runs 1 and the prefill server",
        fleet={"prefill": [{"serving": {"page_size": 16}}], "decode": [{"count": 2}]},
    ),  # fmt: skip
]

PD_FLEET = {"prefill": [{"count": 1}], "decode": [{"count": 1}]}
PD_SIDES = {"prefill_policy": "cache_aware", "decode_policy": "power_of_two"}
# the fleet, sweep, plan and report review: answers that were meaningless, and failures inside a command
FLEET_REVIEW_CASES = [
    *(
        Case(
            f"{name}-without-sla",
            (*command, "{ws}/f.yaml", "--rate", "1e9"),
            "--sla: give at least one latency bound",
            {"f.yaml": FLEET},
        )
        # every fleet that rejects nothing met "no latency bound": 1 replica for 1e9 req/s
        for name, command in (("fleet-plan", ("fleet", "plan")), ("plan-fleet-scenario", ("plan",)))
    ),
    # the PD router's policy is only the fallback of a side without its own: with both given it routed nothing, and
    # `fleet compare --policy` printed identical fleets under each policy's name
    scenario_case(
        "pd-fleet-policy-beside-both-sides",
        "fleet.router: policy: a PD router uses it only for a side without its own policy, and prefill_policy "
        "(cache_aware) and decode_policy (power_of_two) are both set",
        fleet={**PD_FLEET, "router": {"policy": "round_robin", **PD_SIDES}},
    ),
    Case(
        "fleet-compare-pd-both-sides",
        ("fleet", "compare", "{ws}/pd.yaml", "--policy", "round_robin", "--policy", "random"),
        "--policy 'round_robin': policy: a PD router uses it only for a side without its own policy",
        {"pd.yaml": scenario_text(fleet={**PD_FLEET, "router": PD_SIDES})},
    ),
    # a group's name labels its servers in the per-server table and the JSON: two alike could not be told apart
    scenario_case(
        "fleet-group-names-twice",
        "fleet: replicas[1].name: 'a' is also replicas[0]'s name",
        fleet={"replicas": [{"count": 1, "name": "a"}, {"count": 1, "name": "a"}]},
    ),
    scenario_case(
        "pd-fleet-group-name-on-both-sides",
        "fleet: decode[0].name: 'x' is also prefill[0]'s name",
        fleet={"prefill": [{"name": "x"}], "decode": [{"name": "x"}]},
    ),
    scenario_case(
        "fleet-group-name-empty", "fleet: replicas[0].name: empty", fleet={"replicas": [{"name": " "}]}
    ),
    # another Parquet table where a sweep's is read: 'error: point_id' or a ColumnNotFoundError naming no file
    *(
        Case(f"{name}-not-a-sweep-table", args, "x.parquet: not a sweep result table")
        for name, args in (
            ("plan", ("plan", "{ws}/nottables/x.parquet", "--rate", "5")),
            ("report", ("report", "{ws}/nottables/x.parquet", "-o", "{ws}/r.html")),
            (
                "sweep-out",
                ("sweep", "{ws}/sweep.yaml", "--executor", "serial", "--out", "{ws}/nottables/x.parquet"),
            ),
        )
    ),
]


def sweep_file(axes: dict, base: dict | None = None) -> str:
    """A sweep over `axes` of the tiny base, or of `base` (a scenario mapping)."""
    data = sweep_dict(axes)
    if base is not None:
        data["base"] = base
    return yaml.safe_dump(data)


FLEET_BASE = yaml.safe_load(scenario_text(fleet={"replicas": [{"count": 2}]}))
# found by the second sweep review
SECOND_SWEEP_REVIEW_CASES = [
    # a value no point can take, whatever the other axes, ran as an `invalid` row at every point (exit 0 when another
    # value ran): refused when the sweep loads, naming the axis and the value
    Case(
        "sweep-axis-value-of-no-type",
        ("sweep", "{ws}/a.yaml", "--executor", "serial", "--out", "{ws}/r.sweep.parquet"),
        "axes: workload.request_rate: got 'fast'; expected a valid number or 'inf'; no point of the sweep could "
        "take it",
        {"a.yaml": sweep_file({"workload.request_rate": ["fast", 2]})},
    ),
    Case(
        "sweep-fleet-policy-not-a-policy",
        ("sweep", "{ws}/a.yaml", "--executor", "serial", "--out", "{ws}/r.sweep.parquet"),
        "axes: fleet.router.policy: got 'psychic'; allowed values: 'round_robin', 'random'",
        {"a.yaml": sweep_file({"fleet.router.policy": ["psychic"]}, FLEET_BASE)},
    ),
    Case(
        "sweep-group-value-out-of-bounds",
        ("sweep", "{ws}/a.yaml", "--executor", "serial", "--out", "{ws}/r.sweep.parquet"),
        "axes: layout[0].serving.tp: Input should be greater than or equal to 1 (got 0)",
        {"a.yaml": sweep_file({"layout": [{"serving.tp": 0}, {"serving.tp": 1}]})},
    ),
    Case(
        "sweep-dataset-kind-of-no-dataset",
        ("sweep", "{ws}/a.yaml", "--executor", "serial", "--out", "{ws}/r.sweep.parquet"),
        "axes: workload.dataset.kind: got 'sharegpt'; allowed values: 'random', 'fixed', 'trace', 'shared_prefix', "
        "'multi_turn'",
        {"a.yaml": sweep_file({"workload.dataset.kind": ["random", "sharegpt"]})},
    ),
    # without a top-level hardware the first group's stood in for it, so its unknown GPU was also reported at
    # hardware.gpu, a path the file does not have ("2 problem(s)")
    scenario_case(
        "fleet-group-gpu-unknown-without-hardware",
        "bad.yaml: fleet.replicas[0].hardware.gpu: got 'h900'; allowed values:",
        hardware=DELETE,
        fleet={"replicas": [{"hardware": {"gpu": "h900"}}, {"hardware": {"gpu": "h100"}}]},
    ),
    scenario_case(
        "pd-fleet-group-count-0-without-hardware",
        "bad.yaml: fleet.prefill[0].hardware.count: Input should be greater than or equal to 1",
        hardware=DELETE,
        fleet={
            "prefill": [{"hardware": {"gpu": "h100", "count": 0}}],
            "decode": [{"hardware": {"gpu": "h100"}}],
        },
    ),
]

GEMM_ROW = {"op": "gemm", "backend": "torch", "dtype": "bf16", "m": 64, "n": 4096, "k": 4096, "gpu": "h100",
            "time_us": 12.5, "status": "ok", "sample": "grid"}  # fmt: skip


def gemm_table(drop: tuple[str, ...] = (), **changes) -> bytes:
    """A one-row calibration table (gemm on h100), with columns changed or dropped."""
    import io

    import pyarrow.parquet as pq

    from simperf.perfdb.tables import rows_to_table

    buffer = io.BytesIO()
    pq.write_table(rows_to_table([{**GEMM_ROW, **changes}]).drop(list(drop)), buffer)
    return buffer.getvalue()


def float_gemm_table(**changes) -> bytes:
    """gemm_table() as another tool would write it with float shape columns, changed."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(gemm_table()))
    for name, value in changes.items():
        i = table.schema.get_field_index(name)
        table = table.set_column(i, pa.field(name, pa.float64()), pa.array([value], pa.float64()))
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def gemm_table_of_version(version: str) -> bytes:
    """gemm_table() as a simperf of another table schema version would have written it."""
    import io

    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(gemm_table()))
    buffer = io.BytesIO()
    pq.write_table(table.replace_schema_metadata({"simperf_schema_version": version}), buffer)
    return buffer.getvalue()


AIC_IMPORT = ("calibrate", "import", "aiconfigurator", "--system", "b200_sxm", "--package-root",
              "{repo}/tests/fixtures/aiconfigurator")  # fmt: skip
RUN_OK = '{"status": "ok"}'
TRUTH_HEADER = "id,source,gpu,n_gpu,backend_flags,model,metric,value,unit\n"
RATIOS = """format: simperf-scaled-ratios/1
target: {target}
reference: h200
edges: [0.5]
cells:
- {{family: gemm, bound: compute, bucket: 0, median: {median}, points: 9, p10: 1.0, p90: 1.2}}
"""


def rowless_gemm_table() -> bytes:
    """gemm_table()'s columns and no rows (a calibration run stopped before its first point was written)."""
    import io

    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pq.read_table(io.BytesIO(gemm_table())).slice(0, 0), buffer)
    return buffer.getvalue()


def table_case(case_id: str, expected: str, table: bytes, command: str = "coverage") -> Case:
    return Case(case_id, ("perfdb", command, "{ws}/cal"), expected, {"cal/gemm.parquet": table})


CALIBRATION_TABLE_CASES = [
    table_case("table-time-nan", "row 0: time_us is nan", gemm_table(time_us=float("nan"))),
    table_case("table-time-negative", "row 0: time_us is -3.0", gemm_table(time_us=-3.0), "check"),
    table_case("table-time-zero", "row 0: time_us is 0.0", gemm_table(time_us=0.0)),
    table_case("table-time-inf", "row 0: time_us is inf", gemm_table(time_us=float("inf"))),
    table_case("table-time-null", "row 0: time_us is None", gemm_table(time_us=None), "check"),
    table_case("table-no-time-column", "no column time_us", gemm_table(drop=("time_us",))),
    table_case("table-no-axis-column", "no column m", gemm_table(drop=("m",)), "check"),
    table_case("table-dtype-trailing-space", "row 0: dtype is 'bf16 '", gemm_table(dtype="bf16 ")),
    table_case("table-sample-unknown", "row 0: sample: got ['grid2']", gemm_table(sample="grid2")),
    table_case("table-m-fractional", "row 0: m is 64.5", float_gemm_table(m=64.5), "check"),
    table_case("table-n-fractional", "row 0: n is 4096.5", float_gemm_table(n=4096.5)),
    Case(
        "table-repeats-ten-times-apart",
        ("perfdb", "check", "{ws}/cal"),
        "b.parquet row 0: gemm (backend=torch, dtype=bf16, n=4096, k=4096) at m=64 times 125 us, but",
        {"cal/a.parquet": gemm_table(), "cal/b.parquet": gemm_table(time_us=125.0)},
    ),
    table_case("table-backend-case", "row 0: backend is 'TORCH'", gemm_table(backend="TORCH"), "check"),
    # a well-formed key value no query asks for (a typo) loaded and timed nothing: the key fell back elsewhere
    table_case(
        "table-dtype-unknown",
        "row 0: gemm dtype is 'bf17' (1 such rows); not a dtype",
        gemm_table(dtype="bf17"),
    ),
    table_case(
        "table-backend-unknown",
        "gemm backend is 'torhc' (1 such rows); not a backend simperf knows for gemm (nearest: torch",
        gemm_table(backend="torhc"),
        "check",
    ),
    table_case(
        "table-variant-unknown",
        "row 0: elementwise variant is 'rmsnrom' (1 such rows); not a variant simperf knows for elementwise "
        "(nearest: rmsnorm",
        gemm_table(op="elementwise", backend="flashinfer", variant="rmsnrom", k=None),
    ),
    table_case(
        "table-kv-dtype-unknown",
        "attn_gqa_decode kv_dtype is 'fp8_e4m4' (1 such rows); not a kv_dtype simperf knows for attn_gqa_decode "
        "(nearest: fp8_e4m3",
        gemm_table(
            op="attn_gqa_decode",
            backend="flashinfer",
            kv_dtype="fp8_e4m4",
            num_heads=32,
            num_kv_heads=8,
            head_dim=128,
            page_size=1,
            batch=1,
            kv_len=1024,
            m=None,
            n=None,
            k=None,
        ),
    ),
    table_case(
        "table-routing-unknown",
        "moe routing is 'balnced' (1 such rows); not a routing simperf knows for moe (nearest: balanced",
        gemm_table(
            op="moe", routing="balnced", backend="triton_fused_moe", num_experts=8, experts_per_rank=8, topk=2
        ),
    ),
    table_case(
        "table-op-unknown", "row 0: op is 'gemn' (1 such rows); not an op", gemm_table(op="gemn"), "check"
    ),
    Case(
        "tables-of-two-gpus",
        ("perfdb", "check", "{ws}/cal"),
        "several GPUs: h100 (a.parquet), h200 (b.parquet)",
        {"cal/a.parquet": gemm_table(), "cal/b.parquet": gemm_table(gpu="h200")},
    ),
    table_case(
        "table-no-gpu-odd-directory", "record no gpu, it has no device.json naming one", gemm_table(gpu=None)
    ),
    Case(
        "table-gpu-against-device-json",
        ("perfdb", "check", "{ws}/cal"),
        "the tables' gpu column says h100 but device.json says h200",
        {"cal/gemm.parquet": gemm_table(), "cal/device.json": '{"device": {"gpu": "h200"}}'},
    ),
    *(
        Case(
            f"scaled-from-{name}",
            ("perfdb", "coverage", "{ws}/cal"),
            expected,
            {"cal/gemm.parquet": gemm_table(), "cal/scaled_from.yaml": text},
        )
        for name, text, expected in (
            ("not-yaml", "reference: [\n", "cal/scaled_from.yaml: not YAML"),
            (
                "unknown-gpu",
                "reference: h300\n",
                "scaled_from.yaml: reference: unknown GPU 'h300'; the hardware",
            ),
            ("itself", "reference: h100\n", "scaled_from.yaml: reference: h100 is this directory's own GPU"),
            ("key-twice", "reference: h200\nreference: h100\n", "key 'reference' is given twice"),
        )
    ),
    *(
        Case(
            f"scaled-ratios-{name}",
            ("perfdb", "coverage", "{ws}/cal"),
            expected,
            {
                "cal/gemm.parquet": gemm_table(),
                "h200/gemm.parquet": gemm_table(gpu="h200"),
                "cal/scaled_from.yaml": "reference: h200\n",
                "cal/scaled_ratios.yaml": text,
            },
        )
        for name, text, expected in (
            ("list", "- 1\n", "scaled_ratios.yaml: not a measured-ratio file"),
            ("not-yaml", "cells: [\n", "scaled_ratios.yaml: not YAML"),
            ("nan", RATIOS.format(target="h100", median=".nan"), "ratios must be positive, got [nan"),
            ("other-target", RATIOS.format(target="b200", median=1.1), "target: 'b200', but these are h100"),
            # a cell listed twice, or a key given twice, kept the last one's ratios without a word
            (
                "cell-twice",
                RATIOS.format(target="h100", median=1.1) + RATIOS.splitlines()[-1].format(median=1.5) + "\n",
                "scaled_ratios.yaml: malformed measured-ratio file (ValueError: cell gemm/compute/0 is listed twice",
            ),
            (
                "key-twice",
                RATIOS.format(target="h100", median=1.1) + "edges: [0.9]\n",
                "key 'edges' is given twice",
            ),
        )
    ),
    Case(
        "diff-points-onto-a-table",
        ("perfdb", "diff", "{repo}/calibration/h100", "{ws}/cal", "--points", "{ws}/cal/gemm.parquet"),
        "gemm.parquet: inside calibration directory B",
        {"cal/gemm.parquet": gemm_table()},
    ),  # fmt: skip
    *(
        Case(
            f"compare-metric-{name}",
            ("compare", "{ws}/p.json", "{ws}/result.json"),
            expected,
            {"p.json": f'{{"completed": 10, "duration": 2.0, "mean_ttft_ms": {value}}}'},
        )
        for name, value, expected in (
            ("nan", "NaN", "p.json: mean_ttft_ms: got nan; expected a finite number >= 0"),
            ("negative", "-30.0", "p.json: mean_ttft_ms: got -30.0"),
            ("text", '"30"', "p.json: mean_ttft_ms: got '30'; expected a number"),
        )
    ),
    Case(
        "compare-nothing-completed",
        ("compare", "{ws}/result.json", "{ws}/z.json"),
        "z.json: completed: 0",
        {"z.json": '{"completed": 0, "duration": 2.0, "mean_ttft_ms": 0.0}'},
    ),
    Case(
        "compare-runs-without-settings",
        ("compare", "{ws}/result.json", "{ws}/two.jsonl"),
        "2 runs in the file, choose one with --run N (run 0: completed 10 duration 2.0; run 1: completed 20",
        {"two.jsonl": '{"completed": 10, "duration": 2.0}\n{"completed": 20, "duration": 3.0}\n'},
    ),
    *(
        Case(
            f"truth-{name}",
            ("accuracy", "{ws}", "--truth", "{ws}/t.csv"),
            expected,
            {"index.yaml": "scenarios: {s.yaml: [T1]}\n", "t.csv": TRUTH_HEADER + row + "\n"},
        )
        for name, row, expected in (
            ("value-nan", "T1,src,H100,1,--tp 1,qwen3-8b,ttft_mean,nan,ms", "t.csv:2: value: got 'nan'"),
            ("value-negative", "T1,src,H100,1,--tp 1,qwen3-8b,ttft_mean,-30,ms", "t.csv:2: value: got '-30'"),
            (
                "value-empty",
                "T1,src,H100,1,--tp 1,qwen3-8b,ttft_mean,,ms",
                "t.csv:2: value: got ''; expected a",
            ),
            ("gpus-0", "T1,src,H100,0,--tp 1,qwen3-8b,ttft_mean,30,ms", "t.csv:2: n_gpu: got 0"),
            ("short-row", "T1,src,H100,1,--tp 1,qwen3-8b,ttft_mean", "t.csv:2: expected 9 fields"),
            # a row of another model was predicted with the scenario's own and its error counted
            (
                "model-of-another-row",
                "T1,src,H100,1,--tp 1,llama-3.1-8b,ttft_mean,30,ms",
                "no row could be predicted (T1: s.yaml: the scenario runs qwen3-8b, the row's model is llama-3.1-8b)",
            ),
            (
                "nothing-predicted",
                "T1,src,H200,1,--tp 1,qwen3-8b,ttft_mean,30,ms",
                "no row could be predicted (T1: s.yaml runs on 1x h100, the row on 1x H200)",
            ),
        )
    ),
    *(
        Case(
            f"groundtruth-{name}",
            ("groundtruth", command, "{ws}/gt"),
            expected,
            {f"gt/h100/srv/r1/{k}": v for k, v in files.items()},
        )
        for name, command, files, expected in (
            (
                "index-run-json-list",
                "index",
                {"run.json": "[1]"},
                "r1/run.json: expected a JSON object, got list",
            ),
            (
                "index-bench-not-json",
                "index",
                {"run.json": RUN_OK, "bench.json": "{bad"},
                "r1/bench.json: not valid JSON",
            ),
            (
                "index-ok-without-bench",
                "index",
                {"run.json": RUN_OK},
                "says ok, but its bench.json is missing",
            ),
            ("overheads-run-not-json", "overheads", {"run.json": ""}, "r1/run.json: not valid JSON"),
            # indexed with status None / 'okay', then skipped by accuracy and overheads without a word
            (
                "index-run-without-status",
                "index",
                {"run.json": "{}"},
                "r1/run.json: status: got None; allowed values: ok, failed",
            ),
            (
                "index-run-status-okay",
                "index",
                {"run.json": '{"status": "okay"}', "bench.json": '{"completed": 1}'},
                "r1/run.json: status: got 'okay'; allowed values: ok, failed",
            ),
            (
                "overheads-run-status-ok-capitalised",
                "overheads",
                {"run.json": '{"status": "OK"}'},
                "r1/run.json: status: got 'OK'; allowed values: ok, failed",
            ),
            (
                "overheads-ok-without-requests",
                "overheads",
                {"run.json": RUN_OK},
                "says ok, but its requests.parquet is missing",
            ),
            (
                "overheads-requests-of-another-kind",
                "overheads",
                {"run.json": RUN_OK, "requests.parquet": gemm_table()},
                "requests.parquet: not a run's requests table: no column client_send_s",
            ),
        )
    ),
    Case(
        "groundtruth-trace-negative-duration",
        ("groundtruth", "trace", "{ws}/tr.json"),
        "tr.json: event 0 ('k'): dur -5; a duration is a number >= 0",
        {"tr.json": '{"traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "ts": 0, "dur": -5}]}'},
    ),
    Case(
        "groundtruth-trace-top-with-replays",
        ("groundtruth", "trace", "{ws}/tr.json", "--top", "3", "--decode-replays"),
        "--top: lists the summary's kernel groups",
        {"tr.json": '{"traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "ts": 0, "dur": 5}]}'},
    ),
    Case(
        "groundtruth-trace-top-negative",
        ("groundtruth", "trace", "{ws}/tr.json", "--top", "-1"),
        "'--top'",
        {"tr.json": '{"traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "ts": 0, "dur": 5}]}'},
    ),
    *(
        Case(
            f"calibrate-grid-{name}",
            ("calibrate", "--dry-run", "--gpu", "h100", "--grid", "{ws}/g.yaml", "--out", "{ws}/cal"),
            expected,
            {"g.yaml": text},
        )
        for name, text, expected in (
            ("misspelt-axis", "gemm: {mm: [1, 8]}\n", "gemm.mm: unknown key; known:"),
            ("negative-size", "gemm: {m: [1, -8]}\n", "gemm.m: got -8; expected whole numbers >= 1"),
            ("fractional-size", "gemm: {m: [1, 8.5]}\n", "gemm.m: got 8.5"),
            ("text-size", "gemm: {m: [1, x]}\n", "gemm.m: got 'x'"),
            ("zero-kv", "gqa_decode: {kv_len: [0, 512]}\n", "gqa_decode.kv_len: got 0"),
            ("unknown-routing", "moe: {routings: [balanced, chaos]}\n", "moe.routings: got 'chaos'; allowed"),
        )
    ),
    *(
        Case(
            f"merge-{name}",
            ("calibrate", "--merge-from", "{ws}/src", "--out", "{ws}/cal", *extra),
            expected,
            {"cal/gemm.parquet": gemm_table(), "src/gemm.parquet": source},
        )
        for name, extra, source, expected in (
            ("nan-times", (), gemm_table(time_us=float("nan")), "src/gemm.parquet: row 0: time_us is nan"),
            ("dry-run", ("--dry-run",), gemm_table(), "--dry-run: does not apply to --merge-from"),
            ("ops", ("--ops", "gemm"), gemm_table(), "--ops: does not apply to --merge-from"),
        )
    ),
    Case(
        "merge-into-itself",
        ("calibrate", "--merge-from", "{ws}/cal", "--out", "{ws}/cal"),
        "is --out itself",
        {"cal/gemm.parquet": gemm_table()},
    ),
    Case(
        "merge-mixed-gpus",
        ("calibrate", "--merge-from", "{ws}/src", "--out", "{ws}/cal"),
        "src: tables measured on several GPUs: h100 (a.parquet), h200 (gemm.parquet)",
        {
            "cal/gemm.parquet": gemm_table(),
            "src/a.parquet": gemm_table(),
            "src/gemm.parquet": gemm_table(gpu="h200"),
        },
    ),
    Case(
        "retime-heldout",
        (
            "calibrate",
            "--retime",
            "{ws}/cal",
            "--out",
            "{ws}/new",
            "--dry-run",
            "--gpu",
            "h100",
            "--heldout",
            "5",
        ),
        "--heldout: shapes the grid's points; --retime measures recorded",
        {"cal/gemm.parquet": gemm_table()},
    ),
    Case(
        "import-relabelled-gpu",
        (*AIC_IMPORT, "--gpu", "h100", "--out", "{ws}/imp"),
        "--gpu h100: system 'b200_sxm' is a b200; its timings are b200's",
    ),
    Case(
        "import-into-another-gpus-directory",
        (*AIC_IMPORT, "--out", "{ws}/cal"),
        "cal: holds h100 tables; import 'b200_sxm' (b200) into a directory of its own GPU",
        {"cal/gemm.parquet": gemm_table()},
    ),
    Case(
        "schema-markdown-into-json", ("schema", "--markdown", "--out", "{ws}/x.json"), "writes Markdown .md"
    ),
    Case("schema-json-into-markdown", ("schema", "--out", "{ws}/x.md"), "JSON Schema .json"),
    Case(
        "offgrid-results-nan-time",
        ("perfdb", "check", "{repo}/calibration/h100", "--offgrid", "{ws}/r.jsonl"),
        "r.jsonl: id 1: time_us nan on an ok row",
        {
            "r.jsonl": '{"format": "simperf-offgrid-results/1", "samples": "samples.jsonl", "gpu": "h100"}\n'
            '{"id": 1, "status": "ok", "time_us": NaN}\n'
        },
    ),
    Case(
        "prefix-path-nan",
        ("perfdb", "coverage", "{ws}/cal"),
        "sglang_path_us nan / table_kernel_us 24.0 is not",
        {
            "cal/gemm.parquet": gemm_table(),
            "cal/extend_prefix_path.jsonl": '{"heads": 32, "kv_heads": 8, "q_len": 512, "prefix": 1024, "table_kernel_us": 24.0, '
            '"sglang_path_us": NaN}\n',
        },
    ),
    Case(
        "inspect-cache-without-block-ids",
        ("trace", "inspect", "{ws}/t.jsonl", "--cache-tokens", "1000"),
        "--cache-tokens: bounds the prefix reuse figure; ",
    ),
    table_case("table-status-unknown", "status: got ['okay']; allowed values: ok", gemm_table(status="okay")),
    table_case("table-axis-negative", "row 0: gemm m is -64 on a status 'ok' row", gemm_table(m=-64)),
    table_case("table-axis-null", "row 0: gemm m is None on a status 'ok' row", gemm_table(m=None), "check"),
    Case(
        "predict-table-axis-zero",
        ("predict", "{ws}/s.yaml", "--calibration", "{ws}/cal"),
        "cal/gemm.parquet: row 0: gemm m is 0 on a status 'ok' row",
        {"cal/gemm.parquet": gemm_table(m=0)},
    ),
    Case(
        "predict-table-other-schema-version",
        ("predict", "{ws}/s.yaml", "--calibration", "{ws}/cal"),
        "cal/gemm.parquet: a table of schema version 2 (simperf_schema_version in its Parquet metadata); this "
        "simperf reads version 1",
        {"cal/gemm.parquet": gemm_table_of_version("2")},
    ),
    Case(
        "merge-other-schema-version",
        ("calibrate", "--merge-from", "{ws}/src", "--out", "{ws}/cal"),
        "src/gemm.parquet: a table of schema version 0",
        {"cal/gemm.parquet": gemm_table(), "src/gemm.parquet": gemm_table_of_version("0")},
    ),
    *(
        Case(
            f"predict-tables-without-gpu-{name}",
            ("predict", "{ws}/s.yaml", "--calibration", f"{{ws}}/{directory}"),
            expected,
            {f"{directory}/gemm.parquet": gemm_table(gpu=None), **extra},
        )
        for name, directory, extra, expected in (
            (
                "device-json",
                "cal",
                {"cal/device.json": '{"device": {"gpu": "h200"}}'},
                "tables measured on h200 (device.json says h200; the rows record no gpu), but hardware.gpu is h100",
            ),
            (
                "directory-name",
                "h200",
                {},
                "tables measured on h200 (the directory's name; the rows record no gpu)",
            ),
            (
                "nothing",
                "cal",
                {},
                "the tables record no gpu (their gpu column is empty), and neither a device.json",
            ),
        )
    ),
    *(
        scenario_case(f"overhead-unread-{name}", expected, **changes)
        for name, expected, changes in (
            (
                "extend-launch-on-fa3",
                "overheads.extend_launch_us_per_kernel: not read by this scenario: read for extends SGLang runs in "
                "its prefill CUDA graph on an attention backend other than fa3 (here qwen3-8b (dense family) at tp 1 runs "
                "its extends in its prefill CUDA graph on fa3)",
                {"overheads.extend_launch_us_per_kernel": 500},
            ),
            (
                "eager-extend-of-moe-on-dense",
                "overheads.eager_extend_us_per_kernel: not read by this scenario",
                {"overheads.eager_extend_us_per_kernel": 500},
            ),
            (
                "router-on-dense",
                "overheads.decode_moe_router_us: not read by this scenario: read for a model with routed experts "
                "(MoE) (here qwen3-8b has none)",
                {"overheads.decode_moe_router_us": 5},
            ),
            (
                "metrics-off",
                "overheads.metrics_us_per_chunk: not read by this scenario: read where the server runs "
                "--enable-metrics (here serving.enable_metrics is off)",
                {"overheads.metrics_us_per_chunk": 50},
            ),
            (
                "prefill-graph-replay",
                "overheads.cuda_graph_replay_us: not read by this scenario: read by no prediction",
                {"overheads.cuda_graph_replay_us": 50},
            ),
            (
                "decode-gap-without-graphs",
                "overheads.decode_graph_gap_us_per_kernel: not read by this scenario: read for decode steps "
                "replayed from CUDA graphs (here decode runs without CUDA graphs)",
                {"overheads.decode_graph_gap_us_per_kernel": 1, "serving.disable_cuda_graph": True},
            ),
            (
                "tokenize-token-ids",
                "overheads.tokenize_us_per_prompt_token: not read: the client sends token ids",
                {"overheads.tokenize_us_per_prompt_token": 3, "workload.tokenize_prompt": True},
            ),
        )
    ),
    *(
        scenario_case(f"model-name-{name}", expected, **{"model.name": given})
        for name, given, expected in (
            ("case", "Qwen3-8B", "model.name: 'Qwen3-8B' is not in the zoo (did you mean 'qwen3-8b'?)"),
            ("underscore", "qwen3_8b", "model.name: 'qwen3_8b' is not in the zoo (did you mean 'qwen3-8b'?)"),
            (
                "hf-repo",
                "Qwen/Qwen3-8B-FP8",
                "(did you mean 'qwen3-8b' (the checkpoint Qwen/Qwen3-8B-FP8 is qwen3-8b with model.weight_dtype: fp8)?)",
            ),
            ("no-near-version", "deepseek-v3.1", "model.name: 'deepseek-v3.1' is not in the zoo; known:"),
        )
    ),
]

QWEN3_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"],
    "hidden_size": 4096,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 12288,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
}
# QWEN3_CONFIG as a Qwen3 MoE (Qwen3-30B-A3B's expert fields)
QWEN3_MOE_CHANGE = {"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 128, "num_experts_per_tok": 8,
                    "moe_intermediate_size": 768}  # fmt: skip
# A demanding user's edge inputs: each was accepted, or failed without naming what was wrong, before its fix.
NOT_UTF8_TRACE = b'{"arrival_s": 0.0, "input_len": 100, "output_len": 10, "note": "caf\xe9"}\n'
EDGE_SWEEP_CASES = [
    # a Latin-1 file: the error was "'utf-8' codec can't decode byte 0xe9 ...", naming no file (and for --like,
    # naming the scenario instead)
    Case("inspect-not-utf8", ("trace", "inspect", "{ws}/latin1.jsonl"), "latin1.jsonl: not UTF-8 text (byte 0xe9)",
         {"latin1.jsonl": NOT_UTF8_TRACE}),
    Case("predict-trace-not-utf8", (*MOONCAKE_FLAGS[:-1], "{ws}/latin1.csv"), "latin1.csv: not UTF-8 text",
         {"latin1.csv": b"arrival_s,input_len,output_len\n0,100,10\n1,100,10 \xe9\n"}),
    Case("predict-like-not-utf8", ("predict", "{ws}/s.yaml", "--like", "{ws}/latin1.json"),
         "latin1.json: not UTF-8 text",
         {"latin1.json": b'{"completed": 10, "duration": 2.0, "tag": "caf\xe9"}\n'}),
    # a draft tree of 2 verified tokens priced as yielding 3.5 a verify; SGLang's organize_draft_results cannot
    # pick 63 drafts from a 1-step top-2 tree's 2 candidates (torch.topk fails), yet both were predicted
    scenario_case("spec-accept-over-draft-tokens", "accept_length.mean: 3.5 tokens per verify step is more than",
                  **{"serving.speculative": {"eagle_topk": 4, "num_draft_tokens": 2, "accept_length": {"mean": 3.5}}}),
    scenario_case("spec-accept-max-over-steps", "accept_length.max: 4.5 tokens per verify step is more than",
                  **{"serving.speculative": {"algorithm": "eagle", "num_steps": 3,
                                             "accept_length": {"mean": 2.0, "min": 1.5, "max": 4.5}}}),
    scenario_case("spec-draft-tokens-over-tree", "num_draft_tokens (64): a draft of num_steps 1 x eagle_topk 2",
                  **{"serving.speculative": {"algorithm": "eagle", "num_steps": 1, "eagle_topk": 2,
                                             "num_draft_tokens": 64, "accept_length": {"mean": 1.5}}}),
    # a dataset's own flag on another dataset's run landed on the field of the same name: --gsp-output-len 500
    # replaced the random dataset's output_len (5,875 tokens generated instead of 320), --gsp-range-ratio its
    # range_ratio; bench_serving's random dataset reads neither
    Case("flags-gsp-output-on-random",
         ("predict", "--model-path", "qwen3-8b", "--gpu", "h100", "--dataset-name", "random", "--random-output-len",
          "16", "--gsp-output-len", "500"),
         "--gsp-output-len applies to --dataset-name generated-shared-prefix; this run's dataset is random"),
    Case("flags-gsp-range-on-random-flags",
         ("predict", "--model-path", "qwen3-8b", "--gpu", "h100", "--random-input-len", "256", "--gsp-range-ratio",
          "1"),
         "--gsp-range-ratio applies to --dataset-name generated-shared-prefix"),
    Case("flags-gsp-output-on-scenario", ("predict", "{ws}/s.yaml", "--gsp-output-len", "5"),
         "--gsp-output-len applies to --dataset-name generated-shared-prefix; the scenario's dataset is random"),
    # click kept the last of a repeated option: -o json -o text printed text, the first --save-scenario was never
    # written, while predict's bench_serving / launch_server flags refuse a repeat with another value
    Case("predict-output-twice", ("predict", "{ws}/s.yaml", "-o", "json", "--output=text"),
         "--output/-o: given twice with different values"),
    Case("predict-save-scenario-twice",
         ("predict", "{ws}/s.yaml", "--save-scenario", "{ws}/a.yaml", "--save-scenario", "{ws}/b.yaml"),
         "--save-scenario: given twice with different values"),
    Case("predict-breakdown-on-and-off", ("predict", "{ws}/s.yaml", "--breakdown", "--no-breakdown"),
         "--breakdown/--no-breakdown: given twice"),
    # --output-file appended its JSON line to the YAML --save-scenario had just written, which then did not load
    Case("predict-save-scenario-is-output-file",
         ("predict", "{ws}/s.yaml", "--save-scenario", "{ws}/out.yaml", "--output-file", "{ws}/./out.yaml"),
         "is also the --output-file file; give each output its own file"),
    # config.json values read anyway: 8.5 KV heads became 8, 30 query heads over 8 KV heads (or 64 KV heads for 32)
    # were priced as given, and an AWQ checkpoint's 4-bit weights as bf16 (its quantization_config dropped)
    *(
        Case(f"model-config-{case_id}", ("predict", "{ws}/mc.yaml"), expected,
             {"mc.yaml": scenario_text(**{"model.name": "x", "model.config": "config.json"}),
              "config.json": json.dumps({**QWEN3_CONFIG, **change})})
        for case_id, change, expected in (
            ("fractional-kv-heads", {"num_key_value_heads": 8.5}, "num_key_value_heads: got 8.5; a count is a whole"),
            ("kv-heads-not-dividing", {"num_attention_heads": 30}, "num_key_value_heads: 8 does not divide "
                                                                   "num_attention_heads 30"),
            ("more-kv-heads-than-heads", {"num_key_value_heads": 64}, "num_key_value_heads: 64 does not divide"),
            ("awq", {"quantization_config": {"quant_method": "awq", "bits": 4}},
             "quantization_config.quant_method: 'awq' is not modelled"),
        )
    ),
    # config.json values read wrongly without a word: 0 KV heads (or head_dim 0) taken for null, so priced as
    # multi-head attention; "false" read as true; "Qwen3ForCausalLM" read letter by letter; a dense architecture's
    # experts, a top-0 or top-200-of-128 MoE, 0 experts or an expert of size 0 priced as given; a null count, or a
    # quantization_config that is a string, an internal error; a block size "128" "too many values to unpack"
    *(
        Case(f"model-config-{case_id}", ("predict", "{ws}/mc.yaml"), expected,
             {"mc.yaml": scenario_text(**{"model.name": "x", "model.config": "config.json"}),
              "config.json": json.dumps({**QWEN3_CONFIG, **change})})
        for case_id, change, expected in (
            ("kv-heads-0", {"num_key_value_heads": 0}, "config.json: num_key_value_heads: got 0; a model has at"),
            ("head-dim-0", {"head_dim": 0}, "config.json: head_dim: got 0; a model has at least 1"),
            ("hidden-size-null", {"hidden_size": None}, "config.json: hidden_size: got null; a count is a whole"),
            ("quantization-string", {"quantization_config": "fp8"},
             "config.json: quantization_config: got 'fp8'; a JSON object"),
            ("block-size-string", {"quantization_config": {"quant_method": "fp8", "weight_block_size": "128"}},
             "quantization_config.weight_block_size: got '128'; two whole numbers of at least 1"),
            ("architectures-string", {"architectures": "Qwen3ForCausalLM"},
             "config.json: architectures: got 'Qwen3ForCausalLM'; a list of class names"),
            ("tie-embeddings-string", {"tie_word_embeddings": "false"},
             "config.json: tie_word_embeddings: got 'false'; allowed values: true, false"),
            ("dense-with-experts", {"num_experts": 128, "num_experts_per_tok": 8},
             "config.json: num_experts: 128 routed experts, but Qwen3ForCausalLM is a dense architecture"),
            ("moe-top-k-0", {**QWEN3_MOE_CHANGE, "num_experts_per_tok": 0},
             "config.json: num_experts_per_tok: got 0; each token is routed to at least 1 expert"),
            ("moe-top-k-over-experts", {**QWEN3_MOE_CHANGE, "num_experts_per_tok": 200},
             "config.json: num_experts_per_tok: 200 is more than the 128 experts (num_experts)"),
            ("moe-experts-0", {**QWEN3_MOE_CHANGE, "num_experts": 0},
             "config.json: num_experts: got 0; a MoE model has at least 1"),
            ("moe-expert-size-0", {**QWEN3_MOE_CHANGE, "moe_intermediate_size": 0},
             "config.json: moe_intermediate_size: got 0; an expert has at least 1"),
            ("shared-experts-negative", {"n_shared_experts": -1}, "config.json: n_shared_experts: got -1; a count"),
            # a quantization_config naming no quant_method was priced as bf16 weights
            ("quantization-without-method", {"quantization_config": {"bits": 4, "group_size": 128}},
             "config.json: quantization_config: has no quant_method"),
            # predicted as served: SGLang's default 2,048 running requests need a 763 GiB request-to-token table
            ("context-past-request-table", {"max_position_embeddings": 10**8},
             "model: x's context length of 100,000,000 tokens needs a 763 GiB request-to-token table for SGLang's "
             "default 2048 running requests per rank"),
            # named the model's label ('x: mlp_only_layers ...'), not the file and its value
            ("moe-mlp-only-layers", {**QWEN3_MOE_CHANGE, "mlp_only_layers": [0]},
             "config.json: mlp_only_layers: got [0]; mixed dense/MoE Qwen3 is not modelled"),
            ("moe-sparse-step-2", {**QWEN3_MOE_CHANGE, "decoder_sparse_step": 2},
             "config.json: decoder_sparse_step: got 2; only 1"),
            # read by nothing: SGLang multiplies max_position_embeddings by the factor (test_models_zoo)
            ("rope-factor-0", {"rope_scaling": {"type": "yarn", "factor": 0}},
             "config.json: rope_scaling.factor: got 0; a positive number"),
            ("rope-factor-text", {"rope_scaling": {"type": "linear", "factor": "4"}},
             "config.json: rope_scaling.factor: got '4'; a positive number"),
            ("rope-scaling-string", {"rope_scaling": "yarn"}, "config.json: rope_scaling: got 'yarn'; a JSON object"),
        )
    ),
    # DeepSeek config.json sizes priced as given: a latent rank of 0, a top-0 sparse-attention indexer, every layer
    # dense (first_k_dense_replace 61 of 61 layers), a top-300 of 256 experts; q_lora_rank 0 read as null
    *(
        Case(f"model-config-{case_id}", ("predict", "{ws}/mc.yaml"), expected,
             {"mc.yaml": scenario_text(**{"model.name": "x", "model.config": "config.json"}),
              "config.json": json.dumps({**json.loads((REPO / f"simperf/models/zoo/{entry}.json").read_text()),
                                         **change})})
        for case_id, entry, change, expected in (
            ("mla-kv-lora-rank-0", "deepseek-v3", {"kv_lora_rank": 0}, "config.json: kv_lora_rank: got 0; MLA has"),
            ("mla-q-lora-rank-0", "deepseek-v3", {"q_lora_rank": 0},
             "config.json: q_lora_rank: got 0; null (no query compression) or at least 1"),
            ("mla-all-layers-dense", "deepseek-v3", {"first_k_dense_replace": 61},
             "config.json: first_k_dense_replace: 61 leaves no MoE layer of the 61 (num_hidden_layers); give at most 60"),
            ("mla-top-k-over-experts", "deepseek-v3", {"num_experts_per_tok": 300},
             "config.json: num_experts_per_tok: 300 is more than the 256 experts (n_routed_experts)"),
            ("dsa-index-topk-0", "deepseek-v3.2", {"index_topk": 0},
             "config.json: index_topk: got 0; the sparse-attention indexer has at least 1"),
        )
    ),
    # groundtruth trace: "x.json: Expecting value: line 1 column 1 (char 0)" said not what failed, a missing file
    # "[Errno 2] No such file or directory: 'x.json'" named the path twice, a Latin-1 file "'utf-8' codec can't..."
    Case("groundtruth-trace-not-json", ("groundtruth", "trace", "{ws}/tr.json"),
         "tr.json: not valid JSON: Expecting value", {"tr.json": "garbage"}),
    Case("groundtruth-trace-missing", ("groundtruth", "trace", "{ws}/nope.json"),
         "nope.json: No such file or directory"),
    Case("groundtruth-trace-not-utf8", ("groundtruth", "trace", "{ws}/tr.json"), "tr.json: not UTF-8 text (byte 0xe9)",
         {"tr.json": b'{"traceEvents": [{"name": "caf\xe9"}]}'}),
    # with model.config, model.name is a label: a zoo name over another model's config labelled Qwen3-8B's results
    # qwen3-32b (and a sweep axis over model.name repeated one model under several names)
    Case("model-config-under-zoo-name", ("predict", "{ws}/mc.yaml"),
         "model.name: 'qwen3-32b' is the zoo's model, but model.config",
         {"mc.yaml": scenario_text(**{"model.name": "qwen3-32b", "model.config": "config.json"}),
          "config.json": (REPO / "simperf/models/zoo/qwen3-8b.json").read_text()}),
    # groundtruth modeldir of a config.json: a JSON list was an internal error after creating the directory; a
    # missing or textual vocab_size "error: vocab_size" after config.json was written; vocab_size 0 wrote a 0-word
    # tokenizer, num_key_value_heads 0 a directory SGLang cannot serve; bad JSON named no file
    *(
        Case(f"groundtruth-modeldir-config-{case_id}", ("groundtruth", "modeldir", "{ws}/c.json", "{ws}/m"),
             expected, {"c.json": text})
        for case_id, text, expected in (
            ("list", "[1, 2]", "c.json: a config.json holds one JSON object, got list"),
            ("not-json", "{bad", "c.json: not valid JSON"),
            ("no-vocab", '{"architectures": ["MixtralForCausalLM"]}', "c.json: vocab_size: got nothing; the"),
            ("vocab-text", json.dumps({**QWEN3_CONFIG, "vocab_size": "lots"}), "c.json: vocab_size: got 'lots'"),
            ("vocab-0", json.dumps({**QWEN3_CONFIG, "vocab_size": 0}), "c.json: vocab_size: got 0; the tokenizer"),
            ("kv-heads-0", json.dumps({**QWEN3_CONFIG, "num_key_value_heads": 0}),
             "c.json: num_key_value_heads: got 0; a model has at least 1"),
        )
    ),
    # a page with the generated block (docs/scenario.md) was replaced whole by the tables, its prose lost
    Case("schema-markdown-out-onto-page", ("schema", "--markdown", "--out", "{ws}/page.md"),
         "/page.md: holds the generated block of a hand-written page, which --out replaces whole; give "
         "--update", {"page.md": "# Scenarios\n\nprose\n\n<!-- simperf schema --markdown: begin (generated; do not "
                                 "edit by hand) -->\n\nold\n<!-- simperf schema --markdown: end -->\n"}),
    # a request id the run does not have was simulated in full, then "no record: rejected, or not part of the run"
    Case("predict-trace-request-outside", ("predict", "{ws}/s.yaml", "--trace-request", "10"),
         "--trace-request 10: this run's requests are numbered 0 to 9"),
    Case("predict-trace-request-negative", ("predict", "{ws}/s.yaml", "--trace-request", "-1"),
         "--trace-request -1: this run's requests are numbered 0 to 9"),
    # a bench_serving file whose errors list holds a number was an internal error ('int' has no attribute 'strip')
    Case("inspect-bench-serving-error-not-text", ("trace", "inspect", "{ws}/bs.jsonl"),
         "request 0: errors entries are messages (text), got 1",
         {"bs.jsonl": json.dumps({"input_lens": [5, 6], "output_lens": [2, 3], "errors": [1, ""]}) + "\n"}),
    # the simulator kept one slot per token of the stream interval: "out of memory ... lower workload.num_prompts"
    scenario_case("stream-interval-past-context",
                  "serving.stream_interval: 1,000,000,000,000 tokens between streamed chunks is more than qwen3-8b's",
                  **{"serving.stream_interval": 10**12}),
    # listing the prefill graph's captured sizes up to it hung (test_prefill_graph_rule counts them instead)
    scenario_case("chunked-prefill-huge", "serving.chunked_prefill_size: 1000000000000 leaves no memory",
                  **{"serving.chunked_prefill_size": 10**12}),
    # a fleet kind written as a number (replicas: 2, not a list of groups) was an internal error ('int' object is
    # not iterable) before the schema could name it
    scenario_case("fleet-replicas-a-number", "fleet.replicas: Input should be a valid list (got 2)",
                  **{"fleet": {"replicas": 2}}),
    # --dp-size 0 was read as 1 (and -1 as no DP attention at all)
    Case("flags-dp-size-0", ("predict", "--model-path", "qwen3-8b", "--gpu", "h100", "--dataset-name", "random",
                             "--enable-dp-attention", "--dp-size", "0"),
         "--dp-size: got 0; a data-parallel size is at least 1"),
    Case("flags-dp-size-negative", ("predict", "{ws}/s.yaml", "--dp-size", "-1"), "--dp-size: got -1"),
]  # fmt: skip

# files read as something else, and options accepted without effect (found feeding each command careless input)
LATIN1_SWEEP = b"name: caf\xe9\nbase: {}\naxes: {serving.page_size: [1]}\n"
CARELESS_CASES = [
    # Python's "'utf-8' codec can't decode byte 0xe9 ...", naming no file (plan and report read it too)
    Case("sweep-not-utf8", ("sweep", "{ws}/l.yaml"), "l.yaml: cannot read the sweep", {"l.yaml": LATIN1_SWEEP}),
    Case("plan-sweep-not-utf8", ("plan", "{ws}/l.yaml", "--rate", "5"), "l.yaml: cannot read the sweep",
         {"l.yaml": LATIN1_SWEEP}),
    # "error: empty: Is a directory", naming neither the sweep's base nor the file that gave it
    Case("sweep-base-directory", ("sweep", "{ws}/b.yaml"), "base: ", {"b.yaml": yaml.safe_dump(
        {"name": "x", "base": "empty", "axes": {"serving.page_size": [1]}})}),
    Case("sweep-directory", ("sweep", "{ws}/empty"), "empty: cannot read the sweep: Is a directory"),
    # the default table was the hidden ./.sweep.parquet, its points named -0, -1, ...
    Case("sweep-name-empty", ("sweep", "{ws}/a.yaml"), "name: the default table is ./<name>.sweep"
         ".parquet: give a non-empty name", {"a.yaml": yaml.safe_dump({**sweep_dict({"serving.page_size": [1]}),
                                                                      "name": ""})}),
    # a one-shot option given its default value (--isl 1024, --disaggregation) passed the table plan's check
    Case("plan-table-oneshot-option-at-default", ("plan", "{table}", "--rate", "5", "--isl", "1024"),
         "--isl: one-shot options"),
    Case("plan-table-disaggregation", ("plan", "{table}", "--rate", "5", "--disaggregation"),
         "--[no-]disaggregation: one-shot options"),
    # --executor on a finished table ran nothing, while --workers was refused
    Case("plan-table-executor", ("plan", "{table}", "--rate", "5", "--executor", "serial"),
         "--executor: ", ),
    Case("report-table-executor", ("report", "{table}", "-o", "{ws}/r.html", "--executor", "serial"),
         "is a finished table; --executor applies when given a sweep file"),
    # a key spelt as its command-line flag was dropped from the message: 'serving: unknown key' named no key
    scenario_case("hyphenated-key", "serving.page-size: unknown key", **{"serving.page-size": 16}),
    scenario_case("hyphenated-top-level-key", "max-concurrency: unknown key", **{"max-concurrency": 4}),
    # pydantic's "Input is not a valid path for <class 'pathlib.Path'>" was printed as it stands
    scenario_case("calibration-dir-a-number", "calibration_dir: Input should be a file path (got 5)",
                  calibration_dir=5),
    Case("sweep-base-a-list", ("sweep", "{ws}/b.yaml"), "base: got [1]; expected a file path or a valid dictionary",
         {"b.yaml": yaml.safe_dump({"name": "x", "base": [1], "axes": {"serving.page_size": [1]}})}),
    # click kept the last of a repeated single-valued option on every command but predict: -o tsv -o json printed
    # JSON, --refused --no-refused hid the refused rows, --bins 4 --bins 8 drew 8 bins
    Case("backends-output-twice", ("backends", "-o", "tsv", "-o", "json"), "--output/-o: given twice"),
    Case("backends-refused-on-and-off", ("backends", "--refused", "--no-refused"), "--refused/--no-refused: given"),
    Case("inspect-bins-twice", ("trace", "inspect", "{ws}/t.jsonl", "--bins", "4", "--bins", "8"),
         "--bins: given twice with different values"),
    Case("sweep-executor-twice", (*SWEEP, "--executor", "serial", "--executor", "process"), "--executor: given"),
    Case("oneshot-model-twice", (*ONESHOT, "--model", "qwen3-32b"), "--model: given twice"),
    Case("fleet-compare-output-twice", ("fleet", "compare", "{ws}/f.yaml", "-o", "json", "-o", "text"),
         "--output/-o: given twice", {"f.yaml": FLEET}),
    Case("coverage-output-twice", ("perfdb", "coverage", "{repo}/calibration/h100", "-o", "json", "-o", "tsv"),
         "--output/-o: given twice"),
    Case("import-system-twice", ("calibrate", "import", "aiconfigurator", "--system", "a", "--system", "b", "--out",
                                 "{ws}/imp"), "--system: given twice"),
    # "could not convert string to float: 'a'", naming no event or field
    Case("groundtruth-trace-text-timestamp", ("groundtruth", "trace", "{ws}/tr.json"),
         "tr.json: event 0 ('k'): ts 'a'; a timestamp is a finite number",
         {"tr.json": '{"traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "ts": "a", "dur": 5}]}'}),
    # argparse kept the last: the dry run listed h200's points, the --out of the second --out
    Case("calibrate-gpu-twice", ("calibrate", "--dry-run", "--gpu", "h100", "--gpu", "h200", "--out", "{ws}/cal"),
         "--gpu: given twice with different values"),
    # index.yaml was read by PyYAML's own loader: a scenario listed twice kept its second list of rows, and a
    # Latin-1 file failed as "'utf-8' codec can't decode ...", naming no file
    Case("accuracy-index-scenario-twice", ("accuracy", "{ws}/sc", "--truth", "{ws}/truth.csv"),
         "key 'a.yaml' is given twice", {"sc/index.yaml": "scenarios:\n  a.yaml: [A1]\n  a.yaml: [A2]\n",
                                         "sc/a.yaml": scenario_text()}),
    Case("accuracy-index-not-utf8", ("accuracy", "{ws}/sc", "--truth", "{ws}/truth.csv"),
         "index.yaml: cannot read the index", {"sc/index.yaml": b"flagged:\n  A1: caf\xe9\n"}),
    # read by PyYAML's own loader: a family given twice kept its second axes without a word, and broken YAML was
    # "not valid YAML: while parsing a flow sequence", naming no file
    Case("calibrate-grid-family-twice",
         ("calibrate", "--dry-run", "--gpu", "h100", "--ops", "gemm", "--grid", "{ws}/g.yaml", "--out", "{ws}/cal"),
         "g.yaml: not valid YAML: key 'gemm' is given twice", {"g.yaml": "gemm: {m: [1, 8]}\ngemm: {m: [16]}\n"}),
    Case("calibrate-grid-bad-yaml",
         ("calibrate", "--dry-run", "--gpu", "h100", "--ops", "gemm", "--grid", "{ws}/g.yaml", "--out", "{ws}/cal"),
         "g.yaml: not valid YAML: while parsing a flow sequence", {"g.yaml": "gemm: {m: [1, 8\n"}),
    # "[Errno 21] Is a directory: '.../empty'" named the path twice, in Python's words
    Case("schema-update-directory", ("schema", "--markdown", "--update", "{ws}/empty"), "/empty: Is a directory"),
    # every prompt was shortened to the context, while the plan said "traffic: random 1000000000 in"
    Case("oneshot-isl-past-context", (*ONESHOT, "--isl", "1000000000"),
         "--isl: 1,000,000,000 tokens do not fit qwen3-8b's context length (40,960 tokens)"),
    # Path("") is the scenario's own directory: an empty path read it, and the error named the directory, not the
    # field left empty
    scenario_case("trace-path-empty", "workload.dataset.path: empty; give a path (got '')",
                  **{"workload.dataset": {"kind": "trace", "path": "", "use_timestamps": False}}),
    scenario_case("calibration-dir-empty", "calibration_dir: empty; give a path (got '')", calibration_dir=""),
    scenario_case("model-config-blank", "model.config: empty; give a path (got ' ')", **{"model.config": " "}),
    # a prompt that fits with an output that does not: every output was cut to the context, while the plan said
    # "<osl> out"
    Case("oneshot-isl-osl-past-context", (*ONESHOT, "--isl", "40000", "--osl", "2000"),
         "--osl: 40,000 prompt + 2,000 output tokens do not fit qwen3-8b's context length (40,960 tokens); "
         "give at most 960"),
    # a fleet's run was held to no memory limit: a billion requests ran until the machine ran out of memory, and
    # predict's --max-memory-gb was accepted and read by nothing
    scenario_case("fleet-prompts-billion", "workload.num_prompts: 1,000,000,000 requests",
                  **{"workload.num_prompts": 10**9}, fleet={"replicas": [{"count": 2}]}),
    Case("fleet-compare-prompts-billion", ("fleet", "compare", "{ws}/f.yaml"), "1,000,000,000 requests",
         {"f.yaml": scenario_text(**{"workload.num_prompts": 10**9}, fleet={"replicas": [{"count": 2}]})}),
    Case("predict-fleet-memory-too-small", ("predict", "{ws}/f.yaml", "--max-memory-gb", "0.01"), "limit 0.0 GB",
         {"f.yaml": FLEET}),
    Case("fleet-plan-memory-too-small", ("fleet", "plan", "{ws}/f.yaml", "--rate", "5", "--sla", "ttft.p90 <= 2s",
                                         "--max-memory-gb", "0.01"), "limit 0.0 GB", {"f.yaml": FLEET}),
    # the size error of fleet plan named no file (fleet compare's did)
    Case("fleet-plan-prompts-billion", ("fleet", "plan", "{ws}/f.yaml", "--rate", "5", "--sla", "ttft.p90 <= 2s"),
         "f.yaml: workload.num_prompts: 1,000,000,000 requests",
         {"f.yaml": scenario_text(**{"workload.num_prompts": 10**9}, fleet={"replicas": [{"count": 2}]})}),
    # a directory diffed with itself printed 1.00 on every key, tables that looked identical to another GPU's
    Case("diff-with-itself", ("perfdb", "diff", "{repo}/calibration/h100", "{repo}/calibration/../calibration/h100"),
         "is also A; give the directory to compare with it"),
    # a file of several runs said "choose one with --run N" whatever the command: predict has --like-run, and
    # compare's --run picks the MEASURED file's run (with it given, the PREDICTED file was still refused the same)
    Case("predict-like-runs-names-like-run", ("predict", "{ws}/s.yaml", "--like", "{ws}/two.jsonl"),
         "two.jsonl: 2 runs in the file, choose one with --like-run N",
         {"two.jsonl": '{"completed": 10, "duration": 2.0}\n{"completed": 20, "duration": 3.0}\n'}),
    Case("compare-predicted-runs", ("compare", "{ws}/two.jsonl", "{ws}/result.json", "--run", "0"),
         "two.jsonl: 2 runs in the file, give a file of one run",
         {"two.jsonl": '{"completed": 10, "duration": 2.0}\n{"completed": 20, "duration": 3.0}\n'}),
    # an existing --prompts file is kept as the prompt source: the scenario, or the directory's own config.json
    # (written first, then kept), became bench_serving's prompts without a word
    Case("groundtruth-modeldir-prompts-not-sharegpt", ("groundtruth", "modeldir", "qwen3-8b", "{ws}/model",
                                                       "--prompts", "{ws}/s.yaml"),
         "s.yaml: exists and is not a ShareGPT prompt file"),
    Case("groundtruth-modeldir-prompts-its-config", ("groundtruth", "modeldir", "qwen3-8b", "{ws}/model",
                                                     "--prompts", "{ws}/model/config.json"),
         "is the model directory's own config.json"),
    # ran for minutes and took gigabytes to print a rate line of a hundred million numbers
    Case("inspect-bins-huge", ("trace", "inspect", "{ws}/t.jsonl", "--bins", "100000000"),
         "'--bins': Input should be less than or equal to 100000"),
]  # fmt: skip

# a ground-truth plan of one server and one run
GT_PLAN = (
    "servers:\n  - name: a\n    model: qwen3-8b\n    runs:\n      - {name: r1, client: {num-prompts: 5}}\n"
)

# the third pass: values of the wrong type read as the right one, and values accepted and then ignored
THIRD_PASS_CASES = [
    # pydantic's lax mode read a quoted number or true/false as the value: tp: "2" served on two GPUs, "false"
    # turned a switch off, where YAML holds text
    scenario_case("tp-quoted", "serving.tp: got '1', text in quotes; expected a valid integer, written without "
                  "quotes", **{"serving.tp": "1"}),
    scenario_case("rate-quoted", "workload.request_rate: got '5', text in quotes; expected a valid number or 'inf'",
                  **{"workload.request_rate": "5"}),
    scenario_case("switch-quoted", "serving.disable_cuda_graph: got 'true', text in quotes; expected a valid "
                  "boolean", **{"serving.disable_cuda_graph": "true"}),
    Case("sweep-axis-value-quoted", ("sweep", "{ws}/a.yaml"), "axes: serving.page_size: got '16', text in quotes",
         {"a.yaml": yaml.safe_dump(sweep_dict({"serving.page_size": ["16", 32]}))}),
    Case("predict-set-quoted-number", ("predict", "{ws}/s.yaml", "--set", 'serving.tp="1"'),
         "serving.tp: got '1', text in quotes; expected a valid integer, written without quotes [from --set"),
    # the one-shot plan tries MTP only on a model with MTP layers: on others the accept length was read by nothing
    Case("oneshot-mtp-accept-length-without-mtp", (*ONESHOT, "--mtp-accept-length", "3"),
         "--mtp-accept-length: prices the MTP candidates, and qwen3-8b has no MTP layers"),
    # nan passed the deadline's `<= 0` check (and wrote NaN into the runner's jobs.json); a port outside TCP's range
    # was passed to the server, and the runs failed after it started
    Case("groundtruth-deadline-nan", ("groundtruth", "run", "{repo}/groundtruth/plans/h100.yaml", "--deadline", "nan"),
         "--deadline: got nan; give a positive number of seconds"),
    *(Case(f"groundtruth-port-{port}", ("groundtruth", "run", "{repo}/groundtruth/plans/h100.yaml", "--port", port),
           f"--port: got {port}; give a TCP port, 1 to 65535") for port in ("0", "70000")),
    # a ground-truth plan was read by PyYAML's own loader: a flag given twice kept its last value, a Latin-1 file failed
    # as "'utf-8' codec can't decode ...", naming no file; and a server's start-up timeout took .inf (waited for ever)
    *(Case(f"groundtruth-plan-{name}", ("groundtruth", "run", "{ws}/p.yaml"), expected, {"p.yaml": text})
      for name, text, expected in (
          ("flag-twice", GT_PLAN.replace("{num-prompts: 5}", "{num-prompts: 5, num-prompts: 50}"),
           "p.yaml: not valid YAML (key 'num-prompts' is given twice in one mapping"),
          ("not-utf8", GT_PLAN.encode().replace(b"qwen3-8b", b"qwen3-8b\n    env: {X: caf\xe9}"),
           "p.yaml: cannot read ('utf-8' codec can't decode byte 0xe9"),
          ("timeout-inf", GT_PLAN.replace("model: qwen3-8b", "model: qwen3-8b\n    startup_timeout_s: .inf"),
           "p.yaml: servers.0.startup_timeout_s: Input should be a finite number"),
      )),
    # a sample of more configurations than the axes make ran the whole grid, fewer points than asked, without a word
    *(Case(f"sweep-sample-{method}-past-the-grid", ("sweep", "{ws}/a.yaml"),
           "sample.n: 10 configurations asked for, and the axes make 2 (load axes aside); give at most 2",
           {"a.yaml": yaml.safe_dump(sweep_dict({"serving.page_size": [1, 16]}, sample={"method": method, "n": 10}))})
      for method in ("random", "lhs")),
    # an empty selector (an unset shell variable) selected everything, as if left out; --models picks MoE shapes, and
    # with no MoE op selected it was read by nothing
    *(Case(f"calibrate-{flag[2:]}-empty", ("calibrate", "--dry-run", "--gpu", "h100", flag, "", "--out", "{ws}/cal"),
           f"{flag}: got '', which names nothing; name some, or leave {flag} out")
      for flag in ("--ops", "--models", "--backends")),
    Case("calibrate-models-without-moe", ("calibrate", "--dry-run", "--gpu", "h100", "--ops", "gemm", "--models",
                                          "deepseek-v3", "--out", "{ws}/cal"),
         "--models: picks the grid's MoE shapes, and --ops selects no MoE op; drop --models or add --ops moe"),
    # a fleet's executor and workers spread the servers of a state-independent policy: under a policy that reads the
    # servers' load (cache_aware, the default), or in a PD fleet, the servers ran coupled in this process regardless
    scenario_case("fleet-executor-with-load-policy",
                  "fleet: executor: spreads the servers of a state-independent policy (round_robin, random, "
                  "consistent_hashing); the policy cache_aware reads the servers' load",
                  fleet={"replicas": [{"count": 2}], "executor": "process"}),
    scenario_case("pd-fleet-workers", "fleet: workers: a PD fleet's servers run coupled in this process",
                  fleet={**PD_FLEET, "workers": 2}),
    Case("fleet-compare-executor-of-load-policies", ("fleet", "compare", "{ws}/f.yaml", "--policy", "cache_aware",
                                                     "--policy", "power_of_two"),
         "the policies cache_aware, power_of_two read the servers' load",
         {"f.yaml": scenario_text(fleet={"replicas": [{"count": 2}], "executor": "process"})}),
    # --roofline-only passed over the scenario's own calibration_dir without a word (--calibration beside it errs)
    Case("predict-roofline-and-calibration-dir", ("predict", "{ws}/cal.yaml", "--roofline-only"),
         "--roofline-only: reads no tables, and the scenario's calibration_dir names",
         {"cal.yaml": scenario_text(calibration_dir=f"{REPO}/calibration/h100")}),
    # --report-only summarises the journal as planned, and --plan-only runs nothing: the plan's options and the run's
    # layer count were accepted there and read by nothing
    Case("validate-report-samples", ("validate", "{ws}/s.yaml", "--report-only", "--samples", "8", "--out",
                                     "{ws}/empty"), "--samples: shapes the plan, and --report-only summarises"),
    Case("validate-report-seed-and-prompts", ("validate", "{ws}/s.yaml", "--report-only", "--seed", "0",
                                              "--num-prompts", "5", "--out", "{ws}/empty"),
         "--seed, --num-prompts: shapes the plan"),
    Case("validate-plan-replicas", ("validate", "{ws}/s.yaml", "--plan-only", "--replicas", "2", "--out", "{ws}/val"),
         "--replicas: applies to a run on the GPU, which --plan-only skips"),
]  # fmt: skip


def sweep_result_table(
    drop: tuple[str, ...] = (), rows: int = 1, meta: dict | None = None, **changes
) -> bytes:
    """A sweep result table of `rows` ok points holding every column plan and report read, with changes; meta: the
    table's sweep description (none by default)."""
    from simperf.sweep.table import write_table

    latencies = [f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2e_latency") for s in ("mean", "median", "p90", "p95",
                                                                                        "p99")]  # fmt: skip
    row = {"point_index": 0, "point_id": "p0", "config_id": "c0", "config_label": "page_size=1", "status": "ok",
           "reason": None, "scenario_json": "{}", "request_rate": 1.0, "failed_requests": 0.0, "num_gpus": 1,
           "output_throughput": 100.0, **dict.fromkeys(latencies, 10.0), **changes}  # fmt: skip
    frame = pl.DataFrame([row] * rows).drop(list(drop)).head(rows)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "t.sweep.parquet"
        write_table(frame, path, meta or {})
        return path.read_bytes()


# the fourth pass: fleets, speculative decoding, sweep and plan files, result files, and values read as another
FOURTH_PASS_CASES = [
    # nan was refused for the wrong reason ("should be greater than or equal to 0")
    Case("predict-memory-nan", ("predict", "{ws}/s.yaml", "--max-memory-gb", "nan"),
         "'--max-memory-gb': got nan; give a number of GB >= 0"),
    # the two files the other way round: every delta printed with its sign flipped, as the model's error
    Case("compare-prediction-as-measured", ("compare", "{ws}/result.json", "{ws}/p.json"),
         "p.json: is a simperf prediction (it has predict's simperf block) and ",
         {"p.json": json.dumps({"completed": 10, "duration": 2.0, "mean_ttft_ms": 25.0, "simperf": {"notes": {}}})}),
    # an op given twice was compared once, as if given once (a typo for another op went unnoticed), as --pair and
    # --policy given twice are refused
    Case("diff-op-twice", ("perfdb", "diff", "{repo}/calibration/h100", "{repo}/calibration/h200", "--op", "gemm",
                           "--op", "gemm"), "--op: gemm: given twice; give each op once"),
    # validate -o json with --plan-only printed no JSON at all (the plan's messages went to stderr), and exit 0
    Case("validate-plan-json", ("validate", "{ws}/s.yaml", "--plan-only", "-o", "json", "--out", "{ws}/val"),
         "--output json: prints the measured summary, and --plan-only measures nothing"),
    # a scale-up whose servers finish booting after the last request routed nothing to them: the step changed
    # nothing, as a step after the last request (refused already) did
    scenario_case("fleet-autoscale-boots-past-the-run",
                  "fleet.autoscale.startup_s: the servers schedule[1] adds join the router at 100.5 s (at_s 0.5 + "
                  "startup_s 100), after the last request arrives",
                  fleet={"replicas": [{"count": 2}], "autoscale": {"schedule": [{"at_s": 0, "replicas": 1},
                                                                               {"at_s": 0.5, "replicas": 2}],
                                                                  "startup_s": 100}}),
    # a fleet group's own GPU against the scenario's tables named the scenario's field ("hardware.gpu is h200"),
    # which says h100
    scenario_case("fleet-group-gpu-against-calibration-dir",
                  "tables measured on h100, but fleet.replicas[1].hardware.gpu is h200",
                  calibration_dir=f"{REPO}/calibration/h100",
                  fleet={"replicas": [{"count": 1}, {"count": 1, "hardware": {"gpu": "h200", "count": 1}}]}),
    # a multi-turn block longer than all a turn re-sends never matched: a 0% prefix hit, where SGLang reuses it
    scenario_case("multi-turn-block-past-the-history",
                  "workload.dataset: block_tokens (1000) is longer than the most a turn re-sends (30 tokens",
                  **{"workload.dataset": {"kind": "multi_turn", "num_conversations": 2, "turns": 3, "input_len": 10,
                                          "output_len": 5, "block_tokens": 1000}, "workload.num_prompts": DELETE}),
    # an axis over where a fleet's servers run, or how its timelines are binned, repeated one simulation per point
    *(Case(f"sweep-axis-over-{path.replace('.', '-')}", ("sweep", "{ws}/a.yaml"),
           f"axes: {path}: sets where a fleet's servers run or how its timelines are binned, which changes nothing "
           "simulated", {"a.yaml": yaml.safe_dump(sweep_dict({path: values}))})
      for path, values in (("fleet.timeline_bins", [10, 20]), ("fleet.executor", ["serial", "auto"]))),
    # a sweep table cut down by hand: without an SLA's column every configuration "cannot meet the SLA", without
    # status each printed "None: None", without scenario_json report failed as "error: scenario_json", a table of no
    # rows planned "no swept configuration meets the SLA", and a negative latency met every bound
    *(Case(f"{command}-sweep-table-{name}", (command, "{ws}/x.sweep.parquet", "--rate", "1", "--sla", "ttft.p90<=2s",
                                             *(("--out", "{ws}/r.html") if command == "report" else ())),
           expected, {"x.sweep.parquet": table})
      for command in ("plan", "report")
      for name, table, expected in (
          ("without-sla-column", sweep_result_table(drop=("p90_ttft_ms",)),
           "x.sweep.parquet: the sweep table has no column p90_ttft_ms, which plan and report read"),
          ("without-status", sweep_result_table(drop=("status",)), "the sweep table has no column status"),
          ("without-scenarios", sweep_result_table(drop=("scenario_json",)),
           "the sweep table has no column scenario_json"),
          ("no-rows", sweep_result_table(rows=0), "x.sweep.parquet: the sweep table holds no rows"),
          ("negative-latency", sweep_result_table(p90_ttft_ms=-5.0),
           "x.sweep.parquet: p90_ttft_ms: got -5 at point p0; a latency is a number of ms >= 0"),
          ("unknown-status", sweep_result_table(status="done"),
           "x.sweep.parquet: status: got done; expected one of ok, invalid"),
      )),
]  # fmt: skip


def parquet_bytes(**columns) -> bytes:
    """A Parquet file of these columns."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    return buffer.getvalue()


# 63 ids of 16-token blocks (vLLM's) for a 1,000-token prompt, read as Mooncake's 512-token blocks
SMALL_BLOCK_IDS = {"input_len": 1000, "output_len": 200, "hash_ids": list(range(63))}
HUGE = {"overheads.ingress_us": 1e30}  # a run of 1e24 s

# the sixth sweep: flags against --set, traces' block ids, runs past what the metrics count, files appended to or
# replaced
SIXTH_SWEEP_CASES = [
    # a flag and --set on one field: --set was applied last and won, whatever the order, without a word
    Case("predict-gpu-flag-and-set", ("predict", "{ws}/s.yaml", "--gpu", "h100", "--set", "hardware.gpu=h200"),
         "--set hardware.gpu: --gpu sets hardware.gpu too; give it once, as the flag or with --set"),
    Case("predict-page-size-flag-and-set", ("predict", "{ws}/s.yaml", "--set", "serving.page_size=16", "--page-size",
                                            "1"), "--set serving.page_size: --page-size sets serving.page_size too"),
    Case("predict-set-replaces-a-flags-field", ("predict", "{ws}/s.yaml", "--random-input-len", "100", "--set",
                                                "workload.dataset={{kind: random, input_len: 300, output_len: 5}}"),
         "--set workload.dataset: --random-input-len sets workload.dataset.input_len too"),
    # --set a.b, then --set a: the whole a replaced the a.b given before it
    Case("predict-set-parent-after-child", ("predict", "{ws}/s.yaml", "--set", "workload.dataset.input_len=100",
                                            "--set", "workload.dataset={{kind: random, input_len: 300, output_len: 5}}"),
         "--set workload.dataset: replaces the whole of workload.dataset, and with it the earlier --set "
         "workload.dataset.input_len; give --set workload.dataset first"),
    Case("fleet-compare-set-parent-after-child", ("fleet", "compare", "{ws}/f.yaml", "--set",
                                                  "fleet.router.policy=round_robin", "--set",
                                                  "fleet.router={{policy: cache_aware}}"),
         "--set fleet.router: replaces the whole of fleet.router, and with it the earlier --set fleet.router.policy",
         {"f.yaml": scenario_text(fleet={"replicas": [{"count": 2}]})}),
    # ids of smaller blocks read as 512-token ones: a shared prefix many times the prompt, a cache hit on nearly
    # every token
    Case("trace-inspect-ids-of-small-blocks", ("trace", "inspect", "{ws}/h.jsonl"),
         "h.jsonl:1: hash_ids: 63 block ids for 1200 tokens (prompt and output), at most 3 of 512 tokens; ids of "
         "smaller blocks need hash_block_tokens",
         {"h.jsonl": "".join(json.dumps({"arrival_s": i, **SMALL_BLOCK_IDS}) + "\n" for i in range(2))}),
    Case("trace-convert-mooncake-ids-of-small-blocks", ("trace", "convert", "{ws}/m.jsonl", "{ws}/out.jsonl"),
         "m.jsonl:1: hash_ids: 63 block ids for 1200 tokens",
         {"m.jsonl": json.dumps({"timestamp": 0, "input_length": 1000, "output_length": 200,
                                 "hash_ids": list(range(63))}) + "\n"}),
    Case("predict-parquet-trace-ids-of-small-blocks", ("predict", "{ws}/bad.yaml"),
         "h.parquet: row 1: hash_ids: 63 block ids for 1200 tokens",
         {"bad.yaml": scenario_text(**{"workload.dataset": {"kind": "trace", "path": "h.parquet"}}),
          "h.parquet": parquet_bytes(arrival_s=[0.0, 1.0], input_len=[1000, 1000], output_len=[200, 200],
                                     hash_ids=[[0, 1], list(range(63))])}),
    # a cache smaller than one block kept the block it had just inserted: a 1-token cache hit a third of requests
    Case("trace-inspect-cache-below-a-block", ("trace", "inspect", "{ws}/h.jsonl", "--cache-tokens", "100"),
         "--cache-tokens: got 100, less than one of ",
         {"h.jsonl": "".join(json.dumps({"arrival_s": i, "input_len": 1000, "output_len": 10, "hash_ids": [1, 2]})
                             + "\n" for i in range(2))}),
    # a run past 9.2e18 s failed as "Python int too large to convert to C long", naming nothing
    *(scenario_case(f"run-past-the-metrics-{name}", "the simulated run lasts ", **changes)
      for name, changes in (
          ("huge-overhead", HUGE),
          ("tiny-rate", {"workload.request_rate": 1e-300}),
          ("trace-time-scale", {"workload.dataset": {"kind": "trace", "path": "t.jsonl", "use_timestamps": True,
                                                     "time_scale": 1e300}}),
          ("pd-link-latency", {"serving": DELETE, "hardware.count": 2,
                               "disaggregation": {"prefill": {"tp": 1}, "decode": {"tp": 1},
                                                  "kv_link_latency_us": 1e300}}),
      )),
    Case("fleet-compare-run-past-the-metrics", ("fleet", "compare", "{ws}/f.yaml"), "the simulated run lasts 1e+24 s",
         {"f.yaml": scenario_text(**HUGE, fleet={"replicas": [{"count": 2}]})}),
    # 1e400 read as inf: a bound every configuration met
    Case("plan-sla-overflowing", ("plan", "{table}", "--rate", "1", "--sla", "ttft.p90<=1e400s"),
         "--sla: 'ttft.p90<=1e400s': the bound must be a finite number of ms or s"),
    Case("fleet-plan-sla-overflowing", ("fleet", "plan", "{ws}/f.yaml", "--rate", "1", "--sla", "ttft.p90<=1e999ms"),
         "the bound must be a finite number of ms or s", {"f.yaml": scenario_text(fleet={"replicas": [{"count": 1}]})}),
    # --output-file appends a JSON line: onto a last line without its line end it joined that line, and onto a Parquet
    # table or a text file it spoilt the file
    Case("predict-output-file-without-last-newline", ("predict", "{ws}/s.yaml", "--output-file", "{ws}/o.jsonl"),
         "--output-file ", {"o.jsonl": '{"completed": 1}'}),
    Case("predict-output-file-parquet", ("predict", "{ws}/s.yaml", "--output-file", "{ws}/nottables/x.parquet"),
         "x.parquet: does not hold JSON lines (it starts with binary data)"),
    Case("predict-output-file-text", ("predict", "{ws}/s.yaml", "--output-file", "{ws}/notes.txt"),
         "notes.txt: does not hold JSON lines (it starts with 'nothing to see here'), and a result appended to it"),
    # a Parquet output inside a calibration directory replaced a table the run had just read, or became one
    *(Case(f"{name}-into-calibration-dir", args, "cal/gemm.parquet: inside calibration directory ",
           {"cal/gemm.parquet": parquet_bytes(a=[1])})
      for name, args in (
          ("predict-requests", ("predict", "{ws}/s.yaml", "--requests", "{ws}/cal/gemm.parquet")),
          ("trace-convert", ("trace", "convert", "{ws}/t.jsonl", "{ws}/cal/gemm.parquet")),
      )),
    # another sweep's table as the output: its rows were dropped as points no longer swept and the table replaced
    Case("sweep-out-of-another-sweep", ("sweep", "{ws}/sweep.yaml", "--out", "{ws}/x.sweep.parquet", "--executor",
                                        "serial"),
         "x.sweep.parquet: holds the results of sweep 'other', none of them a point of sweep 'tiny-sweep'",
         {"x.sweep.parquet": sweep_result_table(meta={"name": "other"})}),
    Case("oneshot-table-of-another-sweep", (*ONESHOT, "--sla", "ttft.p90<=2s", "--table", "{ws}/x.sweep.parquet"),
         "x.sweep.parquet: holds the results of sweep 'other', none of them a point of sweep 'plan-qwen3-8b",
         {"x.sweep.parquet": sweep_result_table(meta={"name": "other"})}),
    # YAML 1.1 numbers: PyYAML read 1:30 as 90 (base 60) and 010 as 8 (octal), and the run went on with them
    Case("scenario-sexagesimal-rate", ("predict", "{ws}/r.yaml"),
         "'1:30': YAML 1.1 reads it as a base-60 number (90); write the number you mean, or quote it for text",
         {"r.yaml": scenario_text().replace("  request_rate: 5\n", "  request_rate: 1:30\n")}),
    Case("scenario-octal-count", ("predict", "{ws}/o.yaml"),
         "'010': YAML 1.1 reads a leading 0 as octal (8); write it without the leading 0",
         {"o.yaml": scenario_text().replace("  num_prompts: 10\n", "  num_prompts: 010\n")}),
    Case("predict-set-octal", ("predict", "{ws}/s.yaml", "--set", "workload.num_prompts=012"),
         "'012': YAML 1.1 reads a leading 0 as octal (10)"),
    Case("sweep-sexagesimal-axis", ("sweep", "{ws}/x.yaml"),
         "'2:30': YAML 1.1 reads it as a base-60 number (150)",
         {"x.yaml": yaml.safe_dump(sweep_dict({"serving.tp": [1]})) + "sample: {n: 2:30}\n"}),
]  # fmt: skip

TRUTH_HEADER = "id,source,gpu,n_gpu,backend_flags,model,metric,value,unit"
TRUTH_ROW = "A1,me,H100,1,--tp 1,Qwen3-8B,ttft_mean,20,ms"
OVERHEADS_BLOCK = (
    "<!-- simperf groundtruth overheads: begin (generated; do not edit by hand) -->\nold\n"
    "<!-- simperf groundtruth overheads: end -->\n"
)

# the seventh sweep: PD servers' arguments their side never reads, fleet plans and --policy against the scenario's
# own, truth files as spreadsheets write them, one-shot plans' options and directories, empty paths, a page half
# rewritten
SEVENTH_SWEEP_CASES = [
    # the client's stream comes from the decode server: a prefill server's stream settings changed nothing
    pd_case("prefill-stream-interval", "disaggregation.prefill.stream_interval: not read by a PD prefill server: the "
            "client's stream comes from the decode server", {"stream_interval": 4}, {}),
    pd_case("prefill-incremental-streaming", "disaggregation.prefill.incremental_streaming_output: not read by a PD "
            "prefill server", {"incremental_streaming_output": True}, {}),
    scenario_case("pd-fleet-prefill-stream-interval", "fleet.prefill[0].serving.stream_interval: not read by a PD "
                  "prefill server", serving=DELETE,
                  fleet={"prefill": [{"count": 1, "serving": {"tp": 1, "stream_interval": 2}}],
                         "decode": [{"count": 1, "serving": {"tp": 1}}]}),
    # every prefill group gives its own serving: the scenario's is the decode servers' alone, which never read it
    scenario_case("pd-fleet-shared-serving-of-decode-alone", "serving.chunked_prefill_size: not read by a PD decode "
                  "server", **{"serving.chunked_prefill_size": 512},
                  fleet={"prefill": [{"count": 1, "serving": {"tp": 1}}], "decode": [{"count": 1}]}),
    # SGLang forces a decode server's cache to a chunk cache: disable_radix_cache there changed nothing, and the
    # prefill server's prefix cache, the one that counts, stayed on
    pd_case("decode-radix-cache-off", "disaggregation.decode.disable_radix_cache: not read by a PD decode server: "
            "SGLang turns a decode server's radix cache off itself", {}, {"disable_radix_cache": True}),
    scenario_case("pd-fleet-decode-radix-cache-off", "fleet.decode[0].serving.disable_radix_cache: not read by a PD "
                  "decode server", serving=DELETE,
                  fleet={"prefill": [{"count": 1, "serving": {"tp": 1}}],
                         "decode": [{"count": 1, "serving": {"tp": 1, "disable_radix_cache": True}}]}),
    # each trial set the group's count and kept the schedule: a schedule of 2 on a 1-server trial lost half the
    # requests and "met" the SLA with 50% attainment
    *(Case(f"{name}-autoscale", (*command, "{ws}/f.yaml", "--rate", "5", "--sla", "ttft.p90<=10s"),
           "fleet.autoscale: planning tries replica counts itself (the group's count); a schedule would run the "
           "fleet at its own counts (2)",
           {"f.yaml": scenario_text(fleet={"replicas": [{"count": 2}],
                                           "autoscale": {"schedule": [{"at_s": 0, "replicas": 2}]}})})
      for name, command in (("fleet-plan", ("fleet", "plan")), ("plan-fleet-scenario", ("plan",)))),
    # --policy runs in the place of the router's policy: a --set one was replaced by it without a word
    *(Case(f"fleet-{command}-set-policy-beside-policy",
           ("fleet", command, "{ws}/f.yaml", *extra, "--policy", "round_robin", "--set", "fleet.router.policy=random"),
           "--set fleet.router.policy: the command runs each --policy (round_robin) in its place, so it would "
           "change nothing; give random as a --policy instead", {"f.yaml": FLEET})
      for command, extra in (("compare", ()), ("plan", ("--rate", "5", "--sla", "ttft.p90<=10s")))),
    # a second value column: each row's dict kept the last, and that figure was compared without a word
    Case("accuracy-truth-column-twice", ("accuracy", "{ws}/sc", "--truth", "{ws}/t.csv"),
         "t.csv:1: column 'value' is given twice in the header; give it once",
         {"sc/index.yaml": "scenarios:\n  s.yaml: [A1]\n", "sc/s.yaml": scenario_text(),
          "t.csv": f"{TRUTH_HEADER},value\n{TRUTH_ROW},30\n"}),
    # a row copied under a new id: one figure's error counted twice in every median and p90
    Case("accuracy-truth-row-copied", ("accuracy", "{ws}/sc", "--truth", "{ws}/t.csv"),
         "sc/index.yaml: scenarios.s.yaml: rows A1 and A2 are both ttft_mean from me for this scenario",
         {"sc/index.yaml": "scenarios:\n  s.yaml: [A1, A2]\n", "sc/s.yaml": scenario_text(),
          "t.csv": f"{TRUTH_HEADER}\n{TRUTH_ROW}\n{TRUTH_ROW.replace('A1', 'A2')}\n"}),
    # a Latin-1 export: "'utf-8' codec can't decode byte 0xe9 in position 112", naming no file
    Case("accuracy-truth-not-utf8", ("accuracy", "{ws}/sc", "--truth", "{ws}/t.csv"),
         "t.csv: not UTF-8 text (byte 0xe9); save it as UTF-8",
         {"sc/index.yaml": "scenarios:\n  s.yaml: [A1]\n", "sc/s.yaml": scenario_text(),
          "t.csv": f"{TRUTH_HEADER},notes\n{TRUTH_ROW},caf\xe9\n".encode("latin-1")}),
    # a PD pair is two servers: on one GPU the plan tried none, and --disaggregation was read by nothing
    Case("oneshot-disaggregation-on-one-gpu", ("plan", "--model", "qwen3-8b", "--gpu", "h100", "--total-gpus", "1",
                                               "--rate", "1", "--sla", "ttft.p90<=2s", "--disaggregation"),
         "--disaggregation: a PD pair needs 2 GPUs or more (a prefill and a decode server), and --total-gpus is 1"),
    # another request's plan directory: its table lost the rows this plan does not sweep, and its winners' directories
    # stayed beside this plan's plan.json as if they were this plan's
    Case("oneshot-save-dir-of-another-plan", (*ONESHOT, "--rate", "1", "--sla", "ttft.p90<=2s", "--save-dir", "{ws}/sd"),
         "/sd: holds the plan of another request (total_gpus 4, here 2); its table and winners would be "
         "mixed with this plan's",
         {"sd/plan.json": json.dumps({"request": {"model": "qwen3-8b", "gpu": "h100", "total_gpus": 4, "isl": 1024,
                                                  "osl": 1024, "range_ratio": 1.0, "rate": 1.0,
                                                  "sla": ["ttft.p90<=2s"]}})}),
    # an empty path ("$DIR" unset) was read as the current directory: the charts landed among its files
    Case("fleet-compare-charts-empty", ("fleet", "compare", "{ws}/f.yaml", "--policy", "round_robin", "--charts", ""),
         "--charts: got an empty value; give a path", {"f.yaml": FLEET}),
    Case("report-charts-empty", ("report", "{table}", "-o", "{ws}/r.html", "--charts="),
         "--charts: got an empty value; give a path"),
    # the overheads block was rewritten, then the hosts block was found missing: an error, and the page half updated
    Case("groundtruth-overheads-doc-without-hosts-block",
         ("groundtruth", "overheads", "{repo}/groundtruth", "--update-doc", "{ws}/o.md"),
         "o.md: needs exactly one '<!-- simperf groundtruth overheads, hosts: begin",
         {"o.md": "# page\n" + OVERHEADS_BLOCK}),
]  # fmt: skip

SPEC = {"algorithm": "eagle3", "num_steps": 3, "accept_length": {"mean": 2.0}}
BOTH_TIMES = {"arrival_s": 0.0, "timestamp": 5000, "input_len": 100, "output_len": 10}

# the eighth sweep: one side of a PD pair speculating, two time columns in one trace, releases no rule was read from
EIGHTH_SWEEP_CASES = [
    # a decode server's drafts start from the draft state the prefill server ships: one side alone was priced as
    # given (the decode server's TPOT at the full accept length, the prefill server's draft step paid and unread)
    pd_case("pd-decode-speculates-alone", "disaggregation.decode.speculative: only the decode server speculates "
            "(eagle3), not the prefill server (disaggregation.prefill)", {}, {"speculative": SPEC}),
    pd_case("pd-prefill-speculates-alone", "disaggregation.prefill.speculative: only the prefill server speculates "
            "(eagle3), not the decode server", {"speculative": SPEC}, {}),
    pd_case("pd-speculative-algorithms-differ", "disaggregation.decode.speculative.algorithm: the decode server drafts "
            "with eagle3 and the prefill server (disaggregation.prefill) with eagle",
            {"speculative": {**SPEC, "algorithm": "eagle"}}, {"speculative": SPEC}),
    scenario_case("pd-fleet-decode-speculates-alone", "fleet.decode[0].serving.speculative: only the decode server "
                  "speculates", serving=DELETE,
                  fleet={"prefill": [{"count": 1, "serving": {"tp": 1}}],
                         "decode": [{"count": 1, "serving": {"tp": 1, "speculative": SPEC}}]}),
    # arrival_s won and Mooncake's timestamp (ms) was dropped without a word, whichever the user meant
    Case("trace-inspect-two-time-columns", ("trace", "inspect", "{ws}/b.jsonl"),
         "b.jsonl:1: both arrival_s (simperf: seconds) and timestamp (mooncake: ms) give arrival times",
         {"b.jsonl": json.dumps(BOTH_TIMES) + "\n"}),
    Case("trace-convert-two-time-columns-csv", ("trace", "convert", "{ws}/b.csv", "{ws}/out.jsonl"),
         "b.csv:1: both arrival_s (simperf: seconds) and timestamp (mooncake: ms)",
         {"b.csv": "arrival_s,timestamp,input_len,output_len\n0,5000,100,10\n1,0,100,10\n"}),
    Case("predict-trace-second-row-two-time-columns", ("predict", "{ws}/bad.yaml"),
         "b.jsonl:2: both arrival_s (simperf: seconds) and timestamp (mooncake: ms)",
         {"bad.yaml": scenario_text(**{"workload.dataset": {"kind": "trace", "path": "b.jsonl"}}),
          "b.jsonl": TRACE_LINE + json.dumps({**BOTH_TIMES, "arrival_s": 1.0}) + "\n"}),
    Case("predict-parquet-trace-two-time-columns", ("predict", "{ws}/bad.yaml"),
         "b.parquet: both arrival_s (simperf: seconds) and timestamp (mooncake: ms)",
         {"bad.yaml": scenario_text(**{"workload.dataset": {"kind": "trace", "path": "b.parquet"}}),
          "b.parquet": parquet_bytes(arrival_s=[0.0, 1.0], timestamp=[5000.0, 0.0], input_len=[100, 100],
                                     output_len=[10, 10])}),
    # a release no rule was read from was priced with 0.5.23's rules (or 0.4's) without a word
    scenario_case("sglang-version-newer", "serving.sglang_version: 0.9.9 is newer than 0.5.23, the newest release "
                  "simperf's rules were read from", **{"serving.sglang_version": "0.9.9"}),
    scenario_case("sglang-version-older", "serving.sglang_version: 0.3.9 is older than any release simperf models; "
                  "give a release from 0.4.0 to 0.5.23", **{"serving.sglang_version": "0.3.9"}),
    Case("predict-set-sglang-version-newer", ("predict", "{ws}/s.yaml", "--set", "serving.sglang_version=1.0.0"),
         "serving.sglang_version: 1.0.0 is newer than 0.5.23"),
    # an empty window named no field ('window 100 s .. the end holds no requests'), a word the scenario does not use
    scenario_case("trace-window-past-the-end", "workload.dataset.window_start_s: the window 100 s .. the end holds "
                  "no requests; the trace spans 0 .. 0.5 s",
                  **{"workload.dataset": {"kind": "trace", "path": "t.jsonl", "window_start_s": 100}}),
    # ragged batches are drawn from the decode attention ops: with --ops moe the option was read by nothing
    Case("calibrate-ragged-without-decode-attention", ("calibrate", "--dry-run", "--gpu", "h100", "--ops", "moe",
                                                       "--ragged", "5", "--out", "{ws}/cal"),
         "--ragged: draws ragged batches of the decode attention ops (attn_mla_decode, attn_gqa_decode), and --ops "
         "selects neither; drop --ragged or add --ops attention"),
]  # fmt: skip


def truth_case(case_id: str, row: str, expected: str) -> Case:
    """`accuracy` over one scenario (GOOD: Qwen3-8B, bf16, one H100, SGLang's default backend) and one truth row
    it is listed to reproduce."""
    return Case(f"accuracy-truth-{case_id}", ("accuracy", "{ws}/sc", "--truth", "{ws}/t.csv"), expected,
                {"sc/index.yaml": "scenarios:\n  s.yaml: [A1]\n", "sc/s.yaml": scenario_text(),
                 "t.csv": f"{TRUTH_HEADER}\n{row}\n"})  # fmt: skip


FLEET_ROW = {
    "policy": "round_robin",
    "mean_ttft_ms": 20.0,
    "server_hours": 0.1,
    "router": {"policy": "round_robin"},
}
FLEET_OUTPUT = json.dumps([FLEET_ROW, {**FLEET_ROW, "policy": "random", "router": {"policy": "random"}}])

# the ninth sweep: truth rows of another model variant or other launch flags scored against a scenario, contradictory
# calibrate options, empty --set values
NINTH_SWEEP_CASES = [
    # the model names were compared by substring: an fp8 checkpoint's row was scored against bf16 weights, and an
    # AWQ one's against the scenario's model
    truth_case("fp8-row-on-bf16-scenario", "A1,me,H100,1,--tp 1,Qwen3-8B-FP8,ttft_mean,20,ms",
               "A1: s.yaml: the row's model Qwen3-8B-FP8 has fp8 weights, the scenario serves qwen3-8b with bf16 "
               "weights (model.weight_dtype)"),
    truth_case("fp8-checkpoint-in-flags", "A1,me,H100,1,Qwen/Qwen3-8B-FP8 --tp 1,Qwen3-8B,ttft_mean,20,ms",
               "the row's backend_flags checkpoint Qwen/Qwen3-8B-FP8 has fp8 weights, the scenario serves qwen3-8b"),
    truth_case("model-of-a-longer-name", "A1,me,H100,1,--tp 1,Qwen/Qwen3-8B-AWQ,ttft_mean,20,ms",
               "A1: s.yaml: the scenario runs qwen3-8b, the row's model is Qwen/Qwen3-8B-AWQ"),
    # backend_flags were never read: a row of another backend, TP or DP-attention layout was scored all the same
    truth_case("flags-attention-backend", "A1,me,H100,1,--attention-backend flashinfer,Qwen3-8B,ttft_mean,20,ms",
               "A1: s.yaml: the row launches with --attention-backend flashinfer, the scenario's prefill attention "
               "backend is fa3"),
    truth_case("flags-tp", "A1,me,H100,1,--tp 2,Qwen3-8B,ttft_mean,20,ms",
               "A1: s.yaml: the row launches with --tp 2, the scenario's serving.tp is 1"),
    truth_case("flags-dp-attention", "A1,me,H100,1,--tp 1 --enable-dp-attention --dp 2,Qwen3-8B,ttft_mean,20,ms",
               "the row launches with --dp 2, the scenario's serving.dp_attention is 1"),
    truth_case("flags-speculative", "A1,me,H100,1,--speculative-algorithm EAGLE3,Qwen3-8B,tpot_mean,5,ms",
               "the row launches with --speculative-algorithm EAGLE3, the scenario does not speculate"),
    # an empty model made a row listed as 'runs qwen3-8b, the row ' (and an empty id one no index could name)
    truth_case("empty-model", "A1,me,H100,1,--tp 1,,ttft_mean,20,ms", "t.csv:2: model: empty; every row gives"),
    truth_case("empty-id", ",me,H100,1,--tp 1,Qwen3-8B,ttft_mean,20,ms", "t.csv:2: id: empty"),
    # --no-resume re-measures every point: a --retry-* beside it was read by nothing
    *(Case(f"calibrate-no-resume-{flag}", ("calibrate", "--no-resume", f"--{flag}", "--backends", "fake", "--gpu",
                                           "cpu", "--out", "{ws}/cal"),
           f"--{flag}: re-measures only the points recorded as {flag.removeprefix('retry-')}, and --no-resume "
           "re-measures every recorded point; give one of the two")
      for flag in ("retry-failed", "retry-unsupported")),
    # `--set serving.page_size=$PAGE` with $PAGE unset was read as null: the default ran without a word
    Case("predict-set-empty-value", ("predict", "{ws}/s.yaml", "--set", "serving.page_size="),
         "--set serving.page_size: got an empty value; give a value, or null to leave serving.page_size to its "
         "default"),
    Case("fleet-set-empty-value", ("fleet", "compare", "{ws}/f.yaml", "--policy", "round_robin", "--set",
                                   "fleet.router.seed="),
         "--set fleet.router.seed: got an empty value", {"f.yaml": FLEET}),
    # a fleet compare output read as the measured run: a prediction compared with a prediction (--run picked a
    # policy), and several policies named 'runs' with 'no settings recorded'
    Case("compare-fleet-output-as-measured", ("compare", "{ws}/p.json", "{ws}/fleet.json", "--run", "1"),
         "fleet.json: is a `simperf fleet compare` output (predicted, router policies round_robin, random), not a "
         "measured bench_serving run", {"p.json": json.dumps(FLEET_ROW), "fleet.json": FLEET_OUTPUT}),
    Case("compare-fleet-output-of-two-policies", ("compare", "{ws}/fleet.json", "{ws}/result.json"),
         "fleet.json: a `simperf fleet compare` output of 2 router policies (round_robin, random); compare one",
         {"fleet.json": FLEET_OUTPUT}),
    Case("predict-like-fleet-output", ("predict", "{ws}/s.yaml", "--like", "{ws}/fleet.json"),
         "fleet.json: is a `simperf fleet compare` output", {"fleet.json": FLEET_OUTPUT}),
    # an index into a list: 'not a scenario field; did you mean ...?' left open whether an index is read
    Case("sweep-axis-list-index", ("sweep", "{ws}/x.yaml"),
         "axes: fleet.autoscale.schedule.0.replicas: 'fleet.autoscale.schedule.0.replicas': list items have no "
         "field paths", {"x.yaml": yaml.safe_dump(sweep_dict({"fleet.autoscale.schedule.0.replicas": [1, 2]}))}),
]  # fmt: skip

# the tenth sweep: axes over another dataset kind's fields, plan's --model read as predict's --model-path, ...
TENTH_SWEEP_CASES = [
    # every point was an invalid row ('unknown key'), found once each had been simulated; the table was written
    Case("sweep-axis-field-of-another-dataset-kind", ("sweep", "{ws}/x.yaml"),
         "x.yaml: axes: workload.dataset.num_groups: a field of the shared_prefix dataset, and every point with it "
         "has a random dataset (workload.dataset.kind); no point could take it",
         {"x.yaml": yaml.safe_dump(sweep_dict({"workload.dataset.num_groups": [2, 4]}))}),
    Case("sweep-group-axis-field-of-another-dataset-kind", ("sweep", "{ws}/x.yaml"),
         "axes: trace[0].workload.dataset.path: a field of the trace dataset, and every point with it has a random",
         {"x.yaml": yaml.safe_dump(sweep_dict({"trace": [{"workload.dataset.path": "t.jsonl"},
                                                         {"workload.dataset.input_len": 64}]}))}),
    Case("report-sweep-axis-field-of-another-dataset-kind", ("report", "{ws}/x.yaml", "-o", "{ws}/r.html"),
         "axes: workload.dataset.turns: a field of the multi_turn dataset",
         {"x.yaml": yaml.safe_dump(sweep_dict({"workload.dataset.turns": [2, 4]}))}),
    # plan --model took only zoo names: the HF repo id predict --model-path reads was 'got ...; the zoo has ...'
    Case("plan-model-hf-repo-id", ("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "h100", "--total-gpus", "1",
                                   "--isl", "50000"),
         "--isl: 50,000 tokens do not fit qwen3-8b's context length (40,960 tokens)"),
    Case("plan-model-typo", ("plan", "--model", "qwen3-8bb", "--gpu", "h100", "--total-gpus", "1"),
         "--model qwen3-8bb: not a zoo model, a HF repo id of one, or a directory with config.json; did you mean "
         "qwen3-8b"),
    # 'every request exceeds the context length (40960 tokens)' named neither over_context nor the lengths
    scenario_case("over-context-drop-leaves-nothing", "workload.over_context: drop leaves out every request: each is "
                  "longer than the 40,959 tokens the server lets a request hold (context length 40,960)",
                  **{"workload.dataset": {"kind": "fixed", "input_len": 50000, "output_len": 16},
                     "workload.over_context": "drop"}),
    Case("trace-export-over-context-drop-leaves-nothing", ("trace", "export", "{ws}/d.yaml", "{ws}/o.jsonl"),
         "workload.over_context: drop leaves out every request",
         {"d.yaml": scenario_text(**{"workload.dataset": {"kind": "fixed", "input_len": 50000, "output_len": 16},
                                     "workload.over_context": "drop"})}),
    # a misspelt key in a file got 'unknown key (check the spelling ...)', where --set and sweep axes name the
    # nearest field: now the nearest keys of its own block (a dataset kind's, a list item's)
    scenario_case("misspelt-key-nearest", "serving.page_sise: unknown key; did you mean page_size?",
                  **{"serving.page_sise": 16}),
    scenario_case("misspelt-dataset-key-nearest", "workload.dataset.input_length: unknown key; did you mean "
                  "input_len, output_len?", **{"workload.dataset.input_length": 256}),
    scenario_case("misspelt-trace-key-nearest", "workload.dataset.windw_s: unknown key; did you mean window_s",
                  **{"workload.dataset": {"kind": "trace", "path": "t.jsonl", "windw_s": 3}}),
    scenario_case("misspelt-fleet-item-key-nearest", "fleet.replicas[0].cont: unknown key; did you mean count?",
                  fleet={"replicas": [{"cont": 2}]}),
    # a sweep file's own keys: 'simperf schema lists every allowed key' sent the user to the scenario's schema
    Case("sweep-misspelt-key-nearest", ("sweep", "{ws}/x.yaml"),
         "x.yaml: sampel: unknown key; did you mean sample, name? (allowed: axes, base, name, plan, sample)",
         {"x.yaml": yaml.safe_dump(sweep_dict({"serving.page_size": [1, 16]}, sampel={"method": "grid"}))}),
    Case("sweep-misspelt-plan-key-nearest", ("sweep", "{ws}/x.yaml"),
         "plan.rates: unknown key; did you mean rate? (allowed: rate, sla, top)",
         {"x.yaml": yaml.safe_dump(sweep_dict({"serving.page_size": [1, 16]}, plan={"rates": 5}))}),
    # a value of another case or punctuation than the allowed one was 'got 'H100'; allowed values: ...', leaving
    # the user to spot the difference (the zoo's names say 'did you mean'); not the nearest spelling (h300)
    scenario_case("gpu-capitals", "hardware.gpu: got 'H100' (did you mean 'h100'?); allowed values:",
                  **{"hardware.gpu": "H100"}),
    scenario_case("kv-dtype-hyphen", "serving.kv_cache_dtype: got 'fp8-e4m3' (did you mean 'fp8_e4m3'?)",
                  **{"serving.kv_cache_dtype": "fp8-e4m3"}),
    Case("predict-gpu-flag-capitals", ("predict", "--model-path", "qwen3-8b", "--gpu", "H200", "--dataset-name",
                                       "random", "--random-input-len", "100", "--random-output-len", "10"),
         "hardware.gpu: got 'H200' (did you mean 'h200'?)"),
    # an option's value in another case or punctuation: 'unknown H100; GPUs: ...', and fleet plan's --policy
    # round-robin was 'fleet.router policy 'round-robin': ...', naming no option
    Case("plan-gpu-capitals", ("plan", "--model", "qwen3-8b", "--gpu", "H100", "--total-gpus", "1"),
         "--gpu: got 'H100' (did you mean 'h100'?); allowed values: b200, h100, h200"),
    Case("backends-gpu-capitals", ("backends", "--gpu", "H200"), "--gpu: unknown H200 (did you mean 'h200'?)"),
    Case("calibrate-gpu-capitals", ("calibrate", "--gpu", "B200", "--dry-run", "--out", "{ws}/cal"),
         "--gpu: got 'B200' (did you mean 'b200'?)"),
    Case("fleet-plan-policy-hyphen", ("fleet", "plan", "{ws}/f.yaml", "--rate", "1", "--sla", "ttft.p90<=2s",
                                      "--policy", "round-robin"),
         "--policy: got 'round-robin' (did you mean 'round_robin'?); allowed values: round_robin, random",
         {"f.yaml": FLEET}),
    # backends --model, as plan's: 'unknown Qwen/Qwen3-8B'; read as --model-path, the same model given twice
    Case("backends-model-hf-repo-id-and-zoo-name", ("backends", "--model", "Qwen/Qwen3-8B", "--model", "qwen3-8b"),
         "--model qwen3-8b: given twice; give each once"),
    Case("backends-model-local-config", ("backends", "--model", "{ws}/m"),
         "a local config.json; backends takes a zoo model or the HF repo id of one",
         {"m/config.json": (REPO / "simperf/models/zoo/qwen3-8b.json").read_text()}),
    # 'its tables record no gpu ... fill the tables' gpu column': the column was there, with no rows to fill
    *(Case(f"perfdb-{command}-tables-without-rows", ("perfdb", command, "{ws}/cal", *more),
           "cal: its tables hold no rows (gemm.parquet): nothing was measured", {"cal/gemm.parquet": rowless_gemm_table()})
      for command, more in (("check", ()), ("coverage", ()), ("diff", ("{repo}/calibration/h100",)))),
    Case("plan-model-local-config", ("plan", "--model", "{ws}/m", "--gpu", "h100", "--total-gpus", "1"),
         "a local config.json; a one-shot plan takes a zoo model or the HF repo id of one",
         {"m/config.json": (REPO / "simperf/models/zoo/qwen3-8b.json").read_text()}),
]  # fmt: skip


ELEVENTH_SWEEP_CASES = [
    # YAML 1.1 reads an unquoted no/off/yes/on as false/true: a text field said 'Input should be a valid string
    # (got False)', naming neither the word written nor the remedy
    Case(
        "scenario-name-yaml11-no",
        ("predict", "{ws}/x.yaml"),
        "x.yaml: name: YAML 1.1 reads no as false; quote it: 'no'",
        {"x.yaml": scenario_text().replace("name: good", "name: no")},
    ),
    Case(
        "scenario-gpu-yaml11-on",
        ("predict", "{ws}/x.yaml"),
        "hardware.gpu: got On, which YAML 1.1 reads as true; allowed values: 'b200', 'h100' or 'h200'",
        {"x.yaml": scenario_text().replace("gpu: h100", "gpu: On")},
    ),
    # a field of words none of which is off: 'quote it' would only trade one error for another
    Case(
        "scenario-over-context-yaml11-off",
        ("predict", "{ws}/x.yaml"),
        "workload.over_context: got off, which YAML 1.1 reads as false; allowed values: 'cap' or 'drop'",
        {"x.yaml": scenario_text().replace("request_rate: 5", "request_rate: 5\n  over_context: off")},
    ),
    Case(
        "sweep-name-yaml11-off",
        ("sweep", "{ws}/x.yaml"),
        "x.yaml: name: YAML 1.1 reads off as false; quote it",
        {
            "x.yaml": yaml.safe_dump(sweep_dict({"serving.page_size": [1, 16]})).replace(
                "name: tiny-sweep", "name: off"
            )
        },
    ),
    Case(
        "predict-set-text-yaml11-no",
        ("predict", "{ws}/s.yaml", "--set", "model.name=no"),
        "model.name: got false, which YAML reads as true/false (as it reads yes, no, on, off); for text, quote it",
    ),
    # a percentage for a fraction: pydantic's 'unable to parse string as a number' / 'less than or equal to 1'
    scenario_case(
        "range-ratio-percent",
        "workload.dataset.range_ratio: give a fraction from 0 to 1, not a percentage (50% is 0.5)",
        **{"workload.dataset": {"kind": "random", "input_len": 256, "output_len": 16, "range_ratio": "50%"}},
    ),
    scenario_case(
        "range-ratio-fifty",
        "workload.dataset.range_ratio: give a fraction from 0 to 1 (50% is 0.5)",
        **{"workload.dataset": {"kind": "random", "input_len": 256, "output_len": 16, "range_ratio": 50}},
    ),
    Case(
        "predict-set-mem-fraction-percent",
        ("predict", "{ws}/s.yaml", "--set", "serving.mem_fraction_static=85"),
        "serving.mem_fraction_static: give a fraction from 0 to 1 (85% is 0.85)",
    ),
    # --op GEMM listed the ops and left the case for the user to spot (other options got the hint in sweep 10)
    Case(
        "diff-op-other-case",
        ("perfdb", "diff", "{repo}/calibration/h100", "{repo}/calibration/h200", "--op", "GEMM"),
        "--op: got 'GEMM' (did you mean 'gemm'?); allowed values: attn_mla_decode",
    ),
]

# launch_server flags SGLang refuses that predict priced (silent wrong answers, twelfth sweep)
TWELFTH_FLAGS = tuple(
    "predict --model-path qwen3-8b --gpu h100 --dataset-name random --num-prompts 4 --speculative-algorithm EAGLE "
    "--accept-length 2".split()
)
TWELFTH_SWEEP_CASES = [
    # SGLang asserts eagle_topk and num_draft_tokens are unset when num_steps is; simperf priced num_steps 3
    Case("flags-spec-topk-without-num-steps", (*TWELFTH_FLAGS, "--speculative-eagle-topk", "4"),
         "--speculative-eagle-topk: give --speculative-num-steps too; SGLang's launch_server fails an assertion"),
    Case("flags-spec-draft-tokens-without-num-steps", (*TWELFTH_FLAGS, "--speculative-num-draft-tokens", "4"),
         "--speculative-num-draft-tokens: give --speculative-num-steps too"),
    # and with the steps alone 0.5.17 leaves the top-k unset and fails comparing it; simperf priced a top-1 chain
    Case("flags-spec-num-steps-without-topk", (*TWELFTH_FLAGS, "--speculative-num-steps", "3"),
         "--speculative-num-steps: give --speculative-eagle-topk too"),
    # a percentage for a fraction flag: the message said "expected float" and left the conversion to the user; it
    # now reaches the scenario's Fraction type, which names it as --set and a scenario file already did
    Case("flags-range-ratio-as-percent", (*TWELFTH_FLAGS[:9], "--random-range-ratio", "50%"),
         "workload.dataset.range_ratio: give a fraction from 0 to 1, not a percentage (50% is 0.5) (got '50%') "
         "[from --random-range-ratio]"),
    Case("flags-mem-fraction-as-percent", (*TWELFTH_FLAGS[:9], "--mem-fraction-static", "85%"),
         "serving.mem_fraction_static: give a fraction from 0 to 1, not a percentage (85% is 0.85)"),
]  # fmt: skip

CASES = (
    CALIBRATION_TABLE_CASES
    + GROUNDTRUTH_CASES
    + NEWER_COMMAND_CASES
    + SCENARIO_CASES
    + FILE_CASES
    + PREDICT_OPTION_CASES
    + CALIBRATE_CASES
    + PERFDB_CASES
    + TRACE_CASES
    + VALIDATE_CASES
    + SWEEP_CASES
    + ACCURACY_CASES
    + IGNORED_OR_NONSENSE_CASES
    + UNNAMED_CASES
    + THIRD_SWEEP_CASES
    + PD_CASES
    + FLEET_REVIEW_CASES
    + SECOND_SWEEP_REVIEW_CASES
    + EDGE_SWEEP_CASES
    + CARELESS_CASES
    + THIRD_PASS_CASES
    + FOURTH_PASS_CASES
    + SIXTH_SWEEP_CASES
    + SEVENTH_SWEEP_CASES
    + EIGHTH_SWEEP_CASES
    + NINTH_SWEEP_CASES
    + TENTH_SWEEP_CASES
    + ELEVENTH_SWEEP_CASES
    + TWELFTH_SWEEP_CASES
)


def _write_workspace(ws: Path) -> None:
    (ws / "s.yaml").write_text(scenario_text())
    (ws / "t.jsonl").write_text(TRACE_LINE + TRACE_LINE.replace("0.0", "0.5"))
    (ws / "malformed.jsonl").write_text(TRACE_LINE + "{not json\n")
    (ws / "empty.jsonl").write_text("")
    (ws / "run.jsonl").write_text(json.dumps({"input_lens": [5, 6], "output_lens": [2, 3]}) + "\n")
    (ws / "notes.txt").write_text("nothing to see here\n")
    (ws / "fake.parquet").write_text("this is not parquet\n")
    (ws / "broken.json").write_text('{"completed": 3,')
    (ws / "result.json").write_text(
        json.dumps({"completed": 10, "duration": 2.0, "mean_ttft_ms": 30.0}) + "\n"
    )
    (ws / "truth.csv").write_text("id,source\n")
    (ws / "doc.md").write_text("# no generated block here\n")
    (ws / "sweep.yaml").write_text(yaml.safe_dump(sweep_dict({"serving.page_size": [1, 16]})))
    for directory in ("empty", "empty.parquet", "empty.json", "dir.jsonl", "nottables", "oponly"):
        (ws / directory).mkdir()
    (ws / "nottables" / "x.parquet").write_bytes(_small_parquet())
    (ws / "oponly" / "x.parquet").write_bytes(_small_parquet({"op": ["gemm"], "rel_error": [0.1]}))


def _small_parquet(columns: dict | None = None) -> bytes:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table(columns or {"a": [1, 2]}), buffer)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def sweep_table(tmp_path_factory) -> Path:
    """A small finished sweep table for plan and report cases (made once, then only read)."""
    directory = tmp_path_factory.mktemp("table")
    sweep = directory / "sweep.yaml"
    sweep.write_text(yaml.safe_dump(sweep_dict({"serving.page_size": [1, 16]})))
    out = directory / "t.sweep.parquet"
    result = runner.invoke(app, ["sweep", str(sweep), "--executor", "serial", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _fingerprint(roots: list[Path], hashed: Path) -> dict[str, tuple]:
    """Every file under the roots: (size, mtime) for the repository's, the content hash for the workspace's."""
    out: dict[str, tuple] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                stat = path.stat()
                if root == hashed:
                    out[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest(),)
                else:
                    out[str(path)] = (stat.st_size, stat.st_mtime_ns)
            elif path.is_dir():
                out[str(path)] = ("dir",)
    return out


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    probe = {"gpu": None, "gpu_name": None, "torch": None, "device_count": 0, "sm_major": None}
    monkeypatch.setattr(calibrate_runner, "probe_device", lambda *a, **k: dict(probe))


def test_the_suite_covers_every_command_with_150_cases():
    assert len(CASES) >= 150 and len({c.id for c in CASES}) == len(CASES)
    commands = {c.args[0] for c in CASES} | {" ".join(c.args[:2]) for c in CASES}
    for command in ("predict", "schema", "models", "calibrate", "calibrate import", "perfdb check",
                    "perfdb diff", "perfdb coverage", "trace inspect", "trace convert", "trace export", "validate",
                    "sweep", "plan", "report", "accuracy", "compare", "groundtruth run"):  # fmt: skip
        assert command in commands, command


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gives_one_error_line_and_changes_nothing(case, tmp_path, monkeypatch, request):
    ws = tmp_path / "ws"
    ws.mkdir()
    _write_workspace(ws)
    for name, text in case.files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            (ws / name).write_bytes(text)
        else:
            (ws / name).write_text(text)
    table = request.getfixturevalue("sweep_table") if any("{table}" in a for a in case.args) else None
    args = [a.format(ws=ws, repo=REPO, table=table) for a in case.args]
    monkeypatch.chdir(tmp_path)  # default outputs (tables, validation/<stem>) would land here
    watched = [REPO / name for name in WATCHED] + [tmp_path] + ([table.parent] if table else [])
    before = _fingerprint(watched, tmp_path)
    result = runner.invoke(app, args)
    after = _fingerprint(watched, tmp_path)
    output = result.output
    assert result.exit_code not in (0, None), output
    assert "Traceback" not in output and "internal error" not in output, output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    assert case.expected in errors[0], errors[0]
    changed = sorted(set(before.items()) ^ set(after.items()))
    assert not changed, changed
