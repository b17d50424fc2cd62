"""Progress bars (rich) that switch themselves off when nobody is watching."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["StageTimer", "progress_bar", "timed_batches"]


@contextmanager
def progress_bar(
    description: str, *, total: int | None = None, unit: str = "docs", enabled: bool | None = None
) -> Iterator[Callable[..., None]]:
    """Yield ``advance(n, status=None)``; draws a rich progress bar on stderr when ``enabled``.

    ``enabled=None`` means: on when stderr is an interactive terminal. ``status`` (a short
    text such as a running loss) replaces the text shown after the timings.
    """
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield lambda n, status=None: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    columns += [TextColumn(unit), TimeElapsedColumn(), TimeRemainingColumn()]
    columns.append(TextColumn("{task.fields[status]}"))
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total, status="")

        def advance(n: int, status: str | None = None) -> None:
            if status is None:
                bar.advance(task, n)
            else:
                bar.update(task, advance=n, status=status)

        yield advance


class StageTimer:
    """Seconds spent per named stage of a run (summed when a stage repeats)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start


def timed_batches(batches, timer: StageTimer, *, description: str = "sketching",
                  total: int | None = None, progress: bool | None = None):
    """Yield ``batches`` (anything with ``len``), timing the reading of each under the
    stage "read" and advancing a progress bar by its documents once it is processed."""
    with progress_bar(description, total=total, unit="docs", enabled=progress) as advance:
        iterator = iter(batches)
        while True:
            with timer.stage("read"):
                batch = next(iterator, None)
            if batch is None:
                return
            yield batch
            advance(len(batch))
