"""The small YAML files a calibration directory keeps beside its tables (cta_stream.yaml, shared_reads.yaml): each
derived by a command from committed measurements, each carrying a `format` line. One reader, so that a missing,
malformed or foreign file is answered the same way everywhere: absent -> None, anything else -> a one-line error
naming the file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from simperf.strictyaml import safe_load


def read_sidecar(directory: Path | None, name: str, fmt: str) -> tuple[Path, dict[str, Any]] | None:
    """(path, its mapping) of `directory/name`, checked to be YAML with `format: fmt`; None when there is none."""
    path = Path(directory) / name if directory is not None else None
    if path is None or not path.is_file():
        return None
    try:
        data = safe_load(path.read_text(encoding="utf-8"))  # simperf's: a variant given twice is refused
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise ValueError(f"{path}: format: expected {fmt!r}")
    return path, data


def variant_entries(
    path: Path, data: dict[str, Any], key: str, parse: Callable[[str], object], what: str, example: str
) -> list[tuple[str, Any]]:
    """The (variant name, value) pairs of the mapping `data[key]`, each name checked by `parse` (which raises
    ValueError with what a name must look like); a one-line error naming the file and the field otherwise."""
    table = data.get(key)
    if not isinstance(table, dict) or not table:
        raise ValueError(f"{path}: {key}: expected a mapping of kernel variant to {what}, e.g. {{{example}}}")
    entries = []
    for name, value in table.items():
        try:
            parse(name)
        except ValueError as exc:
            raise ValueError(f"{path}: {key}.{name}: {exc}") from None
        entries.append((str(name), value))
    return entries
