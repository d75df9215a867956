"""The configurations a one-shot plan tries: SGLang's layout rules, backends the GPU runs, MTP, PD disaggregation.

Every candidate is a change to a base scenario (hardware, serving or disaggregation fields), so it is simulated by
the same pipeline as any scenario. What is generated, and why (SGLang 0.5.17, sglang/srt/server_args.py):

- one replica spans at most one node (GPUS_PER_NODE); its GPU count divides the budget; TP = the replica's GPUs
  (simperf models TP over one NVLink domain; pipeline and cross-node TP are not modelled);
- DP attention (`--enable-dp-attention --dp-size = --tp-size`, as its help text asks) for the model families SGLang
  enables it for (DeepSeek-V2/V3 and Qwen2/3 MoE), and only when the attention heads split evenly over the
  remaining attention-TP ranks;
- EP (`--ep-size = --tp-size`) for MoE models whose routed experts split evenly;
- every attention backend `simperf backends` lists as usable on this GPU for this model (SGLang's default first);
- MTP (SGLang's EAGLE on the checkpoint's nextn layer) on and off for checkpoints that have one;
- one prefill + one decode server (the PD pair simperf models) when two replicas fit the budget.

A layout whose weights do not fit the GPU is dropped here with resolve()'s reason, before any simulation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simperf.hardware.catalog import get_gpu
from simperf.models.arch import ModelArch
from simperf.scenario.backend_matrix import backend_options

GPUS_PER_NODE = 8  # HGX H100/H200/B200 baseboards hold 8 GPUs on one NVLink switch
# SGLang's documented MTP setting for DeepSeek (docs: "--speculative-algorithm EAGLE --speculative-num-steps 3
# --speculative-eagle-topk 1 --speculative-num-draft-tokens 4")
MTP_SETTINGS = {"algorithm": "mtp", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}


@dataclass(frozen=True)
class Layout:
    tp: int
    dp_attention: int = 1
    ep: int = 1

    def label(self) -> str:
        parts = [f"TP{self.tp}"]
        if self.dp_attention > 1:
            parts.append(f"DP{self.dp_attention}-attn")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        return " ".join(parts)

    def serving(self) -> dict[str, Any]:
        return {"tp": self.tp, "dp_attention": self.dp_attention, "ep": self.ep}


@dataclass(frozen=True)
class PlanCandidate:
    label: str  # human-readable, e.g. "TP8 DP8-attn EP8 flashmla MTP"
    kind: str  # "aggregated" | "disaggregated"
    gpus_per_replica: int
    changes: dict[str, Any]  # dotted scenario field -> value, laid over the base scenario
    columns: dict[str, Any] = field(default_factory=dict)  # descriptive columns of the result table


@dataclass
class CandidateSet:
    candidates: list[PlanCandidate]
    skipped: list[tuple[str, str]]  # (what, why) layouts not simulated


def replica_sizes(total_gpus: int) -> list[int]:
    return [g for g in (1, 2, 4, 8, 16, 32) if g <= min(total_gpus, GPUS_PER_NODE) and total_gpus % g == 0]


def layouts(arch: ModelArch, gpus: int) -> list[Layout]:
    """TP over the replica's GPUs, with DP attention and EP where SGLang offers them for this model."""
    out = [Layout(gpus)]
    if gpus == 1:
        return out
    dp_ok = arch.caps.dp_attention  # ServerArgs.enable_dp_attention help (0.5.17)
    ep_ok = arch.is_moe and arch.num_routed_experts % gpus == 0
    for dp in (1, gpus) if dp_ok else (1,):
        if arch.num_heads % (gpus // dp):
            continue  # heads must split evenly over attention-TP ranks
        for ep in (1, gpus) if ep_ok else (1,):
            layout = Layout(gpus, dp, ep)
            if layout not in out:
                out.append(layout)
    return out


def backend_choices(arch: ModelArch, gpu_key: str) -> list[tuple[str | None, dict[str, Any]]]:
    """(attention_backend or None for SGLang's default, extra serving fields it needs), default first."""
    options = [o for o in backend_options(arch, get_gpu(gpu_key)) if o.usable]
    default = next((o for o in options if o.default_for == "prefill and decode"), None)
    choices: list[tuple[str | None, dict[str, Any]]] = [(None, {})]
    for o in options:
        if o is default or (default is None and o.default_for):
            continue
        needs = {"kv_cache_dtype": "fp8_e4m3"} if o.needs else {}
        choices.append((o.backend, needs))
    return choices


def _default_backend_name(arch: ModelArch, gpu_key: str) -> str:
    options = [o for o in backend_options(arch, get_gpu(gpu_key)) if o.usable and o.default_for]
    return "/".join(dict.fromkeys(o.backend for o in options)) or "default"


def _fits(base: dict[str, Any], changes: dict[str, Any]) -> str | None:
    """resolve()'s refusal (weights do not fit, a backend SGLang refuses), or None."""
    from simperf.scenario.load import ScenarioError, parse_scenario
    from simperf.scenario.resolve import resolve
    from simperf.sweep.paths import with_values

    try:
        scenario = parse_scenario(with_values(base, changes), "candidate")
        if scenario.disaggregation is None:
            resolve(scenario)
    except (ScenarioError, ValueError) as e:
        return str(e).splitlines()[-1].strip()
    return None


def aggregated(
    arch: ModelArch, gpu_key: str, total_gpus: int, base: dict[str, Any], mtp_accept: float
) -> CandidateSet:
    result = CandidateSet([], [])
    if total_gpus > GPUS_PER_NODE:
        result.skipped.append(
            (
                f"TP{total_gpus} (one server over {total_gpus} GPUs)",
                "spans nodes: cross-node TP is not modelled",
            )
        )
    default_name = _default_backend_name(arch, gpu_key)
    mtp_options = [False, True] if arch.num_nextn_predict_layers > 0 else [False]
    for gpus in replica_sizes(total_gpus):
        for layout in layouts(arch, gpus):
            serving = layout.serving()
            why = _fits(base, {"hardware.count": gpus, "serving": serving})
            if why:
                result.skipped.append((layout.label(), why))
                continue
            for backend, needs in backend_choices(arch, gpu_key):
                for mtp in mtp_options:
                    spec = {**MTP_SETTINGS, "accept_length": {"mean": mtp_accept}} if mtp else None
                    fields = {**serving, "attention_backend": backend, **needs, "speculative": spec}
                    name = backend or f"{default_name} (default)"
                    label = f"{layout.label()} {name}" + (" MTP" if mtp else "")
                    result.candidates.append(
                        PlanCandidate(
                            label,
                            "aggregated",
                            gpus,
                            {
                                "hardware.count": gpus,
                                "serving": {k: v for k, v in fields.items() if v is not None},
                            },
                            {"kind": "aggregated", "layout": layout.label(), "backend": name, "mtp": mtp},
                        )
                    )
    return result


def disaggregated(arch: ModelArch, gpu_key: str, total_gpus: int, base: dict[str, Any]) -> CandidateSet:
    """One prefill server (TP, SGLang's defaults) and one decode server (each layout) per replica pair."""
    result = CandidateSet([], [])
    for gpus in replica_sizes(total_gpus):
        if 2 * gpus > total_gpus:
            continue
        prefill = Layout(gpus)
        if _fits(base, {"hardware.count": gpus, "serving": prefill.serving()}):
            continue  # the aggregated pass already reported why this size does not fit
        for decode in layouts(arch, gpus):
            if _fits(base, {"hardware.count": gpus, "serving": decode.serving()}):
                continue
            label = f"1P1D: prefill {prefill.label()} + decode {decode.label()}"
            changes = {
                "hardware.count": 2 * gpus,
                "disaggregation": {"prefill": prefill.serving(), "decode": decode.serving()},
            }
            columns = {"kind": "disaggregated", "layout": label.removeprefix("1P1D: "), "backend": "default",
                       "mtp": False}  # fmt: skip
            result.candidates.append(PlanCandidate(label, "disaggregated", 2 * gpus, changes, columns))
    return result


def generate_candidates(
    arch: ModelArch,
    gpu_key: str,
    total_gpus: int,
    base: dict[str, Any],
    mtp_accept: float,
    disagg: bool = True,
) -> CandidateSet:
    agg = aggregated(arch, gpu_key, total_gpus, base, mtp_accept)
    if not disagg:
        return agg
    pd = disaggregated(arch, gpu_key, total_gpus, base)
    return CandidateSet(agg.candidates + pd.candidates, agg.skipped + pd.skipped)
