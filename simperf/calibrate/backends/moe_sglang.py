"""SGLang's own Triton fused MoE (`fused_experts_impl`), called the way its Triton MoE runner calls it: table backend
`sglang_fused_moe`.

simperf's `triton_fused_moe` tables time a kernel written here to follow SGLang's structure, with tiles tuned by
simperf's own search. This group times SGLang's code itself (SGLang 0.5.17,
srt/layers/moe/moe_runner/triton_utils/fused_moe.py): its align kernel (sgl_kernel `moe_align_block_size`), its
per-token-group fp8 quantisation, its two `fused_moe_kernel` launches, SiLU·mul and `moe_sum_reduce`, with the
tile configuration SGLang itself picks for the batch (`try_get_optimal_moe_config`: the tuned JSON SGLang ships for
this expert count, width and GPU, else `get_default_config`). The chosen tiles and where they came from are
recorded in the row's timing_method.

Call: `fused_experts_impl(hidden [m, k] bf16, w1 [E, 2n, k], w2 [E, k, n], topk_weights [m, topk] fp32,
topk_ids [m, topk] int32, inplace=True, activation="silu", use_fp8_w8a8=fp8, w1_scale [E, 2n/128, k/128],
w2_scale [E, k/128, n/128], block_shape=[128, 128] for fp8, filter_expert=False)`: EP 1 only (every expert
local, as `filter_expert` is False there in SGLang); other layouts are recorded unsupported. In place, as the
DeepSeek / Qwen MoE layers run it (the out-of-place path allocates its output from the tensor-parallel group's
symmetric-memory pool, which needs a distributed set-up this single-GPU timing does not have).

SGLang reads two switches from its published server arguments (`get_exec()`): deterministic inference (default
off) and the fused sum+all-reduce (default off). Outside a server nothing is published, so both are read as
their defaults through a stand-in, and the timing method says so.

m, routing (uniform top-k, optionally with fused shared experts), the weights-out-of-L2 rotation over several
routing draws and the timing by CUDA-graph replay are those of backends/moe_triton.py, so the two tables differ
only in the kernel.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from simperf.calibrate.backends.common import probed_once
from simperf.calibrate.measure import Measurement, Unsupported

BACKEND = "sglang_fused_moe"
_CACHE_KEY = "sglang_fused_moe_module"
_FUSED_MOE = "sglang.srt.layers.moe.moe_runner.triton_utils.fused_moe"
_CONFIG = "sglang.srt.layers.moe.moe_runner.triton_utils.fused_moe_triton_config"
# SGLang ServerArgs defaults of the two switches the kernel path reads (0.5.17 server_args.py)
_EXEC_DEFAULTS = SimpleNamespace(
    deterministic=SimpleNamespace(enable_deterministic_inference=False),
    moe=SimpleNamespace(enable_fused_moe_sum_all_reduce=False),
)
FP8_BLOCK = [128, 128]


class KernelUnavailable(RuntimeError):
    """SGLang's fused MoE did not import (SGLang's kit not on PYTHONPATH): the point failed."""


def load_sglang(ctx: Any) -> tuple[Any, Any, str]:
    """(fused_moe module, config module, version label); KernelUnavailable with a one-line reason if SGLang does
    not import. Remembered in ctx.cache: one import attempt per worker."""

    def load() -> tuple[Any, Any, str]:
        import importlib

        import sglang

        fused, config = importlib.import_module(_FUSED_MOE), importlib.import_module(_CONFIG)
        version = f"sglang {getattr(sglang, '__version__', 'unknown')}"
        return fused, config, version + _publish_defaults(fused, config)

    return probed_once(
        ctx,
        _CACHE_KEY,
        load,
        "SGLang's fused MoE does not import; needs SGLang's kit on PYTHONPATH",
        KernelUnavailable,
    )


def _publish_defaults(fused: Any, config: Any) -> str:
    """Where no server published its arguments, read SGLang's defaults for the two switches (see module doc)."""
    try:
        fused.get_exec().moe.enable_fused_moe_sum_all_reduce  # noqa: B018 - probes whether args are published
        return ""
    except ValueError:
        fused.get_exec = config.get_exec = lambda: _EXEC_DEFAULTS
        return " (server defaults: deterministic off, fused sum-all-reduce off)"


