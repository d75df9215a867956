"""Progress displays for the commands: rich, on stderr (stdout stays clean for tables and JSON), off with --quiet.

Two shapes: `bar` counts units of work (sweep points, scenarios, re-checks); `phases` names the stage a single
long computation is in (a prediction: resolve, load tables, simulate) with the time spent so far.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def stderr_console() -> Console:
    return Console(stderr=True)


class Bar:
    """A count of finished units; `advance(status=...)` after each."""

    def __init__(self, progress: Progress | None, description: str, total: int | None, done: int = 0):
        self._progress = progress
        self._task = (
            progress.add_task(description, total=total, completed=done, status="") if progress else None
        )

    def advance(self, n: int = 1, status: str = "") -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=n, status=status)

    def set_total(self, total: int, done: int = 0) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, total=total, completed=done)


@contextmanager
def bar(
    description: str, total: int | None, *, quiet: bool = False, transient: bool = False
) -> Iterator[Bar]:
    if quiet:
        yield Bar(None, description, total)
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeRemainingColumn(),
        console=stderr_console(),
        transient=transient,
    )
    with progress:
        yield Bar(progress, description, total)


@contextmanager
def phases(title: str, *, quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """`with phases("predict") as phase: phase("simulating 500 requests")` shows a spinner, the phase, the time.

    Transient: on a terminal it disappears when done; elsewhere (logs, pipes) it prints nothing.
    """
    console = stderr_console()
    if quiet or not console.is_terminal:  # rich's transient display still ended with a blank line in a pipe
        yield lambda _text: None
        return
    progress = Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}[/] {task.fields[phase]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    with progress:
        task = progress.add_task(title, total=None, phase="")
        yield lambda text: progress.update(task, phase=text)
