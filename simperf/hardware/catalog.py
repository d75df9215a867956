"""The GPU catalogue: datasheet capabilities of the GPUs simperf models, loaded from gpus.yaml (package data).

Numbers live in the YAML so that adding a GPU is a data change; this module only validates and exposes them.
docs/hardware.md lists where every number comes from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

_CATALOGUE_FILE = "gpus.yaml"
_REQUIRED_FLOPS_KEYS = ("bf16", "fp8", "fp32")


@dataclass(frozen=True)
class GpuSpec:
    key: str  # h100 | h200 | b200
    name: str  # "NVIDIA H100 80GB HBM3 (SXM)" etc.
    sm: str  # compute capability, "9.0", "10.0"
    memory_bytes: int  # HBM capacity (as the device reports it where seen)
    hbm_bytes_per_s: float  # datasheet peak
    l2_bytes: int
    num_sms: int
    nvlink_bytes_per_s: float  # per GPU, one direction
    peak_flops: dict[str, float] = field(hash=False)  # dense; keys "bf16", "fp8", "fp32" (and "fp4")
    memory_source: str = (
        ""  # where memory_bytes comes from: "device: ..." (reported by a real part) or datasheet
    )
    # Ceilings measured on real parts; None where not measured. The roofline prefers them to datasheet peaks.
    measured_copy_bytes_per_s: float | None = None
    measured_bf16_flops: float | None = None
    # GPU memory in use when a TP-1 SGLang server starts loading weights (CUDA context, allocator, its process
    # group): total less the server's "Load weight begin. avail mem"; None where no server was started on one
    pre_load_used_bytes: int | None = None

    def peak_for(self, dtype: str) -> float:
        """Dense peak FLOP/s for a compute dtype name ("bf16", "fp8_e4m3", "fp4", ...)."""
        return self.peak_flops[peak_key(dtype, self)]


def peak_key(dtype: str | None, gpu: GpuSpec) -> str:
    """Which `peak_flops` entry a dtype computes at. fp4 falls back to fp8 on GPUs without fp4 tensor cores."""
    name = (dtype or "bf16").lower()
    if name.startswith("fp8") or name in ("e4m3", "e5m2", "int8"):
        return "fp8"
    if name.startswith(("fp4", "nvfp4", "mxfp4")):
        return "fp4" if "fp4" in gpu.peak_flops else "fp8"
    if name in ("fp32", "float32", "tf32"):
        return "fp32"
    return "bf16"  # bf16, fp16, auto


def _spec_from_entry(key: str, entry: dict[str, Any]) -> GpuSpec:
    try:
        flops = {str(k): float(v) for k, v in entry["peak_flops"].items()}
        missing = [k for k in _REQUIRED_FLOPS_KEYS if k not in flops]
        if missing:
            raise ValueError(f"peak_flops lacks {missing}")
        return GpuSpec(
            key=key,
            name=str(entry["name"]),
            sm=str(entry["sm"]),
            memory_bytes=int(entry["memory_bytes"]),
            hbm_bytes_per_s=float(entry["hbm_bytes_per_s"]),
            l2_bytes=int(entry["l2_bytes"]),
            num_sms=int(entry["num_sms"]),
            nvlink_bytes_per_s=float(entry["nvlink_bytes_per_s"]),
            peak_flops=flops,
            memory_source=str(entry["memory_source"]),
            measured_copy_bytes_per_s=_optional_float(entry.get("measured_copy_bytes_per_s")),
            measured_bf16_flops=_optional_float(entry.get("measured_bf16_flops")),
            pre_load_used_bytes=_optional_int(entry.get("pre_load_used_bytes")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"hardware catalogue entry {key!r} is malformed: {exc}") from exc


def _optional_float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def _optional_int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


@cache
def _catalogue() -> dict[str, GpuSpec]:
    text = resources.files(__package__).joinpath(_CATALOGUE_FILE).read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    return {str(key): _spec_from_entry(str(key), entry) for key, entry in raw.items()}


def max_measured_pre_load_used_bytes() -> int:
    """The largest `pre_load_used_bytes` of the catalogue's GPUs that have one (an estimate for those without)."""
    return max(g.pre_load_used_bytes for g in _catalogue().values() if g.pre_load_used_bytes is not None)


def gpu_keys() -> list[str]:
    return sorted(_catalogue())


def device_gpu_key(name: str) -> str | None:
    """The catalogue's key for a GPU as a device or a report names it ('NVIDIA H200', 'H100 SXM (Modal)' -> 'h200',
    'h100'); None for a part the catalogue does not describe. Its parts are SXM ones: an H100 PCIe (2.0 TB/s,
    350 W) or an H100/H200 NVL card carries the same number but not the SXM part's bandwidth and clocks, and was
    scored (and its ground truth filed) as the SXM part."""
    if re.search(r"pcie|\bnvl\b", name.lower()):
        return None
    match = re.search(r"\b([a-z]\d{3})\b", name.lower())
    return match.group(1) if match and match.group(1) in _catalogue() else None


def get_gpu(key: str) -> GpuSpec:
    catalogue = _catalogue()
    try:
        return catalogue[key]
    except KeyError:
        raise ValueError(
            f"unknown GPU {key!r}; the hardware catalogue knows: {', '.join(sorted(catalogue))}"
        ) from None
