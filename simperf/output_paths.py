"""Output paths are checked before any work starts: writable, not one of the command's inputs, and named for the
format that will be written. A finished simulation is never lost to a path that could not be written.

Each check raises `UserError` naming the option and the path (`--requests /ro/x.parquet: ...`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from simperf.errors import UserError


def _label(option: str, path: Path) -> str:
    return f"{option} {path}" if option else str(path)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _nearest_existing(path: Path) -> Path:
    current = path.absolute()
    while not current.exists() and current != current.parent:
        current = current.parent
    return current


def _writable_dir(directory: Path) -> str | None:
    """None if a file can be created in `directory` (tried, not guessed: permission bits say nothing to root or
    on a read-only mount), else the reason."""
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".simperf-write-check-"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def check_output_file(
    path: Path | str,
    option: str = "",
    *,
    suffixes: Iterable[str] = (),
    inputs: Iterable[Path | str | None] = (),
    what: str = "",
) -> Path:
    """`path` can be written as a new or replaced file. suffixes: the allowed extensions (".parquet"), any when
    empty; inputs: files the command reads, which it must not overwrite; what: the format, for the message."""
    path = Path(path)
    label = _label(option, path)
    allowed = tuple(s.lower() for s in suffixes)
    if allowed and not path.name.lower().endswith(allowed):
        kind = f"writes {what}" if what else "writes"
        raise UserError(f"{label}: {kind} {' / '.join(allowed)} files; name it with that extension")
    for source in inputs:
        if source is not None and _same_file(path, Path(source)):
            raise UserError(f"{label}: is also an input of this command ({source}); write somewhere else")
    if path.is_dir():
        raise UserError(f"{label}: is a directory; give a file name")
    parent = path.absolute().parent
    if not parent.is_dir():
        raise UserError(f"{label}: directory {parent} does not exist")
    _outside_calibration_tables(path, label)
    if path.exists() and not os.access(path, os.W_OK):
        raise UserError(f"{label}: not writable")
    reason = _writable_dir(parent)
    if reason is not None:
        raise UserError(f"{label}: cannot write in {parent}: {reason}")
    return path


def _outside_calibration_tables(path: Path, label: str) -> None:
    """A Parquet file written into a calibration directory replaced one of its tables (predict --requests
    calibration/h100/gemm.parquet, after reading it) or was read as a table by every later prediction."""
    if not path.name.lower().endswith(".parquet"):
        return
    from simperf.perfdb.schema import OP_SPECS

    parent = path.absolute().parent
    if any((parent / f"{op}.parquet").is_file() for op in OP_SPECS):
        raise UserError(
            f"{label}: inside calibration directory {parent}, where a *.parquet is one of its tables; "
            "write it somewhere else"
        )


def check_output_dir(path: Path | str, option: str = "") -> Path:
    """`path` is, or can be created as, a directory that files can be written in."""
    path = Path(path)
    label = _label(option, path)
    if path.exists() and not path.is_dir():
        raise UserError(f"{label}: exists and is not a directory")
    base = path if path.is_dir() else _nearest_existing(path)
    if not base.is_dir():
        raise UserError(f"{label}: {base} is not a directory")
    reason = _writable_dir(base)
    if reason is not None:
        raise UserError(f"{label}: cannot write in {base}: {reason}")
    return path


def check_appendable_jsonl(path: Path | str, option: str = "") -> None:
    """A file a JSON line is appended to (predict --output-file, as bench_serving's) holds JSON lines already, or
    nothing: a result appended to a Parquet table or a text file spoilt it, and one appended after a last line
    without its line end joined that line (neither line read as JSON again)."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return
    with open(path, "rb") as f:
        head = f.read(4096).lstrip()
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
    label = _label(option, path)
    if head and not head.startswith(b"{"):
        line = head[:64].split(b"\n")[0].decode("utf-8", "replace").strip()
        start = repr(line if len(line) <= 24 else f"{line[:24]}...") if line.isprintable() else "binary data"
        raise UserError(
            f"{label}: does not hold JSON lines (it starts with {start}), and a result appended to it would spoil "
            "it; give a new file or a bench_serving --output-file"
        )
    if last != b"\n":
        raise UserError(
            f"{label}: its last line has no line end, so the result would join it into one unreadable line; "
            "end the file with a newline"
        )
