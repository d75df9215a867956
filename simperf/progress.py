"""A progress bar for long work that stays out of the way of short work: it appears on stderr only once the work
has run longer than `after_s` (about 2 s), and never on a stream that is not a terminal."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

SHOW_AFTER_S = 2.0


class LazyProgress:
    def __init__(
        self, description: str, after_s: float = SHOW_AFTER_S, console: Console | None = None
    ) -> None:
        self.description = description
        self.after_s = after_s
        self.console = console or Console(stderr=True)
        self._started = time.monotonic()
        self._progress: Progress | None = None
        self._task = None

    def __enter__(self) -> LazyProgress:
        self._started = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, done: int, total: int) -> None:
        if self._progress is None:
            if time.monotonic() - self._started < self.after_s or not self.console.is_terminal:
                return
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.description, total=total)
        self._progress.update(self._task, completed=done, total=total)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
