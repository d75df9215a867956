"""bench_serving's client flags and SGLang's launch_server flags -> scenario fields.

`simperf predict` accepts the flags a user already types for SGLang (names as SGLang 0.5.17 spells them:
sglang/benchmark/serving.py `cli_main`, sglang/srt/server_args.py `ServerArgs`), so a run reads like

    simperf predict --model-path qwen3-8b --gpu h100 --dataset-name random --random-input-len 1024 ...

This module only knows names and values: FLAGS maps each flag to the scenario field it sets (or to a rule below,
for flags whose meaning spans fields), `parse_flags` reads a command line into those settings, and
`apply_settings` lays them over a scenario mapping (a YAML file's, or an empty one), flags winning.
tests/test_scenario_flags.py checks every name against SGLang's own flag list.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from simperf.capabilities import BACKENDS, SCHEDULE_POLICIES

Origin = Literal["bench_serving", "launch_server", "simperf"]


class FlagError(ValueError):
    """A command-line flag simperf cannot use; the message names the flag and what is allowed."""


def _int(text: str) -> int:
    return int(text)


def _float(text: str) -> float:
    return float(text)


def _fraction(text: str) -> float | str:
    """A share from 0 to 1; '50%' passes through as written, for the scenario's Fraction type to name as a percentage
    (scenario/models.py, _fraction_not_percent) with the field it sets."""
    try:
        return float(text)
    except ValueError:
        if text.strip().endswith("%"):
            return text.strip()
        raise


def _rate(text: str) -> float | str:
    return "inf" if text.strip().lower() in ("inf", "infinity") else float(text)


def _text(text: str) -> str:
    return text


@dataclass(frozen=True)
class Flag:
    name: str  # as SGLang spells it
    origin: Origin
    path: str | None  # the scenario field it sets; None: a rule in _apply_special, or no effect
    help: str
    convert: Callable[[str], Any] | None = _text  # None: a switch (no value)
    aliases: tuple[str, ...] = ()
    ignored: bool = False  # accepted so copied commands run, but it changes nothing simperf models

    @property
    def takes_value(self) -> bool:
        return self.convert is not None


def _client(name: str, path: str | None, help: str, convert=_text, **kw) -> Flag:
    return Flag(name, "bench_serving", path, help, convert, **kw)


def _server(name: str, path: str | None, help: str, convert=_text, **kw) -> Flag:
    return Flag(name, "launch_server", path, help, convert, **kw)


def _ignored(name: str, origin: Origin, takes_value: bool = True) -> Flag:
    return Flag(
        name, origin, None, "no effect on the prediction", _text if takes_value else None, ignored=True
    )


FLAGS: tuple[Flag, ...] = (
    # ---- bench_serving (sglang/benchmark/serving.py, cli_main)
    _client(
        "--dataset-name",
        None,
        "random | random-ids | generated-shared-prefix | mooncake (with --dataset-path)",
    ),
    _client(
        "--dataset-path", None, "trace file for --dataset-name mooncake (any format `simperf trace` reads)"
    ),
    _client(
        "--random-input-len", "workload.dataset.input_len", "prompt tokens (bench_serving default 1024)", _int
    ),
    _client(
        "--random-output-len",
        "workload.dataset.output_len",
        "output tokens (bench_serving default 1024)",
        _int,
    ),
    _client("--random-range-ratio", "workload.dataset.range_ratio", "lengths ~ U{int(L*r)..L}", _fraction),
    _client("--num-prompts", "workload.num_prompts", "requests to send", _int),
    _client("--request-rate", "workload.request_rate", "req/s (Poisson), or inf", _rate),
    _client(
        "--max-concurrency",
        "workload.max_concurrency",
        "client-side cap on requests in flight (0: none, as bench_serving)",
        _int,
    ),
    _client("--seed", "workload.seed", "random seed", _int),
    _client("--warmup-requests", "workload.warmup_requests", "warm-up requests before the run", _int),
    _client("--disable-ignore-eos", None, "let requests stop at EOS (simperf: ignore_eos false)", None),
    _client(
        "--tokenize-prompt",
        "workload.tokenize_prompt",
        "send token ids (random dataset): the API server does not tokenise the prompts",
        None,
    ),
    _client("--use-trace-timestamps", None, "replay the trace's arrival times", None),
    _client("--mooncake-slowdown-factor", "workload.dataset.time_scale", "stretch trace time", _float),
    _client("--gsp-num-groups", "workload.dataset.num_groups", "shared-prefix groups", _int),
    _client("--gsp-prompts-per-group", "workload.dataset.prompts_per_group", "prompts per group", _int),
    _client("--gsp-system-prompt-len", "workload.dataset.system_prompt_len", "shared prefix tokens", _int),
    _client("--gsp-question-len", "workload.dataset.question_len", "question tokens", _int),
    _client("--gsp-output-len", "workload.dataset.output_len", "output tokens", _int),
    _client("--gsp-range-ratio", "workload.dataset.range_ratio", "length range ratio", _fraction),
    _client("--gsp-ordered", "workload.dataset.ordered", "keep group order", None),
    _ignored("--backend", "bench_serving"),
    _ignored("--base-url", "bench_serving"),
    _ignored("--tokenizer", "bench_serving"),
    _ignored("--served-model-name", "bench_serving"),
    _ignored("--tag", "bench_serving"),
    _ignored("--disable-tqdm", "bench_serving", takes_value=False),
    _client(
        "--disable-stream",
        None,
        "refused: bench_serving then times each whole response as its first token (simperf predicts streaming)",
        None,
    ),
    _ignored("--flush-cache", "bench_serving", takes_value=False),
    _ignored("--print-requests", "bench_serving", takes_value=False),
    _ignored("--ready-check-timeout-sec", "bench_serving"),
    # ---- launch_server (sglang/srt/server_args.py, ServerArgs)
    _server(
        "--model-path",
        None,
        "zoo name, HF repo id of a zoo model, or a local dir with config.json",
        aliases=("--model",),
    ),
    _server(
        "--tp-size", "serving.tp", "tensor parallel size", _int, aliases=("--tp", "--tensor-parallel-size")
    ),
    _server(
        "--dp-size",
        None,
        "DP-attention ranks (with --enable-dp-attention)",
        _int,
        aliases=("--dp", "--data-parallel-size"),
    ),
    _server("--enable-dp-attention", None, "data-parallel attention over --dp-size ranks", None),
    _server(
        "--ep-size", "serving.ep", "expert parallel size", _int, aliases=("--ep", "--expert-parallel-size")
    ),
    _server("--attention-backend", None, "both phases' attention backend"),
    _server("--prefill-attention-backend", None, "prefill attention backend"),
    _server("--decode-attention-backend", None, "decode attention backend"),
    _server(
        "--nsa-prefill-backend",
        None,
        "DSA prefill kernel (with --attention-backend nsa)",
        aliases=("--dsa-prefill-backend",),
    ),
    _server(
        "--nsa-decode-backend",
        None,
        "DSA decode kernel (with --attention-backend nsa)",
        aliases=("--dsa-decode-backend",),
    ),
    _server("--page-size", "serving.page_size", "KV page size", _int),
    _server("--kv-cache-dtype", None, "auto | bf16 | fp8_e4m3"),
    _server("--quantization", None, "fp8: serve fp8 weights"),
    _server(
        "--chunked-prefill-size",
        "serving.chunked_prefill_size",
        "tokens per prefill chunk; -1 disables",
        _int,
    ),
    _server("--max-prefill-tokens", "serving.max_prefill_tokens", "prefill token budget per batch", _int),
    _server("--max-running-requests", "serving.max_running_requests", "running-batch cap", _int),
    _server(
        "--max-total-tokens",
        "serving.max_total_tokens",
        "KV pool tokens (server log's max_total_num_tokens)",
        _int,
    ),
    _server("--mem-fraction-static", "serving.mem_fraction_static", "static memory share", _fraction),
    _server(
        "--cuda-graph-max-bs",
        "serving.cuda_graph_max_bs",
        "largest decode CUDA-graph batch",
        _int,
        aliases=("--cuda-graph-max-bs-decode",),
    ),
    _server(
        "--disable-cuda-graph",
        "serving.disable_cuda_graph",
        "decode without CUDA graphs",
        None,
        aliases=("--disable-decode-cuda-graph",),
    ),
    _server("--disable-overlap-schedule", "serving.disable_overlap_schedule", "no CPU/GPU overlap", None),
    _server(
        "--enable-metrics",
        "serving.enable_metrics",
        "Prometheus metrics: the API server's time per chunk grows",
        None,
    ),
    _server(
        "--incremental-streaming-output",
        "serving.incremental_streaming_output",
        "stream only new tokens: a chunk's cost stops growing with the output so far",
        None,
    ),
    _server(
        "--stream-interval",
        "serving.stream_interval",
        "tokens between a request's streamed chunks (default 1)",
        _int,
    ),
    _server(
        "--enable-mixed-chunk", "serving.enable_mixed_chunk", "decode rows ride in prefill batches", None
    ),
    _server("--schedule-policy", "serving.schedule_policy", " | ".join(SCHEDULE_POLICIES)),
    _server(
        "--schedule-conservativeness",
        "serving.schedule_conservativeness",
        "admission conservativeness",
        _float,
    ),
    _server("--disable-radix-cache", "serving.disable_radix_cache", "no prefix reuse", None),
    _server("--load-balance-method", None, "DP-attention dispatch: round_robin | total_requests"),
    _server("--speculative-algorithm", None, "EAGLE | EAGLE3 | NEXTN (DeepSeek MTP)"),
    _server(
        "--speculative-draft-model-path",
        None,
        "the EAGLE draft checkpoint: priced as one decoder layer of the target's shape (docs/serving-model.md §3)",
        aliases=("--speculative-draft-model",),
    ),
    _server("--speculative-num-steps", "serving.speculative.num_steps", "draft steps", _int),
    _server("--speculative-eagle-topk", "serving.speculative.eagle_topk", "draft top-k", _int),
    _server(
        "--speculative-num-draft-tokens", "serving.speculative.num_draft_tokens", "verified tokens", _int
    ),
    _server(
        "--disaggregation-mode",
        None,
        "refused: PD disaggregation needs a scenario file's disaggregation block",
    ),
    _ignored("--host", "launch_server"),
    _ignored("--port", "launch_server"),
    _ignored("--trust-remote-code", "launch_server", takes_value=False),
    _ignored("--log-level", "launch_server"),
    _ignored("--random-seed", "launch_server"),
    _ignored("--tokenizer-path", "launch_server"),
    # ---- simperf's own (SGLang has no flag for them)
    Flag("--gpu", "simperf", "hardware.gpu", "GPU kind: h100 | h200 | b200"),
    Flag("--gpus", "simperf", "hardware.count", "GPUs of the server (default: --tp-size)", _int),
    Flag(
        "--accept-length",
        "simperf",
        "serving.speculative.accept_length.mean",
        "mean accepted tokens per verify step (SGLang logs it as `accept len`)",
        _float,
    ),
)

BY_NAME: dict[str, Flag] = {n: f for f in FLAGS for n in (f.name, *f.aliases)}

# bench_serving's random-dataset defaults (sglang/benchmark/serving.py, --random-input-len / --random-output-len)
BENCH_RANDOM_INPUT_LEN = 1024
BENCH_RANDOM_OUTPUT_LEN = 1024

# SGLang --attention-backend / --*-attention-backend names -> scenario backend names (simperf/capabilities.py)
SGLANG_ATTENTION_BACKENDS = {c.sglang_flag: c.name for c in BACKENDS.values() if c.sglang_flag is not None}
DSA_ATTENTION_BACKENDS = ("nsa", "dsa")  # the DSA kernels are chosen by --nsa-{prefill,decode}-backend
SGLANG_DSA_KERNELS = {c.name: c.name for c in BACKENDS.values() if c.dsa_kernel}
SPECULATIVE_ALGORITHMS = {"eagle": "eagle", "eagle3": "eagle3", "nextn": "mtp", "mtp": "mtp"}
DATASET_KINDS = {
    "random": "random",
    "random-ids": "random",
    "generated-shared-prefix": "shared_prefix",
    "mooncake": "trace",
    "trace": "trace",
}


@dataclass
class FlagSettings:
    """What a command line asks for: a scenario file, flag values in order, and --set overrides."""

    scenario_path: str | None = None
    values: list[tuple[Flag, Any, str]] = field(default_factory=list)  # (flag, converted value, as typed)
    ignored: list[str] = field(default_factory=list)

    def given(self, name: str) -> Any:
        """The last value of a flag (by canonical name), or None."""
        found = [v for f, v, _ in self.values if f.name == name]
        return found[-1] if found else None

    def has(self, name: str) -> bool:
        return any(f.name == name for f, _, _ in self.values)


def did_you_mean(name: str) -> str:
    close = difflib.get_close_matches(name, sorted(BY_NAME), n=3, cutoff=0.6)
    return f"; did you mean {', '.join(close)}?" if close else ""


def _check_not_given_twice(settings: FlagSettings, flag: Flag, name: str, value: Any, text: str) -> None:
    """A flag (or its alias) given twice with two values: the last one was used without a word."""
    for earlier, earlier_value, earlier_text in settings.values:
        if earlier is flag and earlier_value != value:
            raise FlagError(f"{name}: given twice ({earlier_text!r}, then {text!r}); give {flag.name} once")


def parse_flags(tokens: list[str]) -> FlagSettings:
    """Read `[SCENARIO.yaml] --flag value --switch ...` (also --flag=value) in order."""
    settings = FlagSettings()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("--"):
            if settings.scenario_path is not None:
                raise FlagError(
                    f"unexpected argument {token!r}: the scenario file is already {settings.scenario_path!r} "
                    "(a flag's value goes right after the flag)"
                )
            settings.scenario_path = token
            continue
        name, eq, inline = token.partition("=")
        flag = BY_NAME.get(name)
        if flag is None:
            raise FlagError(
                f"{name}: not a flag simperf predict knows{did_you_mean(name)} "
                "(`simperf predict --help` lists them; any scenario field takes --set FIELD=VALUE)"
            )
        if not flag.takes_value:
            if eq:
                raise FlagError(f"{name} is a switch and takes no value (got {token!r})")
            text = ""
        elif eq:
            text = inline
        elif i < len(tokens):
            text = tokens[i]
            i += 1
        else:
            raise FlagError(f"{name} needs a value ({flag.help})")
        if flag.ignored:
            settings.ignored.append(name)
            continue
        try:
            value = flag.convert(text) if flag.convert else True
        except ValueError:
            raise FlagError(
                f"{name}: got {text!r}; expected {flag.convert.__name__.strip('_')} ({flag.help})"
            ) from None
        _check_not_given_twice(settings, flag, name, value, text)
        settings.values.append((flag, value, text))
    return settings


def parse_set_values(items: list[str], form: str = "FIELD=VALUE, e.g. --set serving.tp=4") -> dict[str, Any]:
    """`--set serving.tp=4 --set serving.speculative={algorithm: mtp}`: values read as YAML, in the order given (predict
    and fleet compare|plan). `form` is the usage a malformed item is answered with."""
    from simperf.sweep.paths import scenario_field_paths, unknown_path_message

    out: dict[str, Any] = {}
    for item in items:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise FlagError(f"--set {item!r}: write {form}")
        if key not in scenario_field_paths():
            raise FlagError(f"--set {key}: {unknown_path_message(key)}")
        if key in out:  # the later one was used without a word
            raise FlagError(f"--set {key}: given twice; give each field once")
        check_not_replacing(key, out)
        out[key] = read_set_value(key, text)
    return out


def check_not_replacing(key: str, earlier: Iterable[str]) -> None:
    """`--set a.b=1 --set a={...}`: the later, whole `a` replaced the earlier `a.b` without a word (predict and
    fleet apply them in order)."""
    inner = next((path for path in earlier if path.startswith(f"{key}.")), None)
    if inner is not None:
        raise FlagError(
            f"--set {key}: replaces the whole of {key}, and with it the earlier --set {inner}; "
            f"give --set {key} first, then --set {inner}"
        )


def read_set_value(key: str, text: str) -> Any:
    """The value of `--set KEY=TEXT`, read as YAML (predict, fleet compare|plan); a FlagError on one line."""
    import yaml

    from simperf.strictyaml import error_line, safe_load

    if not text.strip():
        # `--set serving.page_size=$PAGE` with $PAGE unset: read as null, which leaves the field to its default,
        # and the run went on without the value the user meant
        raise FlagError(
            f"--set {key}: got an empty value; give a value, or null to leave {key} to its default"
        )
    try:
        return safe_load(text)
    except yaml.YAMLError as e:  # PyYAML's report spans several lines
        raise FlagError(f"--set {key}: value {text!r} is not valid YAML: {error_line(e)}") from None


def flags_epilog() -> str:
    """The flags `simperf predict` reads, grouped by where their names come from (for --help)."""
    groups = (
        ("bench_serving client flags", "bench_serving"),
        ("launch_server flags (SGLang 0.5.x names)", "launch_server"),
        ("simperf flags", "simperf"),
    )
    parts = []
    for title, origin in groups:
        used = [f for f in FLAGS if f.origin == origin and not f.ignored]
        lines = [
            f"  {', '.join((f.name, *f.aliases))}{' VALUE' if f.takes_value else ''}: {f.help}" for f in used
        ]
        ignored = [f.name for f in FLAGS if f.origin == origin and f.ignored]
        if ignored:
            lines.append(f"  accepted, no effect: {', '.join(ignored)}")
        parts.append(f"{title}:\n" + "\n".join(lines))
    return (
        "Flags combine with a scenario file (flags win), e.g. simperf predict --model-path qwen3-8b --gpu h100 "
        "--dataset-name random --random-input-len 1024 --random-output-len 1024 --max-concurrency 64\n\n"
        + "\n\n".join(parts)
    )
