"""Whether a published truth row describes the run its scenario predicts: the same model and the same launch flags.

`simperf accuracy` scores a row only against a scenario that runs what the row measured. Two checks:

- the model: the row's model names the scenario's zoo model exactly once normalised (case, an org prefix such as
  `Qwen/`, spaces and underscores as hyphens, a parenthesised note such as `(FP8)`, a `-FP8`/`-BF16` suffix, and a
  re-release with the same config.json, REVISIONS); a weight dtype the row names (`Qwen3-8B-FP8`, `(BF16)`, the
  checkpoint leading backend_flags, `--model-path`, `--quantization fp8`) must be the one the scenario serves.
  `Qwen3-8B-FP8` used to match a bf16 `qwen3-8b` scenario because the names were compared by substring;
- the launch flags: every SGLang flag of the row's backend_flags that simperf reads (simperf.scenario.flags.FLAGS)
  is compared with the scenario as resolved (SGLang's defaults applied), e.g. `--tp 4`, `--attention-backend
  flashinfer`, `--dp 8`, `--enable-dp-attention`; text that is not a flag (`TP=8 EP=1 FP8 (recipe)`) is not read.

Each returns None, or the first difference in words naming the flag (or model) and both values.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simperf.scenario.flags import BY_NAME, SGLANG_ATTENTION_BACKENDS, SPECULATIVE_ALGORITHMS, Flag

if TYPE_CHECKING:
    from simperf.accuracy.truth import TruthRow
    from simperf.scenario.models import Scenario
    from simperf.scenario.resolved import ResolvedServing

# re-releases whose config.json is the zoo entry's (same shapes, same kernels): new weights, the same zoo model
REVISIONS = {"deepseek-r1-0528": "deepseek-r1", "deepseek-v3-0324": "deepseek-v3"}
# a weight dtype as a word ('Qwen3-8B-FP8', '(BF16, FA3 backend)'); not a KV cache's ('BF16 KV'), not fp8_e4m3
_DTYPE_WORD = re.compile(r"(?<![a-z0-9])(fp8|bf16)(?![a-z0-9_])(?!\s*kv)")


def normalise_model(text: str) -> str:
    """'Qwen/Qwen3-8B-FP8' -> 'qwen3-8b-fp8', 'DeepSeek-R1-0528 (FP8)' -> 'deepseek-r1-0528'."""
    name = re.sub(r"\([^)]*\)", " ", text).strip().rstrip("/")
    name = name.rsplit("/", 1)[-1]
    return re.sub(r"[\s_]+", "-", name.strip().lower())


def _base_model(name: str) -> str:
    """A normalised name as the zoo model it is: a checkpoint simperf knows ('llama-3.1-8b-instruct' is
    llama-3.1-8b), else without its dtype suffix, a re-release as the zoo model it shares a config with."""
    from simperf.models.hf_names import ZOO_CHECKPOINTS

    for zoo, by_dtype in ZOO_CHECKPOINTS.items():
        if any(normalise_model(repo) == name for repo in by_dtype.values()):
            return zoo
    base = re.sub(r"-(fp8|bf16)$", "", name)
    return REVISIONS.get(base, base)


def _stated_dtype(text: str) -> str | None:
    """The weight dtype a model text names ('Qwen3-8B-FP8', 'DeepSeek-R1 (FP8)'), None if none or both."""
    found = set(_DTYPE_WORD.findall(text.lower()))
    return found.pop() if len(found) == 1 else None


def model_mismatch(text: str, scenario_model: str, weight_dtype: str, where: str) -> str | None:
    """None if the model text `text` (the row's `where`) is the scenario's model served with `weight_dtype`."""
    name, wanted = normalise_model(text), scenario_model.strip().lower()
    if name != wanted and _base_model(name) != _base_model(wanted):
        return f"the scenario runs {scenario_model}, the row's {where} is {text}"
    stated = _stated_dtype(text)
    if stated is not None and stated != weight_dtype:
        return (
            f"the row's {where} {text} has {stated} weights, the scenario serves {scenario_model} with "
            f"{weight_dtype} weights (model.weight_dtype)"
        )
    return None


def _leading_checkpoint(config: str) -> str | None:
    """The checkpoint backend_flags starts with ('Qwen3-8B-FP8 --attention-backend flashinfer'), if it names a
    zoo model; 'default (BF16, FA3 backend)' or 'TP=8 EP=1' name none."""
    from simperf.models.zoo import zoo_names

    words = config.split()
    if not words or words[0].startswith("-"):
        return None
    return words[0] if _base_model(normalise_model(words[0])) in zoo_names() else None


def row_model_mismatch(row: TruthRow, scenario: Scenario, serving: ResolvedServing) -> str | None:
    """The row's model column, and the checkpoint its backend_flags may lead with, against the scenario's model."""
    found = model_mismatch(row.model, scenario.model.name, serving.weight_dtype, "model")
    lead = _leading_checkpoint(row.config)
    if found is None and lead is not None:
        found = model_mismatch(lead, scenario.model.name, serving.weight_dtype, "backend_flags checkpoint")
    stated = _stated_dtype(row.config)
    if found is None and stated is not None and stated != serving.weight_dtype:
        found = (
            f"the row's backend_flags ({row.config}) say {stated} weights, the scenario serves "
            f"{scenario.model.name} with {serving.weight_dtype} weights (model.weight_dtype)"
        )
    return found


@dataclass(frozen=True)
class RowFlag:
    flag: Flag
    written: str  # the name as the row spells it (--tp for --tp-size)
    text: str  # its value; "" for a switch


def launch_flags(config: str) -> list[RowFlag]:
    """(flag, its text) for each SGLang launch flag simperf reads in a backend_flags text, in order; other words
    and flags are skipped (a source writes notes there too)."""
    try:
        tokens = shlex.split(config)
    except ValueError:  # an unbalanced quote in a note
        tokens = config.split()
    out: list[RowFlag] = []
    i = 0
    while i < len(tokens):
        name, eq, inline = tokens[i].partition("=")
        i += 1
        flag = BY_NAME.get(name) if name.startswith("--") else None
        if flag is None or flag.origin != "launch_server" or flag.ignored:
            continue
        if not flag.takes_value:
            out.append(RowFlag(flag, name, ""))
        elif eq:
            out.append(RowFlag(flag, name, inline))
        elif i < len(tokens) and not tokens[i].startswith("--"):
            out.append(RowFlag(flag, name, tokens[i]))
            i += 1
    return out


def _value(rf: RowFlag) -> Any:
    """The flag's value as SGLang reads it (True for a switch); the text itself if it is no number."""
    try:
        return rf.flag.convert(rf.text) if rf.flag.convert else True
    except ValueError:
        return rf.text


def _given(rf: RowFlag) -> str:
    return f"the row launches with {rf.written} {rf.text}".rstrip()


def _differs(rf: RowFlag, theirs: Any, field: str, ours: Any = None) -> str | None:
    """None if the flag's value (or `ours`, the value read in the scenario's terms) is the scenario's."""
    if (_value(rf) if ours is None else ours) == theirs:
        return None
    return f"{_given(rf)}, the scenario's {field} is {theirs}"


def _backend(rf: RowFlag, phases: dict[str, str]) -> str | None:
    if rf.text in ("nsa", "dsa"):  # DeepSeek-V3.2's kernels are named by --nsa-*-backend
        return None
    names = SGLANG_ATTENTION_BACKENDS
    wanted = names.get(rf.text, rf.text if rf.text in names.values() else None)
    if wanted is None:
        return f"{_given(rf)}, an attention backend simperf does not model"
    for phase, ours in phases.items():
        if ours != wanted:
            return f"{_given(rf)}, the scenario's {phase} attention backend is {ours}"
    return None


def _speculative(rf: RowFlag, serving: ResolvedServing) -> str | None:
    spec = serving.speculative
    if spec is None:
        return f"{_given(rf)}, the scenario does not speculate (serving.speculative)"
    if rf.flag.name == "--speculative-algorithm":
        algorithm = SPECULATIVE_ALGORITHMS.get(rf.text.lower(), rf.text)
        return _differs(rf, spec.algorithm, "serving.speculative.algorithm", algorithm)
    field = rf.flag.name.removeprefix("--speculative-").replace("-", "_")
    return _differs(rf, getattr(spec, field), f"serving.speculative.{field}")


def _data_parallel(flags: list[RowFlag], serving: ResolvedServing) -> str | None:
    """--enable-dp-attention [--dp-size N] against serving.dp_attention (without --dp-size: any DP above 1), and a
    layout given by --tp-size without it (no DP attention)."""
    by_name = {rf.flag.name: rf for rf in flags}
    dp, tp, dp_size = serving.layout.dp_attention, by_name.get("--tp-size"), by_name.get("--dp-size")
    if "--enable-dp-attention" in by_name:
        if dp_size is not None:
            return _differs(dp_size, dp, "serving.dp_attention")
        if dp <= 1:
            return "the row launches with --enable-dp-attention, the scenario has no DP attention (serving.dp_attention)"
        return None
    if dp_size is not None and _value(dp_size) != 1:
        return (
            f"{_given(dp_size)} without --enable-dp-attention (data-parallel replicas in one server), which a "
            "scenario does not model"
        )
    if tp is not None and dp > 1:
        return f"{_given(tp)} and no --enable-dp-attention, the scenario's serving.dp_attention is {dp}"
    return None


_KV_DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "fp8_e4m3": "fp8_e4m3"}


