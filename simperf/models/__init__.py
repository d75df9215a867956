"""Model architectures (the zoo of HF configs) and the ops of one forward step."""

from simperf.models.arch import ModelArch
from simperf.models.zoo import UnknownModelError, load_arch, zoo_names

__all__ = ["ModelArch", "UnknownModelError", "load_arch", "zoo_names"]
