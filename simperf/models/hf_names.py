"""Zoo entries <-> the public HuggingFace checkpoints SGLang would load for them.

Used both ways: `--model-path Qwen/Qwen3-8B-FP8` finds the zoo entry (and its weight dtype), and a plan's launch
command names the checkpoint (`--model-path deepseek-ai/DeepSeek-R1`). A checkpoint that stores fp8 weights is
listed under "fp8"; for a bf16 checkpoint served with fp8 weights SGLang quantises online (`--quantization fp8`).
"""

from __future__ import annotations

from dataclasses import dataclass

# zoo name -> {weight dtype: HF repo id}
ZOO_CHECKPOINTS: dict[str, dict[str, str]] = {
    "deepseek-r1": {"fp8": "deepseek-ai/DeepSeek-R1"},
    "deepseek-v3": {"fp8": "deepseek-ai/DeepSeek-V3"},
    "deepseek-v3.2": {"fp8": "deepseek-ai/DeepSeek-V3.2"},
    "llama-2-7b": {"bf16": "meta-llama/Llama-2-7b-hf"},
    "llama-3.1-8b": {"bf16": "meta-llama/Llama-3.1-8B-Instruct"},
    "llama-3.1-70b": {"bf16": "meta-llama/Llama-3.1-70B-Instruct"},
    "qwen3-0.6b": {"bf16": "Qwen/Qwen3-0.6B"},
    "qwen3-8b": {"bf16": "Qwen/Qwen3-8B", "fp8": "Qwen/Qwen3-8B-FP8"},
    "qwen3-32b": {"bf16": "Qwen/Qwen3-32B", "fp8": "Qwen/Qwen3-32B-FP8"},
    "qwen3-30b-a3b": {"bf16": "Qwen/Qwen3-30B-A3B", "fp8": "Qwen/Qwen3-30B-A3B-FP8"},
    "qwen3-235b-a22b": {"bf16": "Qwen/Qwen3-235B-A22B", "fp8": "Qwen/Qwen3-235B-A22B-FP8"},
}


@dataclass(frozen=True)
class Checkpoint:
    repo: str  # HF repo id, or the zoo name when simperf knows no public checkpoint for it
    quantization: str | None  # SGLang's --quantization when the checkpoint's dtype is not the one served


def zoo_entry_for_repo(repo: str) -> tuple[str, str | None] | None:
    """(zoo name, weight dtype the checkpoint stores) for a HF repo id simperf knows, else None."""
    wanted = repo.strip().rstrip("/").lower()
    for name, by_dtype in ZOO_CHECKPOINTS.items():
        for dtype, known in by_dtype.items():
            if known.lower() == wanted:
                return name, dtype
    return None


def checkpoint_for(zoo_name: str, weight_dtype: str) -> Checkpoint:
    """The checkpoint a launch command loads to serve `zoo_name` with `weight_dtype` weights."""
    by_dtype = ZOO_CHECKPOINTS.get(zoo_name, {})
    if weight_dtype in by_dtype:
        return Checkpoint(by_dtype[weight_dtype], None)
    if by_dtype:
        stored = next(iter(by_dtype.values()))
        return Checkpoint(stored, weight_dtype if weight_dtype == "fp8" else None)
    return Checkpoint(zoo_name, "fp8" if weight_dtype == "fp8" else None)