def _resolved_checks(serving: ResolvedServing) -> dict[str, Callable[[RowFlag], str | None]]:
    """Flags compared with what the scenario resolves to (SGLang's default where the scenario leaves one out)."""
    both = {"prefill": serving.prefill_backend, "decode": serving.decode_backend}
    return {
        "--tp-size": lambda rf: _differs(rf, serving.layout.tp, "serving.tp"),
        "--ep-size": lambda rf: _differs(rf, serving.layout.ep, "serving.ep"),
        "--page-size": lambda rf: _differs(rf, serving.page_size, "serving.page_size"),
        "--attention-backend": lambda rf: _backend(rf, both),
        "--prefill-attention-backend": lambda rf: _backend(rf, {"prefill": both["prefill"]}),
        "--decode-attention-backend": lambda rf: _backend(rf, {"decode": both["decode"]}),
        "--quantization": lambda rf: _differs(
            rf,
            serving.weight_dtype,
            "model.weight_dtype",
            "fp8" if rf.text in ("fp8", "w8a8_fp8") else rf.text,
        ),
        "--kv-cache-dtype": lambda rf: (
            None
            if rf.text == "auto"
            else _differs(rf, serving.kv_dtype, "serving.kv_cache_dtype", _KV_DTYPES.get(rf.text, rf.text))
        ),
        "--disable-cuda-graph": lambda rf: _differs(
            rf, serving.cuda_graph_max_bs == 0, "decode without CUDA graphs"
        ),
        "--disable-overlap-schedule": lambda rf: _differs(
            rf, not serving.overlap_schedule, "disable_overlap_schedule"
        ),
        "--disable-radix-cache": lambda rf: _differs(rf, serving.disable_radix_cache, "disable_radix_cache"),
        "--enable-mixed-chunk": lambda rf: _differs(rf, serving.enable_mixed_chunk, "enable_mixed_chunk"),
        "--enable-metrics": lambda rf: _differs(rf, serving.enable_metrics, "enable_metrics"),
        "--schedule-policy": lambda rf: _differs(rf, serving.schedule_policy, "serving.schedule_policy"),
    }


