"""Progress bars with the time left, for every command that may run longer than a moment.

:func:`progress_bar` listens to :mod:`ppdm.progress` (where techniques, measures and
experiments report their steps) and draws the steps on stderr with rich: one line per
running task with its bar, steps done, time spent and time left. The command's own task
stays on screen while it runs; tasks a library opens inside it disappear when done.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ppdm import progress
from ppdm.cli.common import err_console


class _RichListener:
    """Forwards :mod:`ppdm.progress` events to a rich ``Progress``."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self.tasks: dict[int, Any] = {}
        self.outer: int | None = None

    def start(self, key: int, total: float | None, description: str) -> None:
        if self.outer is None:
            self.outer = key
        self.tasks[key] = self.bar.add_task(description, total=total)

    def advance(self, key: int, amount: float, description: str | None) -> None:
        task = self.tasks.get(key)
        if task is None:
            return
        if description is None:
            self.bar.update(task, advance=amount)
        else:
            self.bar.update(task, advance=amount, description=description)

    def reset(self, key: int, total: float | None, description: str | None) -> None:
        task = self.tasks.get(key)
        if task is not None:
            kw: dict[str, Any] = {"total": total}
            if description is not None:
                kw["description"] = description
            self.bar.reset(task, **kw)

    def finish(self, key: int) -> None:
        task = self.tasks.pop(key, None)
        if task is not None and key != self.outer:
            self.bar.remove_task(task)


def _clock(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def time_text(elapsed: float | None, remaining: float | None, known_total: bool) -> str:
    """``0:00:12 spent, 0:01:05 left``; the time left only when there is one to tell (a task
    with an unknown number of steps has none, and its elapsed time must not read as left)."""
    spent = f"{_clock(elapsed or 0.0)} spent"
    if not known_total:
        return spent
    return f"{spent}, {_clock(remaining)} left" if remaining is not None else f"{spent}, -:--:-- left"


def _columns() -> list[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, TextColumn
    from rich.text import Text

    class TimeColumn(ProgressColumn):
        """Time spent, and the time left when the number of steps is known."""

        max_refresh = 0.5

        def render(self, task: Any) -> Text:
            return Text(time_text(task.elapsed, task.time_remaining, task.total is not None), style="progress.elapsed")

    return [TextColumn("{task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(), TimeColumn()]


@contextmanager
def progress_bar(description: str, total: float | None = None) -> Iterator[progress.Steps]:
    """Show the progress of everything run inside the block; yields the command's own task
    (call it per step; ``reset(total)`` once the number of steps is known)."""
    with _progress() as bar:
        listener = _RichListener(bar)
        with progress.listening(listener), progress.steps(total, description) as outer:
            yield outer


@contextmanager
def progress_of_library() -> Iterator[None]:
    """Show the progress the library reports inside the block, with no task of the command's
    own: the first task the library opens (e.g. :func:`ppdm.experiments.release.release`'s
    steps) is the one that stays on screen."""
    with _progress() as bar:
        with progress.listening(_RichListener(bar)):
            yield


def _progress() -> Any:
    """A transient rich ``Progress`` on stderr that leaves nothing behind.

    Rich ends a display on a console that is not interactive (stderr a file or a pipe) with an
    empty line; the bars are transient, so that line is all a script would see of them, and it
    would stand before a refusal's one line."""
    from rich.progress import Progress

    class _Transient(Progress):
        def stop(self) -> None:
            if not self.disable:
                self.live.stop()

    return _Transient(*_columns(), console=err_console.real, transient=True)
