"""Parallel layouts SGLang can launch for a model: TP / DP-attention / EP against heads, KV heads, widths, experts.

SGLang asserts these when it builds the model (0.5.17, python/sglang/srt/): attention heads split evenly over the
attention TP group (`models/llama.py`, `models/qwen3.py`: `total_num_heads % attn_tp_size == 0`; MLA
`models/deepseek_v2.py`: `num_heads % attn_tp_size == 0`); GQA KV heads are split when there are at least as many
as attention TP ranks (`total_num_kv_heads % attn_tp_size == 0`) and replicated otherwise
(`attn_tp_size % total_num_kv_heads == 0`, `layers/linear.py::QKVParallelLinear`); the dense MLP's intermediate
size splits over TP (`layers/linear.py`, `divide(output_size, tp_size)`); routed experts split over EP and the
expert width over TP / EP (`layers/moe/fused_moe_triton/layer.py`: `num_routed % moe_ep_size == 0`,
`intermediate_size % moe_tp_size == 0`). A layout that breaks one would not start, so it is refused rather than
predicted with fractional heads.
"""

from __future__ import annotations

from simperf.capabilities import FAMILIES
from simperf.models.arch import ModelArch

MAX_TP_LISTED = 64


class LayoutError(ValueError):
    """A TP/DP/EP layout SGLang cannot launch for this model; names the field and the allowed values."""


def _is_mla(arch: ModelArch) -> bool:
    return arch.kv_lora_rank > 0


def layout_problems(arch: ModelArch, tp: int, dp_attention: int, ep: int) -> list[str]:
    """What SGLang would assert on, as readable reasons (empty: the layout can be launched)."""
    problems = []
    attn_tp = tp // dp_attention
    if arch.num_heads % attn_tp:
        problems.append(f"attention TP {attn_tp} does not divide the {arch.num_heads} attention heads")
    kv = arch.num_kv_heads
    if not _is_mla(arch) and kv > 0:
        if kv >= attn_tp and kv % attn_tp:
            problems.append(f"attention TP {attn_tp} does not divide the {kv} KV heads")
        elif kv < attn_tp and attn_tp % kv:
            problems.append(f"the {kv} KV heads cannot be replicated evenly over attention TP {attn_tp}")
    dense_mlp = arch.num_routed_experts == 0 or arch.num_dense_layers > 0
    if dense_mlp and arch.intermediate_size % tp:
        problems.append(f"tp {tp} does not divide the dense MLP width {arch.intermediate_size}")
    if arch.num_routed_experts:
        if arch.num_routed_experts % ep:
            problems.append(f"ep {ep} does not divide the {arch.num_routed_experts} routed experts")
        moe_tp = tp // ep
        if arch.moe_intermediate_size % moe_tp:
            problems.append(f"tp/ep {moe_tp} does not divide the expert width {arch.moe_intermediate_size}")
    return problems


def allowed_tp(arch: ModelArch, dp_attention: int, ep: int, limit: int = MAX_TP_LISTED) -> list[int]:
    return [
        t
        for t in range(dp_attention, limit + 1, dp_attention)
        if (ep == 1 or t % ep == 0) and not layout_problems(arch, t, dp_attention, ep)
    ]


def check_layout(arch: ModelArch, tp: int, dp_attention: int, ep: int, field: str = "serving") -> None:
    check_parallel_kinds(arch, dp_attention, ep, field)
    problems = layout_problems(arch, tp, dp_attention, ep)
    if not problems:
        return
    allowed = allowed_tp(arch, dp_attention, ep)
    others = f"dp_attention={dp_attention}, ep={ep}"
    raise LayoutError(
        f"{field}.tp: {tp} cannot serve {arch.name}: {'; '.join(problems)}; allowed tp with {others}: "
        f"{', '.join(map(str, allowed)) or 'none'}"
    )


def check_parallel_kinds(arch: ModelArch, dp_attention: int, ep: int, field: str = "serving") -> None:
    """EP and DP attention only where the model has them: on a dense model ep was accepted and changed nothing,
    and DP attention was predicted for families SGLang does not offer it for (the plan never proposes either)."""
    if ep > 1 and not arch.is_moe:
        raise LayoutError(
            f"{field}.ep: {ep} has no effect on {arch.name}, which has no routed experts (a dense model); "
            "use ep: 1"
        )
    if dp_attention > 1 and not arch.caps.dp_attention:
        offered = ", ".join(
            a for caps in FAMILIES.values() if caps.dp_attention for a in caps.hf_architectures
        )
        raise LayoutError(
            f"{field}.dp_attention: {dp_attention}: SGLang offers DP attention for {offered} "
            f"(--enable-dp-attention help, 0.5.17), not for {arch.name} ({arch.caps.name}); use dp_attention: 1"
        )


def idle_gpus(count: int, used: int) -> str | None:
    """A note when the hardware has GPUs the layout leaves unused (one server uses tp GPUs)."""
    if count <= used:
        return None
    return f"{count - used} of {count} (hardware.count); the prediction is for one server on {used}"
