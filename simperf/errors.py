"""The user-facing error every module may raise (no CLI imports here: the GPU side uses it too)."""

from __future__ import annotations

EXIT_BAD_INPUT = 2


class UserError(Exception):
    """A failure the user can act on; `message` names the path or field first. Not a ValueError, so that a
    command's own `except ValueError` around a block never re-wraps it. simperf's CLI prints it as
    `error: <message>` and exits with `code`."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
