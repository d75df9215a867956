"""A calibration directory's YAML sidecars (perfdb/sidecar.py) under bad input: the check the tests of each share."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


def assert_one_line_error(
    read: Callable[[Path], object], directory: Path, name: str, text: str, message: str
) -> None:
    """Writing `text` as `directory/name` makes `read(directory)` raise one line naming the file and `message`."""
    (directory / name).write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        read(directory)
    assert str(directory / name) in str(info.value) and "\n" not in str(info.value)
