"""What a backend returns for one point, and how errors become table rows. No torch here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_UNSUPPORTED = "unsupported"

MAX_ERROR_CHARS = 600

# Error texts after which the CUDA context of the worker cannot be trusted: the worker reports the point,
# then exits so that the runner starts a fresh one.
_FATAL_MARKERS = (
    "illegal memory access",
    "cuda error",
    "cudaerror",
    "device-side assert",
    "unspecified launch failure",
    "misaligned address",
    "an illegal instruction",
    "cublas_status_execution_failed",
    "cuda driver error",
)


class Unsupported(Exception):
    """The point cannot run on this device or with this library build; the message says why."""


@dataclass(frozen=True)
class Measurement:
    time_us: float
    time_us_p10: float
    time_us_p90: float
    repeats: int
    timing_method: str

    def as_columns(self) -> dict[str, Any]:
        return {
            "time_us": self.time_us,
            "time_us_p10": self.time_us_p10,
            "time_us_p90": self.time_us_p90,
            "repeats": self.repeats,
            "timing_method": self.timing_method,
            "status": STATUS_OK,
            "error": None,
        }


def classify_exception(exc: BaseException) -> tuple[str, str]:
    """(status, error text). Library 'unsupported' errors count as unsupported, everything else failed."""
    text = f"{type(exc).__name__}: {exc}".strip()
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 3] + "..."
    name = type(exc).__name__
    # cuBLAS refusing a configuration (no algorithm for this shape/scaling) is a limit of the library,
    # not a crash: the context stays usable.
    library_refusal = "CUBLAS_STATUS_NOT_SUPPORTED" in text
    if isinstance(exc, (Unsupported, NotImplementedError)) or "Unsupported" in name or library_refusal:
        reason = str(exc) if isinstance(exc, Unsupported) else text
        return STATUS_UNSUPPORTED, reason
    return STATUS_FAILED, text


def is_fatal_error(text: str | None) -> bool:
    if not text or "CUBLAS_STATUS_NOT_SUPPORTED" in text:
        return False
    return any(marker in text.lower() for marker in _FATAL_MARKERS)


def error_columns(status: str, error: str) -> dict[str, Any]:
    return {
        "time_us": None,
        "time_us_p10": None,
        "time_us_p90": None,
        "repeats": None,
        "timing_method": None,
        "status": status,
        "error": error,
    }