def _scenario_field(rf: RowFlag, scenario: Scenario, serving: ResolvedServing) -> str | None:
    """A flag with a scenario field (simperf.scenario.flags.FLAGS' path) against what the scenario gives there, or
    where it leaves the field out, against SGLang's default as resolved (a server without DP attention: with it,
    SGLang splits the budgets over the ranks)."""
    path = rf.flag.path or ""
    node: Any = scenario
    for part in path.split("."):
        node = getattr(node, part, None)
    if node is None and serving.layout.dp_attention == 1:
        node = getattr(serving, path.rsplit(".", 1)[-1], None)
    if node is None:
        return f"{_given(rf)}, the scenario leaves {path} to SGLang's default"
    return _differs(rf, node, path)


def row_flags_mismatch(row: TruthRow, scenario: Scenario, serving: ResolvedServing) -> str | None:
    """The first launch flag of the row's backend_flags that the scenario does not run, in words."""
    if scenario.disaggregation is not None:  # two servers: the row's one command line names neither
        return None
    flags = launch_flags(row.config)
    checks = _resolved_checks(serving)
    for rf in flags:
        name = rf.flag.name
        if name == "--model-path":
            found = model_mismatch(rf.text, scenario.model.name, serving.weight_dtype, rf.written)
        elif name in checks:
            found = checks[name](rf)
        elif name.startswith("--speculative-"):
            found = _speculative(rf, serving)
        elif rf.flag.path is not None and rf.flag.path.startswith("serving."):
            found = _scenario_field(rf, scenario, serving)
        else:  # --dp-size, --enable-dp-attention (below), and flags of no one field
            found = None
        if found is not None:
            return found
    return _data_parallel(flags, serving)
