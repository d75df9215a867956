"""A scenario from a command line: a scenario file (optional), bench_serving/launch_server flags, --set overrides.

Precedence: the file's values, then flags in the order given, then `--set FIELD=VALUE`. The result is an ordinary
scenario mapping, validated by the same pydantic models as a file, so `--save-scenario` can write it and
`simperf predict saved.yaml` runs exactly the same scenario.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from simperf.capabilities import BACKENDS
from simperf.scenario.flags import (
    BENCH_RANDOM_INPUT_LEN,
    BENCH_RANDOM_OUTPUT_LEN,
    DATASET_KINDS,
    DSA_ATTENTION_BACKENDS,
    SGLANG_ATTENTION_BACKENDS,
    SGLANG_DSA_KERNELS,
    SPECULATIVE_ALGORITHMS,
    FlagError,
    FlagSettings,
    parse_flags,
    parse_set_values,
)
from simperf.scenario.load import ScenarioError, load_scenario_mapping, parse_scenario
from simperf.scenario.models import Scenario, fleet_groups_hardware


@dataclass
class CommandLineScenario:
    scenario: Scenario
    mapping: dict[str, Any]  # what --save-scenario writes
    base_dir: Path  # relative paths in `mapping` are relative to this (as parse_scenario resolves them)
    source: str  # the scenario file, or "command line": what error messages start with
    notes: list[str] = field(default_factory=list)  # defaults taken, flags ignored
    origin: dict[str, str] = field(default_factory=dict)  # field path -> the flag (or --set) that set it


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    node = data
    parts = path.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = copy.deepcopy(value)


def _get(data: dict[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def resolve_model_path(text: str, flag: str = "--model-path") -> dict[str, Any]:
    """--model-path (and plan's --model): a zoo name in any capitalisation, a HF repo id of a zoo model, or a local
    directory (or file) with config.json; as a scenario's model mapping."""
    from simperf.models.hf_names import zoo_entry_for_repo
    from simperf.models.zoo import zoo_names

    names = zoo_names()
    if text in names or text.lower() in names:
        return {"name": text.lower()}
    local = Path(text).expanduser()
    config = local / "config.json" if local.is_dir() else local
    if config.is_file() and config.suffix == ".json":
        label = (config.parent.name if config.name == "config.json" else config.stem) or "model"
        return {"name": label.lower(), "config": str(config.resolve())}
    known = zoo_entry_for_repo(text)
    if known is not None:
        name, dtype = known
        return {"name": name, "weight_dtype": dtype}
    base = text.rstrip("/").rsplit("/", 1)[-1].lower()
    if base in names:
        return {"name": base}
    import difflib

    close = difflib.get_close_matches(base, names, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise FlagError(
        f"{flag} {text}: not a zoo model, a HF repo id of one, or a directory with config.json{hint} "
        f"(zoo: {', '.join(names)})"
    )


def resolve_zoo_model(text: str, flag: str, what: str) -> tuple[str, str | None]:
    """(zoo name, the weight dtype a named checkpoint stores where it is not the zoo entry's own) for an option that
    takes zoo models (plan's and backends' --model), read as --model-path is (`Qwen/Qwen3-8B`, `Qwen3-8B`); `what`
    says what refuses a local config.json."""
    from simperf.models.zoo import load_arch, zoo_names

    model = resolve_model_path(text, flag)
    if "config" in model:
        raise FlagError(
            f"{flag} {text}: a local config.json; {what} takes a zoo model or the HF repo id of one "
            f"(zoo: {', '.join(zoo_names())})"
        )
    dtype = model.get("weight_dtype")
    return model["name"], None if dtype == load_arch(model["name"]).default_weight_dtype else dtype


def _choose(flag: str, text: str, table: dict[str, str], what: str) -> str:
    if text in table:
        return table[text]
    if text in table.values():  # simperf's own spelling is accepted too
        return text
    raise FlagError(f"{flag}: got {text!r}; simperf models these {what}: {', '.join(sorted(table))}")


def _check_dsa_model(backend: str, data: dict[str, Any]) -> None:
    """SGLang's nsa backend runs only DeepSeek sparse attention (DSA) models; simperf had dropped the flag for any
    other model and priced the default backend without a word."""
    from simperf.models.zoo import load_arch, zoo_names

    name = _get(data, "model.name")
    if not isinstance(name, str) or name not in zoo_names():
        return  # no model yet, or one the scenario's own validation refuses with its field path
    arch = load_arch(name)
    if arch.attention != "dsa":
        raise FlagError(
            f"--attention-backend {backend}: SGLang's sparse-attention backend runs only DSA models "
            f"(DeepSeek-V3.2); {name} has {arch.attention.upper()} attention (`simperf backends --model {name}` "
            "lists its backends)"
        )


def _apply_backends(settings: FlagSettings, data: dict[str, Any], origin: dict[str, str]) -> None:
    both = settings.given("--attention-backend")
    dsa = both in DSA_ATTENTION_BACKENDS
    if dsa:
        _check_dsa_model(both, data)
    if both is not None and not dsa:
        # simperf's names of the DSA-only kernels are accepted too (they have no --attention-backend value)
        kernels = {
            **SGLANG_ATTENTION_BACKENDS,
            **{c.name: c.name for c in BACKENDS.values() if c.sglang_flag is None},
        }
        _set(data, "serving.attention_backend", _choose("--attention-backend", both, kernels, "backends"))
        origin["serving.attention_backend"] = "--attention-backend"
    for role in ("prefill", "decode"):
        text = settings.given(f"--{role}-attention-backend")
        if text is not None:
            path = f"serving.{role}_attention_backend"
            _set(
                data,
                path,
                _choose(f"--{role}-attention-backend", text, SGLANG_ATTENTION_BACKENDS, "backends"),
            )
            origin[path] = f"--{role}-attention-backend"
        kernel = settings.given(f"--nsa-{role}-backend")
        if kernel is not None:
            path = f"serving.{role}_attention_backend"
            _set(data, path, _choose(f"--nsa-{role}-backend", kernel, SGLANG_DSA_KERNELS, "DSA kernels"))
            origin[path] = f"--nsa-{role}-backend"


def _apply_layout(
    settings: FlagSettings, data: dict[str, Any], origin: dict[str, str], notes: list[str]
) -> None:
    dp = settings.given("--dp-size")
    # 0 was read as 1 and -1 as no DP at all; SGLang 0.5.17 server_args.py asserts tp_size % dp_size == 0 (with DP
    # attention), which 0 cannot pass
    if dp is not None and dp < 1:
        raise FlagError(f"--dp-size: got {dp}; a data-parallel size is at least 1")
    if settings.has("--enable-dp-attention"):
        _set(data, "serving.dp_attention", dp or 1)
        origin["serving.dp_attention"] = "--enable-dp-attention --dp-size"
        if (dp or 1) == 1:  # predicted without DP attention, and nothing said the flag was dropped
            notes.append(
                "--enable-dp-attention without a --dp-size above 1: SGLang turns DP attention off at dp_size 1 "
                "(server_args.py, _handle_data_parallelism), so the server runs without it; give --dp-size N for "
                "N attention ranks"
            )
    elif dp is not None and dp > 1:
        raise FlagError(
            "--dp-size without --enable-dp-attention runs several data-parallel replicas in one server, which a "
            "scenario does not model; predict one replica (--tp-size), or use --enable-dp-attention"
        )
    if data.get("disaggregation") is None and settings.given("--gpus") is None and settings.has("--tp-size"):
        tp = int(_get(data, "serving.tp") or 1)
        if _get(data, "hardware.count") not in (None, tp):
            notes.append(
                f"hardware.count = {tp}, the --tp-size (the file said {_get(data, 'hardware.count')})"
            )
        _set(data, "hardware.count", tp)
    elif (
        _get(data, "hardware.count") is None
        and data.get("disaggregation") is None
        and fleet_groups_hardware(data) is None
    ):
        _set(data, "hardware.count", int(_get(data, "serving.tp") or 1))


def _apply_enums(settings: FlagSettings, data: dict[str, Any], origin: dict[str, str]) -> None:
    quant = settings.given("--quantization")
    if quant is not None:
        if quant not in ("fp8", "w8a8_fp8"):
            raise FlagError(f"--quantization: got {quant!r}; simperf models fp8 weights (fp8, w8a8_fp8)")
        _set(data, "model.weight_dtype", "fp8")
        origin["model.weight_dtype"] = "--quantization"
    kv = settings.given("--kv-cache-dtype")
    if kv is not None:
        table = {"auto": "auto", "bf16": "bf16", "bfloat16": "bf16", "fp8_e4m3": "fp8_e4m3"}
        _set(data, "serving.kv_cache_dtype", _choose("--kv-cache-dtype", kv, table, "KV dtypes"))
        origin["serving.kv_cache_dtype"] = "--kv-cache-dtype"
    balance = settings.given("--load-balance-method")
    if balance not in (None, "auto"):
        table = {"round_robin": "round_robin", "total_requests": "total_requests"}
        _set(data, "serving.load_balance_method", _choose("--load-balance-method", balance, table, "methods"))
        origin["serving.load_balance_method"] = "--load-balance-method"
    if settings.has("--disable-stream"):
        # accepted as "no effect" until now: the prediction was the streamed run's TTFT and TPOT
        raise FlagError(
            "--disable-stream: bench_serving then receives each output as one response, so it reports TTFT as the "
            "whole request latency and TPOT and ITL as 0 (benchmark/serving.py, async_request_sglang_generate); "
            "simperf predicts the streamed run: drop the flag (its E2E latency approximates the non-streamed TTFT)"
        )
    if settings.has("--disaggregation-mode"):
        raise FlagError(
            "--disaggregation-mode: a prefill and a decode server are two servers; describe them in a scenario "
            "file's `disaggregation` block (docs/disaggregation.md), or let `simperf plan` propose one"
        )


def _apply_speculative(settings: FlagSettings, data: dict[str, Any], origin: dict[str, str]) -> None:
    algorithm = settings.given("--speculative-algorithm")
    if algorithm is not None:
        name = SPECULATIVE_ALGORITHMS.get(algorithm.lower())
        if name is None:
            raise FlagError(
                f"--speculative-algorithm: got {algorithm!r}; simperf models EAGLE, EAGLE3 and NEXTN (MTP)"
            )
        _set(data, "serving.speculative.algorithm", name)
        origin["serving.speculative.algorithm"] = "--speculative-algorithm"
    accept = settings.given("--accept-length")
    if accept is not None:
        _set(data, "serving.speculative.accept_length", {"mean": accept})
        origin["serving.speculative.accept_length.mean"] = "--accept-length"
    if algorithm is not None and _get(data, "serving.speculative.accept_length") is None:
        raise FlagError(
            "--speculative-algorithm: give --accept-length too (mean accepted tokens per verify step, bonus "
            "token included; SGLang's log prints it as `accept len`, e.g. 2.4 for DeepSeek-R1 MTP)"
        )
    used = [f.name for f, _, _ in settings.values if f.name.startswith("--speculative-")]
    if used and _get(data, "serving.speculative.algorithm") is None:
        raise FlagError(f"{', '.join(used)}: give --speculative-algorithm too (EAGLE, EAGLE3 or NEXTN)")
    _check_draft_shape_flags(used, data)
    if algorithm is not None:
        _auto_draft_shape(data, origin)


# SGLang 0.5.x server_args.py (0.5.17 arg_groups/speculative_hook.py, _auto_choose_speculative_params): with none of
# --speculative-num-steps / -eagle-topk / -num-draft-tokens given, a Llama target drafts (5, 4, 8) in every 0.5.x
# release (other architectures' choice changed between releases; simperf keeps its (3, 1, 4) for them)
AUTO_DRAFT_SHAPES = {"LlamaForCausalLM": (5, 4, 8)}
DRAFT_SHAPE_KEYS = ("num_steps", "eagle_topk", "num_draft_tokens")


def _auto_draft_shape(data: dict[str, Any], origin: dict[str, str]) -> None:
    """--speculative-algorithm without the draft's shape: the shape SGLang picks for the model, where simperf knows
    it (a Llama EAGLE draft ran as num_steps 3, eagle_topk 1: a chain of 4 instead of SGLang's tree of 8)."""
    from simperf.models.zoo import load_arch

    spec = _get(data, "serving.speculative")
    model = data.get("model")
    if not isinstance(spec, dict) or any(spec.get(k) is not None for k in DRAFT_SHAPE_KEYS):
        return
    if not isinstance(model, dict) or not isinstance(model.get("name"), str):
        return
    config = model.get("config")
    try:
        arch = load_arch(model["name"], Path(config) if isinstance(config, str) else None)
    except Exception:  # an unknown model is refused, with its own words, when the scenario resolves
        return
    shape = AUTO_DRAFT_SHAPES.get(arch.hf_architecture)
    if shape is None:
        return
    for key, value in zip(DRAFT_SHAPE_KEYS, shape, strict=True):
        _set(data, f"serving.speculative.{key}", value)
        origin[f"serving.speculative.{key}"] = "--speculative-algorithm"


def _check_draft_shape_flags(used: list[str], data: dict[str, Any]) -> None:
    """SGLang 0.5.x (server_args.py; 0.5.17 arg_groups/speculative_hook.py, _handle_eagle_family) asserts that
    --speculative-eagle-topk and --speculative-num-draft-tokens are unset when --speculative-num-steps is: it then
    picks all three for the model. simperf priced the flags given with its own num_steps 3, a server that fails to
    start."""
    if (
        "--speculative-num-steps" in used
        and "--speculative-eagle-topk" not in used
        and _get(data, "serving.speculative.eagle_topk") is None
    ):
        # 0.5.17 arg_groups/speculative_hook.py, _handle_eagle_family: with num_steps given nothing fills the top-k,
        # and its page-size rule compares it with 1 (None > 1) before any other use: the launch fails. simperf
        # priced eagle_topk 1, a chain the server never ran.
        raise FlagError(
            "--speculative-num-steps: give --speculative-eagle-topk too (1 for a chain of num_steps + 1 tokens); "
            "SGLang 0.5.17's launch_server leaves the top-k unset when only the steps are given and fails comparing "
            "it (arg_groups/speculative_hook.py, _handle_eagle_family); or give none of the three for SGLang's own "
            "choice"
        )
    shape = [name for name in used if name in ("--speculative-eagle-topk", "--speculative-num-draft-tokens")]
    if (
        not shape
        or "--speculative-num-steps" in used
        or _get(data, "serving.speculative.num_steps") is not None
    ):
        return
    raise FlagError(
        f"{', '.join(shape)}: give --speculative-num-steps too; SGLang's launch_server fails an assertion when "
        "--speculative-eagle-topk or --speculative-num-draft-tokens is given without it (server_args.py)"
    )


# bench_serving's flags of one dataset (benchmark/datasets/): another dataset never reads them
DATASET_FLAG_PREFIXES = {
    "--random-": ("random", "random"),
    "--gsp-": ("shared_prefix", "generated-shared-prefix"),
    "--mooncake-": ("trace", "mooncake"),
}


def _check_dataset_flags(settings: FlagSettings, kind: str, why: str) -> None:
    """Refuse a dataset's own flag on a run of another dataset: it landed on that dataset's field of the same name
    (--gsp-output-len replaced the random dataset's output_len, --random-range-ratio the shared-prefix dataset's
    range_ratio), where bench_serving leaves the run as it is."""
    for flag, _, _ in settings.values:
        for prefix, (wanted, dataset_name) in DATASET_FLAG_PREFIXES.items():
            if flag.name.startswith(prefix) and kind != wanted:
                raise FlagError(f"{flag.name} applies to --dataset-name {dataset_name}; {why}")


def _dataset_kind(settings: FlagSettings, data: dict[str, Any], from_file: bool) -> None:
    """Choose the dataset block the client flags fill in (before they are set)."""
    name = settings.given("--dataset-name")
    dataset = _get(data, "workload.dataset")
    kind = dataset.get("kind") if isinstance(dataset, dict) else None
    random_flags = [f.name for f, _, _ in settings.values if f.name.startswith("--random-")]
    if name is not None:
        wanted = DATASET_KINDS.get(name)
        if wanted is None:
            raise FlagError(
                f"--dataset-name: got {name!r}; simperf models {', '.join(DATASET_KINDS)} "
                "(other datasets: convert them to a trace with `simperf trace convert`)"
            )
        _check_dataset_flags(settings, wanted, f"this run's dataset is {name}")
        if kind != wanted:
            _set(data, "workload.dataset", {"kind": wanted})
    elif random_flags and kind in ("fixed", None):
        if kind == "fixed":  # bench_serving's random with range ratio 1
            _set(data, "workload.dataset", {**dataset, "kind": "random", "range_ratio": 1.0})
        else:
            _set(data, "workload.dataset", {"kind": "random"})
        _check_dataset_flags(settings, "random", "this run's dataset is random")
    elif kind is not None:
        _check_dataset_flags(settings, kind, f"the scenario's dataset is {kind}")
    elif dataset is None and not from_file:  # a file without a workload gets the schema's field-path message
        raise FlagError(
            "no workload: give --dataset-name random --random-input-len N --random-output-len M (bench_serving's "
            "default dataset, sharegpt, is not modelled), or a scenario file"
        )


def _dataset_fill(
    settings: FlagSettings, data: dict[str, Any], origin: dict[str, str], notes: list[str]
) -> None:
    """bench_serving's defaults for lengths left out, and the trace file and timing flags."""
    dataset = _get(data, "workload.dataset")
    if not isinstance(dataset, dict):
        return  # the schema reports what is missing
    if dataset.get("kind") == "random":
        for key, default, flag in (
            ("input_len", BENCH_RANDOM_INPUT_LEN, "--random-input-len"),
            ("output_len", BENCH_RANDOM_OUTPUT_LEN, "--random-output-len"),
        ):
            if key not in dataset:
                _set(data, f"workload.dataset.{key}", default)
                notes.append(f"{flag} {default} (bench_serving's default)")
    if dataset.get("kind") == "trace":
        path = settings.given("--dataset-path")
        if path is not None:
            _set(data, "workload.dataset.path", str(Path(path).expanduser().resolve()))
            origin["workload.dataset.path"] = "--dataset-path"
        if settings.has("--dataset-name"):
            _set(data, "workload.dataset.use_timestamps", _replays_timestamps(settings))
        if settings.given("--dataset-name") == "mooncake":
            notes.append(
                "--dataset-name mooncake: bench_serving 0.5.17 itself fails on it (benchmark/serving.py, benchmark, "
                "reads input_requests[0].prompt before its mooncake branch, and those rows are dicts: seen on a lent "
                "H100, groundtruth/plans/h100-check-straggler.yaml); this predicts what SGLang does with the load"
            )
        if settings.given("--dataset-name") == "mooncake" and _get(data, "workload.tokenize_prompt"):
            where = origin.get("workload.tokenize_prompt", "the scenario's workload.tokenize_prompt")
            raise FlagError(
                f"{where}: bench_serving's mooncake dataset sends text prompts built from the hash_ids "
                "(benchmark/datasets/mooncake.py, get_mooncake_request_over_time), so token ids are never sent and "
                "the API server tokenises every prompt; drop it, or use --dataset-name trace"
            )
    elif settings.has("--dataset-path") or settings.has("--use-trace-timestamps"):
        raise FlagError("--dataset-path / --use-trace-timestamps apply to --dataset-name mooncake (a trace)")


def _replays_timestamps(settings: FlagSettings) -> bool:
    """Whether a trace named by --dataset-name is sent at its own times.

    bench_serving 0.5.17 (benchmark/serving.py, `benchmark`) sends `--dataset-name mooncake` through
    `get_mooncake_request_over_time` (benchmark/datasets/mooncake.py), which always replays the trace's timestamps
    (times --mooncake-slowdown-factor) and prints that it ignores --request-rate; --use-trace-timestamps is not
    read there. simperf's own `--dataset-name trace` replays them only with --use-trace-timestamps.
    """
    if settings.given("--dataset-name") != "mooncake":
        return settings.has("--use-trace-timestamps")
    if settings.has("--request-rate"):
        raise FlagError(
            "--request-rate: bench_serving ignores it for --dataset-name mooncake, which replays the trace's "
            "timestamps (benchmark/serving.py, benchmark: 'ignoring --request-rate'); stretch them with "
            "--mooncake-slowdown-factor, or send the trace's lengths at a rate with --dataset-name trace"
        )
    return True


def _apply_paths(settings: FlagSettings, data: dict[str, Any], origin: dict[str, str]) -> None:
    for flag, value, _ in settings.values:
        if flag.path is None:
            continue
        if flag.path.startswith("serving.") and data.get("disaggregation") is not None:
            raise FlagError(
                f"{flag.name}: this scenario has prefill and decode servers; set their fields with "
                f"--set disaggregation.prefill.{flag.path.removeprefix('serving.')}=... (or .decode.)"
            )
        if flag.name == "--max-concurrency" and value == 0:
            # bench_serving 0.5.17 (benchmark/serving.py, `benchmark`) caps in-flight requests with
            # `Semaphore(max_concurrency) if max_concurrency else None` and prints 0 as "not set": no cap
            value = None
        _set(data, flag.path, value)
        origin[flag.path] = flag.name
    if settings.has("--disable-ignore-eos"):
        _set(data, "workload.ignore_eos", False)
        origin["workload.ignore_eos"] = "--disable-ignore-eos"


def _default_name(data: dict[str, Any]) -> str:
    model = _get(data, "model.name") or "model"
    gpu = _get(data, "hardware.gpu") or "gpu"
    count = _get(data, "hardware.count") or 1
    dataset = _get(data, "workload.dataset") or {}
    what = dataset.get("kind", "")
    if what == "random":
        what = f"random-{dataset.get('input_len')}-{dataset.get('output_len')}"
    return f"{model}-{count}x{gpu}-{what}".strip("-")


def _check_set_against_flags(set_values: dict[str, Any], origin: dict[str, str]) -> None:
    """`--gpu h100 --set hardware.gpu=h200`: --set was applied last, so it won over the flag without a word."""
    for path in set_values:
        for given, flag in origin.items():
            if given == path or given.startswith(f"{path}."):
                raise FlagError(
                    f"--set {path}: {flag} sets {given} too; give it once, as the flag or with --set"
                )


def build_mapping(
    settings: FlagSettings, base: dict[str, Any] | None, set_values: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """(scenario mapping, field path -> the flag that set it, notes)."""
    data = copy.deepcopy(base) if base else {}
    origin: dict[str, str] = {}
    notes = [f"{name}: no effect on the prediction (ignored)" for name in settings.ignored]
    model_path = settings.given("--model-path")
    if model_path is not None:
        model = resolve_model_path(model_path)
        if "weight_dtype" not in model and isinstance(data.get("model"), dict) and "config" not in model:
            model = {**model, **{k: v for k, v in data["model"].items() if k == "weight_dtype"}}
        data["model"] = model
        origin["model.name"] = "--model-path"
    _dataset_kind(settings, data, bool(base))
    speculating = _get(data, "serving.speculative") is not None or settings.has("--speculative-algorithm")
    if (
        settings.has("--accept-length")
        and not speculating
        and not any(path.startswith("serving.speculative") for path in set_values)
    ):
        # alone it made a speculative block whose algorithm defaulted to mtp: speculation nobody asked for
        raise FlagError("--accept-length: give --speculative-algorithm too (EAGLE, EAGLE3 or NEXTN)")
    _apply_paths(settings, data, origin)
    _apply_enums(settings, data, origin)
    _apply_backends(settings, data, origin)
    _apply_speculative(settings, data, origin)
    _dataset_fill(settings, data, origin, notes)
    _apply_layout(settings, data, origin, notes)
    _check_set_against_flags(set_values, origin)
    for path, value in set_values.items():
        _set(data, path, value)
        origin[path] = f"--set {path}"
    if not base or "name" not in data:
        data["name"] = _default_name(data)
    order = list(
        Scenario.model_fields
    )  # the file reads in the schema's order; unknown keys stay (to be refused)
    # reordered in place: the file's mapping keeps the words YAML 1.1 made true/false (strictyaml.YamlMapping)
    ordered = sorted(data.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    data.clear()
    data.update(ordered)
    return data, origin, notes


def _annotate(message: str, origin: dict[str, str]) -> str:
    """Name the flag behind each field path of a validation message."""
    lines = message.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("  "):  # one problem of several: "  field: reason"
            path = line.strip().split(":", 1)[0]
        else:  # a single problem is one line: "source: field: reason"
            path = line.split(": ", 2)[1] if line.count(": ") >= 2 else ""
        if path in origin:
            lines[i] = f"{line} [from {origin[path]}]"
    return "\n".join(lines)


def scenario_from_command_line(tokens: list[str], set_items: list[str] | None = None) -> CommandLineScenario:
    """The scenario `simperf predict [SCENARIO] [flags] [--set F=V ...]` asks for."""
    settings = parse_flags(tokens)
    set_values = parse_set_values(set_items or [])
    base, base_dir = None, Path.cwd()
    if settings.scenario_path is not None:
        path = Path(settings.scenario_path)
        base = load_scenario_mapping(path)
        base_dir = path.parent
        if not isinstance(base, dict):
            parse_scenario(base, str(path))  # raises the schema's message for a file that is not a mapping
    if base is None and not settings.values and not set_values:
        raise FlagError("give a scenario file, or flags (`simperf predict --help` lists them)")
    data, origin, notes = build_mapping(settings, base, set_values)
    if base is None:
        for path, flag in (("model", "--model-path"), ("hardware.gpu", "--gpu")):
            if _get(data, path) is None:
                raise FlagError(f"{flag}: required without a scenario file")
    source = settings.scenario_path or "command line"
    try:
        scenario = parse_scenario(data, source, base_dir=base_dir)
    except ScenarioError as e:
        raise ScenarioError(_annotate(str(e), origin)) from None
    return CommandLineScenario(scenario, data, base_dir, source, notes, origin)


def _scenario_paths(scenario: Scenario) -> dict[str, Path | None]:
    dataset = scenario.workload.dataset
    return {
        "model.config": scenario.model.config,
        "workload.dataset.path": getattr(dataset, "path", None),
        "calibration_dir": scenario.calibration_dir,
    }


def write_scenario_yaml(mapping: dict[str, Any], scenario: Scenario, path: Path, command: str) -> None:
    """A scenario mapping as a YAML file that `simperf predict` runs identically: its paths are the ones the
    scenario resolved to, written relative to the new file."""
    import os

    data = copy.deepcopy(mapping)
    target_dir = Path(path).resolve().parent
    for key, actual in _scenario_paths(scenario).items():
        if actual is not None and _get(data, key) is not None:
            _set(data, key, os.path.relpath(Path(actual).resolve(), target_dir))
    Path(path).write_text(f"# written by: {command}\n" + yaml.safe_dump(data, sort_keys=False))