def sglang_config(config_mod: Any, point: dict[str, Any], fp8: bool) -> tuple[dict[str, Any], str]:
    """The tile configuration SGLang picks for this batch and where it came from ('tuned json' / 'default')."""
    experts, n, k, m, topk = (int(point[c]) for c in ("experts_per_rank", "n", "k", "m", "topk"))
    dtype = "fp8_w8a8" if fp8 else None
    block = FP8_BLOCK if fp8 else None
    tuned = config_mod.get_moe_configs(experts, n, dtype, *(block or (0, 0)))
    cfg = config_mod.try_get_optimal_moe_config(
        (experts, 2 * n, k), (experts, k, n), topk, dtype, m, block_shape=block
    )
    if isinstance(cfg, tuple):  # some releases return (config, down config)
        cfg = cfg[0]
    return dict(cfg), "tuned json" if tuned else "default"


def config_label(cfg: dict[str, Any]) -> str:
    """BM16_BN64_BK128_G1_W4_S3, as backends/moe_triton.py labels its tiles."""
    return "BM{}_BN{}_BK{}_G{}_W{}_S{}".format(
        cfg.get("BLOCK_SIZE_M"),
        cfg.get("BLOCK_SIZE_N"),
        cfg.get("BLOCK_SIZE_K"),
        cfg.get("GROUP_SIZE_M", 1),
        cfg.get("num_warps", 4),
        cfg.get("num_stages", 3),
    )


def _weights(point: dict[str, Any], ctx: Any) -> Any:
    """The current shape's weights (MoeWeights): simperf's kernel's, kept across the points that share the shape
    (allocation is the slow part)."""
    from simperf.calibrate.backends.moe_triton import _cached_weights

    return _cached_weights(point, ctx)


def _launchers(fused: Any, point: dict[str, Any], weights: Any, fp8: bool) -> list[Any]:
    """One launch per routing draw: backends/moe_triton.py's draws (enough to push the weights out of L2), whose
    slot maps at EP 1 are the top-k expert ids themselves."""
    import torch

    from simperf.calibrate.backends.moe_triton import _routing_sets
    from simperf.calibrate.timing import random_tensor

    m, k, topk = int(point["m"]), int(point["k"]), int(point["topk"])
    launchers = []
    for slots in _routing_sets(point, weights):
        topk_ids = slots.view(m, topk)
        topk_weights = torch.rand(m, topk, device="cuda", dtype=torch.float32)
        x = random_tensor((m, k), torch.bfloat16, scale=0.01)

        def launch(x=x, ids=topk_ids, tw=topk_weights) -> None:
            fused.fused_experts_impl(
                x,
                weights.w13,
                weights.w2,
                tw,
                ids,
                inplace=True,
                activation="silu",
                use_fp8_w8a8=fp8,
                w1_scale=weights.s13,
                w2_scale=weights.s2,
                block_shape=FP8_BLOCK if fp8 else None,
                filter_expert=False,
            )

        launchers.append(launch)
    return launchers


def run_point(point: dict[str, Any], ctx: Any) -> Measurement | None:
    from dataclasses import replace

    from simperf.calibrate.timing import time_graph_replay

    if point["backend"] != BACKEND:
        raise Unsupported(f"moe_sglang group does not measure backend {point['backend']!r}")
    if int(point["experts_per_rank"]) != int(point["num_experts"]):
        raise Unsupported("SGLang's Triton runner under expert parallelism is not timed here (EP 1 only)")
    if point["dtype"] not in ("bf16", "fp8_block"):
        raise Unsupported(f"dtype {point['dtype']!r}: SGLang's block-fp8 (w8a8 128x128) or bf16 experts only")
    fp8 = point["dtype"] == "fp8_block"
    if fp8 and (int(point["n"]) % 128 or int(point["k"]) % 128):
        raise Unsupported("block-fp8 weights need n and k multiples of 128 (SGLang refuses others)")
    fused, config_mod, version = load_sglang(ctx)
    if ctx.sm_major is not None and ctx.sm_major != 9:
        raise Unsupported("timed on Hopper only (SGLang's SM100 DeepSeek default is flashinfer_trtllm)")
    cfg, source = sglang_config(config_mod, point, fp8)
    weights = _weights(point, ctx)
    measured = time_graph_replay(_launchers(fused, point, weights, fp8), ctx.timing)
    if measured is None:
        return None
    method = f"{measured.timing_method} {version} fused_experts_impl {config_label(cfg)} ({source})"
    return replace(measured, timing_method=method)
