"""What a user writes: the scenario file, as pydantic models.

Every model forbids unknown keys so that a typo is an error, not a silently ignored option.
Field names follow SGLang's server arguments (underscored) and bench_serving's client flags.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from simperf.capabilities import BACKENDS, SCHEDULE_POLICIES
from simperf.hardware.catalog import gpu_keys
from simperf.scenario.pd import check_decode_settings, check_prefill_settings
from simperf.sglang_defaults import NEWEST_MODELLED_SGLANG, OLDEST_MODELLED_SGLANG, version_tuple


def _is_number_not_bool(annotation: Any) -> bool:
    """Whether a field's type takes a number and not true/false (int, float, or a union holding one)."""
    if annotation is bool or (get_origin(annotation) is Literal and bool in map(type, get_args(annotation))):
        return False
    if annotation in (int, float):
        return True
    args = get_args(annotation)
    return any(_is_number_not_bool(arg) for arg in args) and not any(arg is bool for arg in args)


def _takes_words(annotation: Any) -> set[str] | None:
    """The words a field's type takes as they stand: its Literal members (request_rate's 'inf'); None where it
    takes any text (str, a path)."""
    if annotation in (str, Path):
        return None
    if get_origin(annotation) is Literal:
        return {arg for arg in get_args(annotation) if isinstance(arg, str)}
    words: set[str] = set()
    for arg in get_args(annotation):
        taken = _takes_words(arg)
        if taken is None:
            return None
        words |= taken
    return words


