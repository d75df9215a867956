"""A progress bar on stderr for the fleet's long loops (rich; silent when stderr is not a terminal)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class Ticker:
    """Counts work done; the bar is redrawn every `every` units so the count costs nothing in hot loops."""

    def __init__(self, progress: Progress | None, task, every: int) -> None:
        self._progress = progress
        self._task = task
        self._every = max(every, 1)
        self._pending = 0

    def tick(self, n: int = 1) -> None:
        self._pending += n
        if self._pending >= self._every and self._progress is not None:
            self._progress.advance(self._task, self._pending)
            self._pending = 0

    def flush(self) -> None:
        if self._pending and self._progress is not None:
            self._progress.advance(self._task, self._pending)
        self._pending = 0


@contextmanager
def progress_bar(description: str, total: int, every: int = 1) -> Iterator[Ticker]:
    console = Console(stderr=True)
    if not console.is_terminal:
        yield Ticker(None, None, every)
        return
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(description, total=total)
        ticker = Ticker(progress, task, every)
        yield ticker
        ticker.flush()
