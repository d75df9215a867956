"""Which GPU and software measured a row: detection, catalogue key, library versions, clocks.

Runs inside worker subprocesses (torch is imported lazily, inside functions). Anything unreadable is
None, never a guess.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import subprocess
from dataclasses import asdict, dataclass
from typing import Any

import simperf

# Substring of the driver's device name -> catalogue key. Order matters (first match wins).
_CATALOGUE: tuple[tuple[str, str], ...] = (("H200", "h200"), ("H100", "h100"), ("B200", "b200"))


def catalogue_key(gpu_name: str | None) -> str | None:
    if not gpu_name:
        return None
    upper = gpu_name.upper()
    for needle, key in _CATALOGUE:
        if needle in upper:
            return key
    return None


@dataclass
class DeviceInfo:
    gpu: str | None
    gpu_name: str | None
    sm: str | None
    sm_major: int | None
    memory_bytes: int | None
    l2_bytes: int | None
    sm_count: int | None
    device_count: int
    driver: str | None
    cuda: str | None
    torch: str | None
    flashinfer: str | None
    flash_mla: str | None
    deep_gemm: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def provenance_columns(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "gpu_name": self.gpu_name,
            "sm": self.sm,
            "driver": self.driver,
            "cuda": self.cuda,
            "torch": self.torch,
            "flashinfer": self.flashinfer,
            "flash_mla": self.flash_mla,
            "deep_gemm": self.deep_gemm,
            "source": "measured",
            "simperf_version": simperf.__version__,
        }


def package_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _driver_version() -> str | None:
    nvml = _nvml()
    if nvml is not None:
        try:
            value = nvml.nvmlSystemGetDriverVersion()
            return value.decode() if isinstance(value, bytes) else str(value)
        except Exception:  # noqa: BLE001 - unreadable means None
            pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        return out.stdout.strip().splitlines()[0] or None
    except Exception:  # noqa: BLE001
        return None


_NVML: Any = None
_NVML_FAILED = False


def _nvml() -> Any:
    global _NVML, _NVML_FAILED
    if _NVML is not None or _NVML_FAILED:
        return _NVML
    try:
        import pynvml

        pynvml.nvmlInit()
        _NVML = pynvml
    except Exception:  # noqa: BLE001
        _NVML_FAILED = True
    return _NVML


def current_clocks_mhz(device_index: int = 0) -> tuple[int | None, int | None]:
    """(SM clock, memory clock) right now, via NVML; (None, None) when NVML is unavailable."""
    nvml = _nvml()
    if nvml is None:
        return None, None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(device_index)
        sm = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)
        mem = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM)
        return int(sm), int(mem)
    except Exception:  # noqa: BLE001
        return None, None


def utc_now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def detect_device(use_torch: bool = True) -> DeviceInfo:
    """Probe the first visible GPU. Without torch or CUDA (or with use_torch=False, for CPU-only worker
    groups that should not pay torch's import) the GPU fields are None."""
    versions = {
        "torch": package_version("torch"),
        "flashinfer": package_version("flashinfer-python"),
        "flash_mla": package_version("sgl-flash-mla"),
        "deep_gemm": package_version("sgl-deep-gemm"),
    }
    if not use_torch:
        return DeviceInfo(None, None, None, None, None, None, None, 0, None, None, **versions)
    try:
        import torch
    except ImportError:
        return DeviceInfo(None, None, None, None, None, None, None, 0, None, None, **versions)
    if not torch.cuda.is_available():
        return DeviceInfo(None, None, None, None, None, None, None, 0, None, torch.version.cuda, **versions)
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", None)
    return DeviceInfo(
        gpu=catalogue_key(props.name),
        gpu_name=props.name,
        sm=f"{props.major}.{props.minor}",
        sm_major=int(props.major),
        memory_bytes=int(props.total_memory),
        l2_bytes=int(l2) if l2 else None,
        sm_count=int(props.multi_processor_count),
        device_count=torch.cuda.device_count(),
        driver=_driver_version(),
        cuda=torch.version.cuda,
        **versions,
    )
