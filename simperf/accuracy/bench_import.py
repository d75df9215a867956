"""Reading a measured benchmark result, comparing a prediction with it, and building a workload from it.

Accepted inputs (`read_bench_result`):
- `sglang.bench_serving --output-file F`: JSONL, one JSON object per run (a file may hold several runs; pick one
  with `run`). Keys: the run arguments `backend, dataset_name, request_rate, max_concurrency, sharegpt_output_len,
  random_input_len, random_output_len, random_range_ratio`, the results `duration, completed, total_input_tokens,
  total_output_tokens, request_throughput, input_throughput, output_throughput, total_throughput,
  {mean,median,std,p99}_{e2e_latency,ttft,tpot}_ms, {mean,median,std,p95,p99}_itl_ms, concurrency, accept_length`
  and, with `--output-details`, per-request lists `input_lens, output_lens, ttfts, itls, errors`. An infinite
  rate is written `Infinity`. bench_serving does not write `num_prompts` or `seed`.
- vLLM's `benchmark_serving` / `vllm bench serve --save-result` JSON: the same family with vLLM's names
  (`total_token_throughput`, `*_e2el_ms`, `num_prompts`), normalised here to bench_serving's.
- simperf's own `predict -o json` (bench_serving's keys plus a "simperf" object).
- The printed block, pasted into a text file ("Successful requests:", "Mean TTFT (ms):", ...), from either tool.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.table import Table

from simperf import strictjson
from simperf.jsonl import DuplicateKeyError, json_object_lines, loads_strict
from simperf.scenario.load import format_validation_error
from simperf.scenario.models import ARRIVAL_FIELDS, Scenario, WorkloadSpec


class BenchImportError(ValueError):
    """A result file that cannot be read; the message names the file (and line) and what was wrong."""


# ---------------------------------------------------------------------------------------------------- key names

# vLLM's result keys that differ from bench_serving's
_VLLM_KEYS = {
    "total_token_throughput": "total_throughput",
    "max_concurrent_requests": "max_concurrent_requests",
}
_FAMILY = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e latency": "e2e_latency", "e2el": "e2e_latency"}
_STAT = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)\s+(ttft|tpot|itl|e2e latency|e2el)\s+\(ms\)$")

# Printed labels (lower-cased, without the colon) -> result key; latency lines follow _STAT.
_LABELS: dict[str, str] = {
    "backend": "backend",
    "traffic request rate": "request_rate",
    "request rate configured (rps)": "request_rate",
    "max request concurrency": "max_concurrency",
    "maximum request concurrency": "max_concurrency",
    "successful requests": "completed",
    "failed requests": "failed",
    "benchmark duration (s)": "duration",
    "total input tokens": "total_input_tokens",
    "total input text tokens": "total_input_text_tokens",
    "total input vision tokens": "total_input_vision_tokens",
    "total generated tokens": "total_output_tokens",
    "total generated tokens (retokenized)": "total_output_tokens_retokenized",
    "request throughput (req/s)": "request_throughput",
    "input token throughput (tok/s)": "input_throughput",
    "output token throughput (tok/s)": "output_throughput",
    "peak output token throughput (tok/s)": "max_output_tokens_per_s",
    "peak concurrent requests": "max_concurrent_requests",
    "total token throughput (tok/s)": "total_throughput",
    "concurrency": "concurrency",
    "accept length": "accept_length",
    "max itl (ms)": "max_itl_ms",
}


def normalize_keys(result: dict[str, Any]) -> dict[str, Any]:
    """vLLM's names -> bench_serving's (`total_token_throughput`, `mean_e2el_ms`, ...); others unchanged."""
    out: dict[str, Any] = {}
    for key, value in result.items():
        new = _VLLM_KEYS.get(key, key)
        if new.endswith("_e2el_ms"):
            new = new[: -len("_e2el_ms")] + "_e2e_latency_ms"
        out.setdefault(new, value)
    return out


def _label_key(label: str) -> str | None:
    label = " ".join(label.lower().split())
    if label in _LABELS:
        return _LABELS[label]
    m = _STAT.match(label)
    if m:
        return f"{m.group(1)}_{_FAMILY[m.group(2)]}_ms"
    return None


def _text_value(raw: str) -> Any:
    raw = raw.strip()
    if raw in ("inf", "Infinity"):
        return math.inf
    if raw == "not set":
        return None
    try:
        number = float(raw)
    except ValueError:
        return raw
    return int(number) if re.fullmatch(r"-?\d+", raw) else number


# ---------------------------------------------------------------------------------------------------- reading


def parse_text_block(text: str, source: str = "<text>") -> dict[str, Any]:
    """A printed result block ("Label:   value" lines) -> result dict. Lines it does not know are skipped."""
    result: dict[str, Any] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        label, _, value = line.rpartition(":")
        if not value.strip():
            continue
        key = _label_key(label)
        if key is not None and key not in result:
            result[key] = _text_value(value)
    if "completed" not in result and "mean_ttft_ms" not in result:
        raise BenchImportError(
            f"{source}: no benchmark result found (expected lines like 'Successful requests:' and 'Mean TTFT (ms):')"
        )
    return result


def parse_json_runs(text: str, source: str = "<json>") -> list[dict[str, Any]]:
    """A JSON document (one run) or JSONL (one run per line) -> the runs, in file order."""
    stripped = text.strip()
    try:
        whole = loads_strict(stripped)
    except json.JSONDecodeError:
        whole = None
    except DuplicateKeyError as e:
        raise BenchImportError(f"{source}: {e}") from None
    if isinstance(whole, dict):
        return [whole]
    if isinstance(whole, list) and all(isinstance(x, dict) for x in whole):
        return list(whole)
    runs = [
        obj for _, obj in json_object_lines(text.splitlines(), source, BenchImportError, "not valid JSON")
    ]
    if not runs:
        raise BenchImportError(f"{source}: empty result file")
    return runs


def read_bench_result(
    path: Path, run: int | None = None, run_option: str | None = "--run", measured: bool = True
) -> dict[str, Any]:
    """One run of a measured (or, `measured` False, predicted) result file, with bench_serving's key names.

    JSONL files with several runs need `run` (0-based line among the runs); the error lists what each run was and
    names `run_option`, the command's option that picks it (None: the command reads files of one run only).
    """
    path = Path(path)
    if path.is_dir():  # was reported as 'no such file', which it is not
        raise BenchImportError(f"{path}: is a directory; give a result file")
    if not path.is_file():
        raise BenchImportError(f"{path}: no such file")
    try:
        # -sig: a byte-order mark (a Windows editor's) hid the opening '{' and the JSON was parsed as a printed
        # result block: 'no benchmark result found'
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:  # was reported as a fault of the scenario, without this file's name
        from simperf.workload.trace import not_utf8

        raise BenchImportError(f"{path}: {not_utf8(e)}") from None
    if not text.lstrip().startswith(("{", "[")):
        if run not in (None, 0):
            raise BenchImportError(f"{path}: a printed result block holds one run; got run {run}")
        result = parse_text_block(text, str(path))
        check_run_settings(result, path)
        return result
    runs = parse_json_runs(text, str(path))
    _check_not_fleet_output(runs, path, measured)
    _check_results(runs, path)
    if run is None:
        if len(runs) > 1:
            described = "; ".join(f"run {i}: {_describe(r)}" for i, r in enumerate(runs))
            # "choose one with --run N" whatever the command: predict --like picks it with --like-run, and compare's
            # --run picks the MEASURED file's run, not the PREDICTED one's
            choose = f"choose one with {run_option} N" if run_option else "give a file of one run"
            raise BenchImportError(f"{path}: {len(runs)} runs in the file, {choose} ({described})")
        run = 0
    if not 0 <= run < len(runs):
        raise BenchImportError(f"{path}: run {run} does not exist (the file has {len(runs)})")
    result = normalize_keys(runs[run])
    check_run_settings(result, path)
    return result


# keys every benchmark result (bench_serving, vLLM, simperf -o json) has at least one of
_RESULT_KEYS = (
    "completed",
    "duration",
    "mean_ttft_ms",
    "request_throughput",
    "output_throughput",
    "input_lens",
)
# keys of one request in a trace (simperf, Mooncake, Azure): a trace line is not a benchmark run
_TRACE_KEYS = ("arrival_s", "timestamp", "input_length", "output_length", "hash_ids", "ContextTokens")


# keys of a `simperf fleet compare -o json` row (simperf/fleet/cli.py): one fleet prediction per router policy
_FLEET_ROW_KEYS = {"policy", "router", "server_hours"}


def _check_not_fleet_output(runs: list[dict[str, Any]], path: Path, measured: bool) -> None:
    """A fleet compare output holds a prediction per router policy: read as a measured run, a prediction was
    compared with a prediction (--run picked a policy) and the deltas read as the model's error; read as the
    prediction with several policies, its policies were called runs with 'no settings recorded'."""
    if not runs or not all(_FLEET_ROW_KEYS <= r.keys() for r in runs):
        return
    policies = ", ".join(str(r["policy"]) for r in runs)
    if measured:
        raise BenchImportError(
            f"{path}: is a `simperf fleet compare` output (predicted, router policies {policies}), not a measured "
            "bench_serving run; give the file bench_serving wrote"
        )
    if len(runs) > 1:
        raise BenchImportError(
            f"{path}: a `simperf fleet compare` output of {len(runs)} router policies ({policies}); compare one: "
            "write it with a single --policy"
        )


def _check_results(runs: list[dict[str, Any]], path: Path) -> None:
    """Every line must be a benchmark result; a request trace (one request per line) is named as such."""
    for index, r in enumerate(runs):
        if any(key in r for key in _RESULT_KEYS):
            continue
        if any(key in r for key in _TRACE_KEYS) or {"input_len", "output_len"} <= r.keys():
            raise BenchImportError(
                f"{path}: line {index + 1} is one request of a trace, not a benchmark result; replay a trace "
                "with `workload.dataset: {kind: trace, path: ...}` in the scenario"
            )
        raise BenchImportError(
            f"{path}: line {index + 1} is not a benchmark result (none of {', '.join(_RESULT_KEYS)})"
        )


# run settings read by --like and compare -> what bench_serving 0.5.17 writes there (benchmark/serving.py, benchmark;
# vLLM adds num_prompts and seed); null is "not set" for each
_COUNT_SETTINGS = (
    "max_concurrency",
    "random_input_len",
    "random_output_len",
    "seed",
    "num_prompts",
    "failed",
)
_RATE_WORDS = ("inf", "infinity", "trace")


def _is_count(value: Any) -> bool:
    return (
        not isinstance(value, bool) and isinstance(value, int | float) and value == int(value) and value >= 0
    )


def check_run_settings(result: dict[str, Any], path: Path) -> None:
    """The run settings and per-request lengths a workload is built from are what bench_serving writes: a text
    rate, a fractional or negative count, or lengths that are not lists of token counts failed later with no key
    named (or with an internal error), or were rounded into another workload."""
    rate = result.get("request_rate")
    is_word = isinstance(rate, str) and rate.lower() in _RATE_WORDS
    is_rate = not isinstance(rate, bool) and isinstance(rate, int | float) and rate > 0  # NaN fails too
    if rate is not None and not (is_word or is_rate):
        raise BenchImportError(
            f"{path}: request_rate: got {rate!r}; expected a positive number, inf or 'trace'"
        )
    for key in _COUNT_SETTINGS:
        value = result.get(key)
        if value is not None and not _is_count(value):
            raise BenchImportError(f"{path}: {key}: got {value!r}; expected a whole number >= 0 (or null)")
    ratio = result.get("random_range_ratio")
    if ratio is not None and (
        isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 <= ratio <= 1
    ):
        raise BenchImportError(f"{path}: random_range_ratio: got {ratio!r}; expected a number from 0 to 1")
    for key in ("input_lens", "output_lens"):
        values = result.get(key)
        if values is not None and not (isinstance(values, list) and all(_is_count(v) for v in values)):
            shown = values if not isinstance(values, list) else next(v for v in values if not _is_count(v))
            raise BenchImportError(f"{path}: {key}: got {shown!r}; expected a list of token counts")


def _describe(r: dict[str, Any]) -> str:
    """What tells one run of a file from the others: its settings, else its size ("? rate None" said nothing)."""
    parts = [str(r["dataset_name"])] if r.get("dataset_name") else []
    if r.get("random_input_len") is not None:
        parts.append(f"{r.get('random_input_len')}/{r.get('random_output_len')}")
    if r.get("request_rate") is not None:
        parts.append(f"rate {r['request_rate']}")
    if r.get("max_concurrency"):
        parts.append(f"concurrency {r['max_concurrency']}")
    if not parts:
        parts = [f"{key} {r[key]}" for key in ("completed", "duration") if r.get(key) is not None]
    return " ".join(parts) or "no settings recorded"


# ---------------------------------------------------------------------------------------------------- workload


def _rate(value: Any) -> float | str | None:
    if value is None or value == "trace":
        return None
    if isinstance(value, str):
        if value.lower() in ("inf", "infinity"):
            return "inf"
        value = float(value)
    return "inf" if math.isinf(float(value)) else float(value)


def _mean_lengths(result: dict[str, Any]) -> tuple[float, float] | None:
    """Mean input and output tokens of the completed requests, from the per-request lists or the totals."""
    if result.get("input_lens") and result.get("output_lens"):
        ins, outs = result["input_lens"], result["output_lens"]
        return sum(ins) / len(ins), sum(outs) / len(outs)
    done = result.get("completed")
    if (
        done
        and result.get("total_input_tokens") is not None
        and result.get("total_output_tokens") is not None
    ):
        return result["total_input_tokens"] / done, result["total_output_tokens"] / done
    return None


def workload_from_bench(
    result: dict[str, Any], path: Path | None = None, run: int | None = None
) -> dict[str, Any]:
    """The scenario `workload` keys a measured run's settings determine; keys it cannot tell are left out.

    - dataset: `random` runs keep their lengths and range ratio. With `path` and per-request lengths
      (`--output-details`), the run itself is replayed as a trace (exact lengths; its `start_times`, where
      present, as arrivals). Other datasets (sharegpt, ...) become `random` lengths with the run's mean input and
      output (uniform on 1..2·mean−1, range ratio 0): the means and totals match, not the distribution's shape.
    - num_prompts: `num_prompts` if written (vLLM), else the number of requests in the details, else `completed`.
    - request_rate ('inf' for Infinity), max_concurrency (null: no limit), seed where written. Traffic "trace"
      leaves the rate out.
    """
    result = normalize_keys(result)
    out: dict[str, Any] = {}
    name = str(result.get("dataset_name") or "")
    details = bool(result.get("input_lens")) and bool(result.get("output_lens"))
    if details and path is not None:
        dataset: dict[str, Any] = {
            "kind": "trace",
            "path": str(path),
            "use_timestamps": "start_times" in result,
        }
        if run is not None:
            dataset["run"] = run
        out["dataset"] = dataset
    elif name.startswith("random") and result.get("random_input_len") and result.get("random_output_len"):
        out["dataset"] = {
            "kind": "random",
            "input_len": int(result["random_input_len"]),
            "output_len": int(result["random_output_len"]),
            "range_ratio": float(result.get("random_range_ratio") or 0.0),
        }
    else:
        means = _mean_lengths(result)
        if means is not None:
            mean_in, mean_out = means
            out["dataset"] = {
                "kind": "random",
                "input_len": max(1, round(2 * mean_in - 1)),
                "output_len": max(1, round(2 * mean_out - 1)),
                "range_ratio": 0.0,
            }
    if result.get("num_prompts"):
        out["num_prompts"] = int(result["num_prompts"])
    elif details:
        out["num_prompts"] = len(result["input_lens"])
    elif result.get("completed"):
        out["num_prompts"] = int(result["completed"]) + int(result.get("failed") or 0)
    rate = _rate(result.get("request_rate"))
    if rate is not None:
        out["request_rate"] = rate
    if "max_concurrency" in result:  # null means the run had no limit, which is a setting too
        limit = result["max_concurrency"]
        out["max_concurrency"] = int(limit) if limit else None
    if result.get("seed") is not None:
        out["seed"] = int(result["seed"])
    return out


def scenario_like(
    scenario: Scenario, measured: Path, run: int | None = None, flags: Mapping[str, str] | None = None
) -> Scenario:
    """`simperf predict --like measured.json`: the scenario with its workload overridden by the measured run's
    settings where the run gives them (other workload keys, e.g. ignore_eos or warmup, stay the scenario's).
    flags: field path -> the command-line flag that set it; a flag setting a key the run gives is refused (the
    run's value replaced it without a word)."""
    result = read_bench_result(measured, run, "--like-run")
    like = workload_from_bench(result, path=Path(measured).resolve(), run=run)
    for path, flag in (flags or {}).items():
        parts = path.split(".")
        if parts[0] == "workload" and (len(parts) == 1 or parts[1] in like):
            key = "workload" if len(parts) == 1 else f"workload.{parts[1]}"
            raise BenchImportError(
                f"{flag}: the measured run sets {key}, which replaces it; drop one of them"
            )
    data = scenario.workload.model_dump(mode="json", exclude_unset=True)
    if "dataset" in like:
        data.pop("dataset", None)
        if like["dataset"].get("use_timestamps"):  # the run's send times replace the scenario's arrivals
            for key in ARRIVAL_FIELDS:
                data.pop(key, None)
    data.update(like)
    try:
        workload = WorkloadSpec.model_validate(data)
    except (
        ValidationError
    ) as err:  # e.g. random_input_len 0 (an embedding run): one line naming the run's key
        raise BenchImportError(
            format_validation_error(err, f"{measured}: the run's workload", WorkloadSpec)
        ) from None
    return scenario.model_copy(update={"workload": workload})


# ---------------------------------------------------------------------------------------------------- compare

COMPARED = (
    "completed",
    "duration",
    "request_throughput",
    "input_throughput",
    "output_throughput",
    "total_throughput",
    "concurrency",
    "mean_ttft_ms",
    "median_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "median_tpot_ms",
    "p99_tpot_ms",
    "mean_itl_ms",
    "median_itl_ms",
    "p95_itl_ms",
    "p99_itl_ms",
    "mean_e2e_latency_ms",
    "median_e2e_latency_ms",
    "p99_e2e_latency_ms",
    "accept_length",
)
_SETTINGS = ("request_rate", "max_concurrency")
# bench_serving writes its --random-* arguments (defaults included) whatever the dataset
# (benchmark/serving.py, benchmark: the result's "Arguments"); they describe only a random run
_RANDOM_SETTINGS = ("random_input_len", "random_output_len", "random_range_ratio")
# bench_serving 0.5.17's clients of SGLang's generation endpoints (benchmark/serving.py, ASYNC_REQUEST_FUNCS); its
# other backends time another server (vllm, lmdeploy, trt, truss, gserver) or embeddings (sglang-embedding)
SGLANG_GENERATION_CLIENTS = ("sglang", "sglang-native", "sglang-oai", "sglang-oai-chat")


def check_compared_metrics(result: dict[str, Any], path: Path) -> None:
    """The metrics a comparison reads are numbers, finite and >= 0, of a run where requests completed: a NaN,
    negative or text value was compared (or silently left out) as if measured."""
    for key in COMPARED:
        value = result.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BenchImportError(f"{path}: {key}: got {value!r}; expected a number")
        if not math.isfinite(value) or value < 0:
            raise BenchImportError(f"{path}: {key}: got {value}; expected a finite number >= 0")
    if result.get("completed") == 0:
        raise BenchImportError(f"{path}: completed: 0 requests completed in this run; nothing to compare")


def compare_results(predicted: dict[str, Any], measured: dict[str, Any]) -> list[dict[str, Any]]:
    """Metric-by-metric deltas for the keys both results have: predicted − measured, absolute and in %."""
    rows = []
    for key in COMPARED:
        p, m = predicted.get(key), measured.get(key)
        if not isinstance(p, int | float) or not isinstance(m, int | float) or p is None or m is None:
            continue
        delta = float(p) - float(m)
        rows.append(
            {
                "metric": key,
                "measured": float(m),
                "predicted": float(p),
                "delta": delta,
                "delta_pct": None if m == 0 else 100.0 * delta / abs(float(m)),
            }
        )
    return rows


def _dataset(result: dict[str, Any]) -> str | None:
    """The run's --dataset-name; random-ids draws its lengths as random does (benchmark/datasets/random.py)."""
    name = result.get("dataset_name")
    return None if not name else "random" if name == "random-ids" else str(name)


def _workload_differences(predicted: dict[str, Any], measured: dict[str, Any]) -> list[str]:
    """The dataset and client of the two runs: a prediction for a random workload compared with a measured
    generated-shared-prefix run (or a vLLM server's) is a comparison of two different benchmarks. A prediction
    replaying a trace may replay any dataset (predict --like a run with --output-details)."""
    out = []
    backend = measured.get("backend")
    if backend and predicted.get("backend") and str(backend) not in SGLANG_GENERATION_CLIENTS:
        out.append(
            f"backend: measured run {backend}, which bench_serving uses for another server or for embeddings "
            f"(SGLang's generation clients: {', '.join(SGLANG_GENERATION_CLIENTS)}); the prediction is SGLang's"
        )
    p, m = _dataset(predicted), _dataset(measured)
    if p is not None and m is not None and p != "trace" and p != m:
        out.append(f"dataset_name: predicted run {p}, measured run {m}")
    return out


def setting_differences(predicted: dict[str, Any], measured: dict[str, Any]) -> list[str]:
    """Run settings both files state and that differ (a comparison of different runs is worth a warning)."""
    out = _workload_differences(predicted, measured)
    both_random = _dataset(predicted) in (None, "random") and _dataset(measured) in (None, "random")
    for key in _SETTINGS + (_RANDOM_SETTINGS if both_random else ()):
        p, m = predicted.get(key), measured.get(key)
        if p is None or m is None:
            continue
        if _rate(p) != _rate(m) if key == "request_rate" else p != m:
            out.append(f"{key}: predicted run {p}, measured run {m}")
    return out + _size_differences(predicted, measured, out)


# the mean request lengths of two runs of one workload agree within sampling noise: a random dataset's means over
# 100 requests or more are within ~6% (uniform lengths); a gap past this is another workload (or EOS cut outputs)
_MEAN_LENGTH_TOLERANCE = 0.25
_MIN_REQUESTS_FOR_MEANS = 100


def _size_differences(predicted: dict[str, Any], measured: dict[str, Any], said: list[str]) -> list[str]:
    """Requests completed and their mean lengths, which no setting states for every dataset: a prediction of 1,000
    prompts compared with a measured run of 200, or of another length mix (a sharegpt sample of another size or
    seed, a trace of other requests), printed deltas with no word that the runs differ."""
    out = []
    p_count, m_count = predicted.get("completed"), measured.get("completed")
    if not (_positive_number(p_count) and _positive_number(m_count)):
        return out
    if p_count != m_count:
        out.append(
            f"completed: predicted run {p_count} requests, measured run {m_count} (another --num-prompts, or "
            "requests that failed or were dropped)"
        )
    if min(p_count, m_count) < _MIN_REQUESTS_FOR_MEANS:
        return out
    for total, setting, what in (
        ("total_input_tokens", "random_input_len", "input"),
        ("total_output_tokens", "random_output_len", "output"),
    ):
        p_total, m_total = predicted.get(total), measured.get(total)
        if any(line.startswith(f"{setting}:") for line in said) or not (
            _positive_number(p_total) and _positive_number(m_total)
        ):
            continue  # the setting's own warning says it, or a file without the total
        p_mean, m_mean = p_total / p_count, m_total / m_count
        if abs(p_mean - m_mean) > _MEAN_LENGTH_TOLERANCE * max(m_mean, 1.0):
            out.append(
                f"mean {what} tokens per request: predicted run {p_mean:,.0f}, measured run {m_mean:,.0f}"
            )
    return out


def _positive_number(value: Any) -> bool:
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    )


def compare_command(
    predicted: Annotated[Path, typer.Argument(help="simperf predict -o json output")],
    measured: Annotated[
        Path, typer.Argument(help="bench_serving --output-file JSONL, or its printed block in a text file")
    ],
    run: Annotated[int | None, typer.Option(help="which run of a JSONL file with several (0-based)")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="text | json")] = "text",
) -> int:
    """Print metric-by-metric deltas between a simperf prediction and a measured bench_serving run."""
    from simperf.cli_errors import fail

    if output not in ("text", "json"):
        fail(f"--output: got {output!r}; allowed values: text, json")
    try:
        pred = read_bench_result(predicted, run_option=None, measured=False)
        meas = read_bench_result(measured, run)
        for result, path in ((pred, predicted), (meas, measured)):
            check_compared_metrics(result, path)
    except BenchImportError as e:
        fail(str(e))
    if predicted.resolve() == measured.resolve():  # after reading: a file's own fault is named first
        # one file compared with itself printed a 0.0% delta on every metric: a prediction that looked exact
        fail(f"{measured}: is also the PREDICTED file; give the measured bench_serving result")
    if "simperf" in meas and "simperf" not in pred:
        # the two files given the other way round: every delta came out with its sign flipped and its percentage
        # taken of the prediction, and read as the model's error
        fail(
            f"{measured}: is a simperf prediction (it has predict's simperf block) and {predicted} is not; give "
            "the prediction first: simperf compare PREDICTED MEASURED"
        )
    rows = compare_results(pred, meas)
    if not rows:  # a table with no row, and exit 0, read as a comparison that passed
        have = [
            ", ".join(k for k in COMPARED if isinstance(r.get(k), int | float)) or "none"
            for r in (pred, meas)
        ]
        fail(f"no metric appears in both files: {predicted} has {have[0]}; {measured} has {have[1]}")
    warnings = setting_differences(pred, meas)
    if output == "json":
        payload = {"metrics": rows, "setting_differences": warnings}
        sys.stdout.write(strictjson.dumps(payload, indent=2) + "\n")
        return 0
    from simperf.report.tables import stdout_console

    console = stdout_console()  # complete when piped
    table = Table("metric", "measured", "predicted", "Δ", "Δ %", title=f"{predicted} vs {measured}")
    for r in rows:
        pct = "-" if r["delta_pct"] is None else f"{r['delta_pct']:+.1f}%"
        table.add_row(r["metric"], f"{r['measured']:.2f}", f"{r['predicted']:.2f}", f"{r['delta']:+.2f}", pct)
    console.print(table)
    for w in warnings:
        console.print(f"warning: settings differ: {w}", highlight=False)
    return 0