class Quoted:
    """A number or true/false written in quotes (tp: "4", disable_cuda_graph: "true") where one goes: pydantic's lax
    mode reads the text as the value. Passed on in its place, it makes the field itself refuse it, so the error names
    the field (load.problem_message words it)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return repr(self.text)


class YamlBool:
    """true/false where a field takes text: YAML 1.1 reads an unquoted yes, no, on or off as true or false (`name: no`
    gave 'Input should be a valid string (got False)'). Passed on in its place, it makes the field refuse it, and
    load.problem_message says what YAML made of the word the user wrote (`word`, where the file's mapping kept it)."""

    def __init__(self, value: bool, word: str | None) -> None:
        self.value = value
        self.word = word

    def __repr__(self) -> str:
        return self.word or str(self.value).lower()

    def message(self, allowed: str | None = None) -> str:
        """`allowed`: the field's words (a Literal), none of which is yes/no/on/off: quoting would not help."""
        as_bool = str(self.value).lower()
        if allowed is not None:
            return f"got {self!r}, which YAML 1.1 reads as {as_bool}; allowed values: {allowed}"
        if self.word is not None:
            return f"YAML 1.1 reads {self.word} as {as_bool}; quote it: '{self.word}'"
        return f"got {as_bool}, which YAML reads as true/false (as it reads yes, no, on, off); for text, quote it"


def _takes_text_not_bool(annotation: Any) -> bool:
    """Whether a field's type takes text (any, or words of a Literal) and not true/false (model.name, a path)."""
    if annotation is bool or bool in get_args(annotation):
        return False
    words = _takes_words(annotation)
    return words is None or bool(words)


# the texts pydantic's lax mode reads as true or false
_BOOL_WORDS = frozenset({"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes"})


def _quoted_number(value: str, annotation: Any) -> bool:
    words = _takes_words(annotation)
    if words is None or value in words:
        return False
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False  # a word: the field's own error says what it takes


def _quoted_bool(value: str, annotation: Any) -> bool:
    takes_bool = annotation is bool or bool in get_args(annotation)
    return takes_bool and _takes_words(annotation) is not None and value.strip().lower() in _BOOL_WORDS


class _Strict(BaseModel):
    # an infinite or NaN cost, rate or factor is no setting SGLang has: .inf overheads ran the simulator out of
    # memory and .inf conservativeness was used as given (workload.request_rate takes the word 'inf' instead)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, data: Any) -> Any:
        # pydantic reads true as 1 for a number (hardware.count: true served on one GPU): a YAML slip, not a count.
        # Passing the word on makes the number field itself refuse it, so the error names the field. Likewise a
        # quoted number or true/false (tp: "4"), which pydantic's lax mode read as the value: in YAML it is text
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields

        def checked(key: Any, value: Any) -> Any:
            if key not in fields:
                return value
            annotation = fields[key].annotation
            if isinstance(value, bool) and _is_number_not_bool(annotation):
                return str(value).lower()
            if isinstance(value, bool) and _takes_text_not_bool(annotation):
                return YamlBool(value, getattr(data, "bool_words", {}).get(key))
            if isinstance(value, str):
                if _is_number_not_bool(annotation) and _quoted_number(value, annotation):
                    return Quoted(value)
                if _quoted_bool(value, annotation):
                    return Quoted(value)
            return value

        return {key: checked(key, value) for key, value in data.items()}


# the GPU kinds of the hardware catalogue (simperf/hardware/gpus.yaml)
GpuKind = Literal[tuple(gpu_keys())]  # type: ignore[valid-type]
# SGLang's attention backends simperf models, one row each in simperf/capabilities.py
AttentionBackend = Literal[tuple(BACKENDS)]  # type: ignore[valid-type]
# an SGLang release as pip names it: MAJOR.MINOR.PATCH, optionally .postN (0.5.17, 0.5.3.post3)
SGLANG_VERSION = re.compile(r"\d+\.\d+\.\d+(\.post\d+)?")
# SGLang's --schedule-policy values, each one module of simperf/sim/policy/
SchedulePolicyName = Literal[SCHEDULE_POLICIES]  # type: ignore[valid-type]


def _given_path(value: Any) -> Any:
    # Path("") is ".", the scenario's own directory: an empty value read that directory, and the error named it,
    # not the field the user left empty
    if isinstance(value, str) and not value.strip():
        raise ValueError("empty; give a path")
    return value


# a path the user writes in a scenario (relative to the scenario file), never empty
GivenPath = Annotated[Path, BeforeValidator(_given_path)]


def _fraction_not_percent(value: Any) -> Any:
    # range_ratio: 50% got pydantic's 'unable to parse string as a number', and 50 'less than or equal to 1',
    # neither saying the field is a fraction; the bounds stay the field's own (ge/le), checked after this
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            percent = float(value.strip()[:-1])
        except ValueError:
            return value
        raise ValueError(
            f"give a fraction from 0 to 1, not a percentage ({value.strip()} is {percent / 100:g})"
        )
    if isinstance(value, int | float) and not isinstance(value, bool) and 1 < value <= 100:
        raise ValueError(f"give a fraction from 0 to 1 ({value:g}% is {value / 100:g})")
    return value


# a share from 0 to 1 (range ratios, mem_fraction_static): a percentage written for it is named as one
Fraction = Annotated[float, BeforeValidator(_fraction_not_percent)]
# (not `Fraction | None`: the field's bounds would then sit outside the number, and the schema shows them as such)
OptionalFraction = Annotated[float | None, BeforeValidator(_fraction_not_percent)]


class ModelSpec(_Strict):
    name: str = Field(
        description="model zoo entry (see `simperf models`), e.g. deepseek-v3, llama-3.1-8b, or a label when config is given"
    )
    config: GivenPath | None = Field(
        default=None, description="path to a HuggingFace config.json; overrides the zoo entry's architecture"
    )
    weight_dtype: Literal["bf16", "fp8"] | None = Field(
        default=None, description="dtype of the linear weights; default: the zoo entry's (fp8 for DeepSeek)"
    )


# SGLang's host-side work is single-threaded Python, so its costs scale with the host CPU. hardware.host_speed = 1 is
# the host of our H200 runs; the corpus' single-H100 host is this fast against it: DeepSeek-V2-Lite's 1,024-token
# prefill on an idle server, eager (host-bound), took 95.26 ms there against 58.92 ms on the H200 host
# (groundtruth/experiments/extend-host-h100, groundtruth/h200; accuracy/hostcosts.py::single_h100_host_speed
# recomputes it; docs/overheads.md "Hosts" has the checks on other models and a third host).
SINGLE_H100_HOST_SPEED = 0.6185
# hardware.host_speed when a scenario does not say: the host we measured with that GPU kind. Our H200 hosts (one
# and four GPUs) agree within 13%, as do the published H200 deployments' host-bound numbers (docs/overheads.md);
# our single-H100 host is the slow one, and gpustack's published H100 runs price closer at its speed. B200: none
# measured, the H200 hosts' (an assumption).
DEFAULT_HOST_SPEED = {"h100": SINGLE_H100_HOST_SPEED, "h200": 1.0, "b200": 1.0}


class HardwareSpec(_Strict):
    gpu: GpuKind = Field(description="GPU kind from the hardware catalogue")
    count: int = Field(default=1, ge=1, le=1024, description="GPUs serving one replica")
    host_speed: float | None = Field(
        default=None,
        # our hosts span 0.62-1; a tenth or ten times that is no host SGLang runs on
        ge=0.1,
        le=10,
        description="speed of the host CPU that runs SGLang's Python (scheduler, API server, kernel launches) "
        "relative to the host of our H200 runs: each default host-side cost measured on another host is scaled to "
        "this one (Overheads.on_host). Default: the speed of the host we measured with that GPU kind "
        f"(h100: our single-H100 host, {SINGLE_H100_HOST_SPEED}; h200 and b200: 1, our H200 hosts; "
        'docs/overheads.md "Hosts")',
    )

    @property
    def resolved_host_speed(self) -> float:
        return self.host_speed if self.host_speed is not None else DEFAULT_HOST_SPEED.get(self.gpu, 1.0)

    @property
    def host_speed_label(self) -> str:
        """The host speed a prediction uses and where it came from, for reports."""
        where = "given" if self.host_speed is not None else f"default: our host measured with {self.gpu}"
        return f"{self.resolved_host_speed:g} ({where})"


class AcceptLength(_Strict):
    # 1.0 is a real measurement (no draft token accepted, only the bonus token): a draft that does not fit the target
    mean: float = Field(ge=1.0, description="mean accepted tokens per verify step, including the bonus token")
    min: float | None = Field(
        default=None, ge=1.0, description="lowest per-request mean (spread across requests)"
    )
    max: float | None = Field(default=None, description="highest per-request mean")

    @model_validator(mode="after")
    def _spread(self) -> AcceptLength:
        if (self.min is None) != (self.max is None):
            raise ValueError("give both min and max (the spread of per-request means), or neither")
        if self.min is not None and not self.min <= self.mean <= self.max:
            raise ValueError(f"need min <= mean <= max, got min={self.min}, mean={self.mean}, max={self.max}")
        return self


class SpeculativeSpec(_Strict):
    algorithm: Literal["eagle", "eagle3", "mtp"] = Field(
        default="mtp",
        description="--speculative-algorithm (mtp: the checkpoint's own nextn layers, SGLang's NEXTN/EAGLE; only "
        "models that ship them, e.g. DeepSeek-V3/R1; others take eagle or eagle3 with a draft model)",
    )
    num_steps: int = Field(default=3, ge=1, le=16, description="--speculative-num-steps")
    eagle_topk: int = Field(default=1, ge=1, le=16, description="--speculative-eagle-topk")
    num_draft_tokens: int | None = Field(
        default=None,
        ge=2,
        le=64,
        description="--speculative-num-draft-tokens; default: num_steps + 1 (top-1)",
    )
    accept_length: AcceptLength | None = Field(
        default=None, description="measured acceptance (required for a prediction; SGLang logs `accept len`)"
    )

    @model_validator(mode="after")
    def _chain_drafts_num_steps_plus_one(self) -> SpeculativeSpec:
        # SGLang's server_args.py sets speculative_num_draft_tokens to num_steps + 1 when eagle_topk is 1 (with a
        # log warning): another value was costed here as given, a verify the server never runs
        chain = self.num_steps + 1
        if self.eagle_topk == 1 and self.num_draft_tokens not in (None, chain):
            raise ValueError(
                f"num_draft_tokens ({self.num_draft_tokens}): with eagle_topk 1 SGLang sets it to num_steps + 1 "
                f"= {chain}; leave it out, give {chain}, or give eagle_topk > 1 (a draft tree)"
            )
        # SGLang 0.5.17 speculative/eagle_utils.py, organize_draft_results: the tree keeps the num_draft_tokens - 1
        # best of the topk + (num_steps - 1) x topk^2 scored candidates (torch.topk), which fails when asked for more
        candidates = self.eagle_topk + (self.num_steps - 1) * self.eagle_topk**2
        if self.num_draft_tokens is not None and self.num_draft_tokens - 1 > candidates:
            raise ValueError(
                f"num_draft_tokens ({self.num_draft_tokens}): a draft of num_steps {self.num_steps} x eagle_topk "
                f"{self.eagle_topk} scores {candidates} candidates, so SGLang can verify at most {candidates + 1} "
                "tokens (organize_draft_results' topk fails past that); give fewer draft tokens or more steps"
            )
        return self

    @model_validator(mode="after")
    def _accept_length_fits_the_verify(self) -> SpeculativeSpec:
        # a verify step yields the bonus token plus an accepted path of the draft tree: at most num_steps drafts
        # deep and num_draft_tokens - 1 drafts (eagle_utils.py, build_tree_kernel_efficient: the tree holds the
        # bonus token and num_draft_tokens - 1 drafts); a larger accept length was priced as if it were possible
        most = self.num_steps + 1
        if self.num_draft_tokens is not None:
            most = min(most, self.num_draft_tokens)
        accept = self.accept_length
        for key in ("mean", "max"):
            value = None if accept is None else getattr(accept, key)
            if value is not None and value > most:
                raise ValueError(
                    f"accept_length.{key}: {value:g} tokens per verify step is more than a verify can yield: "
                    f"{most} (the bonus token plus at most min(num_steps = {self.num_steps}, num_draft_tokens - 1 "
                    f"= {(self.num_draft_tokens or most) - 1}) drafts)"
                )
        return self


class ServingSpec(_Strict):
    """SGLang server arguments that shape performance. `None` means SGLang's own default rule."""

    sglang_version: str = Field(default="0.5.23", description="selects version-dependent scheduler rules")
    tp: int = Field(default=1, ge=1, description="--tp-size")
    dp_attention: int = Field(
        default=1,
        ge=1,
        description="DP attention ranks: --dp-size N --enable-dp-attention (1: no DP attention)",
    )
    ep: int = Field(default=1, ge=1, description="--ep-size (expert parallel size)")
    page_size: int | None = Field(default=None, ge=1, description="--page-size; default: backend's rule")
    kv_cache_dtype: Literal["auto", "bf16", "fp8_e4m3"] = "auto"
    attention_backend: AttentionBackend | None = Field(default=None, description="--attention-backend")
    prefill_attention_backend: AttentionBackend | None = None
    decode_attention_backend: AttentionBackend | None = None
    chunked_prefill_size: int | None = Field(default=None, description="--chunked-prefill-size; -1 disables")
    max_running_requests: int | None = Field(default=None, ge=1, description="--max-running-requests")
    max_prefill_tokens: int = Field(default=16384, ge=1, description="--max-prefill-tokens")
    max_total_tokens: int | None = Field(
        default=None,
        ge=1,
        description="KV pool size in tokens per DP rank, e.g. from the server's startup log",
    )
    mem_fraction_static: OptionalFraction = Field(
        default=None, gt=0.0, lt=1.0, description="--mem-fraction-static"
    )
    cuda_graph_max_bs: int | None = Field(default=None, ge=1, description="--cuda-graph-max-bs")
    disable_cuda_graph: bool = Field(default=False, description="--disable-cuda-graph (decode runs eagerly)")
    disable_overlap_schedule: bool = Field(default=False, description="--disable-overlap-schedule")
    enable_mixed_chunk: bool = Field(default=False, description="--enable-mixed-chunk")
    enable_metrics: bool = Field(
        default=False,
        description="--enable-metrics (SGLang's Prometheus metrics; off by default): the API server then updates "
        "its histograms for every streamed chunk, which costs Overheads.metrics_us_per_chunk on top of "
        "frontend_us_per_chunk",
    )
    incremental_streaming_output: bool = Field(
        default=False,
        description="--incremental-streaming-output (off by default): each streamed chunk of /generate carries only "
        "its new tokens; without it (SGLang's default) a chunk carries the request's whole output so far, which "
        "costs the API server Overheads.frontend_us_per_streamed_token per token it carries",
    )
    stream_interval: int = Field(
        default=1,
        ge=1,
        description="--stream-interval (SGLang's default 1): a streaming request's output is sent after its first "
        "token and then every this many tokens, and when it finishes (0.5.17 scheduler_components/"
        "output_streamer.py: sent when len(output_ids) % interval == 1); the iterations in between send nothing, "
        "so the API server writes that many fewer chunks, each carrying that many tokens",
    )
    schedule_policy: SchedulePolicyName = "fcfs"
    disable_radix_cache: bool = Field(default=False, description="--disable-radix-cache: no prefix reuse")
    schedule_conservativeness: float = Field(default=1.0, gt=0.0, description="--schedule-conservativeness")
    load_balance_method: Literal["round_robin", "total_requests"] = Field(
        default="round_robin",
        description="--load-balance-method over DP attention ranks; not given: SGLang's auto, round_robin except on a "
        "PD prefill server, which follows each request's random bootstrap room (a uniformly random rank)",
    )
    dsa_prefill_dense_attn_kv_len_threshold: int = Field(
        default=2048,
        ge=0,
        description="SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD (DeepSeek-V3.2): extends whose longest sequence "
        "is at most this many tokens run dense MHA; 0 = never (the sparse-only prefill before sglang PR 12788 on B200)",
    )
    speculative: SpeculativeSpec | None = Field(
        default=None, description="speculative decoding (EAGLE / MTP)"
    )

    @field_validator("sglang_version")
    @classmethod
    def _comparable_version(cls, v: str) -> str:
        # the version-dependent rules compare the first three numbers (sglang_defaults.version_tuple,
        # models/ops._version_le) and the vintage choice a .postN after them (importers/aiconfigurator.version_key);
        # any other text (a word, 0.5, an rc or dev build) would compare as some other release without a word
        if SGLANG_VERSION.fullmatch(v) is None:
            raise ValueError("give an SGLang release such as 0.5.17 or 0.5.3.post3")
        newest, oldest = (
            ".".join(map(str, NEWEST_MODELLED_SGLANG)),
            ".".join(map(str, OLDEST_MODELLED_SGLANG)),
        )
        if version_tuple(v) > NEWEST_MODELLED_SGLANG:
            raise ValueError(
                f"{v} is newer than {newest}, the newest release simperf's rules were read from (its scheduler "
                f"and defaults are not known); give a release from {oldest} to {newest}"
            )
        if version_tuple(v) < OLDEST_MODELLED_SGLANG:
            raise ValueError(
                f"{v} is older than any release simperf models; give a release from {oldest} to {newest}"
            )
        return v

    @field_validator("chunked_prefill_size")
    @classmethod
    def _chunk_positive_or_disabled(cls, v: int | None) -> int | None:
        if v is not None and v != -1 and v < 1:
            raise ValueError("must be a positive token count, or -1 to disable chunked prefill")
        return v

    @model_validator(mode="after")
    def _layout_consistent(self) -> ServingSpec:
        if self.stream_interval > 1 and self.speculative is not None:
            raise ValueError(
                "stream_interval > 1 with speculative decoding is not modelled (a step's several tokens can jump "
                "past the interval's send points); use stream_interval 1"
            )
        if self.enable_mixed_chunk and self.speculative is not None:
            # 0.5.17 server_args.py, check_server_args: `assert not self.enable_mixed_chunk` when a speculative
            # algorithm is set: the server refuses to start, and simperf predicted the pair
            raise ValueError(
                "enable_mixed_chunk: SGLang refuses it with speculative decoding (the server does not start); "
                "drop enable_mixed_chunk or speculative"
            )
        if self.tp % self.dp_attention != 0:
            raise ValueError(f"dp_attention ({self.dp_attention}) must divide tp ({self.tp})")
        self._no_setting_without_effect()
        if self.ep > 1 and self.tp % self.ep != 0:
            raise ValueError(f"ep ({self.ep}) must divide tp ({self.tp})")
        return self

    def _no_setting_without_effect(self) -> None:
        """Settings SGLang accepts and then does not use because of another one: each was costed as if used."""
        if self.enable_mixed_chunk and self.chunked_prefill_size == -1:
            # 0.5.17 scheduler.py: is_mixed_chunk = chunked_prefill_size is not None and enable_mixed_chunk
            raise ValueError(
                "enable_mixed_chunk: has no effect with chunked_prefill_size -1 (SGLang mixes decode rows into "
                "chunked prefills only); drop one of them"
            )
        if self.load_balance_method != "round_robin" and self.dp_attention == 1:
            # SGLang's DP controller balances requests over DP attention ranks; one rank has nothing to balance
            raise ValueError(
                f"load_balance_method: {self.load_balance_method} balances DP attention ranks; dp_attention is 1"
            )
        if self.schedule_policy in ("lpm", "dfs-weight") and self.disable_radix_cache:
            # 0.5.17 managers/schedule_policy.py, SchedulePolicy._validate_and_adjust_policy: a cache-aware policy
            # over a disabled tree cache runs as fcfs (sim/policy/base.make_policy does the same), so it was
            # reported as lpm / dfs-weight while every number was fcfs's
            raise ValueError(
                f"schedule_policy: {self.schedule_policy} orders by cached prefix and runs as fcfs with "
                "disable_radix_cache: true (SGLang falls back); use fcfs, lof or random, or enable the radix cache"
            )
        if self.disable_cuda_graph and self.cuda_graph_max_bs is not None and self.dp_attention == 1:
            # without DP attention the value only sizes the decode graphs (and their memory reserve)
            raise ValueError(
                "cuda_graph_max_bs: has no effect with disable_cuda_graph: true (no decode CUDA graph is "
                "captured); drop one of them"
            )


class RandomDataset(_Strict):
    """bench_serving's `random` dataset: lengths ~ U{max(int(L*r),1) .. L}, input and output independent."""

    kind: Literal["random"] = "random"
    input_len: int = Field(ge=1, description="--random-input-len")
    output_len: int = Field(ge=1, description="--random-output-len")
    range_ratio: Fraction = Field(default=0.0, ge=0.0, le=1.0, description="--random-range-ratio (1 = fixed)")
    length_rule: Literal["compute_random_lens", "sample_random_requests"] = Field(
        default="compute_random_lens",
        description="bench_serving's sampling rule: compute_random_lens (datasets/common.py, recent versions: "
        "outputs >= 1) or sample_random_requests (bench_serving.py of 0.4.x-0.5.5: outputs from int(L*r), "
        "so 0 with the default ratio; prompt lengths not shortened by the tokenizer's special tokens)",
    )


class FixedDataset(_Strict):
    """Every request the same lengths (bench_serving's random with --random-range-ratio 1)."""

    kind: Literal["fixed"] = "fixed"
    input_len: int = Field(ge=1, description="prompt tokens")
    output_len: int = Field(ge=1, description="output tokens")


class TraceDataset(_Strict):
    """A recorded trace replayed as-is, optionally windowed, sampled, re-timed and length-capped (docs/traces.md).

    Transforms apply in this order: window (trace time) -> choose `num_prompts` requests (`sample`) -> re-time
    (`target_rate` / `time_scale`) -> cap lengths (`max_input_len`, `max_output_len`, then the context length).
    """

    kind: Literal["trace"] = "trace"
    path: GivenPath = Field(
        description="simperf JSONL/CSV/Parquet, Mooncake JSONL, Azure CSV or sglang.bench_serving output JSONL"
    )
    use_timestamps: bool = Field(
        default=True, description="replay the trace's arrival times (else use `request_rate`)"
    )
    window_start_s: float = Field(
        default=0.0, ge=0.0, description="skip requests arriving earlier than this, seconds after the first"
    )
    window_s: float | None = Field(
        default=None,
        gt=0.0,
        description="keep only requests arriving within this many seconds of the window start",
    )
    sample: Literal["first", "uniform"] = Field(
        default="first",
        description="which `num_prompts` requests of the window: the first ones, or a uniform random subset "
        "(seeded by `seed`, time order kept)",
    )
    target_rate: float | None = Field(
        default=None, gt=0.0, description="rescale arrival times so the mean request rate is this (req/s)"
    )
    time_scale: float | None = Field(
        default=None,
        gt=0.0,
        description="multiply arrival times by this (2 = half the load; Mooncake's slowdown factor)",
    )
    max_input_len: int | None = Field(default=None, ge=2, description="cap each prompt at this many tokens")
    max_output_len: int | None = Field(default=None, ge=1, description="cap each output at this many tokens")
    run: int | None = Field(
        default=None,
        ge=0,
        description="bench_serving output files: which line (0-based) when the file holds several runs",
    )

    @model_validator(mode="after")
    def _one_timing_transform(self) -> TraceDataset:
        if self.target_rate is not None and self.time_scale is not None:
            raise ValueError("give either target_rate or time_scale, not both")
        if not self.use_timestamps and (self.target_rate is not None or self.time_scale is not None):
            raise ValueError(
                "target_rate/time_scale re-time the trace's timestamps; they need use_timestamps: true"
            )
        return self


DEFAULT_PREFIX_BLOCK_TOKENS = 64  # SharedPrefixDataset.block_tokens unless the shared prompt is shorter


class SharedPrefixDataset(_Strict):
    """bench_serving's `generated-shared-prefix` (gsp): groups of prompts sharing a system prompt.

    Sends num_groups x prompts_per_group requests (bench_serving ignores --num-prompts for it).
    """

    kind: Literal["shared_prefix"] = "shared_prefix"
    num_groups: int = Field(default=64, ge=1, description="--gsp-num-groups")
    prompts_per_group: int = Field(default=16, ge=1, description="--gsp-prompts-per-group")
    system_prompt_len: int = Field(default=2048, ge=1, description="--gsp-system-prompt-len")
    question_len: int = Field(default=128, ge=1, description="--gsp-question-len")
    output_len: int = Field(default=256, ge=1, description="--gsp-output-len")
    range_ratio: Fraction = Field(default=1.0, ge=0.0, le=1.0, description="--gsp-range-ratio")
    ordered: bool = Field(default=False, description="--gsp-ordered: keep group order instead of shuffling")
    block_tokens: int = Field(
        default=DEFAULT_PREFIX_BLOCK_TOKENS,
        ge=1,
        description="tokens per prefix block id; shared prefixes are matched in these units; without one, 64 or "
        "the system prompt's length if that is shorter",
    )

    @model_validator(mode="before")
    @classmethod
    def _default_block_fits_the_prefix(cls, data: Any) -> Any:
        # the default block (64 tokens) never matches a shorter shared prompt (bench_serving's
        # --gsp-system-prompt-len 16): without a block_tokens of their own, such prompts are one block
        if isinstance(data, dict) and "block_tokens" not in data:
            length = data.get("system_prompt_len")
            if (
                isinstance(length, int)
                and not isinstance(length, bool)
                and 1 <= length < DEFAULT_PREFIX_BLOCK_TOKENS
            ):
                return {**data, "block_tokens": length}
        return data

    @model_validator(mode="after")
    def _prefix_holds_a_block(self) -> SharedPrefixDataset:
        # prefixes match in whole blocks: a block longer than the system prompt never matched, and the run reported
        # a 0% prefix hit where SGLang's radix cache would reuse the whole shared prompt
        if self.block_tokens > self.system_prompt_len:
            raise ValueError(
                f"block_tokens ({self.block_tokens}) is longer than system_prompt_len ({self.system_prompt_len}): "
                "no shared prefix could match; give block_tokens at most the system prompt's length"
            )
        return self


class MultiTurnDataset(_Strict):
    """Conversations whose every turn re-sends the previous context (prompts and answers) plus a new message."""

    kind: Literal["multi_turn"] = "multi_turn"
    num_conversations: int = Field(default=100, ge=1, description="conversations")
    turns: int = Field(default=5, ge=1, description="requests per conversation")
    system_prompt_len: int = Field(
        default=0, ge=0, description="a system prompt shared by every conversation"
    )
    input_len: int = Field(ge=1, description="new user tokens per turn")
    output_len: int = Field(ge=1, description="tokens generated per turn")
    range_ratio: Fraction = Field(
        default=1.0, ge=0.0, le=1.0, description="lengths ~ U{max(int(L*r),1)..L}, as bench_serving's random"
    )
    turn_interval_s: float = Field(
        default=10.0, ge=0.0, description="mean time between a conversation's turns (exponential), seconds"
    )
    block_tokens: int = Field(default=64, ge=1, description="tokens per prefix block id")

    @model_validator(mode="after")
    def _interval_between_turns(self) -> MultiTurnDataset:
        # one turn per conversation draws no gap between turns (generators.multi_turn): the interval was accepted
        # and changed nothing
        if self.turns == 1 and "turn_interval_s" in self.model_fields_set:
            raise ValueError(
                "turn_interval_s: spaces a conversation's turns, and turns is 1 (each conversation is one "
                "request); drop it, or give turns >= 2"
            )
        # prefixes match in whole blocks: a block longer than the most a turn re-sends (the system prompt and every
        # earlier turn) never matched, and the run reported a 0% prefix hit where SGLang's radix cache reuses it
        reused = self.system_prompt_len + (self.turns - 1) * (self.input_len + self.output_len)
        if "block_tokens" in self.model_fields_set and self.block_tokens > reused:
            fix = f"give block_tokens at most {reused}" if reused else "drop block_tokens"
            raise ValueError(
                f"block_tokens ({self.block_tokens}) is longer than the most a turn re-sends ({reused} tokens: "
                f"system_prompt_len + (turns - 1) x (input_len + output_len)): no prefix could match; {fix}"
            )
        return self


Dataset = Annotated[
    RandomDataset | FixedDataset | TraceDataset | SharedPrefixDataset | MultiTurnDataset,
    Field(discriminator="kind"),
]


# the workload fields that draw arrival times; a trace replayed with its timestamps uses none of them
ARRIVAL_FIELDS = ("request_rate", "arrival_process", "burstiness")


class WorkloadSpec(_Strict):
    dataset: Dataset = Field(description="bench_serving's dataset: one of the kinds below, chosen by `kind`")
    num_prompts: int = Field(default=1000, ge=1, description="--num-prompts")
    request_rate: float | Literal["inf"] = Field(default="inf", description="mean rate in req/s, or 'inf'")
    arrival_process: Literal["poisson", "gamma"] = Field(
        default="poisson",
        description="gaps between sends: exponential (bench_serving) or gamma with shape `burstiness`",
    )
    burstiness: float = Field(
        default=1.0,
        gt=0.0,
        description="gamma shape k (vLLM's --burstiness): gap CV = 1/sqrt(k); < 1 burstier, 1 = Poisson",
    )
    over_context: Literal["cap", "drop"] = Field(
        default="cap",
        description="requests too long for the model's context: shorten them, or leave them out (counted)",
    )
    max_concurrency: int | None = Field(default=None, ge=1, description="--max-concurrency")
    seed: int = Field(
        default=42,
        ge=0,
        le=2**32 - 1,  # np.random.seed's range: beyond it numpy's own error named no field
        description="--seed (bench_serving uses random.seed and np.random.seed)",
    )
    warmup_requests: int = Field(default=1, ge=0, description="--warmup-requests (not measured)")
    ignore_eos: bool = Field(
        default=True, description="every request generates its output_len (bench_serving)"
    )
    tokenize_prompt: bool = Field(
        default=False,
        description="--tokenize-prompt: the client sends token ids (bench_serving allows it for its random "
        "dataset only). Otherwise it sends text, which SGLang's API server tokenises one request at a time "
        "(overheads.tokenize_us_per_prompt_token)",
    )

    @field_validator("request_rate", mode="before")
    @classmethod
    def _yaml_infinity(cls, v: Any) -> Any:
        # YAML's own infinity (.inf, read as float('inf')) was refused with "got inf; expected a finite number or
        # 'inf'", a message that contradicts itself; it means what the word 'inf' means
        return "inf" if isinstance(v, float) and v == math.inf else v

    @field_validator("request_rate")
    @classmethod
    def _rate_positive(cls, v: float | str) -> float | str:
        if v != "inf" and (not isinstance(v, int | float) or v <= 0 or math.isinf(v)):
            raise ValueError("must be a positive number of requests per second, or 'inf'")
        return v

    @model_validator(mode="after")
    def _generated_counts_agree(self) -> WorkloadSpec:
        if self.arrival_process == "poisson" and self.burstiness != 1.0:
            raise ValueError("burstiness applies to arrival_process: gamma (Poisson is burstiness 1)")
        replayed = isinstance(self.dataset, TraceDataset) and self.dataset.use_timestamps
        if self.arrival_process == "gamma" and self.request_rate == "inf" and not replayed:
            # every request is sent at 0 s whatever the process: the gamma shape changed nothing (a replayed
            # trace's own timestamps are the reason instead, which the next validator says)
            raise ValueError(
                "arrival_process: gamma draws gaps around a finite request_rate; with request_rate 'inf' every "
                "request is sent at once (give a rate, or leave arrival_process out)"
            )
        d = self.dataset
        if "num_prompts" in self.model_fields_set:
            count = None
            if isinstance(d, SharedPrefixDataset):
                count, what = d.num_groups * d.prompts_per_group, "num_groups x prompts_per_group"
            elif isinstance(d, MultiTurnDataset):
                count, what = d.num_conversations * d.turns, "num_conversations x turns"
            if count is not None and count != self.num_prompts:
                raise ValueError(
                    f"num_prompts ({self.num_prompts}) differs from the {d.kind} dataset's {what} ({count}); "
                    "leave num_prompts out or make them equal"
                )
        return self

    @model_validator(mode="after")
    def _trace_times_replace_the_arrival_process(self) -> WorkloadSpec:
        # a trace replayed with its timestamps sends each request at its recorded time: a request_rate (or gamma
        # arrivals) beside it was accepted and changed nothing
        d = self.dataset
        unused = [f for f in ARRIVAL_FIELDS if f in self.model_fields_set]
        if isinstance(d, TraceDataset) and d.use_timestamps and unused:
            raise ValueError(
                f"{', '.join(unused)}: not used: the trace's timestamps set the arrivals (dataset.use_timestamps: "
                "true); re-time them with dataset.target_rate or dataset.time_scale, or set use_timestamps: false"
            )
        return self

    @model_validator(mode="after")
    def _token_ids_only_for_generated_prompts(self) -> WorkloadSpec:
        # bench_serving 0.5.17 asserts `not tokenize_prompt` for its shared-prefix, sharegpt and custom datasets
        # (benchmark/datasets/*.py): their prompts are text
        if self.tokenize_prompt and self.dataset.kind in ("shared_prefix", "multi_turn"):
            raise ValueError(
                f"tokenize_prompt applies to the random, fixed and trace datasets; the {self.dataset.kind} "
                "dataset's prompts are text"
            )
        return self

    @property
    def rate(self) -> float:
        return math.inf if self.request_rate == "inf" else float(self.request_rate)


class ExtendHostTime(NamedTuple):
    """An extend's host time per kernel (Overheads.extend_launch_us): the value, the label reports show (the field,
    and the rank factor where one applies), the Overheads field it comes from, and the rank factor it includes
    with that factor's field (1.0 and None where none applies)."""

    us: float
    label: str
    field: str
    rank_factor: float = 1.0
    rank_field: str | None = None


class Overheads(_Strict):
    """Constant costs that are not kernel timings. Named, documented, and reported (docs/costmodel.md). The host-side
    defaults are CPU times of the host they were measured on (OVERHEAD_HOST_SPEED); the simulator pays them scaled
    to the scenario's host (on_host, hardware.host_speed)."""

    scheduler_us_per_iteration: float = Field(
        default=968.1,
        ge=0,
        description="CPU time to receive, schedule and launch one iteration (measured with process_us_per_iteration "
        "as their sum, 1,452 us: a served decode iteration with the overlap scheduler off less its GPU step, median "
        "of two hosts (1,036 and 1,868 us; docs/overheads.md); the 2 : 1 split between the two is not measured)",
    )
    process_us_per_iteration: float = Field(
        default=484.1,
        ge=0,
        description="CPU time to process one batch's results (append tokens, free KV, stream): a third of the "
        "measured per-iteration CPU time (see scheduler_us_per_iteration)",
    )
    cuda_graph_replay_us: float = Field(
        default=30.0,
        ge=0,
        description="cost of one replay of a prefill (extend) CUDA graph; an estimate (decode replays use the "
        "two measured costs below)",
    )
    # The two below were measured on a profiled served decode (SGLang 0.5.17, Llama-3.1-8B, flashinfer, H100,
    # groundtruth/forwards/h100/served-llama-3.1-8b-decode; docs/overheads.md); a test recomputes them.
    decode_graph_gap_us_per_kernel: float = Field(
        default=0.379,
        ge=0,
        description="GPU idle time between consecutive kernels of a replayed decode CUDA graph, per kernel: a served "
        "decode replay idled 148.9 us over its 420 kernels (1 running request) and 181.9 us over 451 (16); the "
        "tables time kernels alone, without these gaps. Applied to simperf's kernel count (an estimate: 325 for "
        "that step)",
    )
    decode_between_replays_us: float = Field(
        default=68.3,
        ge=0,
        description="GPU time between two decode replays: the sampler's argmax and the next iteration's input "
        "preparation (13 kernels launched eagerly, busy 49-51 us plus 18 us between them), per replay",
    )
    # Measured on the served and one_batch Qwen3-30B-A3B decodes (SGLang 0.5.17, flashinfer, H100,
    # groundtruth/forwards/h100/*qwen3-30b-a3b-decode; accuracy/hostcosts.py::decode_moe_router_us, recomputed by a test).
    decode_moe_router_us: float = Field(
        default=2.69,
        ge=0,
        description="GPU time of SGLang's router top-k kernel (`_router_triton_kernel`: softmax, top-k, renormalise) "
        "per MoE layer of a decode forward, which no table times: 2.62-2.72 us in five profiled Qwen3-30B-A3B decodes "
        "at 1-64 requests (H100); other models' routers and GPUs take it as an estimate",
    )
    # Measured on profiled served EAGLE decodes (SGLang 0.5.17, Llama-3.1-8B with a one-layer draft, flashinfer, H200,
    # groundtruth/forwards/h200/served-llama-3.1-8b-eagle-idle-{chain,tree}; accuracy/hostcosts.py::spec_worker_idle,
    # recomputed by a test; docs/overheads.md "The speculative worker's idle GPU").
    spec_worker_idle_us: float = Field(
        default=1471.5,
        ge=0,
        description="GPU idle per speculative decode iteration while SGLang's EAGLE worker (spec v2) launches, from "
        "the host, the ~50 small kernels between its draft, verify and draft-extend graphs: the unprofiled iteration "
        "less the profiled GPU busy time and its gaps under 5 us, at 1/16/48 running requests on a chain (3, 1, 4) "
        "and SGLang's tree (5, 4, 8) draft: 1.33-2.55 ms; this is the least-squares line's value at no request. "
        "Other models, drafts and tensor-parallel sizes take it as an estimate",
    )
    spec_worker_idle_us_per_running_request: float = Field(
        default=20.65,
        ge=0,
        description="the same idle's growth per running request (the line's slope; see spec_worker_idle_us)",
    )
    spec_draft_topk_us_per_step: float = Field(
        default=84.1,
        ge=0,
        description="GPU time of a draft step's sampling when the draft keeps more than one candidate per step "
        "(--speculative-eagle-topk > 1: softmax over the vocabulary and torch.topk), fixed part per draft step; no "
        "table times these kernels. Measured in the profiled served EAGLE tree decodes (5 steps, top-k 4, Llama-3.1-8B, "
        "H200): 517 / 964 / 2,331 us an iteration at 1 / 16 / 48 running requests, on a line over the rows sampled "
        "(groundtruth/forwards/h200/served-llama-3.1-8b-eagle-idle-tree)",
    )
    spec_draft_topk_us_per_row: float = Field(
        default=2.308,
        ge=0,
        description="the same per row sampled (one per request at the first draft step, top-k per request at each "
        "later one), for Llama-3's 128,256-token vocabulary; another vocabulary scales it by its size (an estimate)",
    )
    spec_launch_wait_us: float = Field(
        default=6230.3,
        ge=0,
        description="how long after the previous batch's GPU work ends SGLang's EAGLE worker (spec v2, overlap "
        "scheduler) returns from launching the next speculative iteration, whose draft and verify inputs it builds "
        "from the host kernel by kernel: the scheduler processes that batch (streams its tokens, a prefill's first "
        "included) only then. Measured in host-side profiles of served Llama-3.1-8B with an EAGLE chain (3, 1, 4) "
        "on an H200 at 1, 16 and 48 requests: 8.56 / 8.86 / 9.48 ms profiled, x 0.703 for the profiler's stretch "
        "of host time (the unprofiled / profiled iteration at 1 request), their median "
        "(accuracy/hostcosts.py::spec_launch_wait, docs/overheads.md). One per launch: it grows neither with the "
        "batch (within 11% over 1-48 requests) nor with the draft's steps (a 4-step top-2 draft waited less than the "
        "3-step chain on one host); it varies about 2x between hosts",
    )
    spec_draft_prefill_host_us: float = Field(
        default=2195.5,
        ge=0,
        description="host time of a speculative server's prefill beyond its tables' GPU time: the draft's prefill "
        "is launched from the host after the target's prefill has ended on the GPU (SGLang 0.5.17 "
        "_draft_extend_for_prefill; 4.4 ms of host for 1.1 ms of GPU work in a profile). Measured as a served "
        "prefill processed later than the same target's without a draft on one H200 host (1,024-token prompts; "
        "5.23 / 7.96 ms on one host, 11.08 / 9.42 ms on another, less the draft's profiled prefill), mean less "
        "spec_launch_wait_us (accuracy/hostcosts.py::spec_draft_prefill_host). Paid once per extend batch",
    )
    eager_launch_us_per_kernel: float | None = Field(
        default=None,
        ge=0,
        description="host time per kernel of a decode step outside CUDA graphs (graphs disabled, or a batch above "
        "the largest graph): the step lasts at least kernels x this. Unset: the eager forward's measured value, "
        "eager_extend_us_per_kernel (_dense for a dense model) with its rank factor: SGLang runs an eager decode "
        "through the same Python per layer as an eager extend, and the decode steps of the same one_batch records "
        "took as long (Qwen3-8B, H100, batch 1: 26.8 ms against the 128-token prefill's 28.2 ms, 437 kernels "
        "each; DeepSeek-V2-Lite, H200: 56.2 ms against 57.75 ms; groundtruth/forwards/)",
    )
    # The three below were measured on the ground-truth corpus (SGLang 0.5.17, H100/H200 hosts, bench_serving on
    # the same host; docs/overheads.md, `simperf groundtruth overheads groundtruth/`); a test recomputes them.
    extend_launch_us_per_kernel: float = Field(
        default=38.9,
        ge=0,
        description="host time per kernel of an extend (prefill) forward: an extend lasts at least kernels x this "
        "(SGLang 0.5.17's breakable prefill CUDA graph with eager attention between segments; measured with the "
        "flashinfer attention backend, used for every backend without its own measurement: a 128-token prompt on "
        "an idle Qwen3-8B H100 server, 18.4 ms from scheduling to processed result, less the scheduler's own "
        "per-iteration costs, over its 437 kernels)",
    )
    extend_launch_us_per_kernel_fa3: float = Field(
        default=21.4,
        ge=0,
        description="the same with SGLang's FA3 attention backend, whose attention is one kernel call per layer "
        "with no per-layer planning (measured the same way: 10.8 ms for the same prompt on the same server "
        "with --attention-backend fa3)",
    )

    eager_extend_us_per_kernel: float = Field(
        default=107.3,
        ge=0,
        description="host time per kernel of an extend forward SGLang runs without a prefill CUDA graph (0.5.17 "
        "disables it for MLA models other than DSA and on a PD decode server): an eager extend lasts at "
        "least kernels x this. Measured with SGLang's own one_batch benchmark on an idle H200: DeepSeek-V2-Lite, "
        "1,024-token prefill, 57.75 ms where its kernels keep the GPU busy 20.0 ms (torch profiler, 742 launches), "
        "over the 538 kernels simperf counts in that forward (groundtruth/forwards/, docs/overheads.md)",
    )
    eager_extend_us_per_kernel_dense: float = Field(
        default=64.5,
        ge=0,
        description="the same for a dense model (no MoE, no MLA), whose layers run less Python per kernel: "
        "Qwen3-8B on an idle H100 with --disable-cuda-graph, 128-token prefill, 28.2 ms where its kernels keep the "
        "GPU busy 7.0 ms (455 launches), over the 437 kernels simperf counts (groundtruth/forwards/)",
    )
    eager_extend_rank_factor: float = Field(
        default=1.697,
        ge=1,
        description="how much longer an eager extend's host time per kernel runs with 4 or more tensor-parallel "
        "ranks than with one (MoE / MLA models): every rank is its own process launching the same kernels and "
        "meeting the others at each collective, so a host-bound forward goes at its slowest rank's pace. Measured "
        "with SGLang 0.5.17's one_batch on DeepSeek-V2-Lite at TP 1 and 4 on two 4xH200 hosts (1.52 and 1.87; TP 2: "
        "0.97, not applied), median over the hosts (groundtruth/forwards/h200x4/, docs/overheads.md); 8 ranks "
        "were not measured and take this value, an estimate",
    )
    eager_extend_rank_factor_tp2: float = Field(
        default=1.497,
        ge=1,
        description="how much longer a served eager extend's host time per kernel runs with 2 (or 3) "
        "tensor-parallel ranks than with one (MoE / MLA models). Measured on served DeepSeek-V2-Lite at TP 1 and 2 "
        "on one 2xH200 host, one request at a time (SGLang 0.5.17's scheduler timestamps, first scheduled to "
        "prefill finished): 1.46 at 1,024-token and 1.54 at 128-token prompts, the median "
        "(groundtruth/h200/deepseek-v2-lite-tp{1,2}-eager, docs/overheads.md). SGLang's one_batch, which runs no "
        "scheduler, had measured 0.97 at 2 ranks; the served forward pays it. Dense models at 2 ranks: not "
        "measured, taken as 1",
    )
    eager_extend_rank_factor_dense: float = Field(
        default=1.219,
        ge=1,
        description="the same for a dense model: Qwen3-8B at TP 1 and 4 on one 4xH200 host (groundtruth/forwards/"
        "h200x4/)",
    )
    process_us_per_running_request: float = Field(
        default=14.5,
        ge=0,
        description="CPU time per request of a batch when the scheduler processes its results and prepares the "
        "next iteration (process_batch_result, stream_output, batch preparation), on top of "
        "process_us_per_iteration. Measured on Qwen3-0.6B (H200, SGLang 0.5.17): slope over 1/128/512 running "
        "requests of the decode iteration with the overlap scheduler off less SGLang's one_batch decode latency "
        "at the same batch size (groundtruth/h200/qwen3-0.6b-no-overlap, groundtruth/forwards/, "
        "docs/overheads.md)",
    )

    # the host-speed factor each default was multiplied by (Overheads.on_host); empty before
    _host_factors: dict[str, float] = PrivateAttr(default_factory=dict)

    def on_host(self, host_speed: float) -> Overheads:
        """These costs on a host `host_speed` times as fast as the reference host (HardwareSpec.host_speed): each
        default host-side cost x (the speed of the host it was measured on / host_speed). A value the scenario
        gives is taken as measured on its own host, and GPU time (GPU_OVERHEADS) and shares (SHARE_OVERHEADS) do not
        depend on the host: they stay as they are."""
        factors: dict[str, float] = {}
        for name in type(self).model_fields:
            if name in self.model_fields_set or name in GPU_OVERHEADS or name in SHARE_OVERHEADS:
                continue
            measured_on = OVERHEAD_HOST_SPEED.get(name, 1.0)
            if measured_on is None:
                continue
            factor = measured_on / host_speed
            if factor != 1.0:
                factors[name] = factor
        scaled = self.model_copy(update={name: getattr(self, name) * f for name, f in factors.items()})
        # model_copy counts updated fields as set; "set" must keep meaning "given in the scenario"
        object.__setattr__(scaled, "__pydantic_fields_set__", set(self.model_fields_set))
        scaled._host_factors = factors
        return scaled

    def host_factor(self, name: str) -> float:
        """What on_host multiplied this cost's default by (1 where it did not)."""
        return self._host_factors.get(name, 1.0)

    def frontend_us_per_chunk_for(self, enable_metrics: bool) -> float:
        """The API server's time per streamed chunk on a server with or without --enable-metrics."""
        return self.frontend_us_per_chunk + (self.metrics_us_per_chunk if enable_metrics else 0.0)

    def frontend_us_per_token_for(self, incremental_streaming: bool) -> float:
        """The API server's time per output token a streamed chunk carries: a cumulative chunk carries the
        request's whole output so far, an incremental one (--incremental-streaming-output) only what is new."""
        return 0.0 if incremental_streaming else self.frontend_us_per_streamed_token

    def for_pd_prefill(self) -> Overheads:
        """A PD prefill server's costs: its first token is not streamed to the client (the client reads the decode
        server), so it pays no egress and its API server streams nothing."""
        return self.model_copy(
            update={
                "egress_us": 0.0,
                "frontend_us_per_chunk": 0.0,
                "metrics_us_per_chunk": 0.0,
                "frontend_us_per_streamed_token": 0.0,
            }
        )

    def for_pd_decode(self) -> Overheads:
        """A PD decode server's costs: it sees a request when its KV lands, not through the tokenizer."""
        return self.model_copy(
            update={
                "ingress_us": 0.0,
                "client_setup_us_per_request": 0.0,
                "client_burst_us_per_request": 0.0,
                "receive_us_per_request": 0.0,
            }
        )

    def ingress_latency_us(self) -> float:
        """ingress_us less the parts a request pays in line with others (client_burst_us_per_request,
        receive_us_per_request), which the client and the API server's queue add (sim/client.py); at least 0."""
        return max(self.ingress_us - self.client_burst_us_per_request - self.receive_us_per_request, 0.0)

    def eager_rank_factor(self, dense_model: bool, tp_ranks: int) -> tuple[float, str | None]:
        """The factor an eager extend's host time per kernel takes at this many tensor-parallel ranks, and its
        field: from EAGER_RANKS_MEASURED ranks up (more ranks take the measured value, an estimate); for an MoE / MLA
        model at EAGER_RANKS_SERVED up to that, the served 2-rank value; 1 below (and for a dense model below 4)."""
        field = eager_rank_field(dense_model, tp_ranks)
        return (1.0, None) if field is None else (getattr(self, field), field)

    def eager_decode_us(self, dense_model: bool = False, tp_ranks: int = 1) -> ExtendHostTime:
        """A decode step's host time per kernel outside CUDA graphs: eager_launch_us_per_kernel where set, else the
        eager forward's measured value (extend_launch_us without a prefill graph; see eager_launch_us_per_kernel)."""
        if self.eager_launch_us_per_kernel is not None:
            field = "eager_launch_us_per_kernel"
            return ExtendHostTime(self.eager_launch_us_per_kernel, field, field)
        return self.extend_launch_us("", prefill_graph=False, dense_model=dense_model, tp_ranks=tp_ranks)

    def extend_launch_us(
        self, attention_backend: str, prefill_graph: bool = True, dense_model: bool = False, tp_ranks: int = 1
    ) -> ExtendHostTime:
        """The extend host time per kernel, the Overheads field it comes from and a label for reports: without a
        prefill CUDA graph the eager value (a dense model's or an MoE / MLA model's) times its rank factor
        (eager_rank_factor, named in the label when it applies); with one the value measured for this attention
        backend (one rank's: how a graphed extend's host time grows with ranks was not measured)."""
        if not prefill_graph:
            field = "eager_extend_us_per_kernel_dense" if dense_model else "eager_extend_us_per_kernel"
            factor, factor_field = self.eager_rank_factor(dense_model, tp_ranks)
            label = (
                field
                if factor_field is None
                else f"{field} x {factor_field} ({factor:.3g}, {tp_ranks} ranks)"
            )
            return ExtendHostTime(getattr(self, field) * factor, label, field, factor, factor_field)
        field = (
            "extend_launch_us_per_kernel_fa3" if attention_backend == "fa3" else "extend_launch_us_per_kernel"
        )
        return ExtendHostTime(getattr(self, field), field, field)

    ingress_us: float = Field(
        default=4459.3,
        ge=0,
        description="client send -> the scheduler's waiting queue on an idle server: client request set-up, HTTP, "
        "API server, ZMQ, the idle scheduler loop picking it up (measured, median of the single-H100 host's "
        "concurrency-1 runs; scaled to the scenario's hardware.host_speed)",
    )
    # The three below were measured on the first bursts of the corpus' closed-loop runs (44 runs with 16+
    # concurrent token-id requests; accuracy/hostcosts.py::first_burst_costs, recomputed by a test).
    client_setup_us_per_request: float = Field(
        default=489.1,
        ge=0,
        description="bench_serving's client sets up the requests of a burst (sent at one instant) one after "
        "another: their send times, from which TTFT counts, are this far apart (median over the first bursts of "
        "the send times' span / (C - 1))",
    )
    client_burst_us_per_request: float = Field(
        default=897.0,
        ge=0,
        description="part of ingress_us: no request of a burst of k reaches the API server before k x this after "
        "the burst's first send (the client's asyncio loop sets up and connects every request before it writes "
        "any); median over the first bursts of (first receive - first send) / k",
    )
    receive_us_per_request: float = Field(
        default=448.2,
        ge=0,
        description="part of ingress_us: the API server receives requests one at a time, this far apart (median "
        "spacing of the server's receive times in the first bursts, 0.26-1.02 ms); a request waits for the ones "
        "before it. The rest of ingress_us is a plain latency",
    )
    finish_us_per_request: float = Field(
        default=1269.1,
        ge=0,
        description="the API server's work on a request after its last chunk is written (the response's end, the "
        "connection's close, its metrics record: every corpus server ran --enable-metrics and "
        "--export-metrics-to-file), on the loop that takes in new requests, one finish and one receipt in turn: "
        "a closed loop's later wave reaches the server this much further apart than its first wave. Median over "
        "the 37 closed-loop corpus runs with later waves that feed defaults of (later waves' receive spacing - "
        "first wave's), -0.14 to 2.36 ms (accuracy/wave_receives.py)",
    )
    tokenize_us_per_prompt_token: float = Field(
        default=2.66,
        ge=0,
        description="SGLang's API server tokenising a text prompt, per prompt token: on its one event loop, so "
        "requests sent together are tokenised one after another (workload.tokenize_prompt: false). Measured: the "
        "received -> dispatched time of the corpus' text-prompt runs less their servers' token-id runs, median "
        "over 8 servers (1.8-3.7 us; docs/overheads.md), with the word-level tokenizer those servers ran: a "
        "model's own BPE tokenizer costs differently (--set overheads.tokenize_us_per_prompt_token=US)",
    )
    egress_us: float = Field(
        default=2832.4,
        ge=0,
        description="a processed batch's token -> the client parsing its chunk: output processing, detokenizer, "
        "API server, HTTP stream (measured, median of the single-H100 host's concurrency-1 runs' first chunks; "
        "scaled to the scenario's hardware.host_speed)",
    )
    frontend_us_per_chunk: float = Field(
        default=19.02,
        ge=0,
        description="the API server's time to write one streamed chunk (one request's output of one iteration), "
        "SGLang's metrics off, before what the chunk carries (frontend_us_per_streamed_token): chunks queue on its "
        "one event loop, so TPOT cannot drop below the streams being served x the time per chunk, and a request's "
        "first chunk waits behind the chunks queued before it (sim/frontend.py). The H200 host's 56.1 us with metrics on "
        "(Qwen3-0.6B, 128 streams, 512 output tokens, where SGLang 0.5.17's API server saturated at the fewest "
        "streams in the corpus: 1 / output tokens per second), taken back to no open request (/ (1 + 128 x "
        "frontend_share_per_open_request)), times the share without metrics measured on two hosts' servers with and "
        "without --enable-metrics (0.716, median of 0.586 and 0.847), less its chunks' 256.5 carried tokens x frontend_us_per_streamed_token "
        "(docs/overheads.md); 0 with that 0 turns the queue off",
    )
    frontend_us_per_streamed_token: float = Field(
        default=0.0670,
        ge=0,
        description="the API server's (and client's) time per output token a streamed chunk carries: SGLang "
        "0.5.17 streams /generate cumulatively unless the server runs --incremental-streaming-output (serving."
        "incremental_streaming_output), so each chunk re-sends its request's whole text and output_ids, rebuilt, "
        "serialised and parsed again, and the API server's per-request state grows with them. Measured on one "
        "host's cumulative server at 256 streams (Qwen3-0.6B, 128-token prompts: 88.5 -> 118.6 us per chunk from "
        "512 to 1,024 outputs, 2.01e-3 of its time per chunk at none per carried token), that share of the H200 "
        "host's time per chunk (docs/overheads.md). An incremental chunk is priced flat: an H200 host's "
        "incremental server did not grow with the output (groundtruth/experiments/output-growth-check-h200)",
    )
    frontend_share_per_open_request: float = Field(
        default=8.67e-4,
        ge=0,
        description="how much the API server's time per chunk (all three parts above) grows per request it holds "
        "open, as a share of its time with none: one host's API-server CPU time per chunk at 64, 128 and 512 "
        "streams of the same paced load (66.2, 64.9, 88.0 us: 60.7 + 0.0526 us per stream, least squares), where "
        "py-spy finds the growth in Python's garbage collector, which traverses every open request's objects "
        "(docs/overheads.md). A share: the same on every host",
    )
    metrics_us_per_chunk: float = Field(
        default=14.33,
        ge=0,
        description="what --enable-metrics (serving.enable_metrics) adds to the API server's time per streamed "
        "chunk: tokenizer_manager.collect_metrics updates Prometheus histograms per request and iteration "
        "(SGLang 0.5.17). The H200 host's 56.1 us with metrics on at 128 streams, taken back to no open request, "
        "less frontend_us_per_chunk: the split is the median of two hosts' servers running the same load with and "
        "without the flag (95.8 vs 56.1 us per chunk at 256 streams, 75.2 vs 63.7 at 128: median TPOT / streams; "
        "docs/overheads.md)",
    )


# The speed (hardware.host_speed) of the host each Overheads default was measured on (docs/overheads.md): a field
# not listed was measured on the H200 host (speed 1); None marks a median over both hosts' runs, which on_host
# leaves as it is (it belongs to neither host).
OVERHEAD_HOST_SPEED: dict[str, float | None] = {
    "extend_launch_us_per_kernel": SINGLE_H100_HOST_SPEED,  # Qwen3-8B, 128-token prompt, single-H100 host
    "extend_launch_us_per_kernel_fa3": SINGLE_H100_HOST_SPEED,
    "eager_extend_us_per_kernel_dense": SINGLE_H100_HOST_SPEED,  # Qwen3-8B eager prefill, single-H100 host
    "ingress_us": SINGLE_H100_HOST_SPEED,  # its concurrency-1 runs
    "egress_us": SINGLE_H100_HOST_SPEED,
    "scheduler_us_per_iteration": None,  # median of the two hosts' overlap-off runs
    "process_us_per_iteration": None,
    "client_setup_us_per_request": None,  # first bursts of both hosts' runs
    "client_burst_us_per_request": None,
    "receive_us_per_request": None,
    "finish_us_per_request": None,  # later waves of both hosts' runs
    "tokenize_us_per_prompt_token": None,  # text-prompt servers of both hosts
    # estimates, not measured on a host
    "cuda_graph_replay_us": None,
    "eager_launch_us_per_kernel": None,
}
# GPU time between kernels and replays (measured on a profiled decode): the same on any host
GPU_OVERHEADS = frozenset(
    {
        "decode_graph_gap_us_per_kernel",
        "decode_between_replays_us",
        "decode_moe_router_us",
        "spec_draft_topk_us_per_step",
        "spec_draft_topk_us_per_row",
    }
)
# shares and ratios, not times: the same on every host (on_host leaves them)
SHARE_OVERHEADS = frozenset(
    {
        "frontend_share_per_open_request",
        "eager_extend_rank_factor",
        "eager_extend_rank_factor_tp2",
        "eager_extend_rank_factor_dense",
    }
)
# the tensor-parallel size the eager rank factors were measured at: applied from there up (8 ranks not measured)
EAGER_RANKS_MEASURED = 4
# the tensor-parallel size the served MoE / MLA factor (eager_extend_rank_factor_tp2) was measured at: 2 and 3 ranks
EAGER_RANKS_SERVED = 2


def eager_rank_field(dense_model: bool, tp_ranks: int) -> str | None:
    """The Overheads field of the eager extend's rank factor at this many tensor-parallel ranks (None: no factor),
    the one place that says which applies where (Overheads.eager_rank_factor, scenario/overheads_read.py)."""
    if tp_ranks >= EAGER_RANKS_MEASURED:
        return "eager_extend_rank_factor_dense" if dense_model else "eager_extend_rank_factor"
    if tp_ranks >= EAGER_RANKS_SERVED and not dense_model:
        return "eager_extend_rank_factor_tp2"
    return None


# Overheads fields whose defaults were measured on the ground-truth corpus (docs/overheads.md, each recomputed by a
# test); the others are estimates. Reports label each cost by this (or as the scenario's own value when given).
MEASURED_OVERHEADS = frozenset(
    {
        "scheduler_us_per_iteration",  # their sum measured; the 2 : 1 split is not (docs/overheads.md)
        "process_us_per_iteration",
        "ingress_us",
        "egress_us",
        "extend_launch_us_per_kernel",
        "extend_launch_us_per_kernel_fa3",
        "eager_extend_us_per_kernel",
        "eager_extend_us_per_kernel_dense",
        "eager_extend_rank_factor",
        "eager_extend_rank_factor_tp2",
        "eager_extend_rank_factor_dense",
        "process_us_per_running_request",
        "frontend_us_per_chunk",
        "metrics_us_per_chunk",
        "frontend_us_per_streamed_token",
        "frontend_share_per_open_request",
        "tokenize_us_per_prompt_token",
        "decode_graph_gap_us_per_kernel",  # on a profiled served decode, not on the corpus' runs
        "decode_between_replays_us",
        "decode_moe_router_us",  # on profiled Qwen3-30B-A3B decodes
        "spec_worker_idle_us",  # on profiled served EAGLE decodes
        "spec_worker_idle_us_per_running_request",
        "spec_draft_topk_us_per_step",  # on the same profiles' tree decodes
        "spec_draft_topk_us_per_row",
        "spec_launch_wait_us",  # host-side profiles of a served EAGLE chain
        "spec_draft_prefill_host_us",  # served EAGLE and plain prefills, each pair on one host
        "client_setup_us_per_request",
        "client_burst_us_per_request",
        "receive_us_per_request",
        "finish_us_per_request",
    }
)


class DisaggregationSpec(_Strict):
    """PD disaggregation (--disaggregation-mode prefill|decode): one prefill server and one decode server, each
    with its own server arguments, KV shipped from prefill to decode over a link (docs/serving-model.md §5)."""

    prefill: ServingSpec = Field(description="server arguments of the prefill server")
    decode: ServingSpec = Field(description="server arguments of the decode server")
    kv_link_gbytes_per_s: float = Field(
        default=50.0, gt=0, description="KV transfer bandwidth per GPU in GB/s (e.g. 400 Gb/s RDMA = 50 GB/s)"
    )
    kv_link_latency_us: float = Field(
        default=50.0, ge=0, description="per-transfer latency (RDMA + bookkeeping)"
    )


class Scenario(_Strict):
    name: str = Field(default="scenario", description="a label for outputs")
    model: ModelSpec
    hardware: HardwareSpec
    serving: ServingSpec = ServingSpec()
    workload: WorkloadSpec
    overheads: Overheads = Overheads()
    disaggregation: DisaggregationSpec | None = Field(
        default=None, description="PD disaggregation: prefill and decode servers (then `serving` is not used)"
    )
    fleet: FleetSpec | None = Field(
        default=None,
        description="many servers behind SGLang's router (docs/fleet.md); `hardware` and `serving` are then "
        "each replica group's defaults (`hardware` is left out where every group gives its own)",
    )
    calibration_dir: GivenPath | None = Field(
        default=None, description="calibration tables; default: the shipped calibration/<gpu>/"
    )

    @model_validator(mode="before")
    @classmethod
    def _fleet_groups_own_hardware(cls, data: object) -> object:
        """A fleet whose every group gives its own hardware uses no top-level hardware: one written there changed
        nothing (a sweep axis over hardware.gpu gave N identical points), yet the field was required. Such a
        fleet now needs none (the first group's stands in for readers of the scenario's own) and refuses one."""
        if not isinstance(data, dict):
            return data
        groups_hardware = fleet_groups_hardware(data)
        if groups_hardware is None:
            return data
        first = groups_hardware[0]
        given = data.get("hardware")
        if given is not None and _hardware_dump(given) != _hardware_dump(first):
            # (the same hardware as the first group's passes: it is what a parsed scenario carries when dumped and
            # read again)
            raise ValueError(
                "hardware: not used: every fleet group gives its own hardware (fleet.<group>[i].hardware); drop "
                "the top-level hardware, or drop the groups' hardware to share it"
            )
        # the stand-in is one that parses: a copy of a wrong group's hardware repeated the group's error at
        # hardware.gpu, a path the user never wrote. Where none parses, the groups' own errors stop the scenario
        # before anything reads the stand-in
        valid = [h for h in groups_hardware if _parses(HardwareSpec, h)]
        return {**data, "hardware": valid[0] if valid else HardwareSpec.model_construct()}

    @property
    def host_overheads(self) -> Overheads:
        """The overheads the simulator pays on this scenario's host (Overheads.on_host at hardware.host_speed)."""
        return self.overheads.on_host(self.hardware.resolved_host_speed)

    @model_validator(mode="after")
    def _gpus_match_layout(self) -> Scenario:
        if self.fleet is not None:
            check_fleet_layout(self)
            return self
        if self.disaggregation is not None:
            if self.serving.model_fields_set:
                # the pair runs disaggregation.prefill and .decode; serving's fields changed nothing
                raise ValueError(
                    f"{unused_serving_fields(self.serving)}: not used with disaggregation, whose servers take "
                    "their arguments from disaggregation.prefill and disaggregation.decode; move them there"
                )
            check_prefill_settings(self.disaggregation.prefill, "disaggregation.prefill")
            check_decode_settings(self.disaggregation.decode, "disaggregation.decode")
            need = self.disaggregation.prefill.tp + self.disaggregation.decode.tp
            if need > self.hardware.count:
                raise ValueError(
                    f"disaggregation needs prefill.tp + decode.tp = {need} GPUs; hardware.count is "
                    f"{self.hardware.count}"
                )
            return self
        if self.serving.tp > self.hardware.count:
            raise ValueError(
                f"serving.tp ({self.serving.tp}) needs at least that many GPUs; hardware.count is {self.hardware.count}"
            )
        return self


def fleet_groups_hardware(data: dict[str, Any]) -> list[Any] | None:
    """A written scenario's fleet groups' hardware blocks, in order, when every group gives one (the scenario then
    needs none of its own); None otherwise, or without a fleet."""
    fleet = data.get("fleet")
    if not isinstance(fleet, dict):
        return None
    # a kind that is not a list (replicas: 1) is the schema's to refuse: it was an internal error here
    kinds = [fleet.get(kind) for kind in ("replicas", "prefill", "decode")]
    groups = [g for listed in kinds if isinstance(listed, list) for g in listed]
    if not groups or not all(isinstance(g, dict) and g.get("hardware") is not None for g in groups):
        return None
    return [g["hardware"] for g in groups]


def _parses(model: type[BaseModel], value: object) -> bool:
    try:
        model.model_validate(value)
    except ValueError:
        return False
    return True


def _hardware_dump(value: object) -> object:
    """A hardware block as plain data, whether written or already parsed (for comparing two of them)."""
    try:
        return HardwareSpec.model_validate(value).model_dump()
    except ValueError:
        return value


def unused_serving_fields(serving: ServingSpec) -> str:
    """The serving fields a scenario wrote, as dotted paths (for an error saying they are not used)."""
    return ", ".join(f"serving.{name}" for name in sorted(serving.model_fields_set))


# the fleet section refers to the server models above, so it is defined in its own module and attached last
from simperf.scenario.fleet import FleetSpec, check_fleet_layout  # noqa: E402

Scenario.model_rebuild()
