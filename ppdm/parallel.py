"""Threads for the compiled kernels.

A kernel that loops over many independent items (queries, records, column subsets) is compiled
serially with ``nogil=True`` and run here on disjoint ranges of its items, one range per task of
a shared thread pool. Numba's own ``parallel=True`` would do the same work, but compiling its
parallel loops costs several times a serial kernel's compile (about 7 CPU-seconds more per
kernel, paid on the first run of every fresh installation), and its default threading layer
refuses a parallel kernel launched from two threads at once; here any number of callers may
share the pool.

Every task writes only its own items' slots (or its own row of a per-chunk table), so the result
does not depend on how the items are split or in which order the tasks run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

#: ranges per thread: enough that a slow range does not leave the other threads idle
CHUNKS_PER_THREAD = 8

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_local = threading.local()


def threads() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def chunks_for(n: int) -> int:
    """How many ranges ``n`` items are cut into: :data:`CHUNKS_PER_THREAD` per thread, at
    most one per item, at least one."""
    return max(1, min(n, CHUNKS_PER_THREAD * threads()))


def chunk_range(c: int, n: int, chunks: int) -> tuple[int, int]:
    """Items ``[lo, hi)`` of range ``c`` when ``n`` items are cut into ``chunks`` ranges."""
    size = (n + chunks - 1) // chunks
    return min(n, c * size), min(n, (c + 1) * size)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(threads(), thread_name_prefix="ppdm-kernel",
                                       initializer=_mark_worker)
        return _pool


def _mark_worker() -> None:
    _local.worker = True


def _run_tasks(kernel: Callable[..., Any], n_tasks: int, *args: Any) -> None:
    """Call ``kernel(t, *args)`` for every task ``t`` in ``range(n_tasks)`` on the shared threads.

    ``kernel`` must be compiled with ``nogil=True`` (or the threads take turns) and must write
    only task ``t``'s own output. A call from inside a task (a kernel run by a kernel's caller
    that already runs on the pool) runs its tasks in its own thread, so the pool never waits on
    itself."""
    if n_tasks <= 1 or threads() == 1 or getattr(_local, "worker", False):
        for t in range(n_tasks):
            kernel(t, *args)
        return
    futures = [_executor().submit(kernel, t, *args) for t in range(n_tasks)]
    for f in futures:
        f.result()  # re-raises a kernel's error in the caller


def run_chunks(kernel: Callable[..., Any], n: int, *args: Any, chunks: int | None = None) -> int:
    """Call ``kernel(c, lo, hi, *args)`` for every range ``c`` of ``n`` items, ``[lo, hi)``
    from :func:`chunk_range`, on the shared threads (:func:`_run_tasks`); returns the number of
    ranges."""
    chunks = chunks_for(n) if chunks is None else max(1, chunks)
    bounds = [chunk_range(c, n, chunks) for c in range(chunks)]

    def task(c: int) -> None:
        kernel(c, bounds[c][0], bounds[c][1], *args)

    _run_tasks(task, chunks)
    return chunks
