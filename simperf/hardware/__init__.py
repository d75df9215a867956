"""GPU catalogue (datasheet capabilities and measured ceilings)."""

from simperf.hardware.catalog import GpuSpec, get_gpu, gpu_keys

__all__ = ["GpuSpec", "get_gpu", "gpu_keys"]
