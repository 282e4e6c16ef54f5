"""Progress of long computations, for whoever is listening.

Library code (techniques, measures, experiments) announces the steps of its long loops;
a front end such as the command line listens and shows a bar with the time left. When
nobody listens every call is a cheap no-op, so library users pay nothing::

    from ppdm import progress

    with progress.steps(len(trees), "growing trees") as step:
        for tree in trees:
            ...
            step()                      # one step done

    with progress.listening(my_listener):   # a front end
        technique.fit_transform(x)

Steps nest: each :func:`steps` block is reported as its own task, so a listener may
show the outer loop's time left while an inner loop runs. The listener is held in a
context variable, so threads and concurrent evaluations each see their own.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class ProgressListener(Protocol):
    """What a front end implements to hear about progress; ``key`` tells tasks apart."""

    def start(self, key: int, total: float | None, description: str) -> None: ...

    def advance(self, key: int, amount: float, description: str | None) -> None: ...

    def reset(self, key: int, total: float | None, description: str | None) -> None: ...

    def finish(self, key: int) -> None: ...


_LISTENER: ContextVar[ProgressListener | None] = ContextVar("ppdm_progress_listener", default=None)
_KEYS = itertools.count(1)


class Steps:
    """A task of ``total`` steps (``None``: unknown); call it to report steps done."""

    __slots__ = ("_listener", "key", "total", "done")

    def __init__(self, listener: ProgressListener | None, total: float | None, description: str) -> None:
        self._listener = listener
        self.key = next(_KEYS)
        self.total = total
        self.done = 0.0
        if listener is not None:
            listener.start(self.key, total, description)

    def __call__(self, amount: float = 1, description: str | None = None) -> None:
        self.done += amount
        if self._listener is not None:
            self._listener.advance(self.key, amount, description)

    def reset(self, total: float | None, description: str | None = None) -> None:
        """Start counting again towards a new ``total`` (e.g. once the work is known)."""
        self.total = total
        self.done = 0.0
        if self._listener is not None:
            self._listener.reset(self.key, total, description)

    def close(self) -> None:
        if self._listener is not None:
            self._listener.finish(self.key)
            self._listener = None

    def __enter__(self) -> Steps:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def steps(total: float | None, description: str) -> Steps:
    """Announce a task of ``total`` steps; use it as a context manager and call it per step."""
    return Steps(_LISTENER.get(), total, description)


def active() -> bool:
    """Whether anybody listens (to skip preparing descriptions nobody will read)."""
    return _LISTENER.get() is not None


@contextmanager
def listening(listener: ProgressListener | None) -> Iterator[None]:
    """Send the progress of everything run inside the block to ``listener``."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
