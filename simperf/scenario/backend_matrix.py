"""Which attention backends serve which model on which GPU, why the others are refused, and what tables price them.

Built from the same rules a scenario is checked with (`check_backends`, `default_backends`), so `simperf backends`
cannot disagree with `simperf predict`: a backend listed as refused is refused there with the same reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from simperf.capabilities import BACKENDS, auto_kv_dtype, family, gqa_decode_tables
from simperf.hardware.catalog import GpuSpec, get_gpu
from simperf.models.arch import ModelArch
from simperf.models.kernels import table_attention_backends
from simperf.scenario.backends import BackendError, check_backends
from simperf.scenario.resolve import default_backends


@dataclass(frozen=True)
class BackendOption:
    gpu: str
    model: str
    backend: str
    usable: bool
    default_for: str  # "prefill and decode", "prefill", "decode" or "" (SGLang's choice when none is given)
    needs: str  # a setting it needs beyond the defaults, e.g. "kv_cache_dtype: fp8_e4m3"
    reason: str  # why SGLang refuses it ("" when usable)
    decode_table: str  # what prices its decode attention on this GPU


def _auto_kv_dtype(arch: ModelArch, gpu: GpuSpec) -> str:
    """resolve()'s kv_cache_dtype for `auto`."""
    return auto_kv_dtype(arch.family, gpu.sm)


def _refusal(error: BackendError) -> str:
    """One reason per problem: the prefill and decode checks repeat each other for a backend used in both."""
    reasons = []
    for part in str(error).split("; "):
        text = part.split(": ", 1)[1] if part.startswith("serving.") and ": " in part else part
        if text not in reasons:
            reasons.append(text)
    return "; ".join(reasons)


@cache
def _table_backends(gpu_key: str, table: str) -> dict[str, str]:
    """backend name in a decode table -> "measured" or "third-party", from the shipped tables of this GPU."""
    import polars as pl

    from simperf.perfdb.db import shipped_calibration_dir

    directory = shipped_calibration_dir(gpu_key)
    out: dict[str, str] = {}
    if directory is None:
        return out
    for path, label in ((Path(directory) / f"{table}.parquet", "measured"),
                        (Path(directory) / f"aiconfigurator_{table}.parquet", "third-party")):  # fmt: skip
        if path.is_file():
            for name in pl.read_parquet(path, columns=["backend"])["backend"].unique().to_list():
                out.setdefault(str(name), label)
    return out


def _decode_table(arch: ModelArch, gpu: GpuSpec, backend: str) -> str:
    table = family(arch.family).decode_table
    candidates = table_attention_backends(backend)
    if (
        table == "attn_gqa_decode"
    ):  # the GQA decode kernel's tables (flashinfer's unless a backend has its own)
        candidates = gqa_decode_tables(backend, 9)
    found = _table_backends(gpu.key, table)
    for name in candidates:
        if name in found:
            return f"{found[name]} ({table}, {name})"
    reference = _scaled_from(gpu.key)
    if reference is not None:
        found = _table_backends(reference, table)
        for name in candidates:
            if name in found:
                return f"{reference} table scaled to {gpu.key}, extrapolated ({table}, {name})"
    return f"none on {gpu.key}: roofline estimate"


@cache
def _scaled_from(gpu_key: str) -> str | None:
    """The GPU whose tables this GPU's calibration directory falls back to (perfdb/scaled.py), if any."""
    import yaml

    from simperf.perfdb.db import shipped_calibration_dir
    from simperf.perfdb.scaled import SCALED_FROM_FILE

    directory = shipped_calibration_dir(gpu_key)
    path = Path(directory) / SCALED_FROM_FILE if directory else None
    if path is None or not path.is_file():
        return None
    return (yaml.safe_load(path.read_text()) or {}).get("reference")


def backend_options(arch: ModelArch, gpu: GpuSpec) -> list[BackendOption]:
    kv_auto = _auto_kv_dtype(arch, gpu)
    prefill_default, decode_default = default_backends(arch, gpu, kv_auto)
    options = []
    for backend in BACKENDS:
        roles = [r for r, d in (("prefill", prefill_default), ("decode", decode_default)) if d == backend]
        default_for = " and ".join(roles)
        needs, reason = "", ""
        try:
            check_backends(arch, gpu, backend, backend, kv_auto)
        except BackendError as e:
            reason = _refusal(e)
            if kv_auto != "fp8_e4m3":
                try:
                    check_backends(arch, gpu, backend, backend, "fp8_e4m3")
                    needs, reason = "kv_cache_dtype: fp8_e4m3", ""
                except BackendError:
                    pass
        usable = not reason
        table = _decode_table(arch, gpu, backend) if usable else ""
        options.append(BackendOption(gpu.key, arch.name, backend, usable, default_for, needs, reason, table))
    return options


def backend_matrix(gpus: list[str], models: list[str]) -> list[BackendOption]:
    from simperf.models.zoo import load_arch

    return [o for m in models for g in gpus for o in backend_options(load_arch(m), get_gpu(g))]
